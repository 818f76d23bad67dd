# mypy: disallow-untyped-defs=False, disallow-untyped-calls=False, disallow-untyped-decorators=False
# mypy: disallow-incomplete-defs=False
"""The numba kernel of LLM Foundry's ``BinPackCollator`` replay (``foundry-binpack``'s columnar path).

Typing boundary: numba's ``@njit`` is untyped, so this one module relaxes
mypy's untyped-definition checks (the comments above); its only caller,
:class:`packing_theory.peers.foundry.FoundryBinPack`, is fully typed and passes
plain numpy arrays. Nothing here is public API; the pure Python
:func:`packing_theory.peers.foundry.first_fit_bin_packing` is the oracle the
differential tests compare this kernel with.

What it replays, collate call after collate call: the examples (sizes
``min(length, L)``) sorted longest first (stable); each goes into the first
bin of the bin list whose size stays ``<= L`` — the leftover bins of earlier
calls first, then the bins this call touched, in the order they were
appended (a bin that receives an example moves to the end) — or into a new
bin, except that once the remaining examples are just enough to reach
``num_bins`` bins each gets its own; then the bins ranked by size (stable),
the ``num_bins`` largest emitted, and of the rest at most ``keep`` kept (the
others discarded).

Data structures (the same answers as the framework's linear scans):

* the leftover bins of earlier calls are sorted by size, largest first, so
  the first one that fits an example of size ``s`` is the *largest* size
  ``<= L - s``, earliest first: a segment tree of counts over the sizes
  ``0..L`` and, per size, a doubly linked FIFO of the bins of that size;
* the bins a call touched (moved or new) form its tail, in append order: a
  segment tree of minimum sizes over the call's append slots gives the first
  one that fits;
* at the end of a call the tail's bins join their sizes' FIFOs in tail order
  (the stable ranking puts them after the leftovers of equal size), the
  largest bins leave from the FIFO heads, discards from the smallest sizes'
  tails.

Bins and pieces are recycled through free stacks, so memory follows the live
bins (with ``keep`` unbounded, the leftover list the framework keeps).
Complexity: O(log L + log per) per example, O(log L + pieces) per emitted or
discarded bin.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["held_pieces", "new_state", "pack_calls"]

# meta: scalar state
LIVE_BINS, FRESH_BINS, FREE_BINS, FRESH_PIECES, FREE_PIECES, LIVE_PIECES = range(6)
# rows of the bin table
SIZE, FIRST, LAST, PREV, NEXT, FREE = range(6)
# rows of the piece table
OCC, PNEXT, PFREE = range(3)
_INF = 1 << 62


def new_state(capacity: int, per_call: int, bins: int, pieces: int):
    """Empty state for row width ``capacity`` and calls of up to ``per_call`` examples.

    Returns ``(meta, bins, pieces, tree, q_head, q_tail, tail_tree, tail_bin)``;
    the bin and piece tables start with room for ``bins`` and ``pieces``
    (:func:`pack_calls` needs room for its documents beyond the fresh counts).
    """
    leaves = 1
    while leaves < capacity + 1:
        leaves *= 2
    tail_leaves = 1
    while tail_leaves < per_call:
        tail_leaves *= 2
    return (np.zeros(6, np.int64), np.zeros((6, max(bins, 1)), np.int64),
            np.zeros((3, max(pieces, 1)), np.int64), np.zeros(2 * leaves, np.int64),
            np.full(capacity + 1, -1, np.int64), np.full(capacity + 1, -1, np.int64),
            np.full(2 * tail_leaves, _INF, np.int64), np.zeros(tail_leaves, np.int64))


@njit(cache=True)
def _count(tree, key, delta):  # pragma: no cover - compiled
    i = key + tree.size // 2
    while i >= 1:
        tree[i] += delta
        i //= 2


@njit(cache=True)
def _largest_le(tree, t):  # pragma: no cover - compiled
    """The largest key ``<= t`` with a non-zero count, or -1."""
    leaves = tree.size // 2
    if t < 0:
        return -1
    if t >= leaves:
        t = leaves - 1
    i = t + leaves
    if tree[i] > 0:
        return t
    while i > 1:
        if i % 2 == 1 and tree[i - 1] > 0:
            i -= 1
            while i < leaves:
                i = 2 * i + 1 if tree[2 * i + 1] > 0 else 2 * i
            return i - leaves
        i //= 2
    return -1


@njit(cache=True)
def _smallest(tree):  # pragma: no cover - compiled
    """The smallest key with a non-zero count, or -1."""
    leaves = tree.size // 2
    if tree[1] == 0:
        return -1
    i = 1
    while i < leaves:
        i = 2 * i if tree[2 * i] > 0 else 2 * i + 1
    return i - leaves


@njit(cache=True)
def _tail_set(tail_tree, slot, value):  # pragma: no cover - compiled
    leaves = tail_tree.size // 2
    i = slot + leaves
    tail_tree[i] = value
    i //= 2
    while i >= 1:
        a = tail_tree[2 * i]
        c = tail_tree[2 * i + 1]
        tail_tree[i] = a if a < c else c
        i //= 2


@njit(cache=True)
def _tail_first_le(tail_tree, t):  # pragma: no cover - compiled
    """The first append slot whose bin's size is ``<= t``, or -1."""
    leaves = tail_tree.size // 2
    if tail_tree[1] > t:
        return -1
    i = 1
    while i < leaves:
        i = 2 * i if tail_tree[2 * i] <= t else 2 * i + 1
    return i - leaves


