"""Options shared by the stream-replaying subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..policies import POLICIES, RANDOM_SPAN_SEED, PackerConfig

__all__ = ["add_stream_options", "config_from_args", "emit_json", "parse_refill"]


def parse_refill(text: str) -> int | tuple[int, ...]:
    """``"128"`` -> 128; ``"128,128,60"`` -> a batch-size sequence."""
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        msg = f"--refill must be an int or comma-separated ints, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    return parts[0] if len(parts) == 1 else tuple(parts)


def add_stream_options(parser: argparse.ArgumentParser, *, lengths_required: bool = True) -> None:
    """Add ``--lengths --capacity --min-buffer --refill --policy --seed --passes --rows --targets``."""
    parser.add_argument("--lengths", required=lengths_required, metavar="FILE.npy",
                        help="1-D integer .npy array of BOS-inclusive document lengths")
    parser.add_argument("--capacity", type=int, default=2049, metavar="R",
                        help="row capacity R (default 2049)")
    parser.add_argument("--min-buffer", type=int, default=1000, metavar="B",
                        help="minimum buffer occupancy B (default 1000)")
    parser.add_argument("--refill", type=parse_refill, default=128, metavar="N[,N...]",
                        help="refill batch size or sequence of sizes (default 128)")
    parser.add_argument("--policy", default="discard", choices=POLICIES,
                        help="continuation semantics / arrival transform (default discard)")
    parser.add_argument("--seed", type=int, default=RANDOM_SPAN_SEED,
                        help=f"random-span RNG seed (default {RANDOM_SPAN_SEED})")
    parser.add_argument("--passes", type=int, default=1, help="corpus passes, persistent buffer (default 1)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--rows", type=int, default=None, help="stop after this many rows")
    budget.add_argument("--targets", type=int, default=None, help="stop after this many targets")
    parser.add_argument("--drain", action="store_true",
                        help="when the stream cannot refill to B, keep selecting until empty "
                             "(outside the theorem) instead of stopping")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def config_from_args(args: argparse.Namespace, **overrides: Any) -> PackerConfig:
    """Build and validate a :class:`PackerConfig` from parsed options."""
    fields: dict[str, Any] = dict(
        capacity=args.capacity,
        min_buffer=args.min_buffer,
        refill=args.refill,
        policy=args.policy,
        seed=args.seed,
        passes=args.passes,
        rows=args.rows,
        targets=args.targets,
        exhausted="drain" if args.drain else "stop",
    )
    fields.update(overrides)
    return PackerConfig(**fields)


def emit_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON on standard output."""
    json.dump(payload, sys.stdout, indent=2)
    sys.stdout.write("\n")
