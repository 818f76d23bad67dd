"""Fuzz the text readers (plain text, JSON Lines, ``.jsonl.zst``): a damaged file is refused, or read as
an independent decoding of the same bytes reads it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.readers import open_data
from tests.corpus.readers.fuzz_helpers import bit_flips, cuts, every, flipped, read_or_refuse

zstd = pytest.importorskip("zstandard", reason="zstandard is not installed: pip install zstandard")

TEXTS = ["plain ascii", "é accents and ünïcode", "a private-use \ue800 character", "", "x" * 40,
         "tab\tand \\ backslash", "last"]


def _jsonl() -> bytes:
    lines = [json.dumps({"text": t, "id": i}) for i, t in enumerate(TEXTS)]
    lines.insert(3, "")  # a blank line is skipped
    return ("\n".join(lines) + "\n").encode("utf-8")


def _jsonl_oracle(data: bytes) -> list[int] | None:
    """BOS-inclusive UTF-8 byte lengths of the ``text`` fields, as the JSON Lines rules read the bytes."""
    try:
        text = data.decode("utf-8")
        out = []
        for line in text.split("\n"):
            if not line.strip():
                continue
            if "\x00" in line:
                return None
            obj = json.loads(line)
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                return None
            out.append(len(obj["text"].encode("utf-8")) + 1)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, a lone surrogate
        return None
    return out or None


def _zst_oracle(data: bytes) -> list[int] | None:
    """The frames that are complete, decompressed, then read as JSON Lines (a cut inside a frame: None)."""
    out, rest = [], data
    try:
        while rest:
            frame = zstd.ZstdDecompressor().decompressobj()
            out.append(frame.decompress(rest))
            if not frame.eof:
                return None
            rest = frame.unused_data
    except zstd.ZstdError:
        return None
    return _jsonl_oracle(b"".join(out))


def _text_oracle(data: bytes) -> list[int] | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else [len(data) + 1]


def _check(path: Path, fmt: str, data: bytes, oracle: object, what: str) -> None:
    path.write_bytes(data)
    got = read_or_refuse(lambda: open_data([str(path)], fmt, bos="add").lengths().tolist(), what)
    if got is not None:
        want = oracle(data)  # type: ignore[operator]
        assert want is not None and got == want, f"{what}: read {got}, the bytes say {want}"


def _zst(data: bytes) -> bytes:
    half = len(data) // 2
    return (zstd.ZstdCompressor().compress(data[:half])  # two frames, the second without a content size
            + zstd.ZstdCompressor(write_content_size=False, write_checksum=True).compress(data[half:]))


def _run(tmp_path: Path, name: str, all_offsets: bool) -> None:
    plain = _jsonl()
    if name == "jsonl":
        data, fmt, oracle = plain, "jsonl", _jsonl_oracle
        structural = [i for i, b in enumerate(plain) if b == 10]
    elif name == "zst":
        data, fmt, oracle = _zst(plain), "jsonl", _zst_oracle
        structural = [len(zstd.ZstdCompressor().compress(plain[: len(plain) // 2])), 4, 6]
    else:
        data, fmt, oracle, structural = "\n".join(TEXTS).encode(), "text", _text_oracle, [1, 2, 3]
    path = tmp_path / {"jsonl": "d.jsonl", "zst": "d.jsonl.zst", "text": "d.txt"}[name]
    _check(path, fmt, data, oracle, "the intact file")
    assert oracle(data) is not None
    for cut in cuts(len(data), structural, all_offsets=all_offsets):
        _check(path, fmt, data[:cut], oracle, f"cut at {cut}")
    escapes = [i + k for i in range(len(data)) if data[i : i + 2] == b"\\u" for k in range(2, 6)]
    for byte, bit in bit_flips(range(len(data)), all_bits=all_offsets, every_bit_of=escapes):
        _check(path, fmt, flipped(data, byte, bit), oracle, f"bit {bit} of byte {byte}")


@pytest.mark.parametrize("name", ["jsonl", "zst", "text"])
def test_text_truncations_and_bit_flips(tmp_path: Path, name: str) -> None:
    _run(tmp_path, name, every())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["jsonl", "zst", "text"])
def test_text_every_offset_and_bit(tmp_path: Path, name: str) -> None:
    _run(tmp_path, name, True)


def test_the_oracles_agree_with_the_fixture() -> None:
    assert _jsonl_oracle(_jsonl()) == [len(t.encode()) + 1 for t in TEXTS]
    assert _zst_oracle(_zst(_jsonl())) == _jsonl_oracle(_jsonl())
    assert np.array_equal(_text_oracle(b"ab"), [3])
