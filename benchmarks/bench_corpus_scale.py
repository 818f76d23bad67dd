"""Corpus-scale benchmark: the compiled ledger against the numpy one, audits from memory-mapped ``.npy``.

Method
------
* Lengths: :func:`packing_theory.corpus.default_length_chunks` (the default
  corpus's length law), written chunk by chunk into an ``int64`` ``.npy``
  (``np.lib.format.open_memmap``) in a scratch directory; the audits read it
  memory-mapped (``load_lengths``), never loaded whole.
* Settings: R = 2049, B = 1000, refill 128, one pass, to exhaustion.
* Every measurement runs in a fresh process, reaped with ``os.wait4``: its
  own CPU time (user + system) and peak RSS (``ru_maxrss``, which counts the
  mapped input pages the process touched), and the wall time around it.
  A spawned child's ``ru_maxrss`` starts at its parent's peak (the kernel
  keeps the high-water mark across ``exec``), so the parent writes nothing
  large itself (the inputs are written by child tasks) and its own peak is
  reported (``parent_peak_rss_mib``): no child figure can be below it.
  The numba kernels are compiled (cached on disk) by a warm-up run first, so
  the timings exclude compilation.
* ``ledger`` (per policy): ``audit_lengths(engine="compiled")`` on the first
  ``--ledger-documents`` documents with the numpy ledger and with the
  compiled ledger, same process and same events; events per CPU second of the
  whole audit (engine + ledger), and the two ``Aggregates`` must be equal.
* ``audit``: ``packing-theory audit --lengths FILE.npy --policy discard
  --engine compiled --rows 10**15 --permutations 0 --no-plots`` (to
  exhaustion: the stop reason must be ``exhausted``) at each ``--audit-documents``
  (wall, CPU split into user and system time, peak RSS, the load average
  before and after; goal at 100 M: < 30 s wall, < 2 GiB). The audit's
  ledger is the compiled one without per-document first targets or rows
  (13 bytes per document: ``packing_theory.audit.table.BYTES_PER_OCCURRENCE``).
* ``demo``: ``packing-theory audit --demo --no-plots`` with ``--engine fast``
  and ``--engine compiled``, whole process, same run (goal: >= 5x).
* ``compare``: ``packing-theory compare --lengths FILE.npy --no-plots`` over
  every packer on ``--compare-documents`` documents, ``--workers 1`` and
  ``--workers 2``; the two ``compare.json`` must be equal apart from timings.
* ``megatron``: a version-1 Megatron index of ``--megatron-documents``
  documents (``bench_readers.write_big_idx``) with no ``.bin``;
  ``MegatronIndex(...).lengths()`` in a fresh process (seconds of the read,
  peak RSS; the index is written and dropped from the page cache's dirty
  state with ``os.sync`` first).

* ``summary``: the streaming summary (``StreamLedger(compiled=True)``) of the compiled
  engine's ``discard`` replay of ``--summary-documents`` documents generated
  chunk by chunk (``default_length_chunks``, nothing held), in a fresh
  process: CPU s of the replay and summary with and without the length
  generation (measured apart; the process's own figures add the imports and
  the kernel load), wall, peak RSS (goal at 1 B: < 3 CPU minutes).

Absolute times are provisional (a shared 2-core machine: the load average
before each part is recorded); ratios are taken in the same run.

Run: ``python benchmarks/bench_corpus_scale.py`` (writes
``benchmarks/results/corpus_scale.{json,md}``); ``--quick`` runs small sizes
and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
HERE = Path(__file__).resolve()
PARTS = ("ledger", "audit", "demo", "compare", "megatron", "summary")
POLICIES = ("discard", "continue", "requeue-bos", "segment-first", "random-span")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_child(argv: list[str]) -> dict[str, Any]:
    """Run ``argv`` in a fresh process; its own CPU s (user + system, its children included once reaped)
    and peak RSS from ``os.wait4``, the wall s around it, the load average before it, its stdout."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        w0 = time.perf_counter()
        # Popen spawns (vfork + exec): the child does not start with this process's RSS
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=_env(), text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - w0
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if code not in (0, 1):
        raise RuntimeError(f"{argv} failed ({code}):\n{stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "user_s": round(usage.ru_utime, 2), "sys_s": round(usage.ru_stime, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "status": code, "load_before": round(load, 2),
            "stdout": stdout.strip()}


