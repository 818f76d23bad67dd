"""Numbers too large for the chosen engine or the ledger are bad input (exit 2, naming the field), not
"a bug" (exit 3); real processes.

Before the fix ``--engine compiled`` with ``--capacity`` / ``--min-buffer`` /
``--rows`` / ``--refill`` >= 2**63 died with an OverflowError (exit 3, "internal
error"); the fast engine still takes such values exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HUGE = str(2**63)
BASE = {"--capacity": "32", "--min-buffer": "8"}


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("lengths")
    np.save(d / "l.npy", np.random.default_rng(0).integers(1, 80, 300))
    return d


@pytest.mark.parametrize("option", ["--capacity", "--min-buffer", "--rows", "--refill"])
def test_the_compiled_engine_refuses_a_value_beyond_64_bits(option: str, lengths: Path) -> None:
    pytest.importorskip("numba")
    opts = {**BASE, option: HUGE}
    argv = ["replay", "--lengths", "l.npy", *[x for kv in opts.items() for x in kv]]
    proc = run(lengths, *argv, "--engine", "compiled")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    if option == "--capacity":  # refused by every engine: rows wider than MAX_ROW_WIDTH (2**24)
        assert "--capacity must be <= 16,777,216" in line and "internal" not in line
        return
    assert option.lstrip("-").replace("-", "_") in line and "engine='fast'" in line and "internal" not in line
    fast = run(lengths, *argv, "--engine", "fast")  # the fast engine takes the same value exactly
    assert fast.returncode == 0, fast.stderr


@pytest.mark.parametrize("value", ["0", "-5"])
@pytest.mark.parametrize("command", ["compare", "audit", "replay"])
def test_a_sequence_length_below_one_is_bad_input(command: str, value: str, lengths: Path) -> None:
    out = [] if command == "replay" else ["--out", f"rep-{command}{value}", "--no-plots"]
    proc = run(lengths, command, "--lengths", "l.npy", "--seq-length", value, *out)
    assert proc.returncode == 2, proc.stderr
    assert f"--seq-length must be >= 1, got {value}" in proc.stderr.strip().splitlines()[-1]
    assert not (lengths / f"rep-{command}{value}").exists()


@pytest.mark.parametrize("command", ["audit", "census"])
def test_a_parquet_text_column_named_twice_is_bad_input(command: str, tmp_path: Path) -> None:
    """Before the fix pyarrow's KeyError ('Field "text" exists 2 times in schema') was exit 3, "a bug"."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_arrays([pa.array(["a b c"]), pa.array(["d"])], names=["text", "text"]),
                   str(tmp_path / "dup.parquet"))
    source = ["--text", "dup.parquet"] if command == "audit" else ["--parquet", "dup.parquet"]
    proc = run(tmp_path, command, *source, "--out", "rep")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "dup.parquet' has 2 columns named 'text'" in line and "internal" not in line
    assert len(proc.stderr.strip().splitlines()) == 1
