"""Per-document state out of core: ``audit`` with its per-document table in bounded memory, at any size.

Method
------
* Corpus: ``lognormal(6, 1.3)`` lengths rounded down, clipped at 1 (seed 0,
  drawn in chunks of 2**20), written as an ``int64`` ``.npy`` into the scratch
  directory (``benchmarks/_scratch/`` by default, git-ignored) by a child
  process; every audit reads it memory-mapped (``load_lengths``). The scale
  part takes ``--law default`` too: the package's default corpus law
  (``default_length_chunks``, seed 0), the input of ``bench_corpus_scale.py``.
* Command: ``packing-theory audit --lengths FILE.npy --policy discard --engine
  compiled --rows 10**15 --permutations 0 --no-plots --no-progress`` (R = 2049,
  B = 1000, refill 128, one pass, to exhaustion), with or without
  ``--documents documents.parquet`` / ``documents.csv``.
* A freshly written input is synced and read once by an untimed child before
  the runs that time it.
* Every measurement runs in a fresh process reaped with ``os.wait4``: its own
  CPU time (user + system), its peak RSS (``ru_maxrss``: the mapped input pages
  it touched count), the wall time, the 1-minute load average before and after
  (the machine is shared: wall times are inflated by other jobs, CPU times
  less so). The parent writes nothing large itself (a child's peak RSS starts
  at its parent's), so ``parent_peak_rss_mib`` is a floor under every figure.
* ``documents`` (at ``--documents-size``): the audit without the table, with
  ``documents.parquet`` and with ``documents.csv``, in the same run; the
  ratios are CPU with the table / CPU without it (goal: parquet <= 2x).
* ``json`` (at ``--json-size``): the same audits with today's code — the tree
  of ``--baseline`` (default ``e5a9145``, the main this work started from)
  exported with ``git archive`` — and with
  this tree, without the table and with ``documents.parquet``; the
  ``audit.json`` files are compared with ``diff_audit_json.differences``
  (timings and run metadata aside: goal 0 differences), and the two Parquet
  files column by column on the columns both have. The baseline's audit with
  the table is given ``--baseline-timeout`` seconds (its report's
  never-trained list built a whole column per document shown); past it the
  run is reported as not finished and the JSON without the table is compared.
* ``scale`` (at each ``--scale-sizes``): the audit with ``documents.parquet``
  (and, for sizes at most ``--no-table-max``, without the table; and with the
  baseline's code, without the table, at ``--baseline-sizes``), so that the
  time against today's is measured in the same run: at a baseline size the
  audits without the table of this code and today's alternate ``--pairs``
  times each (the median CPU ratio is given). Goals: 100 M documents
  under 1 GiB peak RSS and no more CPU than today's audit; 1 B documents under
  4 GiB. The scratch files are deleted after each size.

Run: ``python benchmarks/bench_docstore.py`` (writes
``benchmarks/results/docstore.{json,md}``); ``--quick`` runs small sizes and
writes nothing; ``--parts documents,json`` picks parts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()
RESULTS = ROOT / "benchmarks" / "results"
SCRATCH = ROOT / "benchmarks" / "_scratch"
PARTS = ("documents", "json", "scale")
sys.path.insert(0, str(HERE.parent))


def run_child(argv: list[str], code: Path = ROOT, timeout: float | None = None) -> dict[str, Any]:
    """``argv`` in a fresh process with ``code`` first on ``PYTHONPATH``: its CPU s, peak RSS, wall s and
    the load average."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(code)
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        w0 = time.perf_counter()
        # cwd: ``python -m`` puts the working directory first on sys.path, before PYTHONPATH
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True, cwd=code)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if timeout is not None and time.perf_counter() - w0 > timeout:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.2)
        wall = time.perf_counter() - w0
        code_ = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if not timed_out and code_ not in (0, 1):
        raise RuntimeError(f"{argv} failed ({code_}):\n{stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "user_s": round(usage.ru_utime, 2), "sys_s": round(usage.ru_stime, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "status": code_, "timed_out": timed_out,
            "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
            "stdout": stdout.strip()}


