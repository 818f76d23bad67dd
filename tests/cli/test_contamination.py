"""``packing-theory contamination``: exit 1 on planted overlap, 0 clean, 3 not measured (which wins).

The corpus is a seed-002 manifest whose shards each hold one source, so the
report can attribute hits per source. References are token ids written as
text and tokenized by a small module (``ptok.encode``), the way a user passes
the tokenizer that wrote the shards. ``--data`` inputs (a saved Hugging Face
dataset, a Megatron indexed dataset, JSON Lines) are written by their own
libraries (``tests/contamination/corpora.py``) and checked against the naive
scan, per source.
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
from packing_theory.contamination import CorpusInput, ReferenceSpec, scan_contamination
from packing_theory.corpus import lengths_from_shards, write_shard, write_shards
from packing_theory.corpus.manifest import SHARD_MANIFEST_NAME
from packing_theory.corpus.masks import apply_mask, check_sidecar, read_mask, read_sidecar
from packing_theory.errors import InputError
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
    (tmp / "ptok.py").write_text("def encode(text):\n    return [int(x) if x.isdigit() else 1000 + len(x) "
                                 "for x in text.split()]\n")
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
    assert doc["headline"] == ("overlap found: 10 matched 13-grams in 5 of 75 training document(s) (6.67%), "
                               "0 majority-hit; 3,642 13-grams scanned against 108 reference grams; "
                               "everything listed was read")
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
    # every hit document by its raw corpus index, name (shard#row) and source, in the list and the mask
    sources = [s for s in SOURCES for _ in range(25)]
    hits = [json.loads(x) for x in (out / "hit_documents.jsonl").read_text().splitlines()]
    assert [h["index"] for h in hits] == corpus["planted"] and [h["source"] for h in hits] == [
        sources[j] for j in corpus["planted"]]
    assert all(h["name"] == f"{h['input']}#{h['position']}" and h["matched_grams"] == 2 for h in hits)
    assert [(e["index"], e["name"], e["source"]) for e in sidecar["excluded_documents"]] == [
        (h["index"], h["name"], h["source"]) for h in hits]
    assert doc["hit_documents"]["count"] == 5 and doc["hit_documents"]["documents"] == hits
    assert verify_report(out).ok


def test_clean_corpus_is_exit_0_with_an_empty_mask(corpus: dict[str, Any]) -> None:
    tmp, out = corpus["tmp"], corpus["tmp"] / "clean"
    proc = cli(tmp, "--manifest", str(corpus["manifest"]), "--reference", "clean.txt", "--reference-per-line",
               "--tokenizer", "ptok:encode", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.strip().splitlines()  # one summary line with the report path
    assert line.startswith("contamination: no overlap: 0 matched 13-grams in 0 document(s) (0 majority-hit) "
                           "of 75 documents") and "contamination.html" in line
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
    assert doc["headline"].startswith("not measured: ")
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


def test_empty_and_short_references_are_exit_3(corpus: dict[str, Any], tmp_path: Path) -> None:
    """A reference named but missing is bad input (exit 2, ``tests/cli/test_contamination_inputs.py``); one
    read that yields no gram or fewer rows than declared is not measured."""
    tmp = corpus["tmp"]
    base = ["--manifest", str(corpus["manifest"]), "--reference-per-line", "--tokenizer", "ptok:encode"]
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
    doc = _not_measured(proc, tmp_path / "a", "yielded 6 rows, 16,113 declared")  # "not measured" wins
    assert doc["verdict"]["reasons"] == [f"reference '{tmp_path / 'task.parquet'}' yielded 6 rows, 16,113 "
                                         "declared"]
    ref = doc["references"][0]
    assert (ref["rows"], ref["items"], ref["nulls"]) == (6, 12, 6)
    assert doc["verdict"]["overlap"] is True  # and still reported:
    assert doc["totals"]["documents_with_any_hit"] == 5
    assert "in what was read: 10 matched 13-grams in 5 document(s)" in proc.stderr
    hits = (tmp_path / "a" / "hit_documents.jsonl").read_text().splitlines()
    assert [json.loads(h)["index"] for h in hits] == corpus["planted"]
    proc = cli(corpus["tmp"], *base, "--reference-rows", "6", "--out", str(tmp_path / "b"))
    assert proc.returncode == 1 and _report(tmp_path / "b")["verdict"]["measured"] is True


@pytest.mark.parametrize("order", ["unmeasured first", "unmeasured last"])
def test_hits_with_a_reference_not_measured_are_exit_3_in_either_order(corpus: dict[str, Any], tmp_path: Path,
                                                                       order: str) -> None:
    empty = str(tmp_path / "empty.txt")
    (tmp_path / "empty.txt").write_text("")
    refs = ["refs.txt", empty]
    if order == "unmeasured first":
        refs.reverse()
    proc = cli(corpus["tmp"], "--manifest", str(corpus["manifest"]), "--reference", *refs,
               "--reference-per-line", "--tokenizer", "ptok:encode", "--out", str(tmp_path / "o"))
    doc = _not_measured(proc, tmp_path / "o", f"reference {empty!r} yielded no 13-gram")
    assert doc["totals"]["matched_grams"] == 10 and doc["verdict"]["overlap"] is True
    assert [r["grams"] > 0 for r in doc["references"]] == [r != empty for r in refs]
    assert doc["hit_documents"]["count"] == 5


def test_hits_with_an_input_not_read_are_exit_3(corpus: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    shutil.copytree(corpus["tmp"] / "mix", tmp_path / "mix")
    os.remove(tmp_path / "mix" / corpus["shards"][-1].relative_to(corpus["tmp"] / "mix"))
    proc = cli(corpus["tmp"], "--manifest", str(tmp_path / "mix" / SHARD_MANIFEST_NAME), "--reference",
               "refs.txt", "--reference-per-line", "--tokenizer", "ptok:encode", "--out", str(tmp_path / "o"))
    doc = _not_measured(proc, tmp_path / "o", "was not read (FileNotFoundError")
    assert doc["totals"]["documents_with_any_hit"] >= 1 and doc["verdict"]["overlap"] is True
    hits = [json.loads(x) for x in (tmp_path / "o" / "hit_documents.jsonl").read_text().splitlines()]
    assert hits and all(h["index"] in corpus["planted"] for h in hits)  # positions before the missing shard


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


def test_the_older_spellings_are_the_same_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--n`` is ``--gram-length``; ``--field`` and ``--text-column`` are ``--column`` (one release)."""
    ref = "alpha beta gamma delta epsilon zeta eta"
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"body": t}) + "\n" for t in (
        f"x {ref} y", "nothing here at all", ref)))
    (tmp_path / "ref.txt").write_text(ref + "\n")
    docs = []
    for flags in (["--gram-length", "4", "--column", "body"], ["--n", "4", "--field", "body"],
                  ["--n", "4", "--text-column", "body"]):
        out = tmp_path / "-".join(flags).replace("--", "")
        assert main(["contamination", "--data", str(tmp_path / "c.jsonl"), "--tokenizer", "whitespace",
                     "--reference", str(tmp_path / "ref.txt"), *flags, "--out", str(out)]) == 1
        doc = _report(out)
        docs.append(doc["totals"])
    capsys.readouterr()
    assert docs[0] == docs[1] == docs[2] and docs[0]["documents_with_any_hit"] == 2
    assert main(["contamination", "--data", str(tmp_path / "c.jsonl"), "--tokenizer", "whitespace",
                 "--reference", str(tmp_path / "ref.txt"), "--gram-length", "5", "--column", "body", "--out",
                 str(tmp_path / "five")]) == 1
    assert _report(tmp_path / "five")["totals"]["matched_grams"] == 3 + 3  # 7 words: 3 windows of 5
    assert docs[0]["matched_grams"] == 4 + 4


