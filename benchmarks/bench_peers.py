"""Peers on the columnar path: events per CPU second pure vs columnar, and ``compare`` by engine.

Method
------
Corpus: ``packing_theory.corpus.default_length_chunks(n, seed=0)`` (the
corpus of ``bench_corpus_scale.py``), written once to an ``int64`` ``.npy``.

* ``peers`` (in this process, one peer after the other): for every peer of
  the registry at ``seq_length = 2048`` (``compare``'s default), the CPU
  seconds (``time.process_time``) of its pure Python ``events`` and of its
  ``batches`` (the columnar path with the compiled kernels when numba is
  installed; a peer without columns groups its events), on the same
  ``--documents`` lengths in the same run, each counted to the end; the event
  counts must agree, and the two streams must be equal event for event on the
  first 20,000 documents. One warm-up call on 5,000 documents first (numba's
  cached kernels load).
* ``compare``: ``packing-theory compare --lengths FILE.npy --no-plots
  --workers 2`` with ``--engine fast`` and ``--engine compiled`` on
  ``--compare-documents``, and ``--engine compiled`` alone on
  ``--large-documents`` (with the ``large_pure`` part, ``--engine fast`` on it
  too, and the two reports compared; a later ``large`` run alone keeps that
  result and checks that its report is the same, by a SHA-256 of the report
  apart from timings), each in a fresh process: wall seconds, CPU seconds
  (the child and its workers, from ``os.wait4``), the load average before it.
  The two ``compare.json`` of the same corpus must be equal apart from
  ``seconds`` and ``run``.

Absolute times are provisional (a 2-core machine shared with other jobs; the
load average before each part is recorded); ratios are from the same run.

Run: ``python benchmarks/bench_peers.py`` (writes
``benchmarks/results/peers.{json,md}``); ``--quick`` runs small sizes and
writes nothing; ``--parts peers --peers NAME,...`` measures those peers again
and replaces only their rows (marked with the load before that run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
HERE = Path(__file__).resolve()
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))

from bench_corpus_scale import cli, run_child, write_lengths  # noqa: E402


def peer_rates(lengths: np.ndarray, only: set[str] | None = None,
               options: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Events per CPU second of every peer (or those in ``only``), pure events vs batches, same lengths.

    ``options``: knobs per peer (kept in its row), e.g. a NeMo cut that makes the corpus packable.
    """
    from packing_theory.engine.compiled import compiled_available
    from packing_theory.registry import entries

    out = []
    for name, e in entries().items():
        if e.kind != "peer" or (only is not None and name not in only):
            continue
        knobs = (options or {}).get(name, {})
        packer = e.build(e.capacity_for(e.row_width.admissible(2048)), **knobs)
        row: dict[str, Any] = {"peer": name, "columnar": e.columnar, "compiled": compiled_available()}
        if knobs:
            row["options"] = knobs
        try:
            sum(len(b) for b in packer.batches(lengths[:5000]))
            head = lengths[:20_000]
            row["equal_on_20k"] = list(packer.events(head)) == [ev for b in packer.batches(head)
                                                                 for ev in b.events()]
            t0 = time.process_time()
            pure = sum(1 for _ in packer.events(lengths))
            t1 = time.process_time()
            cols = sum(len(b) for b in packer.batches(lengths))
            t2 = time.process_time()
        except ValueError as exc:  # the framework refuses this corpus
            row["refused"] = str(exc)[:120]
            out.append(row)
            print(json.dumps(row), flush=True)
            continue
        row.update(events=pure, same_count=pure == cols, pure_cpu_s=round(t1 - t0, 3),
                   columnar_cpu_s=round(t2 - t1, 3), pure_events_per_cpu_s=round(pure / (t1 - t0)),
                   columnar_events_per_cpu_s=round(cols / (t2 - t1)), speedup=round((t1 - t0) / (t2 - t1), 1))
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def compare_run(path: Path, engine: str, out: str) -> dict[str, Any]:
    r = run_child(cli("compare", "--lengths", str(path), "--no-plots", "--no-progress", "--workers", "2",
                      "--engine", engine, "--out", out, "--force"))
    r.pop("stdout")
    r["engine"] = engine
    return r