@njit(cache=True)
def _push_back(bins, q_head, q_tail, tree, b):  # pragma: no cover - compiled
    s = bins[SIZE, b]
    bins[PREV, b] = q_tail[s]
    bins[NEXT, b] = -1
    if q_tail[s] < 0:
        q_head[s] = b
    else:
        bins[NEXT, q_tail[s]] = b
    q_tail[s] = b
    _count(tree, s, 1)


@njit(cache=True)
def _unlink(bins, q_head, q_tail, tree, b):  # pragma: no cover - compiled
    s = bins[SIZE, b]
    p = bins[PREV, b]
    nx = bins[NEXT, b]
    if p < 0:
        q_head[s] = nx
    else:
        bins[NEXT, p] = nx
    if nx < 0:
        q_tail[s] = p
    else:
        bins[PREV, nx] = p
    _count(tree, s, -1)


@njit(cache=True)
def _new_bin(meta, bins):  # pragma: no cover - compiled
    if meta[FREE_BINS] > 0:
        meta[FREE_BINS] -= 1
        b = bins[FREE, meta[FREE_BINS]]
    else:
        b = meta[FRESH_BINS]
        meta[FRESH_BINS] += 1
    bins[SIZE, b] = 0
    bins[FIRST, b] = -1
    bins[LAST, b] = -1
    return b


@njit(cache=True)
def _append(meta, bins, pieces, b, occurrence, size):  # pragma: no cover - compiled
    if meta[FREE_PIECES] > 0:
        meta[FREE_PIECES] -= 1
        p = pieces[PFREE, meta[FREE_PIECES]]
    else:
        p = meta[FRESH_PIECES]
        meta[FRESH_PIECES] += 1
    meta[LIVE_PIECES] += 1
    pieces[OCC, p] = occurrence
    pieces[PNEXT, p] = -1
    if bins[FIRST, b] < 0:
        bins[FIRST, b] = p
    else:
        pieces[PNEXT, bins[LAST, b]] = p
    bins[LAST, b] = p
    bins[SIZE, b] += size


@njit(cache=True)
def _release(meta, bins, pieces, b, out, k):  # pragma: no cover - compiled
    """Write bin ``b``'s occurrences to ``out[k:]`` in order, free the bin and its pieces; the new ``k``."""
    p = bins[FIRST, b]
    while p >= 0:
        out[k] = pieces[OCC, p]
        k += 1
        nx = pieces[PNEXT, p]
        pieces[PFREE, meta[FREE_PIECES]] = p
        meta[FREE_PIECES] += 1
        meta[LIVE_PIECES] -= 1
        p = nx
    bins[FREE, meta[FREE_BINS]] = b
    meta[FREE_BINS] += 1
    return k


@njit(cache=True)
def _first_fit(meta, bins, q_head, q_tail, tree, tail_tree, tail_bin, room):  # pragma: no cover - compiled
    """The bin that first fits ``room`` tokens, taken out of its structure, or -1."""
    size = _largest_le(tree, room)
    if size >= 0:
        b = q_head[size]
        _unlink(bins, q_head, q_tail, tree, b)
        meta[LIVE_BINS] -= 1
        return b, 0
    slot = _tail_first_le(tail_tree, room)
    if slot >= 0:
        _tail_set(tail_tree, slot, _INF)
        return tail_bin[slot], -1
    return -1, 0


