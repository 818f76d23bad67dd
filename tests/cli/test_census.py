"""``packing-theory census`` and ``audit --world-size``: outputs equal the library's, exit codes 0 / 2 / 3."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.corpus import default_lengths, iter_parquet_texts, lengths_from_shards, lengths_from_texts
from packing_theory.corpus.text import lengths_from_text_files
from packing_theory.distributed import audit_ranks
from packing_theory.engine.policies import PackerConfig
from tests.distributed_helpers import make_parquet, make_shards, make_texts


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
        (["--parquet", *texts, "--per-line"], "--per-line applies to text input, not parquet"),
        (["--text", *texts, "--tokenizer", "nomodule:fn"], "--tokenizer 'nomodule:fn'"),
        ([], "one of the arguments --data --files-from --text --parquet --shards is required"),
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
    assert "pip install 'packing-theory[distributed]'" in err and len(err.strip().splitlines()) == 1
    np.save(tmp_path / "l.npy", np.array([3, 4, 5]))
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--no-plots", "--executor",
                 "dask://127.0.0.1:8786", "--out", str(tmp_path / "a")]) == 2
    assert "pip install 'packing-theory[distributed]'" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()  # refused before anything ran


def test_audit_world_size_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "l.npy", default_lengths(seed=0)[:3000])
    base = ["audit", "--lengths", str(tmp_path / "l.npy"), "--no-plots", "--out", str(tmp_path / "a")]
    for extra, message in [(["--world-size", "0"], "--world-size must be >= 1, got 0"),
                           (["--world-size", "-3"], "--world-size must be >= 1, got -3"),
                           (["--world-size", "2", "--policy", "discard,trl-bfd"],
                            "--world-size applies to streaming policies only; got 'trl-bfd'"),
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
                 "--world-size", "3", "--row-group-size", "128", "--out", str(tmp_path / "a"), "--json"]) == 0
    doc = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert json.loads(capsys.readouterr().out) == doc  # --json printed the per-rank section too
    cfg = PackerConfig(min_buffer=100, rows=300)
    expected = audit_ranks(lengths, 3, cfg, policies=["discard", "continue"], row_group_size=128)
    assert doc["ranks"]["policies"] == {s.policy: s.to_dict() for s in expected}
    tasks = doc["ranks"]["execution"]["tasks"]
    assert doc["ranks"]["execution"]["executor"] == "local" and [t["rank"] for t in tasks] == [0, 1, 2]
    assert all(t["attempts"] == 1 and "/pid " in t["worker"] for t in tasks)
    md = (tmp_path / "a" / "audit.md").read_text()
    assert "continue, world size 3: " in md and "the mass identity holds on every rank" in md


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
    assert main([*args, "--tokenizer", "tests.distributed_helpers:kill_on_shard1"]) == 3
    err = capsys.readouterr().err
    assert f"could not complete: census of {texts[1]!r} failed after 2 attempt(s): BrokenProcessPool" in err
    assert len(err.strip().splitlines()) == 1, err
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
    assert doc["ranks"]["policies"]["discard"] == expected.to_dict()
    assert [r["row_groups"] for r in doc["ranks"]["policies"]["discard"]["ranks"]] == [6, 6]
    shards = make_shards(str(tmp_path), n=3, docs=100)
    assert main(["audit", "--shards", *shards, *common, "--row-group-size", "30",
                 "--out", str(tmp_path / "s")]) == 0
    (by_shard,) = audit_ranks([lengths_from_shards([p]) for p in shards], 2, cfg, row_group_size=30)
    doc = json.loads((tmp_path / "s" / "audit.json").read_text())
    assert doc["ranks"]["policies"]["discard"] == by_shard.to_dict()
    assert [r["row_groups"] for r in doc["ranks"]["policies"]["discard"]["ranks"]] == [6, 6]  # 3 per shard


def test_a_dying_worker_prints_no_tracebacks(tmp_path: Path) -> None:
    """Review finding: when a pool process died, the others inherited the CLI's SIGTERM handler and
    each printed a traceback as the pool ended them, under a run that still exited 0."""
    import os
    import subprocess

    (tmp_path / "ktok.py").write_text(
        "import os\n"
        "def tok(text):\n"
        f"    flag = {str(tmp_path / 'once.flag')!r}\n"
        "    if 'ONCE' in text and not os.path.exists(flag):\n"
        "        open(flag, 'w').close()\n"
        "        os._exit(7)\n"
        "    return list(range(len(text.split())))\n")
    files = []
    for i, body in enumerate(["a b c", "d e", "ONCE x y", "f g h i", "j"]):
        files.append(tmp_path / f"f{i}.txt")
        files[-1].write_text(body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "packing_theory.cli", "census", "--text", *map(str, files),
                           "--tokenizer", "ktok:tok", "--bos", "add", "--workers", "2", "--out",
                           str(tmp_path / "o")],  # ids 0.. on every text would look like a BOS of its own
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert np.load(tmp_path / "o" / "lengths.npy").tolist() == [4, 3, 4, 5, 2]


def test_audit_world_size_on_plain_text_cuts_row_groups_per_file(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Review finding: plain --text files were concatenated and cut into row groups across file
    boundaries, unlike the census, --shards and nanochat's per-file row groups."""
    from packing_theory.distributed import RowGroups, census_row_groups, run_census
    from packing_theory.distributed.parts import CensusOptions

    files = []
    for f in range(3):
        files.append(str(tmp_path / f"t{f}.txt"))
        lines = (f"file {f} line {i} " + "w " * (3 * i + f) + "\n" for i in range(5))
        Path(files[-1]).write_text("".join(lines))
    files.append(str(tmp_path / "empty.txt"))
    Path(files[-1]).write_text("")
    argv = ["audit", "--text", *files, "--per-line", "--tokenizer", "whitespace", "--capacity", "8",
            "--min-buffer", "2", "--refill", "1", "--permutations", "0", "--no-plots", "--no-progress",
            "--world-size", "2", "--row-group-size", "2", "--out", str(tmp_path / "a")]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "a" / "audit.json").read_text())
    run_census(files, CensusOptions("text", "whitespace", per_line=True), tmp_path / "c")
    cfg = PackerConfig(capacity=8, min_buffer=2, refill=1, rows=doc["horizon"]["value"])
    (expected,) = audit_ranks(RowGroups(census_row_groups(tmp_path / "c", row_group_size=2)), 2, cfg)
    got, want = doc["ranks"]["policies"]["discard"], expected.to_dict()
    assert {k: v for k, v in got["settings"].items() if k != "row_group_size"} == {
        k: v for k, v in want["settings"].items() if k != "row_group_size"}  # the census recorded its groups
    assert {k: v for k, v in got.items() if k != "settings"} == {
        k: v for k, v in want.items() if k != "settings"}
    # 3 + 3 + 3 groups, by file
    assert [r["row_groups"] for r in doc["ranks"]["policies"]["discard"]["ranks"]] == [6, 3]


