"""Benchmark: ``contamination`` on 1 B tokens of seed-002 shards against a 10 M-token reference.

Method
------
1. **Corpus.** ``--tokens`` (default 1,000,000,000) tokens of seed-002 shards
   of 8 M tokens each (vocab 50,304, BOS 0), written shard by shard
   (``packing_theory.corpus.write_shards`` from a generator): log-normal
   document lengths (median about 400 tokens, mean about 600), ids drawn
   uniformly, 15 source labels round-robin. ``--planted`` documents (default
   1,000) receive a 26-token span copied from a reference item (14 matching
   13-grams each).
2. **References.** ``--reference-tokens`` (default 10,000,000) tokens: items of
   200 uniform ids (188 windows each), one text file of space-separated ids,
   one item per line, tokenized by a one-line callable (``benchtok:encode``),
   as a user passes the tokenizer that wrote the shards.
3. **The scan**, in a fresh process through ``packing_theory.cli.main``
   (``contamination --manifest ... --reference ... --reference-per-line
   --memory-grams G --no-progress``, serial, the compiled loop when numba is
   installed), ``G`` = ``--memory-grams`` (default 16,777,216, above the
   reference's grams: one pass). It must exit 1 and its mask must mark
   exactly the planted documents. Reported: the child's CPU seconds (user +
   system) and peak RSS (``VmHWM``), and the report's own split into
   reading the references / building the index and the scan (CPU seconds of
   that process); **scan throughput = corpus tokens / scan CPU seconds**.
4. **Memory against the bound.** The same command on a one-shard corpus (7.9 M
   tokens: the working memory of reading one shard) against a 1 M-token
   reference of one repeated item (the working memory of reading and
   hashing a reference block, with an index of 188 grams; same interpreter,
   imports, numba, report writer) gives the constant ``C``. A run's peak RSS
   is checked against ``C + b * memory_grams + 8 * documents`` (``b`` the
   index's peak bytes per gram held while built, step 6, the larger of its
   two rows; 8 bytes per document for its length), and the tighter
   ``C + b * min(memory_grams, grams) + 8 * documents``: for the main run
   and for the sample through the command with a disk index of at most
   ``--disk-grams`` (2,097,152) grams, whose hits must equal the naive scan's.
5. **Exactness on a 100 M-token sample** (the corpus's first shards, about
   ``--sample-tokens`` tokens): :func:`packing_theory.contamination.naive_scan`
   (a Python set of the reference windows' bytes, one step per window, no
   hashing of ours) and the library's :func:`~packing_theory.contamination.scan_contamination`,
   each in a fresh process: the matched windows of every document must be
   equal. Reported: CPU seconds, peak RSS, and their ratio.
6. **The index at its bound**: an :class:`~packing_theory.contamination.IndexBuilder`
   receiving 8,388,608 random hashes over 4 references in pieces of 2**20,
   in fresh processes, with that bound (in memory) and a quarter of it (on
   disk); peak RSS above a baseline process per gram, and the resident
   bytes per gram once built.

Run: ``python benchmarks/bench_contamination.py [--tokens N] [--quick]``;
results go to ``benchmarks/results/contamination.{json,md}``. The machine is
shared (two cores, other jobs running): the load average is recorded at the
start and the end; CPU seconds are less affected by the load than wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from packing_theory.corpus import write_shards

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 2**20
VOCAB = 50_304
N = 13
ITEM = 200


def child(code: str, cwd: Path) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (it sets ``status``); its status, CPU seconds and peak RSS."""
    wrapper = textwrap.dedent("""
        import json, resource, sys
        sys.path.insert(0, {cwd!r})
        {body}
        hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0]
        ru = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({{"status": status, "rss": int(hwm.split()[1]) * 1024,
                          "cpu": ru.ru_utime + ru.ru_stime}}))
    """).format(cwd=str(cwd), body=textwrap.dedent(code).strip())
    proc = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, timeout=7200,
                          cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _documents(tokens: int, planted: int, items: np.ndarray, seed: int
               ) -> tuple[Iterator[np.ndarray], list[int]]:
    """A generator of BOS-inclusive documents (chunk by chunk) and the planted documents' indices."""
    rng = np.random.default_rng(seed)
    lengths = []
    total = 0
    while total < tokens:
        n = int(max(2, min(20_000, rng.lognormal(6.0, 0.9))))
        lengths.append(n)
        total += n
    eligible = np.flatnonzero(np.array(lengths) >= 40)
    chosen = np.sort(rng.choice(eligible, size=planted, replace=False))
    plant = dict(zip(chosen.tolist(), range(planted), strict=True))

    def gen() -> Iterator[np.ndarray]:
        per = 1 << 16  # documents generated in chunks of about 40 M tokens: memory O(chunk)
        for lo in range(0, len(lengths), per):
            ls = lengths[lo : lo + per]
            ids = rng.integers(1, VOCAB, size=sum(ls), dtype=np.uint16)
            starts = np.concatenate(([0], np.cumsum(ls)[:-1]))
            ids[starts] = 0  # BOS
            for k, (s, n) in enumerate(zip(starts.tolist(), ls, strict=True)):
                doc = ids[s : s + n]
                j = lo + k
                if j in plant:
                    doc[1:27] = items[plant[j] % len(items)][:26]
                yield doc

    return gen(), [int(j) for j in chosen]


