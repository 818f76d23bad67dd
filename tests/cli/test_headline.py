"""The plain-words headline, the horizon, never trained and documents.csv, through real command processes."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = str(Path(__file__).resolve().parents[2])


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a fresh process, outside the repository (``-m`` imports from the cwd first)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def _documents(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _md_headline(path: Path) -> str:
    """The first line of a report's Markdown: its headline (Markdown's escapes undone)."""
    return path.read_text(encoding="utf-8").splitlines()[0].replace("\\|", "|").replace("\\_", "_")


def test_a_finite_corpus_that_runs_dry(tmp_path: Path) -> None:
    """B = 16 on 400 documents: the replay stops when the stream runs dry; the headline says so and why."""
    rng = np.random.default_rng(3)
    lengths = np.maximum(1, rng.lognormal(4.0, 1.3, 400)).astype(np.int64)
    np.save(tmp_path / "L.npy", lengths)
    p = run(["audit", "--lengths", "L.npy", "--capacity", "128", "--min-buffer", "16", "--refill", "8",
             "--policy", "discard,trl-bfd", "--permutations", "0", "--no-plots", "--out", "rep"], tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "rep" / "audit.json").read_text())
    d, t = doc["packers"]
    nt = d["never_trained"]
    assert d["horizon"]["reason"] == "stream exhausted" and t["horizon"]["reason"] == "natural end"
    assert d["horizon"]["stopped_at_row"] == d["rows"] and doc["horizon"]["value"] == 243_968
    head = doc["headline"]
    assert head.startswith(f"discard stopped at row {d['rows']:,} because the stream ran dry")
    assert f"{nt['never_started']['documents']} documents never started" in head
    assert f"the theorem predicts ≥ {d['protected']['members']} never start at B = 16" in head
    assert _md_headline(tmp_path / "rep" / "audit.md") == head
    (line,) = p.stderr.strip().splitlines()  # the one summary line
    assert line.startswith(f"audit: {head} (400 documents")
    rows = [r for r in _documents(tmp_path / "rep" / "documents.csv") if r["packer"] == "discard"]
    assert len(rows) == 400
    for col, total in (("emitted", nt["trained_tokens"]), ("buffered", nt["buffered_tokens"]),
                       ("discarded", nt["discarded_tokens"]), ("filtered", nt["filtered_tokens"]),
                       ("never_reached", nt["never_reached"]["tokens"]), ("length", nt["offered_tokens"])):
        assert sum(int(r[col]) for r in rows) == total, col
    mass = d["mass"]
    assert sum(int(r["emitted"]) for r in rows) == mass["emitted_tokens"] - mass["emitted_added_bos"]
    assert sum(r["fate"] == "never started" for r in rows) == nt["never_started"]["documents"]
    assert sum(r["protected"] == "true" for r in rows) == d["protected"]["members"]
    assert all(r["run"] == doc["run"]["id"] for r in rows)


def test_a_corpus_smaller_than_the_buffer_is_told_how_to_replay_it(tmp_path: Path) -> None:
    """Fewer documents than B: nothing is selected before the stream runs dry; the headline says why and
    the way out (it said only "trained 0.0% ... the stream ran dry"), and the way out works."""
    np.save(tmp_path / "L.npy", np.arange(1, 41, dtype=np.int64) * 7)
    p = run(["audit", "--lengths", "L.npy", "--capacity", "64", "--min-buffer", "50", "--permutations", "0",
             "--no-plots", "--out", "rep"], tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "rep" / "audit.json").read_text())
    assert doc["packers"][0]["rows"] == 0
    assert doc["headline"].startswith("discard stopped at row 0 because the stream ran dry before the buffer "
                                      "held B = 50 documents (a corpus this small needs --drain")
    p = run(["audit", "--lengths", "L.npy", "--capacity", "64", "--min-buffer", "50", "--permutations", "0",
             "--no-plots", "--drain", "--out", "drained"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "drained" / "audit.json").read_text())["packers"][0]["rows"] > 0


def test_a_long_synthetic_corpus_reaches_its_budget(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    lengths = np.maximum(1, rng.lognormal(4.0, 1.0, 20_000)).astype(np.int64)
    np.save(tmp_path / "L.npy", lengths)
    p = run(["audit", "--lengths", "L.npy", "--capacity", "128", "--min-buffer", "16", "--refill", "8",
             "--policy", "continue,trl-bfd", "--tokens", "64000", "--permutations", "0", "--no-plots",
             "--out", "rep"], tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "rep" / "audit.json").read_text())
    c, t = doc["packers"]
    h = doc["horizon"]
    assert (h["unit"], h["value"], h["rule"]) == ("tokens", 64_000, "asked")
    assert c["horizon"]["reason"] == t["horizon"]["reason"] == "budget reached"
    assert c["rows"] == 500  # ceil(64,000 / 128) full rows
    nt = c["never_trained"]
    assert nt["never_reached"]["documents"] > 15_000
    assert doc["headline"].startswith("continue reached the horizon of 64,000 tokens at row 500")
    for p_ in (c, t):
        m = p_["never_trained"]["mass"]
        assert m["emitted"] + m["dropped"] + m["buffered"] + m["never_reached"] == int(lengths.sum())


def test_compare_at_a_common_token_horizon(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    np.save(tmp_path / "L.npy", np.maximum(1, rng.lognormal(3.5, 1.2, 800)).astype(np.int64))
    total = int(np.load(tmp_path / "L.npy").sum())
    names = ["discard", "continue", "trl-bfd", "megatron-gpt", "foundry-concat-wrap"]
    p = run(["compare", "--lengths", "L.npy", "--capacity", "64", "--min-buffer", "16", "--refill", "8",
             "--policy", ",".join(names), "--tokens", "20000", "--no-plots", "--out", "cmp"], tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert doc["horizon"]["unit"] == "tokens" and doc["horizon"]["value"] == 20_000
    for col in doc["packers"]:
        m = col["never_trained"]["mass"]
        assert m["emitted"] + m["dropped"] + m["buffered"] + m["never_reached"] == total, col["packer"]
        assert col["horizon"]["reason"] in ("budget reached", "stream exhausted", "natural end")
        assert col["row_width"] == 64  # --capacity: every packer's row width
    # the untrained total is equal by construction at a common token horizon: never the ranking key
    assert doc["ranking"]["by"] != "never_trained_tokens" and sorted(doc["ranking"]["order"]) == sorted(names)
    assert doc["headline"].startswith("at the horizon of 20,000 tokens")
    assert p.stderr.strip().splitlines()[-1].startswith("compare: at the horizon of 20,000 tokens")
    assert _md_headline(tmp_path / "cmp" / "compare.md") == doc["headline"]
    q = run(["compare", "--lengths", "L.npy", "--capacity", "64", "--policy", "discard", "--rows", "-1",
             "--no-plots", "--out", "cmp2"], tmp_path)
    assert q.returncode == 2 and "--rows must be >= 0, got -1" in q.stderr


def test_the_evaluation_section_claims_only_what_was_scored(tmp_path: Path) -> None:
    """An evaluation stream that runs dry before its budget: the population is what was scored."""
    rng = np.random.default_rng(6)
    np.save(tmp_path / "train.npy", np.maximum(1, rng.lognormal(3.0, 1.0, 300)).astype(np.int64))
    np.save(tmp_path / "eval.npy", np.maximum(1, rng.lognormal(3.0, 1.0, 50)).astype(np.int64))
    p = run(["audit", "--lengths", "train.npy", "--eval-lengths", "eval.npy", "--eval-targets", "1000000",
             "--eval-prefixes", "500000", "--capacity", "32", "--min-buffer", "4", "--refill", "4", "--rows",
             "50", "--permutations", "0", "--no-plots", "--out", "rep"], tmp_path)
    assert p.returncode == 0, p.stderr
    (pop,) = json.loads((tmp_path / "rep" / "audit.json").read_text())["evaluation"]["populations"]
    scored = sum(pop["target_counts"])
    assert 0 < scored < 1_000_000 == pop["targets"]
    assert f"{scored:,}" in (tmp_path / "rep" / "audit.md").read_text()


@pytest.mark.slow  # six real processes; tests/audit/test_explanations.py checks the same agreement in-process
def test_explain_agrees_with_documents_csv_on_a_sample(tmp_path: Path) -> None:
    """Text files named by path: audit writes documents.csv; explain (by id and by name) agrees with it."""
    rng = np.random.default_rng(8)
    files = []
    for i in range(60):
        f = tmp_path / f"doc{i:02d}.txt"
        f.write_text("x" * int(rng.integers(5, 400)), encoding="utf-8")
        files.append(f.name)
    common = ["--capacity", "64", "--min-buffer", "8", "--refill", "4"]
    p = run(["audit", "--text", *files, *common, "--permutations", "0", "--no-plots", "--out", "rep"],
            tmp_path)
    assert p.returncode == 0, p.stderr
    rows = _documents(tmp_path / "rep" / "documents.csv")
    never = [r for r in rows if r["fate"] == "never started"]
    assert len(never) >= 7 and all(r["name"].startswith("doc") for r in rows)
    for r in [*never[:4], rows[0]]:
        q = run(["explain", r["name"], "--text", *files, *common, "--json"], tmp_path)
        assert q.returncode == 0, q.stderr
        e = json.loads(q.stdout)
        for key in ("fate", "emitted", "discarded", "buffered", "never_reached", "first_row", "length"):
            assert str(e[key]) == r[key], key
        assert str(e["protected"]).lower() == r["protected"] and e["document"] == int(r["document"])
        assert q.stderr.strip().splitlines()[-1] == f"explain: {e['sentence']}"


def test_compare_names_who_set_a_short_common_horizon(tmp_path: Path) -> None:
    """A packer that filters most long documents sets a few-row common horizon: the report says which."""
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(300, 3000, 400), rng.integers(5, 60, 40)])
    rng.shuffle(lengths)
    np.save(tmp_path / "l.npy", lengths)
    argv = ["compare", "--lengths", "l.npy", "--policy", "discard,continue,axolotl-multipack", "--capacity",
            "257", "--min-buffer", "16", "--refill", "8", "--no-plots", "--json"]
    p = run([*argv, "--out", "rep"], tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    head = doc["headline"]
    assert doc["horizon"]["set_by"] == ["axolotl-multipack"] and doc["horizon"]["rule"] == "common"
    assert "set by axolotl-multipack" in head
    assert _md_headline(tmp_path / "rep" / "compare.md") == head
    assert p.stderr.strip().splitlines()[-1].startswith(f"compare: {head} (440 documents")
    natural = run([*argv, "--out", "nat", "--natural-end"], tmp_path)
    assert natural.returncode == 0, natural.stderr
    nat = json.loads(natural.stdout)
    assert nat["horizon"]["rule"] == "natural" and "set by" not in nat["headline"]
