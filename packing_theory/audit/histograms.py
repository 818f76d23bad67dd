"""Statistics of a sparse histogram ``{value: count}``: its median and its nearest-rank quantiles.

The ledgers keep crop lengths and start delays as such histograms
(:class:`~packing_theory.audit.ledger.Ledger`, :class:`~packing_theory.audit.costs.CostAccumulator`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import InputError

__all__ = ["counts_median", "nearest_rank"]


def counts_median(counts: dict[int, int]) -> float | None:
    """Median of a sparse histogram ``value -> count`` (the mean of the two middle values).

    >>> counts_median({3: 1, 10: 2}), counts_median({2: 1, 4: 1}), counts_median({})
    (10.0, 3.0, None)
    """
    total = sum(counts.values())
    if total == 0:
        return None
    keys = sorted(counts)
    cum = np.cumsum([counts[k] for k in keys])
    lo = keys[int(np.searchsorted(cum, (total - 1) // 2, side="right"))]
    hi = keys[int(np.searchsorted(cum, total // 2, side="right"))]
    return (lo + hi) / 2


def nearest_rank(counts: dict[int, int] | npt.NDArray[np.int64]
                 | tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]], q: float) -> int | None:
    """The nearest-rank ``q``-quantile of a histogram (``None`` if empty): the smallest value whose
    cumulative count reaches ``ceil(q * total)``.

    ``counts``: ``{value: count}``, a dense array of the counts of ``0, 1, 2, ...``, or a pair
    ``(values, counts)`` of arrays with the values sorted (O(len) numpy work, no sort).

    >>> nearest_rank({0: 98, 5: 1, 9: 1}, 0.99), nearest_rank({0: 98, 5: 1, 9: 1}, 0.5)
    (5, 0)
    >>> nearest_rank(np.array([98, 0, 0, 0, 0, 1, 0, 0, 0, 1]), 0.99)
    5
    >>> nearest_rank((np.array([0, 5, 9]), np.array([98, 1, 1])), 0.99)
    5
    """
    if not 0 < q <= 1:
        raise InputError(f"q must be in (0, 1], got {q!r}")
    if isinstance(counts, np.ndarray | tuple):
        values, n = (np.arange(counts.size), counts) if isinstance(counts, np.ndarray) else counts
        cum = np.cumsum(n, dtype=np.int64)
        if not cum.size or int(cum[-1]) == 0:
            return None
        return int(values[int(np.searchsorted(cum, -(-q * int(cum[-1]) // 1), side="left"))])
    total = sum(counts.values())
    if total == 0:
        return None
    rank = -(-q * total // 1)  # ceil(q * total)
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return value
    return max(counts)  # pragma: no cover - unreachable