def report_digest(report: dict[str, Any]) -> str:
    """SHA-256 of a ``compare.json`` apart from timings: equal digests, equal reports."""
    import hashlib

    return hashlib.sha256(json.dumps(timeless(report), sort_keys=True).encode()).hexdigest()


def timeless(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: timeless(x) for k, x in v.items() if k not in ("seconds", "run")}
    return [timeless(x) for x in v] if isinstance(v, list) else v


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--compare-documents", type=int, default=1_000_000)
    parser.add_argument("--large-documents", type=int, default=10_000_000)
    parser.add_argument("--parts", default="peers,compare,large",
                        help="comma-separated parts: peers, compare, large, and large_pure (with large: "
                             "the large corpus on --engine fast too, its report compared; over half an "
                             "hour on 2 cores at 10 M documents)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peers", default=None,
                        help="comma-separated peers the peers part measures (default: all); their rows "
                             "replace theirs in the saved results, the other rows are kept")
    parser.add_argument("--peer-options", default="{}", help='JSON knobs per peer for the peers part, e.g. '
                        '\'{"nemo-first_fit": {"max_seq_length": 2049}}\'')
    args = parser.parse_args(argv)
    if args.quick:
        args.documents, args.compare_documents, args.large_documents = 20_000, 5_000, 20_000
    parts = set(args.parts.split(","))
    result: dict[str, Any] = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "python": platform.python_version(), "numpy": np.__version__,
                              "cpus": os.cpu_count(), "platform": platform.platform()}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        files: dict[int, Path] = {}
        sizes = {"peers": args.documents, "compare": args.compare_documents, "large": args.large_documents}
        for n in {sizes[p] for p in parts if p in sizes}:
            files[n] = Path(tmp) / f"lengths_{n}.npy"
            write_lengths(files[n], n)
        if "peers" in parts:
            only = None if args.peers is None else set(args.peers.split(","))
            result["peers"] = {"documents": args.documents, "load_before": round(os.getloadavg()[0], 2),
                               "rows": peer_rates(np.load(files[args.documents]), only,
                                                  json.loads(args.peer_options))}
            ok &= all(r.get("same_count", True) and r.get("equal_on_20k", True)
                      for r in result["peers"]["rows"])
        if "compare" in parts:
            runs, reports = [], []
            for engine in ("compiled", "fast"):
                out = f"{tmp}/compare_{engine}"
                runs.append(compare_run(files[args.compare_documents], engine, out))
                reports.append(json.loads((Path(out) / "compare.json").read_text()))
                print(json.dumps(runs[-1]), flush=True)
            from diff_audit_json import differences

            result["compare"] = {"documents": args.compare_documents, "runs": runs,
                                 "packers": len(reports[0]["packers"]),
                                 "differences": len(differences(timeless(reports[0]), timeless(reports[1])))}
            ok &= result["compare"]["differences"] == 0
        if "large" in parts:
            out = f"{tmp}/compare_large"
            run = compare_run(files[args.large_documents], "compiled", out)
            report = json.loads((Path(out) / "compare.json").read_text())
            result["large"] = {"documents": args.large_documents, "run": run,
                               "packers": len(report["packers"]),
                               "seconds_by_packer": {c["policy"]: round(c["seconds"], 2)
                                                     for c in report["packers"]},
                               "report_sha256": report_digest(report)}
            print(json.dumps(result["large"]), flush=True)
            if "large_pure" in parts:  # the same corpus on the pure Python engine: the same report?
                from diff_audit_json import differences

                pure = compare_run(files[args.large_documents], "fast", f"{tmp}/compare_large_fast")
                pure_report = json.loads((Path(tmp) / "compare_large_fast" / "compare.json").read_text())
                result["large"]["pure"] = {"run": pure, "differences": len(differences(
                    timeless(report), timeless(pure_report))), "report_sha256": report_digest(pure_report)}
                print(json.dumps(result["large"]["pure"]), flush=True)
                ok &= result["large"]["pure"]["differences"] == 0
    if not args.quick:
        RESULTS.mkdir(parents=True, exist_ok=True)
        old = RESULTS / "peers.json"
        previous = json.loads(old.read_text()) if old.exists() else {}
        if args.peers is not None and "peers" in result and "peers" in previous:
            result["peers"] = merged_rows(previous["peers"], result["peers"])
        if "large" in result and "pure" not in result["large"] and "pure" in previous.get("large", {}):
            # an earlier large_pure run of the same corpus: kept, and whether this report is that one
            kept = previous["large"]["pure"]
            result["large"]["pure"] = {**kept, "measured": kept.get("measured", previous.get("generated")),
                                       "same_report": kept.get("report_sha256")
                                       == result["large"]["report_sha256"]}
            ok &= result["large"]["pure"]["same_report"]
        merged = {**previous, **result}
        old.write_text(json.dumps(merged, indent=2) + "\n")
        (RESULTS / "peers.md").write_text(render(merged))
    return 0 if ok else 1


