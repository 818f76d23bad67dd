"""``packing-theory compare``: every chosen packer side by side on one corpus.

``packing-theory compare --demo`` compares every registered packer (the
streaming policies and every peer) on the first :data:`DEMO_DOCUMENTS`
documents of the embedded default corpus and writes ``compare.json``,
``compare.md`` and PNG plots to ``./compare-report/``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..audit.compare import compare_packers, default_packers, render_markdown, write_plots
from ..errors import InputError
from ._common import emit_json
from ._inputs import add_data_options, check_input_options, load_data
from ._peers import is_peer, peer_options

__all__ = ["DEMO_DOCUMENTS", "register", "run"]

DEMO_DOCUMENTS = 50_000
"""Documents of ``default_lengths(0)`` the demo compares (a prefix keeps it under a minute)."""


def register(sub: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "compare", help="every packer side by side: utilization, padding, drops, sources never started",
        description="Replay one corpus once (one pass) with each chosen packer — streaming policies and "
                    "peer packers — and report utilization, padding, dropped tokens, filtered and "
                    "never-started sources, exposure by length stratum, what the trainer gets and the "
                    "invariant verdict. Writes compare.json, compare.md and PNG plots.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--demo", action="store_true",
                     help=f"the first --documents (default {DEMO_DOCUMENTS:,}) of the default corpus")
    src.add_argument("--lengths", metavar="FILE.npy", help="1-D integer .npy array of BOS-inclusive lengths")
    add_data_options(parser, src, tokenizer=True)
    parser.add_argument("--per-line", action="store_true", help="--data text files: one document per line")
    parser.add_argument("--documents", type=int, default=DEMO_DOCUMENTS, help="--demo: corpus prefix size")
    parser.add_argument("--policy", action="append", metavar="P[,P...]",
                        help="packers to compare (repeatable; default: every streaming policy and peer)")
    parser.add_argument("--capacity", type=int, default=2049, metavar="R", help="streaming row capacity R")
    parser.add_argument("--seq-length", type=int, default=None, metavar="L",
                        help="the peers' sequence length (default R - 1)")
    parser.add_argument("--min-buffer", type=int, default=1000, metavar="B",
                        help="streaming B (default 1000)")
    parser.add_argument("--refill", type=int, default=128, help="streaming refill batch (default 128)")
    parser.add_argument("--peer-option", action="append", default=[], metavar="POLICY:KEY=VALUE",
                        help="a constructor option of one peer, e.g. trl-bfd:window=500 (repeatable)")
    parser.add_argument("--out", default="compare-report", metavar="DIR", help="report directory")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--json", action="store_true", help="also print the JSON on standard output")
    parser.set_defaults(run=run)


def _names(values: list[str] | None) -> list[str]:
    if not values:
        return default_packers()
    out: list[str] = []
    for v in values:
        out.extend(n.strip() for n in v.split(",") if n.strip())
    return out


def _options(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, Any]]:
    per: dict[str, list[str]] = {}
    for item in args.peer_option:
        policy, sep, rest = item.partition(":")
        if not sep or not is_peer(policy):
            raise InputError(f"--peer-option must be POLICY:KEY=VALUE with a peer POLICY, got {item!r}")
        if policy not in names:
            raise InputError(f"--peer-option names {policy!r}, which is not compared")
        per.setdefault(policy, []).append(rest)
    return {p: peer_options(argparse.Namespace(peer_option=items), p) for p, items in per.items()}


def run(args: argparse.Namespace) -> int:
    """Compare and write the report; exit status 0 (1 if a mass identity fails)."""
    import numpy as np

    t0 = time.perf_counter()
    if args.demo:
        from ..corpus import default_lengths

        lengths = default_lengths(0)[: args.documents]
        label = f"default corpus (seed 0), first {lengths.size:,} documents"
    elif args.lengths:
        from ..lengths import load_lengths

        check_input_options(args)
        lengths = load_lengths(args.lengths)
        label = Path(args.lengths).name
    else:
        lengths, label, _ = load_data(args)
    names = _names(args.policy)
    cmp = compare_packers(np.asarray(lengths), names, capacity=args.capacity, seq_length=args.seq_length,
                          min_buffer=args.min_buffer, refill=args.refill, peer_options=_options(args, names),
                          corpus_label=label)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import json

    (out / "compare.json").write_text(json.dumps(cmp.to_dict(), indent=2) + "\n", encoding="utf-8")
    md = render_markdown(cmp)
    (out / "compare.md").write_text(md, encoding="utf-8")
    pngs: list[str] = []
    if not args.no_plots:
        from ..audit.report import matplotlib_available

        if matplotlib_available():
            pngs = write_plots(cmp, str(out))
    if args.json:
        emit_json(cmp.to_dict())
    else:
        print(md)
    print(f"compare: {len(cmp.columns)} packers on {cmp.documents:,} documents in "
          f"{time.perf_counter() - t0:.1f} s; wrote {out}/compare.md, {out}/compare.json and "
          f"{len(pngs)} PNG plot(s)", file=sys.stderr)
    return 0 if all(c.identity_holds for c in cmp.columns) else 1