def make_corpus(d: Path, tokens: int, planted: int, items: np.ndarray) -> tuple[Path, list[int]]:
    docs, chosen = _documents(tokens, planted, items, 0)
    sources = (f"source-{i % 15:02d}" for i in range(10**12))
    write_shards(d, docs, vocab=VOCAB, shard_tokens=8_000_000, sources=sources, bos_id=0,
                 tokenizer={"name": "uniform synthetic ids"})
    return d / "manifest.json", chosen


def run_cli(argv: list[str], cwd: Path) -> dict[str, Any]:
    r = child(f"""
        from packing_theory.cli import main
        status = main({argv!r})
    """, cwd)
    return {"exit": r["status"], "cpu_s": r["cpu"], "rss": r["rss"]}


def sample_runs(d: Path, shards: list[Path], refs: Path, tokens: int) -> dict[str, Any]:
    """The naive scan and the library's scan on the same shards: per-document matches, CPU, RSS."""
    setup = f"""
        import numpy as np
        from packing_theory.corpus import read_shard
        shards = {[str(s) for s in shards]!r}
    """
    naive = child(setup + f"""
        from packing_theory.contamination import naive_scan
        refs = [np.array([int(x) for x in line.split()], dtype=np.uint16) for line in open({str(refs)!r})
                if line.strip()]
        def docs():
            for p in shards:
                s = read_shard(p)
                for i in range(s.n_docs):
                    yield s.document(i)
        m = naive_scan(docs(), refs, 13, skip=1, dtype="<u2")
        hits = [(i, c) for i, c in enumerate(m) if c]
        status = {{"hits": hits, "documents": len(m)}}
    """, d)
    vector = child(setup + f"""
        from packing_theory.contamination import CorpusInput, ReferenceSpec, scan_contamination
        from benchtok import encode
        rep = scan_contamination([CorpusInput(p, "shard") for p in shards],
                                 [ReferenceSpec({str(refs)!r}, per_line=True)], tokenizer=encode,
                                 memory_grams=1 << 24)
        status = {{"hits": [(h.index, h.matched_grams) for h in rep.hit_documents],
                   "documents": rep.documents_scanned, "timings": rep.timings}}
    """, d)
    equal = [list(x) for x in naive["status"]["hits"]] == [list(x) for x in vector["status"]["hits"]]
    assert equal and naive["status"]["documents"] == vector["status"]["documents"], "counts differ"
    return {"tokens": tokens, "documents": naive["status"]["documents"], "shards": len(shards),
            "hit_documents": len(naive["status"]["hits"]), "counts_equal": equal,
            "naive": {"cpu_s": round(naive["cpu"], 2), "peak_rss_mib": round(naive["rss"] / MIB, 1)},
            "library": {"cpu_s": round(vector["cpu"], 2), "peak_rss_mib": round(vector["rss"] / MIB, 1),
                        "scan_cpu_s": round(vector["status"]["timings"]["scan_cpu_s"], 2)},
            "hits": naive["status"]["hits"], "cpu_ratio": round(naive["cpu"] / vector["cpu"], 1),
            "rss_ratio": round(naive["rss"] / vector["rss"], 1)}


def constant_run(d: Path, item: np.ndarray, base: list[str]) -> dict[str, Any]:
    """The command on one 7.9 M-token shard against a 1 M-token reference of one repeated item (188 grams):
    the reading and writing working memory, without an index to speak of (step 4)."""
    manifest, _ = make_corpus(d / "one", 7_900_000, 10, item[None, :])
    (d / "repeated.txt").write_text((" ".join(map(str, item.tolist())) + "\n") * 5000)
    argv = [a if a != base[2] else str(d / "repeated.txt") for a in base]
    c = run_cli([*argv, "--manifest", str(manifest), "--out", str(d / "out-one")], d)
    return {"exit": c["exit"], "peak_rss_mib": round(c["rss"] / MIB, 1), "cpu_s": round(c["cpu_s"], 2)}


