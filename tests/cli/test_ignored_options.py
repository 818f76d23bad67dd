"""An option the chosen run would ignore, or a bad number, is refused (exit 2) naming it; real processes.

Before the fix each of these exited 0: ``evaluate --demo --level 0.99`` reported
0.95 (also ``--level nan``, ``--kinds``, ``--batch-size 0`` under ``--demo``);
``--family-strata nope`` emptied the declared family; ``replay --window /
--epochs / --peer-option`` with a streaming policy and ``--seed`` with discard;
``check --originals`` without segment-first and ``--rows`` with a peer;
``audit --tokenizer / --per-line / --text-column`` with ``--lengths`` and ``audit --seed``
with no packer that takes a seed;
``compare --policy discard,discard``; ``verify-shards --no-sources --min-sources 2``.
``evaluate --sample-seed -1`` said "seed must be an int >= 0" without naming the option.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from packing_theory.corpus.manifest import write_shards

ROOT = Path(__file__).resolve().parents[2]
STREAM = ["--lengths", "l.npy", "--capacity", "32", "--min-buffer", "8"]

CASES: dict[str, tuple[list[str], str]] = {
    "evaluate_level_nan": (["evaluate", "--demo", "--level", "nan"], "--level"),
    "evaluate_level_one": (["evaluate", "--demo", "--level", "1"], "--level"),
    "evaluate_kinds": (["evaluate", "--demo", "--kinds", "tail"], "--kinds"),
    "evaluate_batch_size": (["evaluate", "--demo", "--batch-size", "0"], "--batch-size"),
    "evaluate_ranking_seed": (["evaluate", "--demo", "--ranking-seed", "3"], "--ranking-seed"),
    "evaluate_sample_seed": (["evaluate", "--demo", "--sample-seed", "-1"], "--sample-seed"),
    "evaluate_bootstrap_seed": (["evaluate", "--demo", "--bootstrap-seed", "-1"], "--bootstrap-seed"),
    "evaluate_family_strata": (["evaluate", "--demo", "--family-strata", "nope"], "'nope'"),
    "replay_window": (["replay", *STREAM, "--policy", "discard", "--window", "5"], "--window"),
    "replay_epochs": (["replay", *STREAM, "--policy", "continue", "--epochs", "2"], "--epochs"),
    "replay_peer_option": (["replay", *STREAM, "--policy", "discard", "--peer-option", "x=1"],
                           "--peer-option"),
    "replay_seed": (["replay", *STREAM, "--policy", "discard", "--seed", "3"], "--seed"),
    "check_originals": (["check", *STREAM, "--policy", "discard", "--originals"], "--originals"),
    "check_rows_peer": (["check", *STREAM, "--policy", "trl-bfd", "--rows", "3"], "--rows"),
    "audit_tokenizer": (["audit", *STREAM, "--tokenizer", "chars", "--no-plots"], "--tokenizer"),
    "audit_per_line": (["audit", *STREAM, "--per-line", "--no-plots"], "--per-line"),
    "audit_text_column": (["audit", *STREAM, "--text-column", "body", "--no-plots"], "--column 'body'"),
    "audit_column": (["audit", *STREAM, "--column", "body", "--no-plots"], "--column 'body'"),
    "audit_max_wait": (["audit", *STREAM, "--max-wait", "3", "--no-plots"], "--max-wait"),
    "compare_demo_documents": (["compare", *STREAM, "--demo-documents", "9", "--no-plots"],
                               "--demo-documents"),
    "replay_two_packers": (["replay", *STREAM, "--policy", "discard,continue"], "--policy"),
    "explain_window": (["explain", "3", *STREAM, "--window", "5"], "--window"),
    "audit_seed": (["audit", *STREAM, "--policy", "discard,trl-bfd", "--seed", "3", "--no-plots"], "--seed"),
    "compare_repeated_policy": (["compare", *STREAM, "--policy", "discard,discard", "--no-plots"],
                                "--policy"),
    "verify_min_sources": (["verify-shards", "shards/manifest.json", "--no-sources", "--min-sources", "2"],
                           "--min-sources"),
}
REPORTS = {"evaluate", "audit", "compare"}


def run(cwd: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    np.save(d / "l.npy", np.random.default_rng(0).integers(1, 80, 400))
    write_shards(d / "shards", [[0, 5], [0, 6, 7], [0, 8]], vocab=9, shard_tokens=4, sources="aba", bos_id=0)
    return d


# refused only after the whole demo evaluation (about 9 s): in the slow step
AFTER_THE_DEMO = {"evaluate_family_strata"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow if c in AFTER_THE_DEMO else ())
                                  for c in sorted(CASES)])
def test_an_ignored_option_is_refused_naming_it(case: str, inputs: Path, tmp_path: Path) -> None:
    argv, option = CASES[case]
    out = tmp_path / "out"
    if argv[0] in REPORTS:
        argv = [*argv, "--out", str(out)]
    proc = run(inputs, argv)
    assert proc.returncode == 2, proc.stdout[-500:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert option in line, line
    assert not out.exists() or not any(out.iterdir())  # nothing written


@pytest.mark.slow  # the whole demo evaluation with 200 replicates (about 9 s)
def test_the_demo_applies_its_level(inputs: Path, tmp_path: Path) -> None:
    proc = run(inputs, ["evaluate", "--demo", "--level", "0.99", "--replicates", "200", "--no-plots",
                        "--out", str(tmp_path / "e")])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "family level 0.99" in proc.stderr.strip().splitlines()[-1]
