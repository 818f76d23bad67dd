"""Benchmark ``packing-theory compare`` at scale: every packer on 10 M (and 100 M) heavy-tailed documents.

Method
------
* Lengths: written **before** anything is measured, as a memory-mapped ``int64``
  ``.npy`` (``numpy.lib.format.open_memmap``): ``N`` draws of
  ``lognormal(mean=6, sigma=1.3)`` rounded to the nearest integer and clipped to
  ``>= 1``, from ``numpy.random.default_rng(seed)`` in chunks of 2^22 (seed 0;
  mean about 940 tokens, a long tail past the row width). The file is reused
  when it already holds those lengths (its size and first values are checked).
* Each run is the real command line in a child process::

      packing-theory compare --lengths FILE --workers W --engine compiled --no-plots --no-progress --out DIR

  with every registered packer (compare's default), ``L = 2048``, ``B = 1000``,
  the common token horizon. ``W = 1`` (in one process: the baseline) and
  ``W = 2`` (a local pool of two processes) run in the same invocation, one after
  the other; the ratio is baseline / pool.
* Wall: ``time.perf_counter`` around the child. CPU: ``os.wait4`` on the child
  (user + sys of it and of every descendant it reaped: the pool's workers).
  ``ru_maxrss`` of ``wait4`` is the largest single process, not the tree.
* Memory and balance: a sampler thread reads ``/proc`` every 0.2 s, finds every
  descendant of the child (``PPid`` links), and records the tree's summed RSS
  and summed PSS (``Pss`` of ``/proc/PID/smaps_rollup``: a page shared by
  several processes, such as the memory-mapped lengths, divided among them;
  the RSS sum counts it once per process) — their maxima over the samples are
  the **tree peaks** — and, per process, its peak RSS and PSS and its last CPU
  seconds (``utime + stime`` of ``/proc/PID/stat``). A process shorter than
  one period can be missed, so the tree peaks are lower bounds (the command's
  processes live for the whole run). The 100 M goal is judged on the PSS sum
  (what the tree really holds); the RSS sum is reported beside it.
* Watchdog: once a sample's RSS sum passes ``--kill-above-gib`` (14 GiB), every
  process of the tree is killed (SIGKILL, workers first) and the run is marked
  so: the shared machine is never at risk.
* Which packer ran where: ``compare.json`` records each packer's replay seconds
  (``packers[].seconds``) but not the process that ran it, and a local pool keeps
  no task log, so the per-worker packer lists are not reported; the per-packer
  seconds are (sorted), with the pool's lower bound ``max(sum / W, longest)``
  beside the measured wall.
* The 100 M run (``--big``, ``W = --big-workers``, default 1, under ``nice -n 5``)
  is there for the whole tree's peak (goal: under 8 GiB); it is run only when
  the 10 M run with the same ``W`` projects (x10) to under ``--big-limit-min``
  minutes and its PSS peak to under ``--big-project-gib`` (8 GiB): the peak is
  projected along the line through the 10 M run and a run of the same ``W`` on a
  tenth of its documents (so the fixed part, the interpreter and numba's
  kernels, is not multiplied).
* ``--baseline-code DIR`` adds runs of the same command at each ``--workers`` of
  ``--baseline-workers`` (default 2) with ``packing_theory`` imported from
  ``DIR`` (older code, named in the table by ``--baseline-label``; the committed
  results use main's head, ``git archive main | tar -x -C DIR``), in the same
  invocation, to show what the change does.
* Before the measured runs, each code's ``compare --workers 2`` runs once,
  unmeasured, on 20,000 documents, so that numba's on-disk caches are written
  (a first run of fresh code compiles every kernel: a minute of CPU here).
* The 100 M run is skipped, and says why, when that projection exceeds 8 GiB or
  80 % of the machine's ``MemAvailable`` (a shared machine).
* The machine is shared (2 cores, other agents' jobs): the load average is
  recorded before and after every run, and absolute times are provisional; the
  goal "10 M under 2 minutes wall" is stated for a quiet machine.

Run: ``python benchmarks/bench_compare_scale.py`` (writes
``benchmarks/results/compare_scale.{json,md}``); ``--quick`` runs 200,000
documents and writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 1 << 22
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- the corpus


def write_lengths(path: Path, n: int, seed: int = 0) -> Path:
    """``n`` lognormal(6, 1.3) lengths, rounded, clipped to ``>= 1``, as an int64 ``.npy``
    (reused when the file already holds them)."""
    rng = np.random.default_rng(seed)
    first = np.maximum(np.rint(rng.lognormal(6.0, 1.3, min(n, CHUNK))), 1).astype(np.int64)
    if path.exists():
        old = np.load(path, mmap_mode="r")
        if old.shape == (n,) and old.dtype == np.int64 and np.array_equal(old[: first.size], first):
            return path
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.int64, shape=(n,))
    out[: first.size] = first
    done = first.size
    while done < n:
        k = min(CHUNK, n - done)
        out[done : done + k] = np.maximum(np.rint(rng.lognormal(6.0, 1.3, k)), 1).astype(np.int64)
        done += k
    out.flush()
    del out
    return path


# --------------------------------------------------------------------------- /proc sampling


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def _tree(root: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def _pss(pid: int) -> int:
    """The proportional set size of one process in bytes (``Pss`` of ``/proc/PID/smaps_rollup``: each
    shared page divided by the processes that map it), or 0 where the kernel does not say."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _proc(pid: int) -> tuple[int, float, str, int] | None:
    """(RSS bytes, CPU seconds, command line, PSS bytes) of one process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except (OSError, IndexError, ValueError):
        return None
    return rss, (int(fields[11]) + int(fields[12])) / TICK, cmd, _pss(pid)


class TreeSampler(threading.Thread):
    """Polls the process tree under ``root`` every ``period`` seconds (see the module doc)."""

    def __init__(self, root: int, period: float = 0.2, kill_above: int = 0) -> None:
        super().__init__(daemon=True)
        self.root, self.period, self.kill_above = root, period, kill_above
        self.stop = threading.Event()
        self.tree_peak = 0
        self.tree_peak_pss = 0
        self.samples = 0
        self.killed = ""
        self.procs: dict[int, dict[str, Any]] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            total = total_pss = 0
            pids = _tree(self.root)
            for pid in pids:
                seen = _proc(pid)
                if seen is None:
                    continue
                rss, cpu, cmd, pss = seen
                total += rss
                total_pss += pss
                p = self.procs.setdefault(pid, {"pid": pid, "peak_rss": 0, "peak_pss": 0, "cpu_s": 0.0,
                                                "cmd": cmd[:120], "root": pid == self.root})
                p["peak_rss"] = max(p["peak_rss"], rss)
                p["peak_pss"] = max(p["peak_pss"], pss)
                p["cpu_s"] = max(p["cpu_s"], cpu)
            self.tree_peak = max(self.tree_peak, total)
            self.tree_peak_pss = max(self.tree_peak_pss, total_pss)
            self.samples += 1
            if self.kill_above and total > self.kill_above and not self.killed:
                self.killed = f"killed by the watchdog: tree RSS sum {total / 2**30:.2f} GiB"
                for pid in reversed(pids):  # the workers first, then the command
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
            self.stop.wait(self.period)


# --------------------------------------------------------------------------- one run of the command


def _command() -> list[str]:
    script = Path(sys.executable).with_name("packing-theory")
    return [str(script)] if script.exists() else [sys.executable, "-m", "packing_theory.cli"]


def run_compare(lengths: Path, workers: int, out: Path, *, nice: int = 0, code: str | None = None,
                label: str = "", kill_above: int = 0) -> dict[str, Any]:
    """One ``packing-theory compare`` child, measured (see the module doc); ``code``: the directory the
    child imports ``packing_theory`` from (``PYTHONPATH``), default this checkout's."""
    cmd = [*_command(), "compare", "--lengths", str(lengths), "--workers", str(workers), "--engine",
           "compiled", "--no-plots", "--no-progress", "--force", "--out", str(out)]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    load_before = os.getloadavg()
    log = out.with_suffix(".log")
    with open(log, "wb") as err:
        t0 = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=code or str(Path(__file__).resolve().parents[1]))
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        sampler = TreeSampler(child.pid, kill_above=kill_above)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    sampler.stop.set()
    sampler.join()
    rc = child.returncode
    result: dict[str, Any] = {
        "label": label or "this checkout",
        "documents": int(np.load(lengths, mmap_mode="r").shape[0]),
        "workers": workers,
        "nice": nice,
        "exit": rc,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "max_single_rss_mib": usage.ru_maxrss / 1024,
        "tree_peak_rss_mib": sampler.tree_peak / 2**20,
        "tree_peak_pss_mib": sampler.tree_peak_pss / 2**20,
        "killed": sampler.killed,
        "samples": sampler.samples,
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "processes": sorted(({**p, "peak_rss_mib": p.pop("peak_rss") / 2**20,
                              "peak_pss_mib": p.pop("peak_pss") / 2**20}
                             for p in sampler.procs.values()), key=lambda p: (not p["root"], -p["cpu_s"])),
        "stderr_tail": log.read_text(errors="replace")[-600:],
    }
    if rc in (0, 1) and (out / "compare.json").exists():
        doc = json.loads((out / "compare.json").read_text())
        result["packers"] = sorted(((p["packer"], p["seconds"]) for p in doc["packers"]), key=lambda x: -x[1])
        result["refused"] = [r["packer"] for r in doc["refused"]]
        result["horizon"] = doc["horizon"]
        result["measure_s"] = doc.get("seconds")
    return result


