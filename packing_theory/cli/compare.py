"""``packing-theory compare``: every chosen packer side by side on one corpus, at one horizon.

``packing-theory compare --data DATA`` opens the corpus
(:func:`~packing_theory.orchestration.open_corpus`), replays every registered
packer (or ``--policy``) cut at the common token horizon by default
(:func:`~packing_theory.orchestration.compare`) and writes ``compare.json``,
``compare.md``, ``compare.html`` and PNG plots through the safe report writer
(checked and locked before the computation, swapped in as one unit) — the
files ``pt.write_report(pt.compare(...), out)`` writes. ``--demo`` compares
them on the first ``--demo-documents`` documents of the default corpus.

Until the report is written, each finished packer's run (and the common
horizon) is kept in ``--out/compare-parts``
(:class:`~packing_theory.orchestration.resume.RunParts`): a comparison that is
interrupted or fails resumes when rerun into the same ``--out``, replaying
only the packers not yet done; the parts are removed once the report is in.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from ._options import COMPARE_DEMO_DOCUMENTS, add_options
from ._paths import named_inputs
from .audit import HORIZON_OPTIONS
from .replay import INPUT_OPTIONS, PACKER_OPTIONS, SOURCE_OPTIONS

__all__ = ["DEMO_DOCUMENTS", "PARTS", "compare_corpus", "register", "run"]

PARTS = "compare-parts"
"""The subdirectory of ``--out`` that keeps the finished packers' runs until the report is written, so
that a rerun into the same ``--out`` after an interruption replays only the rest."""

DEMO_DOCUMENTS = COMPARE_DEMO_DOCUMENTS
"""Documents of the default corpus ``compare --demo`` replays (``--demo-documents``)."""


def register(sub: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "compare",
        description="Replay one corpus with each chosen packer — streaming policies and framework packers — "
                    "cut at one horizon (by default --common-horizon: every packer is cut once it has "
                    "placed the most tokens that every packer reaches), and rank them by what differs "
                    "between them there: documents with no token trained, tokens cut off, start delay, "
                    "prefix bias, distance from the declared mixture, unused row positions (ties by the "
                    "next that differs among the tied packers). Writes compare.json, "
                    "compare.md, compare.html and PNG plots into --out. An interrupted comparison "
                    "resumes when rerun into the same --out: the finished packers' runs wait in "
                    "--out/compare-parts until the report is written.",
    )
    add_options(parser, "demo", *INPUT_OPTIONS, "demo-documents", "config", "framework", *PACKER_OPTIONS,
                "engine", *HORIZON_OPTIONS, *SOURCE_OPTIONS, "executor", "workers", "out", "force",
                "no-plots", "json", "no-progress", optional=("config",))
    parser.set_defaults(run=run)


def compare_corpus(*args: Any, **kwargs: Any) -> Any:
    """:func:`packing_theory.orchestration.compare_corpus` (imported when the command runs)."""
    from ..orchestration.compare import compare_corpus as compare

    return compare(*args, **kwargs)


def report_names() -> tuple[str, ...]:
    """Every file a comparison report may hold (checked and locked before the comparison runs)."""
    from ..orchestration.compare_report import COMPARE_FILES

    return COMPARE_FILES


def run(args: argparse.Namespace) -> int:
    """Compare and write the report; exit status 0, or 1 (a Finding) when a mass identity fails or a
    source does not reconcile; 3 (NotMeasured) when every packer asked refused the corpus (the report
    says why).

    The options and ``--out`` are checked before anything is computed.
    """
    from .._allocator import keep_freed_memory
    from ..errors import Finding, InputError, NotMeasured
    from ..orchestration.compare import default_packers
    from ..orchestration.corpus import Corpus
    from ..orchestration.demo import compare_demo
    from ..orchestration.resume import remove_parts
    from ..reporting import ReportWriter, progress_bar, require_matplotlib, stage_report
    from ._common import (
        check_executor,
        counted,
        emit_json,
        horizon_from_args,
        packers_from_args,
        settings_from_args,
        workers_from_args,
    )
    from ._config import apply_config
    from ._inputs import check_source_options, corpus_from_args

    t0 = time.perf_counter()
    apply_config(args, "compare")
    plots = not args.no_plots
    require_matplotlib(plots)
    check_source_options(args)
    if args.demo_documents is not None and not args.demo:
        raise InputError(f"--demo-documents {args.demo_documents} applies to --demo (the default corpus's "
                         "documents it replays)")
    packers = packers_from_args(args, default_packers())
    settings = settings_from_args(args, packers)
    check_executor(args)
    horizon = horizon_from_args(args, "common")
    workers = workers_from_args("compare", args, len(packers))
    parts = os.path.join(args.out, PARTS)
    if os.path.islink(parts) or (os.path.lexists(parts) and not os.path.isdir(parts)):
        raise InputError(f"--out {args.out!r} holds {PARTS!r}, which is not a directory: compare keeps the "
                         "finished packers' runs there until the report is written; move it away")
    with ReportWriter(args.out, names=report_names(), config={}, tool="packing-theory compare",
                      force=args.force, inputs=named_inputs(args), owned=(PARTS,)) as writer:
        if args.demo:
            demo = compare_demo(DEMO_DOCUMENTS if args.demo_documents is None else args.demo_documents)
            corpus = Corpus.from_lengths(demo.lengths, label=demo.label)
        else:
            corpus = corpus_from_args(args)
        bar = progress_bar("compare", len(packers), enabled=False if args.no_progress else None,
                           unit="packer")
        keep_freed_memory()  # before the worker processes start: they inherit it
        try:
            result = compare_corpus(corpus, packers, settings, horizon=horizon,
                                    mixture_blocks=args.mixture_blocks, drift_threshold=args.drift_threshold,
                                    executor=args.executor, workers=workers, progress=bar,
                                    resume=parts)
        finally:
            if bar is not None:
                bar.close()
        stage_report(writer, result, plots=plots)
        writer.commit()
        remove_parts(parts)  # they served an interrupted run (only the parts' own files are removed)
    if args.json:
        emit_json(result.to_dict(writer.run_info))
    m = result.measurement
    if not m.runs:  # exit 3: "nothing found" cannot be claimed when nothing was measured
        raise NotMeasured(f"{result.headline()} (the report in {args.out} says so too)")
    results = len(m.runs) + len(m.refused)
    reused = (f"; read {len(m.resumed)} of the {results} packers' results back from {parts}"
              if m.resumed else "")
    if m.resume_problem is not None:
        reused += f"; could not keep the finished runs in {parts} ({m.resume_problem})"
    drift = "" if result.sources is None else "; source drift flagged: " + (
        ", ".join(p.policy for p in result.sources.packers if p.drift.drifted) or "none")
    print(writer.summary_line("compare", f"{result.headline()} "
                                       f"({counted(int(corpus.lengths.size), 'document')}, "
                                         f"{time.perf_counter() - t0:.1f} s{reused}{drift})"),
          file=sys.stderr)
    failing = [r.packer for r in result.measurement.runs if not r.aggregates.mass.identity_holds]
    unreconciled = [] if result.sources is None else [p.policy for p in result.sources.packers
                                                      if not p.reconciles]
    if failing or unreconciled:
        said = ([f"the mass identity FAILS for {', '.join(failing)}"] if failing else []) + (
            [f"the data sources do not reconcile for {', '.join(unreconciled)}"] if unreconciled else [])
        raise Finding("; ".join(said) + " (the report says where)")
    return 0
