"""verify-shards catches every planted corruption: one line each, exit 1 found, 3 not measured."""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import COMMANDS, main
from packing_theory.corpus import read_manifest, read_shard, verify_shards, write_shards
from packing_theory.corpus.manifest import file_sha256
from packing_theory.errors import InputError

VOCAB = 300
SOURCES = ("web", "code", "math", "books")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: Any) -> Path:
    d = tmp_path_factory.mktemp("shards")
    rng = np.random.default_rng(7)
    docs, labels = [], []
    for i in range(160):
        n = int(rng.integers(1, 60))
        docs.append([0, *rng.integers(1, VOCAB, size=n - 1).tolist()])
        labels.append(SOURCES[i % 4])
    write_shards(
        d, docs, vocab=VOCAB, shard_tokens=1500, sources=labels, bos_id=0, tokenizer={"name": "synthetic"}
    )
    return Path(d)


def planted(clean: Path, tmp_path: Path, change: Callable[[Path, dict[str, Any]], None]) -> Path:
    d = tmp_path / "copy"
    shutil.copytree(clean, d)
    manifest = json.loads((d / "manifest.json").read_text())
    change(d, manifest)
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d / "manifest.json"


def run_cli(path: Path, capsys: Any, *extra: str) -> tuple[int, list[str]]:
    status = main(["verify-shards", str(path), *extra])
    out = capsys.readouterr()
    return status, [line for line in (out.out + out.err).splitlines() if line]


def test_clean_shards_pass(clean: Path, capsys: Any) -> None:
    assert "verify-shards" in COMMANDS
    manifest = read_manifest(clean / "manifest.json")
    assert len(manifest["shards"]) >= 3 and manifest["n_docs"] == 160 and manifest["bos_id"] == 0
    status, lines = run_cli(clean / "manifest.json", capsys)
    assert (
        status == 0 and len(lines) == 1 and "clean (exit 0)" in lines[0] and "40/40 cursor probes" in lines[0]
    )
    rep = verify_shards(clean / "manifest.json", probes=100, seed=3)
    assert rep.status == 0 and rep.probes_passed == 100 and rep.tokens_recounted == manifest["n_tokens"]
    assert rep.distinct_sources_min == 4 and rep.sha_ok == len(manifest["shards"])
    status, lines = run_cli(clean / "manifest.json", capsys, "--json")
    assert status == 0 and json.loads("\n".join(lines))["status"] == 0


def _file(d: Path, m: dict[str, Any], k: int = 1) -> Path:
    return d / m["shards"][k]["path"]


def _truncate(d: Path, m: dict[str, Any]) -> None:
    p = _file(d, m)
    p.write_bytes(p.read_bytes()[:-3])


def _trailing(d: Path, m: dict[str, Any]) -> None:
    with open(_file(d, m), "ab") as fh:
        fh.write(b"\x00\x00\x00\x00")


def _swap_offsets(d: Path, m: dict[str, Any]) -> None:
    p = _file(d, m)
    data = bytearray(p.read_bytes())
    a, b = 16 + 4 * 2, 16 + 4 * 3  # offsets[2] and offsets[3]
    data[a : a + 4], data[b : b + 4] = data[b : b + 4], data[a : a + 4]
    p.write_bytes(bytes(data))


def _bad_id(d: Path, m: dict[str, Any]) -> None:
    p = _file(d, m)
    shard = read_shard(p)
    data = bytearray(p.read_bytes())
    pos = 16 + 4 * (shard.n_docs + 1) + 2 * 5
    data[pos : pos + 2] = struct.pack("<H", VOCAB + 7)
    del shard
    p.write_bytes(bytes(data))
    m["shards"][1]["sha256"] = file_sha256(p)  # the build hashed the bad file: only the id check can see it


def _wrong_sha(d: Path, m: dict[str, Any]) -> None:
    m["shards"][2]["sha256"] = "0" * 64


def _missing(d: Path, m: dict[str, Any]) -> None:
    os.remove(_file(d, m, 0))


