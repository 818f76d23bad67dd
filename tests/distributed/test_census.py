"""The census without Dask: equal to the serial length functions, resumable, checked, retried."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus import iter_parquet_texts, lengths_from_shards, lengths_from_texts
from packing_theory.corpus.text import lengths_from_text_files
from packing_theory.distributed import (
    CensusOptions,
    ResultRejected,
    TaskFailed,
    TaskRunner,
    census_shard,
    open_runner,
    parse_executor_spec,
    run_census,
    verify_census,
)
from packing_theory.distributed.census import blake2b_64, check_shard_result
from tests.distributed_helpers import KillOnce, make_parquet, make_shards, make_texts, strip_run_fields


@pytest.fixture
def texts(tmp_path: Path) -> list[str]:
    return make_texts(str(tmp_path))


def test_text_census_equals_lengths_from_text_files(tmp_path: Path, texts: list[str]) -> None:
    opts = CensusOptions("text", "whitespace", per_line=True)
    res = run_census(texts, opts, tmp_path / "out")
    expected = lengths_from_text_files(texts, "whitespace", per_line=True)
    assert res.lengths.dtype == np.int64 and np.array_equal(res.lengths, expected)
    on_disk = np.load(tmp_path / "out" / "lengths.npy")
    assert on_disk.tobytes() == expected.tobytes()
    m = json.loads((tmp_path / "out" / "census.json").read_text())
    assert [s["n_docs"] for s in m["shards"]] == [120] * 4
    assert m["n_docs"] == expected.size and m["n_tokens"] == int(expected.sum())
    assert m["tokenizer"] == {"kind": "builtin", "name": "whitespace"}
    assert m["execution"]["computed"] == 4 and m["execution"]["reused"] == 0
    assert verify_census(tmp_path / "out") == []


def test_hashes_and_byte_lengths(tmp_path: Path, texts: list[str]) -> None:
    dup = tmp_path / "dup.txt"
    dup.write_text(Path(texts[0]).read_text())
    res = run_census([*texts, str(dup)], CensusOptions("text", "bytes", per_line=True, hashes=True),
                     tmp_path / "out")
    docs = [line for p in [*texts, str(dup)] for line in Path(p).read_text().splitlines() if line.strip()]
    sizes = np.load(tmp_path / "out" / "doc_bytes.npy")
    hashes = np.load(tmp_path / "out" / "doc_hashes.npy")
    assert sizes.tolist() == [len(d.encode()) for d in docs]
    assert np.array_equal(res.lengths, sizes + 1)  # bytes tokenizer: one token per byte, plus BOS
    assert hashes.dtype == np.uint64 and hashes.tolist() == [blake2b_64(d.encode()) for d in docs]
    assert res.manifest["duplicate_documents"] == len(docs) - len(set(docs))


def test_shard_census_equals_lengths_from_shards(tmp_path: Path) -> None:
    shards = make_shards(str(tmp_path))
    res = run_census(shards, CensusOptions("shards"), tmp_path / "out", workers=2)
    assert res.lengths.tobytes() == lengths_from_shards(shards).tobytes()
    assert res.manifest["tokenizer"]["kind"] == "none"


def test_parquet_census_equals_serial_and_records_row_groups(tmp_path: Path) -> None:
    files = make_parquet(str(tmp_path))
    res = run_census(files, CensusOptions("parquet", "chars"), tmp_path / "out")
    assert np.array_equal(res.lengths, lengths_from_texts(iter_parquet_texts(files), "chars"))
    assert res.manifest["shards"][0]["row_groups"] == [32] * 6 + [8]


def test_callable_tokenizer_equals_builtin(tmp_path: Path, texts: list[str]) -> None:
    tok = KillOnce(str(tmp_path / "never"), trigger="\x00never")
    a = run_census(texts, CensusOptions("text", tok, per_line=True), tmp_path / "a")
    b = run_census(texts, CensusOptions("text", "whitespace", per_line=True), tmp_path / "b")
    assert np.array_equal(a.lengths, b.lengths)
    ident = dict(a.manifest["tokenizer"])
    assert len(ident.pop("probe_sha256")) == 64
    assert ident == {"kind": "callable", "name": "tests.distributed_helpers.KillOnce instance"}


def test_local_processes_equal_serial(tmp_path: Path, texts: list[str]) -> None:
    opts = CensusOptions("text", "whitespace", per_line=True, hashes=True)
    serial = run_census(texts, opts, tmp_path / "serial")
    para = run_census(texts, opts, tmp_path / "para", workers=2)
    pool = ThreadPoolExecutor(2)
    try:
        given = run_census(texts, opts, tmp_path / "given", executor=pool)
    finally:
        pool.shutdown()
    for other in (para, given):
        assert other.lengths.tobytes() == serial.lengths.tobytes()
        assert strip_run_fields(other.manifest) == strip_run_fields(serial.manifest)
    assert para.manifest["execution"]["executor"] == "local, 2 processes"
    assert given.manifest["execution"]["executor"] == "ThreadPoolExecutor"


def test_interrupted_census_resumes_only_the_unfinished_shards(tmp_path: Path, texts: list[str]) -> None:
    out = tmp_path / "out"
    failing = KillOnce(str(tmp_path / "m"), trigger="shard2 ", mode="raise", always=True)
    with pytest.raises(TaskFailed, match=r"census of '.*t2\.txt' failed after 1 attempt"):
        run_census(texts, CensusOptions("text", failing, per_line=True), out, retries=0)
    assert not (out / "census.json").exists()  # nothing half-written
    assert len(list((out / "parts").glob("*.json"))) == 3  # the finished shards survived
    healed = KillOnce(str(tmp_path / "m"), trigger="shard2 ", mode="raise")  # same name: same parts key
    res = run_census(texts, CensusOptions("text", healed, per_line=True), out)
    assert (res.reused, res.computed) == (3, 1) and res.summary_line == "reused 3, computed 1"
    assert np.array_equal(res.lengths, lengths_from_text_files(texts, "whitespace", per_line=True))
    again = run_census(texts, CensusOptions("text", healed, per_line=True), out)
    assert (again.reused, again.computed) == (4, 0)
    assert strip_run_fields(again.manifest) == strip_run_fields(res.manifest)


def test_corrupt_part_changed_input_and_new_options_are_recomputed(tmp_path: Path, texts: list[str]) -> None:
    out = tmp_path / "out"
    opts = CensusOptions("text", "whitespace", per_line=True)
    first = run_census(texts, opts, out)
    part = out / "parts" / f"{first.manifest['shards'][1]['part']}.lengths.npy"
    data = bytearray(part.read_bytes())
    data[-1] ^= 1
    part.write_bytes(bytes(data))
    with open(texts[3], "a", encoding="utf-8") as fh:
        fh.write("one more document\n")
    res = run_census(texts, opts, out)
    assert (res.reused, res.computed) == (2, 2)
    assert res.lengths.size == first.lengths.size + 1
    statuses = [t["status"] for t in res.manifest["execution"]["tasks"]]
    assert statuses == ["reused", "computed", "reused", "computed"]
    other = run_census(texts, CensusOptions("text", "chars", per_line=True), out)
    assert (other.reused, other.computed) == (0, 4)
    reordered = run_census(list(reversed(texts)), opts, out)  # parts are keyed by content
    assert (reordered.reused, reordered.computed) == (4, 0)


def test_results_are_checked_before_acceptance(tmp_path: Path, texts: list[str]) -> None:
    opts = CensusOptions("text", "whitespace", per_line=True)
    good = census_shard(texts[0], opts)
    assert check_shard_result(good, good.input_sha256, opts) is good
    import dataclasses

    bad = [dataclasses.replace(good, n_docs=good.n_docs + 1),
           dataclasses.replace(good, lengths=good.lengths.astype(np.int32)),
           dataclasses.replace(good, lengths=good.lengths[::-1].copy()),  # same counts, other digest
           dataclasses.replace(good, input_sha256="0" * 64)]
    for value in bad:
        with pytest.raises(ResultRejected, match=r"census|input changed"):
            check_shard_result(value, good.input_sha256, opts)
    with pytest.raises(ResultRejected, match="not a ShardResult"):
        check_shard_result((1, 2), good.input_sha256, opts)


def test_rejected_results_are_retried_then_reported() -> None:
    seen: list[int] = []

    def accept(i: int, value: int) -> None:
        seen.append(i)
        if value == 9 and seen.count(i) == 1:
            raise ValueError("first result of task 1 rejected")

    got: dict[int, int] = {}
    with open_runner("local", workers=1, retries=1) as runner:
        records = runner.run(pow, [(2, 3), (3, 2)], on_result=got.__setitem__, accept=accept)
        runner._check()
    assert got == {0: 8, 1: 9} and [r.attempts for r in records] == [1, 2]
    with open_runner(None, retries=0) as runner, pytest.raises(TaskFailed, match="task 0 failed") as info:
        runner.run(int, [("x",)], on_result=got.__setitem__)
    assert isinstance(info.value.__cause__, ValueError)


def test_a_dead_process_is_resubmitted_on_a_fresh_pool(tmp_path: Path, texts: list[str]) -> None:
    tok = KillOnce(str(tmp_path / "marker"), trigger="shard1 ", mode="exit")
    with open_runner("local", workers=2) as runner:
        res = run_census(texts, CensusOptions("text", tok, per_line=True), tmp_path / "out", executor=runner)
        runner._check()
        assert runner.fresh_pools == 1
    assert (tmp_path / "marker").exists()
    assert np.array_equal(res.lengths, lengths_from_text_files(texts, "whitespace", per_line=True))
    attempts = {t["input"]: t["attempts"] for t in res.manifest["execution"]["tasks"]}
    assert attempts[1] == 2 and all(a in (1, 2) for a in attempts.values())


def test_runner_and_spec_errors_name_the_value(tmp_path: Path, texts: list[str]) -> None:
    for spec in ("dask://", "dask://host", "dask://host:0", "dask://host:99999", "tcp://h:1", "locale"):
        with pytest.raises(ValueError, match=r"--executor must be local or dask://HOST:PORT, got"):
            parse_executor_spec(spec)
    assert parse_executor_spec("dask://[::1]:8786") == "tcp://[::1]:8786"
    with pytest.raises(TypeError, match="executor must be"), open_runner(object()):
        pass
    with pytest.raises(ValueError, match="workers must be >= 0, got -1"), open_runner("local", workers=-1):
        pass
    with pytest.raises(ValueError, match="kind must be"):
        TaskRunner("gpu", None, workers=1, retries=0, spec="x")
    with pytest.raises(ValueError, match="tokenizer must be a callable or one of"):
        CensusOptions("text", "words")
    with pytest.raises(ValueError, match="kind must be text, parquet, shards, jsonl or hf, got 'csv'"):
        CensusOptions("csv")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch_size must be an int"):
        CensusOptions("text", batch_size=1.5)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match=r"nope\.txt"):
        run_census([str(tmp_path / "nope.txt")], CensusOptions("text"), tmp_path / "out")
    with pytest.raises(ValueError, match="inputs is empty"):
        run_census([], CensusOptions("text"), tmp_path / "out")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="hold no documents"):
        run_census([str(empty)], CensusOptions("text", per_line=True), tmp_path / "out2")
    assert os.path.isdir(tmp_path / "out2" / "parts")  # its (empty) part is kept for a rerun


def test_verify_census_and_row_groups_of_plain_inputs(tmp_path: Path, texts: list[str]) -> None:
    from packing_theory.distributed import census_row_groups

    out = tmp_path / "out"
    res = run_census(texts, CensusOptions("text", "whitespace", per_line=True), out)
    groups = census_row_groups(out, row_group_size=50)
    assert [[g.size for g in f] for f in groups] == [[50, 50, 20]] * 4
    assert np.array_equal(np.concatenate([g for f in groups for g in f]), res.lengths)
    assert verify_census(out) == []
    arr = np.load(out / "lengths.npy")
    arr[0] += 1
    np.save(out / "lengths.npy", arr)
    problems = verify_census(out)
    assert problems and "lengths.npy: content differs from the manifest" in problems[0]


class _WordsTimes:
    """Two instances share a name (``module._WordsTimes instance``) but not their output."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __call__(self, text: str) -> list[int]:
        return list(range(len(text.split()) * self.k))


