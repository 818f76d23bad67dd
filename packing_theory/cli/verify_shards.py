"""``packing-theory verify-shards``: check token shards against their manifest.

Exit status (the CLI's contract): 0 every check ran and found nothing, 1 a
problem was found, 2 bad usage or an unreadable / malformed manifest, 3 a
check could not be measured (and nothing was found).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ._options import add_options

if TYPE_CHECKING:
    from ..corpus.mixture import MixtureSummary

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``verify-shards`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "verify-shards",
        description="Check every shard a manifest lists: presence, header and exact size (truncation, "
        "trailing bytes), well-formed offsets, ids below vocab, the token recount against the manifest, "
        "sha256, distinct sources per shard (minimum, median, maximum; the share of each source per shard "
        "with --shares or --json), and random (shard_index, token_offset) cursor probes (--probes, placed by "
        "--seed) that must reconstruct document boundaries. One line per finding. Exit status: 0 clean, "
        "1 a problem found, 2 bad usage or manifest, 3 a check could not be measured.",
    )
    add_options(parser, "manifest", "probes", "seed", "min-sources", "no-sources", "shares", "json")
    parser.set_defaults(run=run)


def _check_options(args: argparse.Namespace) -> None:
    from ..errors import InputError

    if args.min_sources is not None and args.no_sources:
        raise InputError(f"--min-sources {args.min_sources} applies to the distinct-sources check, which "
                         "--no-sources turns off")
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
    from ..corpus.verify import verify_shards
    from ._common import emit_json

    _check_options(args)
    report = verify_shards(
        args.manifest,
        probes=args.probes,
        seed=0 if args.seed is None else args.seed,
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
