"""``packing-theory verify-shards``: check seed-002 token shards against their manifest.

Exit status (the CLI's contract): 0 every check ran and found nothing, 1 a
problem was found, 2 bad usage or an unreadable / malformed manifest, 3 a
check could not be measured (and nothing was found).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..corpus.mixture import MixtureSummary
from ..corpus.verify import verify_shards
from ..errors import InputError
from ._common import emit_json

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``verify-shards`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "verify-shards",
        help="verify seed-002 token shards against their manifest; exit 1 found, 3 not measured",
        description="Check every shard a manifest lists: presence, header and exact size (truncation, "
        "trailing bytes), well-formed offsets, ids below vocab, the token recount against the manifest, "
        "sha256, distinct sources per shard (minimum, median, maximum; the share of each source per shard "
        "with --shares or --json), and random (shard_index, token_offset) cursor probes "
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
        help="distinct sources every shard must hold (default: half of the mix's distinct sources, rounded "
        "down, at least 1: seed 002's floor, 7 of 15); a shard below it is a finding",
    )
    parser.add_argument("--no-sources", action="store_true", help="skip the distinct-sources check")
    parser.add_argument(
        "--shares",
        action="store_true",
        help="also print each shard's distinct sources and the share of each source (documents, and "
        "tokens where the manifest records them); --json always includes them",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=run)


def _check_options(args: argparse.Namespace) -> None:
    if args.probes < 0:
        raise InputError(f"--probes must be >= 0, got {args.probes}")
    if args.min_sources is not None:
        if args.no_sources:
            raise InputError(f"--min-sources {args.min_sources} applies to the distinct-sources check, which "
                             "--no-sources turns off")
        if args.min_sources < 1:
            raise InputError(f"--min-sources must be >= 1, got {args.min_sources} "
                             "(--no-sources skips the check)")
    if args.shares and args.no_sources:
        raise InputError("--shares prints the per-shard sources, which --no-sources turns off")
    if args.shares and args.json:
        raise InputError("--shares applies to the text output; the --json report always has the shares")


def _share_lines(mix: MixtureSummary) -> list[str]:
    lines = []
    for m in mix.shards:
        shares = m.token_shares if m.token_shares is not None else m.document_shares
        unit = "tokens" if m.token_shares is not None else "documents"
        parts = ", ".join(f"{k} {v:.1%}" for k, v in shares.items())
        lines.append(f"shares {m.path}: {m.distinct}/{len(mix.sources)} sources, share of {unit}: {parts}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Verify and print one line per finding; return the exit status."""
    _check_options(args)
    report = verify_shards(
        args.manifest,
        probes=args.probes,
        seed=args.seed,
        min_sources=args.min_sources,
        check_sources=not args.no_sources,
    )
    if args.json:
        emit_json(report.to_dict())
    else:
        if args.shares and report.mixture is not None:
            for line in _share_lines(report.mixture):
                print(f"verify-shards: {line}")
        for line in report.lines():
            print(f"verify-shards: {line}")
    return report.status