def test_usage_errors_are_exit_2(corpus: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                 ) -> None:
    assert "contamination" in COMMANDS
    m = str(corpus["manifest"])
    refs = str(corpus["tmp"] / "refs.txt")
    cases = [
        (["--manifest", m, "--reference", refs],
         "--manifest holds token ids: give --tokenizer module:callable"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "bytes", "--per-line"],
         "--per-line does not apply to shards data (--manifest); it takes no reader option"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "bytes", "--format", "jsonl"],
         "--format applies to --data; --manifest already names shards data"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "ptok:encode", "--reference-column", "q"],
         "--reference-column 'q' applies to .parquet references only"),
        (["--manifest", m, "--reference", refs, refs, "--tokenizer", "ptok:encode"],
         f"--reference lists {refs!r} twice"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "ptok:encode", "--reference-rows", "1,2"],
         "--reference-rows gives 2 row count(s) for 1 --reference file(s)"),
        (["--manifest", m, "--reference", refs, "--tokenizer", "ptok:encode", "--n", "0"],
         "argument --gram-length/--n: --gram-length must be >= 1, got 0"),
        (["--text", refs, "--reference", refs, "--text-column", "x"],
         "--column 'x' does not apply to text data (--text); it takes --bos, --per-line"),
        (["--text", refs, str(corpus["tmp"] / "task.parquet"), "--reference", refs],
         "--text mixes .parquet and plain text files; give one kind"),
        (["--manifest", m, "--reference", str(corpus["tmp"] / "wide.txt"), "--tokenizer", "chars"],
         "holds token id 1046 >= the shards' vocab 500: tokenize the references with the tokenizer"),
    ]
    (corpus["tmp"] / "wide.txt").write_text("Ж" * 40 + "\n")
    (corpus["tmp"] / "task.parquet").write_bytes(b"")  # refused before it is read
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


