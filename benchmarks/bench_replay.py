"""Benchmark: the whole ``packing-theory replay --json`` process, fast engine against the naive reference.

Method
------
* Stream: the first ``--docs`` (default 135,026) lengths of
  ``benchmarks/bench_engine.py``'s ``heavy_tailed(200_000, seed=0)`` (its
  default stream: lognormal body, ~1.5 % Pareto tail above R), written to a
  temporary ``.npy``. At the defaults it is 104,499,745 tokens and replays into
  36,052 rows (``--capacity 2049 --min-buffer 1000``, policy ``discard``, refill
  128, stop when the stream can no longer refill to B).
* Cases, each a fresh ``python`` process with ``PYTHONPATH`` set to the
  checkout measured and its working directory a temporary folder:

  1. ``python -m packing_theory.cli replay --lengths F --json`` (the fast
     engine, the default);
  2. the same with ``--engine reference`` (the naive reference: a linear scan
     of the buffer per selection);
  3. ``replay --json`` on a 2,000-document file (the fixed cost: start-up,
     imports, reading, writing);
  4. ``python -c "import numpy"`` (the floor every case pays).

  ``--repeats`` rounds (default 5); within a round every case runs once on
  every checkout, in that order, so that all of them see the same load.
* CPU = the child's user + system seconds (``os.wait4``), its peak RSS
  (``ru_maxrss``) and wall seconds; the table gives the median and the minimum
  of each case. Linux carries the high-water RSS of the forking process into
  the child's ``ru_maxrss``, so the measuring process imports no numpy (a
  child writes the streams): what it adds is its own ~10 MiB. The headline
  ratio is reference / fast of the medians (and of the minima), measured in
  the same run.
* Bytecode: ``python -m compileall -q ROOT/packing_theory`` runs before the
  timings, so that every child reads cached bytecode as an installed package
  does (with ``PYTHONDONTWRITEBYTECODE`` set, a checkout without
  ``__pycache__`` would recompile every module in every child and charge
  that to the start-up).
* Equality: both engines' JSON documents are compared, ``seconds`` (wall time
  inside the command) removed; the run fails if they differ.
* The load average is recorded before and after.

``--baseline ROOT`` adds a second checkout (e.g. ``git archive COMMIT | tar -x
-C ROOT``) measured in the same rounds; the results then also give baseline /
this checkout for each case.

Run: ``python benchmarks/bench_replay.py [--repeats 5] [--baseline ROOT --baseline-note TEXT]``;
results go to ``benchmarks/results/replay.{json,md}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
HERE = Path(__file__).resolve().parents[1]
STREAM_DOCS = 200_000
"""The generator's stream length: its first ``--docs`` values do not depend on it once it is at
least three 65,536-value chunks (``heavy_tailed`` draws chunk by chunk)."""


def write_streams(directory: str, docs: int) -> dict[str, Any]:
    """Write ``lengths.npy`` (the first ``docs`` of ``heavy_tailed(200_000, seed=0)``) and ``small.npy``
    (2,000 lengths) into ``directory``; describe the stream. Runs in a child (it imports numpy)."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_engine import heavy_tailed

    values = itertools.islice(heavy_tailed(max(docs, STREAM_DOCS), seed=0), docs)
    lengths = np.fromiter(values, np.int64, docs)
    np.save(Path(directory) / "lengths.npy", lengths)
    np.save(Path(directory) / "small.npy", np.random.default_rng(0).integers(1, 200, 2000).astype(np.int64))
    return {"docs": docs, "tokens": int(lengths.sum()), "mean": round(float(lengths.mean()), 1),
            "longer_than_R": int((lengths > 2049).sum()),
            "generator": f"first {docs} of bench_engine.heavy_tailed({max(docs, STREAM_DOCS)}, seed=0)"}


def cases(lengths: str, small: str) -> dict[str, list[str]]:
    """Each case's command line after ``python``."""
    replay = ["-m", "packing_theory.cli", "replay", "--json"]
    return {
        "replay --json (fast)": [*replay, "--lengths", lengths],
        "replay --json --engine reference": [*replay, "--lengths", lengths, "--engine", "reference"],
        "replay --json (2,000 documents)": [*replay, "--lengths", small],
        "python -c 'import numpy'": ["-c", "import numpy"],
    }


def run_once(root: Path, argv: list[str]) -> dict[str, Any]:
    """CPU seconds (user + system), peak RSS (KiB), wall seconds and standard output of one process."""
    import time

    env = dict(os.environ, PYTHONPATH=str(root))
    with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr is not None else ""
        if code != 0:
            raise RuntimeError(f"{argv} failed in {root} ({code}): {err[-500:]}")
        out.seek(0)
        text = out.read().decode()
    return {"cpu": usage.ru_utime + usage.ru_stime, "rss_kib": usage.ru_maxrss, "wall": wall, "stdout": text}


def summary_of(text: str) -> dict[str, Any]:
    """A replay's JSON without ``seconds`` (the wall time inside the command)."""
    doc: dict[str, Any] = json.loads(text)
    doc.pop("seconds", None)
    return doc


