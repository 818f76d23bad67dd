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
    assert [c["packer"] for c in serial["packers"]] == PACKERS.split(",")
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


def test_a_peer_whose_row_would_hold_one_token_is_refused_naming_it(tmp_path: Path) -> None:
    """--seq-length 1 gives TRL rows of 1 token: it stopped the whole comparison with 'capacity must be
    >= 2, got 1', naming neither the peer nor the user's value."""
    path = tmp_path / "l.npy"
    np.save(path, np.random.default_rng(0).integers(1, 30, 200))
    assert main(["compare", "--lengths", str(path), "--seq-length", "1", "--min-buffer", "5", "--policy",
                 "discard,trl-bfd,megatron-gpt", "--out", str(tmp_path / "c"), "--no-plots"]) == 0
    doc = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert [p["packer"] for p in doc["packers"]] == ["discard", "megatron-gpt"]  # Megatron: R = L + 1 = 2
    assert doc["refused"] == [{"packer": "trl-bfd", "reason": (
        "trl-bfd packs rows of 1 token(s) (R = seq_length: a row holds the framework's "
        "sequence length); rows of at least 2 tokens are needed")}]


@pytest.mark.parametrize("command", ["compare", "audit"])
def test_every_packer_refusing_the_corpus_exits_3_naming_why(tmp_path: Path, command: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing measured is not "nothing found": both commands exited 0 when every packer asked refused."""
    path = tmp_path / "l.npy"
    np.save(path, np.array([5, 40, 3, 7] * 10))  # 40 > the row: NeMo's first-fit has no slot for it
    out = tmp_path / "r"
    assert main([command, "--lengths", str(path), "--capacity", "16", "--min-buffer", "4", "--policy",
                 "nemo-first_fit", "--no-plots", "--out", str(out)]) == 3
    err = capsys.readouterr().err
    done = {"compare": "compared", "audit": "audited"}[command]
    assert f"could not measure: no packer could be {done}: nemo-first_fit: lengths[1] = 40" in err
    assert (out / f"{command}.json").is_file()  # the report that says so is written


def test_one_packer_compared_gets_its_own_answer_not_a_ranking(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """With one packer left the headline said "every packer trains ... no ranked quantity differs between
    them"; it now gives that packer's answer and names the packer that refused."""
    path = tmp_path / "l.npy"
    np.save(path, np.array([5, 40, 3, 7] * 10))
    assert main(["compare", "--lengths", str(path), "--capacity", "16", "--min-buffer", "4", "--policy",
                 "nemo-first_fit,discard", "--no-plots", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "every packer" not in err and "between them" not in err
    assert "discard stopped at row" in err or "discard reached" in err
    assert "1 packer compared, so nothing is ranked; nemo-first_fit refused the corpus" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["audit", "--capacity", "99999999999999999999999"], "--capacity must be <= 16,777,216"),
    (["audit", "--seq-length", "99999999999999999999999"], "--seq-length must be <= 16,777,215"),
    (["compare", "--seq-length", "99999999999999999999999"], "--seq-length must be <= 16,777,215"),
    (["audit", "--permutations", "99999999999999"], "--permutations must be <= 1,000"),
    (["audit", "--policy", "foundry-binpack", "--peer-option", "packing_ratio=1e308"],
     "batch_size * packing_ratio must be < 2**31"),
])
def test_huge_numbers_are_bad_input_naming_the_option(argv: list[str], message: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Each was an OverflowError (exit 3) or ran until killed."""
    path = tmp_path / "l.npy"
    np.save(path, np.array([5, 9, 3], dtype=np.int64))
    assert main([*argv, "--lengths", str(path), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "o").exists()


def test_an_interrupted_comparison_resumes_into_the_same_out(lengths_file: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    measure_module = importlib.import_module("packing_theory.orchestration.measure")
    real = measure_module._run_one
    last = PACKERS.split(",")[-1]

    def interrupted(task: Any, *args: Any) -> Any:
        if task.name == last:
            raise KeyboardInterrupt
        return real(task, *args)

    out = tmp_path / "out"
    parts = out / "compare-parts"
    parts.mkdir(parents=True)
    (parts / "notes.txt").write_text("mine")  # the user's files there are not the comparison's
    (parts / "thesis.tex.tmp-2").write_text("mine too")
    monkeypatch.setattr(measure_module, "_run_one", interrupted)
    args = ["compare", "--lengths", str(lengths_file), "--policy", PACKERS, "--capacity", "512",
            "--min-buffer", "50", "--no-plots", "--out", str(out)]
    assert main(args) == 3  # interrupted: nothing more was measured
    kept = sorted(parts.glob("run-*.pkl")) + sorted(parts.glob("pass-*.pkl"))
    assert 0 < len(kept) < len(PACKERS.split(","))  # the packers done before the interruption
    assert not (out / "compare.json").exists()
    monkeypatch.setattr(measure_module, "_run_one", real)
    capsys.readouterr()
    assert main(args) == 0
    said = capsys.readouterr().err
    total = len(PACKERS.split(","))
    assert f"read {len(kept)} of the {total} packers' results back from {parts}" in said, said
    assert sorted(p.name for p in parts.iterdir()) == ["notes.txt", "thesis.tex.tmp-2"]  # only ours went
    fresh = _report(lengths_file, tmp_path / "fresh")
    assert _timeless(json.loads((out / "compare.json").read_text())) == _timeless(fresh)
    assert not (tmp_path / "fresh" / "compare-parts").exists()  # nothing else there: the folder went too


def test_a_parts_path_that_is_not_a_directory_is_refused_naming_out(
        lengths_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "compare-parts").write_text("a file")
    args = ["compare", "--lengths", str(lengths_file), "--policy", "discard", "--no-plots", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"--out {str(out)!r} holds 'compare-parts', which is not a directory" in err, err
    assert (out / "compare-parts").read_text() == "a file"
