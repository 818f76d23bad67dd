"""Bad option values are usage errors (exit 2) on one line naming the option and the value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main


@pytest.fixture()
def lengths_file(tmp_path: Path) -> Path:
    path = tmp_path / "lengths.npy"
    np.save(path, np.arange(1, 200, dtype=np.int64))
    return path


@pytest.mark.parametrize("command", ["audit", "compare", "replay"])
@pytest.mark.parametrize(("option", "value", "message"), [
    ("--min-buffer", "0", "--min-buffer must be >= 1, got 0"),
    ("--capacity", "1", "--capacity must be >= 2, got 1"),
    ("--refill", "0", "--refill must be >= 1, got 0"),
    ("--passes", "0", "--passes must be >= 1, got 0"),
])
def test_a_bad_number_names_its_option(command: str, option: str, value: str, message: str,
                                       lengths_file: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix the message named the library parameter (``min_buffer must be >= 1``)."""
    argv = [command, "--lengths", str(lengths_file), option, value]
    if command != "replay":
        argv += ["--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"argument {option}: {message}" in err[0], err


@pytest.mark.parametrize("command", ["audit", "compare", "explain", "bounds"])
def test_a_missing_lengths_file_names_the_option(command: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix: ``[Errno 2] No such file or directory: 'nope.npy'``, with no option named."""
    argv = [command, *(["3"] if command == "explain" else []), "--lengths", str(tmp_path / "nope.npy")]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"argument --lengths: no such file or directory '{tmp_path / 'nope.npy'}'" in line


@pytest.mark.parametrize("command", ["compare", "audit", "replay"])
def test_every_command_refuses_a_row_wider_than_it_can_replay(command: str, lengths_file: Path,
                                                             tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix ``compare --capacity 10**20`` ran for minutes and ended in exit 3; one range now."""
    from packing_theory.cli._options import MAX_ROW_WIDTH

    argv = [command, "--lengths", str(lengths_file), "--capacity", str(10**20),
            *(["--out", str(tmp_path / "o")] if command != "replay" else [])]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"--capacity must be <= {MAX_ROW_WIDTH:,}, got {10**20:,}" in line
    assert not (tmp_path / "o").exists()
