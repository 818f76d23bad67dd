"""The first-fit peers on the columnar path: Axolotl's multipack sampler and NeMo's packing as numpy columns.

:class:`~packing_theory.peers.axolotl.AxolotlMultipack` and the NeMo peers
(:mod:`packing_theory.peers.nemo`) plan with these functions when their
:meth:`~packing_theory.peers.PeerPacker.batches` is asked (their pure Python
``events`` stay the oracle: ``tests/peers/test_columns.py`` compares the two
event for event).

* :func:`filter_rows` — the long-row filter (``keep``) vectorised.
* :func:`next_fit_starts` — ``allocate_sequentially`` (next fit, no row cap):
  the first item of each bin, from one ``searchsorted`` per item and a walk
  over the bins.
* :func:`grouped_first_fit` — ``pack_parallel``: first fit in the given order
  per group of rows, with the shared
  :func:`~packing_theory.peers._columns.first_fit_bins` (the numba kernel, or
  the pure Python first fit).
* :func:`multipack_batches` — the event stream of a plan: every epoch's
  arrivals and filtered rows, the rows of the emitted bins, the tails cut by
  ``truncate``, the rows of dropped batches, the Horizon.
* :func:`nemo_packs` / :func:`nemo_batches` — NeMo's histogram first fit, the
  per-length draws that fill its bins, and its event stream.

Complexity: O(N log N) per sampler draw (the first fit), O(events) numpy work.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..engine.batches import ARRIVAL, DISCARD, FILTERED, EventBatch
from ._columns import Section, assemble, first_fit_bins, horizon_batch, row_section

__all__ = ["REASONS", "DrawBins", "draw_bins", "filter_rows", "grouped_first_fit", "multipack_batches",
           "nemo_batches", "nemo_packs", "next_fit_starts"]

Int64Array = npt.NDArray[np.int64]
IntArray = npt.NDArray[np.integer[Any]]

REASONS = ("empty", "too-short", "over-capacity")
"""The filter's reasons, in the order of their codes in :func:`filter_rows`."""


class DrawBins(NamedTuple):
    """The bins of one sampler draw: ``items`` (kept positions, bin by bin) and bin ``bounds`` into them.

    Bin ``b`` holds ``items[bounds[b]:bounds[b + 1]]``.
    """

    items: Int64Array
    bounds: Int64Array

    @property
    def bins(self) -> int:
        """The number of bins."""
        return int(self.bounds.size) - 1


def filter_rows(ls: Int64Array, sequence_len: int, low: int, drop: bool) -> tuple[Int64Array, Int64Array,
                                                                                 Int64Array]:
    """(kept row ids, filtered row ids, their reason codes into :data:`REASONS`), as ``keep`` decides.

    A row shorter than ``low`` is ``"empty"`` (length 0) or ``"too-short"``;
    with ``drop`` a row over ``sequence_len`` is ``"over-capacity"``.

    >>> [a.tolist() for a in filter_rows(np.array([9, 5, 1, 0, 3]), 8, 2, True)]
    [[1, 4], [0, 2, 3], [2, 1, 0]]
    """
    short = ls < low
    gone = short | ((ls > sequence_len) if drop else np.zeros(ls.size, np.bool_))
    reason = np.where(short, np.where(ls == 0, 0, 1), 2)
    where = np.flatnonzero(gone).astype(np.int64)
    return np.flatnonzero(~gone).astype(np.int64), where, reason[where].astype(np.int64)


def next_fit_starts(lens: Int64Array, capacity: int) -> Int64Array:
    """The first item of every bin under next fit (no row cap), as ``next_fit``.

    A bin starting at item ``i`` takes the items while their sum stays within
    ``capacity``; an item larger than the capacity has a bin of its own.

    >>> next_fit_starts(np.array([5, 3, 4, 2, 2, 9, 1]), 8).tolist()
    [0, 2, 5, 6]
    """
    k = lens.size
    c = np.concatenate((np.zeros(1, np.int64), np.cumsum(lens)))
    following = np.maximum(np.searchsorted(c, c[:-1] + capacity, side="right") - 1,
                           np.arange(1, k + 1, dtype=np.int64)).tolist()
    starts: list[int] = []
    i = 0
    while i < k:
        starts.append(i)
        i = following[i]
    return np.asarray(starts, dtype=np.int64)


def grouped_first_fit(lens: Int64Array, capacity: int, group_size: int, bin_size: int,
                      compiled: bool | None) -> Int64Array:
    """The bin of each item under first fit in the given order, per group of ``group_size`` items.

    Bins are numbered in opening order across groups (a group opens its own).

    >>> grouped_first_fit(np.array([5, 3, 4, 2, 2]), 8, 2, 200, False).tolist()
    [0, 0, 1, 1, 2]
    """
    out = np.empty(lens.size, np.int64)
    base = 0
    for g in range(0, lens.size, group_size):
        bins = first_fit_bins(lens[g : g + group_size], capacity, bin_size, compiled=compiled)
        out[g : g + bins.size] = bins + base
        base += int(bins.max()) + 1
    return out


