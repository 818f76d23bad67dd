"""Document-boundary token shards (seed 002 §10): a validating reader and a writer.

Layout of one shard file, all little-endian::

    header  : <IIII  = vocab, n_docs, n_tokens, flags        16 bytes
    offsets : uint32 × (n_docs + 1), cumulative, offsets[0] = 0, offsets[-1] = n_tokens
    ids     : uint16 × n_tokens
    doc i   = ids[offsets[i] : offsets[i + 1]]

The file size must be exactly ``16 + 4 * (n_docs + 1) + 2 * n_tokens``: a
truncated file and trailing bytes are both errors. Every document is
BOS-inclusive (``doc[0]`` is its BOS), so a zero-length document is invalid.
Token ids must be below ``vocab``; that check reads every id (O(tokens)) and
runs on demand (:meth:`Shard.validate` with ``ids=True``, or ``read_shard(...,
check_ids=True)``), while the O(documents) structural checks always run.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "a.bin")
>>> write_shard(path, [[1, 5, 6], [1, 7]], vocab=8)
>>> shard = read_shard(path)
>>> shard.n_docs, shard.n_tokens, shard.lengths().tolist(), shard.document(1).tolist()
(2, 5, [3, 2], [1, 7])
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._checks import check_int, is_int
from ..errors import InputError, InputTypeError

__all__ = [
    "HEADER",
    "MAX_VOCAB",
    "Shard",
    "lengths_from_shards",
    "read_shard",
    "write_shard",
]

HEADER = struct.Struct("<IIII")
"""The 16-byte shard header: ``vocab, n_docs, n_tokens, flags``."""

MAX_VOCAB = 1 << 16
"""Ids are stored as ``uint16``, so a shard's vocabulary is at most 65,536."""

_U32 = (1 << 32) - 1
_CHUNK = 1 << 20  # offsets checked / differenced per step (O(chunk) working memory)
PathLike = str | os.PathLike[str]


def _name(path: PathLike) -> str:
    return os.fspath(path)


@dataclass(frozen=True, eq=False)
class Shard:
    """A validated, memory-mapped token shard.

    Attributes:
        path: the file it was read from.
        vocab: vocabulary size from the header; every id is ``< vocab``.
        flags: the header's flags word (opaque to this library).
        offsets: ``uint32`` memmap of ``n_docs + 1`` cumulative offsets.
        ids: ``uint16`` memmap of ``n_tokens`` token ids.

    Memory: O(1) beyond the memmaps; pages are read on access.
    """

    path: str
    vocab: int
    flags: int
    offsets: np.memmap[tuple[int], np.dtype[np.uint32]]
    ids: np.memmap[tuple[int], np.dtype[np.uint16]]

    @property
    def n_docs(self) -> int:
        """Number of documents."""
        return int(self.offsets.size) - 1

    @property
    def n_tokens(self) -> int:
        """Number of tokens (BOS-inclusive, summed over documents)."""
        return int(self.ids.size)

    def __len__(self) -> int:
        return self.n_docs

    def lengths(self, out: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
        """BOS-inclusive document lengths, ``np.diff(offsets)`` as ``int64``. O(documents).

        Computed in chunks: memory is the result (8 bytes per document, or
        ``out``, an ``int64`` array of ``n_docs`` entries to fill) plus O(chunk).
        """
        n = self.n_docs
        if out is None:
            out = np.empty(n, dtype=np.int64)
        elif out.shape != (n,) or out.dtype != np.int64:
            raise InputError(f"out must be an int64 array of shape ({n},), got {out.dtype} {out.shape}")
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            np.subtract(self.offsets[lo + 1 : hi + 1], self.offsets[lo:hi], out=out[lo:hi], dtype=np.int64,
                        casting="unsafe")
        return out

    def document(self, i: int) -> npt.NDArray[np.uint16]:
        """Token ids of document ``i`` (a view into the memmap; negative ``i`` counts from the end).

        Raises:
            IndexError: ``i`` out of range.
            TypeError: ``i`` is not an int.
        """
        if not is_int(i):
            raise InputTypeError(f"document index must be an int, got {type(i).__name__} {i!r}")
        n = self.n_docs
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"shard {self.path!r}: document index {i} out of range for {n} documents")
        return self.ids[int(self.offsets[j]) : int(self.offsets[j + 1])]

    def documents(self) -> Iterator[npt.NDArray[np.uint16]]:
        """Yield every document's ids in order (views; O(1) memory each)."""
        offsets = self.offsets.astype(np.int64)
        for j in range(self.n_docs):
            yield self.ids[offsets[j] : offsets[j + 1]]

    def validate(self, *, ids: bool = True) -> Shard:
        """Re-run the structural checks and, with ``ids=True``, check every id ``< vocab``.

        Complexity: O(documents), plus O(tokens) for ``ids=True`` (chunked,
        memory O(chunk)).

        Raises:
            ValueError: naming the file, the field and the first bad index.
        """
        _check_offsets(self.path, self.offsets, self.n_tokens)
        if ids:
            _check_ids(self.path, self.ids, self.vocab)
        return self