def measure(roots: dict[str, Path], repeats: int, docs: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every case on every checkout, interleaved; the stream's description."""
    for root in roots.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "packing_theory")], check=True,
                       stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as d:
        made = subprocess.run([sys.executable, __file__, "--write-streams", d, "--docs", str(docs)],
                              check=True, capture_output=True, text=True)
        described = json.loads(made.stdout)
        table = cases(str(Path(d) / "lengths.npy"), str(Path(d) / "small.npy"))
        samples: dict[str, dict[str, list[dict[str, Any]]]] = {r: {c: [] for c in table} for r in roots}
        for _ in range(repeats):
            for case, argv in table.items():
                for name, root in roots.items():
                    samples[name][case].append(run_once(root, argv))
    out: dict[str, Any] = {}
    for name, root in roots.items():
        rows: dict[str, Any] = {}
        for case, values in samples[name].items():
            cpu = [v["cpu"] for v in values]
            rows[case] = {"cpu_s_median": round(statistics.median(cpu), 3), "cpu_s_min": round(min(cpu), 3),
                          "wall_s_median": round(statistics.median(v["wall"] for v in values), 3),
                          "peak_rss_mib": round(max(v["rss_kib"] for v in values) / 1024, 1),
                          "cpu_s_all": [round(c, 3) for c in cpu]}
        fast = [summary_of(v["stdout"]) for v in samples[name]["replay --json (fast)"]]
        ref = [summary_of(v["stdout"]) for v in samples[name]["replay --json --engine reference"]]
        same = all(f == fast[0] for f in fast) and all(r == fast[0] for r in ref)
        f, r = rows["replay --json (fast)"], rows["replay --json --engine reference"]
        out[name] = {"root": str(root), "cases": rows, "identical_json": same, "summary": fast[0],
                     "ratio_median": round(r["cpu_s_median"] / f["cpu_s_median"], 1),
                     "ratio_min": round(r["cpu_s_min"] / f["cpu_s_min"], 1)}
    return out, described


def markdown(doc: dict[str, Any]) -> str:
    names = list(doc["checkouts"])
    s = doc["stream"]
    here = doc["checkouts"][names[-1]]
    lines = ["# Whole-process `replay --json`: fast engine against the naive reference", "",
             f"**reference / fast = {here['ratio_median']}×** (CPU, medians; {here['ratio_min']}× of the "
             f"minima), same stream, same run, {doc['repeats']} interleaved rounds; identical JSON (but "
             f"`seconds`): {here['identical_json']}.", "",
             f"Stream: {s['generator']}: {s['docs']:,} documents, {s['tokens']:,} tokens (mean "
             f"{s['mean']}), {s['longer_than_R']:,} longer than R = 2049; replayed with the defaults "
             f"(`--capacity 2049 --min-buffer 1000`, discard, refill 128) into "
             f"{here['summary']['rows']:,} rows.", "",
             "Method: see the docstring of `benchmarks/bench_replay.py`. CPU = user + system seconds of the "
             "child (`os.wait4`), median (minimum); peak RSS of the child. "
             f"Python {doc['python']}, {doc['cpus']} CPUs, load average {doc['load_before']} before and "
             f"{doc['load_after']} after (a shared machine: absolute times are provisional, the ratios are "
             "measured under the same load).", ""]
    if doc.get("baseline_note"):
        lines += [f"Baseline: {doc['baseline_note']}", ""]
    head = "| case | " + " | ".join(f"{n}: CPU s | {n}: peak RSS MiB" for n in names)
    head += f" | {names[0]} / {names[1]} |" if len(names) == 2 else " |"
    lines += [head, "|---|" + "---:|---:|" * len(names) + ("---:|" if len(names) == 2 else "")]
    for case in here["cases"]:
        cells = []
        for n in names:
            r = doc["checkouts"][n]["cases"][case]
            cells.append(f"{r['cpu_s_median']:.3f} ({r['cpu_s_min']:.3f}) | {r['peak_rss_mib']:.1f}")
        ratio = ""
        if len(names) == 2:
            a, b = (doc["checkouts"][n]["cases"][case]["cpu_s_median"] for n in names)
            ratio = f" {a / b:.1f}× |" if b else " – |"
        lines.append(f"| {case} | " + " | ".join(cells) + " |" + ratio)
    lines += ["", "| checkout | reference / fast (medians) | (minima) | identical JSON |",
              "|---|---:|---:|---|"]
    lines += [f"| {n} | {doc['checkouts'][n]['ratio_median']}× | {doc['checkouts'][n]['ratio_min']}× | "
              f"{doc['checkouts'][n]['identical_json']} |" for n in names]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=135_026)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--baseline", type=Path, default=None, help="a second checkout measured in the same run")
    p.add_argument("--baseline-note", default="", help="what the baseline checkout is (into the results)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--write-streams", default=None, help=argparse.SUPPRESS)  # the child that writes them
    a = p.parse_args()
    if a.write_streams is not None:
        print(json.dumps(write_streams(a.write_streams, a.docs)))
        return 0
    roots = {"this checkout": HERE}
    if a.baseline is not None:
        roots = {"baseline": a.baseline.resolve(), "this checkout": HERE}
    load_before = [round(x, 2) for x in os.getloadavg()]
    found, described = measure(roots, a.repeats, a.docs)
    doc = {"python": platform.python_version(), "cpus": os.cpu_count(), "repeats": a.repeats,
           "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()],
           "stream": described, "checkouts": found, "baseline_note": a.baseline_note}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "replay.json").write_text(json.dumps(doc, indent=2) + "\n")
    (a.out / "replay.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0 if all(c["identical_json"] for c in found.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