def draw_bins(sizes: Int64Array, order: Int64Array, capacity: int, *, sequential: bool, group_size: int,
              bin_size: int, compiled: bool | None) -> DrawBins:
    """The bins of the draw ``order`` (kept positions) over the kept rows' ``sizes``."""
    lens = sizes[order]
    if sequential:
        return DrawBins(order, np.append(next_fit_starts(lens, capacity), np.int64(order.size)))
    bins = grouped_first_fit(lens, capacity, group_size, bin_size, compiled)
    per = np.bincount(bins).astype(np.int64) if bins.size else np.zeros(0, np.int64)
    return DrawBins(order[np.argsort(bins, kind="stable")], np.concatenate((np.zeros(1, np.int64),
                                                                            np.cumsum(per))))


def _chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(lo, min(total, lo + size)) for lo in range(0, total, size)]


def _one(kind: int, group: str, columns: tuple[Int64Array, ...], reasons: Sequence[str] = ()) -> EventBatch:
    n = columns[0].size
    return assemble(1, [Section(np.zeros(n, np.int64), np.full(n, kind, np.uint8), {group: columns})],
                    reasons)


def _discards(occ: Int64Array, src: Int64Array, start: Int64Array, length: Int64Array,
              size: int) -> Iterator[EventBatch]:
    for lo, hi in _chunks(occ.size, size):
        yield _one(DISCARD, "discard", (occ[lo:hi], src[lo:hi], start[lo:hi], length[lo:hi]))


def multipack_batches(ls: Int64Array, kept: IntArray, gone: IntArray, reason: IntArray,
                      emitted: Sequence[IntArray], bounds: Sequence[Int64Array], *, sequence_len: int,
                      capacity: int, truncate_low: int | None, size: int) -> Iterator[EventBatch]:
    """The events of a plan, in ``events``' order, about ``size`` documents (or pieces) per batch.

    ``emitted[e]``: the documents (positions in ``ls``) of epoch ``e``'s
    emitted bins, bin by bin, with ``bounds[e]`` the bins' bounds into them;
    ``kept``: the documents the filter kept, ``gone`` and ``reason`` the others
    and their reason codes. Any integer dtype (a caller holds them ``int32``
    where they fit: :func:`~packing_theory.peers._columns.narrow`); a batch's
    columns are ``int64``, and each piece's length and crop are read from ``ls``
    batch by batch, not held. ``truncate_low``: the shortest row ``truncate``
    keeps (``None``: not ``truncate``; its cut tails are discarded).
    """
    n = ls.size
    L = sequence_len
    for e in range(len(emitted)):
        for lo, hi in _chunks(n, size):
            ids = np.arange(lo, hi, dtype=np.int64)
            yield _one(ARRIVAL, "arrival", (ids + e * n, ids, np.full(hi - lo, e, np.int64), ls[lo:hi]))
        for lo, hi in _chunks(gone.size, size):
            g = gone[lo:hi].astype(np.int64)
            yield _one(FILTERED, "filtered", (g + e * n, g, ls[g], reason[lo:hi].astype(np.int64)), REASONS)
    row = 0
    for e, (src, b) in enumerate(zip(emitted, bounds, strict=True)):
        for r0, r1 in _row_chunks(b, size):
            p0, p1 = int(b[r0]), int(b[r1])
            p_src = src[p0:p1].astype(np.int64)
            p_len = ls[p_src]
            piece_row = np.repeat(np.arange(r1 - r0, dtype=np.int64), np.diff(b[r0 : r1 + 1]))
            yield assemble(1, [row_section(capacity, r1 - r0, row + r0, np.zeros(r1 - r0, np.int64),
                                           piece_row, p_src + e * n, p_src, np.zeros(p1 - p0, np.int64),
                                           np.minimum(p_len, L), p_len > L)])
        row += b.size - 1
    if truncate_low is not None:
        cut = np.flatnonzero((ls > L) & (ls >= truncate_low)).astype(np.int64)
        for e in range(len(emitted)):
            yield from _discards(cut + e * n, cut, np.full(cut.size, L, np.int64), ls[cut] - L, size)
    for e, src in enumerate(emitted):
        shown = np.zeros(n, np.bool_)
        shown[src] = True
        dropped = kept[~shown[kept]].astype(np.int64)
        del shown
        yield from _discards(dropped + e * n, dropped, np.zeros(dropped.size, np.int64),
                             np.minimum(ls[dropped], L), size)
    yield horizon_batch(row)


