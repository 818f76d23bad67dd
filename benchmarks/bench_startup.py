"""Benchmark: the command line's start-up cost (CPU seconds and modules of fresh processes).

Method
------
Each case runs ``--repeats`` times (default 9) as a fresh ``python`` process
with ``PYTHONPATH`` set to the checkout measured; its CPU time is the child's
user + system time (``os.wait4``'s ``ru_utime + ru_stime``) and its peak RSS
``ru_maxrss``. The table reports the median and the minimum of each case:

1. ``python -c pass`` — the interpreter alone (the floor);
2. ``import packing_theory``;
3. ``packing-theory --help`` (``python -m packing_theory.cli --help``);
4. ``packing-theory audit --help``;
5. ``packing-theory replay --lengths F --capacity 64 --min-buffer 8 --json`` on a
   small stream (2,000 documents): what a short command costs end to end;

and, in one more child each, the number of modules loaded after
``build_parser()`` and after ``--help``.

``--baseline ROOT`` measures a second checkout (e.g. the commit before the
option table, extracted with ``git archive COMMIT | tar -x -C ROOT``) in the same
run, its cases interleaved with this checkout's so that both see the same load;
the results then give the ratio baseline / this checkout. The load average is
recorded before and after.

Run: ``python benchmarks/bench_startup.py [--baseline ROOT] [--repeats N]``; results go to
``benchmarks/results/startup.{json,md}``.
"""

from __future__ import annotations

import argparse
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

COUNT = ("import sys, packing_theory.cli as c\n{body}\n"
         "print(len(sys.modules), len([m for m in sys.modules if m.startswith('packing_theory')]), "
         "int('numpy' in sys.modules))")


def cases(lengths: str) -> dict[str, list[str]]:
    """Each case's command line after ``python``."""
    return {
        "python -c pass": ["-c", "pass"],
        "import packing_theory": ["-c", "import packing_theory"],
        "packing-theory --help": ["-m", "packing_theory.cli", "--help"],
        "packing-theory audit --help": ["-m", "packing_theory.cli", "audit", "--help"],
        "replay --json (2,000 documents)": ["-m", "packing_theory.cli", "replay", "--lengths", lengths,
                                            "--capacity", "64", "--min-buffer", "8", "--json"],
    }


def run_once(root: Path, argv: list[str]) -> tuple[float, int]:
    """CPU seconds (user + system) and peak RSS (KiB) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=str(root))
    with tempfile.TemporaryDirectory() as cwd:  # outside any checkout: -m imports from PYTHONPATH
        proc = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr is not None else ""
        if proc.returncode != 0:
            raise RuntimeError(f"{argv} failed in {root} ({proc.returncode}): {err[-500:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def modules(root: Path, body: str) -> dict[str, int]:
    """Modules loaded (all, the package's, numpy: 0/1) after ``body`` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(root))
    code = COUNT.format(body=body)
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    total, ours, numpy = (int(x) for x in out.split())
    return {"modules": total, "packing_theory_modules": ours, "numpy": numpy}


def measure(roots: dict[str, Path], repeats: int) -> dict[str, Any]:
    """Every case on every checkout, interleaved."""
    import numpy as np

    with tempfile.TemporaryDirectory() as d:
        lengths = str(Path(d) / "lengths.npy")
        np.save(lengths, np.random.default_rng(0).integers(1, 200, 2000).astype(np.int64))
        table = cases(lengths)
        samples: dict[str, dict[str, list[tuple[float, int]]]] = {r: {c: [] for c in table} for r in roots}
        for _ in range(repeats):
            for case, argv in table.items():
                for name, root in roots.items():
                    samples[name][case].append(run_once(root, argv))
    out: dict[str, Any] = {}
    for name, root in roots.items():
        rows = {}
        for case, values in samples[name].items():
            cpu = [v[0] for v in values]
            rows[case] = {"cpu_s_median": round(statistics.median(cpu), 3), "cpu_s_min": round(min(cpu), 3),
                          "peak_rss_mib": round(max(v[1] for v in values) / 1024, 1)}
        help_body = ("import contextlib, io\n"
                     "with contextlib.redirect_stdout(io.StringIO()):\n    c.main(['--help'])")
        out[name] = {"root": str(root), "cases": rows,
                     "after_build_parser": modules(root, "c.build_parser()"),
                     "after_help": modules(root, help_body)}
    return out


def markdown(doc: dict[str, Any]) -> str:
    names = list(doc["checkouts"])
    lines = ["# Start-up cost of the command line", "",
             f"{doc['repeats']} fresh processes per case and checkout, interleaved; CPU = user + system "
             f"seconds of the child (`os.wait4`); median (minimum). Python {doc['python']}, "
             f"{doc['cpus']} CPUs, "
             f"load average {doc['load_before']} before and {doc['load_after']} after.", ""]
    if doc.get("baseline_note"):
        lines += [f"Baseline: {doc['baseline_note']}", ""]
    head = "| case | " + " | ".join(f"{n}: CPU s" for n in names) + (
        f" | {names[0]} / {names[1]} |" if len(names) == 2 else " |")
    lines += [head, "|---|" + "---:|" * (len(names) + (len(names) == 2))]
    for case in doc["checkouts"][names[0]]["cases"]:
        cells = []
        for n in names:
            r = doc["checkouts"][n]["cases"][case]
            cells.append(f"{r['cpu_s_median']:.3f} ({r['cpu_s_min']:.3f})")
        ratio = ""
        if len(names) == 2:
            a, b = (doc["checkouts"][n]["cases"][case]["cpu_s_median"] for n in names)
            ratio = f" {a / b:.1f}× |" if b else " – |"
        lines.append(f"| {case} | " + " | ".join(cells) + " |" + ratio)
    lines += ["", "| modules loaded | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for key in ("after_build_parser", "after_help"):
        counts = [doc["checkouts"][n][key] for n in names]
        cells = [f"{c['modules']} ({c['packing_theory_modules']} of the package; numpy "
                 f"{'yes' if c['numpy'] else 'no'})" for c in counts]
        lines.append(f"| {key.replace('_', ' ')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--baseline", type=Path, default=None, help="a second checkout to measure in the same run")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--baseline-note", default="", help="what the baseline checkout is (into the results)")
    p.add_argument("--out", type=Path, default=RESULTS)
    a = p.parse_args()
    roots = {"this checkout": HERE}
    if a.baseline is not None:
        roots = {"baseline": a.baseline.resolve(), "this checkout": HERE}
    load_before = [round(x, 2) for x in os.getloadavg()]
    found = measure(roots, a.repeats)
    doc = {"python": platform.python_version(), "cpus": os.cpu_count(), "repeats": a.repeats,
           "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()],
           "checkouts": found, "baseline_note": a.baseline_note}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "startup.json").write_text(json.dumps(doc, indent=2) + "\n")
    (a.out / "startup.md").write_text(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
