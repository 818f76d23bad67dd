"""Benchmark: the sparse FastBuffer against the R-bit bitmask buffer it replaced, in the same run.

Method
------
* ``BitmaskBuffer`` below is the previous ``FastBuffer`` (commit 7dc6bcd,
  ``packing_theory/engine/buffer.py``), kept here verbatim in behaviour as the
  baseline: one heap per length ``0..R`` in a list of ``R + 1`` buckets and a
  Python-int bitmask of the non-empty lengths.
* The fast :class:`~packing_theory.Packer` replays the same stream with each
  buffer (the packer's module-level ``FastBuffer`` is swapped), and the two
  event streams are checked equal.
* Stream: ``--docs`` (default 200,000) heavy-tailed lengths from
  ``benchmarks/bench_engine.py`` (lognormal body, ~1.5 % Pareto tail above R).
* Settings: R = 2049 (the common case), B = 1000, refill 128, policies
  ``discard`` and ``continue``; plus R = 65,537 (the bitmask and bucket list
  grow with R; the sparse index does not).
* Timing: each (buffer, policy) body runs ``--repeats`` times, interleaved;
  we report the minimum process CPU time (robust to other load on a shared
  machine) and the ratio sparse / bitmask of those minima (< 1 = faster).
* Memory: ``tracemalloc`` peak of constructing each buffer and filling it
  with 1,000 spans, at R = 2049, 10**6 and 10**8 (the bitmask buffer is
  skipped at 10**8: its bucket list alone is ~6 GB).

Run: ``python benchmarks/bench_buffer.py [--docs 200000] [--repeats 7]``; results go to
``benchmarks/results/buffer.{json,md}``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import platform
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import packing_theory as pt
import packing_theory.engine.packer as packer_module
from packing_theory.engine.buffer import FastBuffer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import heavy_tailed

RESULTS = Path(__file__).resolve().parent / "results"
Record = tuple[int, int, int, int, bool]


class BitmaskBuffer:
    """The previous FastBuffer: R + 1 heaps and an R-bit mask (the baseline)."""

    __slots__ = ("_R", "_buckets", "_long", "_mask", "_next", "_spans")

    def __init__(self, capacity: int) -> None:
        self._R = capacity
        self._mask = 0
        self._buckets: list[list[int]] = [[] for _ in range(capacity + 1)]
        self._long: list[tuple[int, int]] = []
        self._spans: dict[int, Record] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._spans)

    def append(self, record: Record) -> int:
        seq = self._next
        self._next = seq + 1
        self._insert(seq, record)
        return seq

    def extend(self, records: list[Record]) -> None:
        spans, buckets, long, R = self._spans, self._buckets, self._long, self._R
        mask, seq = self._mask, self._next
        for record in records:
            spans[seq] = record
            length = record[3]
            if length <= R:
                bucket = buckets[length]
                if not bucket:
                    mask |= 1 << length
                heapq.heappush(bucket, seq)
            else:
                heapq.heappush(long, (length, seq))
            seq += 1
        self._mask = mask
        self._next = seq

    def _insert(self, seq: int, record: Record) -> None:
        self._spans[seq] = record
        length = record[3]
        if length <= self._R:
            bucket = self._buckets[length]
            if not bucket:
                self._mask |= 1 << length
            heapq.heappush(bucket, seq)
        else:
            heapq.heappush(self._long, (length, seq))

    def replace(self, seq: int, record: Record) -> None:
        self._insert(seq, record)

    def take(self, remaining: int) -> tuple[int, Record, bool]:
        mask = self._mask
        if remaining > self._R:
            remaining = self._R
        fit = mask & ((2 << remaining) - 1) if remaining > 0 else 0
        if fit:
            length = fit.bit_length() - 1
            crop = False
        elif mask:
            length = (mask & -mask).bit_length() - 1
            crop = True
        else:
            seq = heapq.heappop(self._long)[1]
            return seq, self._spans.pop(seq), True
        bucket = self._buckets[length]
        seq = heapq.heappop(bucket)
        if not bucket:
            self._mask = mask ^ (1 << length)
        return seq, self._spans.pop(seq), crop

    def snapshot(self) -> tuple[Any, ...]:
        from packing_theory.engine.events import BufferedSpan

        return tuple(BufferedSpan(*self._spans[s]) for s in sorted(self._spans))


BUFFERS = {"bitmask": BitmaskBuffer, "sparse": FastBuffer}


def replay_cpu(buffer: str, policy: str, capacity: int, lengths: list[int]) -> tuple[float, int]:
    """Process CPU seconds of one full replay with ``buffer``; and a digest of its events."""
    packer_module.FastBuffer = BUFFERS[buffer]  # type: ignore[misc,assignment]
    try:
        packer = pt.Packer(capacity=capacity, min_buffer=1000, refill=128, policy=policy)
        t0 = time.process_time()
        digest = 0
        for i, ev in enumerate(packer.events(lengths)):
            if i % 997 == 0:
                digest = hash((digest, ev))
        return time.process_time() - t0, digest
    finally:
        packer_module.FastBuffer = FastBuffer  # type: ignore[misc]


def build_peak(buffer: str, capacity: int) -> int:
    tracemalloc.start()
    buf = BUFFERS[buffer](capacity)
    buf.extend([(i, i, 0, 1 + (i * 7919) % 3000, False) for i in range(1000)])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    lengths = list(heavy_tailed(args.docs))
    rows = []
    for capacity in (2049, 65_537):
        for policy in ("discard", "continue"):
            best: dict[str, float] = {}
            digests: dict[str, int] = {}
            for _ in range(args.repeats):
                for name in BUFFERS:
                    cpu, digest = replay_cpu(name, policy, capacity, lengths)
                    best[name] = min(best.get(name, float("inf")), cpu)
                    digests[name] = digest
            row = {"R": capacity, "policy": policy, "bitmask_cpu_s": round(best["bitmask"], 3),
                   "sparse_cpu_s": round(best["sparse"], 3),
                   "ratio_sparse_over_bitmask": round(best["sparse"] / best["bitmask"], 3),
                   "identical_events": digests["bitmask"] == digests["sparse"]}
            rows.append(row)
            print(row, flush=True)
    memory = []
    for capacity in (2049, 10**6, 10**8):
        entry: dict[str, Any] = {"R": capacity, "sparse_peak_bytes": build_peak("sparse", capacity)}
        entry["bitmask_peak_bytes"] = build_peak("bitmask", capacity) if capacity <= 10**6 else None
        memory.append(entry)
        print(entry, flush=True)
    result = {"settings": {"docs": args.docs, "B": 1000, "refill": 128, "repeats": args.repeats},
              "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
              "timing": rows, "construction_memory": memory}
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "buffer.json").write_text(json.dumps(result, indent=2) + "\n")
        lines = ["# Buffer benchmark: sparse index vs the R-bit bitmask it replaced", "",
                 f"Generated by `python benchmarks/bench_buffer.py --docs {args.docs} "
                 f"--repeats {args.repeats}` "
                 f"(Python {result['machine']['python']}, {result['machine']['platform']}).",
                 "Method: see the docstring of `benchmarks/bench_buffer.py`. Minimum process CPU time over "
                 "interleaved repeats; a shared machine makes absolute times provisional, the ratio is the "
                 "figure.", "",
                 "| R | policy | bitmask CPU s | sparse CPU s | sparse / bitmask | identical events |",
                 "|---:|---|---:|---:|---:|---|"]
        lines += [f"| {r['R']:,} | {r['policy']} | {r['bitmask_cpu_s']} | {r['sparse_cpu_s']} | "
                  f"{r['ratio_sparse_over_bitmask']} | {r['identical_events']} |" for r in rows]
        lines += ["", "Memory of a buffer holding 1,000 spans (`tracemalloc` peak):", "",
                  "| R | bitmask | sparse |", "|---:|---:|---:|"]
        for m in memory:
            old = "not run (~6 GB bucket list)" if m["bitmask_peak_bytes"] is None else \
                f"{m['bitmask_peak_bytes'] / 2**20:.2f} MiB"
            lines.append(f"| {m['R']:,} | {old} | {m['sparse_peak_bytes'] / 2**20:.2f} MiB |")
        (RESULTS / "buffer.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["identical_events"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
