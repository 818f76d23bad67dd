"""``packing-theory doctor``: a framework config and its corpus in, the packer's problems ranked out.

The config is the user's own file (Axolotl, TRL ``SFTConfig``, LLM Foundry,
torchtune, Megatron arguments, nanochat / autoresearch / Parcae settings); the
data is what ``audit --data`` reads. A Megatron blend reads its datasets'
``.idx`` files from the config's ``--data-path`` prefixes. The report
(:class:`~packing_theory.configs.DoctorReport`, kind ``doctor``) is printed as
plain text (:meth:`~packing_theory.configs.DoctorReport.text`; ``--json``: its
JSON document; ``--markdown``: its Markdown, ``--markdown FILE`` writes it
there); ``--out DIR`` also writes ``doctor.json``, ``doctor.md`` and
``doctor.html`` through :func:`~packing_theory.reporting.stage_report`, the
directory checked and locked before the replay: like every report, it stays
apart from the inputs (an ``--out`` inside an input directory, or an input
that is one of its files, is refused with exit 2 before anything is written;
:func:`~packing_theory.reporting.writer.inputs_problem`). Exit status 0: nothing found;
1: a finding; 2: bad input (a key the replay does not model).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._options import add_options
from ._paths import named_inputs
from .replay import INPUT_OPTIONS

__all__ = ["REPORT_FILES", "register", "run"]

REPORT_FILES = ("doctor.html", "doctor.json", "doctor.md")
"""The files of a doctor report directory."""


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "doctor",
        description="Map a framework config onto the packer that replays it (every key used or ignored "
                    "is printed), replay it on the corpus, and rank the findings: starvation, padding, "
                    "documents never started, tails cut, dropped batches, examples with no trainable token, "
                    "a blend's realised shares (a Megatron blend reads its datasets from the config itself; "
                    "give --bos). Prints the report as plain text (--markdown: as Markdown); --out DIR also "
                    "writes doctor.json, doctor.md and doctor.html. Exit 0: nothing found; 1: a finding.")
    add_options(parser, "config", "framework", *INPUT_OPTIONS, "prompt-lengths", "max-padding", "max-cut",
                "max-blend-gap", "out", "force", "json", "markdown", optional=("input",))
    parser.set_defaults(run=run)


def _prefix_path(args: argparse.Namespace, prefix: str) -> str:
    """A blend prefix as a path: relative to the config's directory."""
    return prefix if os.path.isabs(prefix) else os.path.join(os.path.dirname(os.path.abspath(args.config)),
                                                             prefix)


def _inputs(args: argparse.Namespace, prefixes: tuple[str, ...]) -> list[str]:
    """Every path the run reads: the data options, the config, the prompt lengths, a blend's datasets."""
    blend = [_prefix_path(args, p) + ext for p in prefixes for ext in (".idx", ".bin")]
    return [*named_inputs(args), args.config, *([args.prompt_lengths] if args.prompt_lengths else []), *blend]


def _blend_data(args: argparse.Namespace, prefixes: tuple[str, ...]) -> dict[str, Any]:
    from ..configs.megatron import source_name
    from ..corpus.readers import open_data
    from ..errors import InputError

    if args.lengths or args.data or args.files_from or args.shards or args.text or args.parquet:
        raise InputError("a Megatron blend reads its datasets from the config's --data-path prefixes; "
                         "--lengths / --data do not apply")
    if args.bos is None:
        raise InputError("--bos is required for a Megatron blend's token ids: 'included' (each document "
                         "holds its EOD) or 'add'")
    out = {}
    for prefix in prefixes:
        out[source_name(prefix)] = open_data([_prefix_path(args, prefix) + ".idx"], "megatron",
                                             bos=args.bos).lengths()
    return out


def run(args: argparse.Namespace) -> int:
    """Map, replay, print the ranked findings (and write the report with ``--out``); 1 when anything was
    found."""
    import contextlib

    import numpy as np

    from ..configs import Thresholds, doctor, read_config
    from ..errors import InputError
    from ..reporting import ReportWriter, stage_report
    from ._common import emit_json
    from ._inputs import corpus_from_args

    if args.force and not args.out:
        raise InputError("--force applies to --out (the report directory)")
    if args.json and args.markdown == "-":
        raise InputError("give one of --json and --markdown (both print on standard output)")
    mapped = read_config(args.config, args.framework)
    with contextlib.ExitStack() as stack:
        writer = None
        if args.out:  # checked (apart from every input) and locked before the replay
            prefixes = () if mapped.blend is None else mapped.blend.prefixes
            writer = stack.enter_context(ReportWriter(args.out, names=REPORT_FILES, config={},
                                                      tool="packing-theory doctor", force=args.force,
                                                      inputs=_inputs(args, prefixes)))
        print(mapped.mapping_text(), file=sys.stderr)
        names = None
        if mapped.blend is not None:
            data: Any = _blend_data(args, mapped.blend.prefixes)
            label = f"the {len(data)} datasets of --data-path"
        else:
            if not (args.lengths or args.data or args.files_from or args.shards or args.text or args.parquet):
                raise InputError("give the corpus: --lengths FILE.npy or --data PATH")
            corpus = corpus_from_args(args)
            data, label = corpus.lengths, corpus.label
            names = corpus.identity().replayed_names()
        prompt = None if args.prompt_lengths is None else np.load(args.prompt_lengths, allow_pickle=False)
        report = doctor(mapped, data, prompt_lengths=prompt, data_label=str(label), names=names,
                        thresholds=Thresholds(args.max_padding, args.max_cut, args.max_blend_gap))
        if writer is not None:
            stage_report(writer, report, plots=False)
            writer.commit()
    run_info = None if writer is None else writer.run_info
    if args.markdown not in (None, "-"):
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(report.markdown())
    if args.json:
        emit_json(report.to_dict(run_info))
    elif args.markdown == "-":
        print(report.markdown(), end="")
    else:
        print(report.text(), end="")
    if writer is not None:
        found = f"{len(report.findings)} finding(s)" if report.found else "nothing found"
        print(writer.summary_line("doctor", found), file=sys.stderr)
    return 1 if report.found else 0