def _row_chunks(bounds: Int64Array, size: int) -> list[tuple[int, int]]:
    """Runs of whole bins, about ``size`` pieces each (at least one bin)."""
    rows = bounds.size - 1
    if rows <= 0:
        return []
    cuts = np.searchsorted(bounds, np.arange(size, int(bounds[-1]), size), side="left")
    edges = np.unique(np.concatenate(([0], np.clip(cuts, 1, rows), [rows])))
    return [(int(a), int(c)) for a, c in itertools.pairwise(edges.tolist())]


def nemo_packs(seq: Int64Array, capacity: int, algorithm: str, seed: int,
               compiled: bool | None) -> tuple[Int64Array, Int64Array, Int64Array]:
    """NeMo's packs of the examples with ``seq_len`` values ``seq`` (-1: empty, in no pack).

    Returns the examples pack by pack, their ``seq_len`` and the pack of each
    (packs numbered in order). ``create_packing_strategy`` first-fits the
    ascending ``seq_len`` values (sorted descending, or shuffled by the global
    RNG seeded with ``seed``); ``fill_packing_strategy`` permutes the examples
    of each ``seq_len`` (ascending) with the same RNG and fills the packs by
    taking them from the end of their length's list.

    >>> [a.tolist() for a in nemo_packs(np.array([4, 3, 4, -1, 1]), 8, "first_fit", 0, False)]
    [[4, 1, 0, 2], [1, 3, 4, 4], [0, 0, 0, 1]]
    """
    examples = np.flatnonzero(seq >= 0).astype(np.int64)
    by_len = examples[np.argsort(seq[examples], kind="stable")]  # ascending seq_len, then example id
    lens = seq[by_len]
    rs = np.random.RandomState(seed)
    if algorithm == "first_fit_decreasing":
        items = lens[::-1].copy()
    elif algorithm == "first_fit_shuffle":
        items = lens.copy()
        rs.shuffle(items)
    else:
        items = lens
    bins = first_fit_bins(items, capacity, compiled=compiled)
    in_bins = np.argsort(bins, kind="stable")
    sizes = items[in_bins]
    values, first, counts = np.unique(lens, return_index=True, return_counts=True)
    pool = by_len.copy()
    for lo, k in zip(first.tolist(), counts.tolist(), strict=True):  # one draw per seq_len, ascending
        pool[lo : lo + k] = by_len[lo : lo + k][rs.permutation(k)]
    slot = np.argsort(sizes, kind="stable")  # pack positions grouped by seq_len, in pack order
    group = np.searchsorted(values, sizes[slot])
    rank = np.arange(slot.size, dtype=np.int64) - first[group]
    chosen = np.empty(slot.size, np.int64)
    chosen[slot] = pool[first[group] + counts[group] - 1 - rank]  # each pack takes from the end of its pool
    return chosen, sizes, bins[in_bins]


def nemo_batches(ls: Int64Array, kept: Int64Array, chosen: Int64Array, sizes: Int64Array, pack: Int64Array,
                 capacity: int, size: int) -> Iterator[EventBatch]:
    """NeMo's events: arrivals, the tails cut by ``max_seq_length``, empty examples, then pack by pack
    its row (the input positions) and the one-token label discard of each of its examples."""
    n = ls.size
    ids = np.arange(n, dtype=np.int64)
    for lo, hi in _chunks(n, size):
        yield _one(ARRIVAL, "arrival", (ids[lo:hi], ids[lo:hi], np.zeros(hi - lo, np.int64), ls[lo:hi]))
    cut = np.flatnonzero(ls > kept).astype(np.int64)
    yield from _discards(cut, cut, kept[cut], ls[cut] - kept[cut], size)
    empty = np.flatnonzero(ls == 0).astype(np.int64)
    for lo, hi in _chunks(empty.size, size):
        e = empty[lo:hi]
        yield _one(FILTERED, "filtered", (e, e, np.zeros(e.size, np.int64), np.zeros(e.size, np.int64)),
                   ("empty",))
    packs = int(pack[-1]) + 1 if pack.size else 0
    bounds = np.concatenate((np.zeros(1, np.int64), np.cumsum(np.bincount(pack, minlength=packs))))
    for r0, r1 in _row_chunks(bounds, size):
        p0, p1 = int(bounds[r0]), int(bounds[r1])
        d, s, row = chosen[p0:p1], sizes[p0:p1], pack[p0:p1] - r0
        placed = s > 0
        rows = row_section(capacity, r1 - r0, r0, np.arange(r1 - r0, dtype=np.int64), row[placed], d[placed],
                           d[placed], np.zeros(int(placed.sum()), np.int64), s[placed],
                           np.zeros(int(placed.sum()), np.bool_))
        labels = Section(row, np.full(d.size, DISCARD, np.uint8),
                         {"discard": (d, d, s, np.ones(d.size, np.int64))})
        yield assemble(r1 - r0, [rows, labels])
    yield horizon_batch(packs)
