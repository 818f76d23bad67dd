"""Benchmark at corpus scale: engines, the audit of 100 M documents, the streaming summary to 1 B, the demo.

Method
------
* Lengths: :func:`packing_theory.corpus.default_length_chunks` — the default
  corpus's length law (body mixture over ``[2, 290,219]``), generated in chunks
  of 2^20 inside the measured process; the time spent generating is measured
  apart and reported (``gen_cpu_s``), never a materialised corpus above 1 M.
* Settings: R = 2049, B = 1000, refill 128, one pass, replay to exhaustion
  (``exhausted="stop"``, no row budget).
* Every measurement runs in a fresh subprocess (``--task``): peak RSS is that
  process's ``ru_maxrss`` (plus its children's for ``--workers``), time is
  ``time.process_time`` (CPU, robust to other load; children included) and
  wall time. Small measurements are repeated (``--repeat``) and reported as
  best and spread (max - min); the 100 M and 1 B runs once (``--big-repeat``).
* Engines (table ``engines``): per policy, events per CPU second of the
  ``reference`` engine on a prefix (50,000 documents), the ``fast`` engine on
  a prefix (1 M) and the ``compiled`` engine on the same prefix and on 10 M
  and 100 M documents; ratios are taken on the common prefix. The compiled
  engine's time excludes length generation (``gen_cpu_s`` is subtracted).
* ``audit``: :func:`packing_theory.audit.audit_lengths` of 100 M documents,
  ``discard``, compiled engine, the compact ledger (all aggregates).
* ``stream``: :class:`packing_theory.audit.stream.StreamLedger` on compiled
  batches at 10 M, 100 M and 1 B documents (peak RSS must stay flat).
* ``demo``: ``packing-theory audit --demo --no-plots`` with ``--engine fast``
  (today's path) and with ``--engine compiled --workers 2``; the two
  ``audit.json`` are compared apart from ``seconds``
  (``benchmarks/diff_audit_json.py``) and must be identical.

Absolute times are provisional (a shared 2-core machine); ratios are taken in
the same run. ``--quick`` runs every part at small sizes (CI smoke: it fails on
a JSON difference or an engine disagreement) and writes nothing.

Run: ``python benchmarks/bench_scale.py`` (full; writes
``benchmarks/results/scale.{json,md}``) or ``python benchmarks/bench_scale.py --quick``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
HERE = Path(__file__).resolve()
POLICIES = ("discard", "continue", "requeue-bos", "segment-first", "random-span")


# --------------------------------------------------------------------------- tasks (in a subprocess)


class TimedChunks:
    """Length chunks whose generation CPU time is measured apart (also used by ``bench_corpus_scale.py``)."""

    def __init__(self, n: int, chunk: int = 1 << 20) -> None:
        from packing_theory.corpus import default_length_chunks

        self._it = default_length_chunks(n, seed=0, chunk=chunk)
        self.cpu = 0.0

    def __iter__(self) -> Iterator[np.ndarray]:
        while True:
            c0 = time.process_time()
            part = next(self._it, None)
            self.cpu += time.process_time() - c0
            if part is None:
                return
            yield part


def _config(policy: str) -> Any:
    import packing_theory as pt

    return pt.PackerConfig(capacity=2049, min_buffer=1000, refill=128, policy=policy)  # type: ignore[arg-type]


def task_replay(engine: str, policy: str, docs: int) -> dict[str, Any]:
    from packing_theory.engine import make_packer
    from packing_theory.engine.batches import LengthChunks

    cfg = _config(policy)
    if engine == "compiled":
        gen = TimedChunks(docs)
        packer: Any = make_packer("compiled", cfg)
        _warm()
        c0, w0 = time.process_time(), time.perf_counter()
        events = sum(len(b) for b in packer.batches(LengthChunks(gen)))
        return {"cpu": time.process_time() - c0 - gen.cpu, "wall": time.perf_counter() - w0,
                "gen_cpu_s": gen.cpu, "events": events}
    lengths = np.concatenate(list(TimedChunks(docs)))
    c0, w0 = time.process_time(), time.perf_counter()
    events = sum(1 for _ in make_packer(engine, cfg).events(lengths))  # type: ignore[arg-type]
    return {"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0, "gen_cpu_s": 0.0,
            "events": events}


def _warm() -> None:
    """Load the compiled kernel (numba's on-disk cache) before timing."""
    from packing_theory.engine import make_packer

    for _ in make_packer("compiled", capacity=8, min_buffer=2).batches([3, 5, 9]):  # type: ignore[union-attr]
        pass


def task_audit(docs: int, policy: str) -> dict[str, Any]:
    from packing_theory.audit import audit_lengths
    from packing_theory.engine.batches import LengthChunks

    gen = TimedChunks(docs)
    _warm()
    c0, w0 = time.process_time(), time.perf_counter()
    agg = audit_lengths(LengthChunks(gen), _config(policy), engine="compiled")
    return {"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0, "gen_cpu_s": gen.cpu,
            "arrived": agg.arrived_sources, "started": agg.started_sources, "rows": agg.rows,
            "identity_holds": agg.mass.identity_holds, "violations": agg.conservation_violations,
            "protected_started": agg.protected.started_members}


def task_stream(docs: int, policy: str) -> dict[str, Any]:
    import packing_theory as pt
    from packing_theory.audit.stream import StreamLedger
    from packing_theory.engine import make_packer
    from packing_theory.engine.batches import LengthChunks

    gen = TimedChunks(docs)
    _warm()
    c0, w0 = time.process_time(), time.perf_counter()
    sl = StreamLedger(2049, 1000)
    pt.feed_all(make_packer("compiled", _config(policy)).stream(LengthChunks(gen)), sl)
    r = sl.result()
    return {"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0, "gen_cpu_s": gen.cpu,
            "arrived": r.summary.consumed_sources, "started": r.summary.sources_started,
            "identity_holds": r.summary.identity_holds(), "live_peak": r.live_peak}


def task_demo(engine: str, workers: int, scale: float, out: str) -> dict[str, Any]:
    from packing_theory.cli import main

    argv = ["audit", "--demo", "--no-plots", "--no-progress", "--engine", engine, "--workers", str(workers),
            "--out", out]
    if scale != 1:
        argv += ["--scale", str(scale)]
    c0, w0 = time.process_time(), time.perf_counter()
    status = main(argv)
    wall = time.perf_counter() - w0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu": time.process_time() - c0 + children.ru_utime + children.ru_stime, "wall": wall,
            "status": status, "json": str(Path(out) / "audit.json"),
            "children_rss_kb": children.ru_maxrss}


