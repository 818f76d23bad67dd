"""``packing-theory bounds``: the corollary tables (startup, mass, repeated corpus)."""

from __future__ import annotations

import argparse
from typing import Any

from ._options import add_options

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``bounds`` subcommand."""
    from .replay import INPUT_OPTIONS

    parser: argparse.ArgumentParser = sub.add_parser(
        "bounds",
        description="Necessary bounds implied by the protected-set proposition for the streaming policies, "
                    "from a corpus (one pass, arrival order) or from per-threshold counts (--counts).",
    )
    add_options(parser, *INPUT_OPTIONS, "counts", "min-buffer", "capacity", "seq-length", "thresholds",
                "json")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Compute and print the tables; exit status 0."""
    from ..invariant.bounds import (
        expected_startup_index,
        format_pass_table,
        mass_lower_bound,
        repeated_corpus_table,
        startup_bound,
    )
    from ..lengths import exact_sum
    from ..orchestration.settings import Settings
    from ._common import emit_json
    from ._inputs import corpus_from_args

    B = 1000 if args.min_buffer is None else args.min_buffer
    R = Settings(capacity=args.capacity, seq_length=args.seq_length).streaming_capacity
    payload: dict[str, Any] = {"min_buffer": B, "capacity": R}
    if args.counts is not None:
        rows = repeated_corpus_table(counts=args.counts, thresholds=args.thresholds, min_buffer=B,
                                     capacity=R)
    else:
        lengths = corpus_from_args(args).lengths
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