def test_a_training_input_named_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f.txt").write_text("a b c d e f\n")
    (tmp_path / "ref.txt").write_text("a b c d e f\n")
    os.symlink(tmp_path / "f.txt", tmp_path / "link.txt")
    base = ["contamination", "--reference", str(tmp_path / "ref.txt"), "--n", "3", "--out",
            str(tmp_path / "o")]
    for twice in (["f.txt", "f.txt"], ["f.txt", "./f.txt"], ["f.txt", "link.txt"]):
        old = os.getcwd()
        os.chdir(tmp_path)
        try:
            status = main([*base, "--text", *twice])
        finally:
            os.chdir(old)
        err = capsys.readouterr().err
        assert status == 2 and f"--text {twice[1]!r} is given twice (also as 'f.txt')" in err, err
    write_shard(tmp_path / "s.bin", [[0, 1, 2, 3]], vocab=9)
    shard = str(tmp_path / "s.bin")
    assert main([*base, "--shards", shard, shard, "--tokenizer", "chars"]) == 2
    assert f"--shards '{tmp_path / 's.bin'}' is given twice" in capsys.readouterr().err
    assert main([*base, "--data", str(tmp_path / "f.txt"), str(tmp_path / "link.txt")]) == 2
    assert "--data input" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(InputError, match=r"training input .* is given twice"):  # the library refuses it too
        scan_contamination([CorpusInput(str(tmp_path / "f.txt"), "text"),
                            CorpusInput(str(tmp_path / "link.txt"), "text")],
                           [ReferenceSpec(str(tmp_path / "ref.txt"))])


