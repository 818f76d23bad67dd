"""``verify-shards`` (a real process) reports a manifest's own problems as findings, exit 1.

Before the fix a shard whose header vocabulary differed from the others exited 2
(bad usage, "shards have different vocabularies") with no finding; a wrong
manifest total ``n_docs``, a manifest listing one shard three times (also through
a hard link), and a shard path outside the manifest's directory were all called
clean (exit 0).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from packing_theory.corpus import write_shard
from packing_theory.corpus.manifest import file_sha256, write_shards
from packing_theory.corpus.verify import verify_shards

ROOT = Path(__file__).resolve().parents[2]


def corpus(d: Path) -> Path:
    write_shards(d, [[0, 5], [0, 6, 7], [0, 8], [0, 3, 4, 5]], vocab=9, shard_tokens=4, sources="abab",
                 bos_id=0)
    return d / "manifest.json"


def verify(manifest: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", "verify-shards", str(manifest)],
                          capture_output=True, text=True, env=env, cwd=manifest.parent, timeout=120)


def other_vocabulary(d: Path, m: dict[str, Any]) -> None:
    write_shard(d / "shard-00001.bin", [[0, 8], [0, 3, 4, 5]], vocab=20)
    m["shards"][1]["sha256"] = file_sha256(d / "shard-00001.bin")


def wrong_total(d: Path, m: dict[str, Any]) -> None:
    m["n_docs"] = 7


def listed_thrice(d: Path, m: dict[str, Any]) -> None:
    m["shards"] = [m["shards"][0]] * 3
    m["n_docs"], m["n_tokens"] = 6, 15


def hard_link_listed_twice(d: Path, m: dict[str, Any]) -> None:
    os.link(d / "shard-00000.bin", d / "again.bin")
    m["shards"] = [m["shards"][0], {**m["shards"][0], "path": "again.bin"}]
    m["n_docs"], m["n_tokens"] = 4, 10


def outside_the_directory(d: Path, m: dict[str, Any]) -> None:
    shutil.copy(d / "shard-00001.bin", d.parent / "outside.bin")
    m["shards"][1]["path"] = "../outside.bin"


def absolute_path(d: Path, m: dict[str, Any]) -> None:
    m["shards"][1]["path"] = str(d / "shard-00001.bin")


CASES = {
    "other_vocabulary": (other_vocabulary, "header: vocab=20, the manifest says 9"),
    "wrong_total": (wrong_total, "the shards list 4 documents, the manifest's n_docs says 7"),
    "listed_thrice": (listed_thrice, "shards[2] names the file shards[0] names"),
    "hard_link_listed_twice": (hard_link_listed_twice, "shards[1] names the file shards[0] names"),
    "outside_the_directory": (outside_the_directory, "outside the manifest's directory"),
    "absolute_path": (absolute_path, "an absolute path"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_manifest_problem_is_a_finding(case: str, tmp_path: Path) -> None:
    manifest = corpus(tmp_path / "c")
    assert verify(manifest).returncode == 0
    edit, message = CASES[case]
    doc = json.loads(manifest.read_text())
    edit(manifest.parent, doc)
    manifest.write_text(json.dumps(doc))
    proc = verify(manifest)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    found = [line for line in proc.stdout.splitlines() if "FOUND" in line]
    assert any(message in line for line in found), found
    assert verify_shards(manifest).status == 1