@njit(cache=True)
def _fill(values, c0, m, capacity, num_bins, meta, bins, pieces, q_head, q_tail, tree, tail_tree,
          tail_bin):  # pragma: no cover - compiled
    """One collate call's first-fit-decreasing of documents ``c0 .. c0 + m - 1``; the tail slots used."""
    sizes = np.minimum(values[c0:c0 + m], capacity)
    order = np.argsort(-sizes, kind="mergesort")
    alive = 0  # the tail's bins
    all_new = m < num_bins - meta[LIVE_BINS]
    for k in range(m):
        i = order[k]
        s = sizes[i]
        b = -1
        if not all_new and m - k != max(0, num_bins - meta[LIVE_BINS] - alive):
            b, moved = _first_fit(meta, bins, q_head, q_tail, tree, tail_tree, tail_bin, capacity - s)
            alive += moved
        if b < 0:
            b = _new_bin(meta, bins)
        _append(meta, bins, pieces, b, c0 + i, s)
        tail_bin[k] = b
        _tail_set(tail_tree, k, bins[SIZE, b])
        alive += 1
    return m


@njit(cache=True)
def pack_calls(values, lo, hi, per, capacity, num_bins, keep, meta, bins, pieces, tree, q_head, q_tail,
               tail_tree, tail_bin):  # pragma: no cover - compiled
    """The collate calls of documents ``lo .. hi - 1`` (``per`` a call, the last maybe fewer).

    ``keep < 0``: every leftover bin is kept. The bin and piece tables must
    have room for ``hi - lo`` more of each beyond their fresh counts.
    Returns ``(rows, row_window, piece_row, piece_occurrence, discard_occurrence,
    discard_window)``: the rows emitted (each with its call, counted from 0 at
    ``lo``), their pieces row by row, and the pieces of the discarded leftover
    bins in discard order.
    """
    calls = (hi - lo + per - 1) // per
    room = meta[LIVE_PIECES] + (hi - lo)
    row_window = np.empty(min(calls * num_bins, meta[LIVE_BINS] + (hi - lo)), np.int64)
    piece_row = np.empty(room, np.int64)
    piece_occ = np.empty(room, np.int64)
    disc_occ = np.empty(room, np.int64)
    disc_window = np.empty(room, np.int64)
    rows = 0
    placed = 0
    dropped = 0
    for w in range(calls):
        c0 = lo + w * per
        used = _fill(values, c0, min(per, hi - c0), capacity, num_bins, meta, bins, pieces, q_head, q_tail,
                     tree, tail_tree, tail_bin)
        for slot in range(used):  # the tail joins the ranking after the leftovers of equal size
            if tail_tree[slot + tail_tree.size // 2] != _INF:
                _tail_set(tail_tree, slot, _INF)
                _push_back(bins, q_head, q_tail, tree, tail_bin[slot])
                meta[LIVE_BINS] += 1
        for _ in range(num_bins):
            size = _largest_le(tree, capacity)
            if size < 0:
                break
            b = q_head[size]
            _unlink(bins, q_head, q_tail, tree, b)
            meta[LIVE_BINS] -= 1
            row_window[rows] = w
            first = placed
            placed = _release(meta, bins, pieces, b, piece_occ, placed)
            piece_row[first:placed] = rows
            rows += 1
        if keep >= 0 and meta[LIVE_BINS] > keep:
            extra = meta[LIVE_BINS] - keep
            drop = np.empty(extra, np.int64)
            for j in range(extra):  # the smallest bins, last first
                b = q_tail[_smallest(tree)]
                _unlink(bins, q_head, q_tail, tree, b)
                meta[LIVE_BINS] -= 1
                drop[extra - 1 - j] = b
            for j in range(extra):
                first = dropped
                dropped = _release(meta, bins, pieces, drop[j], disc_occ, dropped)
                disc_window[first:dropped] = w
    return (rows, row_window[:rows], piece_row[:placed], piece_occ[:placed], disc_occ[:dropped],
            disc_window[:dropped])


@njit(cache=True)
def held_pieces(meta, bins, pieces, tree, q_head):  # pragma: no cover - compiled
    """The occurrences of the leftover bins' pieces, in leftover order (largest bin first, stable)."""
    out = np.empty(meta[LIVE_PIECES], np.int64)
    k = 0
    size = _largest_le(tree, tree.size // 2 - 1)
    while size >= 0:
        b = q_head[size]
        while b >= 0:
            p = bins[FIRST, b]
            while p >= 0:
                out[k] = pieces[OCC, p]
                k += 1
                p = pieces[PNEXT, p]
            b = bins[NEXT, b]
        size = _largest_le(tree, size - 1)
    return out[:k]
