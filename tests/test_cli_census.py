"""``packing-theory census`` and ``audit --world-size``: outputs equal the library's, exit codes 0 / 2 / 3."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from distributed_helpers import make_parquet, make_shards, make_texts

from packing_theory.cli import main
from packing_theory.corpus import default_lengths, iter_parquet_texts, lengths_from_shards, lengths_from_texts
from packing_theory.corpus.text import lengths_from_text_files
from packing_theory.distributed import audit_ranks
from packing_theory.engine.policies import PackerConfig


def test_census_outputs_equal_the_serial_functions(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    texts = make_texts(str(tmp_path))
    assert main(["census", "--text", *texts, "--per-line", "--tokenizer", "whitespace",
                 "--out", str(tmp_path / "t"), "--workers", "2"]) == 0
    assert np.array_equal(np.load(tmp_path / "t" / "lengths.npy"),
                          lengths_from_text_files(texts, "whitespace", per_line=True))
    assert "reused 0, computed 4" in capsys.readouterr().err
    assert main(["census", "--text", *texts, "--per-line", "--tokenizer", "whitespace",
                 "--out", str(tmp_path / "t")]) == 0
    assert "reused 4, computed 0" in capsys.readouterr().err
    shards = make_shards(str(tmp_path))
    assert main(["census", "--shards", *shards, "--out", str(tmp_path / "s"), "--hashes", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert np.array_equal(np.load(tmp_path / "s" / "lengths.npy"), lengths_from_shards(shards))
    assert doc["n_docs"] == 900 and [s["n_docs"] for s in doc["shards"]] == [300, 300, 300]
    files = make_parquet(str(tmp_path))
    assert main(["census", "--parquet", *files, "--out", str(tmp_path / "p")]) == 0
    assert np.array_equal(np.load(tmp_path / "p" / "lengths.npy"),
                          lengths_from_texts(iter_parquet_texts(files), "bytes"))


def test_census_usage_errors_are_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    texts = make_texts(str(tmp_path), n=1)
    cases = [
        (["--text", *texts, "--executor", "dask:/x"], "--executor must be local or dask://HOST:PORT, got"),
        (["--text", *texts, "--executor", "spark"], "got 'spark'"),
        (["--text", *texts, "--workers", "-1"], "--workers must be >= 0, got -1"),
        (["--text", str(tmp_path / "missing.txt")], "missing.txt"),
        (["--parquet", *texts, "--per-line"], "--per-line applies to --text only"),
        (["--text", *texts, "--tokenizer", "nomodule:fn"], "--tokenizer 'nomodule:fn'"),
        ([], "one of the arguments --text --parquet --shards is required"),
    ]
    for extra, message in cases:
        assert main(["census", *extra, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00" * 7)
    assert main(["census", "--shards", str(bad), "--out", str(tmp_path / "o"), "--retries", "0"]) == 2
    assert "shorter than the 16-byte header" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "distributed", None)  # dask absent
    assert main(["census", "--text", *texts, "--executor", "dask://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err
    assert 'pip install "packing-theory[distributed]"' in err and len(err.strip().splitlines()) == 1
    np.save(tmp_path / "l.npy", np.array([3, 4, 5]))
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--no-plots", "--executor",
                 "dask://127.0.0.1:8786", "--out", str(tmp_path / "a")]) == 2
    assert 'pip install "packing-theory[distributed]"' in capsys.readouterr().err
    assert not (tmp_path / "a").exists()  # refused before anything ran


def test_audit_world_size_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "l.npy", default_lengths(seed=0)[:3000])
    base = ["audit", "--lengths", str(tmp_path / "l.npy"), "--no-plots", "--out", str(tmp_path / "a")]
    for extra, message in [(["--world-size", "0"], "--world-size must be >= 1, got 0"),
                           (["--world-size", "-3"], "--world-size must be >= 1, got -3"),
                           (["--world-size", "2", "--policy", "discard,trl-bfd"],
                            "--world-size applies to streaming policies only; got peer policy 'trl-bfd'"),
                           (["--world-size", "2", "--row-group-size", "0"], "--row-group-size must be >= 1"),
                           (["--executor", "dask://h"], "--executor must be local or dask://HOST:PORT")]:
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "a").exists()


def test_audit_world_size_section_equals_the_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    lengths = default_lengths(seed=0)[:5000]
    np.save(tmp_path / "l.npy", lengths)
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--policy", "discard,continue",
                 "--rows", "300", "--min-buffer", "100", "--permutations", "0", "--no-plots", "--no-progress",
                 "--world-size", "3", "--row-group-size", "128", "--out", str(tmp_path / "a")]) == 0
    doc = json.loads((tmp_path / "a" / "audit.json").read_text())
    cfg = PackerConfig(min_buffer=100, rows=300)
    expected = audit_ranks(lengths, 3, cfg, policies=["discard", "continue"], row_group_size=128)
    assert doc["ranks"] == {s.policy: s.to_dict() for s in expected}
    tasks = doc["execution"]["ranks"]["tasks"]
    assert doc["execution"]["ranks"]["executor"] == "local" and [t["rank"] for t in tasks] == [0, 1, 2]
    assert all(t["attempts"] == 1 and "/pid " in t["worker"] for t in tasks)
    md = (tmp_path / "a" / "audit.md").read_text()
    assert "## Per-rank audit: continue, world size 3" in md and md.rstrip().endswith("`.")


def test_dask_is_imported_only_when_asked_for() -> None:
    import subprocess

    code = ("import sys, packing_theory, packing_theory.distributed, packing_theory.cli;"
            "packing_theory.cli.build_parser();"
            "from packing_theory.distributed import open_runner;"
            "runner = open_runner('local', workers=1).__enter__();"
            "print(','.join(m for m in ('dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_task_that_never_completes_is_status_3_and_keeps_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    texts = make_texts(str(tmp_path))
    out = tmp_path / "o"
    args = ["census", "--text", *texts, "--per-line", "--out", str(out), "--workers", "2"]
    assert main([*args, "--tokenizer", "distributed_helpers:kill_on_shard1"]) == 3
    err = capsys.readouterr().err
    assert "could not complete: census 1 failed after 2 attempt(s): BrokenProcessPool" in err
    assert "more)" not in err  # the tasks in flight beside it were rerun alone and completed
    assert len(list((out / "parts").glob("*.json"))) == 3 and not (out / "census.json").exists()


def test_audit_world_size_reads_parquet_row_groups_and_shard_files(tmp_path: Path) -> None:
    from packing_theory.distributed import ParquetSource

    files = make_parquet(str(tmp_path), rows=150, row_group_size=25)
    common = ["--policy", "discard", "--capacity", "257", "--min-buffer", "8", "--drain", "--rows", "40",
              "--permutations", "0", "--no-plots", "--no-progress", "--world-size", "2"]
    assert main(["audit", "--text", *files, "--tokenizer", "whitespace", *common,
                 "--out", str(tmp_path / "p")]) == 0
    cfg = PackerConfig(capacity=257, min_buffer=8, exhausted="drain", rows=40)
    (expected,) = audit_ranks(ParquetSource(tuple(files), "whitespace"), 2, cfg)
    doc = json.loads((tmp_path / "p" / "audit.json").read_text())
    assert doc["ranks"]["discard"] == expected.to_dict()
    assert [r["row_groups"] for r in doc["ranks"]["discard"]["ranks"]] == [6, 6]
    shards = make_shards(str(tmp_path), n=3, docs=100)
    assert main(["audit", "--shards", *shards, *common, "--row-group-size", "30",
                 "--out", str(tmp_path / "s")]) == 0
    (by_shard,) = audit_ranks([lengths_from_shards([p]) for p in shards], 2, cfg, row_group_size=30)
    doc = json.loads((tmp_path / "s" / "audit.json").read_text())
    assert doc["ranks"]["discard"] == by_shard.to_dict()
    assert [r["row_groups"] for r in doc["ranks"]["discard"]["ranks"]] == [6, 6]  # 4 groups per shard
