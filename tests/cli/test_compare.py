"""``compare --workers N``: the packers in parallel processes, the same report as in one process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.corpus import default_lengths
from packing_theory.registry import names

PACKERS = ",".join(["discard", "continue", *names("peer")[:4]])


def _timeless(value: Any) -> Any:
    """The report without its timings and run metadata (a new id and options hash every run)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("seconds", "run")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


@pytest.fixture(scope="module")
def lengths_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compare") / "lengths.npy"
    np.save(path, default_lengths()[:3000])
    return path


def _report(lengths: Path, out: Path, *extra: str) -> dict[str, Any]:
    status = main(["compare", "--lengths", str(lengths), "--policy", PACKERS, "--capacity", "512",
                   "--min-buffer", "50", "--no-plots", "--out", str(out), *extra])
    assert status == 0
    report: dict[str, Any] = json.loads((out / "compare.json").read_text())
    return report


def test_workers_give_the_serial_report(lengths_file: Path, tmp_path: Path) -> None:
    serial = _report(lengths_file, tmp_path / "serial")
    parallel = _report(lengths_file, tmp_path / "parallel", "--workers", "2")
    assert _timeless(parallel) == _timeless(serial)
    assert [c["policy"] for c in serial["packers"]] == PACKERS.split(",")
    assert all(c["seconds"] > 0 for c in parallel["packers"])


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--workers", "-1", "--workers must be >= 0, got -1"),
    ("--executor", "tcp://nowhere", "executor"),
])
def test_bad_worker_options_exit_2(lengths_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   flag: str, value: str, message: str) -> None:
    status = main(["compare", "--lengths", str(lengths_file), "--policy", "discard", "--no-plots",
                   "--out", str(tmp_path / "r"), flag, value])
    assert status == 2
    assert message in capsys.readouterr().err
