"""Segment-id helpers shared by the records and the attention masks (numpy only).

Pure functions of a segment-id array (seed 004's ``c``, 0 = padding) or of a
piece table's runs: the dense document mask, ``cu_seqlens``, and the
run expansions the records use.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError

__all__ = ["cu_seqlens_from_segments", "doc_mask_from_segments"]

Int64Array = npt.NDArray[np.int64]


def doc_mask_from_segments(segment_ids: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Seed 004's ``M^doc`` for one row of segment ids: ``0`` if ``c_t == c_s != 0`` and ``s <= t``. O(R²).

    Padding rows are ``-inf`` everywhere, as defined (an attention helper must
    unmask something there to keep a softmax finite; see the torch adapter).

    >>> doc_mask_from_segments([1, 1, 2, 0]).tolist()
    [[0.0, -inf, -inf, -inf], [0.0, 0.0, -inf, -inf], [-inf, -inf, 0.0, -inf], [-inf, -inf, -inf, -inf]]
    """
    c = np.asarray(segment_ids)
    if c.ndim != 1:
        raise InputError(f"segment_ids must be 1-D, got shape {c.shape}")
    n = c.size
    ok = (c[:, None] == c[None, :]) & (c[:, None] != 0) & np.tri(n, dtype=bool)
    return np.where(ok, 0.0, -np.inf)


def cu_seqlens_from_segments(segment_ids: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """Cumulative lengths of the runs of equal segment ids, per row, over the flattened ``(n, L)`` array.

    A run ends where the id changes or a row ends; padding runs (id 0) count as sequences.

    >>> cu_seqlens_from_segments([[1, 1, 2, 0], [1, 2, 2, 2]]).tolist()
    [0, 2, 3, 4, 5, 8]
    """
    c = np.asarray(segment_ids)
    if c.ndim == 1:
        c = c[None, :]
    if c.ndim != 2 or c.shape[1] == 0:
        raise InputError(f"segment_ids must be (n, L) with L >= 1, got shape {c.shape}")
    change = np.ones(c.shape, dtype=bool)
    change[:, 1:] = c[:, 1:] != c[:, :-1]
    out: npt.NDArray[np.int32] = np.r_[np.flatnonzero(change.ravel()), c.size].astype(np.int32)
    return out


def _expand(values: Int64Array, length: Int64Array, dtype: Any) -> npt.NDArray[Any]:
    """``np.repeat(values, length)`` in ``dtype`` (one C loop; faster than slice fills here)."""
    return np.repeat(values.astype(dtype), length)


_ARANGE: Int64Array = np.arange(0, dtype=np.int64)


def _arange(n: int) -> Int64Array:
    """A read-only view of ``arange(n)``, from a cached array grown on demand (no page faults per batch)."""
    global _ARANGE
    if _ARANGE.size < n:
        _ARANGE = np.arange(max(n, 2 * _ARANGE.size), dtype=np.int64)
        _ARANGE.flags.writeable = False
    return _ARANGE[:n]


def _ramps(first: Int64Array, length: Int64Array) -> Int64Array:
    """Concatenated ramps ``first[k], first[k] + 1, ..., first[k] + length[k] - 1`` (``int64``)."""
    total = int(length.sum())
    ends = np.cumsum(length)
    out: Int64Array = np.repeat(first - (ends - length), length)
    np.add(out, _arange(total), out=out)
    return out


def _seq_lengths(cu: npt.NDArray[np.int32], n_rows: int, width: int) -> list[list[int]]:
    if n_rows == 0:
        return []
    lengths = np.diff(cu)
    starts = cu[:-1]
    cuts = np.searchsorted(starts, np.arange(1, n_rows) * width)
    return [part.tolist() for part in np.split(lengths, cuts)]
