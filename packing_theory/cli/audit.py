"""``packing-theory audit``: which documents and sources each packer trains, never starts or cuts off.

``packing-theory audit --data DATA --policy discard,trl-bfd`` opens the corpus
(:func:`~packing_theory.orchestration.open_corpus`), audits it under every
packer (:func:`~packing_theory.orchestration.audit`) and writes the report
(:func:`~packing_theory.reporting.stage_report`): ``audit.json``,
``audit.md``, ``audit.html``, the PNG plots and the per-document table — the
same files ``pt.write_report(pt.audit(pt.open_corpus(DATA), ...), out)``
writes from Python. ``--demo`` audits the calibrated default corpus at
autoresearch's settings (R = 2049, B = 1000, refill 128, 243,968 rows) under
``discard``, ``continue`` and ``segment-first``, with an evaluation stream.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ._options import AUTORESEARCH_ROWS, add_options
from ._paths import named_inputs
from .replay import INPUT_OPTIONS, PACKER_OPTIONS, SOURCE_OPTIONS

__all__ = ["audit_corpus", "register", "run"]

HORIZON_OPTIONS = ("rows", "targets", "tokens", "natural-end", "common-horizon")


def register(sub: Any) -> None:
    """Add the ``audit`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "audit",
        description="Audit which documents and data sources each packer trains on: the token mass "
                    "emitted, discarded and buffered, the documents started and never started (by raw "
                    "index and name), the positions exposed, the startup delay over permutations of the "
                    "corpus and the finite evaluation population. The horizon is autoresearch's budget, "
                    f"{AUTORESEARCH_ROWS:,} rows, unless --rows, --targets, --tokens, --natural-end or "
                    "--common-horizon says otherwise. Writes audit.json, audit.md, audit.html, PNG plots "
                    "and the per-document table (--documents) into --out.",
    )
    add_options(parser, "demo", *INPUT_OPTIONS, "config", "framework", *PACKER_OPTIONS, "engine",
                *HORIZON_OPTIONS, "permutations", "permutation-seed", "eval-lengths", "eval-shards",
                "eval-targets", "eval-prefixes", *SOURCE_OPTIONS, "world-size", "row-group-size", "executor",
                "workers", "out", "force", "no-plots", "documents", "no-documents", "json", "no-progress",
                "scale", optional=("config",))
    parser.set_defaults(run=run)


def audit_corpus(*args: Any, **kwargs: Any) -> Any:
    """:func:`packing_theory.orchestration.audit_corpus` (imported when the command runs)."""
    from ..orchestration.audit import audit_corpus as audit

    return audit(*args, **kwargs)


def _tokenizer(spec: str) -> Any:
    """A built-in tokenizer name or an imported ``module:callable``."""
    from ..corpus.textcount import load_tokenizer

    return load_tokenizer(spec)


def _evaluation(args: argparse.Namespace, demo: Any) -> Any:
    """The evaluation stream (``--eval-lengths`` / ``--eval-shards``, or the demo's), with its budgets."""
    from ..audit.population import AUTORESEARCH_EVAL_TARGETS, DEFAULT_EVAL_PREFIXES
    from ..errors import InputError
    from ..orchestration.audit import EvalStream
    from ..orchestration.corpus import open_corpus

    given = args.eval_lengths or args.eval_shards
    if demo is not None and given:
        raise InputError("--demo brings its own evaluation stream; drop --eval-lengths/--eval-shards or drop "
                         "--demo")
    if demo is None and not given:
        for flag, value in (("--eval-targets", args.eval_targets), ("--eval-prefixes", args.eval_prefixes)):
            if value is not None:
                raise InputError(f"{flag} needs an evaluation stream: give --eval-lengths or --eval-shards "
                                 "(or --demo)")
        return None
    if demo is not None:
        lengths, label, targets, prefixes = demo.eval_lengths, demo.eval_label, demo.eval_targets, \
            demo.eval_prefixes
    else:
        data, fmt = (args.eval_lengths, "lengths") if args.eval_lengths else (args.eval_shards, "shards")
        if args.eval_shards:
            from .._checks import distinct_files

            distinct_files("--eval-shards", args.eval_shards)
        stream = open_corpus(data, format=fmt)
        lengths, label, targets, prefixes = stream.raw_lengths, stream.label, AUTORESEARCH_EVAL_TARGETS, \
            DEFAULT_EVAL_PREFIXES
    if args.eval_targets is not None:
        targets = args.eval_targets
    if args.eval_prefixes is not None:
        prefixes = args.eval_prefixes
    else:  # the default prefixes beyond a smaller budget are dropped
        prefixes = tuple(p for p in prefixes if p <= targets)
    return EvalStream(lengths, targets, tuple(prefixes), label)


def _documents(args: argparse.Namespace, documents: int) -> str | bool:
    """The per-document file: ``--documents``, else ``documents.csv`` for a small corpus, else none."""
    from ._options import DOCUMENTS_FILES, DOCUMENTS_LIMIT

    if args.no_documents:
        return False
    if args.documents is not None:
        return str(args.documents)
    return DOCUMENTS_FILES[0] if documents <= DOCUMENTS_LIMIT else False


def report_names() -> tuple[str, ...]:
    """Every file an audit report may hold (checked and locked before the audit runs)."""
    from ..orchestration.audit import AUDIT_FILES

    return AUDIT_FILES


def run(args: argparse.Namespace) -> int:
    """Audit and write the report; exit status 0, or 1 (a Finding) when a mass identity fails or a
    source does not reconcile (the report is still written, so the failure can be read); 3 (NotMeasured)
    when every packer asked refused the corpus (the report says why).

    The options and ``--out`` are checked before anything is computed.
    """
    from dataclasses import replace

    from ..engine.horizon import Budget
    from ..errors import Finding, NotMeasured, import_optional
    from ..orchestration.corpus import Corpus
    from ..orchestration.demo import DEMO_POLICIES, PAPER_5_1, audit_demo
    from ..registry import entry
    from ..reporting import ReportWriter, progress_bar, require_matplotlib, stage_report
    from ._common import (
        check_executor,
        counted,
        emit_json,
        horizon_from_args,
        packers_from_args,
        settings_from_args,
        workers_from_args,
    )
    from ._config import apply_config
    from ._inputs import check_source_options, corpus_from_args
    from ._ranks import check_rank_options, check_world_size, rank_section, rank_source

    t0 = time.perf_counter()
    apply_config(args, "audit")
    plots = not args.no_plots
    require_matplotlib(plots)
    check_source_options(args)
    packers = packers_from_args(args, DEMO_POLICIES if args.demo else ["discard"])
    settings = settings_from_args(args, packers)
    check_executor(args)
    check_rank_options(args, packers)
    if args.documents == "documents.parquet":
        import_optional("pyarrow", extra="parquet", purpose="--documents documents.parquet")
    streaming = sum(entry(p).kind == "streaming" for p in packers)
    workers = workers_from_args("audit", args, max(len(packers), args.permutations if streaming else 0,
                                                   args.world_size or 0))
    with ReportWriter(args.out, names=report_names(), config={}, tool="packing-theory audit",
                      force=args.force, inputs=named_inputs(args)) as writer:
        demo = audit_demo(args.scale) if args.demo else None
        if demo is not None:  # at the demo's settings (autoresearch's R = 2049) unless told otherwise
            corpus = Corpus.from_lengths(demo.lengths, label=demo.corpus_label)
            if args.capacity is None and args.seq_length is None:
                settings = replace(settings, capacity=2049)
            horizon = horizon_from_args(args, Budget("rows", demo.rows))
        else:
            corpus = corpus_from_args(args)
            horizon = horizon_from_args(args, None)
        evaluation = _evaluation(args, demo)
        source = None
        if args.world_size is not None:  # refuse a world size the inputs cannot feed before any replay
            source = rank_source(args, corpus)
            check_world_size(source, args.world_size, args.row_group_size)
        bar = progress_bar("audit", None, enabled=False if args.no_progress else None, unit="task")
        try:
            result = audit_corpus(corpus, packers, settings, horizon=horizon, permutations=args.permutations,
                                  permutation_seed=args.permutation_seed, evaluation=evaluation,
                                  documents=_documents(args, int(corpus.lengths.size) * settings.passes),
                                  mixture_blocks=args.mixture_blocks, drift_threshold=args.drift_threshold,
                                  executor=args.executor, workers=workers, progress=bar,
                                  reference=PAPER_5_1 if demo is not None and args.scale == 1 else None)
        finally:
            if bar is not None:
                bar.close()
        failing: list[str] = []
        if source is not None:
            asked = result.measurement.horizon if isinstance(horizon, Budget) or horizon is None else None
            ranks, failing = rank_section(args, corpus, settings, packers, source, asked, workers)
            result = replace(result, ranks=ranks)
        stage_report(writer, result, plots=plots)
        writer.commit()
    if args.json:
        emit_json(result.to_dict(writer.run_info))
    runs = result.measurement.runs
    if not runs:  # exit 3: "nothing found" cannot be claimed when nothing was measured
        raise NotMeasured(f"{result.headline()} (the report in {args.out} says so too)")
    drift = "" if result.sources is None else "; source drift flagged: " + (
        ", ".join(p.policy for p in result.sources.packers if p.drift.drifted) or "none")
    print(writer.summary_line("audit", f"{result.headline()} "
                                       f"({counted(int(corpus.lengths.size), 'document')}, "
                                       f"{time.perf_counter() - t0:.1f} s{drift})"), file=sys.stderr)
    failing += [r.packer for r in runs if not r.aggregates.mass.identity_holds
                or r.aggregates.conservation_violations]
    unreconciled = [] if result.sources is None else [p.policy for p in result.sources.packers
                                                      if not p.reconciles]
    if failing or unreconciled:
        parts = ([f"the mass identity FAILS for {', '.join(failing)}"] if failing else []) + (
            [f"the data sources do not reconcile for {', '.join(unreconciled)}"] if unreconciled else [])
        raise Finding("; ".join(parts) + " (the report says where)")
    return 0
