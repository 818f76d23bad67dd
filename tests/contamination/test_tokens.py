"""References are read piece by piece, and the pieces give the whole items' ids (built-in tokenizers).

A callable tokenizer sees pieces cut after a line break; the built-ins are cut
where their ids cannot change, so streaming them is exact.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from packing_theory.contamination import ReferenceSpec, text_token_ids
from packing_theory.contamination.tokens import ReferenceItems, cut_pieces, cut_rule, reference_pieces
from packing_theory.corpus.text import iter_text_files
from packing_theory.errors import InputError

texts = st.text(alphabet=st.sampled_from(list("ab é\n\r\t中")), max_size=60)


def _items(pieces: list[tuple[np.ndarray, bool]]) -> list[list[int]]:
    """Join the pieces of each item back into the item's ids."""
    out: list[list[int]] = []
    current: list[int] = []
    for ids, last in pieces:
        current += ids.tolist()
        if last:
            out.append(current)
            current = []
    assert not current, "the last piece of the set ends an item"
    return out


@given(text=texts, limit=st.integers(1, 7), unit=st.sampled_from(["bytes", "chars", "whitespace"]))
@example(text="ab\r\ncd", limit=3, unit="chars")
def test_streamed_whole_file_equals_the_whole_items_ids(tmp_path_factory: pytest.TempPathFactory, text: str,
                                                        limit: int, unit: str) -> None:
    path = tmp_path_factory.mktemp("ref") / "r.txt"
    path.write_bytes(text.encode("utf-8"))
    tally = ReferenceItems()
    got = _items(list(reference_pieces(ReferenceSpec(str(path)), unit, tally, limit=limit)))  # type: ignore[arg-type]
    (whole,) = text_token_ids([text], unit)  # type: ignore[arg-type]
    assert got == [whole.tolist()] and (tally.rows, tally.items) == (1, 1)
    if unit != "whitespace":  # a word is never cut; characters are, at the limit
        assert tally.largest_piece <= 4 * limit


@given(text=texts, limit=st.integers(1, 7), unit=st.sampled_from(["bytes", "chars", "whitespace"]))
@example(text="a\r\r\nb\n \n\nc\r", limit=1, unit="chars")
def test_streamed_lines_equal_the_whole_lines_ids(tmp_path_factory: pytest.TempPathFactory, text: str,
                                                  limit: int, unit: str) -> None:
    path = tmp_path_factory.mktemp("ref") / "r.txt"
    path.write_bytes(text.encode("utf-8"))
    tally = ReferenceItems()
    got = _items(list(reference_pieces(ReferenceSpec(str(path), per_line=True), unit, tally,  # type: ignore[arg-type]
                                       limit=limit)))
    lines = list(iter_text_files([str(path)], per_line=True))  # the line rule of every text input
    assert got == [ids.tolist() for ids in text_token_ids(lines, unit)]  # type: ignore[arg-type]
    assert tally.items == tally.rows == len(lines)


def test_cut_points_per_tokenizer() -> None:
    assert list(cut_pieces(["abcdefg"], "anywhere", limit=3)) == [("abc", False), ("def", False), ("g", True)]
    assert list(cut_pieces(["aaaa bbbbbbb c"], "space", limit=3)) == [
        ("aaaa ", False), ("bbbbbbb ", False), ("c", True)]  # a word longer than the limit stays whole
    assert list(cut_pieces(["ab\ncd ef\ng"], "line", limit=6)) == [("ab\n", False), ("cd ef\n", False),
                                                                  ("g", True)]
    assert list(cut_pieces([], "line")) == [("", True)]  # an empty item is one empty piece
    assert cut_rule("chars") == "anywhere" and cut_rule(lambda s: [1]) == "line"


def test_a_callable_sees_pieces_cut_after_a_line_break(tmp_path: Path) -> None:
    seen: list[str] = []

    def tok(s: str) -> list[int]:
        seen.append(s)
        return [len(w) for w in s.split()]

    (tmp_path / "r.txt").write_text("one two\nthree four\nfive\n")
    pieces = list(reference_pieces(ReferenceSpec(str(tmp_path / "r.txt")), tok, ReferenceItems(), limit=10))
    assert seen == ["one two\n", "three ", "four\nfive\n"]  # no line break in reach: after a space
    assert _items(pieces) == [[3, 3, 5, 4, 4]]


def test_binary_and_undecodable_references_are_bad_input(tmp_path: Path) -> None:
    (tmp_path / "nul.txt").write_bytes(b"abc\x00def")
    with pytest.raises(InputError, match=r"nul\.txt' is binary, not text \(a NUL character at character 3\)"):
        list(reference_pieces(ReferenceSpec(str(tmp_path / "nul.txt")), "bytes", ReferenceItems(), limit=2))
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\n")
    with pytest.raises(InputError, match=r"bad\.txt' is not valid utf-8"):
        list(reference_pieces(ReferenceSpec(str(tmp_path / "bad.txt"), per_line=True), "bytes",
                              ReferenceItems()))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(reference_pieces(ReferenceSpec(str(tmp_path / "gone.txt")), "bytes", ReferenceItems()))
