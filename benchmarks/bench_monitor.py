"""Benchmark: fast-engine replay alone vs replay + InvariantMonitor on every selection.

Method
------
* Stream: 200,000 documents, BOS-inclusive lengths ``max(1, round(X))`` with
  ``X ~ LogNormal(mu=6.0, sigma=1.1)`` (numpy ``default_rng(20261008)``):
  median ~400 tokens, mean ~740, about 7% longer than ``R`` and a heavy right tail.
* Config: ``R = 2049``, ``B = 1000``, refill 128, one pass, policies ``discard``
  and ``continue``, stop when the stream cannot refill (no row budget).
* Timed bodies (the event list is never materialised):

  - ``replay``: ``deque(Packer(cfg).events(lengths), maxlen=0)``;
  - ``monitored``: ``deque(monitor.observe(Packer(cfg).events(lengths)), maxlen=0)``
    with ``InvariantMonitor.for_packer(cfg)`` — every selection is checked.
  - ``monitored+tracker``: the same with ``track_buffer=True`` (what
    ``packing-theory check`` runs by default, for buffer summaries in reports).

* Each body runs ``--repeats`` times, interleaved; we report the minimum of
  process CPU time (robust to other load on the machine) and of wall time, and
  the ratio of minima. The monitored runs also assert zero violations.

Run: ``python benchmarks/bench_monitor.py [--docs 200000] [--repeats 5] [--markdown]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections import deque
from collections.abc import Callable

import numpy as np

import packing_theory as pt
from packing_theory.invariant import InvariantMonitor


def heavy_tailed_lengths(n: int, seed: int = 20261008) -> list[int]:
    """The benchmark stream (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out: list[int] = np.maximum(1, np.rint(rng.lognormal(6.0, 1.1, n))).astype(np.int64).tolist()
    return out


def _time(body: Callable[[], None]) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    body()
    return time.process_time() - c0, time.perf_counter() - w0


def bench(lengths: list[int], policy: str, repeats: int) -> dict[str, tuple[float, float]]:
    cfg = pt.PackerConfig(capacity=2049, min_buffer=1000, refill=128, policy=policy)  # type: ignore[arg-type]

    def replay() -> None:
        deque(pt.Packer(cfg).events(lengths), maxlen=0)

    def monitored() -> None:
        mon = InvariantMonitor.for_packer(cfg)
        deque(mon.observe(pt.Packer(cfg).events(lengths)), maxlen=0)
        assert mon.ok and mon.selections_checked == mon.selections > 0

    def tracked() -> None:
        mon = InvariantMonitor.for_packer(cfg, track_buffer=True)
        deque(mon.observe(pt.Packer(cfg).events(lengths)), maxlen=0)
        assert mon.ok

    bodies = {"replay": replay, "monitored": monitored, "monitored+tracker": tracked}
    best: dict[str, tuple[float, float]] = {k: (float("inf"), float("inf")) for k in bodies}
    for _ in range(repeats):
        for name, body in bodies.items():
            cpu, wall = _time(body)
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    lengths = heavy_tailed_lengths(args.docs)
    cfg = pt.PackerConfig(capacity=2049, min_buffer=1000, refill=128)
    mon = InvariantMonitor.for_packer(cfg)
    pt.feed_all(pt.Packer(cfg).events(lengths), mon)
    print(f"# {args.docs} docs, {sum(n > 2049 for n in lengths)} long, {sum(lengths)} tokens; "
          f"discard: {mon.selections} selections; python {platform.python_version()} on "
          f"{platform.machine()} ({platform.processor() or 'cpu'})")
    rows = []
    for policy in ("discard", "continue"):
        best = bench(lengths, policy, args.repeats)
        base_cpu, base_wall = best["replay"]
        for name, (cpu, wall) in best.items():
            rows.append((policy, name, cpu, wall, cpu / base_cpu, wall / base_wall))
    if args.markdown:
        print("| policy | body | CPU s (min) | wall s (min) | CPU ratio | wall ratio |")
        print("|---|---|---:|---:|---:|---:|")
        for policy, name, cpu, wall, rc, rw in rows:
            print(f"| {policy} | {name} | {cpu:.3f} | {wall:.3f} | {rc:.2f} | {rw:.2f} |")
    else:
        for policy, name, cpu, wall, rc, rw in rows:
            print(f"{policy:<9} {name:<18} cpu {cpu:7.3f}s  wall {wall:7.3f}s  "
                  f"ratio cpu {rc:4.2f} wall {rw:4.2f}")
    worst = max(r[4] for r in rows if r[1] == "monitored")
    return 0 if worst < 3 else 1


if __name__ == "__main__":
    sys.exit(main())
