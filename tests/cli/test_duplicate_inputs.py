"""A file named twice — directly, through a symlink or through a hard link — is refused (exit 2).

Before the fix ``audit --shards A A`` (and ``--text f f``) audited every document
twice, and ``census`` refused a symlinked duplicate but not a hard link. The
commands run as real processes; the message names the option and both paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from packing_theory.corpus import write_shard

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    write_shard(tmp_path / "a.bin", [[0, 5, 6], [0, 7], [0, 3, 4, 5, 6]], vocab=9)
    write_shard(tmp_path / "b.bin", [[0, 1], [0, 2, 2]], vocab=9)
    (tmp_path / "a.txt").write_text("one two three\nfour five\n")
    (tmp_path / "b.txt").write_text("six\n")
    for kind in ("bin", "txt"):
        os.link(tmp_path / f"a.{kind}", tmp_path / f"hard.{kind}")
        os.symlink(tmp_path / f"a.{kind}", tmp_path / f"soft.{kind}")
    return tmp_path


AUDIT = ["audit", "--capacity", "4", "--min-buffer", "1", "--no-plots"]


@pytest.mark.parametrize("twin", ["a", "./a", "hard", "soft"])
@pytest.mark.parametrize("option,kind", [("--shards", "bin"), ("--text", "txt")])
def test_audit_refuses_a_file_named_twice(option: str, kind: str, twin: str, files: Path) -> None:
    out = files / "rep"
    ok = run(files, *AUDIT, option, f"a.{kind}", f"b.{kind}", "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    proc = run(files, *AUDIT, option, f"a.{kind}", f"b.{kind}", f"{twin}.{kind}", "--out", str(files / "r2"))
    assert proc.returncode == 2, proc.stderr
    assert f"{option} '{twin}.{kind}' is given twice (also as 'a.{kind}')" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (files / "r2").exists()  # refused before any report directory was made


@pytest.mark.parametrize("option,kind", [("--shards", "bin"), ("--text", "txt")])
def test_census_refuses_a_hard_link_to_another_input(option: str, kind: str, files: Path) -> None:
    proc = run(files, "census", option, f"a.{kind}", f"hard.{kind}", "--out", str(files / "c"))
    assert proc.returncode == 2, proc.stderr
    assert "twice" in proc.stderr and f"hard.{kind}" in proc.stderr
    assert "Traceback" not in proc.stderr
