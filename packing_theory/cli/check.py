"""``packing-theory check``: replay a length stream with the invariant monitor on every selection."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine.consumers import feed_all
from ..engine.policies import PackerConfig
from ..errors import InputError
from ..invariant import InvariantMonitor
from ..invariant.wait_bound import StartDelayMonitor
from ..registry import PackerEntry, entry
from ._common import add_stream_options, emit_json
from ._inputs import add_lengths_or_data, lengths_from_args
from ._packers import packer_from_args

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``check`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "check", help="replay with the protected-set monitor on every selection; exit 1 on a violation",
        description="Replay a streaming packer and check the protected-set invariant (seed 000 §3) at "
                    "every selection. Selections made with fewer than B buffered spans (--drain after "
                    "the stream ends) are outside the proposition and only counted. Where the proposition "
                    "does not apply by design and the policy has its own start-delay theorem "
                    "(bounded-wait: age-based starts), that theorem is checked instead: every start within "
                    "A + B + max refill - 2 rows of the arrival, full rows, no discarded token. A peer "
                    "policy (FRAMEWORK-STRATEGY) is outside the proposition's family: check says so and "
                    "why (exit 0). Exit status: 0 when the checked statement holds, 1 on a violation, 2 on "
                    "bad input.",
    )
    add_stream_options(parser, lengths=False, engine=True)
    add_lengths_or_data(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--originals", action="store_true",
                        help="with --policy segment-first, protect the original occurrences (the "
                             "proposition's hypotheses fail; violations are expected) instead of the "
                             "segmented spans (vacuous: no span is long)")
    parser.add_argument("--no-buffer-summary", action="store_true",
                        help="do not rebuild the buffer for the violation report (slightly faster)")
    parser.set_defaults(run=run)


def _not_applicable(args: argparse.Namespace, e: PackerEntry) -> int:
    """A peer policy: the proposition does not apply; say why (exit 0), never a verdict."""
    packer_from_args(args, args.policy)  # validates the options
    payload = {"policy": args.policy, "framework": e.framework, "in_family": e.in_family,
               "verdict": e.status, "reason": e.family, "reference": e.reference}
    if args.json:
        emit_json(payload)
    else:
        print(f"{args.policy}: {e.status}")
        print(f"reason: {e.family}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Replay under the monitor and print the result; 0 if no violation, else 1."""
    e = entry(args.policy)
    packer = None if e.kind == "peer" else packer_from_args(args, args.policy)
    if args.originals and (packer is None or not packer.config.spec.segments):
        raise InputError("--originals applies to a policy that segments documents before buffering "
                         f"(segment-first); --policy {args.policy} has no segmented spans to replace")
    if packer is None:
        return _not_applicable(args, e)
    config: PackerConfig = packer.config
    lengths = lengths_from_args(args)
    if not e.protected_set:
        return _run_outside_family(args, packer, lengths)
    segmented = config.spec.segments and not args.originals
    monitor = InvariantMonitor.for_packer(config, track_buffer=not args.no_buffer_summary,
                                          segmented=segmented)
    t0 = time.perf_counter()
    (report,) = feed_all(packer.stream(lengths), monitor)
    elapsed = time.perf_counter() - t0
    payload: dict[str, Any] = {
        "policy": config.policy, "capacity": config.capacity, "min_buffer": config.min_buffer,
        "documents": int(lengths.size), "passes": config.passes,
        "in_hypotheses": e.in_family,
        "segmented": segmented,
        **report.to_dict(),
        "stop_reason": monitor.horizon.stop_reason if monitor.horizon is not None else None,
        "seconds": round(elapsed, 3),
    }
    if args.json:
        emit_json(payload)
    else:
        first = monitor.first_violation
        for key in ("policy", "documents", "selections", "selections_checked", "selections_outside",
                    "long_arrivals", "protected_size", "protected_mass", "violations", "stop_reason",
                    "seconds"):
            print(f"{key:<20}  {payload[key]}")
        print(f"{'first_violation':<20}  {first.describe() if first is not None else None}")
        if segmented:
            print(f"note: {config.policy} buffers no span longer than R, so the protected set is empty "
                  "(use --originals to check the original occurrences)")
    return 0 if monitor.ok else 1


def _run_outside_family(args: argparse.Namespace, packer: Any, lengths: npt.NDArray[np.int64]) -> int:
    """The protected set does not apply by design: check the policy's start-delay theorem instead."""
    config: PackerConfig = packer.config
    monitor = InvariantMonitor.for_packer(config)
    delays = StartDelayMonitor.for_packer(config)
    t0 = time.perf_counter()
    _, report = feed_all(packer.stream(lengths), monitor, delays)
    elapsed = time.perf_counter() - t0
    payload: dict[str, Any] = {
        "policy": config.policy, "capacity": config.capacity, "min_buffer": config.min_buffer,
        "max_wait": config.wait_threshold, "documents": int(lengths.size), "passes": config.passes,
        "in_hypotheses": False,
        "protected_set": {"applicable": False, "reason": monitor.not_applicable},
        "selections": monitor.selections,
        "start_delay_bound_rows": config.start_delay_bound,
        "max_start_delay_rows": report.max_start_delay_rows,
        "bounded_wait": report.to_dict(),
        "violations": report.violations,
        "first_violation": report.first_violation,
        "stop_reason": monitor.horizon.stop_reason if monitor.horizon is not None else None,
        "seconds": round(elapsed, 3),
    }
    if args.json:
        emit_json(payload)
    else:
        print(f"{'policy':<24}  {config.policy} (A = {config.wait_threshold})")
        print(f"{'protected_set':<24}  {monitor.not_applicable}")
        for key in ("documents", "selections", "start_delay_bound_rows", "max_start_delay_rows"):
            print(f"{key:<24}  {payload[key]}")
        for key in ("max_unstarted_wait_rows", "discarded_tokens", "rows", "rows_full"):
            print(f"{key:<24}  {getattr(report, key)}")
        print(f"{'violations':<24}  {report.violations}")
        first = delays.violations[0] if delays.violations else None
        print(f"{'first_violation':<24}  {first.describe() if first is not None else None}")
        print(f"{'stop_reason':<24}  {payload['stop_reason']}")
        print(f"{'seconds':<24}  {payload['seconds']}")
    return 0 if report.ok else 1
