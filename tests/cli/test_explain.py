"""``packing-theory explain`` by file name in a directory tree: a unique path suffix, or a clear refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])

TREE = ["corpus/ctypes/util.py", "corpus/distutils/util.py", "corpus/abc.py", "corpus/__phello__/__init__.py",
        "corpus/xdom/__init__.py", "corpus/xml/dom/__init__.py"]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a fresh process, outside the repository."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def test_explain_never_explains_another_file_with_the_same_base_name(tmp_path: Path) -> None:
    for i, name in enumerate(TREE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x" * (20 + 7 * i), encoding="utf-8")
    common = ["--text", *TREE, "--capacity", "64", "--min-buffer", "2", "--refill", "2"]
    ok = run(["explain", "distutils/util.py", *common], tmp_path)
    assert ok.returncode == 0, ok.stderr
    # the answer is on standard output (a '> file' keeps it), not on standard error
    assert ok.stdout.strip().startswith("document 1 (corpus/distutils/util.py,")
    assert "explain:" not in ok.stderr
    ok = run(["explain", "dom/__init__.py", *common], tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "(corpus/xml/dom/__init__.py," in ok.stdout
    for missing in ("collections/abc.py", "html/dom/__init__.py"):
        p = run(["explain", missing, *common], tmp_path)
        assert p.returncode == 2, (missing, p.stderr)
        assert f"DOC {missing!r} is not the name of any of the 6 documents" in p.stderr
        assert "a raw index is --index N (0..5)" in p.stderr
    p = run(["explain", "__init__.py", *common], tmp_path)
    assert p.returncode == 2, p.stderr
    assert "'__init__.py' is ambiguous: 3 documents end with that path" in p.stderr
    assert "corpus/xdom/__init__.py (document 4)" in p.stderr and "explain: document" not in p.stderr


def test_an_empty_document_is_refused_not_document_0(tmp_path: Path) -> None:
    """Before the fix ``explain ""`` explained document 0 (the empty name of every unnamed document)."""
    import numpy as np

    from packing_theory.cli import main

    np.save(tmp_path / "l.npy", np.array([5, 9, 3, 12], dtype=np.int64))
    common = ["--lengths", str(tmp_path / "l.npy"), "--capacity", "16", "--min-buffer", "2"]
    for document in ("", "   ", "²"):
        assert main(["explain", document, *common]) == 2, repr(document)
    assert main(["explain", "0", *common]) == 0


def test_a_corpus_smaller_than_the_buffer_is_explained_as_such(tmp_path: Path) -> None:
    """No selection was ever made: the long document was not 'among the B - 1 largest at every selection'
    (explain said so; found by a review); the stop and the way out are said."""
    for i, name in enumerate(TREE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x" * (100 + 7 * i), encoding="utf-8")
    p = run(["explain", "0", "--text", *TREE, "--capacity", "64", "--min-buffer", "10"], tmp_path)
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip()
    assert "never started; nothing was selected: stopped at row 0 because the stream ran dry before the "\
           "buffer held B = 10 documents" in line and "protected set" not in line
