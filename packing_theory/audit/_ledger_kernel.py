"""The numba kernels of the compiled ledger (imported only by :mod:`packing_theory.audit.compiled`).

Typing boundary: numba's ``@njit`` is untyped, so this one module is checked
by mypy without ``disallow_untyped_decorators`` (``pyproject.toml``); its only
caller, :mod:`packing_theory.audit.compiled`, is fully typed and passes plain
numpy arrays. Nothing here is public API.

Each kernel is one loop over a chunk of events (or over the table) doing what
the numpy accounting of :mod:`packing_theory.audit.accounting` does with
whole-array operations, in integer arithmetic (exact where the numpy path sums
integers as float64 below ``2**53``). A kernel that finds an inconsistent
event returns before it changes anything (``placements``) or after undoing
what it changed (``arrivals``); the caller then runs the numpy path on the same
chunk, which raises the oracle's own message.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["arrival_stats", "arrivals", "coverage_split", "discards", "length_histogram", "placements",
           "reduce_block", "stream_placements"]

ARRIVED, STARTED, FILTERED, ADDED = 1, 2, 4, 8
FIRST_ORIGIN = 1 << 62
# sums of placements
S_EMITTED, S_ADDED, S_LONG, S_FIRST_LONG = 0, 1, 2, 3
# per-stratum columns of reduce_block
(T_COUNTS, T_STARTED, T_FULL, T_ARRIVED, T_EMITTED, T_DISCARDED, T_BUFFERED, T_FSOURCES,
 T_FTOKENS) = range(9)
N_TABLE = 9
# scalars of reduce_block
R_ARRIVED, R_STARTED, R_FULL, R_VIOLATIONS, R_MAX_LENGTH = range(5)
N_SCALARS = 5


@njit(cache=True, inline="always")
def _stratum(bounds, L):
    """``searchsorted(bounds, L, side="left")`` for a short ``bounds``."""
    s = 0
    while s < bounds.size and bounds[s] < L:
        s += 1
    return s


@njit(cache=True)
def arrivals(occ, length, flags, length_col):
    """Mark ``occ`` arrived with ``length``; return -1, or the position of a repeated arrival (undone)."""
    n = occ.size
    for i in range(n):
        o = occ[i]
        if flags[o] & ARRIVED:
            for j in range(i):  # undo: none of these had arrived before this chunk
                flags[occ[j]] &= ~ARRIVED
                length_col[occ[j]] = 0
            return i
        flags[o] |= ARRIVED
        length_col[o] = length[i]
    return -1


@njit(cache=True)
def arrival_stats(occ, length, bounds, out, strata):
    """``out = [min occ, min length, max occ, max length, sum of lengths]`` of a non-empty chunk (the sum
    wraps past ``2**63``: the caller uses it only when ``max length x size`` fits) and ``strata[s]`` the
    arrivals of each length stratum."""
    lo_o, lo_l, hi_o, hi_l, total = occ[0], length[0], occ[0], length[0], 0
    for s in range(strata.size):
        strata[s] = 0
    for i in range(occ.size):
        o, L = occ[i], length[i]
        lo_o = min(lo_o, o)
        hi_o = max(hi_o, o)
        lo_l = min(lo_l, L)
        hi_l = max(hi_l, L)
        total += L
        strata[_stratum(bounds, L)] += 1
    out[0], out[1], out[2], out[3], out[4] = lo_o, lo_l, hi_o, hi_l, total


@njit(cache=True)
def discards(occ, ln, n, flags, discarded, out):
    """Add a chunk of discards; ``out[0]`` their tokens. Return 0, or 1 (nothing changed) when one is
    inconsistent (an occurrence that never arrived, a negative length)."""
    total = 0
    for i in range(occ.size):
        o = occ[i]
        if o < 0 or o >= n or not flags[o] & ARRIVED or ln[i] < 0:
            return 1
        total += ln[i]
    for i in range(occ.size):
        discarded[occ[i]] += ln[i]
    out[0] = total
    return 0


@njit(cache=True, inline="always")
def _expose(expo, s, bins, a, b, L):
    """Add the positions ``[a, b)`` of a document of length ``L`` to its stratum's relative bins.

    Bin ``k`` is ``[e(k), e(k + 1))`` with ``e(k) = ceil(k L / bins)``; ``e(k) <= a`` exactly when
    ``k <= a bins / L``, so the walk starts at bin ``a bins // L`` and stops at the first edge ``>= b``.
    """
    if b <= a:
        return
    k = a * bins // L
    lo = (k * L + bins - 1) // bins
    while k < bins and lo < b:
        hi = ((k + 1) * L + bins - 1) // bins
        c = min(b, hi) - max(a, lo)
        if c > 0:
            expo[s * bins + k] += c
        lo = hi
        k += 1


@njit(cache=True)
def placements(row, off, occ, start, ln, bos, crop, n, flags, length_col, emitted, first_inv, keep_first, R,
               bounds, bins, targets, expo, crop_hist, whole_hist, sums):
    """Account a chunk of placements; return 0, or 1 (nothing changed) when one is inconsistent.

    ``first_inv`` is updated only with ``keep_first``; ``sums[S_FIRST_LONG]`` keeps the largest
    ``FIRST_ORIGIN - first target`` of an over-capacity document either way."""
    m = occ.size
    for i in range(m):  # validate the whole chunk first
        o = occ[i]
        if o < 0 or o >= n or not flags[o] & ARRIVED or flags[o] & FILTERED:
            return 1
        if ln[i] < 1 or off[i] < 0 or off[i] + ln[i] > R or start[i] < 0:
            return 1
        if start[i] + ln[i] - bos[i] > length_col[o]:
            return 1
    for i in range(m):
        o = occ[i]
        fl = flags[o]
        L = np.int64(length_col[o])
        b = bos[i]
        added = 1 if b and fl & ADDED else 0
        own = b and not added
        stop = start[i] + ln[i] - b
        emitted[o] += ln[i] - added
        flags[o] = fl | STARTED
        if off[i] > 0 or ln[i] > 1:
            v = FIRST_ORIGIN - (row[i] * (R - 1) + max(off[i] - 1, 0))
            if keep_first and v > first_inv[o]:
                first_inv[o] = v
            if L > R and v > sums[S_FIRST_LONG]:
                sums[S_FIRST_LONG] = v
        sums[S_EMITTED] += ln[i]
        sums[S_ADDED] += added
        if L > R:
            sums[S_LONG] += ln[i]
        if crop[i]:
            crop_hist[ln[i]] += 1
        s = _stratum(bounds, L)
        targets[s] += ln[i] - (1 if off[i] == 0 else 0)
        if start[i] == 0 and stop == L and not b:
            whole_hist[L] += 1  # a whole document fits a row: L <= R
        else:
            _expose(expo, s, bins, start[i], stop, L)
            if own:
                _expose(expo, s, bins, 0, 1, L)
    return 0


@njit(cache=True)
def reduce_block(flags, length_col, emitted, discarded, buffered, n, bounds, table, scalars):
    """Add the per-stratum sums (``table[column, stratum]``) and scalars of a block of ``n`` occurrences
    (``buffered``: each one's source tokens buffered at the horizon)."""
    for o in range(n):
        fl = flags[o]
        if not fl & ARRIVED:
            continue
        L = np.int64(length_col[o])
        em = np.int64(emitted[o])
        dc = np.int64(discarded[o])
        ft = L if fl & FILTERED else 0
        s = _stratum(bounds, L)
        started = 1 if fl & STARTED else 0
        full = 1 if em == L and L > 0 else 0
        scalars[R_ARRIVED] += 1
        scalars[R_STARTED] += started
        scalars[R_FULL] += full
        if em + dc + ft + buffered[o] != L:
            scalars[R_VIOLATIONS] += 1
        if scalars[R_MAX_LENGTH] < L:
            scalars[R_MAX_LENGTH] = L
        table[T_COUNTS, s] += 1
        table[T_STARTED, s] += started
        table[T_FULL, s] += full
        table[T_ARRIVED, s] += L
        table[T_EMITTED, s] += em
        table[T_DISCARDED, s] += dc
        table[T_BUFFERED, s] += buffered[o]
        if ft > 0:
            table[T_FSOURCES, s] += 1
        table[T_FTOKENS, s] += ft


@njit(cache=True)
def length_histogram(flags, length_col, n, hist):
    """``hist[L] += 1`` for every arrived occurrence of ``[0, n)`` (``hist`` holds the largest length)."""
    for o in range(n):
        if flags[o] & ARRIVED:
            hist[length_col[o]] += 1


@njit(cache=True)
def coverage_split(flags, length_col, emitted, n, bounds, starts, out):
    """Fill ``out`` with ``emitted / length`` (0 for length 0) of the arrived occurrences of ``[0, n)``,
    grouped by stratum and in id order within each: stratum ``s`` at ``out[starts[s]:starts[s + 1]]``
    (``starts`` is filled here; ``out`` holds one slot per occurrence)."""
    S = bounds.size + 1
    for s in range(S + 1):
        starts[s] = 0
    strata = np.empty(n, np.uint8)  # S <= 255: the caller checks
    for o in range(n):
        s = _stratum(bounds, np.int64(length_col[o])) if flags[o] & ARRIVED else S
        strata[o] = s
        if s < S:
            starts[s + 1] += 1
    for s in range(S):
        starts[s + 1] += starts[s]
    cursor = starts[:S].copy()
    for o in range(n):
        s = strata[o]
        if s < S:
            out[cursor[s]] = emitted[o] / max(np.int64(length_col[o]), 1)
            cursor[s] += 1


# flags and sums of stream_placements (the streaming summary's live occurrences)
LIVE_STARTED, LIVE_LONG, LIVE_ADDED = 1, 2, 4
P_STARTED, P_EMITTED, P_CROPS, P_BOS_ONLY, P_FIRST_LONG = range(5)


@njit(cache=True)
def stream_placements(i, ln, off, bos, crop, R, flags, left, emit, strat, started_by, emitted_by, targets_by,
                      crop_hist, sums):
    """Account a batch of placements of live occurrences ``i`` (positions) for the streaming summary;
    return 0, or 1 (nothing changed) when a length is outside ``0..R``.

    ``sums``: occurrences started, tokens emitted, crops, BOS-only crops, and the batch position of the
    first placement of an unstarted over-capacity occurrence (-1: none; the caller keeps the first)."""
    m = i.size
    for k in range(m):
        if ln[k] < 0 or ln[k] > R:
            return 1
    sums[P_FIRST_LONG] = -1
    for k in range(m):
        j = i[k]
        f = flags[j]
        s = strat[j]
        if not f & LIVE_STARTED:
            sums[P_STARTED] += 1
            started_by[s] += 1
            if f & LIVE_LONG and sums[P_FIRST_LONG] < 0:
                sums[P_FIRST_LONG] = k
            flags[j] = f | LIVE_STARTED
        added = 1 if bos[k] and f & LIVE_ADDED else 0
        left[j] -= ln[k]
        emit[j] += ln[k] - added
        emitted_by[s] += ln[k] - added
        targets_by[s] += ln[k] - (1 if off[k] == 0 else 0)
        sums[P_EMITTED] += ln[k]
        if crop[k]:
            sums[P_CROPS] += 1
            crop_hist[ln[k]] += 1
            if ln[k] == 1:
                sums[P_BOS_ONLY] += 1
    return 0
