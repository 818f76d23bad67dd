"""``--data`` on the commands, the census's --encoding / --errors, newlines, BOS detection, refusals."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.corpus.text import detect_bos, iter_text_files, lengths_from_text_files, resolve_bos


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("packing-theory")]
    assert len(lines) == 1, err
    return lines[0]


def _without_run_fields(doc: dict[str, object]) -> dict[str, object]:
    """The report minus what names the input or the run (label, timings, run id, config hash)."""
    drop = {"label", "read", "seconds", "run", "config_hash", "run_id", "inputs", "generated", "name"}

    def clean(value: object) -> object:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in drop}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(doc)  # type: ignore[return-value]


def test_audit_data_on_a_saved_hf_dataset_equals_audit_lengths(tmp_path: Path) -> None:
    if importlib.util.find_spec("datasets") is None:
        pytest.skip("datasets is not installed: pip install datasets")
    import datasets

    datasets.disable_progress_bars()
    rng = np.random.default_rng(7)
    docs = [rng.integers(0, 1000, int(rng.integers(1, 300))).tolist() for _ in range(3000)]
    datasets.Dataset.from_dict({"input_ids": docs}).save_to_disk(str(tmp_path / "ds"), num_shards=2)
    np.save(tmp_path / "l.npy", np.array([len(d) for d in docs]))
    common = ["--no-plots", "--rows", "200", "--permutations", "2", "--capacity", "257", "--min-buffer", "50",
              "--policy", "discard,continue", "--no-progress"]
    assert main(["audit", "--data", str(tmp_path / "ds"), "--bos", "included", "--out", str(tmp_path / "a"),
                 *common]) == 0
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--out", str(tmp_path / "b"), *common]) == 0
    a = json.loads((tmp_path / "a" / "audit.json").read_text())
    b = json.loads((tmp_path / "b" / "audit.json").read_text())
    assert _without_run_fields(a) == _without_run_fields(b)
    assert a["corpus"]["documents"] == 3000


def test_a_saved_hf_dataset_s_text_column_needs_no_bos_and_its_token_column_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A text column goes through the tokenizer (``--bos auto``, the default, asks it), as ``docs/data.rst``
    says; only a column of token ids needs ``--bos`` (``audit`` used to demand it for every saved
    dataset)."""
    if importlib.util.find_spec("datasets") is None:
        pytest.skip("datasets is not installed: pip install datasets")
    import datasets

    datasets.disable_progress_bars()
    texts = ["a" * n for n in (5, 300, 41, 2, 170, 64)]
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(tmp_path / "text"), num_shards=2)
    out = tmp_path / "r"
    assert main(["replay", "--data", str(tmp_path / "text"), "--capacity", "64", "--min-buffer", "2",
                 "--json", "--no-progress"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["documents"] == len(texts)
    assert replay["consumed_tokens"] == sum(len(t) + 1 for t in texts)  # bytes, one BOS counted each
    datasets.Dataset.from_dict({"input_ids": [[1, 2, 3], [4]]}).save_to_disk(str(tmp_path / "ids"))
    assert main(["audit", "--data", str(tmp_path / "ids"), "--out", str(out), "--no-plots"]) == 2
    assert "bos for hf data must be 'included'" in _one_error(capsys)
    assert not out.exists()


def test_data_on_replay_check_compare_states_the_format(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["one two", "three", "four five six"]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines))
    np.save(tmp_path / "l.npy", np.array([len(t.encode()) + 1 for t in lines]))
    args = ["--capacity", "8", "--min-buffer", "1", "--json"]
    assert main(["replay", "--data", str(tmp_path / "a.jsonl"), *args]) == 0
    out = capsys.readouterr()
    assert "data: jsonl (auto-detected: a JSON Lines file name (.jsonl))" in out.err
    by_data = json.loads(out.out)
    assert main(["replay", "--lengths", str(tmp_path / "l.npy"), *args]) == 0
    by_lengths = json.loads(capsys.readouterr().out)
    by_data.pop("seconds"), by_lengths.pop("seconds")
    assert by_data == by_lengths
    assert main(["check", "--data", str(tmp_path / "a.jsonl"), "--tokenizer", "whitespace", *args]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 3
    (tmp_path / "list.txt").write_text(f"# the corpus\n{tmp_path / 'a.jsonl'}\n")
    assert main(["compare", "--files-from", str(tmp_path / "list.txt"), "--policy", "discard",
                 "--capacity", "8", "--min-buffer", "1", "--no-plots", "--out", str(tmp_path / "c")]) == 0
    corpus = json.loads((tmp_path / "c" / "compare.json").read_text())["corpus"]
    assert corpus["documents"] == 3
    assert corpus["read"].startswith("jsonl (auto-detected: a JSON Lines file name (.jsonl)): JSON Lines: "
                                     "1 file(s), 3 documents")  # the report records what replay prints
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--capacity", "8", "--min-buffer", "1",
                 "--no-plots", "--out", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "audit.json").read_text())["corpus"]["read"].startswith("lengths")


