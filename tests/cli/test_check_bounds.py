"""``packing-theory check`` and ``packing-theory bounds``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main


def _npy(tmp_path: Path, values: list[int], name: str = "lengths.npy") -> str:
    path = tmp_path / name
    np.save(path, np.array(values, dtype=np.int64))
    return str(path)


def test_check_clean_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(1)
    lengths = np.maximum(1, rng.lognormal(3, 1.2, 3000).astype(np.int64)).tolist()
    path = _npy(tmp_path, lengths)
    for policy in ("discard", "continue"):
        assert main(["check", "--lengths", path, "--capacity", "65", "--min-buffer", "50", "--refill", "8",
                     "--policy", policy, "--passes", "2", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["violations"] == 0 and out["first_violation"] is None
        assert out["selections_checked"] == out["selections"] > 1000
        assert out["protected_size"] == 49 and out["in_hypotheses"] is True
    assert main(["check", "--lengths", path, "--capacity", "65", "--min-buffer", "50"]) == 0
    text = capsys.readouterr().out
    assert "selections_checked" in text and "first_violation       none" in text and "None" not in text


def test_check_reports_a_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _npy(tmp_path, [3, 1])
    args = ["check", "--lengths", path, "--capacity", "2", "--min-buffer", "2", "--refill", "1",
            "--passes", "2", "--policy", "requeue-bos"]
    assert main([*args, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["violations"] == 1
    first = out["first_violation"]
    assert (first["kind"], first["occurrence"], first["selection"]) == ("selected", 2, 2)
    assert first["event"]["type"] == "Placement" and first["buffer"]["spans"] == 2
    assert main(args) == 1
    assert "selected: protected occurrence 2" in capsys.readouterr().out


def test_check_segment_first_views(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _npy(tmp_path, [9, 9, 1, 1])
    base = ["check", "--lengths", path, "--capacity", "4", "--min-buffer", "2", "--refill", "1",
            "--policy", "segment-first"]
    assert main(base) == 0
    assert "protected set is empty" in capsys.readouterr().out
    assert main([*base, "--originals", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["segmented"] is False


def test_check_drain_counts_outside(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _npy(tmp_path, [5, 6, 7])
    assert main(["check", "--lengths", path, "--capacity", "2", "--min-buffer", "4", "--refill", "1",
                 "--drain", "--json", "--no-buffer-summary"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selections_checked"] == 0 and out["selections_outside"] == out["selections"] > 0


def test_check_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--lengths", str(tmp_path / "missing.npy")]) == 2
    assert "packing-theory check: error" in capsys.readouterr().err
    path = _npy(tmp_path, [3, 0])
    assert main(["check", "--lengths", path]) == 2
    assert "must be a positive" in capsys.readouterr().err
    assert main(["check", "--lengths", _npy(tmp_path, [3], "one.npy"), "--min-buffer", "0"]) == 2


def test_bounds_from_counts_reproduces_the_paper(capsys: pytest.CaptureFixture[str]) -> None:
    counts = "16384=789,32768=196,65536=39,131072=9,290219=1"
    assert main(["bounds", "--counts", counts, "--min-buffer", "1000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["threshold"], r["sources_per_pass"], r["earliest_pass"]) for r in out["repeated_corpus"]] == [
        (16384, 789, 2), (32768, 196, 6), (65536, 39, 26), (131072, 9, 112), (290219, 1, 1000)]
    assert main(["bounds", "--counts", counts]) == 0
    assert "|290,219|1|1000|" in capsys.readouterr().out


def test_bounds_from_lengths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lengths = [10, 3000, 5000, 9000, 3000, 20, 70000]
    path = _npy(tmp_path, lengths)
    assert main(["bounds", "--lengths", path, "--min-buffer", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["long_documents"] == 5 and out["startup_arrival"] == 4
    assert out["mass_lower_bound"] == 70000 + 9000
    assert out["expected_startup_arrival"] == pytest.approx(3 / (5 / 7))
    rows = {r["threshold"]: r for r in out["repeated_corpus"]}
    assert rows[4096] == {"threshold": 4096, "sources_per_pass": 3, "earliest_pass": 1}
    assert rows[70000]["earliest_pass"] == 3
    assert main(["bounds", "--lengths", path, "--thresholds", "4096,8192", "--min-buffer", "3"]) == 0
    assert "|8,192|2|2|" in capsys.readouterr().out


def test_bounds_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bounds", "--counts", "1000=5"]) == 2
    assert "thresholds must exceed capacity 2049" in capsys.readouterr().err
    assert main(["bounds", "--counts", "4096=1,8192=5"]) == 2
    assert main(["bounds", "--counts", "4096:1"]) == 2  # argparse rejects the malformed value
    assert main(["bounds"]) == 2  # --lengths or --counts is required


def test_cli_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bounds", "--counts", "16384=x"]) == 2  # main() returns the status, never SystemExit
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "16384=x" in err and "THRESHOLD=COUNT" in err
