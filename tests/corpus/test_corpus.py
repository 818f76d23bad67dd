"""Tests of packing_theory.corpus: shards, text, per-rank streams, the default corpus."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.corpus import (
    CENSUS,
    default_corpus_fit,
    default_lengths,
    documents_from_texts,
    iter_parquet_texts,
    iter_text_files,
    lengths_from_shards,
    lengths_from_texts,
    rank_row_groups,
    rank_stream,
    rank_stream_from_parquet,
    read_shard,
    write_shard,
)
from packing_theory.errors import InputError

DOCS = [[1, 5, 6], [1, 7], [1], [1, 2, 3, 4]]


def toy(s: str) -> list[int]:
    return [ord(c) % 250 + 1 for c in s]


def _raw_shard(
    path: Path, vocab: int, n_docs: int, n_tokens: int, offsets: list[int], ids: list[int]
) -> Path:
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IIII", vocab, n_docs, n_tokens, 0))
        fh.write(np.asarray(offsets, dtype="<u4").tobytes())
        fh.write(np.asarray(ids, dtype="<u2").tobytes())
    return path


# --------------------------------------------------------------------------- shards


def test_shard_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.bin"
    write_shard(path, DOCS, vocab=8, flags=3)
    shard = read_shard(path, check_ids=True)
    assert (shard.vocab, shard.flags, shard.n_docs, shard.n_tokens) == (8, 3, 4, 10)
    assert shard.lengths().tolist() == [3, 2, 1, 4]
    assert shard.lengths().dtype == np.int64
    assert [d.tolist() for d in shard.documents()] == DOCS
    assert shard.document(-1).tolist() == DOCS[-1]
    assert os.path.getsize(path) == 16 + 4 * 5 + 2 * 10
    assert shard.validate(ids=True) is shard
    with pytest.raises(IndexError, match="out of range"):
        shard.document(4)


def test_shard_numpy_docs_and_full_vocab(tmp_path: Path) -> None:
    path = tmp_path / "s.bin"
    write_shard(path, [np.array([65535, 0], dtype=np.int64)], vocab=65536)
    assert read_shard(path, check_ids=True).document(0).tolist() == [65535, 0]


def test_lengths_from_shards_concatenates(tmp_path: Path) -> None:
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    write_shard(a, DOCS[:2], vocab=8)
    write_shard(b, DOCS[2:], vocab=8)
    assert lengths_from_shards([a, b]).tolist() == [3, 2, 1, 4]
    assert lengths_from_shards(a).tolist() == [3, 2]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        ("truncate", r"truncated"),
        ("trailing", r"2 trailing bytes"),
        ("tiny", r"shorter than the 16-byte header"),
        ("n_tokens", r"header implies"),
        ("vocab0", r"header vocab=0"),
    ],
)
def test_shard_size_and_header_errors(tmp_path: Path, mutate: str, message: str) -> None:
    path = tmp_path / "bad.bin"
    write_shard(path, DOCS, vocab=8)
    data = path.read_bytes()
    if mutate == "truncate":
        data = data[:-3]
    elif mutate == "trailing":
        data += b"\0\0"
    elif mutate == "tiny":
        data = data[:10]
    elif mutate == "n_tokens":
        data = struct.pack("<IIII", 8, 4, 11, 0) + data[16:]
    elif mutate == "vocab0":
        data = struct.pack("<IIII", 0, 4, 10, 0) + data[16:]
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as info:
        read_shard(path)
    assert "bad.bin" in str(info.value)


def test_shard_offsets_not_starting_at_zero(tmp_path: Path) -> None:
    path = _raw_shard(tmp_path / "o.bin", 8, 2, 3, [1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match=r"offsets\[0\]=1 \(must be 0\)"):
        read_shard(path)


def test_shard_decreasing_offsets(tmp_path: Path) -> None:
    path = _raw_shard(tmp_path / "d.bin", 8, 3, 4, [0, 3, 2, 4], [1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"offsets\[2\]=2 < offsets\[1\]=3 \(must be non-decreasing\)"):
        read_shard(path)


def test_shard_last_offset_mismatch(tmp_path: Path) -> None:
    path = _raw_shard(tmp_path / "l.bin", 8, 2, 4, [0, 1, 3], [1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"offsets\[2\]=3 != n_tokens=4"):
        read_shard(path)


def test_shard_zero_length_document(tmp_path: Path) -> None:
    path = _raw_shard(tmp_path / "z.bin", 8, 3, 3, [0, 2, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match=r"document 1 is empty"):
        read_shard(path)


def test_shard_id_out_of_vocab(tmp_path: Path) -> None:
    path = _raw_shard(tmp_path / "v.bin", 8, 2, 3, [0, 2, 3], [1, 9, 1])
    shard = read_shard(path)  # structure is fine; ids are checked on demand
    with pytest.raises(ValueError, match=r"ids\[1\]=9 >= vocab=8"):
        shard.validate(ids=True)
    with pytest.raises(ValueError, match=r"ids\[1\]=9 >= vocab=8"):
        read_shard(path, check_ids=True)
    with pytest.raises(ValueError, match=r"ids\[1\]=9 >= vocab=8"):
        lengths_from_shards([path], check_ids=True)


def test_empty_shard_is_readable_but_not_replayable(tmp_path: Path) -> None:
    path = tmp_path / "e.bin"
    write_shard(path, [], vocab=8)
    shard = read_shard(path)
    assert shard.n_docs == 0 and shard.n_tokens == 0 and shard.lengths().size == 0
    with pytest.raises(ValueError, match=r"empty.*at least one document"):
        lengths_from_shards([path])
    with pytest.raises(ValueError, match="paths is empty"):
        lengths_from_shards([])


def test_missing_shard(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_shard(tmp_path / "nope.bin")


@pytest.mark.parametrize(
    ("docs", "kwargs", "exc", "message"),
    [
        ([[1, 9]], {"vocab": 8}, ValueError, r"docs\[0\]\[1\]=9 is out of range for vocab=8"),
        ([[1], []], {"vocab": 8}, ValueError, r"docs\[1\] is empty"),
        ([[1]], {"vocab": 70000}, ValueError, r"vocab must be <= 65536"),
        ([[1]], {"vocab": 8.0}, TypeError, r"vocab must be an int"),
        ([[1.5]], {"vocab": 8}, TypeError, r"docs\[0\] must hold integer token ids"),
        ([[-1]], {"vocab": 8}, ValueError, r"docs\[0\]\[0\]=-1"),
    ],
)
def test_write_shard_rejects(
    tmp_path: Path, docs: object, kwargs: dict[str, object], exc: type, message: str
) -> None:
    with pytest.raises(exc, match=message):
        write_shard(tmp_path / "w.bin", docs, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- text


def test_lengths_from_texts_bos_and_batched() -> None:
    texts = ["hello", "", "ab"]
    assert lengths_from_texts(texts, toy).tolist() == [6, 1, 3]
    assert lengths_from_texts(texts[:1], toy, bos=False).tolist() == [5]
    batched = lengths_from_texts(texts, lambda b: [toy(s) for s in b], batched=True, batch_size=2)
    assert batched.tolist() == [6, 1, 3]
    assert batched.dtype == np.int64


def test_text_errors() -> None:
    with pytest.raises(ValueError, match="texts is empty"):
        lengths_from_texts([], toy)
    with pytest.raises(ValueError, match=r"texts\[1\] tokenized to 0 tokens"):
        lengths_from_texts(["a", ""], toy, bos=False)
    with pytest.raises(TypeError, match=r"texts\[0\] must be a str"):
        lengths_from_texts([b"x"], toy)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="returned 1 token lists for 2 texts"):
        lengths_from_texts(["a", "b"], lambda b: [[1]], batched=True)
    with pytest.raises(TypeError, match="tokenizer must be callable"):
        lengths_from_texts(["a"], 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        lengths_from_texts(["a"], toy, batch_size=0)


def test_documents_feed_token_rows() -> None:
    texts = ["abc", "d", "efgh"]
    docs = list(documents_from_texts(texts, toy, bos_id=0))
    assert docs[1] == [0, toy("d")[0]]
    assert [len(d) for d in docs] == lengths_from_texts(texts, toy).tolist()
    rows = list(pt.Packer(capacity=4, min_buffer=1, refill=1).token_rows(docs))
    assert all(len(r) == 4 and r[0] == 0 for r in rows)
    with pytest.raises(ValueError, match="tokenized to 0 tokens"):
        list(documents_from_texts([""], toy, bos_id=None))


def test_plain_text_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one doc\nstill one\n")
    b.write_text("x\n\ny\n")
    assert list(iter_text_files([a, b])) == ["one doc\nstill one\n", "x\n\ny\n"]
    assert list(iter_text_files([a, b], per_line=True)) == ["one doc", "still one", "x", "y"]
    with pytest.raises(ValueError, match="paths is empty"):
        iter_text_files([])
    with pytest.raises(FileNotFoundError, match=r"missing\.txt"):
        iter_text_files([tmp_path / "missing.txt"])
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(ValueError, match="not valid utf-8"):
        list(iter_text_files([tmp_path / "bad.txt"]))


# --------------------------------------------------------------------------- parquet


def _write_parquet(path: Path, groups: list[list[str]], column: str = "text") -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    schema = pa.schema([(column, pa.string())])
    with pq.ParquetWriter(str(path), schema) as writer:
        for g in groups:
            writer.write_table(pa.table({column: g}, schema=schema))
    return path


def test_parquet_round_trip_and_unknown_column(tmp_path: Path) -> None:
    path = _write_parquet(tmp_path / "a.parquet", [["aa", "b"], ["ccc"]])
    assert list(iter_parquet_texts(path)) == ["aa", "b", "ccc"]
    assert lengths_from_texts(iter_parquet_texts([path]), toy).tolist() == [3, 2, 4]
    with pytest.raises(ValueError, match=r"no column 'body'; available columns: \['text'\]"):
        iter_parquet_texts(path, column="body")
    with pytest.raises(ValueError, match="paths is empty"):
        iter_parquet_texts([])


def test_parquet_null_value(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"text": ["a", None]}), str(path))
    with pytest.raises(TypeError, match="row 1 is null"):
        list(iter_parquet_texts(path))


# --------------------------------------------------------------------------- ranks


@pytest.mark.parametrize(("n", "world"), [(0, 1), (1, 2), (7, 3), (16, 8), (5, 8)])
def test_rank_row_groups_partition(n: int, world: int) -> None:
    seen = sorted(g for r in range(world) for g in rank_row_groups(n, r, world))
    assert seen == list(range(n))
    for r in range(world):
        groups = list(rank_row_groups(n, r, world))
        # nanochat: rg_idx = rank, then rg_idx += world_size while rg_idx < num_row_groups
        expected, g = [], r
        while g < n:
            expected.append(g)
            g += world
        assert groups == expected


def test_rank_row_groups_rejects() -> None:
    with pytest.raises(ValueError, match=r"rank must be in 0..1 for world_size=2, got 2"):
        rank_row_groups(4, 2, 2)
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        rank_row_groups(4, 0, 0)
    with pytest.raises(TypeError, match="rank must be an int"):
        rank_row_groups(4, 0.0, 1)  # type: ignore[arg-type]


def test_rank_stream_batches_restart_per_row_group() -> None:
    groups = [[list(range(2, 302)), [5] * 3], [[7] * 130]]
    s0 = rank_stream(groups, 0, 2)
    assert s0.row_groups == ((0, 0), (1, 0))
    assert s0.refill == (128, 128, 44, 128, 2)
    assert sum(s0.refill) == s0.lengths.size == 430
    s1 = rank_stream(groups, 1, 2)
    assert s1.refill == (3,) and s1.lengths.tolist() == [5, 5, 5]
    cfg = s0.config(min_buffer=4, capacity=64)
    assert cfg.refill == s0.refill
    with pytest.raises(ValueError, match="rank 2 of world_size 3 receives no documents"):
        rank_stream([[[3]], [[4]]], 2, 3)


def test_rank_stream_from_parquet_matches_lengths(tmp_path: Path) -> None:
    texts = [[f"doc{i}-{j}" * (j + 1) for j in range(3 + i)] for i in range(5)]
    a = _write_parquet(tmp_path / "a.parquet", texts[:3])
    b = _write_parquet(tmp_path / "b.parquet", texts[3:])
    s = rank_stream_from_parquet([a, b], toy, 1, 2, batch_size=2)
    expected = texts[1] + texts[3 + 1]
    assert s.row_groups == ((0, 1), (1, 1))
    assert s.lengths.tolist() == [len(t) + 1 for t in expected]
    assert s.refill == (2, 2, 2, 2, 2, 1)  # 4 docs -> 2+2, then 7 docs -> 2+2+2+1
    with pytest.raises(ValueError, match="available columns"):
        rank_stream_from_parquet([a], toy, 0, 1, column="content")


# --------------------------------------------------------------------------- default corpus


def test_default_corpus_exact_targets() -> None:
    a = default_lengths()
    assert a.dtype == np.int64 and a.size == CENSUS.sources == 846_848
    assert int(a.sum()) == CENSUS.tokens == 631_241_817
    for t, n in CENSUS.thresholds:
        assert int((a >= t).sum()) == n
    assert int(a.max()) == 290_219 and int((a == a.max()).sum()) == 1
    assert int(a.min()) >= 2
    fit = default_corpus_fit(a)
    assert fit.exact_ok
    assert "sources_ge_16384" in fit.table()


def test_default_corpus_deterministic_and_seeded() -> None:
    a, b, c = default_lengths(0), default_lengths(0), default_lengths(1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert default_corpus_fit(c).exact_ok
    with pytest.raises(ValueError, match="seed must be >= 0"):
        default_lengths(-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        default_lengths(1.0)  # type: ignore[arg-type]


@pytest.mark.slow
def test_default_corpus_soft_fit() -> None:
    fit = default_corpus_fit(replay=True, permutations=2)
    assert abs(fit["consumed_sources"].rel_error) < 0.02
    assert abs(fit["discarded_tokens"].rel_error) < 0.05
    assert abs(fit["crop_events"].rel_error) < 0.03
    assert 12_000_000 < fit["first_over_capacity_target"].measured < 16_000_000


def test_parquet_text_column_named_twice_is_bad_input(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "dup.parquet"
    table = pa.Table.from_arrays([pa.array(["a b"]), pa.array(["c"])], names=["text", "text"])
    pq.write_table(table, str(path))
    with pytest.raises(InputError, match=r"dup\.parquet' has 2 columns named 'text'"):
        iter_parquet_texts(path)
    other = tmp_path / "other.parquet"  # a repeated column the reader does not read is no obstacle
    pq.write_table(pa.Table.from_arrays([pa.array(["a b"]), pa.array(["c"]), pa.array(["d"])],
                                        names=["text", "meta", "meta"]), str(other))
    assert list(iter_parquet_texts(other)) == ["a b"]
