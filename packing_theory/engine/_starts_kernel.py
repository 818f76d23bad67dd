"""The numba kernels of the compiled cost accounting and start tracker (imported only through
:func:`~packing_theory.engine.compiled.load_starts_kernels`, by :mod:`packing_theory.audit.costs` and
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
def event_rows(kinds, arrived, placed_occurrences, placed, placed_offsets, placed_starts, padded, repeated,
               capacity, rows, fill, before, arrival, placement, padding, repeat, arrival_rows,
               placement_rows, sums):
    """The rows completed before each arrival and each placement of a batch, in stream order.

    ``kinds`` the batch's event kinds (the codes ``arrival`` ... ``repeat``); ``arrived`` its arrivals'
    occurrence ids, which must be ``before, before + 1, ...``; ``placed_occurrences`` and ``placed`` its
    placements' occurrence ids (each arrived before it) and lengths; ``padded``, ``repeated`` the
    lengths of its padding and repeats; ``rows`` and ``fill`` the rows completed and the positions of
    the current row filled before it. Writes ``arrival_rows`` and ``placement_rows``, and adds to
    ``sums`` the placed positions, the targets (a placement's positions but row position 0) and the
    targets of placements that do not begin at their document's first token (``placed_starts > 0``,
    with ``placed_offsets`` each placement's row position); returns
    ``(rows, fill, True)`` after the batch, or ``(rows, fill, False)`` at the first event that breaks a
    rule, or with a column too short or too long for its events (a batch built by hand; the caller then
    walks the batch event by event, which raises or accounts what the events say).
    """
    a = p = d = r = 0
    for i in range(kinds.size):
        k = kinds[i]
        n = 0
        if k == arrival:
            if a >= arrived.size or arrived[a] != before + a:
                return rows, fill, False
            arrival_rows[a] = rows
            a += 1
        elif k == placement:
            if p >= placed.size or p >= placed_occurrences.size or p >= placed_offsets.size \
                    or p >= placed_starts.size:
                return rows, fill, False
            o = placed_occurrences[p]
            if o < 0 or o >= before + a:
                return rows, fill, False
            placement_rows[p] = rows
            n = placed[p]
            t = n - 1 if placed_offsets[p] == 0 else n
            sums[0] += n
            sums[1] += t
            if placed_starts[p] > 0:
                sums[2] += t
            p += 1
        elif k == padding:
            if d >= padded.size:
                return rows, fill, False
            n = padded[d]
            d += 1
        elif k == repeat:
            if r >= repeated.size:
                return rows, fill, False
            n = repeated[r]
            r += 1
        if n:
            fill += n
            if fill >= capacity:
                rows += fill // capacity
                fill = fill % capacity
    if a != arrived.size or p != placed_occurrences.size or d != padded.size or r != repeated.size:
        return rows, fill, False  # a column longer than its events in kinds
    return rows, fill, True


@njit(cache=True)
def first_starts(occurrences, rows, flags, last_at, last_rows, table, started, delays, known):
    """Mark each unstarted occurrence of ``occurrences`` started (``flags``: 1 once started) at its first
    placement in order. Its start delay (start row minus arrival row) is counted in ``table`` (a delay
    histogram's dense counts) when its arrival row is among ``last_rows`` (the rows of occurrences
    ``last_at, last_at + 1, ...``) and the delay lies in the table; else the occurrence is written to
    ``started`` with, in ``delays``, its delay (``known`` true) or its start row alone (``known`` false:
    the caller subtracts the arrival row). Returns ``(starts, written, counted in the table, the largest
    delay counted there)``."""
    m = 0
    rest = 0
    counted = 0
    top = 0
    for j in range(occurrences.size):
        o = occurrences[j]
        if flags[o] == 0:
            flags[o] = 1
            m += 1
            i = o - last_at
            if 0 <= i < last_rows.size:
                d = rows[j] - last_rows[i]
                if 0 <= d < table.size:
                    table[d] += 1
                    counted += 1
                    if d > top:
                        top = d
                    continue
                started[rest] = o
                delays[rest] = d
                known[rest] = True
            else:
                started[rest] = o
                delays[rest] = rows[j]
                known[rest] = False
            rest += 1
    return m, rest, counted, top
