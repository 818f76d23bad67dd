"""The reference index never holds more than ``memory_grams`` grams, whatever the references.

Counts of grams held (the builder's :attr:`peak_grams`, the passes' sizes),
never RSS: this is the memory regression check, and it is not timed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory.contamination import (
    CorpusInput,
    IndexBuilder,
    ReferenceSpec,
    naive_window_hash,
    scan_contamination,
    window_hashes,
)
from packing_theory.contamination.table import GramTable, unique_members
from packing_theory.corpus import write_shards
from packing_theory.testing import scaled_examples


def test_a_one_item_reference_far_larger_than_the_bound_keeps_the_index_within_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one item (a whole file) of 300,000 characters: 299,988 windows of 13 chars, nearly all distinct,
    # against a bound of 2,000 grams held at once, read 5,000 characters at a time
    monkeypatch.setattr("packing_theory.contamination.tokens.PIECE_CHARS", 5000)
    rng = np.random.default_rng(5)
    text = "".join(chr(0x4E00 + int(x)) for x in rng.integers(0, 20000, 300_000))
    (tmp_path / "ref.txt").write_text(text, encoding="utf-8")
    planted = [text[1000:1040], text[250_000:250_013]]
    (tmp_path / "train.txt").write_text("\n".join(["x" * 50, *planted, "y" * 30]) + "\n", encoding="utf-8")
    rep = scan_contamination([CorpusInput(str(tmp_path / "train.txt"), "text", per_line=True)],
                             [ReferenceSpec(str(tmp_path / "ref.txt"))], tokenizer="chars", n=13,
                             memory_grams=2000, index_dir=tmp_path / "idx")
    ref = rep.references[0]
    assert ref.items == 1 and ref.windows == 300_000 - 12 and ref.tokens == 300_000
    assert ref.pieces == 60 and ref.largest_piece_tokens == 5000  # never the whole item's ids at once
    assert rep.index["mode"] == "disk" and rep.index["peak_grams"] <= 2000
    assert rep.index["largest_pass_grams"] <= 2000 and rep.index["passes"] >= rep.reference_grams / 2000
    assert rep.reference_grams == len({text[j : j + 13] for j in range(300_000 - 12)})
    assert [h.index for h in rep.hit_documents] == [1, 2] and rep.matched_grams == 28 + 1
    assert rep.status == 1 and os.listdir(tmp_path / "idx") == []


def test_a_reference_of_few_distinct_grams_never_spills(tmp_path: Path) -> None:
    # the case that once peaked at 2.45 GB: one huge item with 14 distinct grams; now the buffer dedupes
    (tmp_path / "ref.txt").write_text("abcdefghijklmnopqrstuvwxyz" * 40_000)
    builder = IndexBuilder(1, 64)
    for start in range(0, 1_040_000, 100_000):  # the item's windows arrive piece by piece, as in a scan
        piece = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz" * 4000, dtype=np.uint8)[start % 26 :]
        builder.add(window_hashes(piece, 13), 0)
        builder._check()
    index = builder.finish()
    index._check()
    assert index.mode == "memory" and index.grams == 26 and builder.peak_grams == 64


def test_a_partition_of_one_repeated_hash_is_reduced_while_streaming(tmp_path: Path) -> None:
    # each spill holds the same hash K: its partition holds one copy per spill, more than the bound, and all
    # its 8 bytes are fixed, so it is OR-ed in pieces of the bound (the deepest level of splitting)
    builder = IndexBuilder(3, 4, directory=tmp_path)
    k = np.uint64(0xABCDEF0123456789)
    rng = np.random.default_rng(1)
    for i in range(12):
        others = rng.integers(0, 2**63, size=3, dtype=np.uint64)
        builder.add(np.concatenate(([k], others)).astype(np.uint64), i % 3)
        builder._check()
    index = builder.finish()
    index._check()
    keys = np.concatenate([t.keys for t in index.tables()])
    members = np.concatenate([t.members for t in index.tables()])
    assert int(members[np.searchsorted(keys, k)]) == 0b111 and index.grams == 1 + 36
    assert builder.peak_grams <= 4 and index.largest_pass_grams <= 4
    index.close()


@settings(max_examples=scaled_examples(60))
@given(chunks=st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=12),
       refs=st.integers(1, 3), bound=st.integers(1, 12))
def test_any_bound_gives_the_same_grams(chunks: list[list[int]], refs: int, bound: int) -> None:
    expected: dict[int, int] = {}
    builder = IndexBuilder(refs, bound)
    for i, chunk in enumerate(chunks):
        hashes = np.array([naive_window_hash([x]) for x in chunk], dtype=np.uint64)
        builder.add(hashes, i % refs)
        builder._check()
        for h in hashes.tolist():
            expected[h] = expected.get(h, 0) | 1 << (i % refs)
    with builder.finish() as index:
        index._check()
        tables = list(index.tables())
        assert builder.peak_grams <= bound and all(len(t) <= bound for t in tables)
        keys = [int(x) for t in tables for x in t.keys]
        members = [int(x) for t in tables for x in t.members]
        assert keys == sorted(expected) and members == [expected[x] for x in keys]


def test_table_lookup_finds_exactly_the_keys() -> None:
    rng = np.random.default_rng(2)
    keys = np.unique(rng.integers(0, 2**64 - 1, size=5000, dtype=np.uint64))
    table = GramTable(keys, np.ones(keys.size, dtype=np.uint8))
    table._check()
    probe = np.concatenate((keys[::7], rng.integers(0, 2**64 - 1, size=20000, dtype=np.uint64)))
    i, j = table.lookup(probe)
    assert np.array_equal(probe[i], keys[j])
    assert set(i.tolist()) == {k for k, h in enumerate(probe.tolist()) if h in set(keys.tolist())}
    k, m = unique_members(probe, np.ones(probe.size, np.uint8))
    assert k.size == np.unique(probe).size and bool(np.all(m == 1))


def test_the_index_files_of_a_memory_index_load_in_a_worker(tmp_path: Path) -> None:
    builder = IndexBuilder(2, 100, directory=tmp_path)
    builder.add(np.array([9, 3, 5], dtype=np.uint64), 0)
    builder.add(np.array([5, 7], dtype=np.uint64), 1)
    with builder.finish() as index:
        files = index.files()
        assert files.passes == ((0, 4),) and index.directory is not None
        t = files.table(0)
        assert t.keys.tolist() == [3, 5, 7, 9] and t.members.tolist() == [1, 3, 2, 1]
        with open(files.keys, "r+b") as fh:  # a file cut short is an error, not a smaller table
            fh.truncate(8)
        with pytest.raises(OSError, match="shorter than its 4 grams"):
            files.table(0)
    assert os.listdir(tmp_path) == []


def test_shard_documents_hit_across_passes_are_counted_once(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    ref = rng.integers(1, 200, size=400).tolist()
    docs = [[0, *ref[i : i + 30]] for i in range(0, 360, 36)] + [[0, *rng.integers(1, 200, 40).tolist()]]
    m = write_shards(tmp_path, docs, vocab=200, shard_tokens=200, sources=["s"] * len(docs), bos_id=0)
    inputs = [CorpusInput(str(tmp_path / s["path"]), "shard") for s in m["shards"]]
    (tmp_path / "r.txt").write_text(" ".join(map(str, ref)))
    tok = lambda s: [int(x) for x in s.split()]  # noqa: E731
    one = scan_contamination(inputs, [ReferenceSpec(str(tmp_path / "r.txt"))], tokenizer=tok, n=5)
    many = scan_contamination(inputs, [ReferenceSpec(str(tmp_path / "r.txt"))], tokenizer=tok, n=5,
                              memory_grams=16)
    assert one.index["passes"] == 1 and many.index["passes"] == -(-one.reference_grams // 16)
    assert [h.to_dict() for h in many.hit_documents] == [h.to_dict() for h in one.hit_documents]
    assert len(one.hit_documents) == 10 and all(h.matched_grams == 26 for h in one.hit_documents)
    assert many.grams_found == one.grams_found and many.mask is not None and one.mask is not None
    assert many.mask.tolist() == one.mask.tolist()
