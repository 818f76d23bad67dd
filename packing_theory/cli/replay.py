"""``packing-theory replay``: replay a length stream and print its summary."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..engine.consumers import feed_all
from ..engine.summary import SummaryAccumulator
from ..invariant.wait_bound import StartDelayMonitor
from ..registry import entry
from ._common import add_stream_options, emit_json
from ._inputs import add_lengths_or_data, lengths_from_args
from ._packers import knobs_from_args, packer_from_args
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
    add_source_options(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Replay and print; exit status 0."""
    check_source_options(args)
    e = entry(args.policy)
    packer = packer_from_args(args, args.policy)
    lengths = lengths_from_args(args)
    sources = _SourcesPass(args, packer, lengths) if wants_sources(args) else None
    if sources is not None:
        lengths = sources.kept
    acc = SummaryAccumulator.for_packer(packer)
    config = getattr(packer, "config", None)
    # a policy with a proved start-delay bound: measure start delays next to it
    bounded = config is not None and config.start_delay_bound is not None
    delays = StartDelayMonitor.for_packer(config) if config is not None and bounded else None
    t0 = time.perf_counter()
    extra = [] if delays is None else [delays]
    if sources is None:
        feed_all(packer.stream(lengths), acc, *extra)
    else:
        sources.run(packer.stream(lengths), [acc, *extra])
    elapsed = time.perf_counter() - t0
    summary = acc.result()
    payload: dict[str, Any]
    if config is None:
        knobs = knobs_from_args(args, args.policy)
        seq = {} if args.seq_length is None else {"seq_length": args.seq_length}
        payload = {"policy": args.policy, "framework": e.framework, "capacity": packer.capacity, **seq,
                   "options": e.options(knobs), "documents": int(lengths.size), **summary.to_dict(),
                   "identity_holds": summary.identity_holds(),
                   "row_identity_holds": summary.row_identity_holds(packer.capacity),
                   "in_family": e.in_family}
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
