"""OLMo-core token arrays: one flat array of token ids per file, an EOS closing every document.

OLMo-core trains on the arrays the Dolma toolkit writes: a file named
``*.npy`` that is in fact a *raw* memory-mapped array (``np.memmap``, no
header) of ``uint16`` or ``uint32`` ids, optionally with a metadata file
beside it, ``*.csv.gz``, one ``start,end[,...]`` line per document. This
module reads both that and a real ``.npy`` array (``np.save``, header
included, detected by its magic bytes). Document boundaries, as OLMo-core's
``olmo_core/data/utils.py`` (``iter_document_indices``,
``write_document_indices``, ai2-olmo-core 3.0.0) defines them:

* with ``eos_id``: a document ends at, and includes, every EOS token; the
  array is scanned in chunks of 16,777,216 tokens, vectorised
  (``np.flatnonzero(chunk == eos_id)``), so memory is one chunk plus 8 bytes
  per document. Tokens after the last EOS belong to no document (OLMo-core
  yields no range for them): they are counted in
  :attr:`OlmoTokenArray.trailing_tokens` and named by :meth:`describe`,
  never dropped silently;
* without ``eos_id``: the ``start,end`` ranges of the metadata file (OLMo-core's
  authoritative boundaries), checked to be in order, non-overlapping and
  inside the array.

**BOS.** A document here ends with its EOS, which is its one separator:
``bos="included"`` gives length = tokens up to and including the EOS;
``bos="add"`` adds one BOS per document (for arrays whose documents also
start with a BOS, use ``"included"``: the length is then the stored span).
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._checks import check_int
from ..._files import open_regular
from ...errors import InputError, InputTypeError
from ._base import BosMode, bos_inclusive, check_bos, existing_file, file_codes

__all__ = ["OLMO_DTYPES", "OlmoTokenArray", "metadata_path"]

OLMO_DTYPES: tuple[str, ...] = ("uint8", "uint16", "uint32", "uint64", "int32", "int64")
"""Token dtypes a raw array may have (OLMo-core writes ``uint16`` or ``uint32``)."""

_CHUNK = 1 << 24
_NPY_MAGIC = b"\x93NUMPY"

Int64Array = npt.NDArray[np.int64]


def metadata_path(path: str) -> str:
    """The metadata file OLMo-core looks for beside ``path`` (``.npy`` -> ``.csv.gz``).

    >>> metadata_path("part-0-00000.npy")
    'part-0-00000.csv.gz'
    """
    base, ext = os.path.splitext(path)
    return (base if ext else path) + ".csv.gz"


def _open_array(path: str, dtype: str | None) -> tuple[npt.NDArray[Any], str]:
    """The token array, memory-mapped, and how it was opened."""
    with open(path, "rb") as fh:
        magic = fh.read(len(_NPY_MAGIC))
    if magic == _NPY_MAGIC:
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise InputError(f"token array {path!r} is not a readable .npy file: {exc}") from exc
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InputTypeError(f"token array {path!r} must be a 1-D integer array, got shape {arr.shape} "
                                 f"dtype {arr.dtype}")
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            raise InputError(f"token array {path!r} holds {arr.dtype} (its .npy header), not --dtype {dtype}")
        return arr, f".npy {arr.dtype}"
    if dtype is None:
        raise InputError(f"token array {path!r} is a raw array (no .npy header, as OLMo-core and Dolma write "
                         f"them): give its dtype ({', '.join(OLMO_DTYPES)}; OLMo-core uses uint16 below a "
                         "vocabulary of 65,536 ids, else uint32)")
    if dtype not in OLMO_DTYPES:
        raise InputError(f"dtype must be one of {', '.join(OLMO_DTYPES)}, got {dtype!r}")
    item = np.dtype(dtype).itemsize
    size = os.path.getsize(path)
    if size % item:
        raise InputError(f"token array {path!r}: {size:,} bytes is not a whole number of {dtype} ids "
                         f"({item} bytes each): wrong dtype, or a truncated file")
    if size == 0:
        return np.zeros(0, dtype=dtype), f"raw {dtype}"
    return np.memmap(path, mode="r", dtype=dtype), f"raw {dtype}"


class OlmoTokenArray:
    """One OLMo-core token array and its document boundaries.

    Args:
        path: the array file (raw memmap or ``.npy``).
        bos: ``"included"`` or ``"add"`` (see the module docstring; required).
        eos_id: the EOS token id; without it the metadata file gives the boundaries.
        dtype: the ids' dtype for a raw array (a ``.npy`` header says it itself).

    Raises:
        FileNotFoundError: no such file, or no ``eos_id`` and no metadata file.
        InputError: a size that is not whole ids, a bad dtype or metadata line (naming file and line).
    """

    format = "olmo"

    def __init__(self, path: str | os.PathLike[str], *, bos: BosMode, eos_id: int | None = None,
                 dtype: str | None = None) -> None:
        self.path = existing_file(path, "token array")
        self.bos: BosMode = check_bos(bos, self.format)
        self.eos_id = None if eos_id is None else check_int("eos_id", eos_id, 0)
        self.tokens, self.opened = _open_array(self.path, dtype)
        if self.eos_id is not None:
            top = np.iinfo(self.tokens.dtype).max
            if self.eos_id > top:
                raise InputError(f"eos_id {self.eos_id} does not fit the array's {self.tokens.dtype} ids")
            self.ends = self._scan_eos()
            self.starts = np.concatenate(([0], self.ends[:-1])).astype(np.int64)
            self.boundaries = f"EOS id {self.eos_id}"
        else:
            meta = metadata_path(self.path)
            if not os.path.isfile(meta):
                raise FileNotFoundError(f"token array {self.path!r}: give the EOS id (OLMo-core's "
                                        f"eos_token_id) or the metadata file {meta!r} beside it")
            self.starts, self.ends = _read_metadata(meta, int(self.tokens.size))
            self.boundaries = f"metadata {os.path.basename(meta)}"
        last = int(self.ends[-1]) if self.ends.size else 0
        self.trailing_tokens = int(self.tokens.size) - last if self.eos_id is not None else 0
        self.paths: tuple[str, ...] = (self.path,)

    def _scan_eos(self) -> Int64Array:
        """Exclusive end of every document (one past each EOS), scanning ``_CHUNK`` ids at a time."""
        found: list[Int64Array] = []
        for lo in range(0, int(self.tokens.size), _CHUNK):
            hits = np.flatnonzero(self.tokens[lo : lo + _CHUNK] == self.eos_id)
            found.append(hits.astype(np.int64) + (lo + 1))
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.ends.size)

    def token_counts(self) -> Int64Array:
        """Stored tokens per document, the EOS included. O(documents)."""
        out: Int64Array = self.ends - self.starts
        return out

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths under :attr:`bos`.

        Raises:
            InputError: no document at all (an array without any EOS).
        """
        if not len(self):
            raise InputError(f"token array {self.path!r} holds no document ({self.boundaries}: "
                             f"{self.tokens.size:,} ids, none closing a document)")
        return bos_inclusive(self.token_counts(), self.bos, f"token array {self.path!r}")

    def document(self, i: int) -> npt.NDArray[Any]:
        """The stored ids of document ``i`` (its EOS last), a view of the memory map."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InputTypeError(f"document index must be an int, got {type(i).__name__}")
        n = len(self)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"document {i} out of range for {n} documents")
        return self.tokens[int(self.starts[j]) : int(self.ends[j])]

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """Every document's source label: the array file."""
        return (self.path,), file_codes([len(self)])

    def describe(self) -> str:
        """One line: documents, boundaries, trailing tokens and the BOS rule."""
        rule = ("length = tokens through the EOS" if self.bos == "included"
                else "length = tokens through the EOS + 1 BOS")
        tail = (f"; {self.trailing_tokens:,} tokens after the last EOS belong to no document (OLMo-core "
                "drops them too)" if self.trailing_tokens else "")
        return (f"OLMo-core token array {self.path!r} ({self.opened}): {len(self):,} documents by "
                f"{self.boundaries}{tail}; bos={self.bos}: {rule}")

    def _check(self) -> None:
        """Assert the reader's invariants."""
        assert self.starts.shape == self.ends.shape
        assert bool((self.ends > self.starts).all())
        assert not self.ends.size or int(self.ends[-1]) <= self.tokens.size
        assert bool((self.starts[1:] >= self.ends[:-1]).all())


