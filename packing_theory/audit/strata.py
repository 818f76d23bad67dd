"""Length strata: BOS-inclusive original-length classes (seed 000 §4, §5.1).

Strata use BOS-inclusive original lengths and boundaries ``b``; stratum ``k``
holds ``b[k-1] < L <= b[k]``. The paper's audit boundaries are
:data:`STRATA_BOUNDARIES` ``= (32, 128, 512, 1024, 2049, 4096, 8192, 16384)``
(``1–32, 33–128, …, >16384``; seed 000 §5.1 quotes 33–128, 513–1024,
1025–2049); its evaluation diagnostic uses
:data:`EVALUATION_BOUNDARIES` ``= (128, …, 16384)`` (§4). Every stratum
lookup in the library goes through :func:`stratum_index`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError

__all__ = [
    "EVALUATION_BOUNDARIES", "STRATA_BOUNDARIES", "check_boundaries", "stratum_index", "stratum_labels",
]

Int64Array = npt.NDArray[np.int64]

STRATA_BOUNDARIES: tuple[int, ...] = (32, 128, 512, 1024, 2049, 4096, 8192, 16384)
"""The paper's BOS-inclusive length boundaries; stratum k is ``(b[k-1], b[k]]``, the last ``> 16384``."""

EVALUATION_BOUNDARIES: tuple[int, ...] = (128, 512, 1024, 2049, 4096, 8192, 16384)
"""The boundaries of seed 000 §4's evaluation diagnostic (eight strata)."""

def check_boundaries(boundaries: Sequence[int]) -> tuple[int, ...]:
    b = tuple(boundaries)
    if not b:
        raise InputError("boundaries must be a non-empty increasing sequence of positive ints, got ()")
    for i, v in enumerate(b):
        check_int(f"boundaries[{i}]", v, 1)
    if any(x >= y for x, y in pairwise(b)):
        raise InputError(f"boundaries must be strictly increasing, got {b}")
    return tuple(int(v) for v in b)


def stratum_labels(boundaries: Sequence[int] = STRATA_BOUNDARIES) -> list[str]:
    """Human labels of the strata defined by ``boundaries``.

    >>> stratum_labels((32, 128))
    ['1–32', '33–128', '>128']
    """
    b = check_boundaries(boundaries)
    labels = []
    lo = 1
    for hi in b:
        labels.append(f"{lo}–{hi}")
        lo = hi + 1
    labels.append(f">{b[-1]}")
    return labels


def stratum_index(lengths: npt.ArrayLike, boundaries: Sequence[int] = STRATA_BOUNDARIES) -> Int64Array:
    """Stratum of each BOS-inclusive length (vectorised, O(n log k)).

    >>> stratum_index([1, 32, 33, 2049, 2050, 16385]).tolist()
    [0, 0, 1, 4, 5, 8]
    """
    b = np.asarray(check_boundaries(boundaries), dtype=np.int64)
    return np.searchsorted(b, np.asarray(lengths, dtype=np.int64), side="left").astype(np.int64, copy=False)
