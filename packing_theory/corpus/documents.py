"""Token documents a trainer reads by source id: one flat array, a cursor, a fingerprint.

A replay needs lengths; a trainer needs the token ids behind them. A
:class:`TokenDocuments` holds BOS-inclusive documents as one flat id array
plus ``n_docs + 1`` offsets (the seed-002 shard layout, in memory), so that:

* the engine reads its lengths once (:meth:`TokenDocuments.lengths`) and a
  packer configured for several passes reads the same documents again by
  source id (``documents[source]``);
* a batch of rows is gathered with one vectorised read
  (:meth:`TokenDocuments.gather_runs`) instead of a Python slice per placement;
* the refill cursor's ``position`` (documents taken in the current pass) maps
  to a ``(shard_index, token_offset)`` pair and back
  (:meth:`TokenDocuments.locate`, :meth:`TokenDocuments.position_of`), the
  resume cursor of seed 002 §10 (one in-memory "shard" here; several for
  :class:`~packing_theory.corpus.cursor.ShardDocuments`).

:class:`DocumentStore` is the protocol both implement (the trainer adapter
needs nothing else).

>>> docs = TokenDocuments.from_lists([[0, 5, 6], [0, 7], [0, 8, 9, 10]])
>>> docs.lengths().tolist(), docs[2].tolist()
([3, 2, 4], [0, 8, 9, 10])
>>> docs.gather_runs(np.array([2, 0]), np.array([1, 2]), np.array([2, 1])).tolist()
[8, 9, 6]
>>> docs.locate(2), docs.position_of(0, 5)
((0, 5), 2)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .._checks import check_int, is_int
from ..errors import InputError, InputTypeError

__all__ = ["LONG_RUN", "DocumentStore", "TokenDocuments", "copy_runs", "lengths_fingerprint", "run_index"]

LONG_RUN = 32
"""Mean run length from which :func:`copy_runs` copies run by run (slices) instead of by fancy indexing."""

Int64Array = npt.NDArray[np.int64]


def lengths_fingerprint(lengths: npt.NDArray[np.integer]) -> dict[str, Any]:
    """``{"n_docs", "n_tokens", "lengths_sha256"}`` of a length array: what a resumed run must share.

    >>> lengths_fingerprint(np.array([3, 2]))["n_tokens"]
    5
    """
    arr = np.ascontiguousarray(lengths, dtype="<i8")
    return {
        "n_docs": int(arr.size),
        "n_tokens": int(arr.sum()),
        "lengths_sha256": hashlib.sha256(arr.tobytes()).hexdigest(),
    }


def run_index(base: Int64Array, length: Int64Array) -> Int64Array:
    """Flat indices of the runs ``[base[k], base[k] + length[k])``, concatenated. O(total length).

    >>> run_index(np.array([10, 3]), np.array([2, 3])).tolist()
    [10, 11, 3, 4, 5]
    """
    total = int(length.sum())
    ends = np.cumsum(length)
    out: Int64Array = np.arange(total, dtype=np.int64) + np.repeat(base - (ends - length), length)
    return out


def copy_runs(source: npt.NDArray[Any], base: Int64Array, length: Int64Array) -> Int64Array:
    """``source[base[k] : base[k] + length[k]]`` for every ``k``, concatenated, as ``int64``. O(total length).

    Long runs (a packed row holds a few documents of hundreds of tokens) are
    copied slice by slice, which is memcpy speed plus O(1) Python work per run;
    short runs use one fancy-indexed read (:func:`run_index`), which has no
    per-run cost. Both give the same result.

    >>> copy_runs(np.arange(100, 110), np.array([2, 7]), np.array([3, 1])).tolist()
    [102, 103, 104, 107]
    """
    total = int(length.sum())
    if length.size == 0 or total < LONG_RUN * length.size:
        return source[run_index(base, length)].astype(np.int64, copy=False)
    out = np.empty(total, dtype=np.int64)
    pos = 0
    for b, n in zip(base.tolist(), length.tolist(), strict=True):
        out[pos : pos + n] = source[b : b + n]
        pos += n
    return out


@runtime_checkable
class DocumentStore(Protocol):
    """An indexable collection of BOS-inclusive token documents (what the trainer adapter reads).

    ``store[i]`` is document ``i``'s ids (``store[i][0]`` is its BOS);
    :meth:`lengths` the BOS-inclusive lengths; :meth:`gather_runs` reads many
    runs of tokens at once; :meth:`locate` / :meth:`position_of` map a document
    position to the seed-002 cursor ``(shard_index, token_offset)`` and back.
    ``refill`` is the tokenizer batch-size sequence of one pass when the store
    knows it (parquet row groups), else ``None``.
    """

    refill: tuple[int, ...] | None

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> Any: ...

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths, ``int64``."""
        ...

    def gather_runs(self, doc: Int64Array, start: Int64Array, length: Int64Array) -> Int64Array:
        """The runs ``store[doc[k]][start[k] : start[k] + length[k]]``, concatenated, as ``int64``."""
        ...

    def locate(self, position: int) -> tuple[int, int]:
        """``(shard_index, token_offset)`` of document ``position`` (``(n_shards, 0)`` past the end)."""
        ...

    def position_of(self, shard_index: int, token_offset: int) -> int:
        """The document position a cursor points at (inverse of :meth:`locate`)."""
        ...