def write_lengths(path: str, n: int, law: str = "lognormal") -> None:
    """``n`` lengths into an int64 ``.npy``, chunk by chunk (chunks of 2**20, seed 0): ``lognormal``
    (6, 1.3), or ``default`` (the package's default corpus law, ``default_length_chunks``: the input of
    ``bench_corpus_scale.py``, on which today's 24 s 100 M-document audit was measured)."""
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.int64, shape=(n,))
    if law == "default":
        from packing_theory.corpus import default_length_chunks

        pos = 0
        for part in default_length_chunks(n, seed=0, chunk=1 << 20):
            arr[pos : pos + part.size] = part
            pos += part.size
            arr.flush()
    else:
        rng = np.random.default_rng(0)
        for lo in range(0, n, 1 << 20):
            m = min(1 << 20, n - lo)
            arr[lo : lo + m] = np.maximum(1, rng.lognormal(6.0, 1.3, m)).astype(np.int64)
            arr.flush()
    del arr


def audit(lengths: Path, out: Path, documents: str | None, code: Path = ROOT,
          timeout: float | None = None) -> dict[str, Any]:
    argv = [sys.executable, "-m", "packing_theory.cli", "audit", "--lengths", str(lengths), "--policy",
            "discard", "--engine", "compiled", "--rows", str(10**15), "--permutations", "0", "--no-plots",
            "--no-progress", "--force", "--out", str(out)]
    if documents:
        argv += ["--documents", documents]
    r = run_child(argv, code, timeout)
    r.pop("stdout")
    if not r["timed_out"]:
        report = json.loads((out / "audit.json").read_text())
        if "packers" in report:  # the report model since the audit runs on measure()
            run = report["packers"][0]
            stop = run["horizon"]["reason"]
        else:  # today's code
            run = report["policies"][0]
            stop = run["stop_reason"]
        r.update(stop_reason=stop, rows=run["rows"], identity=run["mass"]["identity_holds"])
        if documents:
            r["documents_mib"] = round((out / documents).stat().st_size / 2**20, 1)
    r["documents_file"] = documents
    return r


