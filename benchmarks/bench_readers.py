"""Reader benchmark: lengths (and ids) read back equal what the libraries wrote; a 100M-document .idx.

``python benchmarks/bench_readers.py`` (``--documents N``, ``--megatron-documents N``,
``--formats hf,megatron,olmo,jsonl,mds``) writes, for each format, a file of
``--documents`` (default 100,000) random documents with the format's own
library where it is installed (``datasets.save_to_disk``, megatron-core's
``IndexedDatasetBuilder``; OLMo-core's layout is written with ``tofile`` as
``write_array_to_disk`` does; ``streaming.MDSWriter`` when ``streaming``
imports), reads it back with :func:`packing_theory.corpus.readers.open_data`
and compares every length (and, where the format stores them, every id) with
the documents written. Then it writes a Megatron ``.idx`` of
``--megatron-documents`` (default 100,000,000) documents directly (the
builder's Python loop would take hours at that size) and times
``MegatronIndex(...).lengths()`` in a fresh process, with its peak RSS, once
next to a sparse ``.bin`` of the size the index implies (hundreds of GB,
``truncate``: no block written) and once with no ``.bin`` at all: equal
memory shows that it does not depend on ``.bin``. Results:
``benchmarks/results/readers.json`` and ``readers.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from packing_theory.corpus.readers import open_data  # noqa: E402


def _docs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Lengths in 1..200 and the flat ids (uint16, never 0: 0 is the EOS of the OLMo array)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 201, n)
    return lengths, rng.integers(1, 60000, int(lengths.sum()), dtype=np.uint16)


def _split(lengths: np.ndarray, flat: np.ndarray) -> list[np.ndarray]:
    return np.split(flat, np.cumsum(lengths)[:-1])


def bench_hf(tmp: str, n: int) -> dict[str, Any]:
    import datasets

    datasets.disable_progress_bars()
    lengths, flat = _docs(n, 1)
    docs = [d.tolist() for d in _split(lengths, flat)]
    datasets.Dataset.from_dict({"input_ids": docs}).save_to_disk(f"{tmp}/hf", num_shards=4)
    t0 = time.perf_counter()
    reader = open_data([f"{tmp}/hf"], "hf", bos="included")
    got = reader.lengths()
    seconds = time.perf_counter() - t0
    ids_equal = all(a.tolist() == b for a, b in zip(reader.readers[0].iter_documents(), docs, strict=True))
    return {"library": f"datasets {datasets.__version__}", "documents": n, "lengths_equal":
            bool(np.array_equal(got, lengths)), "ids_equal": ids_equal, "read_seconds": round(seconds, 3)}


def bench_megatron(tmp: str, n: int) -> dict[str, Any]:
    from importlib.metadata import version

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    lengths, flat = _docs(n, 2)
    builder = IndexedDatasetBuilder(f"{tmp}/m.bin", dtype=np.uint16)
    for d in _split(lengths, flat):
        builder.add_document(torch.from_numpy(d.astype(np.int64)), [d.size])
    builder.finalize(f"{tmp}/m.idx")
    t0 = time.perf_counter()
    reader = open_data([f"{tmp}/m.idx"], "megatron", bos="included")
    got = reader.lengths()
    seconds = time.perf_counter() - t0
    index = reader.readers[0]
    ids_equal = all(np.array_equal(index.document(i), d) for i, d in enumerate(_split(lengths, flat)))
    return {"library": f"megatron-core {version('megatron-core')}", "documents": n,
            "lengths_equal": bool(np.array_equal(got, lengths)), "ids_equal": ids_equal,
            "read_seconds": round(seconds, 3)}


def bench_olmo(tmp: str, n: int) -> dict[str, Any]:
    lengths, flat = _docs(n, 3)
    ends = np.cumsum(lengths + 1)
    with_eos = np.insert(flat, np.cumsum(lengths), 0)  # an EOS (id 0) after every document
    with_eos.tofile(f"{tmp}/o.npy")  # OLMo-core's raw memmap layout (write_array_to_disk)
    t0 = time.perf_counter()
    reader = open_data([f"{tmp}/o.npy"], "olmo", bos="included", eos_id=0, dtype="uint16")
    got = reader.lengths()
    seconds = time.perf_counter() - t0
    arr = reader.readers[0]
    ids_equal = bool(np.array_equal(arr.ends, ends)) and all(
        np.array_equal(arr.document(i)[:-1], d) for i, d in enumerate(_split(lengths, flat)))
    return {"library": "numpy tofile (OLMo-core's raw layout; ai2-olmo-core does not install "
            "next to numpy >= 2.2)", "documents": n, "lengths_equal": bool(np.array_equal(got, lengths + 1)),
            "ids_equal": ids_equal, "read_seconds": round(seconds, 3)}


def bench_jsonl(tmp: str, n: int) -> dict[str, Any]:
    import zstandard

    lengths, _ = _docs(n, 4)
    rng = np.random.default_rng(5)
    texts = ["".join(chr(97 + c) for c in rng.integers(0, 26, int(k))) for k in lengths]
    raw = "".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(texts)).encode()
    with open(f"{tmp}/j.jsonl.zst", "wb") as fh:
        fh.write(zstandard.ZstdCompressor().compress(raw))
    t0 = time.perf_counter()
    got = open_data([f"{tmp}/j.jsonl.zst"], "jsonl", tokenizer="bytes").lengths()
    seconds = time.perf_counter() - t0
    return {"library": f"zstandard {zstandard.__version__}", "documents": n,
            "lengths_equal": bool(np.array_equal(got, lengths + 1)), "ids_equal": None,
            "read_seconds": round(seconds, 3)}


def bench_mds(tmp: str, n: int) -> dict[str, Any]:
    from importlib.metadata import version

    from streaming import MDSWriter

    lengths, flat = _docs(n, 6)
    docs = _split(lengths, flat)
    with MDSWriter(out=f"{tmp}/mds", columns={"tokens": "ndarray:uint16"}, size_limit=1 << 24) as w:
        for d in docs:
            w.write({"tokens": d})
    t0 = time.perf_counter()
    reader = open_data([f"{tmp}/mds"], "mds", bos="add")
    got = reader.lengths()
    seconds = time.perf_counter() - t0
    ids_equal = all(np.array_equal(a, b) for a, b in zip(reader.readers[0].iter_values(), docs, strict=True))
    return {"library": f"mosaicml-streaming {version('mosaicml-streaming')}", "documents": n,
            "lengths_equal": bool(np.array_equal(got, lengths + 1)), "ids_equal": ids_equal,
            "read_seconds": round(seconds, 3)}


def write_big_idx(prefix: str, n: int) -> np.ndarray:
    """A version-1 Megatron index of ``n`` one-sequence documents, in the builder's format."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 4096, n).astype(np.int32)
    with open(prefix + ".idx", "wb") as fh:
        fh.write(b"MMIDIDX\x00\x00" + (1).to_bytes(8, "little") + bytes([8]) + n.to_bytes(8, "little")
                 + (n + 1).to_bytes(8, "little"))
        fh.write(sizes.tobytes())
        pointers = np.zeros(n, dtype=np.int64)
        np.cumsum(sizes[:-1].astype(np.int64) * 2, out=pointers[1:])
        fh.write(pointers.tobytes())
        del pointers
        fh.write(np.arange(n + 1, dtype=np.int64).tobytes())
    return sizes