def _read_metadata(path: str, n_tokens: int) -> tuple[Int64Array, Int64Array]:
    """``start,end`` per line of an OLMo-core metadata file, checked against the array."""
    starts: list[int] = []
    ends: list[int] = []
    line_no = 0
    try:
        with open_regular(path, "metadata file") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                start, end = _metadata_line(path, line_no, line)
                prev = ends[-1] if ends else 0
                if not prev <= start < end <= n_tokens:
                    raise InputError(f"metadata file {path!r} line {line_no}: document [{start}, {end}) must "
                                     f"start at or after the previous end {prev} and end within the array's "
                                     f"{n_tokens:,} ids")
                starts.append(start)
                ends.append(end)
    except (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as exc:  # a truncated or damaged .gz
        raise InputError(f"metadata file {path!r} is truncated or not gzip-compressed text (after line "
                         f"{line_no}): {type(exc).__name__}: {exc}") from None
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def _metadata_line(path: str, line_no: int, line: str) -> tuple[int, int]:
    fields = line.split(",", 2)
    try:
        if len(fields) < 2 or len(fields[0]) > 20 or len(fields[1]) > 20:
            raise ValueError(line)
        return int(fields[0]), int(fields[1])
    except ValueError:
        raise InputError(f"metadata file {path!r} line {line_no}: expected 'start,end[,...]', got "
                         f"{line.strip()[:80]!r}") from None
