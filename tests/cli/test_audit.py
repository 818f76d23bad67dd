"""``packing-theory audit``: small files, a scaled-down demo and the error paths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

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
    assert [p["packer"] for p in doc["packers"]] == ["discard", "continue", "segment-first"]
    assert all(p["mass"]["identity_holds"] for p in doc["packers"])
    assert doc["evaluation"]["populations"][0]["prefixes"][0]["targets"] == 310
    assert json.loads((out / "audit.json").read_text()) == doc  # --json prints the document written
    assert "## The answer" in (out / "audit.md").read_text()
    (line,) = captured.err.strip().splitlines()  # one summary line
    assert line.startswith(f"audit: {doc['headline']}") and "wrote" in line
    assert doc["headline"].startswith("discard reached the horizon of 300 rows:")


@pytest.mark.skipif(not matplotlib_available(), reason="matplotlib (the plots extra) is not installed")
def test_scaled_down_demo_writes_everything(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert main(["audit", "--demo", "--scale", "0.01", "--permutations", "2", "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"audit.json", "audit.md", "audit.html", "retention_by_stratum.png", "exposure_profile.png",
            "startup_delay.png", "buffered_mass.png"} <= names
    md = (out / "audit.md").read_text()
    for needle in ("## The answer", "## Per packer", "## By original length", "## Startup delay",
                   "## Evaluation population", "never started"):
        assert needle in md
    doc = json.loads((out / "audit.json").read_text())
    assert [p["packer"] for p in doc["packers"]] == ["discard", "continue", "segment-first"]
    assert doc["settings"]["capacity"] == 2049  # the demo's settings: autoresearch's R


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
    assert main(["audit", "--text", str(path), "--column", "text", "--no-plots"]) == 2
    assert "no column 'text'" in one_line_error(capsys)


def test_no_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--no-plots"]) == 2
    assert "one of the arguments --demo --data" in one_line_error(capsys)


def test_bad_tokenizer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "d.txt"
    f.write_text("hello")
    assert main(["audit", "--text", str(f), "--tokenizer", "nosuchmodule_xyz:enc", "--no-plots"]) == 2
    assert "--tokenizer 'nosuchmodule_xyz:enc': cannot import module" in one_line_error(capsys)


def test_the_peer_options_reach_the_peers(lengths_file: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", "--lengths", str(lengths_file), "--policy", "trl-bfd,discard,trl-wrapped",
            "--peer-option", "window=50", "--policy", "continue", "--out", str(tmp_path / "r"),
            "--no-plots", "--no-progress", "--json", *SMALL]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["packer"] for p in doc["packers"]] == ["trl-bfd", "discard", "trl-wrapped", "continue"]
    assert [p["options"].get("window") for p in doc["packers"]] == [50, None, 50, None]
    assert [s["policy"] for s in doc["startup"]] == ["discard", "continue"]  # streaming only
    assert main([*argv, "--peer-option", "trl-wrapped:window=7"]) == 0  # the named packer's value wins
    doc = json.loads(capsys.readouterr().out)
    assert [p["options"].get("window") for p in doc["packers"]] == [50, None, 7, None]


@pytest.mark.parametrize(("argv", "needle"), [
    (["audit", "--demo", "--permutation-seed", "-1"], "--permutation-seed must be >= 0, got -1"),
    (["audit", "--demo", "--eval-targets", "-5"], "--eval-targets must be >= 1, got -5"),
    (["audit", "--lengths", "{npy}", "--eval-targets", "4096"],
     "--eval-targets needs an evaluation stream"),
    (["audit", "--lengths", "{npy}", "--eval-prefixes", "4096"],
     "--eval-prefixes needs an evaluation stream"),
    (["audit", "--demo", "--policy", "bounded-wait", "--max-wait", "-1"],
     "--max-wait must be >= 0, got -1"),
    (["audit", "--demo", "--world-size", "2", "--policy", "discard,trl-bfd"],
     "--world-size applies to streaming policies only; got 'trl-bfd'"),
    (["audit", "--lengths", "{npy}", "--documents", "documents.tsv"], "argument --documents: invalid choice"),
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


def test_the_summary_line_counts_one_document_in_the_singular(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "one.txt").write_text("a single short document\n")
    status = main(["audit", "--text", str(tmp_path / "one.txt"), "--min-buffer", "1", "--drain",
                   "--no-plots", "--permutations", "0", "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "(1 document, " in err and "(1 documents" not in err