TASKS = {"replay": task_replay, "audit": task_audit, "stream": task_stream, "demo": task_demo}


def run_task(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one task in a fresh interpreter; add its peak RSS."""
    proc = subprocess.run([sys.executable, str(HERE), "--task", json.dumps(spec)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"task {spec} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def repeated(spec: dict[str, Any], repeat: int) -> dict[str, Any]:
    """Best (minimum CPU) of ``repeat`` runs, with the CPU and wall spreads."""
    runs = [run_task(spec) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["cpu"])
    cpus = [r["cpu"] for r in runs]
    walls = [r["wall"] for r in runs]
    return {**best, "runs": repeat, "cpu_spread": max(cpus) - min(cpus), "wall_best": min(walls),
            "wall_spread": max(walls) - min(walls), "rss_mb_max": max(r["rss_kb"] for r in runs) / 1024}


# --------------------------------------------------------------------------- the benchmark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, CI smoke; writes nothing")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each small measurement (default 3)")
    parser.add_argument("--big-repeat", type=int, default=1, help="runs of the 100 M and 1 B measurements")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: engines,audit,stream,demo")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite results/scale.md from results/scale.json")
    parser.add_argument("--task", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.render:
        (RESULTS / "scale.md").write_text(render(json.loads((RESULTS / "scale.json").read_text())))
        return 0
    if args.task:
        spec = json.loads(args.task)
        out = TASKS[spec.pop("kind")](**spec)
        out["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps(out))
        return 0
    quick = args.quick
    sizes = {
        "ref_prefix": 5_000 if quick else 50_000,
        "fast_prefix": 50_000 if quick else 1_000_000,
        "compiled": [200_000] if quick else [10_000_000, 100_000_000],
        "audit": 300_000 if quick else 100_000_000,
        "stream": [100_000, 400_000] if quick else [10_000_000, 100_000_000, 1_000_000_000],
        "demo_scale": 0.05 if quick else 1.0,
    }
    if quick and args.policies == ",".join(POLICIES):
        args.policies = "discard,random-span"
    repeat = 1 if quick else args.repeat
    big = 1 if quick else args.big_repeat
    skip = set(filter(None, args.skip.split(",")))
    policies = args.policies.split(",")
    ok = True
    result: dict[str, Any] = {
        "mode": "quick" if quick else "full", "sizes": sizes, "repeat": repeat, "big_repeat": big,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(), "numpy": np.__version__},
    }
    if "engines" not in skip:
        rows = []
        for policy in policies:
            ref = repeated({"kind": "replay", "engine": "reference", "policy": policy,
                            "docs": sizes["ref_prefix"]}, repeat)
            cref = repeated({"kind": "replay", "engine": "compiled", "policy": policy,
                             "docs": sizes["ref_prefix"]}, repeat)
            fast = repeated({"kind": "replay", "engine": "fast", "policy": policy,
                             "docs": sizes["fast_prefix"]}, repeat)
            cfast = repeated({"kind": "replay", "engine": "compiled", "policy": policy,
                              "docs": sizes["fast_prefix"]}, repeat)
            ok &= ref["events"] == cref["events"] and fast["events"] == cfast["events"]
            row: dict[str, Any] = {
                "policy": policy,
                "reference": ref, "compiled_on_reference_prefix": cref, "fast": fast,
                "compiled_on_fast_prefix": cfast,
                "compiled_vs_reference": ref["cpu"] / cfast["cpu"] * cfast["events"] / ref["events"]
                if ref["events"] else None,
                "compiled_vs_fast": fast["cpu"] / cfast["cpu"],
                "fast_vs_reference": (fast["events"] / fast["cpu"]) / (ref["events"] / ref["cpu"]),
                "compiled_at": {},
            }
            for n in sizes["compiled"]:
                spec = {"kind": "replay", "engine": "compiled", "policy": policy, "docs": n}
                row["compiled_at"][str(n)] = repeated(spec, big if n >= 10**8 else repeat)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k == "policy" or k.endswith("vs_fast")}),
                  flush=True)
        result["engines"] = rows
    if "audit" not in skip:
        result["audit"] = repeated({"kind": "audit", "docs": sizes["audit"], "policy": "discard"}, big)
        ok &= result["audit"]["identity_holds"] and result["audit"]["violations"] == 0
        print(json.dumps({"audit": result["audit"]}), flush=True)
    if "stream" not in skip:
        result["stream"] = [repeated({"kind": "stream", "docs": n, "policy": "discard"}, big)
                            for n in sizes["stream"]]
        ok &= all(r["identity_holds"] for r in result["stream"])
        print(json.dumps({"stream": result["stream"]}), flush=True)
    if "demo" not in skip:
        sys.path.insert(0, str(HERE.parent))
        from diff_audit_json import differences

        with tempfile.TemporaryDirectory() as tmp:
            demo = {}
            for label, engine, workers in (("fast", "fast", 1), ("compiled", "compiled", 1),
                                           ("compiled_workers2", "compiled", 2)):
                demo[label] = repeated({"kind": "demo", "engine": engine, "workers": workers,
                                        "scale": sizes["demo_scale"], "out": f"{tmp}/{label}"}, repeat)
            base = json.loads(Path(demo["fast"]["json"]).read_text())
            for label in ("compiled", "compiled_workers2"):
                diff = differences(base, json.loads(Path(demo[label]["json"]).read_text()))
                demo[label]["json_differences"] = len(diff)
                ok &= not diff and demo[label]["status"] == 0
            for label in demo:
                demo[label].pop("json")
            demo["speedup_cpu"] = demo["fast"]["cpu"] / demo["compiled"]["cpu"]
            demo["speedup_wall_workers2"] = demo["fast"]["wall_best"] / demo["compiled_workers2"]["wall_best"]
        result["demo"] = demo
        print(json.dumps({"demo": demo}), flush=True)
    result["ok"] = bool(ok)
    if not quick and not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "scale.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "scale.md").write_text(render(result))
    print("OK" if ok else "FAILED: an engine disagreement or a JSON difference", file=sys.stderr)
    return 0 if ok else 1


def render(r: dict[str, Any]) -> str:
    """The Markdown results page."""
    m = r["machine"]
    lines = ["# Benchmark at scale", "",
             f"Generated by `python benchmarks/bench_scale.py` (Python {m['python']}, numpy {m['numpy']}, "
             f"{m['platform']}). Method: the docstring of `benchmarks/bench_scale.py`. CPU = `process_time`; "
             f"best of {r['repeat']} runs (spread = max - min) for the small measurements, "
             f"{r['big_repeat']} run(s) at 100 M and 1 B. **Absolute times are provisional** (a shared "
             "2-core machine); ratios are from the same run.", ""]
    lines += [f"Note: {n}." for n in r.get("notes", [])] + ([""] if r.get("notes") else [])
    if "engines" in r:
        s = r["sizes"]
        at_n = " | ".join(f"compiled ev/s at {int(n):,}" for n in s["compiled"])
        rss_n = " | ".join(f"peak RSS MiB at {int(n):,}" for n in s["compiled"])
        lines += ["## Engines: events per CPU second (replay to exhaustion, R = 2049, B = 1000, refill 128)",
                  "", f"reference on the first {s['ref_prefix']:,} documents, fast on the first "
                  f"{s['fast_prefix']:,}, compiled on both prefixes and on the full streams; the compiled "
                  "time excludes length generation.", "",
                  "| policy | reference ev/s | fast ev/s | compiled ev/s (fast's prefix) | compiled / fast | "
                  f"compiled / reference | {at_n} | {rss_n} |",
                  "|---|" + "---:|" * (5 + 2 * len(s["compiled"]))]
        for row in r["engines"]:
            at = row["compiled_at"]

            def eps(x: dict[str, Any]) -> str:
                return f"{x['events'] / x['cpu']:,.0f}"

            lines.append(
                f"| {row['policy']} | {eps(row['reference'])} | {eps(row['fast'])} | "
                f"{eps(row['compiled_on_fast_prefix'])} | {row['compiled_vs_fast']:.1f}x | "
                f"{row['compiled_vs_reference']:.0f}x | " + " | ".join(eps(at[str(n)]) for n in s["compiled"])
                + " | " + " | ".join(f"{at[str(n)]['rss_mb_max']:.0f}" for n in s["compiled"]) + " |")
    if "audit" in r:
        a = r["audit"]
        lines += ["", f"## `audit` of {r['sizes']['audit']:,} documents (discard, compiled, to exhaustion)",
                  "", "| CPU s | of which generation | wall s | peak RSS MiB | arrived | started | identity"
                  " |",
                  "|---:|---:|---:|---:|---:|---:|---|",
                  f"| {a['cpu']:.1f} | {a['gen_cpu_s']:.1f} | {a['wall_best']:.1f} | {a['rss_mb_max']:.0f} | "
                  f"{a['arrived']:,} | {a['started']:,} | {a['identity_holds']} |"]
    if "stream" in r:
        lines += ["", "## Streaming summary (`StreamLedger`, compiled batches, discard)", "",
                  "| documents | CPU s | of which generation | wall s | peak RSS MiB | live peak | identity"
                  " |",
                  "|---:|---:|---:|---:|---:|---:|---|"]
        lines += [f"| {x['arrived']:,} | {x['cpu']:.1f} | {x['gen_cpu_s']:.1f} | {x['wall_best']:.1f} | "
                  f"{x['rss_mb_max']:.0f} | {x['live_peak']:,} | {x['identity_holds']} |"
                  for x in r["stream"]]
    if "demo" in r:
        d = r["demo"]
        lines += ["", "## `audit --demo` (3 policies, 20 permutations, evaluation population; no plots)", "",
                  "| run | CPU s (best) | CPU spread | wall s (best) | wall spread | peak RSS MiB | JSON |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for label in ("fast", "compiled", "compiled_workers2"):
            x = d[label]
            same = "-" if label == "fast" else ("identical" if x["json_differences"] == 0
                                               else f"{x['json_differences']} differences")
            rss = max(x["rss_mb_max"], x.get("children_rss_kb", 0) / 1024)  # workers: the largest process
            lines.append(f"| {label} | {x['cpu']:.2f} | {x['cpu_spread']:.2f} | {x['wall_best']:.2f} | "
                         f"{x['wall_spread']:.2f} | {rss:.0f} | {same} |")
        wall1 = d["fast"]["wall_best"] / d["compiled"]["wall_best"]
        lines += ["", "Speed-up of the compiled engine over the fast one: "
                  f"{d['speedup_cpu']:.1f}x in CPU time, "
                  f"{wall1:.1f}x in wall time; with 2 workers {d['speedup_wall_workers2']:.1f}x in wall time "
                  "(CPU includes the workers; on this shared machine the second core was rarely free). "
                  "Peak RSS with workers is the largest process's."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
