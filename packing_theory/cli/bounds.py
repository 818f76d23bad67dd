"""``packing-theory bounds``: the corollary tables (startup, mass, repeated corpus)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError
from ..invariant.bounds import (
    expected_startup_index,
    format_pass_table,
    mass_lower_bound,
    parse_counts,
    repeated_corpus_table,
    startup_bound,
)
from ..lengths import exact_sum, load_lengths
from ._common import emit_json, existing_path, int_at_least, parse_int_list

__all__ = ["register", "run"]


def _counts(text: str) -> dict[int, int]:
    try:
        return parse_counts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: Any) -> None:
    """Add the ``bounds`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "bounds", help="corollary tables: repeated-corpus pass bounds, startup and mass bounds",
        description="Necessary bounds implied by the protected-set proposition (seed 000 §3), from a "
                    "lengths file (one corpus pass, arrival order) or from per-threshold counts.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--lengths", type=existing_path("--lengths"),
                        metavar="FILE.npy", help="1-D integer .npy array of lengths")
    source.add_argument("--counts", type=_counts, metavar="T=R[,T=R...]",
                        help="sources per pass at each threshold, e.g. 16384=789,32768=196")
    parser.add_argument("--min-buffer", type=int_at_least("--min-buffer", 1),
                        default=1000, metavar="B", help="B (default 1000)")
    parser.add_argument("--capacity", type=int_at_least("--capacity", 2),
                        default=2049, metavar="R", help="R (default 2049)")
    parser.add_argument("--thresholds", type=parse_int_list, default=None, metavar="T[,T...]",
                        help="thresholds for the table (default: the --counts keys, or powers of two "
                             "above R up to the maximum length plus the maximum)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Compute and print the tables; exit status 0."""
    B, R = args.min_buffer, args.capacity
    if R < 2:  # as every other command: a row holds a BOS and at least one target
        raise InputError(f"--capacity must be >= 2, got {R}")
    payload: dict[str, Any] = {"min_buffer": B, "capacity": R}
    if args.counts is not None:
        rows = repeated_corpus_table(counts=args.counts, thresholds=args.thresholds, min_buffer=B,
                                     capacity=R)
    else:
        lengths = load_lengths(args.lengths)
        rows = repeated_corpus_table(lengths=lengths, thresholds=args.thresholds, min_buffer=B, capacity=R)
        n = int(lengths.size)
        n_long = int((lengths > R).sum())
        q = n_long / n
        payload.update({
            "documents": n,
            "tokens": exact_sum(lengths),
            "long_documents": n_long,
            "long_fraction": q,
            "startup_arrival": startup_bound(lengths, R, B),
            "expected_startup_arrival": expected_startup_index(B, q) if q > 0 else None,
            "mass_lower_bound": mass_lower_bound(lengths, B, capacity=R),
        })
    payload["repeated_corpus"] = [r.to_dict() for r in rows]
    if args.json:
        emit_json(payload)
        return 0
    for key, value in payload.items():
        if key != "repeated_corpus":
            print(f"{key:<26}  {value}")
    print()
    print(f"Repeated corpus (B = {B}): necessary lower bounds on the pass of the first possible start")
    print(format_pass_table(rows))
    return 0
