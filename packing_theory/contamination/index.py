"""The reference gram index: sorted 64-bit hashes in memory, or on-disk partitions scanned in passes.

:class:`IndexBuilder` collects the window hashes of the reference sets
(:mod:`packing_theory.contamination.hashing`), each tagged with the reference
it came from, and :meth:`IndexBuilder.finish` returns a :class:`GramIndex`:

* **in memory** when the distinct grams number at most ``memory_grams``: one
  :class:`GramTable` (a sorted ``uint64`` array of distinct hashes, a
  per-hash bitmask of the references holding it, and a one-bit-per-slot
  pre-filter on the hash's top bits); memory ``(8 + b) * G`` bytes plus the
  filter (at most 4 MiB), ``b`` the bytes of the bitmask (1 for up to 8
  references, 2, 4 or 8 for up to 64);
* **on disk** beyond it: the builder spills its buffer into 256 partition
  files by the hash's top 8 bits, each partition is deduplicated and sorted
  on its own, and consecutive partitions are grouped into *passes* of at most
  ``memory_grams`` distinct grams (a single partition larger than that is a
  pass of its own: the index holds ``256 * memory_grams`` grams before a
  pass exceeds the bound). A scan loads one pass's table at a time
  (:meth:`GramIndex.tables`) and reads its inputs once per pass; a window's
  hash falls into exactly one pass, so the passes partition the matches.

Lookup (:meth:`GramTable.lookup`) is vectorised: the pre-filter (about 32
bits per gram, up to ``2**25`` bits) rejects all but a few per cent of the
windows with one bit read; the rest are found with ``numpy.searchsorted``
(O(log G) each).

>>> import numpy as np
>>> b = IndexBuilder(references=2, memory_grams=100)
>>> b.add(np.array([7, 3, 7], dtype=np.uint64), 0)
>>> b.add(np.array([3, 9], dtype=np.uint64), 1)
>>> index = b.finish()
>>> index.mode, index.grams, index.reference_grams
('memory', 3, (2, 2))
>>> table = next(index.tables())
>>> [int(x) for x in table.keys], [int(x) for x in table.members]
([3, 7, 9], [3, 1, 2])
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError

__all__ = [
    "DEFAULT_MEMORY_GRAMS",
    "MAX_REFERENCES",
    "PARTITIONS",
    "GramIndex",
    "GramTable",
    "IndexBuilder",
]

DEFAULT_MEMORY_GRAMS = 1 << 23
"""Distinct reference grams held in memory before the index goes to disk (8,388,608).

Seed 002's references held about a million grams. Memory at the bound: see
``docs/contamination.rst`` (measured by ``benchmarks/bench_contamination.py``).
"""

MAX_REFERENCES = 64
"""References one index can tell apart (one bit each)."""

PARTITIONS = 256
"""On-disk partitions, by the top 8 bits of the hash."""

_PART_SHIFT = np.uint64(56)
_FILTER_MAX_BITS = 25
U64Array = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.int64]


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
    order = np.argsort(keys)
    k = keys[order]
    m = members[order]
    del order
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    return k[starts], np.bitwise_or.reduceat(m, starts)


class GramTable:
    """Distinct window hashes (sorted) with their reference bitmasks, and a vectorised lookup.

    Args:
        keys: strictly increasing ``uint64`` hashes.
        members: per key, bit ``r`` set when reference ``r`` holds it (never 0).

    Memory: the two arrays plus a pre-filter of ``2**f`` bits, ``f`` about
    ``log2(len(keys)) + 5`` (10 to 25: at most 4 MiB).
    """

    def __init__(self, keys: U64Array, members: npt.NDArray[np.unsignedinteger]) -> None:
        self.keys = keys
        self.members = members
        bits = max(10, min(_FILTER_MAX_BITS, int(keys.size).bit_length() + 5))
        self._shift = np.uint64(64 - bits)
        self._filter = np.zeros(1 << (bits - 3), dtype=np.uint8)
        if keys.size:
            slot = keys >> self._shift
            np.bitwise_or.at(self._filter, (slot >> np.uint64(3)).astype(np.intp),
                             np.left_shift(1, (slot & np.uint64(7)).astype(np.uint8)).astype(np.uint8))

    def _passes(self, hashes: U64Array) -> npt.NDArray[np.bool_]:
        """Whether each hash's pre-filter bit is set (no false negatives)."""
        slot = hashes >> self._shift
        byte = self._filter[slot >> np.uint64(3)]
        bit = (byte >> (slot & np.uint64(7)).astype(np.uint8)) & np.uint8(1)
        out: npt.NDArray[np.bool_] = bit.astype(np.bool_)
        return out

    def __len__(self) -> int:
        return int(self.keys.size)

    def lookup(self, hashes: U64Array) -> tuple[IntArray, IntArray]:
        """Positions ``i`` of ``hashes`` found in the table, and each one's index into :attr:`keys`.

        Complexity: O(len(hashes)) for the filter plus O(log G) per hash that
        passes it. ``hashes[i] == keys[j]`` for every returned pair ``(i, j)``.
        """
        empty = np.zeros(0, dtype=np.int64)
        if self.keys.size == 0 or hashes.size == 0:
            return empty, empty
        cand = np.flatnonzero(self._passes(hashes))
        if cand.size == 0:
            return empty, empty
        hc = hashes[cand]
        pos = np.searchsorted(self.keys, hc)
        np.minimum(pos, self.keys.size - 1, out=pos)
        eq = self.keys[pos] == hc
        return cand[eq].astype(np.int64), pos[eq].astype(np.int64)

    def _check(self) -> None:
        """Assert the invariants: keys strictly increasing, no empty bitmask, the filter covers every key."""
        assert self.keys.dtype == np.uint64 and self.keys.shape == self.members.shape
        assert bool(np.all(self.keys[1:] > self.keys[:-1])), "keys must be strictly increasing"
        assert not bool(np.any(self.members == 0)), "every key belongs to some reference"
        assert bool(np.all(self._passes(self.keys))), "the filter must cover every key"


