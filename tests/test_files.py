"""The input rules of ``packing_theory._files``: regular files, bounded reads, confined paths, strict JSON."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from packing_theory._files import (
    MAX_ALIAS_EXPANSION,
    check_tree,
    confined,
    load_json,
    load_yaml,
    open_regular,
    outside,
    read_bounded,
    read_lines,
    regular_file,
)
from packing_theory.errors import InputError
from tests.fifo_helpers import raised_within


@pytest.mark.parametrize("reader", [regular_file, open_regular, read_bounded,
                                    lambda p, w: list(read_lines(p, w, max_line=10))])
def test_a_fifo_a_device_and_a_directory_are_refused_before_reading(tmp_path: Path, reader: Any) -> None:
    os.mkfifo(tmp_path / "pipe")
    error = raised_within(reader, str(tmp_path / "pipe"), "--labels", fifos=[tmp_path / "pipe"])
    assert isinstance(error, InputError)
    assert "--labels" in str(error) and "a pipe: reading it could wait forever" in str(error)
    error = raised_within(reader, "/dev/zero", "--mixture")
    assert isinstance(error, InputError) and "a device" in str(error)
    error = raised_within(reader, str(tmp_path), "--funnel")
    assert isinstance(error, InputError) and "is a directory, not a file" in str(error)
    error = raised_within(reader, str(tmp_path / "missing"), "--funnel")
    assert isinstance(error, FileNotFoundError) and "--funnel" in str(error)


def test_a_symlink_to_a_regular_file_is_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "a.txt")
    assert read_bounded(tmp_path / "link.txt", "--labels") == b"x\n"


def test_read_bounded_refuses_a_file_past_its_limit(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_bytes(b"x" * 11)
    assert read_bounded(tmp_path / "m.json", "--mixture", 11) == b"x" * 11
    with pytest.raises(InputError, match=r"--mixture '.*m.json' is larger than 10 bytes, the most it may be"):
        read_bounded(tmp_path / "m.json", "--mixture", 10)


def test_read_lines_bounds_a_line_and_the_line_count(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_text("a\r\nbb\n\nccc")
    assert list(read_lines(tmp_path / "l.txt", "--labels", max_line=3)) == [(1, "a"), (2, "bb"), (3, ""),
                                                                             (4, "ccc")]
    with pytest.raises(InputError, match="has a line longer than 2 characters"):
        list(read_lines(tmp_path / "l.txt", "--labels", max_line=2))
    with pytest.raises(InputError, match="has more than 3 lines"):
        list(read_lines(tmp_path / "l.txt", "--labels", max_line=3, max_lines=3))
    (tmp_path / "one.txt").write_bytes(b"y" * (3 << 20))  # one 3 MiB line: refused in the first chunk
    with pytest.raises(InputError, match="longer than 100 characters"):
        list(read_lines(tmp_path / "one.txt", "--files-from", max_line=100))
    (tmp_path / "bin.txt").write_bytes(b"ok\n\xff\n")
    with pytest.raises(InputError, match=r"is not UTF-8 text \(byte 3\)"):
        list(read_lines(tmp_path / "bin.txt", "--labels", max_line=10))


def test_confined_paths_stay_inside_the_directory_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "other.arrow").write_bytes(b"")
    (root / "inside").symlink_to(root / "sub")
    (root / "escape").symlink_to(tmp_path)
    what = "state.json _data_files[0].filename"
    assert confined(root, "sub/../a.arrow", what=what) == os.path.join(root, "sub/../a.arrow")
    assert confined(root, "inside/a.arrow", what=what) == os.path.join(root, "inside/a.arrow")
    for name, reason in [("../other.arrow", "resolves to"), (str(tmp_path / "other.arrow"), "absolute"),
                         ("escape/other.arrow", "resolves to"), (".", "resolves to"), ("", "not a relative")]:
        with pytest.raises(InputError, match=f"{re.escape(what)} .* leaves the directory .*{reason}"):
            confined(root, name, what=what)
        assert outside(root, name) is not None
    with pytest.raises(InputError, match=f"{re.escape(what)} must be a file name, got int 3"):
        confined(root, 3, what=what)


def test_load_json_turns_every_failure_into_bad_input() -> None:
    assert load_json('{"a": 1, "a": 2}', "x") == {"a": 2}  # a data line: JSON's own rule
    with pytest.raises(InputError, match="'m' repeats the key 'a' in one object"):
        load_json('{"b": {"a": 1, "a": 2}}', "'m'", unique_keys=True)
    with pytest.raises(InputError, match="nested too deeply"):
        load_json('{"a":' * 50_000, "x")
    with pytest.raises(InputError, match="is not valid JSON: Exceeds the limit"):
        load_json("1" * 5000, "x")
    with pytest.raises(InputError, match="is not valid JSON: Expecting value"):
        load_json("", "x")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_json(b'"\xff\xfe\xfa"', "x")


def test_load_yaml_refuses_repeated_keys_and_keeps_merge_keys() -> None:
    pytest.importorskip("yaml")
    with pytest.raises(InputError, match=r"'f' repeats the key 'a' in one mapping .* line 3"):
        load_yaml("a: 1\nb: 2\na: 3\n", "'f'")
    doc = load_yaml("base: &b {x: 1, y: 2}\nstage: {<<: *b, x: 3}\n", "'f'")
    assert doc["stage"] == {"x": 3, "y": 2}
    with pytest.raises(InputError, match="nested too deeply"):
        load_yaml("[" * 20_000, "'f'")
    with pytest.raises(InputError, match="is not valid YAML"):
        load_yaml("a: [1, 2\n", "'f'")
    with pytest.raises(InputError, match="is not valid YAML"):
        load_yaml("!!python/object:os.system {}\n", "'f'")  # the safe loader constructs no object


def test_check_tree_bounds_depth_cycles_and_alias_expansion() -> None:
    pytest.importorskip("yaml")
    check_tree({"ids": list(range(100_000)), "mask": [0, 1] * 50_000}, "f")  # long lists are fine
    shared = list(range(100))
    check_tree({"a": shared, "b": [shared] * 50}, "f")  # 5,000 more entries: within the bound
    with pytest.raises(InputError, match=f"at most {MAX_ALIAS_EXPANSION:,} more are allowed"):
        check_tree({"a": shared, "b": [shared] * 200}, "f")
    nested: Any = []
    for _ in range(70):
        nested = [nested]
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        check_tree(nested, "f")
    with pytest.raises(InputError, match="refers to itself"):
        check_tree(load_yaml("a: &a [*a]\n", "f"), "f")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    assert len(laughs) < 1024
    with pytest.raises(InputError, match=r"expands to 1,234,567,899 entries through shared nodes"):
        check_tree(load_yaml(laughs, "f"), "f")


def test_a_missing_file_names_the_role_and_keeps_the_systems_reason(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        open_regular(tmp_path / "no.json", "--mixture")
    assert str(caught.value) == f"--mixture {str(tmp_path / 'no.json')!r} does not exist"
    assert caught.value.strerror == "No such file or directory" and caught.value.errno == 2
