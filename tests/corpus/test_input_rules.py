"""Inputs that mean what they say: tokenizer outputs, unordered containers, strings as documents."""

from __future__ import annotations

import collections
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.corpus import iter_text_files, lengths_from_texts, tokenize_batches, validate_lengths
from packing_theory.corpus.text import lengths_from_text_files
from packing_theory.corpus.textcount import count_text, count_text_files


class BatchEncodingLike(collections.UserDict):  # type: ignore[type-arg]
    """What a Hugging Face tokenizer returns: a UserDict with input_ids and attention_mask."""


def hf_like(text: str) -> BatchEncodingLike:
    ids = list(text.encode())
    return BatchEncodingLike({"input_ids": ids, "attention_mask": [1] * len(ids)})


def hf_like_batch(texts: list[str]) -> BatchEncodingLike:
    ids = [list(t.encode()) for t in texts]
    return BatchEncodingLike({"input_ids": ids, "attention_mask": [[1] * len(i) for i in ids]})


TEXTS = ["hello", "", "a longer document here"]
EXPECTED = [len(t.encode()) + 1 for t in TEXTS]


# --------------------------------------------------------------------------- tokenizer outputs


def test_batch_encoding_gives_token_counts_not_key_counts() -> None:
    """Before the fix a mapping gave its number of keys + 1 (here 3) for every document."""
    assert lengths_from_texts(TEXTS, hf_like).tolist() == EXPECTED
    assert lengths_from_texts(TEXTS, hf_like_batch, batched=True).tolist() == EXPECTED


@pytest.mark.parametrize("form", ["list", "tuple", "array", "array32", "mapping"])
def test_accepted_outputs(form: str) -> None:
    def tok(text: str) -> Any:
        ids = list(text.encode())
        return {"list": ids, "tuple": tuple(ids), "array": np.array(ids, dtype=np.int64),
                "array32": np.array(ids, dtype=np.int32), "mapping": {"input_ids": ids}}[form]

    assert lengths_from_texts(TEXTS, tok).tolist() == EXPECTED


def test_batched_2d_array() -> None:
    def tok(texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 4), dtype=np.int64)

    assert lengths_from_texts(TEXTS, tok, batched=True).tolist() == [5, 5, 5]


@pytest.mark.parametrize(
    ("output", "needle"),
    [
        ({"ids": [1, 2]}, "mapping without 'input_ids'"),
        ({1, 2, 3}, "returned set"),
        ("abc", "returned str"),
        (b"abc", "returned bytes"),
        (7, "returned int"),
        (None, "returned NoneType"),
        ([[1, 2], [3]], "ids[0] is [1, 2] (list)"),
        (np.zeros((1, 3), dtype=np.int64), "2-D int64 array"),
        (np.zeros(3), "1-D float64 array"),
        ({"input_ids": "abc"}, "returned str"),
    ],
)
def test_refused_outputs_name_the_tokenizer_and_the_text(output: object, needle: str) -> None:
    def odd_tokenizer(text: str) -> object:
        return output if text == "a longer document here" else [1]

    with pytest.raises(TypeError, match=r"odd_tokenizer") as info:
        lengths_from_texts(TEXTS, odd_tokenizer)
    assert needle in str(info.value) and "texts[2]" in str(info.value)


def test_raising_tokenizer_names_itself_and_the_index() -> None:
    def fragile(text: str) -> list[int]:
        if text == "":
            raise KeyError("no tokens for empty text")
        return [1]

    with pytest.raises(ValueError, match=r"tokenizer .*fragile raised KeyError on texts\[1\]: 'no tokens"):
        lengths_from_texts(TEXTS, fragile)
    with pytest.raises(ValueError, match=r"raised ZeroDivisionError on texts\[0:3\]"):
        lengths_from_texts(TEXTS, lambda batch: 1 // 0, batched=True)
    with pytest.raises(ValueError, match=r"returned 1 token lists for 3 texts"):
        lengths_from_texts(TEXTS, lambda batch: [[1]], batched=True)


def test_cli_raising_tokenizer_is_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = tmp_path / "raising_tok_mod.py"
    mod.write_text("def enc(text):\n    if 'boom' in text:\n        raise RuntimeError('cannot encode')\n"
                   "    return [1] * len(text)\n")
    data = tmp_path / "d.txt"
    data.write_text("fine\nalso fine\nboom here\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        status = main(["audit", "--text", str(data), "--per-line", "--tokenizer", "raising_tok_mod:enc",
                       "--no-plots", "--out", str(tmp_path / "o"), "--capacity", "8", "--min-buffer", "1"])
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"raising_tok_mod.enc raised RuntimeError on text file {str(data)!r} document 2 (from 0): " \
           "cannot encode" in err  # the file too (it said only texts[2]; found by a review)
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"text": "fine"}\n\n{"text": "boom"}\n')
    sys.path.insert(0, str(tmp_path))
    try:
        status = main(["audit", "--data", str(jsonl), "--tokenizer", "raising_tok_mod:enc", "--no-plots",
                       "--out", str(tmp_path / "j"), "--capacity", "8", "--min-buffer", "1"])
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert f"raised RuntimeError on JSON Lines file {str(jsonl)!r} record 1 (from 0): cannot encode" in err
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    rows = ["fine"] * 2500
    rows[2200] = "boom"
    datasets.Dataset.from_dict({"text": rows}).save_to_disk(str(tmp_path / "hf"))  # record batches of 1,000
    sys.path.insert(0, str(tmp_path))
    try:
        status = main(["audit", "--data", str(tmp_path / "hf"), "--tokenizer", "raising_tok_mod:enc",
                       "--no-plots", "--out", str(tmp_path / "h"), "--capacity", "8", "--min-buffer", "1"])
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert "data-00000-of-00001.arrow' row 2200 (from 0): cannot encode" in err  # the file's row