def test_options_that_do_not_apply_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "l.npy", np.array([3, 4, 5]))
    (tmp_path / "t.txt").write_text("x")
    audit = ["audit", "--no-plots", "--out", str(tmp_path / "o")]
    cases = [
        ([*audit, "--lengths", str(tmp_path / "l.npy"), "--tokenizer", "whitespace"],
         "--tokenizer 'whitespace' does not apply to lengths data (--lengths); it takes no reader option"),
        ([*audit, "--lengths", str(tmp_path / "l.npy"), "--per-line"],
         "--per-line does not apply to lengths data (--lengths)"),
        ([*audit, "--lengths", str(tmp_path / "l.npy"), "--eos-id", "2"],
         "--eos-id 2 does not apply to lengths data (--lengths)"),
        (["replay", "--lengths", str(tmp_path / "l.npy"), "--format", "megatron"],
         "--format applies to --data; --lengths already names lengths data"),
        (["replay", "--data", str(tmp_path / "l.npy"), "--eos-id", "3"],
         "--eos-id 3 does not apply to lengths data (--data)"),
        (["replay", "--data", str(tmp_path / "t.txt"), "--bos", "auto", "--dtype", "uint16"],
         "--dtype 'uint16' does not apply to text data (--data); it takes --bos, --encoding, --errors, "
         "--per-line, --tokenizer"),
        (["census", "--data", str(tmp_path / "l.npy"), "--out", str(tmp_path / "c")],
         "lengths data already holds token ids"),
        (["census", "--parquet", str(tmp_path / "t.txt"), "--errors", "skip", "--out", str(tmp_path / "c")],
         "--errors does not apply to parquet input"),
        (["replay", "--lengths", str(tmp_path)], f"lengths file {str(tmp_path)!r} is a directory"),
        ([*audit, "--text", str(tmp_path)], f"text file {str(tmp_path)!r} is a directory"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        line = _one_error(capsys)
        assert message in line, (argv, line)
        assert "Errno" not in line and "does not exist" not in line


def _bad_corpus(root: Path) -> list[Path]:
    root.mkdir()
    names = []
    for k in range(6):
        p = root / f"doc{k}.txt"
        p.write_bytes(f"document {k}\r\nsecond line\n".encode())
        names.append(p)
    (root / "doc2.txt").write_bytes(b"caf\xe9 latin-1\n")  # not UTF-8
    (root / "doc4.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")  # binary
    return names


def test_census_errors_skip_lists_and_counts_the_skipped_files(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _bad_corpus(tmp_path / "corpus")
    assert main(["census", "--data", str(tmp_path / "corpus"), "--format", "text", "--errors", "skip",
                 "--out", str(tmp_path / "s"), "--workers", "1"]) == 0
    assert "skipped 2 input(s) that are not text" in capsys.readouterr().err
    doc = json.loads((tmp_path / "s" / "census.json").read_text())
    assert doc["n_skipped"] == 2 and doc["errors"] == "skip"
    assert [Path(s["path"]).name for s in doc["skipped"]] == ["doc2.txt", "doc4.txt"]
    assert "is not valid utf-8" in doc["skipped"][0]["reason"]
    assert [Path(s["path"]).name for s in doc["shards"]] == ["doc0.txt", "doc1.txt", "doc3.txt", "doc5.txt"]
    # bytes read without newline translation: "\r\n" is two bytes of the document
    assert np.load(tmp_path / "s" / "lengths.npy").tolist() == [len(b"document 0\r\nsecond line\n") + 1] * 4


def test_census_strict_fails_fast_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import packing_theory.distributed.census as census_module
    from packing_theory.distributed import parts

    _bad_corpus(tmp_path / "corpus")
    started: list[str] = []
    real = parts.census_shard

    def spy(path: str, options: parts.CensusOptions) -> object:
        started.append(Path(path).name)
        return real(path, options)

    monkeypatch.setattr(census_module, "census_shard", spy)
    assert main(["census", "--data", str(tmp_path / "corpus"), "--format", "text", "--out",
                 str(tmp_path / "f"), "--workers", "1", "--retries", "3"]) == 2
    line = _one_error(capsys)
    assert "doc2.txt' is not valid utf-8" in line and "--errors skip" in line
    assert "census 2" not in line and "task" not in line
    assert started == ["doc0.txt", "doc1.txt", "doc2.txt"]  # nothing after the bad file, and no retry
    assert not (tmp_path / "f" / "census.json").exists()


def test_census_replace_and_encoding(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"caf\xe9\n")
    assert main(["census", "--text", str(tmp_path / "a.txt"), "--errors", "replace", "--out",
                 str(tmp_path / "r")]) == 0
    assert np.load(tmp_path / "r" / "lengths.npy").tolist() == [len("caf\ufffd\n".encode()) + 1]
    assert main(["census", "--text", str(tmp_path / "a.txt"), "--encoding", "latin-1", "--tokenizer", "chars",
                 "--out", str(tmp_path / "l")]) == 0
    assert np.load(tmp_path / "l" / "lengths.npy").tolist() == [5 + 1]


def test_text_is_read_without_newline_translation(tmp_path: Path) -> None:
    path = tmp_path / "d.txt"
    path.write_bytes(b"one\r\ntwo\rstill two\n\r\nthree")
    assert lengths_from_text_files(path, "bytes").tolist() == [path.stat().st_size + 1]
    assert list(iter_text_files(path, per_line=True)) == ["one", "two\rstill two", "three"]
    # "two\rstill two" is 13 characters: a lone \r is content
    assert lengths_from_text_files(path, "chars", per_line=True).tolist() == [4, 14, 6]
    assert list(iter_text_files(path, per_line=True, universal_newlines=True)) == [
        "one", "two", "still two", "three"]


def test_bos_adding_tokenizers_are_counted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def plain(text: str) -> list[int]:
        return [ord(c) for c in text]

    def with_bos(text: str) -> list[int]:
        return [1, *(ord(c) for c in text)]

    assert detect_bos(plain) is None and detect_bos(with_bos) == 1
    assert resolve_bos("auto", with_bos)[0] == "included" and resolve_bos("add", with_bos)[0] == "add"
    (tmp_path / "mytok.py").write_text("def encode(text):\n    return [1] + [ord(c) for c in text]\n")
    (tmp_path / "d.txt").write_text("abc\nde\n")
    monkeypatch.chdir(tmp_path)  # the tokenizer module is found from the working directory
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert main(["census", "--text", "d.txt", "--per-line", "--tokenizer", "mytok:encode", "--out", "c",
                 "--workers", "1"]) == 0
    assert "prepends BOS id 1 itself" in capsys.readouterr().err
    assert np.load(tmp_path / "c" / "lengths.npy").tolist() == [4, 3]  # BOS once, not twice
    assert main(["census", "--text", "d.txt", "--per-line", "--tokenizer", "mytok:encode", "--bos", "add",
                 "--out", "c2", "--workers", "1"]) == 0
    assert np.load(tmp_path / "c2" / "lengths.npy").tolist() == [5, 4]  # declared: one more BOS each
