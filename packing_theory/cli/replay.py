"""``packing-theory replay``: replay a length stream and print its summary."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..engine.consumers import feed_all
from ..engine.horizon import Budget, cut_at_horizon
from ..engine.summary import SummaryAccumulator
from ..invariant.wait_bound import StartDelayMonitor
from ..registry import entry
from ..reporting import progress_bar
from ._common import add_stream_options, emit_json, with_row_progress
from ._inputs import add_lengths_or_data, lengths_from_args
from ._packers import packer_from_args
from ._sources import add_source_options, check_source_options, wants_sources

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``replay`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "replay", help="replay a packer on a length stream and print the mass/source summary",
        description="Replay a streaming packer, or a peer packer (--policy FRAMEWORK-STRATEGY), on "
                    "BOS-inclusive document lengths; --capacity is the row width of every packer, or give "
                    "the framework's --seq-length. A policy with a start-delay theorem (bounded-wait) also "
                    "reports max_start_delay_rows (measured) and start_delay_bound_rows (proved, "
                    "A + B + max refill - 2).",
    )
    add_stream_options(parser, lengths=False, engine=True)
    add_lengths_or_data(parser)
    parser.add_argument("--no-progress", action="store_true",
                        help="never show a progress bar (shown by default on a terminal)")
    add_source_options(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Replay and print; exit status 0."""
    check_source_options(args)
    e = entry(args.policy)
    packer = packer_from_args(args, args.policy, common_horizon=True)
    # a peer is cut at --rows / --targets by the common horizon rule (a streaming policy stops there itself)
    budget = None
    if e.kind == "peer" and args.rows is not None:
        budget = Budget("rows", args.rows)
    elif e.kind == "peer" and args.targets is not None:
        budget = Budget("targets", args.targets)
    lengths = lengths_from_args(args)
    sources = _SourcesPass(args, packer, lengths) if wants_sources(args) else None
    if sources is not None:
        lengths = sources.kept
    acc = SummaryAccumulator.for_packer(packer)
    config = getattr(packer, "config", None)
    # a policy with a proved start-delay bound: measure start delays next to it
    bounded = config is not None and config.start_delay_bound is not None
    delays = StartDelayMonitor.for_packer(config) if config is not None and bounded else None
    figures = packer.figures(lengths) if config is None else None  # a peer: its framework's own figures
    t0 = time.perf_counter()
    extra = [*([] if delays is None else [delays]), *([] if figures is None else [figures])]
    bar = progress_bar("replay", getattr(config, "row_budget", None),
                       enabled=False if args.no_progress else None)
    try:
        events = packer.stream(lengths) if budget is None else cut_at_horizon(
            packer.stream(lengths), budget, capacity=packer.capacity)
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
        # padding and targets as the framework stores and predicts them; unused capacity on its own
        payload = {"policy": args.policy, "framework": e.framework, "capacity": packer.capacity, **seq,
                   "options": packer.options(), "documents": int(lengths.size), **summary.to_dict(),
                   "targets": fig.targets, "padding_tokens": fig.padding_tokens,
                   "unused_capacity_tokens": fig.unused_capacity_tokens,
                   "identity_holds": summary.identity_holds(),
                   "row_identity_holds": summary.row_identity_holds(packer.capacity),
                   "in_family": e.in_family}
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
    _print(args, payload)
    return 0


class _SourcesPass:
    """``--labels`` ... on a replay: the per-source accounting fed in the replay's own pass."""

    def __init__(self, args: argparse.Namespace, packer: Any, lengths: Any) -> None:
        from ._sources import load_declared, load_funnel, load_labels

        self.args, self.raw = args, lengths
        self.labels = load_labels(args, int(lengths.size))
        self.funnel = load_funnel(args, lengths)
        self.mixture = load_declared(args)
        self.kept = lengths if self.funnel is None else lengths[self.funnel.keep]
        self.kept_labels = self.labels if self.funnel is None else self.labels.subset(self.funnel.keep)
        from ..audit.ledger import Ledger

        config = getattr(packer, "config", None)
        self.ledger = (Ledger.for_packer(packer) if config is not None else
                       Ledger(packer.capacity, args.min_buffer, policy=args.policy))
        self.result: dict[str, Any] = {}

    def run(self, events: Any, also: list[Any]) -> None:
        from ..orchestration.sources import packer_sources

        part = packer_sources(self.args.policy, events, self.ledger, self.kept_labels, raw_lengths=self.raw,
                              raw_labels=self.labels, funnel=self.funnel, mixture=self.mixture,
                              blocks=self.args.mixture_blocks, threshold=self.args.drift_threshold, also=also)
        self.result = {"labels": self.labels.origin, **part.to_dict()}


def _print(args: argparse.Namespace, payload: dict[str, Any]) -> None:
    if args.json:
        emit_json(payload)
    else:
        width = max(len(k) for k in payload)
        for key, value in payload.items():
            print(f"{key:<{width}}  {value}")
