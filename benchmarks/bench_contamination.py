"""Benchmark: the contamination scan on 100 M tokens against 1 M reference grams, memory and disk index.

Method
------
1. **Corpus.** About 100 M tokens (``--quick``: 10 M) of seed-002 shards
   (8 M tokens each, vocab 50,304, BOS 0): log-normal document lengths
   (median about 400 tokens, mean about 600), ids drawn uniformly, 15 source
   labels round-robin. 1,000 documents (``--quick``: 100) receive a 26-token
   span copied from a reference item (14 matching 13-grams each).
2. **References.** 40,000 items of 40 uniform ids (``--quick``: 4,000): 28
   windows each, 1,120,000 grams (distinct up to chance), written as one
   text file of space-separated ids and tokenized by a one-line callable
   (``benchtok:encode``), as a user passes the tokenizer that wrote the shards.
3. **The scan**, each in a fresh process through ``packing_theory.cli.main``
   (``contamination --manifest ... --reference ... --reference-per-line``):
   with the default in-memory index, and with ``--memory-grams`` a quarter
   of the reference grams (280,000), which puts the index on disk and scans
   the shards once per pass. Wall
   time includes reading and hashing the references, the scan and writing the
   report; throughput is corpus tokens over that wall time; peak RSS is the
   child's ``VmHWM`` (interpreter and numpy included; the shards are read
   slice by slice, never mapped whole). Each run must exit 1 and its mask
   must mark exactly the planted documents.
4. **The naive reference** (:func:`packing_theory.contamination.naive_matches`:
   a Python set of 13-tuples, one step per window, no hashing) and the
   vectorised scan on the same smaller input, the first shard's first
   2,000,000 tokens (``--quick``: 500,000) against the same references, each
   in a fresh process: the ratio of their scan throughputs (building the
   reference set or the index is excluded on both sides, reported apart;
   the index is built as the library builds it, one block of all items).

5. **The index at its memory bound.** In fresh processes, an
   :class:`~packing_theory.contamination.IndexBuilder` receives
   ``DEFAULT_MEMORY_GRAMS`` (8,388,608) random hashes over 4 references in
   pieces of 2**20 (``--quick``: 2**21 hashes and a bound of 2**21), with
   the default bound (the index stays in memory) and with a quarter of it
   (disk). Reported: the peak RSS above a baseline process that makes the
   same pieces without the builder, per gram, and the resident memory per
   gram once the index is built.

Run: ``python benchmarks/bench_contamination.py [--quick]``; results go to
``benchmarks/results/contamination.{json,md}``. The machine is shared (two
cores, other jobs running): timings are provisional, ratios taken in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import child

from packing_theory.corpus import write_shards

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 2**20
VOCAB = 50_304
N = 13


def make_corpus(d: Path, tokens: int, planted: int, items: list[np.ndarray], seed: int = 0
                ) -> tuple[Path, list[int]]:
    """Write the shards and manifest; return the manifest path and the planted documents' indices."""
    rng = np.random.default_rng(seed)
    lengths: list[int] = []
    total = 0
    while total < tokens:
        n = int(max(2, min(20_000, rng.lognormal(6.0, 0.9))))
        lengths.append(n)
        total += n
    ids = rng.integers(1, VOCAB, size=total, dtype=np.uint16)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    ids[starts] = 0  # BOS
    docs = np.split(ids, starts[1:])
    eligible = np.flatnonzero(np.array(lengths) >= 40)
    chosen = np.sort(rng.choice(eligible, size=planted, replace=False))
    for k, j in enumerate(chosen):
        item = items[k % len(items)]
        docs[j][1:27] = item[:26]
    sources = [f"source-{i % 15:02d}" for i in range(len(docs))]
    write_shards(d, docs, vocab=VOCAB, shard_tokens=8_000_000, sources=sources, bos_id=0,
                 tokenizer={"name": "uniform synthetic ids"})
    return d / "manifest.json", [int(j) for j in chosen]


