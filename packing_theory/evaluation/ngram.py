"""A numpy add-k n-gram model: the reference :class:`~packing_theory.evaluation.protocol.NllFn`.

Job: give the evaluation protocol a real, deterministic, CPU-only model, so
the whole pipeline — fit on a packed training stream, score windows,
bootstrap — runs and is tested without torch. Imports: numpy and this
package's protocol module.

The model
---------
``p(w | c) = (count(c, w) + k) / (count(c) + k V)`` over a vocabulary of ``V``
ids, where the context ``c`` is the ``order − 1`` tokens before ``w`` *within
the same row* (as a transformer sees only its row): positions before the row
start are a padding symbol ``V``. Fitting counts every target of every row
(row position 0 is input only, as in training). When scoring, a context token
from another segment (``segment_ids`` differ, or 0 = padding) is replaced by
the padding symbol, so contexts never cross documents when a document mask is
given. The model is causal and row-independent by construction, so right
padding never changes a scored value.

Storage: sorted ``int64`` n-gram keys ``((c_1 (V+1) + c_2) (V+1) + ...) (V+1) + w``
with counts, and the same for contexts; ``(V + 1) ** order`` must fit in
``int64`` (order 4 at ``V = 8192``). Lookup is ``numpy.searchsorted``:
O(log N) per target.

>>> m = NGramModel(vocab_size=4, order=2, k=0.5).fit([[0, 1, 2, 1, 2], [0, 1, 2]])
>>> m.targets_fitted, m.n_ngrams
(6, 3)
>>> nll = m.nll(np.array([[0, 1, 2]]), None)
>>> [round(float(v), 4) for v in nll[0]]      # p(1|0) = 2.5/4, p(2|1) = 3.5/5
[0.47, 0.3567]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct
from ..errors import InputError, InputTypeError

__all__ = ["NGramModel"]

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

_CHUNK_ROWS = 256


class NGramModel:
    """Add-``k`` n-gram model over ids ``0 .. vocab_size - 1`` (see the module doc).

    Args:
        vocab_size: ``V``.
        order: ``n`` (1 = unigram).
        k: add-``k`` smoothing constant, ``> 0``.

    Use :meth:`fit` on rows (e.g. :meth:`packing_theory.Packer.token_rows`),
    then pass the model itself (or :meth:`nll`) as the ``nll_fn`` of
    :func:`~packing_theory.evaluation.metrics.score`.
    """

    def __init__(self, vocab_size: int, order: int = 3, k: float = 0.1) -> None:
        self.vocab_size = check_int("vocab_size", vocab_size, 1)
        self.order = check_int("order", order, 1)
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not k > 0 or k == float("inf"):
            raise InputError(f"k must be a finite number > 0, got {k!r}")
        self.k = float(k)
        self.base = self.vocab_size + 1
        if self.base ** self.order >= 2 ** 63:
            raise InputError(f"order={self.order} is too large for vocab_size={self.vocab_size}: "
                             f"(vocab_size + 1) ** order must fit in int64")
        self.pad = self.vocab_size
        self._keys = np.zeros(0, dtype=np.int64)
        self._counts = np.zeros(0, dtype=np.int64)
        self._ctx_keys = np.zeros(0, dtype=np.int64)
        self._ctx_counts = np.zeros(0, dtype=np.int64)
        self.targets_fitted = 0

    # ------------------------------------------------------------------ fitting

    def _row_blocks(self, rows: Iterable[Sequence[int]] | npt.NDArray[Any]) -> Iterator[Int64Array]:
        if isinstance(rows, np.ndarray):
            if rows.ndim != 2:
                raise InputError(f"rows as an array must be 2-D (rows, positions), got shape {rows.shape}")
            for i in range(0, rows.shape[0], _CHUNK_ROWS):
                yield self._ids(rows[i : i + _CHUNK_ROWS], "rows")
            return
        if isinstance(rows, (str, bytes)):
            raise InputTypeError("rows must be an iterable of token-id rows, got a string")
        block: list[Any] = []
        width = -1
        for i, row in enumerate(rows):
            r = np.asarray(row)
            if r.ndim != 1:
                raise InputError(f"rows[{i}] must be 1-D, got shape {r.shape}")
            if r.size == 0:
                continue  # no target; an empty list has no integer dtype to check
            if r.size != width or len(block) == _CHUNK_ROWS:
                if block:
                    yield self._ids(np.stack(block), "rows")
                block, width = [], int(r.size)
            block.append(r)
        if block:
            yield self._ids(np.stack(block), "rows")

    def _ids(self, arr: npt.NDArray[Any], name: str) -> Int64Array:
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise InputTypeError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
        out = arr.astype(np.int64, copy=False)
        if out.size and (out.min() < 0 or out.max() >= self.vocab_size):
            bad = out[(out < 0) | (out >= self.vocab_size)][0]
            raise InputError(f"{name} holds token id {int(bad)} outside 0..{self.vocab_size - 1}")
        return out

    def _keys_of(self, X: Int64Array,
                 seg: npt.NDArray[np.int32] | None = None) -> tuple[Int64Array, Int64Array]:
        """Context keys and n-gram keys of every target ``X[:, 1:]`` (shape ``(r, m - 1)`` each)."""
        r, m = X.shape
        n1 = self.order - 1
        ctx = np.zeros((r, m - 1), dtype=np.int64)
        if n1:
            Xp = np.concatenate([np.full((r, n1), self.pad, dtype=np.int64), X], axis=1)
            if seg is not None:
                Sp = np.concatenate([np.full((r, n1), -1, dtype=np.int64), seg.astype(np.int64)], axis=1)
                tseg = seg[:, 1:].astype(np.int64)
            for i in range(n1):
                tok = Xp[:, 1 + i : m + i]
                if seg is not None:
                    same = (Sp[:, 1 + i : m + i] == tseg) & (tseg != 0)
                    tok = np.where(same, tok, self.pad)
                ctx = ctx * self.base + tok
        return ctx, ctx * self.base + X[:, 1:]

    def fit(self, rows: Iterable[Sequence[int]] | npt.NDArray[Any]) -> NGramModel:
        """Count every target of every row (a 2-D array or an iterable of 1-D rows); returns ``self``.

        Fitting again adds to the counts. Complexity: O(T log T) for ``T`` targets
        (numpy sorting), memory O(distinct n-grams + one block of rows).

        Raises:
            TypeError / ValueError: non-integer rows, ids outside the vocabulary, rows not 1-D.
        """
        uniq: list[Int64Array] = [self._keys]
        cnts: list[Int64Array] = [self._counts]
        added = 0
        for X in self._row_blocks(rows):
            if X.shape[1] < 2:
                continue
            _, keys = self._keys_of(X)
            u, c = np.unique(keys.ravel(), return_counts=True)
            uniq.append(u)
            cnts.append(c.astype(np.int64))
            added += keys.size
        if added:
            allk = np.concatenate(uniq)
            allc = np.concatenate(cnts)
            self._keys, inv = np.unique(allk, return_inverse=True)
            self._counts = np.bincount(inv.ravel(), weights=allc, minlength=self._keys.size).astype(np.int64)
            ctx = self._keys // self.base
            self._ctx_keys, cinv = np.unique(ctx, return_inverse=True)
            self._ctx_counts = np.bincount(cinv.ravel(), weights=self._counts,
                                           minlength=self._ctx_keys.size).astype(np.int64)
            self.targets_fitted += added
        return self

    # ------------------------------------------------------------------ scoring

    @property
    def n_ngrams(self) -> int:
        """Distinct n-grams seen."""
        return int(self._keys.size)

    @staticmethod
    def _lookup(keys: Int64Array, counts: Int64Array, q: Int64Array) -> Int64Array:
        if keys.size == 0:
            return np.zeros(q.shape, dtype=np.int64)
        pos = np.searchsorted(keys, q)
        pos_c = np.minimum(pos, keys.size - 1)
        out: Int64Array = np.where(keys[pos_c] == q, counts[pos_c], 0)
        return out

    def nll(self, input_ids: npt.NDArray[Any], segment_ids: npt.NDArray[np.int32] | None = None,
            /) -> Float64Array:
        """Per-target NLL ``(b, n - 1)`` in nats: the :class:`~packing_theory.evaluation.protocol.NllFn` call.

        Raises:
            ValueError: ``input_ids`` not 2-D with at least 2 columns, an id
                outside the vocabulary, or ``segment_ids`` of another shape.
        """
        X = np.asarray(input_ids)
        if X.ndim != 2 or X.shape[1] < 2:
            raise InputError(f"input_ids must have shape (b, n) with n >= 2, got {X.shape}")
        X = self._ids(X, "input_ids")
        seg = None
        if segment_ids is not None:
            seg = np.asarray(segment_ids)
            if seg.shape != X.shape:
                raise InputError(f"segment_ids must have the shape of input_ids {X.shape}, got {seg.shape}")
        ctx, keys = self._keys_of(X, seg)
        c = self._lookup(self._keys, self._counts, keys)
        cc = self._lookup(self._ctx_keys, self._ctx_counts, ctx)
        out: Float64Array = np.log(cc + self.k * self.vocab_size) - np.log(c + self.k)
        return out

    __call__ = nll

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {"model": "add-k n-gram", "order": self.order, "k": self.k, "vocab_size": self.vocab_size,
                "targets_fitted": self.targets_fitted, "ngrams": self.n_ngrams,
                "contexts": int(self._ctx_keys.size)}

    def _check(self) -> None:
        """Assert the internal invariants (sorted unique keys, positive counts, totals)."""
        for keys, counts in ((self._keys, self._counts), (self._ctx_keys, self._ctx_counts)):
            assert keys.shape == counts.shape
            assert (np.diff(keys) > 0).all() and (counts > 0).all()
        assert int(self._counts.sum()) == int(self._ctx_counts.sum()) == self.targets_fitted
        assert (self._keys % self.base < self.vocab_size).all()
        assert np.array_equal(distinct(self._keys // self.base), self._ctx_keys)
