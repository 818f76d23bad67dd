"""Benchmark: peak memory bounded by what the input holds (peak RSS of fresh processes).

Method
------
Every figure is the peak resident set size (``VmHWM`` of ``/proc/self/status``
in the child: unlike ``ru_maxrss``, which Linux carries over from the forking
parent across ``exec``, it is the child's own peak; it includes the
interpreter, numpy and the library, about 30-50 MB before any work) of one
fresh ``python`` process running one
command in-process through ``packing_theory.cli.main`` (or, for the
streamed rows, the library directly):

1. **Per document.** ``replay --lengths F`` and ``audit --lengths F
   --no-plots --permutations 0 --rows 10**9`` on heavy-tailed lengths
   (``benchmarks/bench_engine.py``'s generator) at N = 50,000, 200,000 and
   800,000 documents. *Bytes per document* = (peak(N) - peak(tiny)) / N,
   with ``tiny`` = 1,000 documents, so the fixed start-up cost cancels.
2. **Flat streamed memory.** ``Packer.events`` over a generator (the corpus
   is never held) consumed by a ``SummaryAccumulator`` at N, 4N and 16N
   documents: the peak stays flat apart from the accumulator's one byte per
   occurrence.
3. **Huge capacity.** ``replay --capacity 16777216`` (the widest row the
   command line takes) on 5,000 documents (at 10**8, 7 GB before the sparse
   buffer); the same with ``audit``.
4. **Hostile inputs refused.** A seed-002 shard whose header claims 200
   million documents over a sparse (hole-filled) file of the claimed size; a
   ``.npy`` whose header claims 10**9 elements over 800 bytes.
5. **A 300 MB single-line text** through ``audit --text --per-line`` with
   the built-in ``bytes`` tokenizer (the issue measured 3 GB).

Run: ``python benchmarks/bench_memory.py [--quick]``; results go to
``benchmarks/results/memory.{json,md}``. ``--quick`` uses 1/10 of the sizes
and a 30 MB text (for a smoke run; the committed results are the full run).
"""

from __future__ import annotations

import argparse
import json
import platform
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import heavy_tailed

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 2**20