def disk_run(d: Path, shards: list[Path], base: list[str], grams: int, hits: list[list[int]]
             ) -> dict[str, Any]:
    """The sample through the command with a disk index of ``grams`` grams held at most: same hits."""
    argv = [*base[: base.index("--memory-grams")], "--memory-grams", str(grams), "--no-progress"]
    r = run_cli([*argv, "--shards", *map(str, shards), "--index-dir", str(d), "--out", str(d / "out-disk")],
                d)
    report = json.loads((d / "out-disk" / "contamination.json").read_text())
    got = [[json.loads(x)["index"], json.loads(x)["matched_grams"]]
           for x in (d / "out-disk" / "hit_documents.jsonl").read_text().splitlines()]
    assert r["exit"] == 1 and got == [list(h) for h in hits], "the disk index changed the counts"
    return {"memory_grams": grams, "passes": report["index"]["passes"],
            "peak_grams": report["index"]["peak_grams"],
            "largest_pass_grams": report["index"]["largest_pass_grams"], "counts_equal": True,
            "cpu_s": round(r["cpu_s"], 2), "peak_rss_mib": round(r["rss"] / MIB, 1)}


def bound_check(name: str, constant_mib: float, per_gram: float, bound: int, grams: int, documents: int,
                peak_mib: float) -> dict[str, Any]:
    """``peak <= C + b * bound + 8 * documents``, and the tighter ``min(bound, grams)`` form."""
    limit = constant_mib * MIB + per_gram * bound + 8 * documents
    tight = constant_mib * MIB + per_gram * min(bound, grams) + 8 * documents
    return {"run": name, "memory_grams": bound, "grams": grams, "documents": documents,
            "constant_mib": constant_mib, "bytes_per_gram": per_gram, "limit_mib": round(limit / MIB, 1),
            "limit_at_grams_held_mib": round(tight / MIB, 1), "peak_rss_mib": peak_mib,
            "within": peak_mib * MIB <= limit, "within_at_grams_held": peak_mib * MIB <= tight}


