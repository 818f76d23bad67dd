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
