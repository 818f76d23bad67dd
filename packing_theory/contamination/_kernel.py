"""The numba loop of the contamination scan (imported only by :mod:`packing_theory.contamination.table`).

Typing boundary: numba's ``@njit`` is untyped, so this one module is checked
by mypy without ``disallow_untyped_decorators`` (``pyproject.toml``); its only
caller, :meth:`packing_theory.contamination.table.GramTable.scan`, is fully
typed and passes plain numpy arrays. Nothing here is public API.

:func:`scan_small_ids` (``uint8`` / ``uint16`` ids, mixed through the
65,536-entry table) and :func:`scan_keys` (wider ids, mixed by numpy first)
do in one loop per phase what the numpy path does with whole-array
operations: the window hash of :mod:`packing_theory.contamination.hashing` in
its rolling form (``H[j+1] = (H[j] - u[j] * BASE**(n-1)) * BASE + u[j+n]``,
all modulo ``2**64``: the same value as the polynomial), the table's blocked
Bloom filter (:func:`_find`, in a loop without branches, so that the filter
words of consecutive windows are loaded together), and a bisection of the
hash's bucket for the few windows that pass. Every constant is a
``uint64`` so that no step leaves modular integer arithmetic.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["scan_keys", "scan_small_ids"]

_SIX = np.uint64(6)
_TWELVE = np.uint64(12)
_LOW6 = np.uint64(63)
_ONE = np.uint64(1)


@njit(cache=True, nogil=True)
def _find(hashes, windows, words, wshift, keys, start, bshift, out_window, out_key):
    """Filter the window hashes, then bisect the buckets of those that pass; return how many were found."""
    cand = 0
    for j in range(windows):  # branch-free: the loads of consecutive windows overlap
        h = hashes[j]
        word = words[h >> wshift]
        m = (_ONE << (h & _LOW6)) | (_ONE << ((h >> _SIX) & _LOW6)) | (_ONE << ((h >> _TWELVE) & _LOW6))
        out_window[cand] = j
        cand += (word & m) == m
    found = 0
    for c in range(cand):
        j = out_window[c]
        h = hashes[j]
        p = h >> bshift
        lo = start[p]
        end = start[p + 1]
        hi = end
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid] < h:
                lo = mid + 1
            else:
                hi = mid
        if lo < end and keys[lo] == h:
            out_window[found] = j
            out_key[found] = lo
            found += 1
    return found


@njit(cache=True, nogil=True)
def scan_small_ids(ids, keytab, n, top_power, base, words, wshift, keys, start, bshift, hashes, out_window,
                   out_key):
    """Write the start of every window of ``ids`` (``uint8`` / ``uint16``, mixed through ``keytab``) whose
    hash is a key, and the key's index; ``top_power`` is ``BASE**(n-1) mod 2**64``. Returns how many."""
    windows = ids.size - n + 1
    if windows <= 0:
        return 0
    h = np.uint64(0)
    for i in range(n):
        h = h * base + keytab[ids[i]]
    hashes[0] = h
    for j in range(1, windows):
        h = (h - keytab[ids[j - 1]] * top_power) * base + keytab[ids[j + n - 1]]
        hashes[j] = h
    return _find(hashes, windows, words, wshift, keys, start, bshift, out_window, out_key)


@njit(cache=True, nogil=True)
def scan_keys(u, n, top_power, base, words, wshift, keys, start, bshift, hashes, out_window, out_key):
    """:func:`scan_small_ids` for ids already mixed into ``u`` (``uint64`` keys of wider ids)."""
    windows = u.size - n + 1
    if windows <= 0:
        return 0
    h = np.uint64(0)
    for i in range(n):
        h = h * base + u[i]
    hashes[0] = h
    for j in range(1, windows):
        h = (h - u[j - 1] * top_power) * base + u[j + n - 1]
        hashes[j] = h
    return _find(hashes, windows, words, wshift, keys, start, bshift, out_window, out_key)
