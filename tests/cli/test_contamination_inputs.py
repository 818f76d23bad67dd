"""``packing-theory contamination`` checks what the user named before it reads or writes anything.

* A ``--reference`` (or ``--data``) path that does not exist or cannot be
  opened is bad input: exit 2 with one line naming the option and the path,
  and the previous report in ``--out`` is left byte for byte as it was (it
  used to be replaced by a 0-document "not measured" report, exit 3).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from packing_theory.cli import main
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
