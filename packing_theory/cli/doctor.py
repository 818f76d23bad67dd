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

import numpy as np

from ..configs import FRAMEWORKS, Thresholds, doctor, read_config
from ..configs.megatron import source_name
from ..corpus.readers import open_data
from ..errors import InputError
from ._common import existing_path
from ._inputs import add_data_options, lengths_from_args

__all__ = ["register", "run"]

_DEFAULT = Thresholds()


def _share(flag: str) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number in [0, 1], got {text!r}") from None
        if not 0 <= value <= 1:
            raise argparse.ArgumentTypeError(f"{flag} must be a number in [0, 1], got {text!r}")
        return value
    return parse


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "doctor", help="replay a framework's own config on a corpus and rank what its packer does wrong",
        description="Map a framework config onto the packer that replays it (every key used or ignored "
                    "is printed), replay it on the corpus, and rank the findings: starvation, padding, "
                    "documents never started, tails cut, dropped batches, examples with no trainable token, "
                    "a blend's realised shares. Exit 0: nothing found; 1: a finding.")
    parser.add_argument("--config", required=True, type=existing_path("--config"), metavar="FILE",
                        help="the framework's config (YAML, JSON, or a Megatron argument list)")
    parser.add_argument("--framework", choices=FRAMEWORKS, default=None,
                        help="the config's framework (default: its framework: key or its keys)")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--lengths", type=existing_path("--lengths"), metavar="FILE.npy",
                     help="1-D integer .npy array of BOS-inclusive document lengths")
    add_data_options(parser, src, tokenizer=True)
    parser.add_argument("--per-line", action="store_true", help="--data text files: one document per line")
    parser.add_argument("--prompt-lengths", type=existing_path("--prompt-lengths"), metavar="FILE.npy",
                        help="per document, the offset of its first trained token (prompt-masked training)")
    parser.add_argument("--max-padding", type=_share("--max-padding"), default=_DEFAULT.padding,
                        metavar="SHARE",
                        help="padding share of row positions that is a finding (default 0.05)")
    parser.add_argument("--max-cut", type=_share("--max-cut"), default=_DEFAULT.tails_cut, metavar="SHARE",
                        help="share of tokens cut from started documents that is a finding (default 0.005)")
    parser.add_argument("--max-blend-gap", type=_share("--max-blend-gap"), default=_DEFAULT.blend,
                        metavar="SHARE",
                        help="distance of a realised share from its weight that is a finding (default 0.02)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown to FILE")
    parser.set_defaults(run=run)


def _blend_data(args: argparse.Namespace, prefixes: tuple[str, ...]) -> dict[str, Any]:
    if args.lengths or args.data or args.files_from:
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
    mapped = read_config(args.config, args.framework)
    print(mapped.mapping_text(), file=sys.stderr)
    if mapped.blend is not None:
        data: Any = _blend_data(args, mapped.blend.prefixes)
        label = f"the {len(data)} datasets of --data-path"
    else:
        if not (args.lengths or args.data or args.files_from):
            raise InputError("give the corpus: --lengths FILE.npy or --data PATH")
        data = lengths_from_args(args)
        label = args.lengths or " ".join(args.data or [args.files_from])
    prompt = None if args.prompt_lengths is None else np.load(args.prompt_lengths, allow_pickle=False)
    report = doctor(mapped, data, prompt_lengths=prompt, data_label=str(label),
                    thresholds=Thresholds(args.max_padding, args.max_cut, args.max_blend_gap))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(report.markdown())
    if args.json:
        print(json.dumps(report.to_dict(), indent=1, default=_plain))
    else:
        print(report.markdown(), end="")
    return 1 if report.found else 0


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
