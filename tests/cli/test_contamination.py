"""``packing-theory contamination`` in real processes: exit 1 on planted overlap, 0 clean, 3 not measured.

The corpus is a seed-002 manifest whose shards each hold one source, so the
report can attribute hits per source. References are token ids written as
text and tokenized by a small module (``ptok.encode``), the way a user passes
the tokenizer that wrote the shards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import COMMANDS, main
from packing_theory.corpus import lengths_from_shards, write_shards
from packing_theory.corpus.manifest import SHARD_MANIFEST_NAME
from packing_theory.corpus.masks import apply_mask, check_sidecar, read_mask, read_sidecar
from packing_theory.reporting import verify_report

ROOT = Path(__file__).resolve().parents[2]
VOCAB = 500
SOURCES = ("web", "math", "code")
PLANTED = {"web": [3, 17], "math": [0, 9, 10]}  # document index within each source


def cli(tmp: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT), str(tmp), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", "contamination", *argv],
                          capture_output=True, text=True, env=env, cwd=tmp, timeout=300)


def _ids_text(ids: list[int]) -> str:
    return " ".join(map(str, ids))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: Any) -> dict[str, Any]:
    """A manifest of single-source shards with reference windows planted in known documents."""
    tmp = tmp_path_factory.mktemp("contamination")
    (tmp / "ptok.py").write_text("def encode(text):\n    return [int(x) for x in text.split()]\n")
    rng = np.random.default_rng(11)
    items = [rng.integers(1, VOCAB, size=30).tolist() for _ in range(6)]
    shards: list[dict[str, Any]] = []
    order: list[tuple[str, int]] = []  # (source, index) in the manifest's document order
    lengths: list[int] = []
    k = 0
    for source in SOURCES:
        docs = [[0, *rng.integers(1, VOCAB, size=int(rng.integers(5, 120))).tolist()] for _ in range(25)]
        for i in PLANTED.get(source, []):
            item = items[k % len(items)]
            k += 1
            docs[i] = docs[i][:3] + item[:14] + docs[i][3:]  # one 14-token span: two 13-gram windows
        m = write_shards(tmp / "mix" / source, docs, vocab=VOCAB, shard_tokens=600, sources=[source] * 25,
                         bos_id=0, prefix=f"{source}-")
        for entry in m["shards"]:
            shards.append({**entry, "path": f"{source}/{entry['path']}"})
        order += [(source, i) for i in range(25)]
        lengths += [len(d) for d in docs]
    manifest = {**m, "n_docs": sum(s["n_docs"] for s in shards),
                "n_tokens": sum(s["n_tokens"] for s in shards), "shards": shards}
    (tmp / "mix" / SHARD_MANIFEST_NAME).write_text(json.dumps(manifest))
    (tmp / "refs.txt").write_text("\n".join(_ids_text(it) for it in items) + "\n")
    clean_items = [rng.integers(1, VOCAB, size=30).tolist() for _ in range(4)]
    (tmp / "clean.txt").write_text("\n".join(_ids_text(it) for it in clean_items) + "\n")
    planted = [j for j, (s, i) in enumerate(order) if i in PLANTED.get(s, [])]
    return {"tmp": tmp, "manifest": tmp / "mix" / SHARD_MANIFEST_NAME, "planted": planted, "lengths": lengths,
            "shards": [tmp / "mix" / s["path"] for s in shards], "items": items}


def _report(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "contamination.json").read_text())
    return doc


def test_planted_overlap_is_found_in_exactly_the_planted_documents(corpus: dict[str, Any]) -> None:
    tmp, out = corpus["tmp"], corpus["tmp"] / "planted"
    proc = cli(tmp, "--manifest", str(corpus["manifest"]), "--reference", "refs.txt", "--reference-per-line",
               "--reference-rows", "6", "--tokenizer", "ptok:encode", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()  # one line, like every report command
    assert line.startswith("packing-theory contamination: found: 10 matched 13-grams in 5 document(s) "
                           "(0 majority-hit) of 75 documents")
    doc = _report(out)
    assert doc["verdict"] == {"status": 1, "verdict": "overlap found", "overlap": True, "measured": True,
                              "reasons": []}
    assert doc["headline"].startswith("overlap found: 10 matched 13-grams in 5 document(s) (0 majority-hit) "
                                      "of 75 training document(s)")
    assert (out / "contamination.md").read_text().splitlines()[0] == doc["headline"]
    t = doc["totals"]
    assert (t["documents"], t["matched_grams"], t["documents_with_any_hit"]) == (75, 10, 5)
    assert t["inputs_read"] == t["inputs"] == len(corpus["shards"])
    assert {k: (v["documents"], v["documents_with_any_hit"]) for k, v in doc["sources"].items()} == {
        "code": (25, 0), "math": (25, 3), "web": (25, 2)}
    assert doc["sources"]["math"]["hit_document_fraction"] == 3 / 25 and doc["unattributed"]["documents"] == 0
    assert doc["false_positives"]["formula"] == "W * G / 2**64"
    assert doc["false_positives"]["expected"] == t["grams"] * t["reference_grams"] / 2**64
    assert t["reference_grams"] == 6 * (30 - 13 + 1)
    # counts only: no reference window appears in the report files
    text = (out / "contamination.md").read_text() + (out / "contamination.json").read_text()
    assert _ids_text(corpus["items"][0][:13]) not in text
    # the mask marks exactly the planted documents and removes exactly them from the document list
    mask = read_mask(out / "exclude.u8", documents=75)
    assert np.flatnonzero(mask).tolist() == corpus["planted"]
    lengths = lengths_from_shards(corpus["shards"])
    assert lengths.tolist() == corpus["lengths"]
    kept = apply_mask(lengths, mask)
    assert kept.tolist() == [n for j, n in enumerate(corpus["lengths"]) if j not in corpus["planted"]]
    sidecar = read_sidecar(out / "exclude.json")
    check_sidecar(sidecar, lengths, mask)
    assert sidecar["n_docs"] == 75 and sidecar["excluded"] == 5 and sidecar["mask"] == "exclude.u8"
    assert [i["documents"] for i in sidecar["inputs"]] == [s["n_docs"] for s in json.loads(
        corpus["manifest"].read_text())["shards"]]
    assert sidecar["stage"]["operator"] == "C_E (seed 004)" and sidecar["run"]["id"] == doc["run"]["id"]
    assert verify_report(out).ok


def test_clean_corpus_is_exit_0_with_an_empty_mask(corpus: dict[str, Any]) -> None:
    tmp, out = corpus["tmp"], corpus["tmp"] / "clean"
    proc = cli(tmp, "--manifest", str(corpus["manifest"]), "--reference", "clean.txt", "--reference-per-line",
               "--tokenizer", "ptok:encode", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.strip().splitlines()  # one summary line with the report path
    assert line.startswith("contamination: no overlap: 75 documents") and "contamination.html" in line
    doc = json.loads(proc.stdout)
    assert doc["verdict"]["verdict"] == "no overlap" and doc["verdict"]["measured"] is True
    assert doc["totals"]["matched_grams"] == 0 and doc["totals"]["documents"] == 75
    assert read_mask(out / "exclude.u8").tolist() == [0] * 75


def _not_measured(proc: subprocess.CompletedProcess[str], out: Path, reason: str) -> dict[str, Any]:
    assert proc.returncode == 3, proc.stderr
    assert "packing-theory contamination: could not measure: " in proc.stderr
    doc = _report(out)
    assert doc["verdict"]["status"] == 3 and doc["verdict"]["measured"] is False
    assert any(reason in r for r in doc["verdict"]["reasons"]), doc["verdict"]["reasons"]
    assert doc["mask"]["written"] is False and not (out / "exclude.u8").exists()
    return doc


def test_missing_shard_is_exit_3(corpus: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    shutil.copytree(corpus["tmp"] / "mix", tmp_path / "mix")
    victim = corpus["shards"][2].relative_to(corpus["tmp"] / "mix")
    os.remove(tmp_path / "mix" / victim)
    out = tmp_path / "out"
    proc = cli(corpus["tmp"], "--manifest", str(tmp_path / "mix" / SHARD_MANIFEST_NAME),
               "--reference", "clean.txt",
               "--reference-per-line", "--tokenizer", "ptok:encode", "--out", str(out))
    doc = _not_measured(proc, out, f"input '{victim}' was not read (FileNotFoundError")
    read = [i["read"] for i in doc["inputs"]]
    assert read.count(False) == 1 and read.index(False) == 2
    assert doc["totals"]["inputs_read"] == len(corpus["shards"]) - 1
    assert doc["inputs"][2]["documents"] == 0 and doc["inputs"][3]["first_document"] is None


def test_missing_and_empty_references_are_exit_3(corpus: dict[str, Any], tmp_path: Path) -> None:
    tmp = corpus["tmp"]
    base = ["--manifest", str(corpus["manifest"]), "--reference-per-line", "--tokenizer", "ptok:encode"]
    proc = cli(tmp, *base, "--reference", "clean.txt", str(tmp_path / "gone.txt"),
               "--out", str(tmp_path / "a"))
    doc = _not_measured(proc, tmp_path / "a", f"reference '{tmp_path / 'gone.txt'}' was not read")
    assert [r["read"] for r in doc["references"]] == [True, False]
    (tmp_path / "empty.txt").write_text("")
    proc = cli(tmp, *base, "--reference", str(tmp_path / "empty.txt"), "--out", str(tmp_path / "b"))
    doc = _not_measured(proc, tmp_path / "b", "yielded no 13-gram (0 items, 0 tokens)")
    assert doc["totals"]["inputs_read"] == 0  # nothing to compare with: nothing was scanned
    proc = cli(tmp, *base, "--reference", "clean.txt", "--reference-rows", "5", "--out", str(tmp_path / "c"))
    _not_measured(proc, tmp_path / "c", "reference 'clean.txt' yielded 4 rows, 5 declared")


def test_parquet_reference_short_of_its_declared_rows_is_exit_3(corpus: dict[str, Any],
                                                                tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    items = corpus["items"]
    table = pa.table({"question": [_ids_text(it[:15]) for it in items],
                      "choices": [[_ids_text(it[15:]), None] for it in items]})
    pq.write_table(table, tmp_path / "task.parquet")
    base = ["--manifest", str(corpus["manifest"]), "--tokenizer", "ptok:encode", "--reference",
            str(tmp_path / "task.parquet"), "--reference-column", "question,choices"]
    proc = cli(corpus["tmp"], *base, "--reference-rows", "16113", "--out", str(tmp_path / "a"))
    assert proc.returncode == 1  # planted windows found; the short reference is reported as well
    doc = _report(tmp_path / "a")
    assert doc["verdict"]["reasons"] == [f"reference '{tmp_path / 'task.parquet'}' yielded 6 rows, 16,113 "
                                         "declared"]
    ref = doc["references"][0]
    assert (ref["rows"], ref["items"], ref["nulls"]) == (6, 12, 6) and doc["mask"]["written"] is False
    proc = cli(corpus["tmp"], *base, "--reference-rows", "6", "--out", str(tmp_path / "b"))
    assert proc.returncode == 1 and _report(tmp_path / "b")["verdict"]["measured"] is True


def test_zero_documents_is_exit_3(corpus: dict[str, Any], tmp_path: Path) -> None:
    from packing_theory.corpus import write_shard

    write_shard(tmp_path / "empty.bin", [], vocab=VOCAB)
    proc = cli(corpus["tmp"], "--shards", str(tmp_path / "empty.bin"), "--reference", "clean.txt",
               "--reference-per-line", "--tokenizer", "ptok:encode", "--out", str(tmp_path / "out"))
    _not_measured(proc, tmp_path / "out", "no document was scanned")


def test_text_inputs_and_the_majority_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = "the quick brown fox jumps over the lazy dog near the river bank today"
    lines = ["nothing to see here at all, just some ordinary words in a line",
             " ".join(f"w{i}" for i in range(20)) + f" {ref} suffix", ref, "short"]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "ref.txt").write_text(ref + "\n")
    argv = ["contamination", "--text", str(tmp_path / "train.txt"), "--per-line", "--tokenizer", "whitespace",
            "--reference", str(tmp_path / "ref.txt"), "--n", "5"]
    assert main([*argv, "--out", str(tmp_path / "any")]) == 1
    assert np.flatnonzero(read_mask(tmp_path / "any" / "exclude.u8")).tolist() == [1, 2]
    doc = _report(tmp_path / "any")
    # the reference has 14 words, 10 windows; line 1: 10 of its 31 windows matched (a hit), line 2: all
    # 10 (majority), line 3: too short for a window
    assert doc["inputs"][0]["short_documents"] == 1 and doc["totals"]["majority_hit_documents"] == 1
    assert doc["totals"]["matched_grams"] == 20 and doc["totals"]["grams"] == 9 + 31 + 10
    assert main([*argv, "--exclude", "majority", "--out", str(tmp_path / "maj")]) == 1
    assert np.flatnonzero(read_mask(tmp_path / "maj" / "exclude.u8")).tolist() == [2]
    # the same scan with a disk index of at most 2 grams in memory: same counts, several passes
    assert main([*argv, "--memory-grams", "2", "--index-dir", str(tmp_path / "idx"), "--out",
                 str(tmp_path / "disk")]) == 1
    disk = _report(tmp_path / "disk")
    assert disk["index"]["mode"] == "disk" and disk["index"]["passes"] > 1
    assert disk["totals"] == doc["totals"] and os.listdir(tmp_path / "idx") == []
    assert (tmp_path / "disk" / "exclude.u8").read_bytes() == (tmp_path / "any" / "exclude.u8").read_bytes()
    capsys.readouterr()


def test_usage_errors_are_exit_2(corpus: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                 ) -> None:
    assert "contamination" in COMMANDS
    m = str(corpus["manifest"])
    refs = str(corpus["tmp"] / "refs.txt")
    cases = [
        (["--manifest", m, "--reference", refs],
         "--manifest holds token ids: give --tokenizer module:callable"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "bytes", "--per-line"],
         "--per-line applies to --text only, not --manifest"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "ptok:encode", "--reference-column", "q"],
         "--reference-column 'q' applies to .parquet references only"),
        (["--manifest", m, "--reference", refs, refs, "--tokenizer", "ptok:encode"],
         f"--reference lists {refs!r} twice"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "ptok:encode", "--reference-rows", "1,2"],
         "--reference-rows gives 2 row count(s) for 1 --reference file(s)"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "ptok:encode", "--n", "0"],
         "--n must be >= 1"),
        (["--text", refs, "--reference", refs, "--text-column", "x"],
         "--text-column 'x' applies to .parquet --text files only"),
        (["--manifest", m, "--reference", str(corpus["tmp"] / "wide.txt"), "--tokenizer", "chars"],
         "holds token id 1046 >= the shards' vocab 500: tokenize the references with the tokenizer"),
    ]
    (corpus["tmp"] / "wide.txt").write_text("Ж" * 40 + "\n")
    sys.path.insert(0, str(corpus["tmp"]))
    try:
        for argv, message in cases:
            status = main(["contamination", *argv, "--out", str(tmp_path / "o")])
            err = capsys.readouterr().err
            assert status == 2 and message in err, (argv, err)
    finally:
        sys.path.remove(str(corpus["tmp"]))
    proc = cli(corpus["tmp"], "--manifest", m, "--reference", refs)  # and in a real process
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--tokenizer" in proc.stderr
