"""Progress on every long command: shown on a terminal, never with --no-progress or without a terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from packing_theory.reporting.progress import progress_bar

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], cwd: Path, *, tty: bool) -> tuple[int, str]:
    """Run ``python -m packing_theory.cli ARGV`` with standard error on a pseudo-terminal (or a pipe)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    cmd = [sys.executable, "-m", "packing_theory.cli", *argv]
    if not tty:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, timeout=300)
        return proc.returncode, proc.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    os.close(master)
    return p.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("progress") / "lengths.npy"
    np.save(path, rng.integers(1, 3000, 20_000).astype(np.int64))
    return path


@pytest.mark.parametrize(("command", "label"), [
    (["compare", "--policy", "discard,trl-bfd", "--no-plots"], "compare"),
    (["audit", "--policy", "discard", "--permutations", "0", "--no-plots"], "audit"),
    (["replay", "--rows", "5000"], "replay"),
])
def test_a_terminal_sees_a_bar_and_no_progress_hides_it(command: list[str], label: str, lengths: Path,
                                                        tmp_path: Path) -> None:
    out = [] if command[0] == "replay" else ["--out", str(tmp_path / "rep")]
    argv = [*command, "--lengths", str(lengths), *out]
    rc, shown = _run(argv, tmp_path, tty=True)
    assert rc == 0, shown
    assert f"{label}:" in shown and ("/s]" in shown or "s/" in shown), shown
    rc, quiet = _run([*argv, "--no-progress"], tmp_path, tty=True)
    assert rc == 0 and "/s]" not in quiet, quiet
    rc, piped = _run(argv, tmp_path, tty=False)
    assert rc == 0 and "/s]" not in piped, piped


def test_census_shows_files_on_a_terminal(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"t{i}.txt").write_text("a document\n" * (i + 1), encoding="utf-8")
    argv = ["census", "--text", *(str(tmp_path / f"t{i}.txt") for i in range(3)), "--workers", "1",
            "--out", str(tmp_path / "census")]
    rc, shown = _run(argv, tmp_path, tty=True)
    assert rc == 0 and "census:" in shown and "file" in shown, shown
    rc, quiet = _run([*argv, "--no-progress"], tmp_path, tty=True)
    assert rc == 0 and "file/s" not in quiet and "s/file" not in quiet, quiet


def test_progress_bar_off_without_a_terminal_and_describes_stages(capsys: pytest.CaptureFixture[str]) -> None:
    assert progress_bar("x", 3) is None  # pytest's standard error is no terminal
    bar = progress_bar("x", None, enabled=True)
    assert bar is not None
    bar.describe("evaluate: scoring")
    bar(2)
    bar.close()
    assert "evaluate: scoring" in capsys.readouterr().err
