"""Best fit with first-opened ties in numba (imported only by :mod:`packing_theory.peers._paper_columns`).

Typing boundary: numba's ``@njit`` is untyped, so this one module is checked
by mypy without ``disallow_untyped_decorators`` (``pyproject.toml``); its only
caller is fully typed and passes plain numpy arrays. Nothing here is public
API; :func:`packing_theory.peers._common.best_fit` with ``ties="first-opened"``
is the oracle the differential tests compare it with.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import _find_ge  # the smallest set leaf >= need: the same presence-tree search

__all__ = ["best_fit_first_opened"]


@njit(cache=True)
def _present(tree, leaves, space, flag):  # pragma: no cover - compiled
    """Set (``flag`` 1) or clear (0) the leaf of ``space``; an inner node: whether a leaf below is set."""
    i = space + leaves
    tree[i] = flag
    i //= 2
    while i >= 1:
        tree[i] = 1 if tree[2 * i] or tree[2 * i + 1] else 0
        i //= 2


@njit(cache=True)
def _meld(a, b, left, right):  # pragma: no cover - compiled
    """The root of the skew heap holding the heaps rooted at ``a`` and ``b`` (-1: empty); keys are bin ids.

    Top-down skew-heap merge: walk down the right spines taking the smaller
    root each step and swap the children of every node passed (amortised
    O(log n) per operation).
    """
    if a < 0:
        return b
    if b < 0:
        return a
    if b < a:
        a, b = b, a
    root = a
    while True:
        r = right[a]
        right[a] = left[a]
        if r < 0:
            left[a] = b
            return root
        if b < r:
            r, b = b, r
        left[a] = r
        a = r


@njit(cache=True)
def best_fit_first_opened(sizes, order, capacity):  # pragma: no cover - compiled
    """Best fit with first-opened ties: the bin of each item of ``order`` (processing order).

    Each item (a size in ``1..capacity``) goes to the bin with the smallest
    remaining space that holds it, among those the bin opened first (the
    smallest id); a new bin (ids in opening order) when none fits.

    Data structures: a presence segment tree over the spaces ``0..capacity``
    (the smallest held space ``>= size`` in O(log capacity)) and, per space, a
    skew heap of the bins holding it, its nodes the bins themselves (``left``,
    ``right``: a bin is in one heap at a time) — the same answers as
    :func:`packing_theory.peers._common.best_fit`'s sorted list and min-heaps.
    The per-bin arrays and the answer are of ``order``'s integer type (an
    ``int32`` order indexes fewer than ``2**31`` items, so fewer bins).
    """
    n = order.size
    leaves = 1
    while leaves < capacity + 1:
        leaves *= 2
    tree = np.zeros(2 * leaves, np.uint8)
    root = np.full(capacity + 1, -1, np.int64)
    left = np.full(max(n, 1), -1, order.dtype)  # bins < items: held in the order's integer type
    right = np.full(max(n, 1), -1, order.dtype)
    bin_of = np.empty(n, order.dtype)
    bins = 0
    for j in range(n):
        size = sizes[order[j]]
        space = _find_ge(tree, leaves, size)
        if space >= 0:
            b = root[space]
            root[space] = _meld(left[b], right[b], left, right)
            if root[space] < 0:
                _present(tree, leaves, space, 0)
        else:
            space = capacity
            b = bins
            bins += 1
        bin_of[j] = b
        rest = space - size
        if rest > 0:
            left[b] = -1
            right[b] = -1
            if root[rest] < 0:
                _present(tree, leaves, rest, 1)
            root[rest] = _meld(root[rest], b, left, right)
    return bin_of
