"""Naive contamination counts: Python sets of n-gram tuples, one window at a time (the oracle).

Deliberately a second implementation of the scan's counting, sharing nothing
with it but the definition: no hashing at all (the windows themselves are
the set's keys, so it is exact), no numpy, one Python step per window. The
property tests compare :func:`~packing_theory.contamination.scan_contamination`
and :func:`~packing_theory.contamination.block_hits` with it, and
``benchmarks/bench_contamination.py`` measures the vectorised scan against it.

>>> refs = [[1, 2, 3, 4]]
>>> naive_matches([[9, 1, 2, 3], [5, 6, 7]], refs, 3, skip=0)
[1, 0]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["naive_gram_set", "naive_matches"]


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