def index_at_bound(grams: int, bound: int, cwd: Path) -> dict[str, Any]:
    """Peak and resident bytes per gram of an index of ``grams`` random hashes (step 6)."""
    body = """
        BUILD = {build}
        import numpy as np
        from packing_theory.contamination import IndexBuilder
        def rss():
            return int([x for x in open("/proc/self/status") if x.startswith("VmRSS:")][0].split()[1]) * 1024
        rng = np.random.default_rng(0)
        before = rss()
        builder = IndexBuilder(4, {bound}) if BUILD else None
        for i in range({grams} >> 20):
            piece = rng.integers(0, 2**64 - 1, size=1 << 20, dtype=np.uint64)
            if builder is not None:
                builder.add(piece, i % 4)
            del piece
        index = builder.finish() if builder is not None else None
        status = {{"mode": None if index is None else index.mode, "resident": rss() - before,
                   "passes": None if index is None else index.passes}}
    """
    base = child(body.format(build=False, bound=bound, grams=grams), cwd)
    out: dict[str, Any] = {}
    for name, b in (("memory", bound), ("disk", bound // 4)):
        r = child(body.format(build=True, bound=b, grams=grams), cwd)
        out[name] = {"bound": b, "mode": r["status"]["mode"], "passes": r["status"]["passes"],
                     "peak_bytes_per_gram": round((r["rss"] - base["rss"]) / min(grams, b), 1),
                     "resident_bytes_per_gram": round(r["status"]["resident"] / grams, 1),
                     "peak_rss_mib": round(r["rss"] / MIB, 1)}
    out["grams"] = grams
    out["baseline_rss_mib"] = round(base["rss"] / MIB, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1_000_000_000)
    parser.add_argument("--reference-tokens", type=int, default=10_000_000)
    parser.add_argument("--sample-tokens", type=int, default=100_000_000)
    parser.add_argument("--planted", type=int, default=1000)
    parser.add_argument("--memory-grams", type=int, default=1 << 24)
    parser.add_argument("--disk-grams", type=int, default=1 << 21,
                        help="--memory-grams of the sample's disk-index run (below the reference's grams)")
    parser.add_argument("--quick", action="store_true",
                        help="20 M tokens, a 1 M-token reference, a 10 M sample")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.reference_tokens = 20_000_000, 1_000_000
        args.sample_tokens, args.planted = 10_000_000, 100
    result: dict[str, Any] = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                          "numpy": np.__version__, "cpus": os.cpu_count(),
                                          "load_average_at_start": [round(x, 2) for x in os.getloadavg()]},
                              "args": vars(args)}
    rng = np.random.default_rng(1)
    items = rng.integers(1, VOCAB, size=(args.reference_tokens // ITEM, ITEM), dtype=np.uint16)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "benchtok.py").write_text("def encode(text):\n    return [int(x) for x in text.split()]\n")
        refs = d / "refs.txt"
        with open(refs, "w") as fh:
            for it in items:
                fh.write(" ".join(map(str, it.tolist())) + "\n")
        manifest_path, chosen = make_corpus(d / "mix", args.tokens, args.planted, items)
        manifest = json.loads(manifest_path.read_text())
        result["corpus"] = {"tokens": manifest["n_tokens"], "documents": manifest["n_docs"],
                            "shards": len(manifest["shards"]), "planted_documents": args.planted,
                            "reference_items": int(items.shape[0]), "reference_tokens": int(items.size),
                            "reference_windows": int(items.shape[0] * (ITEM - N + 1))}
        print(result["corpus"], flush=True)
        base = ["contamination", "--reference", str(refs), "--reference-per-line", "--tokenizer",
                "benchtok:encode", "--memory-grams", str(args.memory_grams), "--no-progress"]
        out = d / "out"
        r = run_cli([*base, "--manifest", str(manifest_path), "--out", str(out)], d)
        report = json.loads((out / "contamination.json").read_text())
        mask = np.fromfile(out / "exclude.u8", dtype=np.uint8)
        assert r["exit"] == 1 and np.flatnonzero(mask).tolist() == chosen, (r, report["totals"])
        t = report["timings"]
        result["run"] = {"exit": r["exit"], "memory_grams": args.memory_grams, "index": report["index"],
                         "reference_grams": report["totals"]["reference_grams"],
                         "windows_scanned": report["totals"]["grams"],
                         "matched_grams": report["totals"]["matched_grams"],
                         "documents_with_any_hit": report["totals"]["documents_with_any_hit"],
                         "expected_false_positives": report["false_positives"]["expected"],
                         "cpu_s": round(r["cpu_s"], 2), "peak_rss_mib": round(r["rss"] / MIB, 1),
                         "references_cpu_s": round(t["references_cpu_s"], 2),
                         "scan_cpu_s": round(t["scan_cpu_s"], 2), "scan_wall_s": round(t["scan_wall_s"], 2),
                         "scan_tokens_per_cpu_s": round(manifest["n_tokens"] / t["scan_cpu_s"]),
                         "all_tokens_per_cpu_s": round(manifest["n_tokens"] / r["cpu_s"])}
        print(result["run"], flush=True)
        result["constant"] = constant_run(d, items[0], base)
        shards, tokens = [], 0
        for entry in manifest["shards"]:
            if tokens >= args.sample_tokens:
                break
            shards.append(d / "mix" / entry["path"])
            tokens += int(entry["n_tokens"])
        result["sample"] = sample_runs(d, shards, refs, tokens)
        print({k: v for k, v in result["sample"].items() if k != "hits"}, flush=True)
        result["sample_disk"] = disk_run(d, shards, base, args.disk_grams, result["sample"]["hits"])
        print(result["sample_disk"], flush=True)
    from packing_theory.contamination import DEFAULT_MEMORY_GRAMS

    with tempfile.TemporaryDirectory() as tmp:
        bound = (1 << 21) if args.quick else DEFAULT_MEMORY_GRAMS
        result["index_at_bound"] = index_at_bound(bound, bound, Path(tmp))
    print(result["index_at_bound"], flush=True)
    ib = result["index_at_bound"]
    b = max(ib["memory"]["peak_bytes_per_gram"], ib["disk"]["peak_bytes_per_gram"])
    result["bound"] = [
        bound_check("main run", result["constant"]["peak_rss_mib"], b, args.memory_grams,
                    result["run"]["reference_grams"], result["corpus"]["documents"],
                    result["run"]["peak_rss_mib"]),
        bound_check("sample, disk index", result["constant"]["peak_rss_mib"], b, args.disk_grams,
                    result["run"]["reference_grams"], result["sample"]["documents"],
                    result["sample_disk"]["peak_rss_mib"])]
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(result["bound"], result["machine"], flush=True)
    if not args.no_write:
        write(result)
    return 0


def write(result: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "contamination.json").write_text(json.dumps(result, indent=2) + "\n")
    c, r, s, b, m = result["corpus"], result["run"], result["sample"], result["bound"], result["machine"]
    lines = ["# Contamination benchmark: 13-gram scan of seed-002 shards, against the naive scan", "",
             f"Generated by `python benchmarks/bench_contamination.py --tokens {result['args']['tokens']}` "
             f"(Python {m['python']}, numpy {m['numpy']}, {m['platform']}; {m['cpus']} shared cores, load "
             f"average {m['load_average_at_start']} at the start and {m['load_average_at_end']} at the end).",
             "Method: see the docstring of `benchmarks/bench_contamination.py`.", "",
             f"Corpus: {c['tokens']:,} tokens, {c['documents']:,} documents in {c['shards']} seed-002 "
             "shards; "
             f"reference: {c['reference_items']:,} items, {c['reference_tokens']:,} tokens, "
             f"{c['reference_windows']:,} windows; {c['planted_documents']:,} planted documents.", "",
             "| memory grams | passes | reference grams | windows scanned | matched grams | documents hit | "
             "CPU s (all) | of which references + index | of which scan | scan tokens / CPU s | "
             "peak RSS MiB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
             f"| {r['memory_grams']:,} | {r['index']['passes']} | {r['reference_grams']:,} | "
             f"{r['windows_scanned']:,} | {r['matched_grams']:,} | {r['documents_with_any_hit']:,} | "
             f"{r['cpu_s']} | {r['references_cpu_s']} | {r['scan_cpu_s']} | "
             f"**{r['scan_tokens_per_cpu_s']:,}** | {r['peak_rss_mib']} |", "",
             f"Kernel: {r['index'].get('kernel')}; scan wall time {r['scan_wall_s']} s. Every planted "
             "document "
             "and no other is in the mask (checked).", "",
             "**Memory against the bound** (peak RSS <= C + b * memory_grams + 8 * documents; C = "
             f"{result['constant']['peak_rss_mib']} MiB, the command on one shard with a reference of "
             "one repeated item; b = the index's peak bytes per gram held while built, the larger of the "
             "two rows at the end):", "",
             "| run | memory grams | reference grams | documents | b | limit MiB | limit at grams held MiB "
             "| peak RSS MiB | within |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for x in b:
        lines.append(f"| {x['run']} | {x['memory_grams']:,} | {x['grams']:,} | {x['documents']:,} | "
                     f"{x['bytes_per_gram']} | {x['limit_mib']} | {x['limit_at_grams_held_mib']} | "
                     f"{x['peak_rss_mib']} | {'yes' if x['within'] else 'NO'} "
                     f"({'yes' if x['within_at_grams_held'] else 'no'} at grams held) |")
    sd = result["sample_disk"]
    lines += ["",
             f"**Exactness on a sample** ({s['tokens']:,} tokens, {s['documents']:,} documents in the first "
             f"{s['shards']} shards, {s['hit_documents']:,} hit documents): per-document matched windows "
             f"{'equal' if s['counts_equal'] else 'DIFFERENT'}; through the command with a disk index of at "
             f"most {sd['memory_grams']:,} grams ({sd['passes']} passes, {sd['peak_grams']:,} grams held at "
             f"the peak, {sd['cpu_s']} CPU s, peak RSS {sd['peak_rss_mib']} MiB): equal as well.", "",
             "| implementation | CPU s | peak RSS MiB |", "|---|---:|---:|",
             f"| naive (`naive_scan`: a set of window bytes) | {s['naive']['cpu_s']} | "
             f"{s['naive']['peak_rss_mib']} |",
             f"| library (`scan_contamination`, of which scan {s['library']['scan_cpu_s']} s) | "
             f"{s['library']['cpu_s']} | {s['library']['peak_rss_mib']} |", "",
             f"Naive / library on the same sample: **{s['cpu_ratio']}x** the CPU, **{s['rss_ratio']}x** the "
             "peak RSS."]
    ib = result["index_at_bound"]
    lines += ["", f"The index at its bound ({ib['grams']:,} random hashes over 4 references; baseline "
              "process "
              f"{ib['baseline_rss_mib']} MiB):", "",
              "| bound | index | passes | peak bytes / gram held while built | resident bytes / gram after |",
              "|---:|---|---:|---:|---:|"]
    for name in ("memory", "disk"):
        x = ib[name]
        lines.append(f"| {x['bound']:,} | {x['mode']} | {x['passes']} | {x['peak_bytes_per_gram']} | "
                     f"{x['resident_bytes_per_gram']} |")
    (RESULTS / "contamination.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