def test_census_and_world_size_refusals_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """Review findings: duplicates double-counted, ignored options accepted, and a too-large
    --world-size refused only after the whole audit."""
    texts = make_texts(str(tmp_path))
    shards = make_shards(str(tmp_path), n=2, docs=20)
    np.save(tmp_path / "l.npy", default_lengths(seed=0)[:3000])
    cases = [
        (["census", "--text", texts[0], texts[0]], "is given twice"),
        (["census", "--text", *texts, "--text-column", "body"],
         "--column applies to jsonl, parquet and hf input, not text"),
        (["census", "--shards", *shards, "--tokenizer", "chars"],
         "--tokenizer 'chars' does not apply to shards"),
        (["audit", "--lengths", str(tmp_path / "l.npy"), "--world-size", "4", "--row-group-size", "1024",
          "--no-plots", "--permutations", "0"],
         "--world-size 4 is more than the 3 row group(s) of --row-group-size 1024 of the largest input"),
    ]
    for argv, needle in cases:
        out = tmp_path / "out"
        assert main([*argv, "--out", str(out)]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
        assert not (out / "audit.json").exists() and not (out / "census.json").exists()
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--world-size", "3",
                 "--row-group-size", "1024", "--no-plots", "--no-progress", "--permutations", "0",
                 "--out", str(tmp_path / "ok")]) == 0


def _census(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(["census", "--workers", "1", *argv])
    return code, capsys.readouterr().err.strip().splitlines()


def test_a_report_inside_its_input_directory_is_refused(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix ``--data d --out d/rep --errors skip`` read its own previous report as documents: 5,
    then 12, then 19 documents on three reruns, exit 0."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("a b c\nd e\n")
    (tmp_path / "d" / "y.txt").write_text("hello\n")
    d = str(tmp_path / "d")
    for out in (f"{d}/rep", d):
        for _ in range(2):
            code, err = _census(capsys, "--data", d, "--format", "text", "--errors", "skip", "--out", out)
            assert code == 2 and len(err) == 1, err
            assert f"the report directory {out!r} is" in err[0] and f"input directory {d!r}" in err[0]
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["x.txt", "y.txt"]  # nothing was written
    code, _ = _census(capsys, "--data", d, "--format", "text", "--out", str(tmp_path / "rep"))
    assert code == 0


def test_force_never_overwrites_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix ``census --text d/census.json --out d --force`` overwrote the user's input file."""
    (tmp_path / "t.txt").write_text("z\n")
    out = tmp_path / "rep"
    assert _census(capsys, "--text", str(tmp_path / "t.txt"), "--out", str(out))[0] == 0
    before = (out / "census.json").read_bytes()
    for argv in (["--text", str(out / "census.json"), "--force"],
                 ["--data", f"{out}/*", "--format", "text", "--errors", "skip"],
                 ["--data", f"{out}/parts", "--format", "text", "--errors", "skip"]):
        code, err = _census(capsys, *argv, "--out", str(out))
        assert code == 2 and len(err) == 1 and "is the report's own" in err[0], err
    assert (out / "census.json").read_bytes() == before
    (tmp_path / "link.json").symlink_to(out / "census.json")  # through a symlink: the same file
    code, err = _census(capsys, "--text", str(tmp_path / "link.json"), "--out", str(out), "--force")
    assert code == 2 and "is the report's own census.json" in err[0]
