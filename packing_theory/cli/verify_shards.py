"""``packing-theory verify-shards``: check seed-002 token shards against their manifest.

Exit status (the CLI's contract): 0 every check ran and found nothing, 1 a
problem was found, 2 bad usage or an unreadable / malformed manifest, 3 a
check could not be measured (and nothing was found).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..corpus.verify import EXIT_USAGE, verify_shards
from ._common import emit_json

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``verify-shards`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "verify-shards",
        help="verify seed-002 token shards against their manifest; exit 1 found, 3 not measured",
        description="Check every shard a manifest lists: presence, header and exact size (truncation, "
        "trailing bytes), well-formed offsets, ids below vocab, the token recount against the manifest, "
        "sha256, distinct sources per shard, and random (shard_index, token_offset) cursor probes "
        "that must reconstruct document boundaries. One line per finding. Exit status: 0 clean, "
        "1 a problem found, 2 bad usage or manifest, 3 a check could not be measured.",
    )
    parser.add_argument(
        "manifest", metavar="MANIFEST.json", help="the shard manifest (written by write_shards)"
    )
    parser.add_argument("--probes", type=int, default=40, help="random cursor probes (default 40)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the probe positions (default 0)")
    parser.add_argument(
        "--min-sources",
        type=int,
        default=None,
        metavar="K",
        help="distinct sources every shard must hold (default: half of the mix's, rounded up)",
    )
    parser.add_argument("--no-sources", action="store_true", help="skip the distinct-sources check")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Verify and print one line per finding; return the exit status."""
    if args.probes < 0 or (args.min_sources is not None and args.min_sources < 0):
        print("packing-theory verify-shards: error: --probes and --min-sources must be >= 0", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = verify_shards(
            args.manifest,
            probes=args.probes,
            seed=args.seed,
            min_sources=args.min_sources,
            check_sources=not args.no_sources,
        )
    except (OSError, ValueError) as exc:
        print(f"packing-theory verify-shards: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        emit_json(report.to_dict())
    else:
        for line in report.lines():
            print(f"verify-shards: {line}")
    return report.status
