"""OLMo-core metadata: a truncated or damaged ``.csv.gz`` is bad input naming the file."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from packing_theory.corpus.readers.olmo import OlmoTokenArray
from packing_theory.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data" / "readers" / "olmo"


@pytest.fixture()
def olmo(tmp_path: Path) -> Path:
    for name in ("part-0-00000.npy", "part-0-00000.csv.gz"):
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path / "part-0-00000.npy"


def test_a_truncated_metadata_file_is_bad_input(olmo: Path) -> None:
    """Before the fix a cut ``.csv.gz`` was an EOFError: an internal error (exit 3)."""
    meta = olmo.with_suffix(".csv.gz")
    whole = meta.read_bytes()
    assert len(OlmoTokenArray(olmo, bos="included", dtype="uint16")) > 0
    for keep in (len(whole) - 1, len(whole) // 2, 11):
        meta.write_bytes(whole[:keep])
        with pytest.raises(InputError, match=r"metadata file .* is truncated or not gzip-compressed text"):
            OlmoTokenArray(olmo, bos="included", dtype="uint16")


def test_a_metadata_file_that_is_not_gzip_or_not_text_is_bad_input(olmo: Path) -> None:
    meta = olmo.with_suffix(".csv.gz")
    meta.write_bytes(b"0,5\n5,9\n")
    with pytest.raises(InputError, match="is truncated or not gzip-compressed text"):
        OlmoTokenArray(olmo, bos="included", dtype="uint16")
    meta.write_bytes(gzip.compress(b"0,5\n\xff\xfe\n"))
    with pytest.raises(InputError, match="is truncated or not gzip-compressed text"):
        OlmoTokenArray(olmo, bos="included", dtype="uint16")
    meta.write_bytes(gzip.compress(b"0," + b"9" * 5000 + b"\n"))
    with pytest.raises(InputError, match=r"line 1: expected 'start,end\[,...\]'"):
        OlmoTokenArray(olmo, bos="included", dtype="uint16")
