"""Seed-002 token shards as one document collection, with the ``(shard_index, token_offset)`` cursor.

Seed 002 §10 makes a resume position "one integer pair": the shard and the
token offset inside it. A replay's refill cursor counts *documents taken*
(:class:`~packing_theory.engine.refill.CursorState` ``.position``). With
document-boundary shards the two are the same information:

* ``locate(position)`` — the shard holding document ``position`` (in reading
  order over all shards) and that document's first token offset there;
  ``(n_shards, 0)`` for the position just past the last document;
* ``position_of(shard_index, token_offset)`` — back; the offset must be a
  document start (a cursor inside a document is refused, never rounded).

Documents are read from the memory-mapped shards (nothing is copied), so
several passes over a corpus of any size need only the ``int64`` lengths
(8 bytes per document) in memory.

>>> import os, tempfile
>>> from packing_theory.corpus import write_shard
>>> d = tempfile.mkdtemp()
>>> write_shard(os.path.join(d, "0.bin"), [[1, 5, 6], [1, 7]], vocab=8)
>>> write_shard(os.path.join(d, "1.bin"), [[1, 2, 3, 4]], vocab=8)
>>> docs = ShardDocuments([os.path.join(d, "0.bin"), os.path.join(d, "1.bin")])
>>> len(docs), docs.lengths().tolist(), docs[2].tolist()
(3, [3, 2, 4], [1, 2, 3, 4])
>>> [docs.locate(p) for p in range(4)]
[(0, 0), (0, 3), (1, 0), (2, 0)]
>>> docs.position_of(0, 3), docs.position_of(2, 0)
(1, 3)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct
from ..errors import InputError
from .documents import _boundary, _document_index, copy_runs, run_index
from .shards import PathLike, Shard, read_shard

__all__ = ["ShardDocuments"]

Int64Array = npt.NDArray[np.int64]


class ShardDocuments(Sequence[npt.NDArray[np.uint16]]):
    """The documents of several seed-002 shards, in order, read by global document index.

    Args:
        paths: shard files in reading order (one path or several).
        check_ids: also check every id ``< vocab`` on opening (O(tokens)).
        refill: the tokenizer batch-size sequence of one pass, if known.

    Memory: the memmaps plus 8 bytes per document (the lengths) and per shard.

    Raises:
        ValueError: no paths, a corrupt shard, no documents, or shards with
            different vocabularies.
    """

    def __init__(
        self,
        paths: PathLike | Iterable[PathLike],
        *,
        check_ids: bool = False,
        refill: Sequence[int] | None = None,
    ) -> None:
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.shards: tuple[Shard, ...] = tuple(read_shard(p, check_ids=check_ids) for p in paths)
        if not self.shards:
            raise InputError("paths is empty: give at least one shard file")
        vocabs = {s.vocab for s in self.shards}
        if len(vocabs) > 1:
            raise InputError(f"shards have different vocabularies {sorted(vocabs)}: they are not one corpus")
        self.vocab = self.shards[0].vocab
        counts = np.array([s.n_docs for s in self.shards], dtype=np.int64)
        #: first global document index of each shard, plus the total at the end
        self.doc_starts: Int64Array = np.zeros(len(self.shards) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.doc_starts[1:])
        if int(self.doc_starts[-1]) == 0:
            raise InputError(f"shards {[s.path for s in self.shards]!r} hold no documents")
        self._offsets = [s.offsets.astype(np.int64) for s in self.shards]
        self.refill: tuple[int, ...] | None = None
        if refill is not None:
            self.refill = tuple(check_int(f"refill[{i}]", v, 1) for i, v in enumerate(refill))
            if sum(self.refill) != len(self):
                raise InputError(
                    f"refill batch sizes sum to {sum(self.refill)}, not the {len(self)} documents"
                )

    def __len__(self) -> int:
        return int(self.doc_starts[-1])

    def _split(self, i: int) -> tuple[int, int]:
        k = int(np.searchsorted(self.doc_starts, i, side="right")) - 1
        return k, i - int(self.doc_starts[k])

    def __getitem__(self, i: Any) -> Any:
        k, local = self._split(_document_index(i, len(self)))
        return self.shards[k].document(local)

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths of every document, in order. O(documents)."""
        return np.concatenate([np.diff(o) for o in self._offsets])

    def gather_runs(self, doc: Int64Array, start: Int64Array, length: Int64Array) -> Int64Array:
        """The runs ``self[doc[k]][start[k] : start[k] + length[k]]`` concatenated, as ``int64``.

        One vectorised read per shard touched. O(total length).
        """
        shard = np.searchsorted(self.doc_starts, doc, side="right") - 1
        first = int(shard[0]) if shard.size else 0
        if shard.size and (shard == first).all():  # the common case: one shard
            base = self._offsets[first][doc - self.doc_starts[first]] + start
            return copy_runs(self.shards[first].ids, base, length)
        out = np.empty(int(length.sum()), dtype=np.int64)
        ends = np.cumsum(length)
        for k in distinct(shard).tolist():
            sel = np.flatnonzero(shard == k)
            base = self._offsets[k][doc[sel] - self.doc_starts[k]] + start[sel]
            part = length[sel]
            out[run_index(ends[sel] - part, part)] = copy_runs(self.shards[k].ids, base, part)
        return out

    def locate(self, position: int) -> tuple[int, int]:
        """``(shard_index, token_offset)`` of document ``position``; ``(n_shards, 0)`` past the end.

        O(log shards).

        Raises:
            ValueError: ``position`` outside ``0 .. len(self)``.
        """
        position = check_int("position", position, 0, maximum=len(self))
        if position == len(self):
            return len(self.shards), 0
        k, local = self._split(position)
        return k, int(self._offsets[k][local])

    def position_of(self, shard_index: int, token_offset: int) -> int:
        """The global document position of a cursor (inverse of :meth:`locate`). O(log documents).

        Raises:
            ValueError: a shard index out of range, or an offset that is not a
                document start of that shard.
        """
        n = len(self.shards)
        shard_index = check_int("shard_index", shard_index, 0, maximum=n)
        token_offset = check_int("token_offset", token_offset, 0)
        if shard_index == n:
            if token_offset:
                raise InputError(
                    f"cursor ({n}, {token_offset}): past the last shard only (n_shards, 0) is valid"
                )
            return len(self)
        local = _boundary(self._offsets[shard_index], token_offset, f"cursor ({shard_index}, {token_offset})")
        return int(self.doc_starts[shard_index]) + local

    def _check(self) -> None:
        """Assert the internal invariants."""
        assert self.doc_starts[0] == 0
        assert (np.diff(self.doc_starts) == [s.n_docs for s in self.shards]).all()
        assert all(int(o[-1]) == s.n_tokens for o, s in zip(self._offsets, self.shards, strict=True))