def run_cli(argv: list[str], path: Path) -> dict[str, Any]:
    r = child(f"""
        import sys, time
        sys.path.insert(0, {str(path)!r})
        from packing_theory.cli import main
        t0 = time.perf_counter()
        code = main({argv!r})
        status = {{"exit": code, "seconds": time.perf_counter() - t0}}
    """)
    return {"exit": r["status"]["exit"], "seconds": r["status"]["seconds"], "rss": r["rss"],
            "stderr": r["stderr"]}


def small_runs(d: Path, shard: Path, refs: Path, tokens: int) -> dict[str, Any]:
    """The naive set-based scan and the vectorised scan on the first ``tokens`` tokens of ``shard``."""
    setup = f"""
        import sys, time
        import numpy as np
        from packing_theory.corpus import read_shard, write_shard
        s = read_shard({str(shard)!r})
        k = int(np.searchsorted(s.offsets, {tokens}, side="right")) - 1
        docs = [s.document(i) for i in range(k)]
        refs = [[int(x) for x in line.split()] for line in open({str(refs)!r}) if line.strip()]
        small_tokens = int(s.offsets[k])
    """
    naive = child(setup + """
        from packing_theory.contamination import naive_gram_set, naive_matches
        docs = [d.tolist() for d in docs]
        t0 = time.perf_counter()
        grams = naive_gram_set(refs, 13)
        t1 = time.perf_counter()
        hits = naive_matches(docs, [], 13, skip=1, grams=grams)
        t2 = time.perf_counter()
        status = {"build": t1 - t0, "scan": t2 - t1, "tokens": small_tokens,
                  "hit_docs": sum(h > 0 for h in hits)}
    """)
    vector = child(setup + f"""
        from packing_theory.contamination import IndexBuilder, window_counts, window_hashes, block_hits
        from packing_theory.corpus.documents import run_index
        write_shard({str(d / 'small.bin')!r}, docs, vocab=s.vocab)
        t0 = time.perf_counter()
        b = IndexBuilder(1)
        ids = np.concatenate([np.asarray(r, dtype=np.uint64) for r in refs])
        offsets = np.concatenate(([0], np.cumsum([len(r) for r in refs]))).astype(np.int64)
        b.add(window_hashes(ids, 13)[run_index(offsets[:-1], window_counts(offsets, 0, 13))], 0)
        index = b.finish()
        t1 = time.perf_counter()
        small = read_shard({str(d / 'small.bin')!r})
        offsets = np.asarray(small.offsets, dtype=np.int64)
        (table,) = index.tables()
        docs_hit, _ = block_hits(np.asarray(small.ids), offsets, 1, 13, table)
        t2 = time.perf_counter()
        status = {{"build": t1 - t0, "scan": t2 - t1, "tokens": small_tokens,
                   "hit_docs": int(np.unique(docs_hit).size)}}
    """)
    out: dict[str, Any] = {}
    for name, r in (("naive", naive), ("vectorised", vector)):
        st = r["status"]
        out[name] = {"tokens": st["tokens"], "build_seconds": round(st["build"], 3),
                     "scan_seconds": round(st["scan"], 3),
                     "tokens_per_second": round(st["tokens"] / st["scan"]),
                     "peak_rss_mib": round(r["rss"] / MIB, 1), "hit_documents": st["hit_docs"]}
    assert out["naive"]["hit_documents"] == out["vectorised"]["hit_documents"], out
    out["scan_ratio"] = round(out["vectorised"]["tokens_per_second"] / out["naive"]["tokens_per_second"], 1)
    return out