def test_an_os_error_from_an_option_path_names_the_option(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f.txt").write_text("a b c d e f\n")
    (tmp_path / "FILE").write_text("not a directory")
    base = ["contamination", "--text", str(tmp_path / "f.txt"), "--reference", str(tmp_path / "f.txt"),
            "--n", "3", "--out", str(tmp_path / "o")]
    assert main([*base, "--memory-grams", "1", "--index-dir", str(tmp_path / "FILE")]) == 2
    assert f"--index-dir '{tmp_path / 'FILE'}' is not a directory" in capsys.readouterr().err
    assert main([*base, "--index-dir", str(tmp_path / "FILE" / "sub")]) == 2
    err = capsys.readouterr().err
    assert f"--index-dir '{tmp_path / 'FILE' / 'sub'}': Not a directory" in err, err
    assert main([*base, "--labels", str(tmp_path / "nolabels.txt")]) == 2
    err = capsys.readouterr().err
    assert f"argument --labels: no such file or directory '{tmp_path / 'nolabels.txt'}'" in err, err
    assert main(["contamination", "--files-from", str(tmp_path / "list.txt"), "--reference",
                 str(tmp_path / "f.txt")]) == 2
    assert f"--files-from '{tmp_path / 'list.txt'}': No such file or directory" in capsys.readouterr().err
    assert main(["contamination", "--manifest", str(tmp_path / "m.json"), "--tokenizer", "chars",
                 "--reference", str(tmp_path / "f.txt")]) == 2
    err = capsys.readouterr().err
    assert f"argument --manifest: no such file or directory '{tmp_path / 'm.json'}'" in err, err
    assert main([*base[:-1], str(tmp_path / "FILE" / "sub")]) == 2  # --out under a file
    assert f"--out '{tmp_path / 'FILE' / 'sub'}': Not a directory" in capsys.readouterr().err
    assert main([*base[:-1], str(tmp_path / "FILE")]) == 2
    assert f"--out: report directory '{tmp_path / 'FILE'}' exists and is not a directory" in \
        capsys.readouterr().err


def test_labels_workers_and_no_progress(corpus: dict[str, Any], tmp_path: Path) -> None:
    tmp = corpus["tmp"]
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"group-{j % 2}" for j in range(75)) + "\n")
    base = ["--manifest", str(corpus["manifest"]), "--reference", "refs.txt", "--reference-per-line",
            "--tokenizer", "ptok:encode", "--no-progress"]
    proc = cli(tmp, *base, "--labels", str(labels), "--workers", "2", "--out", str(tmp_path / "a"))
    assert proc.returncode == 1, proc.stderr
    doc = _report(tmp_path / "a")
    planted = corpus["planted"]
    assert {k: v["documents_with_any_hit"] for k, v in doc["sources"].items()} == {
        "group-0": sum(j % 2 == 0 for j in planted), "group-1": sum(j % 2 == 1 for j in planted)}
    assert doc["sources_from"] == f"labels file {str(labels)!r}" and doc["unattributed"]["documents"] == 0
    serial = cli(tmp, *base, "--labels", str(labels), "--out", str(tmp_path / "b"))
    assert serial.returncode == 1
    one, two = _report(tmp_path / "a"), _report(tmp_path / "b")
    for d in (one, two):
        d.pop("run"), d.pop("seconds"), d.pop("timings")
    assert one == two  # two worker processes or none: the same report
    labels.write_text("web\n")
    proc = cli(tmp, *base, "--labels", str(labels), "--out", str(tmp_path / "c"))
    assert proc.returncode == 2 and "1 labels for 75 documents" in proc.stderr
    proc = cli(tmp, *base, "--labels", str(labels), "--source-from", "file", "--out", str(tmp_path / "d"))
    assert proc.returncode == 2
    assert "give one origin of source labels, got --labels, --source-from" in proc.stderr


# --------------------------------------------------------------------------- --data, per source