class TokenDocuments(Sequence[npt.NDArray[np.int64]]):
    """BOS-inclusive token documents held as one flat ``int64`` array and cumulative offsets.

    Args:
        tokens: all documents' ids, concatenated (1-D integer array).
        offsets: ``n_docs + 1`` cumulative offsets, ``offsets[0] == 0``,
            ``offsets[-1] == tokens.size``, strictly increasing (no empty document).
        refill: the tokenizer batch-size sequence of one pass, if known.
        row_groups: ``(file_index, row_group_index, n_docs)`` per row group in
            reading order, if the documents came from parquet (nanochat's state dict).

    Memory: 8 bytes per token plus 8 per document. ``store[i]`` is a view.

    Raises:
        ValueError: malformed offsets, negative ids, or row groups that do not
            cover the documents.
    """

    def __init__(
        self,
        tokens: npt.ArrayLike,
        offsets: npt.ArrayLike,
        *,
        refill: Sequence[int] | None = None,
        row_groups: Sequence[tuple[int, int, int]] | None = None,
    ) -> None:
        tok = np.asarray(tokens)
        off = np.asarray(offsets)
        if tok.ndim != 1 or (
            tok.size and (tok.dtype == np.bool_ or not np.issubdtype(tok.dtype, np.integer))
        ):
            raise InputTypeError(f"tokens must be a 1-D integer array, got shape {tok.shape} dtype "
                                 f"{tok.dtype}")
        if off.ndim != 1 or off.size < 2 or not np.issubdtype(off.dtype, np.integer):
            raise InputError(f"offsets must be a 1-D integer array of n_docs + 1 >= 2 entries, got {off!r}")
        self.tokens: Int64Array = tok.astype(np.int64, copy=False)
        self.offsets: Int64Array = off.astype(np.int64, copy=False)
        if int(self.offsets[0]) != 0 or int(self.offsets[-1]) != self.tokens.size:
            raise InputError(
                f"offsets must start at 0 and end at tokens.size={self.tokens.size}, "
                f"got {int(self.offsets[0])} .. {int(self.offsets[-1])}"
            )
        steps = np.diff(self.offsets)
        if (steps < 1).any():
            i = int(np.argmax(steps < 1))
            raise InputError(
                f"document {i} is empty or offsets decrease (offsets[{i}]={int(self.offsets[i])}, "
                f"offsets[{i + 1}]={int(self.offsets[i + 1])}); every document holds its BOS"
            )
        if self.tokens.size and int(self.tokens.min()) < 0:
            raise InputError(f"token ids must be >= 0, got {int(self.tokens.min())}")
        self.refill: tuple[int, ...] | None = None
        if refill is not None:
            self.refill = tuple(check_int(f"refill[{i}]", v, 1) for i, v in enumerate(refill))
            if sum(self.refill) != len(self):
                raise InputError(
                    f"refill batch sizes sum to {sum(self.refill)}, not the {len(self)} documents"
                )
        self.row_groups: tuple[tuple[int, int, int], ...] | None = None
        if row_groups is not None:
            self.row_groups = tuple((int(f), int(g), int(n)) for f, g, n in row_groups)
            if sum(n for _, _, n in self.row_groups) != len(self):
                raise InputError("row_groups do not cover the documents")

    @classmethod
    def from_lists(
        cls, docs: Iterable[Sequence[int] | npt.NDArray[np.integer]], **kwargs: Any
    ) -> TokenDocuments:
        """Concatenate BOS-inclusive documents (lists or arrays of ids). O(tokens).

        Raises:
            ValueError: no documents, or an empty one (naming its index).
        """
        parts: list[npt.NDArray[Any]] = []
        for i, doc in enumerate(docs):
            arr = np.asarray(doc)
            if arr.ndim != 1 or arr.size == 0:
                raise InputError(
                    f"docs[{i}] must be a non-empty 1-D sequence of token ids, got shape {arr.shape}"
                )
            parts.append(arr)
        if not parts:
            raise InputError("docs is empty: give at least one document")
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        return cls(np.concatenate(parts).astype(np.int64), offsets, **kwargs)

    def __len__(self) -> int:
        return int(self.offsets.size) - 1

    def __getitem__(self, i: Any) -> Any:
        j = _document_index(i, len(self))
        return self.tokens[self.offsets[j] : self.offsets[j + 1]]

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths (``np.diff(offsets)``). O(documents)."""
        out: Int64Array = np.diff(self.offsets)
        return out

    def gather_runs(self, doc: Int64Array, start: Int64Array, length: Int64Array) -> Int64Array:
        """The runs ``self[doc[k]][start[k] : start[k] + length[k]]`` concatenated: one vectorised read.

        O(total length). Runs are not bounds-checked against their document
        (callers pass runs taken from placements).
        """
        return copy_runs(self.tokens, self.offsets[doc] + start, length)

    def locate(self, position: int) -> tuple[int, int]:
        """``(0, offsets[position])``; ``(1, 0)`` for ``position == len(self)`` (past the end).

        Raises:
            ValueError: ``position`` outside ``0 .. len(self)``.
        """
        n = len(self)
        position = check_int("position", position, 0, maximum=n)
        return (1, 0) if position == n else (0, int(self.offsets[position]))

    def position_of(self, shard_index: int, token_offset: int) -> int:
        """Inverse of :meth:`locate`.

        Raises:
            ValueError: a cursor that is not a document boundary of this store.
        """
        shard_index = check_int("shard_index", shard_index, 0)
        token_offset = check_int("token_offset", token_offset, 0)
        if shard_index == 1 and token_offset == 0:
            return len(self)
        if shard_index != 0:
            raise InputError(f"cursor ({shard_index}, {token_offset}): an in-memory store has one shard")
        return _boundary(self.offsets, token_offset, f"cursor (0, {token_offset})")

    def row_group_of(self, position: int) -> tuple[int, int]:
        """``(file_index, row_group_index)`` holding document ``position`` (needs ``row_groups``)."""
        if self.row_groups is None:
            raise InputError("these documents carry no row-group information")
        position = check_int("position", position, 0, maximum=len(self) - 1)
        seen = 0
        for f, g, n in self.row_groups:
            seen += n
            if position < seen:
                return f, g
        raise AssertionError("unreachable: row_groups cover the documents")

    def _check(self) -> None:
        """Assert the internal invariants."""
        assert self.offsets[0] == 0 and self.offsets[-1] == self.tokens.size
        assert (np.diff(self.offsets) >= 1).all()
        assert self.refill is None or sum(self.refill) == len(self)



def _document_index(i: Any, n: int) -> int:
    """``i`` as an index into ``n`` documents (negative counts from the end), checked. O(1).

    Raises:
        TypeError: ``i`` is not an int.
        IndexError: ``i`` outside ``-n..n-1``.
    """
    if not is_int(i):
        raise InputTypeError(f"document index must be an int, got {type(i).__name__} {i!r}")
    j = int(i) + n if i < 0 else int(i)
    if not 0 <= j < n:
        raise IndexError(f"document index {i} out of range for {n} documents")
    return j


def _boundary(offsets: Int64Array, token_offset: int, what: str) -> int:
    """Index ``i`` with ``offsets[i] == token_offset`` (``i < len(offsets) - 1``), else ``ValueError``."""
    i = int(np.searchsorted(offsets, token_offset, side="left"))
    if i >= offsets.size - 1 or int(offsets[i]) != token_offset:
        raise InputError(
            f"{what} is not the start of a document (token_offset must be one of the "
            f"shard's document offsets, below its {int(offsets[-1])} tokens)"
        )
    return i
