"""A saved Hugging Face dataset is read only inside its directory, and a damaged one is bad input (exit 2).

Before the fix the reader joined ``state.json``'s ``_data_files[].filename``
(and ``--split``) to the dataset directory unchecked: ``../other/x.arrow`` and
an absolute path were followed, the run exited 0 and the report named the
innocent directory. A ``state.json`` that is not JSON, or a list, a
``dataset_dict.json`` that is not JSON, and a truncated Arrow file were
internal errors (exit 3), and an Arrow file cut at a batch boundary read as a
shorter dataset (silently fewer rows).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.corpus.readers import open_data
from packing_theory.corpus.readers.hf import hf_data_files
from packing_theory.errors import InputError

datasets = pytest.importorskip("datasets", reason="datasets is not installed: pip install datasets")


def _save(path: Path, rows: list[list[int]]) -> Path:
    datasets.Dataset.from_dict({"input_ids": rows}).save_to_disk(str(path))
    return path


def _arrow(path: Path) -> Path:
    return next(path.glob("*.arrow"))


def _state(path: Path, doc: object) -> None:
    (path / "state.json").write_text(json.dumps(doc))


@pytest.fixture()
def two(tmp_path: Path) -> tuple[Path, Path]:
    return _save(tmp_path / "mine", [[1, 2, 3], [4, 5]]), _save(tmp_path / "other", [[7] * 7] * 4)


@pytest.mark.parametrize("escape", ["relative", "absolute", "symlink"])
def test_a_state_json_file_name_outside_the_dataset_is_refused(two: tuple[Path, Path], escape: str) -> None:
    mine, other = two
    target = _arrow(other)
    if escape == "relative":
        name = f"../other/{target.name}"
    elif escape == "absolute":
        name = str(target)
    else:
        (mine / "link.arrow").symlink_to(target)
        name = "link.arrow"
    state = json.loads((mine / "state.json").read_text())
    state["_data_files"][0]["filename"] = name
    _state(mine, state)
    with pytest.raises(InputError, match=r"state.json' _data_files\[0\]\.filename .* leaves the directory"):
        hf_data_files(str(mine))
    assert main(["audit", "--data", str(mine), "--bos", "included", "--capacity", "8", "--min-buffer", "2",
                 "--out", str(mine.parent / "out"), "--no-plots"]) == 2


def test_a_split_outside_the_dataset_dict_is_refused(tmp_path: Path) -> None:
    ds = datasets.Dataset.from_dict({"input_ids": [[1, 2]]})
    datasets.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "dd"))
    _save(tmp_path / "elsewhere", [[9] * 9])
    (tmp_path / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "../elsewhere"]}))
    with pytest.raises(InputError, match=r"--split of Hugging Face dataset .* '\.\./elsewhere' leaves the "
                                         "directory"):
        hf_data_files(str(tmp_path / "dd"), "../elsewhere")
    assert hf_data_files(str(tmp_path / "dd"), "train")[0] == os.path.join(str(tmp_path / "dd"), "train")


@pytest.mark.parametrize("text, message", [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "must be an object whose '_data_files' is a list"),
    ('{"_data_files": [{"filename": 3}]}', r"_data_files\[0\]\.filename must be a file name, got int 3"),
    ('{"_data_files": "x.arrow"}', "must be an object whose '_data_files' is a list"),
    ('[' * 100_000, "nested too deeply"),
])
def test_a_state_json_that_is_not_what_save_to_disk_writes_is_bad_input(two: tuple[Path, Path], text: str,
                                                                        message: str) -> None:
    mine, _ = two
    (mine / "state.json").write_text(text)
    with pytest.raises(InputError, match=message):
        hf_data_files(str(mine))
    assert main(["audit", "--data", str(mine), "--format", "hf", "--bos", "included", "--capacity", "8",
                 "--min-buffer", "2", "--out", str(mine.parent / "out"), "--no-plots"]) == 2


@pytest.mark.parametrize("text", ["{not json", '{"splits": "train"}', "[]"])
def test_a_dataset_dict_json_that_is_not_json_is_bad_input(tmp_path: Path, text: str) -> None:
    ds = datasets.Dataset.from_dict({"input_ids": [[1, 2]]})
    datasets.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "dd"))
    (tmp_path / "dd" / "dataset_dict.json").write_text(text)
    with pytest.raises(InputError, match=r"dataset_dict\.json"):
        hf_data_files(str(tmp_path / "dd"), "train")


def test_an_arrow_file_cut_anywhere_is_refused_never_read_short(tmp_path: Path) -> None:
    """Cut at a batch boundary, the Arrow stream reads as a valid shorter one: 1,000 of 2,500 rows."""
    mine = _save(tmp_path / "mine", [[1, 2, 3]] * 2500)  # three record batches (1,000 rows each)
    data = _arrow(mine).read_bytes()
    assert open_data([str(mine)], "hf", bos="included").lengths().size == 2500
    for cut in (16552, 32752, len(data) - 8, len(data) - 1, 1000):  # batch boundaries, no marker, a batch cut
        _arrow(mine).write_bytes(data[:cut])
        with pytest.raises(InputError, match=r"Arrow file .* (is truncated or damaged|cannot be read)"):
            open_data([str(mine)], "hf", bos="included").lengths()


def test_an_early_end_of_stream_marker_is_refused(tmp_path: Path) -> None:
    """A damaged message length that reads as the end-of-stream marker would end the dataset early."""
    mine = _save(tmp_path / "mine", [[1, 2, 3]] * 2500)
    data = bytearray(_arrow(mine).read_bytes())
    at = data.index(b"\xff\xff\xff\xff", 16000)  # the second batch's message
    data[at + 4 : at + 8] = b"\0\0\0\0"
    _arrow(mine).write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"stream ends at byte 16,560 of 40,960, not with the end-of-stream"):
        open_data([str(mine)], "hf", bos="included").lengths()


def test_a_damaged_list_offset_is_refused_not_a_negative_length(tmp_path: Path) -> None:
    mine = _save(tmp_path / "mine", [[1, 2, 3], [4, 5], [6]])
    data = bytearray(_arrow(mine).read_bytes())
    offsets = np.array([0, 3, 5, 6], dtype="<i4").tobytes()
    at = data.index(offsets)
    data[at + 4 : at + 8] = np.array([9], dtype="<i4").tobytes()  # 0, 9, 5, 6: not monotone
    _arrow(mine).write_bytes(bytes(data))
    with pytest.raises(InputError, match="cannot be read as an Arrow stream"):
        open_data([str(mine)], "hf", bos="included").lengths()