# --------------------------------------------------------------------------- tasks (in a child process)


def task_ledger(path: str, documents: int, policy: str) -> dict[str, Any]:
    import packing_theory as pt
    from packing_theory.audit import audit_lengths
    from packing_theory.engine import make_packer
    from packing_theory.lengths import load_lengths

    lengths = load_lengths(path)[:documents]
    cfg = pt.PackerConfig(capacity=2049, min_buffer=1000, refill=128, policy=policy)  # type: ignore[arg-type]
    audit_lengths(lengths[:20_000], cfg, engine="compiled")  # load the cached kernels
    events = sum(len(b) for b in make_packer("compiled", cfg).batches(lengths))  # type: ignore[union-attr]
    out: dict[str, Any] = {"policy": policy, "documents": documents, "events": events}
    aggs = {}
    for name, compiled in (("numpy", False), ("compiled", True)):
        c0 = time.process_time()
        aggs[name] = audit_lengths(lengths, cfg, engine="compiled", ledger_kwargs={"compiled": compiled})
        cpu = time.process_time() - c0
        out[name] = {"cpu_s": round(cpu, 3), "events_per_cpu_s": round(events / cpu)}
    out["equal"] = aggs["numpy"] == aggs["compiled"]
    out["speedup"] = round(out["numpy"]["cpu_s"] / out["compiled"]["cpu_s"], 2)
    return out


