"""``packing-theory replay``: JSON keys, the mass identity, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.engine import POLICIES
from packing_theory.engine.policies import STREAMING_POLICIES

REQUIRED = {
    "rows", "targets", "emitted_tokens", "discarded_tokens", "buffered_tokens", "consumed_sources",
    "consumed_tokens", "added_bos_tokens", "crop_events", "crop_bos_only", "sources_started",
    "first_over_capacity_target", "stop_reason",
}


@pytest.fixture()
def lengths_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    lengths = np.clip(np.exp(rng.normal(3.5, 1.3, size=4000)).astype(np.int64) + 1, 1, 2000)
    path = tmp_path / "lengths.npy"
    np.save(path, lengths)
    return path


@pytest.mark.parametrize("policy", POLICIES)
def test_replay_json(lengths_file: Path, policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", "--lengths", str(lengths_file), "--capacity", "65", "--min-buffer", "40",
            "--refill", "16", "--policy", policy, "--passes", "2", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= REQUIRED
    assert out["consumed_tokens"] + out["added_bos_tokens"] == (
        out["emitted_tokens"] + out["discarded_tokens"] + out["buffered_tokens"]
    )
    # the same numbers as the library computes directly
    lengths = np.load(lengths_file)
    s = pt.replay(lengths, capacity=65, min_buffer=40, refill=16, policy=policy, passes=2).summary()
    assert {k: out[k] for k in REQUIRED} == {k: getattr(s, k) for k in REQUIRED}
    # bestfit-pad never crops: its buffer fills with documents longer than R = 65 and it starves
    assert out["stop_reason"] == ("starved" if STREAMING_POLICIES[policy].pads else "exhausted")


def test_replay_budget_and_engines_agree(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = []
    for engine in ("fast", "reference"):
        assert main(["replay", "--lengths", str(lengths_file), "--capacity", "65", "--min-buffer", "40",
                     "--targets", "6400", "--engine", engine, "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["rows"] == 100 and outs[0]["targets"] == 6400 and outs[0]["stop_reason"] == "rows"
    for key in REQUIRED:
        assert outs[0][key] == outs[1][key], key


def test_replay_text_output(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--lengths", str(lengths_file), "--capacity", "65", "--min-buffer", "4",
                 "--rows", "3"]) == 0
    text = capsys.readouterr().out
    assert "emitted_tokens" in text and "195" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--capacity", "1"], "capacity must be >= 2, got 1"),
        (["--min-buffer", "0"], "--min-buffer must be >= 1, got 0"),
        (["--refill", "0"], "refill must be >= 1, got 0"),
    ],
)
def test_replay_bad_options(lengths_file: Path, args: list[str], message: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--lengths", str(lengths_file), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.array([], dtype=np.int64), "is empty"),
        (np.array([3.0, 4.0]), "integer dtype, got float64"),
        (np.array([[1, 2]]), "must be 1-D"),
        (np.array([5, 0, 2]), "[1] must be a positive"),
    ],
)
def test_replay_bad_lengths_file(tmp_path: Path, array: np.ndarray, message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.npy"
    np.save(path, array)
    assert main(["replay", "--lengths", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_replay_missing_and_corrupt_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--lengths", str(tmp_path / "nope.npy")]) == 2
    assert "argument --lengths: no such file or directory" in capsys.readouterr().err
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"not an npy file")
    assert main(["replay", "--lengths", str(junk)]) == 2
    assert "not a readable .npy array" in capsys.readouterr().err


def test_unknown_policy_exits_nonzero(lengths_file: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "packing_theory.cli", "replay", "--lengths", str(lengths_file),
         "--policy", "nope"], capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 2
    assert "invalid choice: 'nope'" in proc.stderr


@pytest.mark.parametrize("policy", POLICIES)
def test_the_fast_engine_s_batches_replay_like_the_reference(lengths_file: Path, policy: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``replay`` feeds the fast engine's batches to its consumers (the summary, bounded-wait's delays, the
    per-source accounting): the JSON is the reference engine's, but for ``seconds``."""
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"src{i % 3}\n" for i in range(4000)))
    outs = []
    for engine in ("fast", "reference"):
        assert main(["replay", "--lengths", str(lengths_file), "--capacity", "65", "--min-buffer", "40",
                     "--refill", "16", "--policy", policy, "--drain", "--labels", str(labels),
                     "--engine", engine, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        out.pop("seconds")
        outs.append(out)
    assert outs[0] == outs[1]
    assert set(outs[0]["sources"]) > {"labels"}
