"""``packing-theory reconcile``: 0 reconciled, 1 a divergence named on one line, 2 bad input, 3 no step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import _OneLineParser
from packing_theory.cli import reconcile as command
from packing_theory.cli._exit import ExitCode, run_command
from packing_theory.training import Schedule, write_token_corpus
from tests.training.simulate import random_docs, replay_rows, run_ledger, step_batches

DOCS = random_docs(150, seed=8)


def main(argv: list[str]) -> int:
    """``packing-theory reconcile`` as ``packing_theory.cli.main`` runs it: the module's parser under the
    exit-code contract (only this command is registered, so the test does not depend on the others)."""
    parser = _OneLineParser(prog="packing-theory")
    command.register(parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else int(ExitCode.USAGE)
    return run_command(args.command, lambda: args.run(args), debug=False)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    rows = replay_rows("trl-bfd", DOCS, 32)
    sched = Schedule(rows_per_step=4)
    good, _ = run_ledger(DOCS, step_batches(rows, DOCS, 32, sched, 0, range(6)))
    bad, _ = run_ledger(DOCS, step_batches(rows, DOCS, 32, sched, 0, range(6),
                                           source=lambda s: s + 1 if s >= 2 else s))
    empty, _ = run_ledger(DOCS, iter(()))
    out = {}
    for name, buf in (("good", good), ("bad", bad), ("empty", empty)):
        out[name] = tmp_path / f"{name}.ptl"
        out[name].write_bytes(buf.getvalue())
    out["corpus"] = tmp_path / "corpus.npz"
    write_token_corpus(out["corpus"], DOCS)
    out["jsonl"] = tmp_path / "corpus.jsonl"
    write_token_corpus(out["jsonl"], DOCS)
    out["labels"] = tmp_path / "labels.txt"
    out["labels"].write_text("".join("web\n" if i % 2 else "code\n" for i in range(len(DOCS))))
    out["mixture"] = tmp_path / "mix.json"
    out["mixture"].write_text(json.dumps({"alpha": {"web": 0.5, "code": 0.5}}))
    return out


def _args(files: dict[str, Path], ledger: str, *extra: str) -> list[str]:
    return ["reconcile", str(files[ledger]), "--corpus", str(files["corpus"]), "--policy", "trl-bfd",
            "--capacity", "32", "--rows-per-step", "4", *extra]


def test_exit_codes_and_output(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(files, "good")) == 0
    assert "reconcile: every step equals the trl-bfd replay: 6 step records" in capsys.readouterr().out
    assert main(_args(files, "bad")) == 1
    out = capsys.readouterr().out
    assert "diverged from the trl-bfd replay at step 2, rank 0" in out and "skipped" in out
    assert main(_args(files, "bad", "--json")) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["divergence"]["class"] == "skipped" and doc["divergence"]["step"] == 2
    assert main(_args(files, "good", "--markdown", "--labels", str(files["labels"]), "--mixture",
                      str(files["mixture"]), "--peer-option", "trl-bfd:window=1000")) == 0
    md = capsys.readouterr().out
    assert md.startswith("every step equals the trl-bfd replay") and "# Training reconciliation" in md
    assert "| web |" in md and "50.0%" in md
    jsonl = _args(files, "good")
    jsonl[jsonl.index(str(files["corpus"]))] = str(files["jsonl"])
    assert main(jsonl) == 0


def test_bad_input_is_one_line_and_status_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    assert main(_args(files, "good", "--peer-option", "windows=3")) == 2
    assert "--peer-option windows: policy 'trl-bfd' takes no option 'windows'" in capsys.readouterr().err
    assert main(_args(files, "good", "--window", "0")) == 2
    assert "--window must be >= 1, got 0" in capsys.readouterr().err
    assert main(_args(files, "good", "--policy", "discard")) == 2
    assert "--policy takes one packer here, got 2: trl-bfd, discard" in capsys.readouterr().err
    assert main(_args(files, "good", "--mixture", str(files["mixture"]))) == 2
    assert "--mixture compares each source's share: give the documents' sources with --labels" in \
        capsys.readouterr().err
    other = tmp_path / "other.npz"
    write_token_corpus(other, random_docs(5, seed=1))
    args = _args(files, "good")
    args[args.index(str(files["corpus"]))] = str(other)
    assert main(args) == 2
    assert "another corpus" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.arange(3))
    args = _args(files, "good")
    args[args.index(str(files["corpus"]))] = str(tmp_path / "x.npy")
    assert main(args) == 2
    assert "is not a .npz corpus" in capsys.readouterr().err
    assert main(["reconcile", str(files["good"]), "--corpus", str(files["corpus"]), "--policy", "nope",
                 "--capacity", "8"]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_the_report_files(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from packing_theory.reporting import Report

    assert main(_args(files, "bad", "--out", str(tmp_path / "rep"))) == 1
    assert "reconcile: a divergence; wrote" in capsys.readouterr().err
    doc = json.loads((tmp_path / "rep" / "reconcile.json").read_text())
    assert doc["kind"] == "reconcile" and doc["divergence"]["class"] == "skipped" and doc["run"]["id"]
    page = (tmp_path / "rep" / "reconcile.html").read_text()
    assert "Training reconciliation" in page and "First divergence" in page
    assert (tmp_path / "rep" / "reconcile.md").read_text().startswith("diverged from the trl-bfd replay")
    assert main(_args(files, "good", "--force")) == 2
    assert "--force applies to --out" in capsys.readouterr().err
    from packing_theory.training import Schedule, reconcile

    res = reconcile(files["good"], DOCS, "trl-bfd", capacity=32, schedule=Schedule(rows_per_step=4))
    assert isinstance(res, Report)


def test_the_report_stays_apart_from_its_inputs(files: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Like every report (``audit``'s rule, :func:`~packing_theory.reporting.writer.inputs_problem`): an
    input that is one of the report's own files is exit 2 with one line before anything is read or
    written, ``--force`` or not. Before the fix the report was written only after the replay, by a writer
    that was not told the inputs: the previous report was read as a ledger (or labels) instead."""
    rep = tmp_path / "rep"
    assert main(_args(files, "good", "--out", str(rep))) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in rep.iterdir()}
    own_ledger = _args(files, "good", "--out", str(rep), "--force")
    own_ledger[1:2] = [str(files["good"]), str(rep / "reconcile.json")]
    for argv in (own_ledger, _args(files, "good", "--out", str(rep), "--force", "--labels",
                                   str(rep / "reconcile.md"))):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is the report's own reconcile." in err[0], err
        assert "a report never reads" in err[0]
        assert {p.name: p.read_bytes() for p in rep.iterdir()} == before


def test_an_empty_ledger_is_not_measured(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(files, "empty")) == 3
    assert "no step" in capsys.readouterr().err
