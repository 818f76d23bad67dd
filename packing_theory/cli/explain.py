"""``packing-theory explain DOC``: what one packer did to one document, and why, in one line.

``packing-theory explain 1733 --lengths L.npy --policy discard --min-buffer 64``
(or a file name: ``explain typing.py --text lib/*.py``, ``explain a.txt --lengths
census/lengths.npy`` next to its ``census.json``) replays the corpus to the same
horizon ``audit`` uses (``--rows`` / ``--targets`` / ``--tokens``, default
243,968 rows) and prints :attr:`~packing_theory.audit.Explanation.sentence`;
``--json`` prints the whole :class:`~packing_theory.audit.Explanation` (the
document's ``documents.csv`` row, the rows holding its tokens). A file name
matches exactly, else as a unique whole-component path suffix
(``dom/__init__.py`` for ``lib/xml/dom/__init__.py``). Exit 0; an unknown or
ambiguous document (the error lists candidates) or bad input exits 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InputError
from ._common import add_stream_options, emit_json, existing_path
from ._inputs import add_data_options

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``explain`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "explain", help="what one packer did to one document, and why",
        description="Replay the corpus with one packer to the audit's horizon and say, for one document "
                    "(an id 0..N-1 or a file name the inputs know), whether it trained, which rows hold "
                    "its tokens, or why it never started or was never reached.",
    )
    parser.add_argument("document", metavar="DOC",
                        help="document id (0-based) or file name: exact, else a unique path suffix")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--lengths", type=existing_path("--lengths"),
                     metavar="FILE.npy", help="1-D integer .npy array of BOS-inclusive lengths "
                                                           "(names from a census.json beside it)")
    src.add_argument("--shards", nargs="+", metavar="SHARD", help="token shard files (seed 002 format)")
    src.add_argument("--text", nargs="+", metavar="FILE", help="plain text files, one document per file")
    add_data_options(parser, src)
    parser.add_argument("--per-line", action="store_true", help="--text: one document per non-blank line")
    parser.add_argument("--text-column", default="text", help="--text parquet column (default text)")
    parser.add_argument("--tokenizer", default="bytes", help="--text tokenizer (as for audit)")
    add_stream_options(parser, lengths=False, tokens=True,
                       rows_help="the horizon in rows (default 243,968, as audit)")
    parser.add_argument("--pass", dest="pass_index", type=int, default=0,
                        help="which pass of a multi-pass run (default 0)")
    parser.add_argument("--json", action="store_true", help="print the whole explanation as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Explain the document; print one line (exit 0)."""
    from ..audit.explanations import explain
    from ..engine.horizon import Budget
    from ..orchestration import AUTORESEARCH_ROWS
    from ._packers import capacity_from_args, knobs_from_args
    from .audit import load_named_corpus

    if not (args.lengths or args.shards or args.text or args.data or args.files_from):
        raise InputError("give --lengths FILE.npy, --shards SHARD..., --text FILE... or --data PATH...")
    for name, value in (("--rows", args.rows), ("--targets", args.targets), ("--tokens", args.tokens)):
        if value is not None and value < 0:
            raise InputError(f"{name} must be >= 0, got {value}")
    horizon = Budget("rows", AUTORESEARCH_ROWS)
    for unit in ("rows", "targets", "tokens"):
        if getattr(args, unit) is not None:
            horizon = Budget(unit, getattr(args, unit))
    knobs = knobs_from_args(args, args.policy, common_horizon=True)
    for key in ("rows", "targets", "min_buffer"):  # the horizon is cut generically; B is explain's own
        knobs.pop(key, None)
    lengths, _, names = load_named_corpus(args)
    capacity = capacity_from_args(args, args.policy, knobs)
    result = explain(lengths, args.document, policy=args.policy, capacity=capacity,
                     min_buffer=args.min_buffer, horizon=horizon, names=names, pass_index=args.pass_index,
                     options=knobs)
    if args.json:
        emit_json(result.to_dict())
    print(f"explain: {result.sentence}", file=sys.stderr)
    return 0
