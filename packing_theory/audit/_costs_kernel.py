"""The numba kernels of the compiled cost accounting (imported only through
:func:`~packing_theory.engine.compiled.load_numba_module`, by :mod:`packing_theory.audit.costs` and
:mod:`packing_theory.engine.starts`).

Typing boundary: numba's ``@njit`` is untyped, so this one module is checked by mypy without
``disallow_untyped_decorators`` (``pyproject.toml``); its callers are fully typed and pass plain numpy
arrays. Nothing here is public API.

Each kernel is one loop doing what the numpy path of its caller does with whole-array operations, in
the same integer arithmetic; the numpy path stays the oracle (``tests/audit/test_costs.py`` compares
the two on every policy and peer).
"""

from __future__ import annotations

from numba import njit

__all__ = ["event_rows", "first_starts"]


@njit(cache=True)
def event_rows(kinds, placed, padded, repeated, capacity, rows, fill, arrival, placement, padding, repeat,
               arrival_rows, placement_rows):
    """The rows completed before each arrival and each placement of a batch, in stream order.

    ``kinds`` the batch's event kinds (the codes ``arrival`` ... ``repeat``); ``placed``, ``padded``,
    ``repeated`` the lengths of its placements, padding and repeats; ``rows`` and ``fill`` the rows
    completed and the positions of the current row filled before it. Writes ``arrival_rows`` and
    ``placement_rows``; returns ``(rows, fill)`` after the batch.
    """
    a = p = d = r = 0
    for i in range(kinds.size):
        k = kinds[i]
        n = 0
        if k == arrival:
            arrival_rows[a] = rows
            a += 1
        elif k == placement:
            placement_rows[p] = rows
            n = placed[p]
            p += 1
        elif k == padding:
            n = padded[d]
            d += 1
        elif k == repeat:
            n = repeated[r]
            r += 1
        if n:
            fill += n
            if fill >= capacity:
                rows += fill // capacity
                fill = fill % capacity
    return rows, fill


@njit(cache=True)
def first_starts(occurrences, rows, flags, started, start_rows):
    """Mark each unstarted occurrence of ``occurrences`` started (``flags``: 1 once started) at its first
    placement in order, writing it and its row to ``started`` and ``start_rows``; returns how many."""
    m = 0
    for j in range(occurrences.size):
        o = occurrences[j]
        if flags[o] == 0:
            flags[o] = 1
            started[m] = o
            start_rows[m] = rows[j]
            m += 1
    return m
