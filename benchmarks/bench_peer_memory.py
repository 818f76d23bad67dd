"""Benchmark the peak memory of one packer's measurement, per framework's packer, against older code.

Method
------
* Lengths: ``N`` lognormal(6, 1.3) draws, rounded, clipped to ``>= 1``, int64
  ``.npy`` (``bench_compare_scale.write_lengths``, seed 0; reused when the file
  already holds them), memory-mapped by the child.
* Each case is a **fresh child process** running
  ``measure(L, ["bestfit-pad", PEER], Settings(engine="compiled"), horizon="common")``
  in one process (``workers=1``: the common horizon's reach pass, the peer's
  pass, and its run at the horizon when that differs) — what one pool worker
  of ``packing-theory compare`` does for that peer. ``bestfit-pad`` alone is
  the floor (the interpreter, numpy, numba's kernels, the streaming replay).
* Peak RSS: the child's ``resource.getrusage(RUSAGE_SELF).ru_maxrss``; CPU: its
  ``time.process_time()`` around ``measure`` (so not the imports).
  *bytes / document* is ``(peak - floor) / N`` with the floor of the same code.
* Each peer runs with this code and with the code in ``--baseline-code DIR``
  (``PYTHONPATH``, the child started in an empty directory, and the module it
  imported checked)
  (a ``git worktree`` of an older commit), one after the other, peer by peer,
  so that both meet the same load. Every child also prints a SHA-256 of its
  ``Measurement.to_dict()`` with the timings removed; the two codes' digests
  must match (the JSON is the same), and the table says so.
* Allocator (``--allocator``): by default the child first calls
  ``packing_theory._allocator.keep_freed_memory()``, as ``packing-theory
  compare`` does before it starts its workers (glibc's own ``mmap`` and trimming
  off: the peak is the heap's high-water mark, live arrays plus fragmentation);
  ``--allocator default`` keeps glibc's settings (results with a ``_default``
  suffix).
* Before the measured runs each code measures every peer once, unmeasured, on
  20,000 documents, so that numba's on-disk caches are written.
* The machine is shared (2 cores): the load average is recorded before and
  after every child.

Run: ``python benchmarks/bench_peer_memory.py --baseline-code DIR`` (writes
``benchmarks/results/peer_memory.{json,md}``); ``--quick`` runs 100,000 documents
and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_compare_scale import write_lengths

RESULTS = Path(__file__).resolve().parent / "results"
ALLOCATORS = {
    "compare": "glibc keeps freed blocks (`packing_theory._allocator.keep_freed_memory`, called first in the "
               "child, as `packing-theory compare` does before it starts its workers): the peak is the "
               "heap's high-water mark",
    "default": "glibc's own settings (a freed block above the dynamic mmap threshold goes back to the "
               "kernel)",
}
HERE = Path(__file__).resolve().parent.parent
PEERS = ("seamless", "fewer-truncations", "olmo-fragment", "olmo-truncate", "megatron-gpt", "torchtune-split",
         "axolotl-multipack", "trl-bfd", "trl-bfd_split", "trl-wrapped", "foundry-binpack",
         "foundry-concat-wrap", "foundry-concat-no_wrap", "parcae-bestfit")

CHILD = r"""
import hashlib, json, resource, sys, time
import numpy as np
if sys.argv[3] == "compare":
    from packing_theory._allocator import keep_freed_memory
    keep_freed_memory()
from packing_theory.orchestration.measure import measure
from packing_theory.orchestration.settings import Settings
L = np.load(sys.argv[1], mmap_mode="r")
names = sys.argv[2].split(",")
t = time.process_time()
m = measure(L, names, Settings(engine="compiled"), horizon="common")
cpu = time.process_time() - t
d = m.to_dict()
for r in d["packers"]:
    r.pop("seconds", None)
digest = hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()
import packing_theory
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"module": packing_theory.__file__, "cpu_s": cpu, "peak_mib": peak,
                  "digest": digest}))
