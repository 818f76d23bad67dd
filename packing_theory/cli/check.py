"""``packing-theory check``: replay a length stream with the invariant monitor on every selection."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ._options import add_options

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``check`` subcommand."""
    from .replay import INPUT_OPTIONS, PACKER_OPTIONS

    parser: argparse.ArgumentParser = sub.add_parser(
        "check",
        description="Replay a streaming packer and check the protected-set invariant at every selection. "
                    "Selections made with fewer than B buffered spans (--drain after the stream ends) are "
                    "outside the proposition and only counted. Where the proposition does not apply by "
                    "design and the policy has its own start-delay theorem (bounded-wait: age-based "
                    "starts), that theorem is checked instead: every start within A + B + max refill - 2 "
                    "rows of the arrival, full rows, no discarded token. A framework's packer is outside "
                    "the proposition's family: check says so and why (exit 0). The horizon is the packer's "
                    "natural end unless --rows, --targets or --tokens cut it. Exit status: 0 when the "
                    "checked statement holds, 1 on a violation, 2 on bad input.",
    )
    add_options(parser, *INPUT_OPTIONS, "config", "framework", *PACKER_OPTIONS, "engine", "rows", "targets",
                "tokens", "natural-end", "originals", "no-buffer-summary", "json", optional=("config",))
    parser.set_defaults(run=run)


def _not_applicable(args: argparse.Namespace, name: str, e: Any) -> int:
    """A framework's packer: the proposition does not apply; say why (exit 0), never a verdict."""
    from ._common import emit_json

    payload = {"policy": name, "framework": e.framework, "in_family": e.in_family,
               "verdict": e.status, "reason": e.family, "reference": e.reference}
    if args.json:
        emit_json(payload)
    else:
        print(f"{name}: {e.status}")
        print(f"reason: {e.family}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Replay under the monitor and print the result; 0 if no violation, else 1."""
    from ..engine.consumers import feed_all
    from ..engine.horizon import Budget
    from ..errors import InputError
    from ..invariant import InvariantMonitor
    from ..registry import entry
    from ._common import emit_json, horizon_from_args, packers_from_args, settings_from_args
    from ._config import apply_config
    from ._inputs import corpus_from_args
    from ._packers import build_one

    apply_config(args, "check")
    (name,) = packers_from_args(args, ["discard"], one=True)
    e = entry(name)
    settings = settings_from_args(args, [name])
    horizon = horizon_from_args(args, None)
    packer = build_one(settings, name, horizon if isinstance(horizon, Budget) else None)
    if args.originals and (e.kind == "peer" or not packer.config.spec.segments):
        raise InputError("--originals applies to a policy that segments documents before buffering "
                         f"(segment-first); --policy {name} has no segmented spans to replace")
    if e.kind == "peer":
        cut = [f"--{k.replace('_', '-')}" for k in ("rows", "targets", "tokens", "natural_end")
               if getattr(args, k) not in (None, False)]
        if cut:
            raise InputError(f"{cut[0]} does not apply: check does not replay {name}, a framework's packer "
                             "outside the proposition's family")
        return _not_applicable(args, name, e)
    config = packer.config
    lengths = corpus_from_args(args, say="data").lengths
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
        print(f"{'first_violation':<20}  {first.describe() if first is not None else 'none'}")
        if segmented:
            print(f"note: {config.policy} buffers no span longer than R, so the protected set is empty "
                  "(use --originals to check the original documents)")
    return 0 if monitor.ok else 1


def _run_outside_family(args: argparse.Namespace, packer: Any, lengths: Any) -> int:
    """The protected set does not apply by design: check the policy's start-delay theorem instead."""
    from ..engine.consumers import feed_all
    from ..invariant import InvariantMonitor
    from ..invariant.wait_bound import StartDelayMonitor
    from ._common import emit_json

    config = packer.config
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
            value = getattr(report, key)
            print(f"{key:<24}  {'none' if value is None else value}")
        print(f"{'violations':<24}  {report.violations}")
        first = delays.violations[0] if delays.violations else None
        print(f"{'first_violation':<24}  {first.describe() if first is not None else 'none'}")
        print(f"{'stop_reason':<24}  {payload['stop_reason']}")
        print(f"{'seconds':<24}  {payload['seconds']}")
    return 0 if report.ok else 1
