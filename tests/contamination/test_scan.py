"""The contamination scan: vectorised hashes equal the per-window oracle, overlaps equal set intersection.

The oracle (``packing_theory.contamination.naive``) compares tuples of token
ids in Python sets, with no hashing at all, so these tests also check that
the 64-bit hashing loses nothing on the inputs drawn.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing_theory.contamination import (
    CorpusInput,
    GramTable,
    IndexBuilder,
    ReferenceSpec,
    block_hits,
    expected_false_positives,
    naive_gram_set,
    naive_matches,
    naive_scan,
    naive_window_hash,
    scan_contamination,
    text_token_ids,
    window_counts,
    window_hashes,
)
from packing_theory.contamination.index import unique_members
from packing_theory.contamination.table import compiled_scan_available
from packing_theory.contamination.tokens import ReferenceItems, reference_pieces
from packing_theory.corpus import write_shards
from packing_theory.errors import InputError, InputTypeError
from packing_theory.testing import scaled_examples

token_lists = st.lists(st.integers(0, 2**64 - 1), max_size=80)


@given(ids=token_lists, n=st.integers(1, 40), chunk=st.integers(1, 9), small=st.booleans())
def test_vectorised_hash_equals_naive(ids: list[int], n: int, chunk: int, small: bool) -> None:
    if small:  # shards' uint16 ids take the table path
        ids = [x & 0xFFFF for x in ids]
    h = window_hashes(np.array(ids, dtype=np.uint16 if small else np.uint64), n, chunk=chunk)
    assert h.dtype == np.uint64 and h.size == max(0, len(ids) - n + 1)
    assert [int(x) for x in h] == [naive_window_hash(ids[j : j + n]) for j in range(len(ids) - n + 1)]


def test_hash_by_hand() -> None:
    # the formula on one window, written out with Python ints independently of both implementations
    mask = 2**64 - 1

    def mix(z: int) -> int:
        z ^= z >> 30
        z = z * 0xBF58476D1CE4E5B9 & mask
        z ^= z >> 27
        z = z * 0x94D049BB133111EB & mask
        return z ^ (z >> 31)

    u = [mix(x + 0x9E3779B97F4A7C15) for x in (7, 0, 65535)]
    expected = (u[0] * 0xD6E8FEB86659FD93**2 + u[1] * 0xD6E8FEB86659FD93 + u[2]) & mask
    assert int(window_hashes(np.array([7, 0, 65535], dtype=np.uint16), 3)[0]) == expected
    assert naive_window_hash([7, 0, 65535]) == expected
    # the dtype of the ids does not change the hash
    a = window_hashes(np.array([1, 2, 3, 4], dtype=np.uint16), 2)
    b = window_hashes(np.array([1, 2, 3, 4], dtype=np.int64), 2)
    assert a.tolist() == b.tolist() and len(set(a.tolist())) == 3


def test_expected_false_positives_formula() -> None:
    assert expected_false_positives(2**32, 2**32) == 1.0
    assert expected_false_positives(10, 0) == 0.0
    assert expected_false_positives(3, 2**10, bits=12) == 3 * 2**10 / 2**12
    with pytest.raises(InputError, match="windows must be >= 0, got -1"):
        expected_false_positives(-1, 1)


docs_st = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=25), min_size=1, max_size=12)
refs_st = st.lists(st.lists(st.integers(0, 3), max_size=25), min_size=1, max_size=4)


KERNELS = [False, True] if compiled_scan_available() else [False]
"""The numpy lookup, and the compiled loop when numba is installed: the same answers."""


def vector_matches(docs: list[list[int]], refs: list[list[int]], n: int, skip: int, memory_grams: int,
                   compiled: bool = False) -> tuple[list[int], int]:
    """Per-document matches through the index and block_hits (every pass), and the passes used."""
    builder = IndexBuilder(1, memory_grams)
    for ref in refs:
        builder.add(window_hashes(np.array(ref, dtype=np.uint64), n), 0)
        builder._check()
    ids = np.array([t for d in docs for t in d], dtype=np.uint64)
    offsets = np.concatenate(([0], np.cumsum([len(d) for d in docs]))).astype(np.int64)
    matched = np.zeros(len(docs), dtype=np.int64)
    with builder.finish() as index:
        index._check()
        for table in index.tables():
            table._check()
            d, pos = block_hits(ids, offsets[:-1], offsets[1:], skip, n, table, compiled=compiled)
            assert d.shape == pos.shape and bool(np.all(pos < len(table)))
            matched += np.bincount(d, minlength=len(docs))
        passes = index.passes
    return matched.tolist(), passes


@settings(max_examples=scaled_examples(40))  # over two minutes at the profile's 200 on a shared machine
@given(docs=docs_st, refs=refs_st, n=st.integers(1, 5), skip=st.integers(0, 1),
       memory_grams=st.sampled_from([1, 3, 10**6]), compiled=st.sampled_from(KERNELS))
def test_overlaps_equal_naive_set_intersection(docs: list[list[int]], refs: list[list[int]], n: int,
                                               skip: int, memory_grams: int, compiled: bool) -> None:
    got, passes = vector_matches(docs, refs, n, skip, memory_grams, compiled)
    assert got == naive_matches(docs, refs, n, skip=skip)
    assert got == naive_scan(docs, refs, n, skip=skip, dtype="<u1")  # the bytes-keyed oracle agrees
    grams = len(naive_gram_set(refs, n))
    assert passes == (1 if grams <= memory_grams else -(-grams // memory_grams))  # passes of the bound
    lengths = np.array([len(d) for d in docs])
    assert window_counts(np.concatenate(([0], np.cumsum(lengths))), skip, n).tolist() == [
        max(0, len(d) - skip - n + 1) for d in docs]


@given(keys=st.lists(st.integers(0, 2**64 - 1), max_size=40), data=st.data())
def test_unique_members_is_or_by_key(keys: list[int], data: st.DataObject) -> None:
    members = data.draw(st.lists(st.integers(1, 255), min_size=len(keys), max_size=len(keys)))
    k, m = unique_members(np.array(keys, dtype=np.uint64), np.array(members, dtype=np.uint8))
    expected: dict[int, int] = {}
    for key, bits in zip(keys, members, strict=True):
        expected[key] = expected.get(key, 0) | bits
    assert [int(x) for x in k] == sorted(expected)
    assert [int(x) for x in m] == [expected[x] for x in sorted(expected)]


def test_disk_index_is_sorted_in_passes_of_the_bound_and_cleans_up(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    refs = [rng.integers(0, 1000, size=400).astype(np.uint64) for _ in range(3)]
    builder = IndexBuilder(3, 150, directory=tmp_path)
    for r, ref in enumerate(refs):
        builder.add(window_hashes(ref, 5), r)
        builder._check()
    assert builder.spilled and builder.peak_grams == 150
    index = builder.finish()
    index._check()
    distinct = {naive_window_hash(ref[j : j + 5].tolist()) for ref in refs for j in range(396)}
    assert index.mode == "disk" and index.grams == len(distinct) and index.passes == -(-len(distinct) // 150)
    assert index.largest_pass_grams == 150 and builder.peak_grams <= 150
    assert index.reference_grams == tuple(len(set(window_hashes(ref, 5).tolist())) for ref in refs)
    tables = list(index.tables())
    keys = np.concatenate([t.keys for t in tables])
    assert keys.tolist() == sorted(distinct)  # the passes are consecutive ranges of the sorted hashes
    for t in tables:
        t._check()
        assert len(t) <= 150
    for r, ref in enumerate(refs):  # every gram of reference r carries bit r
        members = np.concatenate([t.members for t in tables])
        pos = np.searchsorted(keys, window_hashes(ref, 5))
        assert bool(np.all(members[pos] >> r & 1))
    assert index.directory is not None and os.path.isdir(index.directory)
    assert index.directory.startswith(str(tmp_path)) and sorted(os.listdir(index.directory)) == [
        "keys.u64", "members.bin"]
    index.close()
    assert not os.path.exists(index.directory) and os.listdir(tmp_path) == []


def test_index_refuses_misuse() -> None:
    b = IndexBuilder(2, 10)
    with pytest.raises(InputError, match="reference must be <= 1, got 2"):
        b.add(np.zeros(3, np.uint64), 2)
    with pytest.raises(InputError, match="hashes must be a 1-D uint64 array, got int64"):
        b.add(np.zeros(3, np.int64), 0)
    b.finish()
    with pytest.raises(InputError, match="add\\(\\) after finish"):
        b.add(np.zeros(1, np.uint64), 0)
    with pytest.raises(InputError, match="references must be <= 64, got 65"):
        IndexBuilder(65)
    t = GramTable(np.array([5, 3], dtype=np.uint64), np.array([1, 1], dtype=np.uint8))
    with pytest.raises(AssertionError, match="strictly increasing"):
        t._check()


@given(text=st.text(max_size=40))
def test_builtin_tokenizers_give_ids(text: str) -> None:
    ids_bytes, = text_token_ids([text], "bytes")
    assert ids_bytes.tolist() == list(text.encode("utf-8", "surrogatepass"))
    ids_chars, = text_token_ids([text], "chars")
    assert ids_chars.tolist() == [ord(c) for c in text]
    words, = text_token_ids([text], "whitespace")
    again, = text_token_ids([" ".join(text.split())], "whitespace")
    assert words.size == len(text.split()) and words.tolist() == again.tolist()


def test_tokenizer_errors_name_the_text() -> None:
    with pytest.raises(InputError, match="texts\\[0\\]: token id -1 at position 1 is negative"):
        list(text_token_ids(["x"], lambda s: [1, -1]))
    with pytest.raises(InputTypeError, match="texts\\[1\\] must be a str, got int"):
        list(text_token_ids(["a", 3], "bytes"))  # type: ignore[list-item]
    with pytest.raises(InputError, match="tokenizer must be a callable or one of bytes, chars, whitespace"):
        list(text_token_ids(["a"], "words"))  # type: ignore[arg-type]


def _shards(d: str, docs: list[list[int]]) -> list[CorpusInput]:
    m = write_shards(d, docs, vocab=8, shard_tokens=30, sources=["a"] * len(docs), bos_id=0)
    return [CorpusInput(os.path.join(d, s["path"]), "shard", source="a") for s in m["shards"]]


@settings(max_examples=scaled_examples(40))  # two minutes at the profile's 200 on a shared machine
@given(docs=st.lists(st.lists(st.integers(1, 3), min_size=0, max_size=20), min_size=1, max_size=10),
       refs=refs_st.map(lambda rs: [[x + 1 for x in r] for r in rs]), n=st.integers(1, 4),
       memory_grams=st.sampled_from([2, 10**6]), compiled=st.sampled_from(KERNELS))
@example(docs=[[], [], [], [], [1] * 4, [1] * 5, [1] * 5, [1] * 8, [1]], refs=[[1]], n=1, memory_grams=2,
         compiled=False)  # the last document is alone in the second shard: named by that shard's file
def test_scan_over_shards_equals_naive(docs: list[list[int]], refs: list[list[int]], n: int,
                                       memory_grams: int, compiled: bool) -> None:
    docs = [[0, *d] for d in docs]  # BOS-inclusive shard documents
    with tempfile.TemporaryDirectory() as d:
        inputs = _shards(d, docs)
        ref_path = os.path.join(d, "ref.txt")
        Path(ref_path).write_text("\n".join(" ".join(map(str, r)) for r in refs) + "\n")
        spec = ReferenceSpec(ref_path, per_line=True)
        rep = scan_contamination(inputs, [spec], tokenizer=lambda s: [int(x) for x in s.split()], n=n,
                                 memory_grams=memory_grams, compiled=compiled)
    expected = naive_matches(docs, [r for r in refs if r], n, skip=1)
    if not naive_gram_set(refs, n):  # nothing to compare with: not measured, nothing scanned
        assert rep.reference_grams == 0 and rep.status == 3 and not any(r.read for r in rep.inputs)
        return
    grams = [max(0, len(doc) - 1 - n + 1) for doc in docs]
    assert rep.matched_grams == sum(expected) and rep.grams_scanned == sum(grams)
    assert rep.documents_with_any_hit == sum(x > 0 for x in expected)
    assert rep.majority_hit_documents == sum(2 * x > g for x, g in zip(expected, grams, strict=True))
    assert rep.status == (3 if rep.reasons else 1 if sum(expected) else 0)  # "not measured" wins
    assert [h.index for h in rep.hit_documents] == [j for j, x in enumerate(expected) if x]
    assert [h.matched_grams for h in rep.hit_documents] == [x for x in expected if x]
    # named by place as the corpus names it: the shard file for its only document, else FILE#i
    per_input = {r.name: r.documents for r in rep.inputs}
    assert sum(per_input.values()) == len(docs)
    assert all(h.source == "a" for h in rep.hit_documents)
    assert all(h.name == (h.input if per_input[h.input] == 1 else f"{h.input}#{h.position}")
               for h in rep.hit_documents)
    assert rep.index["peak_grams"] <= memory_grams
    if rep.mask is not None:
        assert rep.mask.tolist() == [int(x > 0) for x in expected]
        assert rep.lengths is not None and rep.lengths.tolist() == [len(doc) for doc in docs]
    else:
        assert rep.reasons  # no mask only when something was not measured


def test_reference_rows_and_empty_references_are_not_measured(tmp_path: Path) -> None:
    inputs = _shards(str(tmp_path / "s"), [[0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7]])
    good = tmp_path / "good.txt"
    good.write_text("1 2 3 4\n")
    short = tmp_path / "short.txt"
    short.write_text("1 2\n\n")
    tok = lambda s: [int(x) for x in s.split()]  # noqa: E731
    rep = scan_contamination(inputs, [ReferenceSpec(str(good), per_line=True, declared_rows=2),
                                      ReferenceSpec(str(short), per_line=True),
                                      ReferenceSpec(str(tmp_path / "missing.txt"))], tokenizer=tok, n=4)
    assert rep.status == 3 and rep.mask is None  # "not measured" wins over what was found; no mask
    assert rep.reasons == [
        f"reference '{good}' yielded 1 rows, 2 declared",
        f"reference '{short}' yielded no 4-gram (1 items, 2 tokens)",
        f"reference '{tmp_path / 'missing.txt'}' was not read (FileNotFoundError: text file "
        f"'{tmp_path / 'missing.txt'}' does not exist)",
    ]
    assert [r.read for r in rep.references] == [True, True, False]
    assert rep.references[0].grams_found == 1 and rep.references[0].matched_grams == 2
    rep = scan_contamination(inputs, [ReferenceSpec(str(short), per_line=True)], tokenizer=tok, n=4)
    assert rep.status == 3 and rep.inputs[0].read is False
    assert rep.inputs[0].error == "not scanned: no reference yielded a gram"


def test_scan_refuses_bad_arguments(tmp_path: Path) -> None:
    ref = ReferenceSpec(str(tmp_path / "r.txt"))
    inp = CorpusInput(str(tmp_path / "x.bin"))
    with pytest.raises(InputError, match="inputs is empty"):
        scan_contamination([], [ref])
    with pytest.raises(InputError, match="references is empty: give at least one reference set"):
        scan_contamination([inp], [])
    with pytest.raises(InputError, match="is listed twice"):
        scan_contamination([inp], [ref, ref])
    with pytest.raises(InputError, match="exclude must be one of any, majority, got 'all'"):
        scan_contamination([inp], [ref], exclude="all")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="per_line applies to text inputs, not shard"):
        CorpusInput("x.bin", "shard", per_line=True)
    with pytest.raises(InputError, match="per_line applies to plain text, not parquet"):
        ReferenceSpec("r.parquet", per_line=True)


def test_a_reference_column_named_twice_is_bad_input(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "ref.parquet"
    table = pa.Table.from_arrays([pa.array(["1 2"]), pa.array(["3 4"])], names=["text", "text"])
    pq.write_table(table, str(path))
    with pytest.raises(InputError, match=r"ref\.parquet' has 2 columns named 'text'"):
        list(reference_pieces(ReferenceSpec(str(path)), lambda s: [int(x) for x in s.split()],
                              ReferenceItems()))