"""


def run_child(code: Path, lengths: Path, names: str, allocator: str) -> dict[str, Any]:
    """One fresh child measuring ``names`` with ``packing_theory`` imported from ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    before = os.getloadavg()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-peer-memory-cwd-") as cwd:  # `-c` puts the cwd first
        out = subprocess.run([sys.executable, "-c", CHILD, str(lengths), names, allocator], env=env, cwd=cwd,
                             capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"child failed ({code}, {names}): {out.stderr[-2000:]}")
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(got["module"]).resolve().is_relative_to(code):
        raise SystemExit(f"the child imported {got['module']}, not the code in {code}")
    got.update(wall_s=wall, load_before=before[0], load_after=os.getloadavg()[0])
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--documents", type=int, default=2_000_000)
    ap.add_argument("--baseline-code", type=Path, required=True, help="a checkout of the older code")
    ap.add_argument("--baseline-label", default="baseline")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--lengths", type=Path, default=None, help="where the lengths file is written")
    ap.add_argument("--allocator", choices=("compare", "default"), default="compare",
                    help="compare: glibc keeps freed blocks, as `packing-theory compare` sets it (default); "
                         "default: glibc's own settings (results written with a _default suffix)")
    ap.add_argument("--quick", action="store_true", help="100,000 documents; writes nothing")
    args = ap.parse_args()
    n = 100_000 if args.quick else args.documents
    peers = [p for p in args.peers.split(",") if p]
    codes = {"this code": HERE, args.baseline_label: args.baseline_code.resolve()}
    with tempfile.TemporaryDirectory(prefix="bench-peer-memory-") as tmp:
        warm = write_lengths(Path(tmp) / "warm.npy", 20_000)
        for code in codes.values():
            for p in peers:
                run_child(code, warm, f"bestfit-pad,{p}", args.allocator)
        lengths = write_lengths(args.lengths or Path(tmp) / f"lengths_{n}.npy", n)
        rows: list[dict[str, Any]] = []
        for case in ["bestfit-pad", *(f"bestfit-pad,{p}" for p in peers)]:
            for label, code in codes.items():
                got = run_child(code, lengths, case, args.allocator)
                rows.append({"case": case, "code": label, **got})
                print(f"{case:32s} {label:12s} peak {got['peak_mib']:7.0f} MiB  cpu {got['cpu_s']:6.1f} s  "
                      f"load {got['load_before']:.2f}->{got['load_after']:.2f}", flush=True)
    floor = {r["code"]: r["peak_mib"] for r in rows if r["case"] == "bestfit-pad"}
    for r in rows:
        r["bytes_per_document"] = (r["peak_mib"] - floor[r["code"]]) * 2**20 / n
    base = args.baseline_label
    lines = [
        "# Peak memory of one framework's packer in a measurement",
        "",
        f"Generated by `python benchmarks/bench_peer_memory.py --baseline-code DIR --baseline-label {base}` "
        f"(Python {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs, shared).",
        "Method: see the docstring of `benchmarks/bench_peer_memory.py` (a fresh process per case, "
        "`measure(L, ['bestfit-pad', PEER], Settings(engine='compiled'), horizon='common')`, peak RSS by "
        f"`ru_maxrss`). {n:,} lognormal(6, 1.3) documents. Allocator: {ALLOCATORS[args.allocator]}.",
        "",
        f"| case | {base} peak MiB | this code peak MiB | ratio | {base} B/doc over floor | this code B/doc "
        f"| {base} CPU s | this code CPU s | same JSON | load (before, {base} / this) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for case in dict.fromkeys(r["case"] for r in rows):
        b = next(r for r in rows if r["case"] == case and r["code"] == base)
        t = next(r for r in rows if r["case"] == case and r["code"] == "this code")
        lines.append(
            f"| {case} | {b['peak_mib']:.0f} | {t['peak_mib']:.0f} | {t['peak_mib'] / b['peak_mib']:.2f} | "
            f"{b['bytes_per_document']:.0f} | {t['bytes_per_document']:.0f} | {b['cpu_s']:.1f} | "
            f"{t['cpu_s']:.1f} | {'yes' if b['digest'] == t['digest'] else 'NO'} | "
            f"{b['load_before']:.2f} / {t['load_before']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        stem = "peer_memory" + ("" if args.allocator == "compare" else "_default")
        (RESULTS / f"{stem}.json").write_text(json.dumps(
            {"documents": n, "baseline": base, "allocator": args.allocator, "rows": rows}, indent=1) + "\n")
        (RESULTS / f"{stem}.md").write_text(text)


if __name__ == "__main__":
    main()
