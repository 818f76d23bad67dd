"""``packing-theory contamination`` checks what the user named before it reads or writes anything.

* The report stays apart from every input it reads (the one rule of
  :func:`packing_theory.reporting.writer.inputs_problem`, as in ``audit`` and
  ``compare``): an ``--out`` inside (or equal to) an input directory, and an
  input (``--text``, ``--reference``, ``--labels``, a shard a ``--manifest``
  lists, ...) that is one of the report's own files, are exit 2 with one line,
  ``--force`` or not, and nothing is written into the corpus.
* A ``--reference`` (or ``--data``) path that does not exist or cannot be
  opened is bad input: exit 2 with one line naming the option and the path,
  and the previous report in ``--out`` is left byte for byte as it was (it
  used to be replaced by a 0-document "not measured" report, exit 3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from packing_theory.cli import main
from packing_theory.corpus import write_shards
from packing_theory.corpus.manifest import SHARD_MANIFEST_NAME
from packing_theory.reporting import verify_report

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "near", "the", "river",
         "bank", "today")


def _tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (hidden ones included) with its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _corpus(tmp: Path) -> tuple[Path, Path]:
    """``corpus/books/b*.txt`` (each holding the reference) and ``eval.txt``."""
    books = tmp / "corpus" / "books"
    books.mkdir(parents=True)
    for i in range(3):
        (books / f"b{i}.txt").write_text(" ".join(WORDS[: 6 + i]) + f" and book {i}\n")
    (tmp / "eval.txt").write_text(" ".join(WORDS[:8]) + "\n")
    return tmp / "corpus", tmp / "eval.txt"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    status = main(["contamination", "--tokenizer", "whitespace", "--n", "3", "--no-progress", *argv])
    return status, capsys.readouterr().err.strip().splitlines()


def _good_report(capsys: pytest.CaptureFixture[str], corpus: Path, ref: Path, out: Path) -> dict[str, bytes]:
    status, err = _run(capsys, "--data", str(corpus), "--reference", str(ref), "--out", str(out))
    assert status == 1, err
    assert verify_report(out).ok
    return _tree(out)


def test_a_report_inside_an_input_directory_is_refused(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix ``--data corpus --out corpus/books`` exited 1 and wrote the report, ``exclude.u8`` and
    ``hit_documents.jsonl`` into the corpus, which every later command then read (or failed on)."""
    corpus, ref = _corpus(tmp_path)
    before = _tree(corpus)
    (tmp_path / "list.txt").write_text(f"{corpus}\n")
    d, books = str(corpus), str(corpus / "books")
    cases = [
        (["--data", d, "--out", d], f"the report directory {d!r} is the input directory {d!r}"),
        (["--data", d, "--out", books],
         f"the report directory {books!r} is inside the input directory {d!r}"),
        (["--data", books, "--out", books, "--force"],
         f"the report directory {books!r} is the input directory"),
        (["--files-from", str(tmp_path / "list.txt"), "--out", books],
         f"the report directory {books!r} is inside the input directory {d!r}"),
        (["--data", d, "--format", "text", "--out", f"{books}/rep"], "is inside the input directory"),
    ]
    for argv, message in cases:
        status, err = _run(capsys, *argv, "--reference", str(ref))
        assert status == 2 and len(err) == 1, (argv, err)
        assert message in err[0] and "choose an --out outside the inputs" in err[0], (argv, err)
        assert _tree(corpus) == before, argv  # nothing was written inside the input
    assert not (corpus / "books" / "rep").exists()
    status, err = _run(capsys, "--data", d, "--reference", str(ref), "--out", str(tmp_path / "rep"))
    assert status == 1 and _tree(corpus) == before  # an --out beside the corpus is fine


def test_the_default_out_inside_the_corpus_is_refused_in_a_real_process(tmp_path: Path) -> None:
    """The command as a user types it, from inside the corpus (``--out`` is ./contamination-report)."""
    corpus, ref = _corpus(tmp_path)
    before = _tree(corpus)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "packing_theory.cli", "contamination", "--data", ".",
                           "--reference", str(ref), "--tokenizer", "whitespace", "--n", "3"],
                          capture_output=True, text=True, env=env, cwd=corpus, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the report directory 'contamination-report' is inside the input directory '.'" in proc.stderr
    assert _tree(corpus) == before


