"""Malformed token ids are refused, naming the tokenizer and the text (real processes), and the API.

Before the fix a tokenizer returning ``[1, None, None]`` or nested lists was
counted by ``audit --text`` (only ``ids[0]`` was checked); ``census`` refused it
with numpy's message naming neither tokenizer nor text; ``token_rows`` put
``None``, ``1.5``, strings and nested lists into rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.engine.rows import token_rows

ROOT = Path(__file__).resolve().parents[2]

BAD = {
    "none": ("[1, None, None]", "ids[1] is None (NoneType)"),
    "nested": ("[1, [2, 3], [4]]", "ids[1] is [2, 3] (list)"),
    "float": ("[1, 2, 1.5]", "ids[2] is 1.5 (float)"),
    "string": ("[1, '2']", "ids[1] is '2' (str)"),
}


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.mark.parametrize("command", ["audit", "census"])
@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_tokenizer_returning_non_ints_is_named_with_the_text(command: str, kind: str,
                                                               tmp_path: Path) -> None:
    result, message = BAD[kind]
    (tmp_path / "badtok.py").write_text(f"def tok(text):\n    return {result} if 'bad' in text else [1, 2]\n")
    (tmp_path / "a.txt").write_text("fine\nfine too\nthis one is bad\n")
    extra = ["--capacity", "4", "--min-buffer", "1", "--no-plots"] if command == "audit" else []
    proc = run(tmp_path, command, "--text", "a.txt", "--per-line", "--tokenizer", "badtok:tok", *extra,
               "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "badtok.tok" in line and message in line, line
    assert "a.txt" in line or "texts[2]" in line, line


@pytest.mark.parametrize("bad", [None, 1.5, "7", [2, 3]])
@pytest.mark.parametrize("streamed", [False, True])
def test_token_rows_refuses_a_non_int_id(bad: Any, streamed: bool) -> None:
    docs: list[Any] = [[1, 2, 3], [1, bad, 4, 5], [1, 6]]
    packer = pt.Packer(capacity=4, min_buffer=1, refill=1)
    with pytest.raises(pt.InputTypeError, match=r"documents\[1\]: ids\[1\] is "):
        list(token_rows(packer, iter(docs) if streamed else docs))


def test_token_rows_refuses_a_float_array_and_keeps_integer_ones() -> None:
    packer = pt.Packer(capacity=4, min_buffer=1, refill=1)
    with pytest.raises(pt.InputTypeError, match="1-D integer array"):
        list(token_rows(packer, [np.array([1.0, 2.0, 3.0])]))  # type: ignore[list-item]
    docs: list[Any] = [np.array([9, 2, 3], dtype=np.uint16), [9, 4, 5, 6, 7]]
    rows = list(token_rows(packer, docs))
    assert rows and all(len(r) == 4 for r in rows)
