"""Megatron-LM indexed datasets (``PREFIX.bin`` + ``PREFIX.idx``): lengths from the index alone.

The index format is read directly (no Megatron import), as written by
``megatron/core/datasets/indexed_dataset.py`` (``_IndexWriter``,
``IndexedDatasetBuilder``) in NVIDIA/Megatron-LM; the transcription was
checked against megatron-core 0.16.1 (the ``core_r0.16.1`` release, file
``megatron/core/datasets/indexed_dataset.py``), whose builder writes the test
fixtures. Version 1 of the index, the only one that file has ever written, is
supported; all integers little-endian:

===========  =========================  =========================================
offset       field                      meaning
===========  =========================  =========================================
0            9 bytes ``MMIDIDX\\0\\0``  magic
9            ``<Q`` version             1
17           ``<B`` dtype code          1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                                        6 float64, 7 float32, 8 uint16
18           ``<Q`` sequence count S
26           ``<Q`` document count D+1  entries of the document index
34           ``int32[S]``               tokens per sequence
34 + 4S      ``int64[S]``               byte offset of each sequence in ``.bin``
34 + 12S     ``int64[D+1]``             document index: document ``d`` is sequences
                                        ``[idx[d], idx[d+1])``; ``idx[0] = 0``,
                                        ``idx[D] = S``
34+12S+8D+8  ``int8[S]`` (optional)     sequence modes (multimodal datasets only)
===========  =========================  =========================================

Beyond the sizes, the index is checked against itself: the document index
runs from 0 to ``S`` without decreasing, no sequence length is negative, and
every pointer is where the lengths before it put it (megatron-core writes the
pointers from the lengths), so a damaged length is refused, never summed into
a document's length.

A *sequence* is one ``add_item`` call; a *document* ends at each
``end_document`` (``add_document`` does both). ``tools/preprocess_data.py``
writes one sequence per document, or one per sentence with
``--split-sentences``; either way a document's length is the sum of its
sequences' lengths, read from the index without touching ``.bin``.

**BOS.** Megatron documents usually carry no BOS and end with an EOD
(``--append-eod``); Megatron's GPT dataset concatenates them, so the EOD is
the one separator between two documents. ``bos="included"`` maps a document
of ``n`` stored tokens (its EOD among them) to length ``n``, the positions it
takes in a row; ``bos="add"`` (data written without ``--append-eod``) maps it
to ``n + 1``, the BOS a packer would add. No default: the index cannot say
whether an EOD was appended (that is in ``.bin``), so the caller says it.

Memory: the index is memory-mapped; :meth:`MegatronIndex.lengths` allocates
the one ``int64`` result (8 bytes per document, no second copy) and works
through the index in chunks of 1,048,576 documents (the checks too), so its
scratch memory is O(chunk); the mapped index pages it has read are dropped
from the process after each chunk (:func:`~packing_theory.lengths.release_pages`),
so its resident memory is the result plus O(chunk), whatever the index size.
``.bin`` is only ``stat``-ed (its size must match the index) until
:meth:`MegatronIndex.document` reads token ids from it (memory-mapped).
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import InputError, InputTypeError
from ...lengths import release_pages
from ._base import BosMode, bos_inclusive, check_bos, existing_file, file_codes

__all__ = ["INDEX_HEADER", "INDEX_VERSION", "MEGATRON_DTYPES", "MegatronIndex", "megatron_prefix"]

INDEX_HEADER = b"MMIDIDX\x00\x00"
"""The magic bytes an index file starts with."""
INDEX_VERSION = 1
"""The index version read (the only one Megatron-LM writes)."""
MEGATRON_DTYPES: dict[int, type[np.generic]] = {
    1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
    8: np.uint16,
}
"""Megatron's dtype codes (``DType`` in ``indexed_dataset.py``) -> numpy types."""

_FIXED = 34
_CHUNK = 1 << 20
_SEQUENCE_CHUNK = 1 << 18  # the sequence check holds four int64 arrays of a chunk

Int64Array = npt.NDArray[np.int64]


