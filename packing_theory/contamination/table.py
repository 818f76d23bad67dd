"""One table of reference grams: sorted 64-bit hashes, their reference bitmasks, and an exact lookup.

A :class:`GramTable` holds ``G`` distinct window hashes (``keys``, strictly
increasing) and, per hash, the bitmask of the references holding it
(``members``). A lookup is exact (a hash is found only when it is a key) and
goes through two structures built from the keys:

* a **blocked Bloom filter**: ``2**w`` 64-bit words, ``2**w <= G / 4 <
  2**(w+1)`` (8 to 16 bits per gram); a hash sets, and is tested against,
  three bits (its bits 0-5, 6-11 and 12-17) of the one word its top ``w``
  bits choose. A window that is no key passes with probability about
  ``(1 - exp(-3 G / 64 W))**3``, a few per cent at this size, and is then
  rejected by
* a **bucket index**: ``start[p]`` is the first key whose top ``b`` bits are
  at least ``p`` (``2**b <= G / 8``, 8 to 16 keys per bucket), so a hash is
  searched for by bisection inside its bucket only (about 4 steps, all in
  the same few cache lines) instead of over all ``G`` keys.

Memory: ``8 + m`` bytes per gram for keys and members (``m`` = 1, 2, 4 or
8 bytes for up to 8, 16, 32, 64 references), 1 to 2 bytes per gram of filter
and at most 1 byte per gram of bucket index: 11 to 12 bytes per gram with up
to 8 references.

Two implementations scan token ids against a table and give the same
answer: :meth:`GramTable.lookup` (numpy: the window hashes of
:func:`~packing_theory.contamination.hashing.window_hashes`, the filter and a
vectorised bisection, chunk by chunk) and, when numba is installed, one
compiled loop per chunk (:mod:`packing_theory.contamination._kernel`: the
rolling form of the same hash, the same filter and bisection) —
:meth:`GramTable.scan` picks one.

>>> import numpy as np
>>> t = GramTable(np.array([3, 7, 9], dtype=np.uint64), np.array([1, 2, 3], dtype=np.uint8))
>>> [x.tolist() for x in t.lookup(np.array([9, 4, 3], dtype=np.uint64))]
[[0, 2], [2, 0]]
"""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError
from .hashing import BASE, CHUNK_WINDOWS, small_keys, token_keys, window_hashes

__all__ = [
    "BUCKET_GRAMS",
    "FILTER_BITS_PER_GRAM",
    "MAX_REFERENCES",
    "GramTable",
    "compiled_scan_available",
    "members_dtype",
    "unique_members",
]

MAX_REFERENCES = 64
"""References one table can tell apart (one bit each)."""

FILTER_BITS_PER_GRAM = 16
"""At most this many filter bits per gram (at least half as many: the word count is a power of two)."""

BUCKET_GRAMS = 8
"""At least this many keys per bucket on average (at most twice as many)."""

U64Array = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.int64]
_U = np.uint64
_ONE = np.uint64(1)
_SIX_BITS = np.uint64(63)


def members_dtype(references: int) -> np.dtype[np.unsignedinteger]:
    """The smallest unsigned dtype with one bit per reference (``uint8`` .. ``uint64``).

    >>> members_dtype(3), members_dtype(9), members_dtype(64)
    (dtype('uint8'), dtype('uint16'), dtype('uint64'))
    """
    references = check_int("references", references, 1, maximum=MAX_REFERENCES)
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        if references <= np.dtype(dt).itemsize * 8:
            return np.dtype(dt)
    raise AssertionError("unreachable")  # pragma: no cover


def unique_members(keys: U64Array, members: npt.NDArray[np.unsignedinteger]
                   ) -> tuple[U64Array, npt.NDArray[np.unsignedinteger]]:
    """Distinct ``keys`` in increasing order, each with the OR of its ``members``. O(m log m).

    >>> import numpy as np
    >>> k, m = unique_members(np.array([5, 2, 5], dtype=np.uint64), np.array([1, 4, 2], dtype=np.uint8))
    >>> k.tolist(), m.tolist()
    ([2, 5], [4, 3])
    """
    if keys.size == 0:
        return keys.copy(), members.copy()
    if bool(np.all(members == members[0])):  # one reference: sort the keys alone (no index array)
        k = np.sort(keys)
        keep = np.empty(k.size, dtype=np.bool_)
        keep[0] = True
        np.not_equal(k[1:], k[:-1], out=keep[1:])
        out = k[keep]
        return out, np.full(out.size, members[0], dtype=members.dtype)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    m = members[order]
    del order
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    return k[starts], np.bitwise_or.reduceat(m, starts)


