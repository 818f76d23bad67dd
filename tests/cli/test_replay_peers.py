"""``packing-theory replay --json`` with a peer: the framework's padding and targets, every option."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main


def _replay(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    path = tmp_path / "lengths.npy"
    np.save(path, np.array([5, 3, 9, 2, 7, 12, 1, 6] * 3, dtype=np.int64))
    assert main(["replay", "--lengths", str(path), "--json", *args]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_trl_replay_reports_no_padding_and_the_collators_targets(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    doc = _replay(tmp_path, capsys, "--policy", "trl-bfd", "--capacity", "8", "--window", "5")
    fig = doc["peer_figures"]
    assert isinstance(fig, dict)
    assert doc["padding_tokens"] == 0 and isinstance(doc["unused_capacity_tokens"], int)
    assert doc["unused_capacity_tokens"] > 0 and doc["row_identity_holds"] is True
    assert doc["targets"] == doc["emitted_tokens"] - fig["sequences"]  # type: ignore[operator]
    assert doc["options"] == {"window": 5, "framework_version": "1.16.0"}


def test_megatron_replay_draws_num_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _replay(tmp_path, capsys, "--policy", "megatron-gpt", "--seq-length", "4",
                  "--peer-option", "num_samples=40")
    fig = doc["peer_figures"]
    assert isinstance(fig, dict)
    assert doc["rows"] == 40 == fig["horizon"]["samples_drawn"] < fig["horizon"]["samples_in_index"]
    assert doc["stop_reason"] == "rows" and doc["targets"] == 40 * 4
    assert doc["options"] == {"seed": 1234, "num_samples": 40, "framework_version": "0.16.1",
                              "samples": "drawn"}


@pytest.mark.parametrize("peer", ["trl-bfd", "megatron-gpt", "foundry-concat-wrap"])
def test_a_peer_replay_stops_at_the_rows_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               peer: str) -> None:
    """Before the fix ``replay --rows`` was refused for a peer; it now cuts the peer at that row boundary."""
    whole = _replay(tmp_path, capsys, "--policy", peer, "--capacity", "9")
    cut = _replay(tmp_path, capsys, "--policy", peer, "--capacity", "9", "--rows", "7")
    assert int(whole["rows"]) > 7 and cut["rows"] == 7 and cut["stop_reason"] == "rows"  # type: ignore[operator]
    # at its own end a framework packer has packed all it was given: said as audit says it, not as the
    # streaming policies' --drain ("drained")
    assert whole["stop_reason"] == "natural end"
    # nothing is lost at the cut: what was not emitted is still held (buffered) or never arrived
    assert cut["consumed_tokens"] + cut["added_bos_tokens"] == (  # type: ignore[operator]
        cut["emitted_tokens"] + cut["discarded_tokens"] + cut["buffered_tokens"])  # type: ignore[operator]


def test_a_peer_refuses_a_length_it_would_cut_past_the_budget(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.npy"
    np.save(path, np.array([7, 2**63 - 1], dtype=np.int64))
    assert main(["replay", "--lengths", str(path), "--policy", "trl-wrapped", "--capacity", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "lengths[1] = 9223372036854775807 is cut by trl-wrapped" in err