@dataclass(frozen=True)
class _Pass:
    """Partitions ``first .. last - 1`` (on disk) and their distinct grams."""

    first: int
    last: int
    grams: int


class GramIndex:
    """The reference grams of one scan: one table in memory, or on-disk passes (see the module docstring).

    Attributes:
        mode: ``"memory"`` or ``"disk"``.
        references: number of reference sets (bits of :attr:`GramTable.members`).
        grams: distinct hashes over all references (``G`` of the false-positive formula).
        reference_grams: distinct hashes of each reference.
        memory_grams: the in-memory bound the index was built with.
        directory: the partition directory (disk mode), else ``None``.
    """

    def __init__(self, *, mode: Literal["memory", "disk"], references: int, memory_grams: int,
                 reference_grams: tuple[int, ...], table: GramTable | None = None,
                 directory: str | None = None, passes: tuple[_Pass, ...] = (),
                 owns_directory: bool = False) -> None:
        self.mode = mode
        self.references = references
        self.memory_grams = memory_grams
        self.reference_grams = reference_grams
        self.directory = directory
        self._table = table
        self._passes = passes
        self._owns = owns_directory
        self.dtype = members_dtype(references)
        self.grams = len(table) if table is not None else sum(p.grams for p in passes)

    @property
    def passes(self) -> int:
        """How many times a scan reads its inputs (1 in memory)."""
        return 1 if self.mode == "memory" else len(self._passes)

    @property
    def largest_pass_grams(self) -> int:
        """Distinct grams of the largest table a scan holds at once."""
        if self._table is not None:
            return len(self._table)
        return max((p.grams for p in self._passes), default=0)

    def tables(self) -> Iterator[GramTable]:
        """Yield one :class:`GramTable` per pass (disk mode: loaded from the partitions, one at a time)."""
        if self._table is not None:
            yield self._table
            return
        assert self.directory is not None
        for p in self._passes:
            keys = [np.load(_part_path(self.directory, i, "keys.npy")) for i in range(p.first, p.last)]
            members = [np.load(_part_path(self.directory, i, "members.npy")) for i in range(p.first, p.last)]
            yield GramTable(np.concatenate(keys) if keys else np.zeros(0, np.uint64),
                            np.concatenate(members) if members else np.zeros(0, self.dtype))

    def describe(self) -> dict[str, object]:
        """The index's shape for a report: mode, bound, passes, grams (no hash values)."""
        return {"mode": self.mode, "memory_grams": self.memory_grams, "passes": self.passes,
                "largest_pass_grams": self.largest_pass_grams, "grams": self.grams,
                "partitions": PARTITIONS if self.mode == "disk" else None}

    def close(self) -> None:
        """Remove the partition directory when the index created it (idempotent)."""
        if self._owns and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self._owns = False

    def __enter__(self) -> GramIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self) -> None:
        """Assert: the per-reference counts fit the total, passes are contiguous and within the bound."""
        assert len(self.reference_grams) == self.references
        assert max(self.reference_grams, default=0) <= self.grams <= sum(self.reference_grams)
        if self.mode == "memory":
            assert self._table is not None and len(self._table) <= self.memory_grams
            self._table._check()
        else:
            assert self._table is None and self._passes and self._passes[0].first == 0
            assert self._passes[-1].last == PARTITIONS
            for a, b in zip(self._passes, self._passes[1:], strict=False):
                assert a.last == b.first
            for p in self._passes:  # a pass exceeds the bound only when it is one partition
                assert p.grams <= self.memory_grams or p.last - p.first == 1


