"""Benchmark: fast engine vs the naive reference, and the compiled engine, on the same heavy-tailed stream.

Method
------
* Stream: ``N`` (default 200,000) BOS-inclusive lengths from a seeded
  heavy-tailed mixture (lognormal body, median ~330 tokens, plus a Pareto tail
  with ~1.5 % of documents above R), generated in chunks so that the streamed
  run never holds the corpus.
* Settings: R = 2049, B = 1000, refill 128, one pass, run until the stream can
  no longer refill to B (``exhausted="stop"``), for every policy
  (``bounded-wait`` with its default ``max_wait`` A = 16).
* Time: wall-clock of iterating the whole event stream (events are counted and
  hashed, nothing else); best of ``--repeat`` runs for the fast engine (short
  runs are the noise-sensitive ones) and of ``--reference-repeat`` runs for the
  reference, in the same process on the same input (a list of ints). The
  compiled engine (numba, the ``fast`` extra; skipped without it) is timed on
  its own forms of input and output: the same lengths as an ``int64`` array
  in, the event batches out (events counted, best of ``--repeat`` runs after
  one warm-up run that loads the cached kernel); its events, unpacked in a
  separate untimed run, are hashed the same way. The three event streams
  are checked equal (count and hash).
* Memory: ``tracemalloc`` peak of a separate streamed run (lengths come from a
  generator, events are dropped as they arrive) at N, 2N and 4N documents for
  the fast engine: O(B + refill batch), flat in N.

Run: ``python benchmarks/bench_engine.py [--docs 200000] [--repeat 1]``; results
go to ``benchmarks/results/engine.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import packing_theory as pt
from packing_theory.engine import POLICIES, make_packer
from packing_theory.engine.compiled import COMPILED_POLICIES, CompiledPacker, compiled_available
from packing_theory.engine.replay import Engine

R, B, REFILL = 2049, 1000, 128
RESULTS = Path(__file__).resolve().parent / "results"


def heavy_tailed(n: int, seed: int = 0, chunk: int = 65536) -> Iterator[int]:
    """Yield ``n`` heavy-tailed lengths, ``chunk`` at a time (never the whole corpus)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    done = 0
    while done < n:
        k = min(chunk, n - done)
        body = np.exp(rng.normal(5.8, 1.2, size=k))
        tail = 2049 * (1 + rng.pareto(1.3, size=k))
        use_tail = rng.random(k) < 0.015
        values = np.where(use_tail, tail, body)
        yield from np.clip(values.astype(np.int64) + 1, 1, 300_000).tolist()
        done += k


def run_events(engine: Engine, policy: str, lengths: list[int] | Iterator[int]) -> tuple[float, int, int]:
    """Iterate the whole event stream; return (seconds, events, hash)."""
    packer = make_packer(engine, capacity=R, min_buffer=B, refill=REFILL, policy=policy)
    t0 = time.perf_counter()
    count = 0
    digest = 0
    for ev in packer.events(lengths):
        count += 1
        if count % 997 == 0:
            digest = hash((digest, ev))
    return time.perf_counter() - t0, count, digest


def run_compiled(policy: str, lengths: npt.NDArray[np.int64]) -> tuple[float, int, int]:
    """The compiled engine's batches, counted (timed); then its events hashed as :func:`run_events` does."""
    packer = CompiledPacker(capacity=R, min_buffer=B, refill=REFILL, policy=policy)
    t0 = time.perf_counter()
    count = sum(len(batch) for batch in packer.batches(lengths))
    seconds = time.perf_counter() - t0
    digest = 0
    for i, ev in enumerate(packer.events(lengths), 1):
        if i % 997 == 0:
            digest = hash((digest, ev))
    return seconds, count, digest


