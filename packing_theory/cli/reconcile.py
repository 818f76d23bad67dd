"""``packing-theory reconcile``: a training ledger against the library's replay of the packer the run used.

Exit status (the CLI's contract): 0 every step equals the replay, 1 a
divergence (named: step, rank, row, document, class), 2 bad usage or input
(a ledger of another corpus, an unknown packer option), 3 could not measure
(a ledger with no step).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from ..audit.declared import read_mixture
from ..corpus.labels import labels_from_file
from ..errors import InputError
from ..reporting import write_report
from ..training.reconcile import reconcile
from ..training.schedule import DEALS, Schedule
from ..training.tokens import read_token_corpus
from ._common import emit_json, existing_path, int_at_least
from ._packers import parse_options, policy_name

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``reconcile`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "reconcile",
        help="check a training ledger against the replay of its packer; exit 1 on a divergence",
        description="Read a training ledger (written by packing_theory.training.TrainingLedger, one file per "
        "rank or merged), replay the packer the run used over the corpus, deal its rows to optimizer steps "
        "and ranks, and say either that every step equals the replay or where the run first diverged "
        "(step, rank, row, document) and how: duplicated, skipped, reordered, truncated, foreign, fully "
        "masked. Also the trained targets per document against the replay's, the documents consumed but "
        "never trained, and per data source the realised share against the declared mixture. Exit status: "
        "0 reconciled, 1 a divergence, 2 bad usage or input, 3 could not measure.",
    )
    parser.add_argument("ledgers", nargs="+", metavar="LEDGER", type=existing_path("LEDGER"),
                        help="the ledger file(s): one per rank, or one merged")
    parser.add_argument("--corpus", required=True, type=existing_path("--corpus"), metavar="FILE",
                        help="the documents as the trainer saw them, BOS included, in raw corpus order: .npz "
                             "(arrays tokens, offsets) or .jsonl (one JSON list of token ids per line)")
    parser.add_argument("--policy", required=True, type=policy_name, metavar="NAME",
                        help="the packer the run used (see `packing-theory policies`)")
    width = parser.add_mutually_exclusive_group(required=True)
    width.add_argument("--capacity", type=int_at_least("--capacity", 2), metavar="R",
                       help="the packer's row width")
    width.add_argument("--seq-length", type=int_at_least("--seq-length", 1), metavar="L",
                       help="the framework's sequence length instead (mapped by the packer's row-width rule)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a packer option by name (repeatable), e.g. window=1000, seed=1234")
    parser.add_argument("--world-size", type=int_at_least("--world-size", 1), default=1, metavar="W",
                        help="ranks of the run (default 1)")
    parser.add_argument("--rows-per-step", type=int_at_least("--rows-per-step", 1), default=1, metavar="B",
                        help="packed rows one rank consumes per optimizer step: micro-batch size x gradient "
                             "accumulation (default 1)")
    parser.add_argument("--deal", choices=DEALS, default="blocks",
                        help="how rows reach ranks: blocks (Megatron's sampler, accelerate's sharding; "
                             "default) or interleaved (torch DistributedSampler)")
    parser.add_argument("--permutation", type=existing_path("--permutation"), metavar="FILE.npy",
                        help="the sampler's order over the rows (a shuffling sampler's indices)")
    parser.add_argument("--unit", choices=("row", "sequence", "position"), default=None,
                        help="which positions the trainer predicts (default: the packer's declared rule)")
    parser.add_argument("--labels", type=existing_path("--labels"), metavar="FILE",
                        help="each document's data source (one per line, or a JSON list)")
    parser.add_argument("--mixture", type=existing_path("--mixture"), metavar="FILE",
                        help="the declared mixture (JSON or YAML: alpha or tokens per source); needs "
                             "--labels")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    out.add_argument("--markdown", action="store_true", help="print the report as Markdown")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="also write the report (reconcile.json, reconcile.md, reconcile.html) into DIR")
    parser.add_argument("--force", action="store_true",
                        help="--out: replace report-named files this library did not write")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Reconcile and print; return 0 (reconciled) or 1 (a divergence)."""
    if args.force and not args.out:
        raise InputError("--force applies to --out (the report directory)")
    if args.mixture and not args.labels:
        raise InputError("--mixture compares each source's share: give the documents' sources with --labels")
    documents = read_token_corpus(args.corpus)
    permutation = None
    if args.permutation:
        permutation = np.load(args.permutation, allow_pickle=False)
    schedule = Schedule(world_size=args.world_size, rows_per_step=args.rows_per_step, deal=args.deal,
                        permutation=permutation)
    labels = labels_from_file(args.labels, documents=len(documents)) if args.labels else None
    mixture = read_mixture(args.mixture) if args.mixture else None
    result = reconcile(list(args.ledgers), documents, args.policy, capacity=args.capacity,
                       seq_length=args.seq_length, options=parse_options(args.policy, args.option),
                       schedule=schedule, labels=labels, mixture=mixture, unit=args.unit)
    if args.out:
        files = write_report(result, args.out, force=args.force)
        print(f"reconcile: wrote {files.markdown}, {files.json}"
              + (f" and {files.html}" if files.html is not None else ""), file=sys.stderr)
    if args.json:
        emit_json(result.to_dict())
    elif args.markdown:
        print(result.markdown(), end="")
    else:
        print(f"reconcile: {result.headline()}")
    return result.exit_code
