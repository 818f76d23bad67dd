"""``packing-theory audit``: small files, a scaled-down demo and the error paths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.reporting import matplotlib_available

SMALL = ["--capacity", "32", "--min-buffer", "20", "--refill", "8", "--rows", "300", "--permutations", "3"]


@pytest.fixture()
def lengths_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    path = tmp_path / "lengths.npy"
    np.save(path, np.maximum(1, rng.lognormal(2.6, 1.2, 2500)).astype(np.int32))
    return path


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("packing-theory audit: error: ")
    return err


def test_audit_lengths_two_policies(lengths_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    out = tmp_path / "rep"
    status = main(["audit", "--lengths", str(lengths_file), "--policy", "discard,continue",
                   "--policy", "segment-first", "--eval-lengths", str(lengths_file), "--eval-targets",
                   str(31 * 40), "--eval-prefixes", "310", "--out", str(out), "--no-plots", "--json", *SMALL])
    assert status == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [p["policy"] for p in doc["policies"]] == ["discard", "continue", "segment-first"]
    assert all(p["mass"]["identity_holds"] for p in doc["policies"])
    assert doc["evaluation"]["populations"][0]["prefixes"][0]["targets"] == 310
    assert json.loads((out / "audit.json").read_text())["schema"] == "packing-theory/audit"
    assert "## Retention" in (out / "audit.md").read_text()
    assert "wrote" in captured.err


@pytest.mark.skipif(not matplotlib_available(), reason="matplotlib (the plots extra) is not installed")
def test_scaled_down_demo_writes_everything(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert main(["audit", "--demo", "--scale", "0.01", "--permutations", "2", "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"audit.json", "audit.md", "retention_by_stratum.png", "exposure_profile.png",
            "startup_delay.png", "buffered_mass.png"} <= names
    md = (out / "audit.md").read_text()
    for needle in ("discarded tokens", "sources never started", "protected / buffered mass",
                   "startup delay", "## Retention", "## Evaluation population", "Verdict"):
        assert needle in md
    doc = json.loads((out / "audit.json").read_text())
    assert [p["policy"] for p in doc["policies"]] == ["discard", "continue", "segment-first"]


def test_shards_input(tmp_path: Path) -> None:
    from packing_theory.corpus import write_shard

    shard = tmp_path / "s.bin"
    rng = np.random.default_rng(2)
    write_shard(shard, [[1] * int(n) for n in rng.integers(1, 60, 400)], vocab=8)
    assert main(["audit", "--shards", str(shard), "--out", str(tmp_path / "r"), "--no-plots", *SMALL]) == 0


def test_text_input(tmp_path: Path) -> None:
    f = tmp_path / "docs.txt"
    f.write_text("\n".join("word " * (i % 37 + 1) for i in range(300)))
    assert main(["audit", "--text", str(f), "--per-line", "--tokenizer", "whitespace", "--out",
                 str(tmp_path / "r"), "--no-plots", *SMALL]) == 0
    doc = json.loads((tmp_path / "r" / "audit.json").read_text())
    assert doc["corpus"]["documents"] == 300


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--lengths", str(tmp_path / "nope.npy"), "--no-plots"]) == 2
    assert "nope.npy" in one_line_error(capsys)


def test_empty_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.npy"
    np.save(path, np.zeros(0, dtype=np.int64))
    assert main(["audit", "--lengths", str(path), "--no-plots"]) == 2
    assert "empty" in one_line_error(capsys)


def test_float_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.npy"
    np.save(path, np.array([1.5, 2.0]))
    assert main(["audit", "--lengths", str(path), "--no-plots"]) == 2
    assert "integer dtype" in one_line_error(capsys)


def test_bad_policy(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--lengths", str(lengths_file), "--policy", "discard,bogus", "--no-plots"]) == 2
    assert "'bogus'" in one_line_error(capsys)


def test_corrupt_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00" * 7)
    assert main(["audit", "--shards", str(bad), "--no-plots"]) == 2
    assert "bad.bin" in one_line_error(capsys)


def test_unknown_parquet_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"body": ["a b", "c"]}), path)
    assert main(["audit", "--text", str(path), "--text-column", "text", "--no-plots"]) == 2
    assert "no column 'text'" in one_line_error(capsys)


def test_no_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--no-plots"]) == 2
    assert "--demo" in one_line_error(capsys)


def test_bad_tokenizer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "d.txt"
    f.write_text("hello")
    assert main(["audit", "--text", str(f), "--tokenizer", "nosuchmodule_xyz:enc", "--no-plots"]) == 2
    assert "--tokenizer" in one_line_error(capsys)


def _without_run_metadata(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("run", "seconds")}


# workers=2 repeats the check through a process pool: in the slow step, beside test_scale's workers test
@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_the_api_audits_peers_exactly_as_the_command(workers: str, lengths_file: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix run_audit refused peers and the command spliced them into its result."""
    from packing_theory.orchestration import run_audit
    from packing_theory.rendering import report_dict

    argv = ["audit", "--lengths", str(lengths_file), "--policy", "trl-bfd,discard,trl-wrapped",
            "--peer-option", "window=50", "--policy", "continue", "--out", str(tmp_path / "r"),
            "--no-plots", "--no-progress", "--json", "--workers", workers, *SMALL]
    assert main(argv) == 0
    cli_doc = json.loads(capsys.readouterr().out)
    assert main(argv[:5] + argv[7:]) == 0  # without the peer option it differs: the option reached the peer
    plain = json.loads(capsys.readouterr().out)
    assert plain["policies"][0] != cli_doc["policies"][0] and plain["policies"][1] == cli_doc["policies"][1]
    config = pt.PackerConfig(capacity=32, min_buffer=20, refill=8, rows=300)
    policies = ["trl-bfd", "discard", "trl-wrapped", "continue"]
    result = run_audit(np.load(lengths_file), config, policies=policies, permutations=3,
                       peer_options={"trl-bfd": {"window": 50}, "trl-wrapped": {"window": 50}},
                       corpus_label="lengths.npy")
    assert [a.policy for a in result.policies] == policies
    assert [s.policy for s in result.startup] == ["discard", "continue"]  # streaming only
    api_doc = report_dict(result, documents_file="documents.csv")  # a small corpus: the command writes it
    assert _without_run_metadata(api_doc) == _without_run_metadata(cli_doc)