def peak_memory(n: int, policy: str) -> int:
    """tracemalloc peak bytes of a streamed fast replay of ``n`` documents."""
    packer = pt.Packer(capacity=R, min_buffer=B, refill=REFILL, policy=policy)
    tracemalloc.start()
    for _ in packer.events(heavy_tailed(n)):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference-repeat", type=int, default=1)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]  # other work on the machine skews the wall-clock times
    lengths = list(heavy_tailed(args.docs))
    arr = np.array(lengths, dtype=np.int64)
    print(f"{args.docs} docs, {arr.sum()} tokens, {(arr > R).sum()} longer than R, max {arr.max()}")
    rows = []
    for policy in args.policies.split(","):
        fast = min(run_events("fast", policy, lengths) for _ in range(args.repeat))
        ref = min(run_events("reference", policy, lengths) for _ in range(args.reference_repeat))
        same = fast[1:] == ref[1:]
        row: dict[str, Any] = {"policy": policy, "events": fast[1], "fast_s": round(fast[0], 3),
                               "reference_s": round(ref[0], 3), "speedup": round(ref[0] / fast[0], 1)}
        if compiled_available() and policy in COMPILED_POLICIES:
            run_compiled(policy, arr[:10_000])  # warm-up: loads (or compiles) the cached kernel
            comp = min(run_compiled(policy, arr) for _ in range(args.repeat))
            same = same and comp[1:] == fast[1:]
            row.update(compiled_s=round(comp[0], 3), compiled_speedup=round(fast[0] / comp[0], 1))
        rows.append({**row, "identical_events": same})
        print(rows[-1], flush=True)
    memory = []
    for n in (args.docs, 2 * args.docs, 4 * args.docs):
        peak = peak_memory(n, "discard")
        memory.append({"docs": n, "peak_bytes": peak})
        print({"docs": n, "peak_MiB": round(peak / 2**20, 2)}, flush=True)
    result: dict[str, Any] = {
        "settings": {"docs": args.docs, "R": R, "B": B, "refill": REFILL, "repeat": args.repeat,
                     "reference_repeat": args.reference_repeat,
                     "tokens": int(arr.sum()), "long_docs": int((arr > R).sum())},
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                    "load_average_1min_at_start": round(load, 2)},
        "timing": rows,
        "streamed_peak_memory_fast_discard": memory,
    }
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "engine.json").write_text(json.dumps(result, indent=2) + "\n")
        lines = [
            "# Engine benchmark: fast vs reference, and the compiled engine",
            "",
            f"Generated by `python benchmarks/bench_engine.py --docs {args.docs} --repeat {args.repeat} "
            f"--reference-repeat {args.reference_repeat}` "
            f"(Python {result['machine']['python']}, {result['machine']['platform']}).",
            "Method: see the docstring of `benchmarks/bench_engine.py`. "
            f"Machine: {os.cpu_count()} CPUs, 1-minute load average {load:.2f} at the start (wall-clock "
            "times of a loaded machine are noisy).",
            f"Stream: {args.docs:,} documents, {int(arr.sum()):,} tokens, "
            f"{int((arr > R).sum()):,} longer than R; R = {R}, B = {B}, refill {REFILL}.",
            "",
            "Compiled: the numba engine's event batches (see the method); speed-up over the fast engine.",
            "",
            "| policy | events | fast s | reference s | speed-up | compiled s | compiled speed-up "
            "| identical events |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        lines += [f"| {r['policy']} | {r['events']:,} | {r['fast_s']} | {r['reference_s']} | "
                  f"{r['speedup']}x | {r.get('compiled_s', '-')} | "
                  f"{str(r['compiled_speedup']) + 'x' if 'compiled_speedup' in r else '-'} | "
                  f"{r['identical_events']} |" for r in rows]
        lines += ["", "Streamed peak memory of the fast engine (`tracemalloc`, discard):", "",
                  "| documents | peak MiB |", "|---:|---:|"]
        lines += [f"| {m['docs']:,} | {m['peak_bytes'] / 2**20:.2f} |" for m in memory]
        (RESULTS / "engine.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["identical_events"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
