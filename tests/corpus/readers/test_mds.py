"""An MDS dataset is read only inside its directory; a damaged index or shard is bad input, checked first.

Before the fix ``index.json``'s ``raw_data.basename`` was joined to the
dataset directory unchecked (``../`` and absolute paths followed), an
``index.json`` that is not JSON was an internal error (exit 3), and a
``samples`` count beyond the shard or a truncated shard reached
``streaming``'s decoder (``IndexError``: exit 3). ``index.json`` and the
shard headers are now checked before ``streaming`` is imported, so these
tests run without it (the committed fixtures of ``tests/data/readers/mds``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from packing_theory.cli import main
from packing_theory.corpus.readers.mds import MDSDataset
from packing_theory.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data" / "readers" / "mds"


def _copy(tmp_path: Path, name: str = "plain") -> Path:
    return Path(shutil.copytree(DATA / name, tmp_path / name))


def _edit(root: Path, change: Any) -> None:
    index = json.loads((root / "index.json").read_text())
    change(index)
    (root / "index.json").write_text(json.dumps(index))


def _open(root: Path) -> MDSDataset:
    return MDSDataset(root, bos="add", column="tokens")


@pytest.mark.parametrize("escape", ["relative", "absolute", "symlink"])
def test_a_shard_basename_outside_the_dataset_is_refused(tmp_path: Path, escape: str) -> None:
    root = _copy(tmp_path)
    (tmp_path / "elsewhere.mds").write_bytes((root / "shard.00000.mds").read_bytes())
    name = {"relative": "../elsewhere.mds", "absolute": str(tmp_path / "elsewhere.mds"),
            "symlink": "link.mds"}[escape]
    if escape == "symlink":
        (root / "link.mds").symlink_to(tmp_path / "elsewhere.mds")
    _edit(root, lambda index: index["shards"][0]["raw_data"].__setitem__("basename", name))
    with pytest.raises(InputError, match=r"shards\[0\] raw_data\.basename .* leaves the directory"):
        _open(root)


def test_a_compressed_shard_basename_outside_the_dataset_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path, "zstd")
    _edit(root, lambda index: index["shards"][0]["zip_data"].__setitem__("basename", "../x.mds.zstd"))
    with pytest.raises(InputError, match=r"shards\[0\] zip_data\.basename '\.\./x\.mds\.zstd' leaves"):
        _open(root)


@pytest.mark.parametrize("text, message", [
    ("{not json", "is not valid JSON"),
    ("[1]", "must be an object with a 'shards' list"),
    ("[" * 100_000, "nested too deeply"),
    ('{"shards": [7]}', r"shards\[0\] must be an object, got int"),
    ('{"shards": [{"column_names": ["a"], "column_encodings": []}]}', "of one length"),
])
def test_an_index_that_is_not_an_mds_index_is_bad_input(tmp_path: Path, text: str, message: str) -> None:
    root = _copy(tmp_path)
    (root / "index.json").write_text(text)
    with pytest.raises(InputError, match=message):
        _open(root)
    code = main(["audit", "--data", str(root), "--format", "mds", "--bos", "add", "--capacity", "64",
                 "--min-buffer", "2", "--out", str(tmp_path / "out"), "--no-plots"])
    assert code == 2


def test_a_sample_count_beyond_the_shard_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _edit(root, lambda index: index["shards"][1].__setitem__("samples", index["shards"][1]["samples"] + 40))
    with pytest.raises(InputError, match=r"shard\.00001\.mds': the shard's header holds \d+ samples, "
                                         r"index.json says \d+"):
        _open(root)


@pytest.mark.parametrize("keep", [0, 3, 100, 4038])
def test_a_truncated_shard_is_refused(tmp_path: Path, keep: int) -> None:
    root = _copy(tmp_path)
    shard = root / "shard.00000.mds"
    shard.write_bytes(shard.read_bytes()[:keep])
    with pytest.raises(InputError, match=r"shard\.00000\.mds'.*(too short|truncated)"):
        _open(root)


def test_the_fixtures_pass_the_checks(tmp_path: Path) -> None:
    """The real shards pass: without streaming the reader gets as far as importing it."""
    for name in ("plain", "zstd"):
        try:
            reader = _open(_copy(tmp_path, name))
        except InputError as exc:
            assert "streaming is not installed" in str(exc), exc
        else:
            assert len(reader) == sum(s["samples"] for s in reader.shards)