_CHILD = """
import sys, time

def hwm():  # peak RSS of this process in KiB (VmHWM: reset by exec, unlike ru_maxrss)
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))

sys.path.insert(0, {root!r})
from packing_theory.corpus.readers.megatron import MegatronIndex
base = hwm()
t0 = time.perf_counter()
lengths = MegatronIndex({prefix!r}, bos="included").lengths()
seconds = time.perf_counter() - t0
import hashlib
print(seconds, hwm(), lengths.size,
      hashlib.sha256(lengths.tobytes()).hexdigest(), base)
"""


def bench_big_megatron(tmp: str, n: int) -> dict[str, Any]:
    import hashlib

    prefix = f"{tmp}/big"
    sizes = write_big_idx(prefix, n)
    want = hashlib.sha256(sizes.astype(np.int64).tobytes()).hexdigest()
    bin_total = int(sizes.astype(np.int64).sum()) * 2
    del sizes
    runs = []
    with open(prefix + ".bin", "wb") as fh:  # sparse: the size the index implies, no block written
        fh.truncate(bin_total)
    out = subprocess.run([sys.executable, "-c", _CHILD.format(root=str(ROOT), prefix=prefix)],
                         capture_output=True, text=True, check=True).stdout.split()
    runs.append({"bin_bytes": bin_total, "bin": "sparse, the size the index implies", "seconds":
                 round(float(out[0]), 2), "peak_rss_mib": round(int(out[1]) / 1024, 1),
                 "documents": int(out[2]), "lengths_equal": out[3] == want,
                 "rss_before_read_mib": round(int(out[4]) / 1024, 1)})
    os.remove(prefix + ".bin")  # lengths need the .idx only
    out = subprocess.run([sys.executable, "-c", _CHILD.format(root=str(ROOT), prefix=prefix)],
                         capture_output=True, text=True, check=True).stdout.split()
    runs.append({"bin_bytes": 0, "bin": "no .bin at all", "seconds": round(float(out[0]), 2),
                 "peak_rss_mib": round(int(out[1]) / 1024, 1), "documents": int(out[2]),
                 "lengths_equal": out[3] == want, "rss_before_read_mib": round(int(out[4]) / 1024, 1)})
    return {"documents": n, "idx_bytes": os.path.getsize(prefix + ".idx"), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--megatron-documents", type=int, default=100_000_000)
    parser.add_argument("--formats", default="hf,megatron,olmo,jsonl,mds")
    parser.add_argument("--tmp", default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    results: dict[str, Any] = {"method": __doc__, "formats": {}}
    benches = {"hf": bench_hf, "megatron": bench_megatron, "olmo": bench_olmo, "jsonl": bench_jsonl,
               "mds": bench_mds}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for name in [f for f in args.formats.split(",") if f]:
            try:
                results["formats"][name] = benches[name](tmp, args.documents)
            except ImportError as exc:
                results["formats"][name] = {"skipped": f"{type(exc).__name__}: {exc}"}
            except Exception as exc:  # streaming's torch stack may fail to import in other ways
                results["formats"][name] = {"skipped": f"{type(exc).__name__}: {str(exc)[:200]}"}
            print(name, results["formats"][name], flush=True)
        if args.megatron_documents:
            results["megatron_index"] = bench_big_megatron(tmp, args.megatron_documents)
            print(results["megatron_index"], flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "readers.json"), "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=2)
        fh.write("\n")
    with open(os.path.join(args.out, "readers.md"), "w", encoding="utf-8") as fh:
        fh.write(render(results))


def render(results: dict[str, Any]) -> str:
    lines = ["# Readers: lengths read back vs documents written", "", "```", results["method"].strip(), "```",
             "", "| format | library that wrote it | documents | lengths equal | ids equal | read s |",
             "|---|---|---:|---|---|---:|"]
    for name, r in results["formats"].items():
        if "skipped" in r:
            lines.append(f"| {name} | skipped: {r['skipped']} | | | | |")
        else:
            lines.append(f"| {name} | {r['library']} | {r['documents']:,} | {r['lengths_equal']} | "
                         f"{r['ids_equal']} | {r['read_seconds']} |")
    big = results.get("megatron_index")
    if big:
        lines += ["", f"Megatron index of {big['documents']:,} documents ({big['idx_bytes']:,} bytes), "
                  "lengths in a fresh process:", "",
                  "| .bin | .bin bytes | seconds | peak RSS MiB | RSS before the read MiB | equal |",
                  "|---|---:|---:|---:|---:|---|"]
        for r in big["runs"]:
            lines.append(f"| {r['bin']} | {r['bin_bytes']:,} | {r['seconds']} | {r['peak_rss_mib']} | "
                         f"{r['rss_before_read_mib']} | {r['lengths_equal']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