def test_run_audit_checks_peer_options_before_replaying(lengths_file: Path) -> None:
    from packing_theory.orchestration import run_audit

    lengths = np.load(lengths_file)
    with pytest.raises(ValueError, match=r"peer_options names 'trl-bfd', which is not an audited peer"):
        run_audit(lengths, policies=["discard"], peer_options={"trl-bfd": {}})
    message = r"peer_options\['trl-bfd'\]: policy 'trl-bfd' takes no option 'bogus' \(it takes: window"
    with pytest.raises(ValueError, match=message):
        run_audit(lengths, policies=["trl-bfd"], peer_options={"trl-bfd": {"bogus": 1}})
    with pytest.raises(ValueError, match=r"policy must be one of .*trl-bfd.*; got 'nope'"):
        run_audit(lengths, policies=["discard", "nope"])


def test_the_demo_inputs_are_a_library_function() -> None:
    from packing_theory.cli.audit import demo_inputs
    from packing_theory.orchestration import audit_demo

    demo = audit_demo(0.01)
    train, evals, rows, eval_targets, prefixes = demo_inputs(0.01)
    assert np.array_equal(train, demo.lengths) and np.array_equal(evals, demo.eval_lengths)
    assert (rows, eval_targets, prefixes) == (demo.rows, demo.eval_targets, demo.eval_prefixes)
    assert demo.config().rows == rows and demo.config().capacity == 2049


@pytest.mark.parametrize(("argv", "needle"), [
    (["audit", "--demo", "--permutation-seed", "-1"], "--permutation-seed must be >= 0, got -1"),
    (["audit", "--demo", "--eval-targets", "-5"], "--eval-targets must be >= 1, got -5"),
    (["audit", "--lengths", "{npy}", "--eval-targets", "4096"],
     "--eval-targets 4096 needs an evaluation stream"),
    (["audit", "--demo", "--policy", "bounded-wait", "--max-wait", "-1"],
     "--max-wait must be >= 0 (rows), got -1"),
    (["bounds", "--lengths", "{npy}", "--capacity", "1"], "--capacity must be >= 2, got 1"),
])
def test_cli_refusals_name_the_option(argv: list[str], needle: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    npy = tmp_path / "l.npy"
    np.save(npy, np.array([5, 9, 3, 7], dtype=np.int64))
    argv = [a.replace("{npy}", str(npy)) for a in argv]
    if argv[0] == "audit":
        argv += ["--no-plots", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "out" / "audit.json").exists()


def test_audit_report_records_the_wait_threshold(tmp_path: Path) -> None:
    npy = tmp_path / "l.npy"
    np.save(npy, np.random.default_rng(3).integers(1, 40, 400))
    waits = {}
    for a in ("0", "7"):
        out = tmp_path / f"o{a}"
        assert main(["audit", "--lengths", str(npy), "--capacity", "16", "--min-buffer", "8",
                     "--refill", "2", "--policy", "bounded-wait,continue", "--max-wait", a,
                     "--permutations", "0", "--no-plots", "--no-progress", "--out", str(out)]) == 0
        waits[a] = json.loads((out / "audit.json").read_text())["settings"]["max_wait"]
    assert waits == {"0": 0, "7": 7}


def test_audit_text_with_default_bytes_tokenizer(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("hello world\nsecond line\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["audit", "--text", str(text), "--no-plots", "--permutations", "0", "--capacity", "4",
                 "--min-buffer", "1", "--out", str(out), "--no-progress"]) == 0
    doc = json.loads((out / "audit.json").read_text())
    assert doc["corpus"]["tokens"] == len(b"hello world\nsecond line\n") + 1


def test_demo_honours_eval_options(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert main(["audit", "--demo", "--scale", "0.01", "--eval-targets", "4096", "--eval-prefixes", "2048",
                 "--permutations", "0", "--no-plots", "--out", str(out), "--no-progress"]) == 0
    pop = json.loads((out / "audit.json").read_text())["evaluation"]["populations"][0]
    assert pop["targets"] == 4096
    assert [p["targets"] for p in pop["prefixes"]] == [2048]
    assert main(["audit", "--demo", "--eval-lengths", "x.npy", "--out", str(out)]) == 2
