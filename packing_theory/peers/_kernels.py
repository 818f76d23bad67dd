"""The numba kernels of the peers' columnar path (imported only by :mod:`packing_theory.peers._columns`).

Typing boundary: numba's ``@njit`` is untyped, so this one module is checked
by mypy without ``disallow_untyped_decorators`` (``pyproject.toml``); its only
caller, :mod:`packing_theory.peers._columns`, is fully typed and passes plain
numpy arrays. Nothing here is public API; the pure Python bin packing of
:mod:`packing_theory.peers._common` is the oracle the differential tests
compare these kernels with.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["best_fit_fifo", "concat_no_wrap_takes", "first_fit"]


@njit(cache=True)
def _find_ge(tree, leaves, need):  # pragma: no cover - compiled
    """The smallest present space ``>= need`` (a leaf with a non-zero count), or -1."""
    if need >= leaves:
        return -1
    i = need + leaves
    if tree[i] > 0:
        return need
    while i > 1:
        if i % 2 == 0 and tree[i + 1] > 0:
            i += 1
            while i < leaves:
                i = 2 * i if tree[2 * i] > 0 else 2 * i + 1
            return i - leaves
        i //= 2
    return -1


@njit(cache=True)
def _mark(tree, leaves, space, delta):  # pragma: no cover - compiled
    i = space + leaves
    while i >= 1:
        tree[i] += delta
        i //= 2


@njit(cache=True)
def best_fit_fifo(sizes, order, window_starts, capacity,  # pragma: no cover - compiled
                  nxt, space_of, bin_of):
    """Best fit with first-to-reach ties, window by window; the bin of each item, in processing order.

    ``order`` lists the items (indices into ``sizes``) in processing order;
    window ``w`` is ``order[window_starts[w]:window_starts[w + 1]]`` (the last
    runs to the end); every window starts with no open bin. Bins are numbered
    in creation order across windows. Each size must lie in ``1..capacity``.

    Data structures: a segment tree of counts over the spaces ``0..capacity``
    (the smallest present space ``>= size`` in O(log capacity)) and, per
    space, a FIFO of the bins holding it as a linked list (``head``, ``tail``,
    ``nxt``): the same answers as :func:`packing_theory.peers._common.best_fit`'s
    sorted list and deques.

    The caller gives the work arrays (their width is its choice: ``int32``
    where ``len(order) + 1`` and ``capacity`` fit): ``nxt`` and ``space_of``
    of ``len(order) + 1`` entries, ``nxt`` all ``-1`` and ``space_of`` all
    ``0``; ``bin_of`` of ``len(order)`` entries, filled and returned.
    """
    n = order.size
    leaves = 1
    while leaves < capacity + 1:
        leaves *= 2
    tree = np.zeros(2 * leaves, np.int32)
    head = np.full(capacity + 1, -1, np.int64)
    tail = np.full(capacity + 1, -1, np.int64)
    # nxt: bin -> the next bin of its space's FIFO; space_of: bin -> its remaining space (0: full or closed)
    bins = 0
    first_bin = 0
    nw = window_starts.size
    for w in range(nw):
        lo = window_starts[w]
        hi = window_starts[w + 1] if w + 1 < nw else n
        for b in range(first_bin, bins):  # clear the previous window's open bins
            s = space_of[b]
            if s > 0:
                head[s] = -1
                tail[s] = -1
                if tree[s + leaves] > 0:
                    _mark(tree, leaves, s, -tree[s + leaves])
        first_bin = bins
        for j in range(lo, hi):
            size = sizes[order[j]]
            space = _find_ge(tree, leaves, size)
            if space >= 0:
                b = head[space]
                head[space] = nxt[b]
                if head[space] < 0:
                    tail[space] = -1
                _mark(tree, leaves, space, -1)
            else:
                space = capacity
                b = bins
                bins += 1
            bin_of[j] = b
            left = space - size
            space_of[b] = left
            if left > 0:
                nxt[b] = -1
                if tail[left] < 0:
                    head[left] = b
                else:
                    nxt[tail[left]] = b
                tail[left] = b
                _mark(tree, leaves, left, 1)
    return bin_of


@njit(cache=True)
def concat_no_wrap_takes(lengths, capacity, used):  # pragma: no cover - compiled
    """Tokens of each document that LLM Foundry's ``no_wrap`` concatenation keeps, and the row fill after.

    A document that overflows the current row keeps what fills it; the rest is
    discarded and the next document starts a new row.
    """
    take = np.empty(lengths.size, np.int64)
    for i in range(lengths.size):
        n = lengths[i]
        if n == 0:
            take[i] = 0
        elif used + n < capacity:
            take[i] = n
            used += n
        else:
            take[i] = capacity - used
            used = 0
    return take, used


@njit(cache=True)
def _first_fit_grown(tree, size, bins, closed):  # pragma: no cover - compiled
    """The max segment tree of ``2 * size`` leaves holding the leaves of ``tree`` (``size`` leaves, the
    first ``bins`` in use; the others closed), of ``tree``'s integer type."""
    grown = np.full(4 * size, closed, tree.dtype)
    grown[2 * size:2 * size + bins] = tree[size:size + bins]
    for i in range(2 * size - 1, 0, -1):
        a = grown[2 * i]
        c = grown[2 * i + 1]
        grown[i] = a if a >= c else c
    return grown


@njit(cache=True)
def first_fit(sizes, capacity, max_items, out, tree):  # pragma: no cover - compiled
    """First fit in the given order: the bin of each item, written to ``out`` (bins in opening order).

    The leftmost open bin whose free space is ``>= size`` takes the item; an
    item that fits none opens a bin (free ``capacity - size``, negative for an
    item larger than the capacity). A bin holding ``max_items`` items
    (``max_items <= 0``: no cap) takes no more. A max segment tree over the
    bins' free space, as :class:`packing_theory.peers._common.FirstFitTree`:
    a leaf is its bin's free space (closed once the bin is full, when it is
    never read again), so no other per-bin array is kept but the item counts
    under a cap; the tree is sized by the bins opened so far (doubled when
    full, O(items) in all), not by the items. ``out``: one bin per item
    (``int32`` where the caller knows they fit). ``tree``: the first tree,
    every node closed (its value, below any free space, is read from it),
    1,024 leaves, ``int32`` where the caller knows every free space fits.
    """
    n = sizes.size
    size = tree.size // 2
    closed = tree[1]
    count = np.zeros(n if max_items > 0 else 1, np.int64)
    bins = 0
    for k in range(n):
        need = sizes[k]
        if tree[1] >= need:
            i = 1
            while i < size:
                i = 2 * i if tree[2 * i] >= need else 2 * i + 1
            b = i - size
            value = tree[i] - need
        else:
            b = bins
            bins += 1
            if b == size:
                tree = _first_fit_grown(tree, size, b, closed)
                size *= 2
            value = capacity - need
        out[k] = b
        if max_items > 0:
            count[b] += 1
            if count[b] >= max_items:
                value = closed
        i = b + size
        tree[i] = value
        i //= 2
        while i:
            a = tree[2 * i]
            c = tree[2 * i + 1]
            tree[i] = a if a >= c else c
            i //= 2