def _check_offsets(name: str, offsets: npt.NDArray[np.uint32], n_tokens: int) -> None:
    """Structural checks of the offsets, in chunks (O(chunk) memory, stops at the first bad entry).

    A header may claim millions of documents over a file that is mostly holes
    (a sparse file of the claimed size): the first chunk refuses it, before
    anything of the claimed size is allocated.
    """
    if offsets.size == 0:
        raise InputError(f"shard {name!r}: offsets is empty (needs n_docs + 1 entries)")
    first = int(offsets[0])
    if first != 0:
        raise InputError(f"shard {name!r}: offsets[0]={first} (must be 0)")
    for lo in range(0, int(offsets.size) - 1, _CHUNK):
        part = offsets[lo : lo + _CHUNK + 1].astype(np.int64)
        diffs = np.diff(part)
        bad = diffs < 0
        if bad.any():
            i = lo + int(np.argmax(bad)) + 1
            raise InputError(
                f"shard {name!r}: offsets[{i}]={int(offsets[i])} < offsets[{i - 1}]={int(offsets[i - 1])} "
                "(must be non-decreasing)"
            )
        empty = diffs == 0
        if empty.any():
            i = lo + int(np.argmax(empty))
            raise InputError(
                f"shard {name!r}: document {i} is empty (offsets[{i}] == offsets[{i + 1}] == "
                f"{int(offsets[i])}); every document holds at least its BOS token"
            )
    last = int(offsets[-1])
    if last != n_tokens:
        raise InputError(
            f"shard {name!r}: offsets[{offsets.size - 1}]={last} != n_tokens={n_tokens} "
            "(the last offset must equal the header's token count)"
        )


def _check_ids(name: str, ids: npt.NDArray[np.uint16], vocab: int, chunk: int = 1 << 24) -> None:
    if vocab >= MAX_VOCAB:
        return
    for lo in range(0, int(ids.size), chunk):
        part = ids[lo : lo + chunk]
        bad = part >= vocab
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"shard {name!r}: ids[{lo + i}]={int(part[i])} >= vocab={vocab}")


def read_shard(path: PathLike, *, check_ids: bool = False) -> Shard:
    """Open ``path`` as a :class:`Shard`, validating its structure.

    The header, the exact file size and the offsets (start at 0, non-decreasing,
    no empty document, last equals ``n_tokens``) are always checked, in
    O(documents); ``check_ids=True`` also checks every id ``< vocab`` (O(tokens)).

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file and the field: a file shorter than the
            header, a size that disagrees with the header (truncated or
            trailing bytes), ``vocab`` of 0 or above 65,536, bad offsets, or an
            out-of-range id.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.bin")
    >>> write_shard(path, [[1, 2]], vocab=4)
    >>> with open(path, "ab") as f:
    ...     _ = f.write(b"xx")
    >>> read_shard(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputError: shard '...t.bin': file has 30 bytes, header implies 28 (2 trailing bytes): ...
    """
    name = _name(path)
    size = os.path.getsize(path)  # a FIFO or a character device has size 0: refused before it is opened
    if size < HEADER.size:
        raise InputError(
            f"shard {name!r}: file has {size} bytes, shorter than the {HEADER.size}-byte header (truncated)"
        )
    with open(path, "rb") as fh:
        vocab, n_docs, n_tokens, flags = HEADER.unpack(fh.read(HEADER.size))
    if vocab == 0 or vocab > MAX_VOCAB:
        raise InputError(f"shard {name!r}: header vocab={vocab} (must be in 1..{MAX_VOCAB} for uint16 ids)")
    expected = HEADER.size + 4 * (n_docs + 1) + 2 * n_tokens
    if size != expected:
        what = "truncated" if size < expected else f"{size - expected} trailing bytes"
        raise InputError(
            f"shard {name!r}: file has {size} bytes, header implies {expected} ({what}): "
            f"header n_docs={n_docs}, n_tokens={n_tokens} need 16 + 4*(n_docs+1) + 2*n_tokens bytes"
        )
    offsets: np.memmap[tuple[int], np.dtype[np.uint32]] = np.memmap(
        path, dtype="<u4", mode="r", offset=HEADER.size, shape=(n_docs + 1,)
    )
    ids: np.memmap[tuple[int], np.dtype[np.uint16]]
    if n_tokens:
        ids = np.memmap(path, dtype="<u2", mode="r", offset=HEADER.size + 4 * (n_docs + 1), shape=(n_tokens,))
    else:  # numpy cannot memory-map zero bytes
        ids = np.zeros(0, dtype="<u2").view(np.memmap)
    shard = Shard(name, int(vocab), int(flags), offsets, ids)
    _check_offsets(name, offsets, n_tokens)
    if check_ids:
        _check_ids(name, ids, int(vocab))
    return shard