def workers_of(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The pool's worker processes: the root's descendants that did work (a second or more of CPU)."""
    return [p for p in run["processes"] if not p["root"] and p["cpu_s"] >= 1.0]


# --------------------------------------------------------------------------- report


def markdown(res: dict[str, Any]) -> str:
    lines = [
        "# `compare` at scale: every packer, compiled engine, local pool",
        "",
        f"Generated by `python benchmarks/bench_compare_scale.py` ({res['python']}, numpy {res['numpy']}, "
        f"{res['platform']}, {res['cpus']} CPUs). Method: the docstring of "
        "`benchmarks/bench_compare_scale.py`. "
        "**The machine is shared** (2 cores, other agents' jobs running): the load average before and after "
        "each run is in the table; absolute times are provisional, ratios are from the same invocation.",
        "",
        f"Lengths: lognormal(6, 1.3), rounded, clipped to >= 1, seed 0, int64 `.npy` memory-mapped "
        f"(written in {res['write_s']:.1f} s before any run).",
        "",
        "| documents | --workers | code | nice | exit | wall s | CPU s (tree) | CPU / wall "
        "| tree peak PSS MiB | tree peak RSS MiB "
        "| largest process RSS MiB | load before (1/5/15 min) | load after |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in res["runs"]:
        lb = " / ".join(f"{x:.2f}" for x in r["load_before"])
        la = " / ".join(f"{x:.2f}" for x in r["load_after"])
        lines.append(
            f"| {r['documents']:,} | {r['workers']} | {r['label']} | {r['nice']} | {r['exit']} | "
            f"{r['wall_s']:.1f} | "
            f"{r['cpu_s']:.1f} | {r['cpu_s'] / r['wall_s']:.2f} | {r['tree_peak_pss_mib']:.0f} | "
            f"{r['tree_peak_rss_mib']:.0f} | "
            f"{r['max_single_rss_mib']:.0f} | {lb} | {la} |")
    if res.get("ratio") is not None:
        lines += ["", "Baseline (`--workers 1`) / pool (`--workers 2`) wall at "
                      f"{res['documents']:,} documents: **{res['ratio']:.2f}x**."]
    for r in res["runs"]:
        head = f"### {r['documents']:,} documents, --workers {r['workers']} ({r['label']}): processes"
        lines += ["", head, "",
                  "| process | CPU s | peak RSS MiB | peak PSS MiB |", "|---|---:|---:|---:|"]
        for p in r["processes"]:
            if p["root"] or p["cpu_s"] >= 0.05:
                role = "command (root)" if p["root"] else ("pool worker" if p in workers_of(r) else "helper")
                lines.append(f"| {role}, pid {p['pid']} | {p['cpu_s']:.1f} | {p['peak_rss_mib']:.0f} | "
                             f"{p['peak_pss_mib']:.0f} |")
        if r.get("killed"):
            lines += ["", f"**{r['killed']}**"]
        if "packers" in r:
            secs = [s for _, s in r["packers"]]
            bound = max(sum(secs) / r["workers"], max(secs)) if secs else 0.0
            top = ", ".join(f"{n} {s:.1f}" for n, s in r["packers"][:8])
            lines += ["", f"Replay seconds per packer (compare.json, longest first): {top}, ... "
                          f"(sum {sum(secs):.1f} s over {len(secs)} packers; refused: "
                          f"{', '.join(r['refused']) or 'none'}). A pool of {r['workers']} cannot replay "
                          f"them in under {bound:.1f} s; compare's own measure took "
                          f"{r.get('measure_s') or 0:.1f} s."]
    if res.get("big_projected_mib"):
        lines += ["", f"Projected tree peak PSS of the big run (the line through the two runs of its "
                      f"--workers): {res['big_projected_mib'] / 1024:.2f} GiB."]
    if res.get("big_skipped"):
        lines += ["", f"100,000,000 documents: not run ({res['big_skipped']})."]
    lines += ["", "## Goals", ""] + [f"* {g}" for g in res["goals"]]
    return "\n".join(lines) + "\n"


def goals(res: dict[str, Any]) -> list[str]:
    out = []
    pool = [r for r in res["runs"] if r["documents"] == res["documents"] and r["workers"] == 2
            and r["label"] == "this checkout"]
    if pool:
        r = pool[0]
        met = r["wall_s"] < 120
        out.append(f"{res['documents']:,} documents under 2 minutes wall (quiet machine): "
                   f"{'met' if met else 'NOT met'} here at {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s "
                   f"(load {r['load_before'][0]:.2f} before)")
    big = [r for r in res["runs"] if r["documents"] >= 100_000_000]
    if big:
        r = big[0]
        base = set(res["runs"][0]["refused"]) if res["runs"] else set()
        more = [n for n in r.get("refused", []) if n not in base]  # refused here, measured at the size below
        ok = r["exit"] in (0, 1) and r["tree_peak_pss_mib"] < 8 * 1024 and not more
        unmeasured = (f"; {len(more)} packers measured at {res['documents']:,} documents were refused here "
                      f"({', '.join(more)}), so not every packer was measured" if more else "")
        out.append(f"{r['documents']:,} documents under 8 GiB whole tree (judged on the PSS sum): "
                   f"{'met' if ok else 'NOT met'}{unmeasured} (--workers {r['workers']}: tree peak PSS "
                   f"{r['tree_peak_pss_mib'] / 1024:.2f} GiB, RSS sum "
                   f"{r['tree_peak_rss_mib'] / 1024:.2f} GiB, "
                   f"exit {r['exit']}{', ' + r['killed'] if r.get('killed') else ''})")
    elif res.get("big_skipped"):
        out.append(f"100,000,000 documents under 8 GiB whole tree: NOT met (not run: {res['big_skipped']})")
    else:
        out.append("100,000,000 documents under 8 GiB whole tree: not measured")
    return out


def _available_mib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _brief(run: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in run.items() if k not in ("processes", "stderr_tail", "packers")})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--documents", type=int, default=10_000_000)
    ap.add_argument("--big", type=int, default=100_000_000, help="documents of the memory run (0: never)")
    ap.add_argument("--big-limit-min", type=float, default=40.0,
                    help="run --big only when the pool run, times its size ratio, projects under this")
    ap.add_argument("--data", default=None, help="directory for the lengths files (default: a temporary one)")
    ap.add_argument("--baseline-code", default=None,
                    help="also run --workers 2 with packing_theory imported from this directory (older code)")
    ap.add_argument("--baseline-label", default="before the one-pass common horizon",
                    help="how the table names the --baseline-code run")
    ap.add_argument("--baseline-workers", default="2",
                    help="the --workers of the --baseline-code runs (a comma-separated list)")
    ap.add_argument("--big-workers", type=int, default=1, help="--workers of the --big run")
    ap.add_argument("--big-project-gib", type=float, default=8.0,
                    help="run --big only when the run with --big-workers projects (PSS x size ratio) "
                         "under this")
    ap.add_argument("--kill-above-gib", type=float, default=14.0,
                    help="the watchdog kills a run's tree once its RSS sum passes this")
    ap.add_argument("--quick", action="store_true", help="200,000 documents, no --big, write nothing")
    args = ap.parse_args(argv)
    n = 200_000 if args.quick else args.documents
    data = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="bench_compare_scale_"))
    data.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench_compare_scale_out_"))
    res: dict[str, Any] = {"python": platform.python_version(), "numpy": np.__version__,
                           "platform": platform.platform(), "cpus": os.cpu_count(), "documents": n,
                           "runs": []}
    try:
        t = time.perf_counter()
        lengths = write_lengths(data / f"lognormal_{n}.npy", n)
        res["write_s"] = time.perf_counter() - t
        warm = write_lengths(data / "lognormal_20000.npy", 20_000)
        for code in (None, args.baseline_code) if args.baseline_code else (None,):  # numba caches written
            run_compare(warm, 2, work / "warm", code=code)
        for w in (1, 2):
            r = run_compare(lengths, w, work / f"w{w}", kill_above=int(args.kill_above_gib * 2**30))
            res["runs"].append(r)
            print(_brief(r), flush=True)
            if r["exit"] not in (0, 1):
                print(r["stderr_tail"], file=sys.stderr)
                return 1
        one, two = res["runs"]
        res["ratio"] = one["wall_s"] / two["wall_s"]
        for w in [int(x) for x in args.baseline_workers.split(",")] if args.baseline_code else []:
            r = run_compare(lengths, w, work / f"w{w}base", code=args.baseline_code,
                            label=args.baseline_label, kill_above=int(args.kill_above_gib * 2**30))
            res["runs"].append(r)
            print(_brief(r), flush=True)
        big = 0 if args.quick else args.big
        sized = one if args.big_workers == 1 else two
        projected_min = sized["wall_s"] * big / n / 60 if big else 0.0
        projected_mib = 0.0
        if big:  # a line through this size and a tenth of it: the fixed part is not multiplied
            tenth = write_lengths(data / f"lognormal_{n // 10}.npy", n // 10)
            small = run_compare(tenth, args.big_workers, work / "tenth",
                                kill_above=int(args.kill_above_gib * 2**30))
            res["runs"].append(small)
            print(_brief(small), flush=True)
            slope = (sized["tree_peak_pss_mib"] - small["tree_peak_pss_mib"]) / (n - n // 10)
            projected_mib = sized["tree_peak_pss_mib"] + slope * (big - n)
            res["big_projected_mib"] = projected_mib
        available_mib = _available_mib()
        if big and projected_mib > min(0.8 * available_mib, args.big_project_gib * 1024):
            res["big_skipped"] = (f"the {n:,}-document --workers {args.big_workers} run's tree peak PSS was "
                                  f"{sized['tree_peak_pss_mib']:,.0f} MiB ({small['tree_peak_pss_mib']:,.0f} "
                                  f"at {n // 10:,}): the line through them reaches "
                                  f"{projected_mib / 1024:,.1f} GiB at {big:,}, more than "
                                  f"{args.big_project_gib:g} GiB "
                                  f"or 80% of the {available_mib / 1024:,.1f} GiB available on this shared "
                                  "machine")
        elif big and projected_min <= args.big_limit_min:
            t = time.perf_counter()
            big_lengths = write_lengths(data / f"lognormal_{big}.npy", big)
            res["big_write_s"] = time.perf_counter() - t
            r = run_compare(big_lengths, args.big_workers, work / "big", nice=5,
                            kill_above=int(args.kill_above_gib * 2**30))
            res["runs"].append(r)
            print(_brief(r), flush=True)
        elif big:
            res["big_skipped"] = (f"the {n:,}-document pool run took {two['wall_s']:.0f} s: x{big // n} "
                                  f"projects to {projected_min:.0f} min, over the {args.big_limit_min:.0f} "
                                  "min limit")
        res["goals"] = goals(res)
        if not args.quick:
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / "compare_scale.json").write_text(json.dumps(res, indent=1) + "\n")
            (RESULTS / "compare_scale.md").write_text(markdown(res))
        else:
            print(markdown(res))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