CORRUPTIONS = {
    "truncation": (_truncate, "size", "truncated"),
    "trailing bytes": (_trailing, "size", "4 trailing bytes"),
    "swapped offsets": (_swap_offsets, "offsets", "must be non-decreasing"),
    "out-of-range id": (_bad_id, "ids", f"1 id(s) >= vocab={VOCAB}"),
    "wrong sha": (_wrong_sha, "sha256", "the manifest says 0000000000000000"),
    "missing shard": (_missing, "missing", "not on disk"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_planted_corruption_is_found(name: str, clean: Path, tmp_path: Path, capsys: Any) -> None:
    change, check, text = CORRUPTIONS[name]
    path = planted(clean, tmp_path, change)
    status, lines = run_cli(path, capsys)
    assert status == 1, lines
    found = [line for line in lines if "FOUND" in line]
    assert len(found) == 1, lines  # one line for one problem
    assert f": {check}: " in found[0] and text in found[0]
    assert lines[-1].endswith("1 problem(s) found (exit 1)")


def test_not_measured_is_exit_3(clean: Path, tmp_path: Path, capsys: Any) -> None:
    def drop_sha(d: Path, m: dict[str, Any]) -> None:
        del m["shards"][0]["sha256"]

    status, lines = run_cli(planted(clean, tmp_path / "a", drop_sha), capsys)
    assert status == 3 and any("NOT MEASURED" in x and ": sha256: " in x for x in lines)

    def unreadable(d: Path, m: dict[str, Any]) -> None:
        p = _file(d, m, 2)
        os.remove(p)
        p.mkdir()  # exists, cannot be read as a file

    status, lines = run_cli(planted(clean, tmp_path / "b", unreadable), capsys)
    assert status == 3 and any("NOT MEASURED" in x and ": read: " in x for x in lines)

    def no_sources(d: Path, m: dict[str, Any]) -> None:
        for s in m["shards"]:
            del s["source_counts"]

    path = planted(clean, tmp_path / "c", no_sources)
    status, lines = run_cli(path, capsys)
    assert status == 3 and any("no source_counts" in x for x in lines)
    assert run_cli(path, capsys, "--no-sources")[0] == 0

    # a finding wins over "not measured"
    def both(d: Path, m: dict[str, Any]) -> None:
        drop_sha(d, m)
        _missing(d, m)

    assert run_cli(planted(clean, tmp_path / "d", both), capsys)[0] == 1


def test_other_findings(clean: Path, tmp_path: Path, capsys: Any) -> None:
    def recount(d: Path, m: dict[str, Any]) -> None:
        m["n_tokens"] += 1

    status, lines = run_cli(planted(clean, tmp_path / "a", recount), capsys)
    assert status == 1 and any(": recount: " in x for x in lines)

    def one_source(d: Path, m: dict[str, Any]) -> None:
        s = m["shards"][0]
        s["source_counts"] = {"web": s["n_docs"]}

    status, lines = run_cli(planted(clean, tmp_path / "b", one_source), capsys)
    assert status == 1 and any("1 distinct source(s), at least 2 required" in x for x in lines)
    assert run_cli(planted(clean, tmp_path / "c", one_source), capsys, "--min-sources", "1")[0] == 0

    def wrong_bos(d: Path, m: dict[str, Any]) -> None:
        m["bos_id"] = 5

    status, lines = run_cli(planted(clean, tmp_path / "e", wrong_bos), capsys, "--probes", "5")
    assert status == 1 and sum(": probe: " in x for x in lines) == 5 and "not bos_id=5" in lines[0]


def test_bad_usage_is_exit_2(tmp_path: Path, capsys: Any) -> None:
    status, lines = run_cli(tmp_path / "nope.json", capsys)
    assert status == 2 and len(lines) == 1 and "error" in lines[0]
    (tmp_path / "bad.json").write_text("{")
    assert run_cli(tmp_path / "bad.json", capsys)[0] == 2
    (tmp_path / "other.json").write_text(json.dumps({"format": "x"}))
    status, lines = run_cli(tmp_path / "other.json", capsys)
    assert status == 2 and "not a packing-theory/shard-manifest" in lines[0]
    assert run_cli(tmp_path / "other.json", capsys, "--probes", "-1")[0] == 2
    with pytest.raises(ValueError, match="docs is empty"):
        write_shards(tmp_path / "empty", [], vocab=4)
    with pytest.raises(ValueError, match="sources ran out at document 1"):
        write_shards(tmp_path / "few", [[0, 1], [0, 2]], vocab=4, sources=["a"])


# --------------------------------------------------------------------------- the shard-level mixture gate

MIX_SOURCES = (*(f"s{i:02d}" for i in range(14)), "web")  # 15 sources, as seed 002's mix


def _mix(d: Path, web_first_third: bool) -> Path:
    """Nine shards of 30 documents over 15 sources; with ``web_first_third`` the first three are web only."""
    rng = np.random.default_rng(5)
    shards: list[dict[str, Any]] = []
    for k in range(9):  # one write_shards per shard, so that each holds exactly its 30 documents
        labels = ["web" if web_first_third and k < 3 else MIX_SOURCES[(k + j) % 15] for j in range(30)]
        docs = [[0, *rng.integers(1, VOCAB, size=int(rng.integers(2, 20))).tolist()] for _ in range(30)]
        part = write_shards(d / f"g{k}", docs, vocab=VOCAB, shard_tokens=10**9, sources=labels, bos_id=0,
                            prefix=f"g{k}-")
        shards += [{**e, "path": f"g{k}/{e['path']}"} for e in part["shards"]]
    manifest = {**part, "n_docs": sum(s["n_docs"] for s in shards),
                "n_tokens": sum(s["n_tokens"] for s in shards), "shards": shards}
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d / "manifest.json"


def _process(*argv: str) -> Any:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", "verify-shards", *argv],
                          capture_output=True, text=True, env=env, timeout=300)


def test_web_only_first_third_is_flagged_by_the_mixture_gate(tmp_path: Path) -> None:
    planted = _mix(tmp_path / "bad", web_first_third=True)
    proc = _process(str(planted))
    assert proc.returncode == 1, proc.stderr
    found = [x for x in proc.stdout.splitlines() if "FOUND" in x]
    assert [x.split(":")[1].strip().split()[-1] for x in found] == [f"g{k}/g{k}-00000.bin" for k in range(3)]
    assert all("1 distinct source(s), at least 7 required (of 15 in the mix)" in x for x in found)
    assert "distinct sources per shard min 1 median 15 max 15 (at least 7 required)" in proc.stdout
    rep = verify_shards(planted)
    assert rep.mixture is not None and rep.mixture.default_min_sources == 7
    assert rep.mixture.shards[0].document_shares == {"web": 1.0}
    assert rep.mixture.share_range("web") == (pytest.approx(2 / 30), 1.0)
    well = _mix(tmp_path / "good", web_first_third=False)
    proc = _process(str(well), "--shares")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shares = [x for x in proc.stdout.splitlines() if "shares " in x]
    assert len(shares) == 9 and all("15/15 sources, share of tokens: " in x for x in shares)
    assert "distinct sources per shard min 15 median 15 max 15 (at least 7 required)" in proc.stdout
    doc = verify_shards(well).to_dict()
    assert doc["distinct_sources_median"] == 15 and doc["mixture"]["distinct"] == {"min": 15, "median": 15.0,
                                                                                  "max": 15}
    shard0 = doc["mixture"]["shards"][0]
    assert sum(shard0["document_shares"].values()) == pytest.approx(1.0) and shard0["distinct"] == 15
    assert sum(shard0["token_shares"].values()) == pytest.approx(1.0)
    # a stricter gate than the web-only shards pass, a looser one that they pass
    assert _process(str(planted), "--min-sources", "1").returncode == 0


def test_mixture_options_are_refused_when_they_do_not_apply(clean: Path, capsys: Any) -> None:
    path = clean / "manifest.json"
    for extra, message in [
        (("--min-sources", "3", "--no-sources"),
         "--min-sources 3 applies to the distinct-sources check, which"),
        (("--min-sources", "0"), "--min-sources must be >= 1, got 0"),
        (("--min-sources", "5"), "--min-sources 5 exceeds the 4 distinct sources of the mix (books, code, "),
        (("--shares", "--no-sources"), "--shares prints the per-shard sources, which --no-sources turns off"),
        (("--shares", "--json"), "--shares applies to the text output"),
        (("--probes", "-1"), "--probes must be >= 0, got -1"),
    ]:
        status, lines = run_cli(path, capsys, *extra)
        assert status == 2 and len(lines) == 1 and message in lines[0], (extra, lines)
    with pytest.raises(ValueError, match="min_sources=2 applies to the distinct-sources check"):
        verify_shards(path, min_sources=2, check_sources=False)


def test_source_tokens_that_do_not_add_up_are_found(clean: Path, tmp_path: Path, capsys: Any) -> None:
    manifest = read_manifest(clean / "manifest.json")
    assert all(sum(s["source_tokens"].values()) == s["n_tokens"] for s in manifest["shards"])

    def off_by_one(d: Path, m: dict[str, Any]) -> None:
        s = m["shards"][1]
        s["source_tokens"]["web"] += 1

    status, lines = run_cli(planted(clean, tmp_path, off_by_one), capsys)
    assert status == 1 and any(": sources: source_tokens add up to" in x and "tokens, the shard holds" in x
                               for x in lines)


def test_a_negative_seed_is_bad_usage(clean: Path, capsys: Any) -> None:
    """Before the fix ``--seed -1`` reached numpy's generator: an internal error (exit 3)."""
    status, lines = run_cli(clean / "manifest.json", capsys, "--seed", "-1")
    assert status == 2 and len(lines) == 1 and "seed must be >= 0, got -1" in lines[0]
    with pytest.raises(InputError, match="seed must be >= 0, got -1"):  # the library refuses it too
        verify_shards(clean / "manifest.json", seed=-1)