def _part_path(directory: str, part: int, suffix: str) -> str:
    return os.path.join(directory, f"part-{part:03d}.{suffix}")


class IndexBuilder:
    """Collect reference window hashes in at most ``memory_grams`` of buffer; :meth:`finish` builds the index.

    Args:
        references: how many reference sets will be added (1..64).
        memory_grams: the in-memory bound (distinct grams), at least 1.
        directory: where partitions go if the bound is exceeded: a new
            directory inside it (default: inside the system's temporary
            directory), removed by :meth:`GramIndex.close`.

    Memory: the buffer holds fewer than ``2 * memory_grams`` hashes (an
    :meth:`add` call is taken in pieces of ``memory_grams // 2``; the buffer
    is deduplicated once it reaches ``1.5 * memory_grams``, and goes to disk
    when more than ``memory_grams`` distinct grams remain). Deduplicating
    costs about 27 bytes per buffered hash at that moment.
    """

    def __init__(self, references: int, memory_grams: int = DEFAULT_MEMORY_GRAMS, *,
                 directory: str | os.PathLike[str] | None = None) -> None:
        self.references = check_int("references", references, 1, maximum=MAX_REFERENCES)
        self.memory_grams = check_int("memory_grams", memory_grams, 1)
        self.dtype = members_dtype(self.references)
        self._directory = None if directory is None else os.fspath(directory)
        self._keys: list[U64Array] = []
        self._members: list[npt.NDArray[np.unsignedinteger]] = []
        self._buffered = 0
        self._spill_dir: str | None = None
        self._owns = False
        self._spilled = 0
        self._finished = False

    def add(self, hashes: U64Array, reference: int) -> None:
        """Add the window hashes of reference ``reference`` (0-based; duplicates are fine)."""
        if self._finished:
            raise InputError("add() after finish(): build a new IndexBuilder")
        reference = check_int("reference", reference, 0, maximum=self.references - 1)
        if hashes.dtype != np.uint64 or hashes.ndim != 1:
            raise InputError(f"hashes must be a 1-D uint64 array, got {hashes.dtype} of shape {hashes.shape}")
        step = max(1, self.memory_grams // 2)  # a large call is taken in pieces: the buffer stays bounded
        for lo in range(0, int(hashes.size), step):
            piece = hashes[lo : lo + step]
            self._keys.append(piece)
            self._members.append(np.full(piece.size, 1 << reference, dtype=self.dtype))
            self._buffered += int(piece.size)
            if self._buffered >= self.memory_grams + step:  # dedupe; beyond the bound, go to disk
                self._consolidate()
                if self._buffered > self.memory_grams:
                    self._spill()

    @property
    def spilled(self) -> bool:
        """Whether the buffer went to disk (the index will be on disk)."""
        return self._spill_dir is not None

    def _consolidate(self) -> None:
        if len(self._keys) <= 1 and self._buffered == 0:
            return
        keys = np.concatenate(self._keys) if self._keys else np.zeros(0, np.uint64)
        self._keys = []  # the pieces go before the deduplication allocates
        members = np.concatenate(self._members) if self._members else np.zeros(0, self.dtype)
        self._members = []
        k, m = unique_members(keys, members)
        del keys, members
        self._keys, self._members, self._buffered = [k], [m], int(k.size)

    def _spill(self) -> None:
        """Append the (consolidated, sorted) buffer to the partition files and empty it."""
        if self._spill_dir is None:  # always a fresh directory (inside ``directory`` when given)
            if self._directory is not None:
                os.makedirs(self._directory, exist_ok=True)
            self._spill_dir = tempfile.mkdtemp(prefix="packing-theory-grams-", dir=self._directory)
            self._owns = True
        self._consolidate()
        if not self._keys:
            return
        keys, members = self._keys[0], self._members[0]
        bounds = np.searchsorted(keys >> _PART_SHIFT, np.arange(PARTITIONS + 1, dtype=np.uint64))
        for part in range(PARTITIONS):
            lo, hi = int(bounds[part]), int(bounds[part + 1])
            if lo == hi:
                continue
            with open(_part_path(self._spill_dir, part, "keys.raw"), "ab") as fh:
                keys[lo:hi].tofile(fh)
            with open(_part_path(self._spill_dir, part, "members.raw"), "ab") as fh:
                members[lo:hi].tofile(fh)
        self._spilled += int(keys.size)
        self._keys, self._members, self._buffered = [], [], 0

    def discard(self) -> None:
        """Give up the build: remove the partition files the builder created (idempotent)."""
        self._finished = True
        self._keys, self._members, self._buffered = [], [], 0
        if self._owns and self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._owns = False

    def finish(self) -> GramIndex:
        """The index (in memory when it fits ``memory_grams``, else on disk); the builder is spent."""
        if self._finished:
            raise InputError("finish() was already called")
        self._consolidate()
        self._finished = True
        if self._spill_dir is None and self._buffered <= self.memory_grams:
            keys = self._keys[0] if self._keys else np.zeros(0, np.uint64)
            members = self._members[0] if self._members else np.zeros(0, self.dtype)
            self._keys, self._members = [], []
            table = GramTable(keys, members)
            return GramIndex(mode="memory", references=self.references, memory_grams=self.memory_grams,
                             reference_grams=_per_reference(members, self.references), table=table)
        self._spill()
        assert self._spill_dir is not None
        return self._finish_disk(self._spill_dir)

    def _finish_disk(self, directory: str) -> GramIndex:
        counts = np.zeros(PARTITIONS, dtype=np.int64)
        per_ref = np.zeros(self.references, dtype=np.int64)
        for part in range(PARTITIONS):
            raw_keys = _part_path(directory, part, "keys.raw")
            if os.path.exists(raw_keys):
                keys = np.fromfile(raw_keys, dtype=np.uint64)
                members = np.fromfile(_part_path(directory, part, "members.raw"), dtype=self.dtype)
                os.remove(raw_keys)
                os.remove(_part_path(directory, part, "members.raw"))
                keys, members = unique_members(keys, members)
            else:
                keys, members = np.zeros(0, np.uint64), np.zeros(0, self.dtype)
            np.save(_part_path(directory, part, "keys.npy"), keys)
            np.save(_part_path(directory, part, "members.npy"), members)
            counts[part] = keys.size
            per_ref += np.asarray(_per_reference(members, self.references), dtype=np.int64)
        passes: list[_Pass] = []
        first, total = 0, 0
        for part in range(PARTITIONS):
            c = int(counts[part])
            if part > first and total + c > self.memory_grams:
                passes.append(_Pass(first, part, total))
                first, total = part, 0
            total += c
        passes.append(_Pass(first, PARTITIONS, total))
        return GramIndex(mode="disk", references=self.references, memory_grams=self.memory_grams,
                         reference_grams=tuple(int(x) for x in per_ref), directory=directory,
                         passes=tuple(passes), owns_directory=self._owns)

    def _check(self) -> None:
        """Assert the buffer bookkeeping: counts match the arrays, every member has its reference's bit."""
        assert self._buffered == sum(int(k.size) for k in self._keys)
        assert len(self._keys) == len(self._members)
        for k, m in zip(self._keys, self._members, strict=True):
            assert k.shape == m.shape and m.dtype == self.dtype and not bool(np.any(m == 0))
        if not self._finished:
            assert self._buffered < 2 * self.memory_grams


def _per_reference(members: npt.NDArray[np.unsignedinteger], references: int) -> tuple[int, ...]:
    """Distinct grams of each reference: how many bitmasks have bit ``r`` set."""
    one = members.dtype.type(1)
    return tuple(int(np.count_nonzero((members >> members.dtype.type(r)) & one)) for r in range(references))
