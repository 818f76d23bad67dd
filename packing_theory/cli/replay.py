"""``packing-theory replay``: replay a length stream and print its summary."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..engine.replay import make_packer
from ..engine.summary import SummaryAccumulator
from ..errors import InputError
from ..invariant.wait_bound import StartDelayMonitor
from ._common import add_stream_options, config_from_args, emit_json
from ._inputs import add_lengths_or_data, lengths_from_args

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``replay`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "replay", help="replay a packer on a length stream and print the mass/source summary",
        description="Replay a streaming packer, or a peer packer (--policy FRAMEWORK-STRATEGY, "
                    "--capacity = the framework's sequence length), on BOS-inclusive document lengths. "
                    "With --policy bounded-wait the summary also reports max_start_delay_rows (measured) "
                    "and start_delay_bound_rows (proved, A + B + max refill - 2).",
    )
    add_stream_options(parser, lengths=False, engine=True)
    add_lengths_or_data(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def _run_peer(args: argparse.Namespace) -> dict[str, Any]:
    """Replay a peer policy over the whole input (``--capacity`` = its framework's sequence length)."""
    from ._peers import peer_from_args

    if args.rows is not None or args.targets is not None or args.passes != 1 or args.drain:
        raise InputError(f"--rows/--targets/--passes/--drain apply to streaming policies; the peer "
                         f"{args.policy!r} packs the whole input once (see its options)")
    peer = peer_from_args(args, args.policy, args.capacity)
    lengths = lengths_from_args(args)
    acc = SummaryAccumulator(peer.capacity)
    t0 = time.perf_counter()
    for ev in peer.events(lengths):
        acc.feed(ev)
    elapsed = time.perf_counter() - t0
    summary = acc.result()
    return {"policy": args.policy, "framework": peer.framework, "capacity": args.capacity,
            "row_width": peer.capacity, "documents": int(lengths.size), **summary.to_dict(),
            "identity_holds": summary.identity_holds(),
            "row_identity_holds": summary.row_identity_holds(peer.capacity),
            "in_family": peer.in_family, "seconds": round(elapsed, 3)}


def run(args: argparse.Namespace) -> int:
    """Replay and print; exit status 0."""
    from ._peers import is_peer

    if is_peer(args.policy):
        _print(args, _run_peer(args))
        return 0
    config = config_from_args(args)
    lengths = lengths_from_args(args)
    acc = SummaryAccumulator(config.capacity)
    # bounded-wait: measure start delays next to the proved bound (issue 13)
    delays = StartDelayMonitor.for_config(config) if config.policy == "bounded-wait" else None
    t0 = time.perf_counter()
    for ev in make_packer(args.engine, config).events(lengths):
        acc.feed(ev)
        if delays is not None:
            delays.feed(ev)
    elapsed = time.perf_counter() - t0
    summary = acc.result()
    payload = {"policy": config.policy, "capacity": config.capacity, "min_buffer": config.min_buffer,
               "documents": int(lengths.size), "passes": config.passes, **summary.to_dict(),
               "identity_holds": summary.identity_holds()}
    if delays is not None:
        payload.update(max_wait=config.wait_threshold, max_start_delay_rows=delays.max_start_delay,
                       start_delay_bound_rows=config.start_delay_bound,
                       max_unstarted_wait_rows=delays.report().max_unstarted_wait_rows)
    payload["seconds"] = round(elapsed, 3)
    _print(args, payload)
    return 0


def _print(args: argparse.Namespace, payload: dict[str, Any]) -> None:
    if args.json:
        emit_json(payload)
    else:
        width = max(len(k) for k in payload)
        for key, value in payload.items():
            print(f"{key:<{width}}  {value}")