def test_another_tokenizer_of_the_same_name_is_not_reused(tmp_path: Path, texts: list[str]) -> None:
    """Review finding: parts were keyed by the callable's name, so Tok(3) reused Tok(1)'s lengths."""
    out = tmp_path / "out"
    one = run_census(texts, CensusOptions("text", _WordsTimes(1), per_line=True), out)
    again = run_census(texts, CensusOptions("text", _WordsTimes(1), per_line=True), out)
    assert (again.reused, again.computed) == (len(texts), 0)
    three = run_census(texts, CensusOptions("text", _WordsTimes(3), per_line=True), out)
    assert (three.reused, three.computed) == (0, len(texts))
    fresh = run_census(texts, CensusOptions("text", _WordsTimes(3), per_line=True), tmp_path / "fresh")
    assert three.lengths.tobytes() == fresh.lengths.tobytes() != one.lengths.tobytes()
    assert three.manifest["tokenizer"]["probe_sha256"] != one.manifest["tokenizer"]["probe_sha256"]


@pytest.mark.parametrize("field, value", [("n_docs", 10**6), ("n_tokens", -1), ("row_groups", [999]),
                                          ("files", {"lengths": {"file": "../x", "sha256": "0"}})])
def test_an_edited_part_record_is_recomputed_not_could_not_measure(tmp_path: Path, texts: list[str],
                                                                   field: str, value: object) -> None:
    """Before the fix a part record with an edited ``n_docs`` stopped the census ("could not measure", exit
    3) instead of being recomputed, as docs/distributed.rst promises for anything that does not verify."""
    out = tmp_path / "out"
    opts = CensusOptions("text", "whitespace", per_line=True)
    first = run_census(texts, opts, out)
    record = out / "parts" / f"{first.manifest['shards'][2]['part']}.json"
    doc = json.loads(record.read_text())
    doc[field] = value
    record.write_text(json.dumps(doc))
    again = run_census(texts, opts, out)
    assert (again.reused, again.computed) == (3, 1)
    assert np.array_equal(again.lengths, first.lengths)
    record.write_text("[" * 100_000)  # nested past the recursion limit: recomputed too
    assert run_census(texts, opts, out).computed == 1