def index_at_bound(grams: int, bound: int) -> dict[str, Any]:
    """Peak and resident bytes per gram of an index of ``grams`` random hashes (see the docstring)."""
    body = f"""
        BUILD = {{build}}
        import numpy as np
        from packing_theory.contamination import IndexBuilder
        def rss():
            return int([x for x in open("/proc/self/status") if x.startswith("VmRSS:")][0].split()[1]) * 1024
        rng = np.random.default_rng(0)
        before = rss()
        builder = IndexBuilder(4, {{bound}}) if BUILD else None
        for i in range({grams} >> 20):
            piece = rng.integers(0, 2**64 - 1, size=1 << 20, dtype=np.uint64)
            if builder is not None:
                builder.add(piece, i % 4)
            del piece
        index = builder.finish() if builder is not None else None
        status = {{{{"mode": None if index is None else index.mode, "resident": rss() - before,
                   "passes": None if index is None else index.passes}}}}
    """
    base = child(body.format(build=False, bound=bound))
    out = {}
    for name, b in (("memory", bound), ("disk", bound // 4)):
        r = child(body.format(build=True, bound=b))
        out[name] = {"bound": b, "mode": r["status"]["mode"], "passes": r["status"]["passes"],
                     "peak_bytes_per_gram": round((r["rss"] - base["rss"]) / grams, 1),
                     "resident_bytes_per_gram": round(r["status"]["resident"] / grams, 1),
                     "peak_rss_mib": round(r["rss"] / MIB, 1)}
    out["grams"] = grams
    out["baseline_rss_mib"] = round(base["rss"] / MIB, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 M tokens, 112,000 grams (a smoke run)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    tokens, n_items, planted = 100_000_000 // scale, 40_000 // scale, 1_000 // scale
    small_tokens = 500_000 if args.quick else 2_000_000
    result: dict[str, Any] = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                          "numpy": np.__version__, "cpus": os.cpu_count(),
                                          "load_average_at_start": round(os.getloadavg()[0], 2)},
                              "quick": args.quick}
    rng = np.random.default_rng(1)
    items = [rng.integers(1, VOCAB, size=40, dtype=np.uint16) for _ in range(n_items)]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "benchtok.py").write_text("def encode(text):\n    return [int(x) for x in text.split()]\n")
        refs = d / "refs.txt"
        refs.write_text("\n".join(" ".join(map(str, it.tolist())) for it in items) + "\n")
        manifest_path, chosen = make_corpus(d / "mix", tokens, planted, items)
        manifest = json.loads(manifest_path.read_text())
        result["corpus"] = {"tokens": manifest["n_tokens"], "documents": manifest["n_docs"],
                            "shards": len(manifest["shards"]), "planted_documents": planted,
                            "reference_items": n_items, "reference_windows": n_items * (40 - N + 1)}
        print(result["corpus"], flush=True)
        runs = []
        bound = str(n_items * (40 - N + 1) // 4)  # a quarter of the reference grams: four passes or more
        for mode, extra in (("memory", []), ("disk", ["--memory-grams", bound, "--index-dir", str(d)])):
            out = d / f"out-{mode}"
            r = run_cli(["contamination", "--manifest", str(manifest_path), "--reference", str(refs),
                         "--reference-per-line", "--tokenizer", "benchtok:encode", "--out", str(out),
                         *extra], d)
            report = json.loads((out / "contamination.json").read_text())
            mask = np.fromfile(out / "exclude.u8", dtype=np.uint8)
            assert r["exit"] == 1 and np.flatnonzero(mask).tolist() == chosen, (r, report["totals"])
            row = {"index": mode, "exit": r["exit"], "passes": report["index"]["passes"],
                   "reference_grams": report["totals"]["reference_grams"],
                   "windows_scanned": report["totals"]["grams"],
                   "matched_grams": report["totals"]["matched_grams"],
                   "documents_with_any_hit": report["totals"]["documents_with_any_hit"],
                   "expected_false_positives": report["false_positives"]["expected"],
                   "wall_seconds": round(r["seconds"], 2), "scan_seconds": round(report["seconds"], 2),
                   "tokens_per_second": round(manifest["n_tokens"] / r["seconds"]),
                   "peak_rss_mib": round(r["rss"] / MIB, 1)}
            runs.append(row)
            print(row, flush=True)
        result["runs"] = runs
        first_shard = d / "mix" / manifest["shards"][0]["path"]
        result["small"] = small_runs(d, first_shard, refs, small_tokens)
        print(result["small"], flush=True)
        result["large_vs_naive_ratio"] = round(runs[0]["tokens_per_second"]
                                               / result["small"]["naive"]["tokens_per_second"], 1)
    from packing_theory.contamination import DEFAULT_MEMORY_GRAMS

    bound = (1 << 21) if args.quick else DEFAULT_MEMORY_GRAMS
    result["index_at_bound"] = index_at_bound(bound, bound)
    print(result["index_at_bound"], flush=True)
    result["machine"]["load_average_at_end"] = round(os.getloadavg()[0], 2)
    if not args.no_write:
        write(result, args.quick)
    return 0


def write(result: dict[str, Any], quick: bool) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "contamination.json").write_text(json.dumps(result, indent=2) + "\n")
    c, s = result["corpus"], result["small"]
    lines = ["# Contamination benchmark: 13-gram scan, memory and disk index, against the naive set", "",
             f"Generated by `python benchmarks/bench_contamination.py{' --quick' if quick else ''}` "
             f"(Python {result['machine']['python']}, numpy {result['machine']['numpy']}, "
             f"{result['machine']['platform']}; {result['machine']['cpus']} shared cores, load average "
             f"{result['machine']['load_average_at_start']} at the start and "
             f"{result['machine']['load_average_at_end']} at the end: timings provisional).",
             "Method: see the docstring of `benchmarks/bench_contamination.py`.", "",
             f"Corpus: {c['tokens']:,} tokens, {c['documents']:,} documents in {c['shards']} seed-002 "
             "shards; "
             f"references: {c['reference_items']:,} items, {c['reference_windows']:,} windows; "
             f"{c['planted_documents']:,} planted documents.", "",
             "| index | passes | reference grams | windows scanned | matched grams | documents hit | "
             "expected false positives | wall s | tokens / s | peak RSS MiB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["runs"]:
        lines.append(f"| {r['index']} | {r['passes']} | {r['reference_grams']:,} | "
                     f"{r['windows_scanned']:,} | "
                     f"{r['matched_grams']:,} | {r['documents_with_any_hit']:,} | "
                     f"{r['expected_false_positives']:.2g} | {r['wall_seconds']} | "
                     f"{r['tokens_per_second']:,} | "
                     f"{r['peak_rss_mib']} |")
    lines += ["", f"Same smaller input ({s['naive']['tokens']:,} tokens of the first shard, same "
              "references):", "",
              "| implementation | build s | scan s | scan tokens / s | peak RSS MiB | documents hit |",
              "|---|---:|---:|---:|---:|---:|"]
    for name in ("naive", "vectorised"):
        r = s[name]
        lines.append(f"| {name} | {r['build_seconds']} | {r['scan_seconds']} | {r['tokens_per_second']:,} | "
                     f"{r['peak_rss_mib']} | {r['hit_documents']:,} |")
    lines += ["", f"Scan throughput ratio, vectorised / naive, same input: **{s['scan_ratio']}x**; "
              f"the full in-memory run (wall time, everything included) / the naive scan: "
              f"**{result['large_vs_naive_ratio']}x**."]
    b = result["index_at_bound"]
    lines += ["", f"The index at its bound ({b['grams']:,} random hashes over 4 references; baseline process "
              f"{b['baseline_rss_mib']} MiB):", "",
              "| bound | index | passes | peak bytes / gram while built | resident bytes / gram after |",
              "|---:|---|---:|---:|---:|"]
    for name in ("memory", "disk"):
        r = b[name]
        lines.append(f"| {r['bound']:,} | {r['mode']} | {r['passes']} | {r['peak_bytes_per_gram']} | "
                     f"{r['resident_bytes_per_gram']} |")
    (RESULTS / "contamination.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