def megatron_prefix(path: str | os.PathLike[str]) -> str:
    """The dataset prefix of ``PREFIX``, ``PREFIX.idx`` or ``PREFIX.bin``.

    >>> megatron_prefix("data/wiki_text_document.idx")
    'data/wiki_text_document'
    """
    name = os.fspath(path)
    for ext in (".idx", ".bin"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


class MegatronIndex:
    """One Megatron indexed dataset, read from its ``.idx`` (``.bin`` only for token ids).

    Args:
        path: ``PREFIX``, ``PREFIX.idx`` or ``PREFIX.bin``.
        bos: ``"included"`` or ``"add"`` (see the module docstring; required).

    Raises:
        FileNotFoundError: no ``PREFIX.idx``.
        InputError: not a version-1 index, a size that disagrees with its
            counts, a malformed document index, or a ``.bin`` whose size
            disagrees with the index (each naming the file and the field).
    """

    format = "megatron"

    def __init__(self, path: str | os.PathLike[str], *, bos: BosMode) -> None:
        self.prefix = megatron_prefix(path)
        self.idx_path = existing_file(self.prefix + ".idx", "Megatron index")
        self.bin_path = self.prefix + ".bin"
        self.bos: BosMode = check_bos(bos, self.format)
        with open(self.idx_path, "rb") as fh:
            head = fh.read(_FIXED)
        size = os.path.getsize(self.idx_path)
        where = f"Megatron index {self.idx_path!r}"
        if len(head) < _FIXED or head[:9] != INDEX_HEADER:
            raise InputError(f"{where} does not start with the header {INDEX_HEADER!r}: not a Megatron index")
        version, code, n_seq, n_doc = struct.unpack("<QBQQ", head[9:])
        if version != INDEX_VERSION:
            raise InputError(f"{where} has version {version}; version {INDEX_VERSION} is supported")
        if code not in MEGATRON_DTYPES:
            raise InputError(f"{where} has dtype code {code}, not one of {sorted(MEGATRON_DTYPES)}")
        if n_doc < 1:
            raise InputError(f"{where}: document count field is 0 (the document index holds at least [0])")
        plain = _FIXED + 12 * n_seq + 8 * n_doc
        if size not in (plain, plain + n_seq):
            raise InputError(f"{where}: {size:,} bytes, but {n_seq:,} sequences and {n_doc:,} document-index "
                             f"entries need {plain:,} (or {plain + n_seq:,} with sequence modes): truncated "
                             "or not a Megatron index")
        self.dtype = np.dtype(MEGATRON_DTYPES[code])
        self.multimodal = size == plain + n_seq and n_seq > 0
        self._map = np.memmap(self.idx_path, mode="r", dtype=np.uint8)
        self.sequence_lengths: npt.NDArray[np.int32] = np.frombuffer(self._map, np.int32, n_seq, _FIXED)
        self.sequence_pointers: Int64Array = np.frombuffer(self._map, np.int64, n_seq, _FIXED + 4 * n_seq)
        self.document_index: Int64Array = np.frombuffer(self._map, np.int64, n_doc, _FIXED + 12 * n_seq)
        self._check_index(where)
        self._check_bin()
        self.paths: tuple[str, ...] = (self.idx_path,)

    def _check_index(self, where: str) -> None:
        """O(1) checks, plus an O(documents) monotonicity check of the document index (chunked)."""
        idx = self.document_index
        n_seq = self.sequence_lengths.size
        if int(idx[0]) != 0 or int(idx[-1]) != n_seq:
            raise InputError(f"{where}: the document index runs {int(idx[0])} .. {int(idx[-1])}, "
                             f"expected 0 .. {n_seq} (the sequence count)")
        unit = True
        for lo in range(0, idx.size - 1, _CHUNK):
            step = np.diff(idx[lo : lo + _CHUNK + 1])
            if step.size and int(step.min()) < 0:
                d = lo + int(np.argmin(step))
                raise InputError(f"{where}: document index decreases at document {d} "
                                 f"({int(idx[d])} -> {int(idx[d + 1])})")
            unit = unit and (step.size == 0 or (int(step.min()) == 1 and int(step.max()) == 1))
            release_pages(idx[lo : lo + _CHUNK + 1])
        self._unit = unit
        self._check_sequences(where)

    def _check_sequences(self, where: str) -> None:
        """Every sequence length is ``>= 0`` and every pointer is where its predecessors' lengths put it
        (megatron-core's writer: ``pointer[s] = itemsize * (length[0] + ... + length[s - 1])``), in chunks.

        A negative length inside a document of several sequences would otherwise be summed away (``[5,
        -3]`` reads as one document of 2 tokens), and a damaged length would change a document's length
        silently; the pointers, written from the lengths, say which is which. O(sequences), O(chunk)
        scratch.
        """
        lengths, pointers = self.sequence_lengths, self.sequence_pointers
        item = self.dtype.itemsize
        at = 0  # the byte offset the next sequence must start at
        for lo in range(0, lengths.size, _SEQUENCE_CHUNK):
            part = lengths[lo : lo + _SEQUENCE_CHUNK].astype(np.int64)
            if int(part.min()) < 0:
                s = lo + int(np.argmin(part))
                raise InputError(f"{where}: sequence {s} (of document {self._document_of(s)}) has length "
                                 f"{int(part[s - lo])}: a damaged index (a length is never negative)")
            expect = np.empty(part.size, dtype=np.int64)
            expect[0] = at
            np.cumsum(part[:-1] * item, out=expect[1:])
            expect[1:] += at
            found = np.flatnonzero(expect != pointers[lo : lo + part.size])
            if found.size:
                s = lo + int(found[0])
                raise InputError(f"{where}: sequence {s} (of document {self._document_of(s)}) starts at byte "
                                 f"{int(pointers[s]):,}, but the lengths before it put it at "
                                 f"{int(expect[found[0]]):,}: a damaged index")
            at = int(expect[-1]) + int(part[-1]) * item
            release_pages(lengths[lo : lo + _SEQUENCE_CHUNK])
            release_pages(pointers[lo : lo + _SEQUENCE_CHUNK])

    def _document_of(self, sequence: int) -> int:
        return int(np.searchsorted(self.document_index, sequence, side="right")) - 1

    def _check_bin(self) -> None:
        """When ``.bin`` exists, its size must be what the index's last pointer implies (``stat`` only)."""
        if not os.path.exists(self.bin_path):
            return
        n = self.sequence_lengths.size
        item = self.dtype.itemsize
        want = 0 if n == 0 else int(self.sequence_pointers[-1]) + int(self.sequence_lengths[-1]) * item
        have = os.path.getsize(self.bin_path)
        if have != want:
            raise InputError(f"Megatron data {self.bin_path!r}: {have:,} bytes, its index "
                             f"{self.idx_path!r} implies {want:,}: the pair does not belong together")

    def __len__(self) -> int:
        return int(self.document_index.size) - 1

    @property
    def one_sequence_per_document(self) -> bool:
        """True when every document is exactly one sequence (the index is ``0, 1, ..., S``; found when the
        index was checked)."""
        return self._unit

    def token_counts(self) -> Int64Array:
        """Stored tokens per document (``int64``), from the index alone. O(sequences), chunked."""
        if self.one_sequence_per_document:  # the index is 0, 1, ..., S: the sequence lengths are the answer
            return self.sequence_lengths.astype(np.int64)
        out = np.empty(len(self), dtype=np.int64)
        idx = self.document_index
        for lo in range(0, len(self), _CHUNK):
            hi = min(lo + _CHUNK, len(self))
            first, last = int(idx[lo]), int(idx[hi])
            csum = np.zeros(last - first + 1, dtype=np.int64)
            np.cumsum(self.sequence_lengths[first:last], out=csum[1:])
            bounds = idx[lo : hi + 1] - first
            out[lo:hi] = csum[bounds[1:]] - csum[bounds[:-1]]
        return out

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths (``int64``) under :attr:`bos`. O(documents); reads only the index.

        Memory: the one ``int64`` result (8 bytes per document), filled chunk by chunk from the mapped
        index; no second copy.
        """
        if not self.one_sequence_per_document:
            return bos_inclusive(self.token_counts(), self.bos, f"Megatron index {self.idx_path!r}")
        out = np.empty(len(self), dtype=np.int64)
        for lo in range(0, out.size, _CHUNK):
            part = out[lo : lo + _CHUNK]
            part[:] = self.sequence_lengths[lo : lo + _CHUNK]
            release_pages(self.sequence_lengths[lo : lo + _CHUNK])
            if self.bos == "add":
                part += 1
            elif part.size and int(part.min()) < 1:  # the error path: the whole check names the document
                return bos_inclusive(self.token_counts(), self.bos, f"Megatron index {self.idx_path!r}")
        return out

    def document(self, i: int) -> npt.NDArray[Any]:
        """The stored token ids of document ``i`` (a view of the memory-mapped ``.bin``), as stored:
        no BOS is added.

        Raises:
            IndexError: ``i`` out of range.
            FileNotFoundError: no ``.bin``.
        """
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InputTypeError(f"document index must be an int, got {type(i).__name__}")
        n = len(self)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"document {i} out of range for {n} documents")
        first, last = int(self.document_index[j]), int(self.document_index[j + 1])
        data = self._bin()
        if first == last:
            return data[:0]
        start = int(self.sequence_pointers[first]) // self.dtype.itemsize
        count = int(self.sequence_lengths[first : last].sum(dtype=np.int64))
        return data[start : start + count]

    def _bin(self) -> npt.NDArray[Any]:
        existing_file(self.bin_path, "Megatron data file")
        cached = getattr(self, "_bin_map", None)
        if cached is None:
            cached = np.memmap(self.bin_path, mode="r", dtype=self.dtype)
            self._bin_map = cached
        return cached

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """Every document's source label: the dataset prefix."""
        return (self.prefix,), file_codes([len(self)])

    def describe(self) -> str:
        """One line: documents, sequences, dtype and the BOS rule."""
        rule = ("length = stored tokens (each document's EOD or BOS is its separator)"
                if self.bos == "included" else "length = stored tokens + 1 BOS")
        return (f"Megatron indexed dataset {self.prefix!r} (index version {INDEX_VERSION}, {self.dtype}): "
                f"{len(self):,} documents in {self.sequence_lengths.size:,} sequences, read from the .idx "
                f"only; bos={self.bos}: {rule}")

    def _check(self) -> None:
        """Assert the reader's invariants."""
        assert int(self.document_index[0]) == 0
        assert int(self.document_index[-1]) == self.sequence_lengths.size
        assert self.sequence_pointers.size == self.sequence_lengths.size
        assert self.bos in ("included", "add")
        assert not self._unit or len(self) == self.sequence_lengths.size
