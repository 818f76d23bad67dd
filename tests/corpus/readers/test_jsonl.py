"""JSON Lines: a line nested past Python's recursion limit is bad input naming the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from packing_theory.cli import main
from packing_theory.corpus.readers import open_data
from packing_theory.errors import InputError


def test_a_deeply_nested_line_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix it was a RecursionError: an internal error (exit 3)."""
    (tmp_path / "a.jsonl").write_text('{"text": "ok"}\n' + '{"text": ' + "[" * 100_000 + "\n")
    with pytest.raises(InputError, match=r"JSON Lines file .*a.jsonl' line 2 is not valid JSON: nested too "):
        open_data([str(tmp_path / "a.jsonl")], "jsonl").lengths()
    code = main(["audit", "--data", str(tmp_path / "a.jsonl"), "--capacity", "16", "--min-buffer", "2",
                 "--out", str(tmp_path / "out"), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "line 2 is not valid JSON" in err[0]


def test_a_zst_file_cut_inside_a_frame_is_refused_not_read_short(tmp_path: Path) -> None:
    """Before the fix zstandard's stream reader ended quietly at the cut: fewer documents, exit 0."""
    zstd = pytest.importorskip("zstandard")
    lines = b"".join(b'{"text": "document %d"}\n' % i for i in range(50))
    whole = zstd.ZstdCompressor().compress(lines[:400]) + zstd.ZstdCompressor().compress(lines[400:])
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(whole)
    assert open_data([str(path)], "jsonl").lengths().size == 50
    first = len(zstd.ZstdCompressor().compress(lines[:400]))
    for cut in (first + 20, len(whole) - 1):  # inside the second frame: its documents would be lost
        path.write_bytes(whole[:cut])
        with pytest.raises(InputError, match=r"cannot be decompressed .* ended inside a zstd frame"):
            open_data([str(path)], "jsonl").lengths()


def test_a_lone_surrogate_escape_is_bad_input(tmp_path: Path) -> None:
    """Before the fix ``{"text": "\\ud800"}`` reached the tokenizer's UTF-8 encoding: exit 3."""
    (tmp_path / "a.jsonl").write_text('{"text": "ok"}\n{"text": "a \\ud800 b"}\n')
    with pytest.raises(InputError, match=r"line 2: field 'text' holds a lone surrogate \(U\+D800\)"):
        open_data([str(tmp_path / "a.jsonl")], "jsonl").lengths()
