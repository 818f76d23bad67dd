"""Naive contamination counts: Python sets of n-gram windows, one window at a time (the oracle).

Deliberately a second implementation of the scan's counting, sharing nothing
with it but the definition: none of the scan's hashing (the windows
themselves are the set's keys, so it is exact), one Python step per window.
:func:`naive_matches` keys the set by tuples of ints (no numpy; the property
tests compare :func:`~packing_theory.contamination.scan_contamination` and
:func:`~packing_theory.contamination.block_hits` with it);
:func:`naive_scan` keys it by the window's bytes (a fixed-width integer
dtype), which takes about a third of the memory and time, so that
``benchmarks/bench_contamination.py`` can run it on a 100 M-token sample.

>>> refs = [[1, 2, 3, 4]]
>>> naive_matches([[9, 1, 2, 3], [5, 6, 7]], refs, 3, skip=0)
[1, 0]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["naive_gram_set", "naive_matches", "naive_scan"]


def naive_gram_set(references: Iterable[Sequence[int]], n: int) -> set[tuple[int, ...]]:
    """Every length-``n`` window of every reference item, as a set of tuples."""
    grams: set[tuple[int, ...]] = set()
    for item in references:
        seq = [int(x) for x in item]
        for j in range(len(seq) - n + 1):
            grams.add(tuple(seq[j : j + n]))
    return grams


def naive_matches(documents: Iterable[Sequence[int]], references: Iterable[Sequence[int]], n: int, *,
                  skip: int = 1, grams: set[tuple[int, ...]] | None = None) -> list[int]:
    """Per document, how many of its windows (after its first ``skip`` tokens) are reference windows."""
    ref = naive_gram_set(references, n) if grams is None else grams
    out = []
    for doc in documents:
        seq = [int(x) for x in doc][skip:]
        out.append(sum(tuple(seq[j : j + n]) in ref for j in range(len(seq) - n + 1)))
    return out


def _window_bytes(seq: Any, dtype: np.dtype[Any], what: str) -> bytes:
    arr = np.asarray(seq)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > np.iinfo(dtype).max):
        raise ValueError(f"{what}: token ids outside {dtype} (give a wider dtype)")
    return arr.astype(dtype).tobytes()


def naive_scan(documents: Iterable[Any], references: Iterable[Any], n: int, *, skip: int = 1,
               dtype: str = "<u8") -> list[int]:
    """Per document, how many of its windows (after its first ``skip`` tokens) are reference windows.

    The same answer as :func:`naive_matches`; a window is the set key as the
    ``n * itemsize`` bytes of its ids in ``dtype`` (exact: a set compares
    keys by equality). Memory: one bytes object per distinct reference window.

    >>> naive_scan([[9, 1, 2, 3], [5, 6, 7]], [[1, 2, 3, 4]], 3, skip=0, dtype="<u2")
    [1, 0]
    """
    dt = np.dtype(dtype)
    w = dt.itemsize
    span = n * w
    grams: set[bytes] = set()
    for item in references:
        b = _window_bytes(item, dt, "a reference item")
        for j in range(0, len(b) - span + 1, w):
            grams.add(b[j : j + span])
    out = []
    for doc in documents:
        b = _window_bytes(doc, dt, "a document")
        out.append(sum(b[j : j + span] in grams for j in range(skip * w, len(b) - span + 1, w)))
    return out