def child(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it must set ``status``; return status and peak RSS."""
    wrapper = textwrap.dedent("""
        import io, json, resource, sys, contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
        {body}
        try:  # VmHWM: this process image's own peak (ru_maxrss also counts the parent's, across exec)
            hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0]
            rss = int(hwm.split()[1]) * 1024
        except (OSError, IndexError):
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps({{"status": status, "rss": rss}}))
    """).format(body=textwrap.indent(textwrap.dedent(code), "    "))
    proc = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr.strip().splitlines()[-1:] if proc.stderr.strip() else []
    return out


def cli(argv: list[str]) -> dict[str, Any]:
    return child(f"from packing_theory.cli import main\nstatus = main({argv!r})")


def lengths_file(d: Path, n: int) -> Path:
    path = d / f"lengths_{n}.npy"
    if not path.exists():
        np.save(path, np.fromiter(heavy_tailed(n), np.int64, n))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    sizes = [50_000 // scale, 200_000 // scale, 800_000 // scale]
    result: dict[str, Any] = {"machine": {"python": sys.version.split()[0], "platform": platform.platform()},
                              "quick": args.quick}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        tiny = lengths_file(d, 1000)
        per_doc = []
        for command in ("replay", "audit"):
            extra = [] if command == "replay" else ["--no-plots", "--permutations", "0", "--rows",
                                                    "1000000000", "--no-progress", "--out", str(d / "out"),
                                                    "--force"]
            base = cli([command, "--lengths", str(tiny), *extra])
            for n in sizes:
                r = cli([command, "--lengths", str(lengths_file(d, n)), *extra])
                assert r["status"] == 0, r
                row = {"command": command, "docs": n, "peak_rss_mib": round(r["rss"] / MIB, 1),
                       "tiny_rss_mib": round(base["rss"] / MIB, 1),
                       "bytes_per_doc": round((r["rss"] - base["rss"]) / n, 1)}
                per_doc.append(row)
                print(row, flush=True)
        result["per_document"] = per_doc

        streamed = []
        for n in (sizes[0], 4 * sizes[0], 16 * sizes[0]):
            r = child(f"""
                import sys
                sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
                from bench_engine import heavy_tailed
                from packing_theory import Packer
                from packing_theory.engine.summary import SummaryAccumulator
                acc = SummaryAccumulator(2049)
                for ev in Packer(capacity=2049, min_buffer=1000, refill=128).events(heavy_tailed({n})):
                    acc.feed(ev)
                status = 0 if acc.result().identity_holds() else 1
            """)
            streamed.append({"docs": n, "peak_rss_mib": round(r["rss"] / MIB, 1)})
            print(streamed[-1], flush=True)
        result["streamed"] = streamed

        small = d / "small.npy"
        rng = np.random.default_rng(0)
        np.save(small, np.maximum(1, rng.lognormal(6, 1.5, 5000)).astype(np.int64))
        huge_r = {
            "replay --capacity 16777216 (5,000 docs)": cli(["replay", "--lengths", str(small), "--capacity",
                                                             "16777216"]),
            "audit --capacity 16777216 (5,000 docs)": cli(["audit", "--lengths", str(small), "--capacity",
                                                            "16777216", "--min-buffer", "100", "--no-plots",
                                                            "--out", str(d / "o2")]),
        }
        shard = d / "claims.bin"
        with open(shard, "wb") as fh:
            fh.write(struct.pack("<IIII", 8, 200_000_000, 0, 0))
            fh.truncate(16 + 4 * (200_000_000 + 1))
        import io

        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<i8", "fortran_order": False, "shape": (10**9,)})
        false_npy = d / "false.npy"
        false_npy.write_bytes(buf.getvalue() + b"\0" * 800)
        hostile = {
            "shard claiming 200,000,000 documents (sparse file)": cli(["audit", "--shards", str(shard),
                                                                       "--no-plots", "--out", str(d / "o3")]),
            ".npy header claiming 10**9 elements": cli(["replay", "--lengths", str(false_npy)]),
        }
        text = d / "one_line.txt"
        n_bytes = (300 if not args.quick else 30) * 10**6
        with open(text, "w") as fh:
            chunk = "abcdefghij" * 100_000
            for _ in range(n_bytes // len(chunk)):
                fh.write(chunk)
            fh.write("\n")
        big_text = {f"audit --text (one line of {n_bytes // 10**6} MB, bytes tokenizer)": cli(
            ["audit", "--text", str(text), "--per-line", "--no-plots", "--capacity", "64",
             "--min-buffer", "1", "--permutations", "0", "--out", str(d / "o4")])}
        fixed = []
        for group in (huge_r, hostile, big_text):
            for name, r in group.items():
                fixed.append({"case": name, "status": r["status"], "peak_rss_mib": round(r["rss"] / MIB, 1),
                              "message": r["stderr"][0][:160] if r["status"] == 2 and r["stderr"] else ""})
                print(fixed[-1], flush=True)
        result["cases"] = fixed
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "memory.json").write_text(json.dumps(result, indent=2) + "\n")
        lines = ["# Memory benchmark: peak RSS bounded by what the input holds", "",
                 f"Generated by `python benchmarks/bench_memory.py{' --quick' if args.quick else ''}` "
                 f"(Python {result['machine']['python']}, {result['machine']['platform']}).",
                 "Method: see the docstring of `benchmarks/bench_memory.py` (peak RSS of a fresh process, "
                 "interpreter and numpy included).", "",
                 "Per document (heavy-tailed lengths, R = 2049, B = 1000):", "",
                 "| command | documents | peak RSS MiB | bytes / document above 1,000 docs |",
                 "|---|---:|---:|---:|"]
        lines += [f"| {r['command']} | {r['docs']:,} | {r['peak_rss_mib']} | {r['bytes_per_doc']} |"
                  for r in result["per_document"]]
        lines += ["", "Streamed (`Packer.events` over a generator into a `SummaryAccumulator`):", "",
                  "| documents | peak RSS MiB |", "|---:|---:|"]
        lines += [f"| {r['docs']:,} | {r['peak_rss_mib']} |" for r in result["streamed"]]
        lines += ["", "Fixed cases:", "", "| case | exit status | peak RSS MiB |", "|---|---:|---:|"]
        lines += [f"| {r['case']} | {r['status']} | {r['peak_rss_mib']} |" for r in result["cases"]]
        (RESULTS / "memory.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
