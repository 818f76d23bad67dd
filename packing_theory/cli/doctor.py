"""``packing-theory doctor``: a framework config and its corpus in, the packer's problems ranked out.

The config is the user's own file (Axolotl, TRL ``SFTConfig``, LLM Foundry,
torchtune, Megatron arguments, nanochat / autoresearch / Parcae settings); the
data is what ``audit --data`` reads. A Megatron blend reads its datasets'
``.idx`` files from the config's ``--data-path`` prefixes. Exit status 0:
nothing found; 1: a finding; 2: bad input (a key the replay does not model).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ._options import add_options
from .replay import INPUT_OPTIONS

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "doctor",
        description="Map a framework config onto the packer that replays it (every key used or ignored "
                    "is printed), replay it on the corpus, and rank the findings: starvation, padding, "
                    "documents never started, tails cut, dropped batches, examples with no trainable token, "
                    "a blend's realised shares (a Megatron blend reads its datasets from the config itself; "
                    "give --bos). Exit 0: nothing found; 1: a finding.")
    add_options(parser, "config", "framework", *INPUT_OPTIONS, "prompt-lengths", "max-padding", "max-cut",
                "max-blend-gap", "json", "markdown", optional=("input",))
    parser.set_defaults(run=run)


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
    base = os.path.dirname(os.path.abspath(args.config))
    out = {}
    for prefix in prefixes:
        path = prefix if os.path.isabs(prefix) else os.path.join(base, prefix)
        out[source_name(prefix)] = open_data([path + ".idx"], "megatron", bos=args.bos).lengths()
    return out


def run(args: argparse.Namespace) -> int:
    """Map, replay, print the ranked findings; 1 when anything was found."""
    import numpy as np

    from ..configs import Thresholds, doctor, read_config
    from ..errors import InputError
    from ._inputs import corpus_from_args

    mapped = read_config(args.config, args.framework)
    print(mapped.mapping_text(), file=sys.stderr)
    if mapped.blend is not None:
        data: Any = _blend_data(args, mapped.blend.prefixes)
        label = f"the {len(data)} datasets of --data-path"
    else:
        if not (args.lengths or args.data or args.files_from or args.shards or args.text or args.parquet):
            raise InputError("give the corpus: --lengths FILE.npy or --data PATH")
        corpus = corpus_from_args(args)
        data, label = corpus.lengths, corpus.label
    prompt = None if args.prompt_lengths is None else np.load(args.prompt_lengths, allow_pickle=False)
    report = doctor(mapped, data, prompt_lengths=prompt, data_label=str(label),
                    thresholds=Thresholds(args.max_padding, args.max_cut, args.max_blend_gap))
    if args.markdown not in (None, "-"):
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(report.markdown())
    if args.json:
        print(json.dumps(report.to_dict(), indent=1, default=_plain))
    else:
        print(report.markdown(), end="")
    return 1 if report.found else 0


def _plain(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    return str(value)
