"""``packing-theory replay``: replay a length stream and print its summary."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..lengths import load_lengths
from ..packer import make_packer
from ..summary import SummaryAccumulator
from ..wait_bound import StartDelayMonitor
from ._common import add_stream_options, config_from_args, emit_json

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``replay`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "replay", help="replay a packer on a length stream and print the mass/source summary",
        description="Replay a streaming packer on BOS-inclusive document lengths. With --policy "
                    "bounded-wait the summary also reports max_start_delay_rows (measured) and "
                    "start_delay_bound_rows (proved, A + B + max refill - 2).",
    )
    add_stream_options(parser, engine=True)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Replay and print; exit status 0."""
    config = config_from_args(args)
    lengths = load_lengths(args.lengths)
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
    if args.json:
        emit_json(payload)
    else:
        width = max(len(k) for k in payload)
        for key, value in payload.items():
            print(f"{key:<{width}}  {value}")
    return 0