def test_tokenize_batches_unwraps_input_ids() -> None:
    (batch,) = tokenize_batches(["ab"], hf_like)
    assert list(batch[0]) == [97, 98]


# --------------------------------------------------------------------------- lengths containers


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize("lengths", [{3: 1, 4: 1}, {3, 4}, frozenset({3}), {3: 1}.keys()])
def test_unordered_containers_are_refused_as_lengths(engine: str, lengths: object) -> None:
    """Before the fix a dict replayed its keys and a set its hash order."""
    with pytest.raises(TypeError, match="no arrival order"):
        pt.replay(lengths, engine=engine, capacity=4, min_buffer=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no arrival order"):
        validate_lengths(lengths)


def test_lengths_beyond_int64_are_refused() -> None:
    with pytest.raises(ValueError, match=r"lengths\[1\] must be a length that fits a signed 64-bit int"):
        validate_lengths([3, 2**63])
    with pytest.raises(ValueError, match=r"lengths\[1\] must be a length that fits"):
        pt.replay(iter([3, 2**63]), capacity=4, min_buffer=1)


@pytest.mark.parametrize("doc", ["abc", b"abc", {"input_ids": [1]}, {1, 2}])
def test_strings_and_unordered_documents_are_refused(doc: object) -> None:
    """Before the fix a str document was packed as a row of characters."""
    packer = pt.Packer(capacity=4, min_buffer=1, refill=1)
    with pytest.raises(TypeError, match=r"documents\[1\] must be a sequence of token ids"):
        list(packer.token_rows([[0, 1], doc, [0, 2]]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"documents\[0\]"):
        list(packer.rows([doc]))  # type: ignore[list-item]


def test_array_documents_are_accepted() -> None:
    packer = pt.Packer(capacity=4, min_buffer=1, refill=1)
    rows = list(packer.token_rows([np.array([0, 11, 12]), np.array([0, 21])]))
    assert [list(map(int, r)) for r in rows] == [[0, 11, 12, 0]]


# --------------------------------------------------------------------------- streaming text counts


def _materialised(path: Path, unit: str, per_line: bool) -> list[int]:
    tok = {"bytes": lambda t: list(t.encode("utf-8")), "chars": lambda t: [ord(c) for c in t],
           "whitespace": lambda t: t.split()}[unit]
    return [len(tok(d)) for d in iter_text_files(path, per_line=per_line)]


ALPHABET = st.sampled_from([*list("ab é\t\n\r"), "\r\n", "\u2028", "\x85", "\u3000", "😀", "  "])


@given(pieces=st.lists(ALPHABET, max_size=60), chunk=st.integers(1, 7),
       unit=st.sampled_from(["bytes", "chars", "whitespace"]), per_line=st.booleans())
def test_streamed_counts_equal_the_materialised_tokenizers(tmp_path_factory: pytest.TempPathFactory,
                                                          pieces: list[str], chunk: int, unit: str,
                                                          per_line: bool) -> None:
    path = tmp_path_factory.mktemp("t") / "doc.txt"
    path.write_bytes("".join(pieces).encode("utf-8"))
    got = list(count_text_files([path], unit, per_line=per_line, chunk_chars=chunk))  # type: ignore[arg-type]
    assert got == _materialised(path, unit, per_line)
    text = "".join(pieces)
    assert count_text(text, unit, chunk_chars=chunk) == _materialised_text(text, unit)  # type: ignore[arg-type]


def _materialised_text(text: str, unit: str) -> int:
    return {"bytes": len(text.encode()), "chars": len(text), "whitespace": len(text.split())}[unit]


def test_builtin_names_equal_the_callables(tmp_path: Path) -> None:
    path = tmp_path / "d.txt"
    path.write_text("one two\n\n  \nthree four five\r\nlast")
    for unit in ("bytes", "chars", "whitespace"):
        by_name = lengths_from_text_files(path, unit, per_line=True).tolist()  # type: ignore[arg-type]
        assert by_name == [n + 1 for n in _materialised(path, unit, True)]
        assert lengths_from_texts(["a b", "é"], unit).tolist() == [  # type: ignore[arg-type]
            _materialised_text("a b", unit) + 1, _materialised_text("é", unit) + 1]
    with pytest.raises(ValueError, match="tokenizer must be a callable or one of"):
        lengths_from_texts(["a"], "words")  # type: ignore[arg-type]


def test_a_long_single_line_is_counted_in_bounded_memory(tmp_path: Path) -> None:
    """The corpus's text reader (open_corpus) on one 12 MB line: before the fix, a 12-million-entry list."""
    from packing_theory.orchestration import open_corpus

    path = tmp_path / "one_line.txt"
    path.write_text("x" * 12_000_000 + "\n")
    for tokenizer in ("bytes", "chars", "whitespace"):
        tracemalloc.start()
        lengths = open_corpus(str(path), format="text", per_line=True, tokenizer=tokenizer).lengths
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert lengths.tolist() == [12_000_001 if tokenizer != "whitespace" else 2]
        assert peak < 16 * 2**20, f"{tokenizer}: peak {peak / 2**20:.1f} MiB"


def test_replay_of_an_array_does_not_build_a_python_list() -> None:
    """Before the fix the whole array became a list of Python ints before the first event."""
    lengths = np.arange(1, 2_000_001, dtype=np.int64) % 5000 + 1
    tracemalloc.start()
    events = pt.Packer(capacity=2049, min_buffer=100, refill=128).events(lengths)
    first = [next(events) for _ in range(10)]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(first) == 10
    assert peak < 4 * 2**20, f"peak {peak / 2**20:.1f} MiB"
