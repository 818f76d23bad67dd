"""A census leaves no half-written part behind, and removes those an interrupted run left.

Before the fix an interrupted or full-disk census left ``parts/...tmp-<pid>``
files for good.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from packing_theory.distributed import parts as parts_module

ROOT = Path(__file__).resolve().parents[2]


def census(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "packing_theory.cli", "census", "--text", "a.txt", "--out", "c"]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_an_interrupted_runs_partial_parts_are_removed(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo three\n")
    assert census(tmp_path).returncode == 0
    parts = tmp_path / "c" / "parts"
    planted = [parts / "0123abcd.json.tmp-4242", parts / "0123abcd.lengths.npy.tmp-77"]
    for p in planted:
        p.write_bytes(b"half a part")
    kept = parts / "notes.tmp-x"  # not the writer's naming: left alone
    kept.write_text("mine")
    proc = census(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not any(p.exists() for p in planted) and kept.exists()


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        parts_module.atomic_write(str(tmp_path / "x.json"), b"{}")
    assert os.listdir(tmp_path) == []