def _per_source(doc: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {k: (v["documents"], v["documents_with_any_hit"], v["matched_grams"])
            for k, v in doc["sources"].items()}


def test_data_formats_attribute_hits_per_source(tmp_path: Path) -> None:
    from tests.contamination import corpora

    p = corpora.planted(9, documents=60, hit_every=4)
    refs = str(p.write_references(tmp_path / "refs.txt"))
    tok = "tests.contamination.corpora:ids_tokenizer"
    base = ["contamination", "--reference", refs, "--reference-per-line", "--tokenizer", tok, "--no-progress"]
    expected = p.per_source()  # the naive scan's counts, per planted source
    assert all(hit for _, hit, _ in expected.values())  # every source holds planted documents
    names = [f"doc-{j}" for j in p.planted]
    # JSON Lines with --source-column
    jsonl = corpora.write_jsonl(p, tmp_path / "c.jsonl")
    assert main([*base, "--data", str(jsonl), "--source-column", "source", "--out", str(tmp_path / "j")]) == 1
    doc = _report(tmp_path / "j")
    assert _per_source(doc) == expected and doc["unattributed"]["documents"] == 0
    assert [h["name"] for h in doc["hit_documents"]["documents"]] == names
    assert doc["corpus"]["label"].startswith("jsonl (auto-detected")
    # a saved Hugging Face dataset (datasets' save_to_disk) with --source-column
    hf = corpora.write_hf(p, tmp_path / "hf", tokenized=True)
    assert main([*base, "--data", str(hf), "--bos", "add", "--source-column", "source", "--out",
                 str(tmp_path / "h")]) == 1
    doc = _report(tmp_path / "h")
    assert _per_source(doc) == expected
    assert [(h["index"], h["name"], h["source"]) for h in doc["hit_documents"]["documents"]] == [
        (j, f"doc-{j}", p.sources[j]) for j in p.planted]
    sidecar = read_sidecar(tmp_path / "h" / "exclude.json")
    assert [e["name"] for e in sidecar["excluded_documents"]] == names
    # Megatron indexed datasets, one per source directory, with --source-from dir
    for source in corpora.SOURCES:
        (tmp_path / "meg" / source).mkdir(parents=True)
        docs = [d for d, s in zip(p.docs, p.sources, strict=True) if s == source]
        part = corpora.Planted(docs, [], [], p.refs, [])
        corpora.write_megatron(part, tmp_path / "meg" / source / "text_document")
    assert main([*base, "--data", str(tmp_path / "meg"), "--bos", "included", "--source-from", "dir", "--out",
                 str(tmp_path / "m")]) == 1
    doc = _report(tmp_path / "m")
    assert _per_source(doc) == expected  # the same documents, grouped by directory
    assert doc["corpus"]["label"].startswith("megatron (auto-detected")
    assert all(h["name"].endswith(f"text_document#{h['position']}")  # named as the audit names it
               for h in doc["hit_documents"]["documents"])


def test_data_with_a_reference_not_measured_is_exit_3(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from tests.contamination import corpora

    p = corpora.planted(10)
    jsonl = corpora.write_jsonl(p, tmp_path / "c.jsonl.zst") if _has("zstandard") else corpora.write_jsonl(
        p, tmp_path / "c.jsonl")
    argv = ["contamination", "--data", str(jsonl), "--source-column", "source", "--tokenizer",
            "tests.contamination.corpora:ids_tokenizer", "--reference",
            str(p.write_references(tmp_path / "r.txt")),
            "--reference-per-line", "--reference-rows", "6", "--out", str(tmp_path / "o")]
    assert main(argv) == 3  # 5 rows read, 6 declared: not measured, though the hits are real
    doc = _report(tmp_path / "o")
    assert doc["verdict"]["status"] == 3 and doc["verdict"]["overlap"] is True
    assert _per_source(doc) == p.per_source() and not (tmp_path / "o" / "exclude.u8").exists()
    assert "could not measure: 1 thing(s) not measured" in capsys.readouterr().err


def test_data_options_that_do_not_apply_are_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from tests.contamination import corpora

    p = corpora.planted(11, documents=10)
    jsonl = corpora.write_jsonl(p, tmp_path / "c.jsonl")
    np.save(tmp_path / "lengths.npy", np.array([3, 4], dtype=np.int64))
    refs = str(p.write_references(tmp_path / "r.txt"))
    cases = [
        (["--data", str(tmp_path / "lengths.npy")], "is a lengths array"),
        (["--data", str(jsonl), "--eos-id", "0"], "--eos-id 0 does not apply to jsonl data (--data)"),
        (["--data", refs, "--column", "x"],
         "--column 'x' does not apply to text data (--data); it takes --bos, --per-line"),
        (["--text", refs, "--source-column", "s"],
         "--source-column reads a jsonl, parquet, hf column; --text is text"),
        (["--data", str(corpora.write_olmo(p, tmp_path / "a.npy")), "--bos", "included", "--eos-id", "0",
          "--dtype", "uint16", "--source-column", "s", "--tokenizer", "chars"],
         "--source-column reads a jsonl, parquet, hf column; --data is olmo"),
        (["--shards", str(tmp_path / "r.txt"), "--tokenizer", "chars", "--bos", "add"],
         "--bos 'add' does not apply to shards data (--shards); it takes no reader option"),
        (["--data", str(tmp_path / "a.npy"), "--format", "olmo", "--eos-id", "0"],
         "--data olmo holds token ids: say how BOS is counted"),
        (["--data", str(tmp_path / "a.npy"), "--format", "olmo", "--bos", "add", "--eos-id", "0"],
         "--data olmo may hold token ids: give --tokenizer"),
    ]
    for argv, message in cases:
        status = main(["contamination", *argv, "--reference", refs, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert status == 2 and message in err, (argv, err)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
