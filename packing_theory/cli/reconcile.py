"""``packing-theory reconcile``: a training ledger against the library's replay of the packer the run used.

Exit status (the CLI's contract): 0 every step equals the replay, 1 a
divergence (named: step, rank, row, document, class), 2 bad usage or input
(a ledger of another corpus, an unknown packer option), 3 could not measure
(a ledger with no step). ``--out DIR`` writes ``reconcile.json``, ``reconcile.md``
and ``reconcile.html``; the directory is checked and locked before anything is
read, and like every report it stays apart from the inputs (an ``--out`` inside
an input directory, or an input that is one of its files, is exit 2 with one
line; :func:`~packing_theory.reporting.writer.inputs_problem`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ._options import add_options
from .replay import PACKER_OPTIONS

if TYPE_CHECKING:
    from ..training.result import Reconciliation

__all__ = ["REPORT_FILES", "register", "run"]

REPORT_FILES = ("reconcile.html", "reconcile.json", "reconcile.md")
"""The files of a reconcile report directory."""


def register(sub: Any) -> None:
    """Add the ``reconcile`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "reconcile",
        help="check a training ledger against the replay of its packer; exit 1 on a divergence",
        description="Read a training ledger (written by packing_theory.training.TrainingLedger, one file per "
        "rank or merged), replay the packer the run used (--policy, its row width and options) over the "
        "corpus, deal its rows to optimizer steps and ranks, and say either that every step equals the "
        "replay or where the run first diverged (step, rank, row, document) and how: duplicated, skipped, "
        "reordered, truncated, foreign, fully masked. Also the trained targets per document against the "
        "replay's, the documents consumed but never trained, and per data source the realised share "
        "against the declared mixture (--labels, --mixture). Exit status: 0 reconciled, 1 a divergence, "
        "2 bad usage or input, 3 could not measure.",
    )
    add_options(parser, "ledgers", "corpus", *PACKER_OPTIONS, "world-size", "rows-per-step", "deal",
                "permutation", "unit", "labels", "mixture", "json", "markdown", "out", "force")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Reconcile and print; return 0 (reconciled) or 1 (a divergence)."""
    import contextlib

    from ..errors import InputError
    from ..reporting import ReportWriter, stage_report
    from ._common import emit_json, packers_from_args

    if not args.policy:
        raise InputError("--policy is required: the packer the run used (see `packing-theory policies`)")
    (name,) = packers_from_args(args, [], one=True)
    if args.force and not args.out:
        raise InputError("--force applies to --out (the report directory)")
    if args.json and args.markdown == "-":
        raise InputError("give one of --json and --markdown (both print on standard output)")
    if args.mixture and not args.labels:
        raise InputError("--mixture compares each source's share: give the documents' sources with --labels")
    with contextlib.ExitStack() as stack:
        writer = None
        if args.out:  # checked (apart from every input) and locked before anything is read
            inputs = [*args.ledgers, args.corpus, args.labels, args.mixture, args.permutation]
            writer = stack.enter_context(ReportWriter(args.out, names=REPORT_FILES, config={},
                                                      tool="packing-theory reconcile", force=args.force,
                                                      inputs=[str(p) for p in inputs if p]))
        result = _reconcile(args, name)
        if writer is not None:
            stage_report(writer, result, plots=False)
            writer.commit()
    if args.markdown not in (None, "-"):
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(result.markdown())
    if writer is not None:
        print(writer.summary_line("reconcile", "reconciled" if result.exit_code == 0 else "a divergence"),
              file=sys.stderr)
    if args.json:
        emit_json(result.to_dict())
    elif args.markdown == "-":
        print(result.markdown(), end="")
    else:
        print(f"reconcile: {result.headline()}")
    return result.exit_code


def _reconcile(args: argparse.Namespace, name: str) -> Reconciliation:
    """Read the ledgers, the corpus, the labels and the mixture, and reconcile (a ``Reconciliation``)."""
    import numpy as np

    from ..audit.declared import read_mixture
    from ..corpus.labels import labels_from_file
    from ..registry import entry
    from ..training.reconcile import reconcile
    from ..training.schedule import Schedule
    from ..training.tokens import read_token_corpus
    from ._common import settings_from_args
    from ._packers import check_width

    settings = settings_from_args(args, [name])
    width = check_width(settings, name)
    documents = read_token_corpus(args.corpus)
    permutation = None
    if args.permutation:
        permutation = np.load(args.permutation, allow_pickle=False)
    schedule = Schedule(world_size=args.world_size or 1, rows_per_step=args.rows_per_step, deal=args.deal,
                        permutation=permutation)
    labels = labels_from_file(args.labels, documents=len(documents)) if args.labels else None
    mixture = read_mixture(args.mixture) if args.mixture else None
    return reconcile(list(args.ledgers), documents, name, capacity=width,
                     options=settings.knobs(entry(name)), schedule=schedule, labels=labels,
                     mixture=mixture, unit=args.unit)