def write_shard(
    path: PathLike,
    docs: Iterable[Sequence[int] | npt.NDArray[np.integer]],
    *,
    vocab: int,
    flags: int = 0,
) -> None:
    """Write BOS-inclusive documents ``docs`` (sequences of token ids) as a shard.

    Every document must be non-empty, every id in ``0 <= id < vocab``, and
    ``vocab <= 65536``. An empty ``docs`` writes a valid zero-document shard
    (:func:`lengths_from_shards` rejects it where a replay needs documents).

    Complexity: O(tokens) time and memory.

    Raises:
        ValueError: ``vocab`` out of range, an empty document, an id out of
            range, or more than 2**32 - 1 tokens (naming the document index).
        TypeError: a non-integer ``vocab`` or document.
    """
    vocab = check_int("vocab", vocab, 1, maximum=MAX_VOCAB)  # ids are uint16
    flags = check_int("flags", flags, 0, maximum=_U32)
    arrays: list[npt.NDArray[np.uint16]] = []
    lengths: list[int] = []
    for i, doc in enumerate(docs):
        arr = np.asarray(doc)
        if arr.ndim != 1:
            raise InputError(f"docs[{i}] must be a 1-D sequence of token ids, got shape {arr.shape}")
        if arr.size == 0:
            raise InputError(f"docs[{i}] is empty: a BOS-inclusive document holds at least one token")
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise InputTypeError(f"docs[{i}] must hold integer token ids, got dtype {arr.dtype}")
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= vocab:
            bad = int(np.argmax((arr < 0) | (arr >= vocab)))
            raise InputError(f"docs[{i}][{bad}]={int(arr[bad])} is out of range for vocab={vocab}")
        arrays.append(arr.astype("<u2"))
        lengths.append(int(arr.size))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_tokens = int(offsets[-1])
    if n_tokens > _U32:
        raise InputError(f"docs hold {n_tokens} tokens, more than a uint32 offset can address")
    with open(path, "wb") as fh:
        fh.write(HEADER.pack(int(vocab), len(lengths), n_tokens, int(flags)))
        fh.write(offsets.astype("<u4").tobytes())
        for arr in arrays:
            fh.write(arr.tobytes())


def lengths_from_shards(
    paths: PathLike | Iterable[PathLike], *, check_ids: bool = False
) -> npt.NDArray[np.int64]:
    """Concatenated BOS-inclusive document lengths of the shards in ``paths`` (in order).

    Complexity: O(documents) (plus O(tokens) with ``check_ids=True``); memory
    the result (8 bytes per document) plus O(chunk): every shard is checked
    before the result is allocated, and the files are memory-mapped.

    Raises:
        ValueError: no paths, a corrupt shard (see :func:`read_shard`), or no
            documents at all ("empty": a replay needs at least one).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_shard(os.path.join(d, "0.bin"), [[1, 2, 3]], vocab=4)
    >>> write_shard(os.path.join(d, "1.bin"), [[1], [1, 3]], vocab=4)
    >>> lengths_from_shards([os.path.join(d, f"{i}.bin") for i in range(2)]).tolist()
    [3, 1, 2]
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    shards = [read_shard(p, check_ids=check_ids) for p in paths]  # every file checked before allocating
    if not shards:
        raise InputError("paths is empty: give at least one shard file")
    out = np.empty(sum(s.n_docs for s in shards), dtype=np.int64)
    at = 0
    for shard in shards:
        shard.lengths(out[at : at + shard.n_docs])
        at += shard.n_docs
    if out.size == 0:
        raise InputError(
            f"shards {[_name(p) for p in paths]!r} are empty (n_docs=0): a replay needs at least one document"
        )
    return out