def export_tree(ref: str, into: Path) -> Path:
    """The tree of ``ref`` (a commit of this repository) as files under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def warm(scratch: Path, code: Path) -> None:
    """Load (compile and cache) the numba kernels of ``code`` once, on 20,000 documents."""
    small = scratch / "warm_lengths.npy"
    if not small.exists():
        write_lengths(str(small), 20_000)
    run_child([sys.executable, "-m", "packing_theory.cli", "audit", "--lengths", str(small), "--policy",
               "discard", "--engine", "compiled", "--permutations", "0", "--no-plots", "--no-progress",
               "--force", "--out", str(scratch / "warm"), "--documents", "documents.parquet"], code)


def parquet_differences(a: Path, b: Path) -> dict[str, Any]:
    """Rows and the columns both files hold, compared in row groups."""
    import pyarrow.parquet as pq

    fa, fb = pq.ParquetFile(a), pq.ParquetFile(b)
    common = [c for c in fa.schema_arrow.names if c in fb.schema_arrow.names and c != "run"]
    it_b = fb.iter_batches(batch_size=1 << 18, columns=common)
    differ: dict[str, int] = {}
    for ba in fa.iter_batches(batch_size=1 << 18, columns=common):
        bb = next(it_b)
        for c in common:
            if not ba.column(c).equals(bb.column(c)):
                differ[c] = differ.get(c, 0) + 1
    return {"rows": [fa.metadata.num_rows, fb.metadata.num_rows], "columns_compared": common,
            "columns_differing": differ}


def prime(lengths: Path) -> None:
    """Read a freshly written input once, in a child, so that no timed run pays for its write-back."""
    run_child([sys.executable, str(HERE), "--prime", str(lengths)])


def part_documents(n: int, scratch: Path) -> dict[str, Any]:
    lengths = scratch / f"lengths_{n}.npy"
    run_child([sys.executable, str(HERE), "--write", str(lengths), str(n)])
    prime(lengths)
    warm(scratch, ROOT)
    out: dict[str, Any] = {"documents": n, "runs": [], "commit": _head()}
    for documents in (None, "documents.parquet", "documents.csv"):
        r = audit(lengths, scratch / "documents_run", documents)
        out["runs"].append(r)
        print(json.dumps(r), flush=True)
    base = out["runs"][0]["cpu_s"]
    out["ratio_parquet"] = round(out["runs"][1]["cpu_s"] / base, 2)
    out["ratio_csv"] = round(out["runs"][2]["cpu_s"] / base, 2)
    lengths.unlink()
    return out


def part_json(n: int, scratch: Path, baseline: str, timeout: float) -> dict[str, Any]:
    from diff_audit_json import differences

    lengths = scratch / f"lengths_{n}.npy"
    run_child([sys.executable, str(HERE), "--write", str(lengths), str(n)])
    prime(lengths)
    old = export_tree(baseline, scratch / "baseline")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", baseline], capture_output=True, text=True)
    warm(scratch, old)
    warm(scratch, ROOT)
    out: dict[str, Any] = {"documents": n, "baseline": baseline, "baseline_commit": head.stdout.strip(),
                           "commit": _head()}
    for documents in (None, "documents.parquet"):
        key = "table" if documents else "no_table"
        today = audit(lengths, scratch / f"today_{key}", documents, old, timeout if documents else None)
        new = audit(lengths, scratch / f"new_{key}", documents)
        out[key] = {"today": today, "new": new}
        if not today["timed_out"]:
            a, b = (json.loads((scratch / f"{w}_{key}" / "audit.json").read_text()) for w in ("today", "new"))
            diff = differences(a, b)
            out[key]["json_differences"] = len(diff)
            out[key]["json_difference_paths"] = diff[:20]
        if documents and not today["timed_out"]:
            out[key]["parquet"] = parquet_differences(scratch / f"today_{key}" / documents,
                                                      scratch / f"new_{key}" / documents)
        print(json.dumps(out[key]), flush=True)
    shutil.rmtree(old, ignore_errors=True)
    lengths.unlink()
    return out


def part_scale(sizes: list[int], scratch: Path, baseline: str, no_table_max: int,
               baseline_sizes: list[int], pairs: int = 1, law: str = "lognormal") -> list[dict[str, Any]]:
    old = export_tree(baseline, scratch / "baseline")
    rows = []
    for n in sizes:
        lengths = scratch / f"lengths_{n}.npy"
        t0 = time.perf_counter()
        run_child([sys.executable, str(HERE), "--write", str(lengths), str(n), "--law", law])
        write_s = round(time.perf_counter() - t0, 1)
        prime(lengths)
        warm(scratch, ROOT)
        entry: dict[str, Any] = {"documents": n, "law": law, "write_input_s": write_s,
                                 "df_before": _df(scratch), "commit": _head()}
        entry["table"] = audit(lengths, scratch / "scale_table", "documents.parquet")
        print(json.dumps(entry), flush=True)
        shutil.rmtree(scratch / "scale_table", ignore_errors=True)
        if n in baseline_sizes:  # this code and today's without the table, alternated, ``pairs`` times each
            warm(scratch, old)
            entry["no_table_runs"], entry["today_runs"] = [], []
            for _ in range(pairs):
                entry["no_table_runs"].append(audit(lengths, scratch / "scale_plain", None))
                entry["today_runs"].append(audit(lengths, scratch / "scale_today", None, old))
                print(json.dumps([entry["no_table_runs"][-1], entry["today_runs"][-1]]), flush=True)
            entry["no_table"], entry["today_no_table"] = entry["no_table_runs"][0], entry["today_runs"][0]
            new_cpu = sorted(x["cpu_s"] for x in entry["no_table_runs"] if x["cpu_s"] is not None)
            old_cpu = sorted(x["cpu_s"] for x in entry["today_runs"] if x["cpu_s"] is not None)
            if new_cpu and old_cpu:  # a run past its timeout has no CPU time
                entry["cpu_ratio_median"] = round(new_cpu[len(new_cpu) // 2] / old_cpu[len(old_cpu) // 2], 3)
        elif n <= no_table_max:
            entry["no_table"] = audit(lengths, scratch / "scale_plain", None)
            print(json.dumps(entry["no_table"]), flush=True)
        lengths.unlink()
        rows.append(entry)
    shutil.rmtree(old, ignore_errors=True)
    return rows


def _head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def _df(path: Path) -> str:
    st = os.statvfs(path)
    return f"{st.f_bavail * st.f_frsize / 2**30:.1f} GiB free"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes; writes nothing")
    p.add_argument("--parts", default=",".join(PARTS))
    p.add_argument("--documents-size", type=int, default=10_000_000)
    p.add_argument("--json-size", type=int, default=10_000_000)
    p.add_argument("--scale-sizes", default="100000000,1000000000")
    p.add_argument("--no-table-max", type=int, default=100_000_000)
    p.add_argument("--baseline-sizes", default="100000000")
    p.add_argument("--pairs", type=int, default=3,
                   help="runs of this code and today's, alternated, at each baseline size (no table)")
    p.add_argument("--baseline", default="e5a9145",
                   help="the commit whose code is today's (default: where this work branched from main)")
    p.add_argument("--baseline-timeout", type=float, default=1800.0)
    p.add_argument("--scratch", default=str(SCRATCH))
    p.add_argument("--update", action="store_true", help="keep the parts of results/docstore.json not run")
    p.add_argument("--write", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--law", choices=("lognormal", "default"), default="lognormal",
                   help="the length law of the scale part's inputs (the other parts: lognormal)")
    p.add_argument("--prime", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.pairs < 1:
        p.error(f"--pairs must be at least 1, got {args.pairs}")
    if args.write:
        write_lengths(args.write[0], int(args.write[1]), args.law)
        return 0
    if args.prime:
        os.sync()
        from packing_theory.lengths import load_lengths, release_pages

        arr = load_lengths(args.prime)
        for lo in range(0, arr.size, 1 << 22):
            part = arr[lo : lo + (1 << 22)]
            int(part.sum())
            release_pages(part)
        return 0
    parts = set(args.parts.split(","))
    if args.quick:
        args.documents_size, args.json_size, args.scale_sizes = 200_000, 200_000, "300000"
        args.no_table_max, args.baseline_sizes = 300_000, "300000"
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "method": __doc__, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "numpy": np.__version__, "cpus": os.cpu_count()},
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
    }
    if "documents" in parts:
        result["documents"] = part_documents(args.documents_size, scratch)
    if "json" in parts:
        result["json"] = part_json(args.json_size, scratch, args.baseline, args.baseline_timeout)
    if "scale" in parts:
        sizes = [int(v) for v in args.scale_sizes.split(",") if v]
        baseline_sizes = [int(v) for v in args.baseline_sizes.split(",") if v]
        result["scale"] = part_scale(sizes, scratch, args.baseline, args.no_table_max, baseline_sizes,
                                     args.pairs, args.law)
    for leftover in ("documents_run", "warm", "today_table", "new_table", "today_no_table", "new_no_table",
                     "scale_plain", "scale_today"):
        shutil.rmtree(scratch / leftover, ignore_errors=True)
    (scratch / "warm_lengths.npy").unlink(missing_ok=True)
    result["parent_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.quick:
        print(json.dumps(result, indent=1)[:4000])
        return 0
    path = RESULTS / "docstore.json"
    if args.update and path.exists():  # the parts not run, and the scale sizes not run, are kept
        before = json.loads(path.read_text())
        if "scale" in result and "scale" in before:
            def key(e: dict[str, Any]) -> tuple[str, int]:
                return e.get("law", "lognormal"), e["documents"]

            ran = {key(e) for e in result["scale"]}
            kept = [e for e in before["scale"] if key(e) not in ran]
            result["scale"] = sorted(kept + result["scale"], key=key, reverse=False)
        result = {**before, **result}
    path.write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "docstore.md").write_text(render(result))
    return 0


def render(r: dict[str, Any]) -> str:
    lines = ["# Per-document state out of core", "",
             f"Generated by `python benchmarks/bench_docstore.py` (commit {r.get('commit', '?')[:10]}, "
             f"started {r['started']}; Python {r['machine']['python']}, numpy {r['machine']['numpy']}, "
             f"{r['machine']['cpus']} CPUs, {r['machine']['platform']}). Method: the docstring of "
             "`benchmarks/bench_docstore.py`. The machine is shared: the 1-minute load average before and "
             "after each run is given; CPU seconds are the process's own (user + system), ratios are "
             "taken within one run.", ""]

    def row(label: str, x: dict[str, Any]) -> str:
        if x.get("timed_out"):
            return f"| {label} | not finished (killed at {x['wall_s']} s wall) | | | | | |"
        return (f"| {label} | {x['cpu_s']} | {x['user_s']} / {x['sys_s']} | {x['wall_s']} | "
                f"{x['peak_rss_mib']} | {x['load_before']} / {x['load_after']} | "
                f"{x.get('documents_mib', '-')} |")

    head = ["| run | CPU s | user / sys s | wall s | peak RSS MiB | load before / after | file MiB |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    if "documents" in r:
        d = r["documents"]
        at = f" (at {d['commit'][:7]})" if d.get("commit") else ""
        lines += [f"## `audit --documents` at {d['documents']:,} documents{at}", "", *head]
        for x in d["runs"]:
            lines.append(row(x["documents_file"] or "no table", x))
        lines += ["", f"CPU with the table / without: parquet {d['ratio_parquet']}x, csv {d['ratio_csv']}x.",
                  ""]
    if "json" in r:
        j = r["json"]
        at = f" (at {j['commit'][:7]})" if j.get("commit") else ""
        lines += [f"## The report against today's code at {j['documents']:,} documents{at}", "",
                  f"Today's code: `{j['baseline']}` at {j['baseline_commit'][:10]}.", "", *head]
        for key, label in (("no_table", "no table"), ("table", "documents.parquet")):
            lines.append(row(f"today, {label}", j[key]["today"]))
            lines.append(row(f"new, {label}", j[key]["new"]))
        for key, label in (("no_table", "without the table"), ("table", "with documents.parquet")):
            if "json_differences" in j[key]:
                lines.append(f"\naudit.json differences {label} (timings and run metadata aside): "
                             f"{j[key]['json_differences']}.")
            if "parquet" in j[key]:
                pq_ = j[key]["parquet"]
                lines.append(f"documents.parquet: rows {pq_['rows'][0]:,} vs {pq_['rows'][1]:,}; "
                             f"{len(pq_['columns_compared'])} common columns compared, differing: "
                             f"{pq_['columns_differing'] or 'none'}.")
        lines.append("")
    if "scale" in r:
        lines += ["## Scale: memory-mapped int64 `.npy`, compiled engine, to exhaustion", "",
                  "| documents | run | CPU s | user / sys s | wall s | peak RSS MiB | load before / after | "
                  "file MiB |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
        ratios = []
        for e in r["scale"]:
            tag = f" ({e['label']})" if e.get("label") else ""
            tag += f" ({e.get('law', 'lognormal')}{', at ' + e['commit'][:7] if e.get('commit') else ''})"
            if "table" in e:
                lines.append(f"| {e['documents']:,}{tag} " + row("documents.parquet", e["table"]))
            if "no_table_runs" in e:
                for i, (new, old) in enumerate(zip(e["no_table_runs"], e["today_runs"], strict=True), 1):
                    lines.append(f"| {e['documents']:,}{tag} " + row(f"no table, run {i}", new))
                    lines.append(f"| {e['documents']:,}{tag} " + row(f"today's code, no table, run {i}", old))
                ratios.append(f"{e['documents']:,} documents{tag}: median CPU of this code / today's "
                              f"{e.get('cpu_ratio_median', '-')}x ({len(e['no_table_runs'])} runs each, "
                              "alternated)")
            else:
                for key, label in (("no_table", "no table"), ("today_no_table", "today's code, no table")):
                    if key in e:
                        lines.append(f"| {e['documents']:,}{tag} " + row(label, e[key]))
        lines += ["", *(f"{x}." for x in ratios), ""]
    if r.get("note"):
        lines += [str(r["note"]), ""]
    lines.append(f"Peak RSS of the benchmark's own process: {r.get('parent_peak_rss_mib')} MiB.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
