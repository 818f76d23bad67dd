"""Planted corpora written with the formats' own libraries, and their expected counts from the naive scan.

Documents are token ids 1..999 (0 is kept for a BOS or EOS); a planted
document holds a 20-token span copied from a reference item (8 windows of 13
tokens). Texts are the ids written out with spaces and read back by
:func:`ids_tokenizer`. Every document has an id (``doc-i``) and a data source.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.contamination import naive_scan

VOCAB = 1000
N = 13
SOURCES = ("web", "math", "code")


def ids_tokenizer(text: str) -> list[int]:
    """Token ids written out with spaces (the tokenizer of every text fixture here); another word ``w``
    is ``VOCAB + len(w)`` (the BOS probe's texts: no common first id, so no BOS)."""
    return [int(x) if x.isdigit() else VOCAB + len(x) for x in text.split()]


@dataclass
class Planted:
    """Documents (ids as scanned), their ids and sources, the reference items and the expected matches."""

    docs: list[list[int]]
    names: list[str]
    sources: list[str]
    refs: list[list[int]]
    planted: list[int]

    def expected(self, skip: int = 0) -> list[int]:
        """Matched windows per document, by the naive scan."""
        return naive_scan(self.docs, self.refs, N, skip=skip, dtype="<u2")

    def per_source(self, skip: int = 0) -> dict[str, tuple[int, int, int]]:
        """Per source: (documents, documents hit, matched windows), by the naive scan."""
        out: dict[str, tuple[int, int, int]] = {}
        for s, m in zip(self.sources, self.expected(skip), strict=True):
            d, h, w = out.get(s, (0, 0, 0))
            out[s] = (d + 1, h + (m > 0), w + m)
        return out

    def text(self, i: int) -> str:
        return " ".join(map(str, self.docs[i]))

    def write_references(self, path: Path) -> Path:
        path.write_text("\n".join(" ".join(map(str, r)) for r in self.refs) + "\n")
        return path


def planted(seed: int = 0, documents: int = 60, hit_every: int = 7) -> Planted:
    """A corpus of ``documents`` documents, every ``hit_every``-th (from 3) holding a reference span."""
    rng = np.random.default_rng(seed)
    refs = [rng.integers(1, VOCAB, size=40).tolist() for _ in range(5)]
    docs, planted_docs = [], []
    for i in range(documents):
        doc = rng.integers(1, VOCAB, size=int(rng.integers(5, 80))).tolist()
        if i % hit_every == 3:
            item = refs[i % len(refs)]
            at = int(rng.integers(0, 20))
            doc = doc[:2] + item[at : at + 20] + doc[2:]
            planted_docs.append(i)
        docs.append(doc)
    return Planted(docs, [f"doc-{i}" for i in range(documents)], [SOURCES[i % 3] for i in range(documents)],
                   refs, planted_docs)


def write_jsonl(p: Planted, path: Path) -> Path:
    rows = [json.dumps({"id": p.names[i], "text": p.text(i), "source": p.sources[i]})
            for i in range(len(p.docs))]
    data = ("\n".join(rows) + "\n").encode()
    if path.name.endswith(".zst"):
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def write_parquet(p: Planted, path: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"id": p.names, "text": [p.text(i) for i in range(len(p.docs))],
                             "source": p.sources}), path, row_group_size=16)
    return path


def write_hf(p: Planted, path: Path, *, tokenized: bool) -> Path:
    datasets = pytest.importorskip("datasets")
    column: dict[str, Any] = ({"input_ids": p.docs} if tokenized
                              else {"text": [p.text(i) for i in range(len(p.docs))]})
    ds = datasets.Dataset.from_dict({"id": p.names, **column, "source": p.sources})
    ds.save_to_disk(str(path), max_shard_size="2KB")  # several Arrow files
    return path


def write_megatron(p: Planted, prefix: Path) -> Path:
    if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("megatron-core (with torch) is not installed: pip install megatron-core")
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=np.uint16)
    for d in p.docs:
        builder.add_document(torch.tensor(d, dtype=torch.int64), [len(d)])
    builder.finalize(f"{prefix}.idx")
    return Path(f"{prefix}.idx")


def write_olmo(p: Planted, path: Path, eos: int = 0) -> Path:
    """An OLMo-core raw token array (no header), each document closed by ``eos``."""
    np.concatenate([np.array([*d, eos], dtype=np.uint16) for d in p.docs]).tofile(path)
    return path
