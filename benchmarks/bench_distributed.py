"""Benchmark: a census and per-rank audits serially, in 2 local processes, and on a 2-worker Dask cluster.

Method
------
* **Census input**: ``--files`` plain text files (8 by default), one document
  per line; document ``d`` has ``max(1, round(L_d / 1.3))`` words, ``L_d`` the
  first lengths of ``default_lengths(seed=0)`` capped at 4,000 (so a file is a
  realistic mix of short and long documents); words are drawn from a
  5,000-word Zipf-like vocabulary (numpy ``default_rng(20261130)``).
* **Tokenizers**: ``whitespace`` (built-in, streamed counting: I/O bound) and
  ``regex``, a pure-Python GPT-2-style pre-tokenizer
  (``re.findall(r"\\w+| ?[^\\w\\s]+|\\s+")``, CPU bound: the stand-in for a real
  tokenizer's per-token cost).
* **Executors**, same input, a fresh output directory per run (nothing reused):
  ``serial`` (``workers=1``, in this process); ``local2`` (a 2-process
  ``ProcessPoolExecutor``); ``dask2`` (``LocalCluster(n_workers=2,
  threads_per_worker=1, processes=True)``; the cluster's start-up is timed
  separately and excluded). Every parallel run's ``lengths.npy`` is checked
  byte-identical to the serial one.
* **Reuse**: the serial census rerun into its own directory (every part
  verified and reused): the cost of hashing the inputs and checking parts.
* **Per-rank audits**: ``audit_ranks`` of the first ``--rank-docs`` documents
  of the default corpus, ``W = 4``, ``discard``, R = 2049, B = 1000, fast
  engine, to exhaustion (drain), row groups of 1,024; the same three executors;
  results checked equal; and, when numba is installed, serially with the
  compiled engine (``serial_compiled``; its JIT warm-up falls in the first of
  the repeats, the best is reported). The JSON's ``events_lower_bound_per_s``
  counts arrivals plus first placements per wall second (a lower bound on events/s).
* **Calibration**: 4 pure-Python CPU burns serially and in a 2-process pool,
  before and after the runs: the speedup the machine offered at the time (2.0
  = two free cores; other jobs share this machine).
* Wall time (``perf_counter``), best of ``--repeats`` runs; the ratio is
  serial / parallel of the best times. The machine is a shared 2-core
  container: absolute times are provisional, ratios are from the same run.

Run: ``python benchmarks/bench_distributed.py [--files 8] [--lines 1500] [--repeats 5] [--write]``
(``--write`` writes ``benchmarks/results/distributed.json`` and ``.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from packing_theory.corpus import default_lengths
from packing_theory.distributed import CensusOptions, audit_ranks, run_census
from packing_theory.engine.policies import PackerConfig

_PATTERN = re.compile(r"\w+| ?[^\w\s]+|\s+")


def regex_tokenizer(text: str) -> list[int]:
    """A pure-Python GPT-2-style pre-tokenizer; one id per piece (its length)."""
    return [len(p) for p in _PATTERN.findall(text)]


def make_inputs(directory: str, files: int, lines: int) -> list[str]:
    rng = np.random.default_rng(20261130)
    vocab = np.array([f"w{i}" + "x" * int(rng.integers(0, 6)) for i in range(5000)])
    weights = 1.0 / np.arange(1, 5001)
    weights /= weights.sum()
    lengths = np.minimum(default_lengths(seed=0)[: files * lines], 4000)
    paths = []
    for f in range(files):
        path = os.path.join(directory, f"part-{f:03d}.txt")
        with open(path, "w", encoding="utf-8") as fh:
            for L in lengths[f * lines : (f + 1) * lines]:
                words = rng.choice(vocab, size=max(1, round(int(L) / 1.3)), p=weights)
                fh.write(" ".join(words.tolist()) + ".\n")
        paths.append(path)
    return paths


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def available_parallelism(n: int = 3_000_000) -> float:
    """Calibration: 4 pure-Python CPU burns serially / in a 2-process pool (2.0 = two free cores)."""
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.perf_counter()
    for _ in range(4):
        _burn(n)
    serial = time.perf_counter() - t0
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_burn, [n] * 2))  # warm the pool
        t0 = time.perf_counter()
        list(pool.map(_burn, [n] * 4))
        parallel = time.perf_counter() - t0
    return round(serial / parallel, 2)


def best(body: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = body()
        times.append(time.perf_counter() - t0)
    return min(times), out


def census_runs(paths: list[str], tokenizer: Any, client: Any, repeats: int, tmp: str) -> dict[str, Any]:
    opts = CensusOptions("text", tokenizer, per_line=True)
    counter = iter(range(10**6))

    def census(executor: Any, workers: int) -> Any:
        out = os.path.join(tmp, f"c{next(counter)}")
        res = run_census(paths, opts, out, executor=executor, workers=workers)
        data = Path(out, "lengths.npy").read_bytes()
        shutil.rmtree(out)
        return res, data

    rows: dict[str, Any] = {}
    ref = None
    for name, executor, workers in (("serial", "local", 1), ("local2", "local", 2), ("dask2", client, 1)):
        wall, (res, data) = best(lambda e=executor, w=workers: census(e, w), repeats)
        ref = ref or data
        assert data == ref, f"{name}: lengths differ from serial"
        tokens = int(res.manifest["n_tokens"])
        rows[name] = {"wall_s": round(wall, 3), "documents": int(res.manifest["n_docs"]), "tokens": tokens,
                      "tokens_per_s": round(tokens / wall), "workers": sorted({
                          t.get("worker", "") for t in res.manifest["execution"]["tasks"]})[:4]}
    keep = os.path.join(tmp, "keep")
    run_census(paths, opts, keep)
    wall, res = best(lambda: run_census(paths, opts, keep), repeats)
    assert res.reused == len(paths) and res.computed == 0
    rows["reuse_all"] = {"wall_s": round(wall, 3)}
    for name in ("local2", "dask2"):
        rows[name]["speedup"] = round(rows["serial"]["wall_s"] / rows[name]["wall_s"], 2)
    return rows


def rank_runs(docs: int, client: Any, repeats: int) -> dict[str, Any]:
    lengths = default_lengths(seed=0)[:docs]
    cfg = PackerConfig(exhausted="drain")
    rows: dict[str, Any] = {}
    ref = None
    for name, executor, workers in (("serial", None, 1), ("local2", "local", 2), ("dask2", client, 1)):
        wall, out = best(lambda e=executor, w=workers: audit_ranks(lengths, 4, cfg, executor=e, workers=w),
                         repeats)
        ref = ref or out
        assert out == ref, f"{name}: per-rank results differ from serial"
        (s,) = out
        events = sum(r.arrived + r.started for r in s.ranks)  # arrivals + first placements (a lower bound)
        rows[name] = {"wall_s": round(wall, 3), "documents": s.documents, "min_rows": s.min_rows,
                      "started_any": s.started_any, "events_lower_bound_per_s": round(events / wall)}
    for name in ("local2", "dask2"):
        rows[name]["speedup"] = round(rows["serial"]["wall_s"] / rows[name]["wall_s"], 2)
    from packing_theory.engine.compiled import compiled_available

    if compiled_available():  # the same ranks with the numba engine's column batches, in this process
        wall, out = best(lambda: audit_ranks(lengths, 4, cfg, engine="compiled"), repeats)
        (s,) = out
        assert [r.to_dict() for r in s.ranks] == [r.to_dict() for r in ref[0].ranks]
        rows["serial_compiled"] = {"wall_s": round(wall, 3), "documents": s.documents, "min_rows": s.min_rows,
                                   "started_any": s.started_any,
                                   "speedup": round(rows["serial"]["wall_s"] / wall, 2)}
    return rows


def markdown(doc: dict[str, Any]) -> str:
    lines = ["# Distributed census and per-rank audits", "",
             f"Generated by `python benchmarks/bench_distributed.py --write` ({doc['machine']}). "
             "Method: the docstring of `benchmarks/bench_distributed.py`. Wall time, best of "
             f"{doc['repeats']}; **absolute times are provisional** (a shared 2-core container; 1-minute "
             f"load average {doc['load_before']} before the run and {doc['load_after']} after it: other jobs "
             "compete for the second core); ratios are from the same run. Calibration (4 CPU burns "
             "serially / in 2 processes; 2.0 = two free cores): "
             f"{doc['parallelism_before']}x before, {doc['parallelism_after']}x after.", "",
             f"Census input: {doc['files']} text files, {doc['documents']:,} documents, "
             f"{doc['bytes'] / 1e6:.1f} MB. Dask cluster start-up (excluded): {doc['dask_startup_s']} s.", ""]
    for tok, rows in doc["census"].items():
        lines += [f"## Census, tokenizer `{tok}`", "", "| executor | wall s | tokens | tokens/s | speedup |",
                  "|---|---:|---:|---:|---:|"]
        for name in ("serial", "local2", "dask2"):
            r = rows[name]
            lines.append(f"| {name} | {r['wall_s']} | {r['tokens']:,} | {r['tokens_per_s']:,} | "
                         f"{r.get('speedup', 1.0)}x |")
        lines += ["", f"Rerun with every part reused (inputs hashed, parts verified): "
                      f"{rows['reuse_all']['wall_s']} s.", ""]
    rr = doc["ranks"]
    lines += [f"## Per-rank audits (W = 4, discard, {rr['serial']['documents']:,} documents, fast engine)",
              "",
              "| executor | wall s | min rows | started on any rank | speedup |", "|---|---:|---:|---:|---:|"]
    for name in ("serial", "local2", "dask2", "serial_compiled"):
        if name not in rr:
            continue
        r = rr[name]
        lines.append(f"| {name} | {r['wall_s']} | {r['min_rows']:,} | {r['started_any']:,} | "
                     f"{r.get('speedup', 1.0)}x |")
    lines += ["", f"Peak RSS of this process: {doc['peak_rss_mib']} MiB; of the largest pool child: "
                  f"{doc['peak_child_rss_mib']} MiB.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--lines", type=int, default=1500)
    parser.add_argument("--rank-docs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    load = os.getloadavg()[0]
    calibration_before = available_parallelism()
    tmp = tempfile.mkdtemp(prefix="bench-dist-")
    try:
        paths = make_inputs(tmp, args.files, args.lines)
        t0 = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster, set_as_default=False) as client:
            startup = time.perf_counter() - t0
            census = {"whitespace": census_runs(paths, "whitespace", client, args.repeats, tmp),
                      "regex": census_runs(paths, regex_tokenizer, client, args.repeats, tmp)}
            ranks = rank_runs(args.rank_docs, client, args.repeats)
        doc = {"machine": f"Python {platform.python_version()}, numpy {np.__version__}, "
                          f"{platform.platform()}, {os.cpu_count()} CPUs",
               "repeats": args.repeats, "load_before": round(load, 2), "files": args.files,
               "documents": census["whitespace"]["serial"]["documents"],
               "bytes": sum(os.path.getsize(p) for p in paths), "dask_startup_s": round(startup, 2),
               "load_after": round(os.getloadavg()[0], 2), "census": census, "ranks": ranks,
               "parallelism_before": calibration_before, "parallelism_after": available_parallelism(),
               "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               "peak_child_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = markdown(doc)
    print(text)
    if args.write:
        out = Path(__file__).parent / "results"
        (out / "distributed.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / "distributed.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