def _log2_floor(x: int) -> int:
    """``floor(log2(x))`` for ``x >= 1``, at least 1 (a shift by 64 is undefined on ``uint64``)."""
    return max(1, int(x).bit_length() - 1)


def _bloom_bits(h: U64Array) -> U64Array:
    """The three bits a hash sets in its filter word (bits 0-5, 6-11, 12-17 of the hash)."""
    m = _ONE << (h & _SIX_BITS)
    m |= _ONE << ((h >> _U(6)) & _SIX_BITS)
    m |= _ONE << ((h >> _U(12)) & _SIX_BITS)
    return m


def compiled_scan_available() -> bool:
    """Whether numba is installed (the compiled scan can run). Does not import it.

    >>> isinstance(compiled_scan_available(), bool)
    True
    """
    return importlib.util.find_spec("numba") is not None


_KERNEL: ModuleType | None = None


def _kernel() -> ModuleType:
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = importlib.import_module("packing_theory.contamination._kernel")
    return _KERNEL


class GramTable:
    """Distinct window hashes (sorted) with their reference bitmasks, and an exact lookup.

    Args:
        keys: strictly increasing ``uint64`` hashes (not copied).
        members: per key, bit ``r`` set when reference ``r`` holds it (never 0).

    Building is O(G) after the keys are sorted; memory: see the module docstring.
    """

    def __init__(self, keys: U64Array, members: npt.NDArray[np.unsignedinteger]) -> None:
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.members = members
        g = int(self.keys.size)
        w = _log2_floor(max(1, g * FILTER_BITS_PER_GRAM // 64))
        self._wshift = _U(64 - w)
        self._words = np.zeros(1 << w, dtype=np.uint64)
        b = _log2_floor(max(1, g // BUCKET_GRAMS))
        self._bshift = _U(64 - b)
        self._start = np.searchsorted(self.keys >> self._bshift, np.arange((1 << b) + 1, dtype=np.uint64)
                                      ).astype(np.int64)
        for lo in range(0, g, 1 << 20):  # in pieces: the temporaries stay small
            part = self.keys[lo : lo + (1 << 20)]
            np.bitwise_or.at(self._words, (part >> self._wshift).astype(np.intp), _bloom_bits(part))

    def __len__(self) -> int:
        return int(self.keys.size)

    @property
    def nbytes(self) -> int:
        """Bytes held: keys, members, filter and bucket index."""
        return int(self.keys.nbytes + self.members.nbytes + self._words.nbytes + self._start.nbytes)

    def _passes(self, hashes: U64Array) -> npt.NDArray[np.bool_]:
        """Whether each hash passes the filter (never false for a key)."""
        m = _bloom_bits(hashes)
        out: npt.NDArray[np.bool_] = (self._words[(hashes >> self._wshift).astype(np.intp)] & m) == m
        return out

    def lookup(self, hashes: U64Array) -> tuple[IntArray, IntArray]:
        """Positions ``i`` of ``hashes`` found in the table, and each one's index into :attr:`keys`.

        Complexity: O(len(hashes)) for the filter plus, for each hash that
        passes it, a bisection of its bucket (O(log bucket), vectorised over
        the candidates). ``hashes[i] == keys[j]`` for every returned pair ``(i, j)``.
        """
        empty = np.zeros(0, dtype=np.int64)
        if self.keys.size == 0 or hashes.size == 0:
            return empty, empty
        cand = np.flatnonzero(self._passes(hashes))
        if cand.size == 0:
            return empty, empty
        hc = hashes[cand]
        bucket = (hc >> self._bshift).astype(np.intp)
        lo, hi = self._start[bucket], self._start[bucket + 1]
        end = hi.copy()
        active = np.flatnonzero(lo < hi)
        while active.size:  # lo = the first key >= hc within the bucket
            a_lo, a_hi = lo[active], hi[active]
            mid = (a_lo + a_hi) >> 1
            below = self.keys[mid] < hc[active]
            lo[active] = np.where(below, mid + 1, a_lo)
            hi[active] = np.where(below, a_hi, mid)
            active = active[lo[active] < hi[active]]
        inside = lo < end
        found = inside.copy()
        found[inside] = self.keys[lo[inside]] == hc[inside]
        return cand[found].astype(np.int64), lo[found].astype(np.int64)

    def scan(self, ids: npt.NDArray[np.integer], n: int, *, compiled: bool = False,
             scratch: _Scratch | None = None) -> tuple[IntArray, IntArray]:
        """Every length-``n`` window of ``ids`` whose hash is a key: its start and its key's index.

        ``compiled=True`` runs the numba loop (:mod:`~packing_theory.contamination._kernel`),
        else :func:`~packing_theory.contamination.hashing.window_hashes` and
        :meth:`lookup`; the answers are equal. O(len(ids)) either way.
        ``scratch`` lends the compiled loop its work arrays (reused across calls).
        """
        arr = np.asarray(ids)
        windows = arr.size - n + 1
        empty = np.zeros(0, dtype=np.int64)
        if windows <= 0 or self.keys.size == 0:
            return empty, empty
        if not compiled:
            return self.lookup(window_hashes(arr, n))
        kernel = _kernel()
        hashes, win, pos = (scratch or _Scratch()).arrays(windows)
        args = (n, _U(pow(BASE, n - 1, 1 << 64)), _U(BASE), self._words, self._wshift, self.keys, self._start,
                self._bshift, hashes, win, pos)
        if arr.dtype in (np.uint8, np.uint16):
            found = kernel.scan_small_ids(np.ascontiguousarray(arr), small_keys(), *args)
        else:
            found = kernel.scan_keys(token_keys(arr), *args)
        return win[:found].copy(), pos[:found].copy()

    def _check(self) -> None:
        """Assert: keys strictly increasing, no empty bitmask, filter and buckets cover every key."""
        assert self.keys.dtype == np.uint64 and self.keys.shape == self.members.shape
        assert bool(np.all(self.keys[1:] > self.keys[:-1])), "keys must be strictly increasing"
        assert not bool(np.any(self.members == 0)), "every key belongs to some reference"
        assert bool(np.all(self._passes(self.keys))), "the filter must cover every key"
        bucket = (self.keys >> self._bshift).astype(np.intp)
        idx = np.arange(self.keys.size)
        assert bool(np.all((self._start[bucket] <= idx) & (idx < self._start[bucket + 1]))), \
            "every key must lie in its bucket"


class _Scratch:
    """Work arrays of the compiled loop, grown on demand and reused across chunks."""

    def __init__(self) -> None:
        self.size = 0
        self.hashes = np.zeros(0, dtype=np.uint64)
        self.win = np.zeros(0, dtype=np.int64)
        self.pos = np.zeros(0, dtype=np.int64)

    def arrays(self, windows: int) -> tuple[U64Array, IntArray, IntArray]:
        if windows > self.size:
            self.size = windows
            self.hashes = np.empty(windows, dtype=np.uint64)
            self.win = np.empty(windows, dtype=np.int64)
            self.pos = np.empty(windows, dtype=np.int64)
        return self.hashes[:windows], self.win[:windows], self.pos[:windows]


def scan_chunks(ids: Any, total_windows: int, n: int, table: GramTable, *, compiled: bool,
                chunk: int = CHUNK_WINDOWS) -> tuple[IntArray, IntArray]:
    """:meth:`GramTable.scan` over ``ids[0 : total_windows + n - 1]`` in chunks of ``chunk`` windows.

    ``ids`` is anything sliceable into integer arrays (an array, a file read
    slice by slice). Returns every matched window's start and key index.
    """
    chunk = check_int("chunk", chunk, 1)
    if n < 1:
        raise InputError(f"n must be >= 1, got {n}")
    starts: list[IntArray] = []
    positions: list[IntArray] = []
    scratch = _Scratch()
    for lo in range(0, max(total_windows, 0), chunk):
        hi = min(total_windows, lo + chunk)
        win, pos = table.scan(ids[lo : hi + n - 1], n, compiled=compiled, scratch=scratch)
        if win.size:
            starts.append(win + lo)
            positions.append(pos)
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(starts), np.concatenate(positions)
