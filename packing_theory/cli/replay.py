"""``packing-theory replay``: replay one packer on a corpus and print its summary."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ._options import add_options

__all__ = ["INPUT_OPTIONS", "PACKER_OPTIONS", "SOURCE_OPTIONS", "register", "run"]

INPUT_OPTIONS = ("data", "files-from", "lengths", "shards", "text", "parquet", "format", "column", "bos",
                 "eos-id", "dtype", "split", "tokenizer", "per-line", "encoding", "errors")
"""The input options of every command that reads a corpus."""

PACKER_OPTIONS = ("policy", "capacity", "seq-length", "min-buffer", "refill", "passes", "drain", "seed",
                  "max-wait", "window", "epochs", "framework-version", "peer-option")
"""The options of the packers' settings (``--engine`` where the command has engines)."""

SOURCE_OPTIONS = ("labels", "labels-manifest", "source-column", "source-from", "mixture", "funnel",
                  "mixture-blocks", "drift-threshold")
"""The data-source options."""


def register(sub: Any) -> None:
    """Add the ``replay`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "replay",
        description="Replay one packer — a streaming policy or a framework's packer (--policy) — on a corpus "
                    "and print its summary: the token mass, the documents started and never started. "
                    "--capacity is every packer's row width; --seq-length instead gives the trained "
                    "positions. The horizon is the packer's natural end unless --rows, --targets or "
                    "--tokens cut it. A policy with a start-delay theorem (bounded-wait) also reports "
                    "max_start_delay_rows (measured) and start_delay_bound_rows (proved).",
    )
    add_options(parser, *INPUT_OPTIONS, "config", "framework", *PACKER_OPTIONS, "engine", "rows", "targets",
                "tokens", "natural-end", *SOURCE_OPTIONS, "json", "no-progress", optional=("config",))
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Replay and print; exit status 0."""
    from ..engine.consumers import feed_all
    from ..engine.events import end_reason
    from ..engine.horizon import Budget, cut_at_horizon
    from ..engine.summary import SummaryAccumulator
    from ..registry import entry
    from ..reporting import progress_bar
    from ._common import (
        emit_json,
        horizon_from_args,
        packers_from_args,
        settings_from_args,
        with_row_progress,
    )
    from ._config import apply_config
    from ._inputs import corpus_from_args
    from ._packers import build_one

    apply_config(args, "replay")
    (name,) = packers_from_args(args, ["discard"], one=True)
    e = entry(name)
    settings = settings_from_args(args, [name])
    horizon = horizon_from_args(args, None)
    budget = horizon if isinstance(horizon, Budget) else None
    packer = build_one(settings, name, budget)
    corpus = corpus_from_args(args, say="data")
    lengths = corpus.lengths
    sources = None
    if corpus.sources is not None:
        sources = _SourcesPass(args, name, packer, corpus, settings.min_buffer)
    acc = SummaryAccumulator.for_packer(packer)
    config = getattr(packer, "config", None)
    bounded = config is not None and config.start_delay_bound is not None
    delays = None
    if config is not None and bounded:
        from ..invariant.wait_bound import StartDelayMonitor

        delays = StartDelayMonitor.for_packer(config)
    figures = packer.figures(lengths) if config is None else None  # a framework's own figures
    t0 = time.perf_counter()
    extra = [*([] if delays is None else [delays]), *([] if figures is None else [figures])]
    bar = progress_bar("replay", getattr(config, "row_budget", None),
                       enabled=False if args.no_progress else None)
    try:
        if config is None:  # a framework's packer; a streaming policy stops at the budget itself
            events = cut_at_horizon(packer.stream(lengths), budget, capacity=packer.capacity)
        elif packer.columnar:  # its batches skip the event objects; every consumer here takes batches
            events = packer.batches(lengths)
        else:
            events = packer.stream(lengths)
        stream = with_row_progress(events, bar)
        if sources is None:
            feed_all(stream, acc, *extra)
        else:
            sources.run(stream, [acc, *extra])
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - t0
    summary = acc.result()
    payload: dict[str, Any]
    if config is None:
        assert figures is not None
        fig = figures.result()
        seq = {} if args.seq_length is None else {"seq_length": args.seq_length}
        payload = {"policy": name, "framework": e.framework, "capacity": packer.capacity, **seq,
                   "options": packer.options(), "documents": int(lengths.size), **summary.to_dict(),
                   "targets": fig.targets, "padding_tokens": fig.padding_tokens,
                   "unused_capacity_tokens": fig.unused_capacity_tokens,
                   "identity_holds": summary.identity_holds(),
                   "row_identity_holds": summary.row_identity_holds(packer.capacity),
                   "in_family": e.in_family}
        payload["stop_reason"] = end_reason(summary.stop_reason, streaming=False)  # as audit says it
        if args.json:  # the rule, options and horizon in full (too wide for the text table)
            payload["peer_figures"] = fig.to_dict()
    else:
        payload = {"policy": config.policy, "capacity": config.capacity, "min_buffer": config.min_buffer,
                   "documents": int(lengths.size), "passes": config.passes, **summary.to_dict(),
                   "identity_holds": summary.identity_holds()}
    if delays is not None:
        assert config is not None
        report = delays.result()
        payload.update(max_wait=config.wait_threshold, max_start_delay_rows=report.max_start_delay_rows,
                       start_delay_bound_rows=config.start_delay_bound,
                       max_unstarted_wait_rows=report.max_unstarted_wait_rows)
    if sources is not None:
        payload["sources"] = sources.result
    payload["seconds"] = round(elapsed, 3)
    if args.json:
        emit_json(payload)
    else:
        width = max(len(k) for k in payload)
        for key, value in payload.items():
            print(f"{key:<{width}}  {value}")
    return 0


class _SourcesPass:
    """Source labels on a replay: the per-source accounting fed in the replay's own pass."""

    def __init__(self, args: argparse.Namespace, name: str, packer: Any, corpus: Any,
                 min_buffer: int) -> None:
        from ..audit.ledger import Ledger
        from ..orchestration.sources import SourcePlan

        self.name, self.origin = name, corpus.sources.origin
        extra = {k: v for k, v in (("blocks", args.mixture_blocks), ("threshold", args.drift_threshold))
                 if v is not None}
        self.plan = SourcePlan(corpus.replayed_sources, corpus.raw_lengths, corpus.sources, corpus.funnel,
                               corpus.mixture, **extra)
        config = getattr(packer, "config", None)
        self.ledger = (Ledger.for_packer(packer) if config is not None else
                       Ledger(packer.capacity, min_buffer, policy=name))
        self.result: dict[str, Any] = {}

    def run(self, events: Any, also: list[Any]) -> None:
        from ..orchestration.sources import packer_sources

        part = packer_sources(self.name, events, self.ledger, self.plan, also=also)
        self.result = {"labels": self.origin, **part.to_dict()}