def test_an_input_that_is_one_of_the_reports_own_files_is_refused(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix ``--reference rep/contamination.md --out rep --force`` (or ``--text``, ``--labels``)
    read the previous report as input and overwrote it."""
    corpus, ref = _corpus(tmp_path)
    out = tmp_path / "rep"
    old = _good_report(capsys, corpus, ref, out)
    own = {name: str(out / name)
           for name in ("contamination.md", "hit_documents.jsonl", "contamination.json")}
    text = str(corpus / "books" / "b0.txt")
    cases = [
        (["--text", text, "--reference", own["contamination.md"]], own["contamination.md"],
         "contamination.md"),
        (["--text", own["hit_documents.jsonl"], "--reference", str(ref)], own["hit_documents.jsonl"],
         "hit_documents.jsonl"),
        (["--text", text, "--reference", str(ref), "--labels", own["contamination.json"]],
         own["contamination.json"], "contamination.json"),
    ]
    for argv, path, name in cases:
        for force in ([], ["--force"]):
            status, err = _run(capsys, *argv, "--out", str(out), *force)
            assert status == 2 and len(err) == 1, (argv, err)
            assert f"the input {path!r} is the report's own {name} in {str(out)!r}" in err[0], (argv, err)
            assert _tree(out) == old, argv


def test_a_shard_the_manifest_lists_is_an_input_too(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A shard read through ``--manifest`` is never overwritten by the report (one named like its mask)."""
    (tmp_path / "ptok.py").write_text("def encode(text):\n    return [int(x) for x in text.split()]\n")
    mix = tmp_path / "mix"
    docs = [[0, *range(1, 20)], [0, *range(30, 50)]]
    manifest = write_shards(mix, docs, vocab=64, shard_tokens=1000, bos_id=0)
    (shard,) = manifest["shards"]
    os.rename(mix / shard["path"], mix / "exclude.u8")
    manifest["shards"] = [{**shard, "path": "exclude.u8"}]
    (mix / SHARD_MANIFEST_NAME).write_text(json.dumps(manifest))
    (tmp_path / "ref.txt").write_text(" ".join(map(str, range(1, 20))) + "\n")
    before = _tree(mix)
    sys.path.insert(0, str(tmp_path))
    try:
        argv = ["contamination", "--manifest", str(mix / SHARD_MANIFEST_NAME), "--reference",
                str(tmp_path / "ref.txt"), "--tokenizer", "ptok:encode", "--n", "3", "--no-progress"]
        assert main([*argv, "--out", str(tmp_path / "rep")]) == 1  # the shards are read
        capsys.readouterr()
        assert main([*argv, "--out", str(mix), "--force"]) == 2
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"the input {str(mix / 'exclude.u8')!r} is the report's own exclude.u8" in err[0]
    assert _tree(mix) == before


def test_a_missing_reference_is_bad_input_and_the_old_report_stays(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix a misspelt ``--reference`` was exit 3 ("could not measure: ... was not read") and
    replaced the previous good report in ``--out`` with a 0-document one."""
    corpus, ref = _corpus(tmp_path)
    out = tmp_path / "rep"
    old = _good_report(capsys, corpus, ref, out)
    os.symlink(tmp_path / "gone.txt", tmp_path / "dangling.txt")
    nosuch, dangling, parquet = (str(tmp_path / n) for n in ("nosuch.txt", "dangling.txt", "nosuch.parquet"))
    cases = [
        ([nosuch], f"--reference {nosuch!r} does not exist"),
        ([str(ref), nosuch], f"--reference {nosuch!r} does not exist"),
        ([dangling], f"--reference {dangling!r} does not exist"),
        ([parquet], f"--reference {parquet!r} does not exist"),
    ]
    for refs, message in cases:
        status, err = _run(capsys, "--data", str(corpus), "--reference", *refs, "--out", str(out))
        assert status == 2 and len(err) == 1 and message in err[0], (refs, err)
        assert _tree(out) == old, refs
    index = tmp_path / "index"  # checked before the scan's index directory is made
    status, err = _run(capsys, "--data", str(corpus), "--reference", str(tmp_path / "nosuch.txt"),
                       "--index-dir", str(index), "--out", str(tmp_path / "new"))
    assert status == 2 and not index.exists() and not (tmp_path / "new").exists()
    status, err = _run(capsys, "--data", str(tmp_path / "nocorpus"), "--reference", str(ref),
                       "--out", str(out))
    assert status == 2 and err == [f"packing-theory contamination: error: --data "
                                   f"{str(tmp_path / 'nocorpus')!r} does not exist"]
    assert _tree(out) == old


def test_the_exact_command_of_the_report_in_a_real_process(tmp_path: Path) -> None:
    """``--data corpus/ --reference nosuch.txt`` with the default ``--out``: exit 2, one line, the previous
    ``contamination-report/`` unchanged."""
    _corpus(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "packing_theory.cli", "contamination", "--data",
                               "corpus/", "--tokenizer", "whitespace", "--n", "3", "--no-progress", *argv],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    assert cli("--reference", "eval.txt").returncode == 1
    old = _tree(tmp_path / "contamination-report")
    proc = cli("--reference", "nosuch.txt")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "packing-theory contamination: error: --reference 'nosuch.txt' does not exist\n"
    assert _tree(tmp_path / "contamination-report") == old


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads a file without permissions")
def test_an_unreadable_reference_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, ref = _corpus(tmp_path)
    out = tmp_path / "rep"
    old = _good_report(capsys, corpus, ref, out)
    locked = tmp_path / "locked.txt"
    locked.write_text("the quick brown fox\n")
    locked.chmod(0)
    status, err = _run(capsys, "--data", str(corpus), "--reference", str(locked), "--out", str(out))
    assert status == 2 and err == [f"packing-theory contamination: error: --reference {str(locked)!r}: "
                                   "Permission denied"], err
    assert _tree(out) == old