def task_megatron(prefix: str) -> dict[str, Any]:
    from packing_theory.corpus.readers.megatron import MegatronIndex

    t0 = time.perf_counter()
    lengths = MegatronIndex(prefix, bos="included").lengths()
    return {"read_s": round(time.perf_counter() - t0, 2), "documents": int(lengths.size),
            "checksum": int(lengths[:: max(1, lengths.size // 1000)].sum())}


def task_write(path: str, n: int, prefixes: dict[str, int]) -> dict[str, Any]:
    write_lengths(Path(path), n)
    for other, m in prefixes.items():
        np.save(other, np.load(path, mmap_mode="r")[:m])
    return {}


def task_write_idx(prefix: str, n: int) -> dict[str, Any]:
    from bench_readers import write_big_idx

    sizes = write_big_idx(prefix, n)
    return {"checksum": int(sizes[:: max(1, sizes.size // 1000)].astype(np.int64).sum())}


def task_summary(documents: int) -> dict[str, Any]:
    from bench_scale import TimedChunks  # the default corpus's chunks, their generation CPU time apart

    import packing_theory as pt
    from packing_theory.audit.stream import StreamLedger
    from packing_theory.engine import make_packer
    from packing_theory.engine.batches import LengthChunks

    cfg = pt.PackerConfig(capacity=2049, min_buffer=1000, refill=128, policy="discard")
    for _ in make_packer("compiled", capacity=8, min_buffer=2).batches([3, 5, 9]):  # type: ignore[union-attr]
        pass  # load the cached kernel
    gen = TimedChunks(documents)
    c0, w0 = time.process_time(), time.perf_counter()
    sl = StreamLedger(2049, 1000, compiled=True)
    pt.feed_all(make_packer("compiled", cfg).stream(LengthChunks(gen)), sl)
    r = sl.result()
    cpu = time.process_time() - c0
    return {"documents": documents, "summary_cpu_s": round(cpu, 2), "generation_cpu_s": round(gen.cpu, 2),
            "cpu_without_generation_s": round(cpu - gen.cpu, 2),
            "summary_wall_s": round(time.perf_counter() - w0, 2),
            "arrived": r.summary.consumed_sources, "started": r.summary.sources_started,
            "identity_holds": r.summary.identity_holds(), "live_peak": r.live_peak}


TASKS = {"summary": task_summary, "ledger": task_ledger, "megatron": task_megatron, "write": task_write,
         "write_idx": task_write_idx}


def task(kind: str, **spec: Any) -> dict[str, Any]:
    out = run_child([sys.executable, str(HERE), "--task", json.dumps({"kind": kind, **spec})])
    result: dict[str, Any] = json.loads(out.pop("stdout").splitlines()[-1])
    return {**result, **out}


# --------------------------------------------------------------------------- the benchmark


def write_lengths(path: Path, n: int) -> None:
    from packing_theory.corpus import default_length_chunks

    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.int64, shape=(n,))
    pos = 0
    for part in default_length_chunks(n, seed=0, chunk=1 << 20):
        arr[pos : pos + part.size] = part
        pos += part.size
    arr.flush()
    del arr


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "packing_theory.cli", *args]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes; writes nothing")
    parser.add_argument("--ledger-documents", type=int, default=2_000_000)
    parser.add_argument("--audit-documents", default="10000000,100000000")
    parser.add_argument("--compare-documents", type=int, default=1_000_000)
    parser.add_argument("--megatron-documents", type=int, default=100_000_000)
    parser.add_argument("--summary-documents", default="10000000,100000000,1000000000",
                        help="streaming-summary sizes (comma-separated)")
    parser.add_argument("--skip", default="",
                        help="comma-separated parts: ledger,audit,demo,compare,megatron")
    parser.add_argument("--tmp", default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--update", action="store_true",
                        help="keep the parts of results/corpus_scale.json that this run skips")
    parser.add_argument("--task", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.task:
        spec = json.loads(args.task)
        print(json.dumps(TASKS[spec.pop("kind")](**spec)))
        return 0
    if args.quick:
        args.ledger_documents, args.audit_documents = 50_000, "100000"
        args.compare_documents, args.megatron_documents = 5_000, 200_000
        args.summary_documents = "200000"
    skip = set(filter(None, args.skip.split(",")))
    audit_sizes = [int(v) for v in args.audit_documents.split(",") if v]
    result: dict[str, Any] = {
        "method": __doc__, "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                       "numpy": np.__version__, "cpus": os.cpu_count()},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    ok = True
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        largest = max([args.ledger_documents, args.compare_documents, *audit_sizes])
        big = Path(tmp) / "lengths.npy"
        files = {n: big if n == largest else Path(tmp) / f"lengths_{n}.npy"
                 for n in {args.compare_documents, *audit_sizes}}
        # written by a child: this process stays small (a spawned child's peak RSS starts at its parent's)
        task("write", path=str(big), n=largest, prefixes={str(p): n for n, p in files.items() if p != big})
        # warm-up: compile / load the cached kernels once
        run_child(cli("audit", "--lengths", str(files[min(files)]), "--policy", "discard", "--engine",
                      "compiled", "--permutations", "0", "--no-plots", "--no-progress",
                      "--out", f"{tmp}/warm"))
        if "ledger" not in skip:
            rows = [task("ledger", path=str(big), documents=args.ledger_documents, policy=p)
                    for p in POLICIES]
            ok &= all(r["equal"] for r in rows)
            result["ledger"] = rows
            print(json.dumps(rows), flush=True)
        if "audit" not in skip:
            result["audit"] = []
            for n in audit_sizes:
                r = run_child(cli("audit", "--lengths", str(files[n]), "--policy", "discard", "--engine",
                                  "compiled", "--rows", str(10**15), "--permutations", "0", "--no-plots",
                                  "--no-progress",
                                  "--out", f"{tmp}/audit{n}"))
                r["load_after"] = round(os.getloadavg()[0], 2)
                report = json.loads((Path(tmp) / f"audit{n}" / "audit.json").read_text())
                r["documents"] = n
                r["identity_holds"] = bool(report["policies"][0]["mass"]["identity_holds"])
                r["stop_reason"] = report["policies"][0]["stop_reason"]
                r["rows"] = report["policies"][0]["rows"]
                ok &= r["stop_reason"] == "exhausted"
                r.pop("stdout")
                ok &= r["identity_holds"]
                result["audit"].append(r)
                print(json.dumps(r), flush=True)
        if "demo" not in skip:
            result["demo"] = {}
            for engine in ("fast", "compiled"):
                r = run_child(cli("audit", "--demo", "--no-plots", "--no-progress", "--engine", engine,
                                  "--out", f"{tmp}/demo_{engine}",
                                  *(["--scale", "0.05"] if args.quick else [])))
                r.pop("stdout")
                result["demo"][engine] = r
            from diff_audit_json import differences

            a, b = (json.loads((Path(tmp) / f"demo_{e}" / "audit.json").read_text())
                    for e in ("fast", "compiled"))
            result["demo"]["differences"] = len(differences(a, b))
            result["demo"]["wall_ratio"] = round(result["demo"]["fast"]["wall_s"]
                                                 / result["demo"]["compiled"]["wall_s"], 2)
            result["demo"]["cpu_ratio"] = round(result["demo"]["fast"]["cpu_s"]
                                                / result["demo"]["compiled"]["cpu_s"], 2)
            ok &= result["demo"]["differences"] == 0
            print(json.dumps(result["demo"]), flush=True)
        if "compare" not in skip:
            result["compare"] = {"documents": args.compare_documents}
            reports = []
            for workers in (1, 2):
                out = f"{tmp}/compare{workers}"
                r = run_child(cli("compare", "--lengths", str(files[args.compare_documents]), "--no-plots",
                                  "--workers", str(workers), "--out", out))
                r.pop("stdout")
                result["compare"][f"workers_{workers}"] = r
                reports.append(json.loads((Path(out) / "compare.json").read_text()))
            from diff_audit_json import differences

            def timeless(v: Any) -> Any:
                if isinstance(v, dict):
                    return {k: timeless(x) for k, x in v.items() if k not in ("seconds", "run")}
                return [timeless(x) for x in v] if isinstance(v, list) else v

            result["compare"]["differences"] = len(differences(timeless(reports[0]), timeless(reports[1])))
            result["compare"]["packers"] = len(reports[0]["packers"])
            ok &= result["compare"]["differences"] == 0
            print(json.dumps(result["compare"]), flush=True)
        if "megatron" not in skip:
            prefix = f"{tmp}/big"
            want = task("write_idx", prefix=prefix, n=args.megatron_documents)["checksum"]
            os.sync()
            r = task("megatron", prefix=prefix)
            r["idx_bytes"] = os.path.getsize(prefix + ".idx")
            r["equal"] = r.pop("checksum") == want
            ok &= r["equal"]
            result["megatron"] = r
            print(json.dumps(r), flush=True)
        if "summary" not in skip:
            result["summary"] = []
            for n in [int(v) for v in args.summary_documents.split(",") if v]:
                r = task("summary", documents=n)
                ok &= bool(r["identity_holds"]) and r["arrived"] == n
                result["summary"].append(r)
                print(json.dumps(r), flush=True)
    result["parent_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.update and (RESULTS / "corpus_scale.json").exists():
        old = json.loads((RESULTS / "corpus_scale.json").read_text())
        result = {**old, **result, "updated_parts": sorted(k for k in result if k in PARTS)}
        ok = ok and bool(old.get("ok", True))
    result["ok"] = ok
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "corpus_scale.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "corpus_scale.md").write_text(render(result))
    return 0 if ok else 1


def render(r: dict[str, Any]) -> str:
    lines = ["# Corpus scale: compiled ledger, memory-mapped audits, compare --workers, Megatron index", "",
             f"Generated by `python benchmarks/bench_corpus_scale.py` on {r['started']} (Python "
             f"{r['machine']['python']}, numpy {r['machine']['numpy']}, {r['machine']['cpus']} CPUs, "
             f"{r['machine']['platform']}). Method: the docstring of `benchmarks/bench_corpus_scale.py`. "
             "**Absolute times are provisional** (a 2-core machine shared with other jobs; the load average "
             "before each run is given); ratios are from the same run.", ""]
    if "ledger" in r:
        lines += ["## Whole audit (compiled engine) with the numpy ledger vs the compiled ledger", "",
                  "| policy | documents | events | numpy CPU s | numpy ev/CPU s | compiled CPU s | "
                  "compiled ev/CPU s | speed-up | equal |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for x in r["ledger"]:
            lines.append(f"| {x['policy']} | {x['documents']:,} | {x['events']:,} | {x['numpy']['cpu_s']} | "
                         f"{x['numpy']['events_per_cpu_s']:,} | {x['compiled']['cpu_s']} | "
                         f"{x['compiled']['events_per_cpu_s']:,} | {x['speedup']}x | {x['equal']} |")
    if "audit" in r:
        lines += ["", "## `audit --lengths FILE.npy` (int64, memory-mapped; discard, compiled, exhaustion)",
                  "",
                  "| documents | rows | stop | wall s | CPU s | user s | system s | peak RSS MiB "
                  "| load before | load after | identity |",
                  "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for x in r["audit"]:
            lines.append(f"| {x['documents']:,} | {x.get('rows', 0):,} | {x.get('stop_reason')} | "
                         f"{x['wall_s']} | {x['cpu_s']} | {x.get('user_s', '-')} | {x.get('sys_s', '-')} | "
                         f"{x['peak_rss_mib']} | {x['load_before']} | {x.get('load_after', '-')} | "
                         f"{x['identity_holds']} |")
    if "demo" in r:
        d = r["demo"]
        lines += ["", "## `audit --demo --no-plots`, whole process", "",
                  "| engine | wall s | CPU s | peak RSS MiB |", "|---|---:|---:|---:|"]
        for e in ("fast", "compiled"):
            lines.append(f"| {e} | {d[e]['wall_s']} | {d[e]['cpu_s']} | {d[e]['peak_rss_mib']} |")
        lines += ["", f"fast / compiled: {d['wall_ratio']}x wall, {d['cpu_ratio']}x CPU; audit.json "
                  f"differences apart from timings: {d['differences']}."]
    if "compare" in r:
        c = r["compare"]
        lines += ["", f"## `compare` of every packer ({c['packers']}) on {c['documents']:,} documents", "",
                  "| workers | wall s | CPU s (the parent; workers are children) | peak RSS MiB |",
                  "|---:|---:|---:|---:|"]
        for w in (1, 2):
            x = c[f"workers_{w}"]
            lines.append(f"| {w} | {x['wall_s']} | {x['cpu_s']} | {x['peak_rss_mib']} |")
        lines += ["", f"compare.json differences apart from timings: {c['differences']}."]
    if "megatron" in r:
        m = r["megatron"]
        lines += ["", f"## Megatron index of {m['documents']:,} documents ({m['idx_bytes']:,} B, no .bin)",
                  "",
                  "| read s | process wall s | peak RSS MiB | equal |", "|---:|---:|---:|---|",
                  f"| {m['read_s']} | {m['wall_s']} | {m['peak_rss_mib']} | {m['equal']} |"]
    if "summary" in r:
        lines += ["", "## Streaming summary (`StreamLedger`, compiled engine, discard, to exhaustion)", "",
                  "| documents | CPU s | of which generation | CPU s without generation | wall s | "
                  "process CPU s | process wall s | peak RSS MiB | load before | live peak | identity |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for x in r["summary"]:
            lines.append(f"| {x['documents']:,} | {x['summary_cpu_s']} | {x['generation_cpu_s']} | "
                         f"{x['cpu_without_generation_s']} | {x['summary_wall_s']} | {x['cpu_s']} | "
                         f"{x['wall_s']} | {x['peak_rss_mib']} | "
                         f"{x['load_before']} | {x['live_peak']:,} | {x['identity_holds']} |")
    if "parent_peak_rss_mib" in r:
        lines += ["", f"Peak RSS of the benchmark's own process (a floor under every child's figure): "
                  f"{r['parent_peak_rss_mib']} MiB."]
    if r.get("note"):
        lines += ["", str(r["note"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