def merged_rows(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """An earlier peers part with the rows measured again replaced (registry order; their load noted)."""
    fresh = {r["peer"]: dict(r, load_before=new["load_before"]) for r in new["rows"]}
    rows = [fresh.pop(r["peer"], r) for r in old["rows"]] + list(fresh.values())
    return {**old, "rows": rows}


def render(r: dict[str, Any]) -> str:
    lines = ["# Peers on the columnar path: events per CPU second, and compare by engine", "",
             f"Generated by `python benchmarks/bench_peers.py` (last part run {r['generated']}; Python "
             f"{r['python']}, numpy {r['numpy']}, {r['cpus']} CPUs, {r['platform']}). Method: the docstring "
             "of `benchmarks/bench_peers.py`. **Absolute times are provisional** (a 2-core machine shared "
             "with other jobs; the load average before each part is given); ratios are from the same run."]
    if "peers" in r:
        p = r["peers"]
        lines += ["", f"## Every peer on {p['documents']:,} documents, pure `events` vs `batches` "
                  f"(load before: {p['load_before']})", "",
                  "| peer | columnar | events | pure CPU s | pure ev/CPU s | batches CPU s "
                  "| batches ev/CPU s | speed-up | equal |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for x in p["rows"]:
            if "refused" in x:
                lines.append(f"| {x['peer']} | {x['columnar']} | refused: {x['refused']} | | | | | | |")
                continue
            again = f" (again, load {x['load_before']})" if "load_before" in x else ""
            again += f" ({json.dumps(x['options'])})" if x.get("options") else ""
            lines.append(f"| {x['peer']}{again} | {x['columnar']} | {x['events']:,} | {x['pure_cpu_s']} | "
                         f"{x['pure_events_per_cpu_s']:,} | {x['columnar_cpu_s']} | "
                         f"{x['columnar_events_per_cpu_s']:,} | {x['speedup']}x | "
                         f"{x['same_count'] and x['equal_on_20k']} |")
    if "compare" in r:
        c = r["compare"]
        lines += ["", f"## `compare --workers 2` of every packer ({c['packers']} columns) on "
                  f"{c['documents']:,} documents, by engine", "",
                  "| engine | wall s | CPU s (with workers) | load before |", "|---|---:|---:|---:|"]
        lines += [f"| {x['engine']} | {x['wall_s']} | {x['cpu_s']} | {x['load_before']} |" for x in c["runs"]]
        lines += ["", f"compare.json differences apart from timings: {c['differences']}."]
    if "large" in r:
        g = r["large"]
        x = g["run"]
        lines += ["", f"## `compare --workers 2 --engine compiled` on {g['documents']:,} documents", "",
                  f"{g['packers']} columns: {x['wall_s']} s wall, {x['cpu_s']} CPU s, load before "
                  f"{x['load_before']}. Seconds per packer (inside its worker):", "",
                  "| packer | s |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in g["seconds_by_packer"].items()]
        if "pure" in g:
            p = g["pure"]["run"]
            when = (f" (run {g['pure']['measured']}; this run's compare.json is the one that run compared: "
                    f"{g['pure']['same_report']})") if "measured" in g["pure"] else ""
            lines += ["", f"The same corpus with `--engine fast` (every packer's pure Python events){when}: "
                      f"{p['wall_s']} s wall, {p['cpu_s']} CPU s, load before {p['load_before']}; "
                      f"compare.json differences apart from timings: {g['pure']['differences']}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
