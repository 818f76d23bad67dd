"""The reference gram index, held within ``memory_grams`` grams: one table in memory, or sorted on disk.

:class:`IndexBuilder` collects the window hashes of the reference sets
(:mod:`packing_theory.contamination.hashing`), each tagged with the reference
it came from, and :meth:`IndexBuilder.finish` returns a :class:`GramIndex`.
**No step holds more than ``memory_grams`` grams**, whatever the references
(a count of hashes held, checked by :meth:`IndexBuilder._check` and recorded
in :attr:`IndexBuilder.peak_grams`; each held gram costs a constant number of
bytes, measured by ``benchmarks/bench_contamination.py``):

* the builder's buffer holds at most ``memory_grams`` hashes; a full buffer
  is deduplicated, and when more than half of it is then distinct it is
  **spilled**: sorted, and appended to 256 partition files by the hash's top
  8 bits (in a fresh directory inside ``directory``);
* an index that never spilled is **in memory**: one
  :class:`~packing_theory.contamination.table.GramTable`;
* otherwise it is **on disk**: each partition, in order, is read whole and
  deduplicated when it holds at most ``memory_grams`` hashes, else split by
  its next 8 bits into sub-partitions (read ``memory_grams`` at a time) and
  those finished in order; a partition all of whose 8 bytes are fixed holds
  one distinct hash, reduced while streaming. The distinct hashes are
  appended to one sorted file, which is cut into **passes** of at most
  ``memory_grams`` grams. A scan loads one pass's table at a time
  (:meth:`GramIndex.tables`) and reads its inputs once per pass; a window's
  hash lies in exactly one pass's range, so the passes partition the matches.

:meth:`GramIndex.files` gives a picklable :class:`IndexFiles` from which a
worker process loads a pass (:meth:`IndexFiles.table`), for the parallel scan.

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

import itertools
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
from .table import MAX_REFERENCES, GramTable, members_dtype, unique_members

__all__ = [
    "DEFAULT_MEMORY_GRAMS",
    "MAX_REFERENCES",
    "PARTITIONS",
    "GramIndex",
    "GramTable",
    "IndexBuilder",
    "IndexFiles",
    "members_dtype",
    "unique_members",
]

DEFAULT_MEMORY_GRAMS = 1 << 23
"""Distinct reference grams held in memory before the index goes to disk (8,388,608).

Seed 002's references held about a million grams. Memory at the bound: see
``docs/contamination.rst`` (measured by ``benchmarks/bench_contamination.py``).
"""

PARTITIONS = 256
"""Partition files a spill writes, by the top 8 bits of the hash (and again per level of splitting)."""

U64Array = npt.NDArray[np.uint64]
Members = npt.NDArray[np.unsignedinteger]


def _per_reference(members: Members, references: int) -> npt.NDArray[np.int64]:
    """Distinct grams of each reference: how many bitmasks have bit ``r`` set."""
    one = members.dtype.type(1)
    return np.array([np.count_nonzero((members >> members.dtype.type(r)) & one) for r in range(references)],
                    dtype=np.int64)


@dataclass(frozen=True)
class IndexFiles:
    """An index's sorted keys and members on disk, and its passes (picklable: a worker loads a pass).

    Attributes:
        keys: the file of sorted distinct ``uint64`` hashes.
        members: the file of their bitmasks (``dtype``).
        dtype: the bitmasks' dtype name.
        passes: ``(first, stop)`` key positions of each pass.
    """

    keys: str
    members: str
    dtype: str
    passes: tuple[tuple[int, int], ...]

    def table(self, k: int) -> GramTable:
        """The table of pass ``k``, read from the files. O(pass grams)."""
        first, stop = self.passes[k]
        dt = np.dtype(self.dtype)
        keys = np.fromfile(self.keys, dtype=np.uint64, count=stop - first, offset=8 * first)
        members = np.fromfile(self.members, dtype=dt, count=stop - first, offset=dt.itemsize * first)
        if keys.size != stop - first or members.size != stop - first:
            raise OSError(f"index file {self.keys!r} is shorter than its {stop:,} grams: it changed")
        return GramTable(keys, members)


class GramIndex:
    """The reference grams of one scan: one table in memory, or sorted on disk in passes.

    Attributes:
        mode: ``"memory"`` or ``"disk"``.
        references: number of reference sets (bits of :attr:`GramTable.members`).
        grams: distinct hashes over all references (``G`` of the false-positive formula).
        reference_grams: distinct hashes of each reference.
        memory_grams: the bound the index was built with.
        directory: the index directory (disk mode, or after :meth:`files`), else ``None``.
    """

    def __init__(self, *, mode: Literal["memory", "disk"], references: int, memory_grams: int,
                 reference_grams: tuple[int, ...], grams: int, table: GramTable | None = None,
                 directory: str | None = None, files: IndexFiles | None = None,
                 owns_directory: bool = False, parent: str | None = None) -> None:
        self.mode = mode
        self.references = references
        self.memory_grams = memory_grams
        self.reference_grams = reference_grams
        self.grams = grams
        self.directory = directory
        self.dtype = members_dtype(references)
        self._table = table
        self._files = files
        self._owns = owns_directory
        self._parent = parent

    @property
    def passes(self) -> int:
        """How many times a scan reads its inputs (1 in memory)."""
        return 1 if self._files is None or self._table is not None else len(self._files.passes)

    @property
    def largest_pass_grams(self) -> int:
        """Distinct grams of the largest table a scan holds at once (at most :attr:`memory_grams`)."""
        if self._table is not None:
            return len(self._table)
        assert self._files is not None
        return max((stop - first for first, stop in self._files.passes), default=0)

    def tables(self) -> Iterator[GramTable]:
        """Yield one table per pass (disk mode: read from the files, one at a time)."""
        if self._table is not None:
            yield self._table
            return
        assert self._files is not None
        for k in range(len(self._files.passes)):
            yield self._files.table(k)

    def files(self) -> IndexFiles:
        """The index as files a worker process can read (an in-memory index is written out first)."""
        if self._files is None:
            assert self._table is not None
            if self.directory is None:
                if self._parent is not None:
                    os.makedirs(self._parent, exist_ok=True)
                self.directory = tempfile.mkdtemp(prefix="packing-theory-grams-", dir=self._parent)
                self._owns = True
            keys = os.path.join(self.directory, "keys.u64")
            members = os.path.join(self.directory, "members.bin")
            self._table.keys.tofile(keys)
            self._table.members.tofile(members)
            self._files = IndexFiles(keys, members, self.dtype.name, ((0, len(self._table)),))
        return self._files

    def describe(self) -> dict[str, object]:
        """The index's shape for a report: mode, bound, passes, grams (no hash values)."""
        return {"mode": self.mode, "memory_grams": self.memory_grams, "passes": self.passes,
                "largest_pass_grams": self.largest_pass_grams, "grams": self.grams}

    def close(self) -> None:
        """Remove the index directory when the index created it (idempotent)."""
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
            assert self._table is not None and len(self._table) == self.grams <= self.memory_grams
            self._table._check()
            return
        assert self._table is None and self._files is not None
        passes = self._files.passes
        assert not passes or (passes[0][0] == 0 and passes[-1][1] == self.grams)
        for (_, a), (b, _) in itertools.pairwise(passes):
            assert a == b, "passes must be contiguous"
        assert all(0 < stop - first <= self.memory_grams for first, stop in passes), "a pass exceeds the "\
            "bound"
        assert os.path.getsize(self._files.keys) == 8 * self.grams


def _part(directory: str, name: str, suffix: str) -> str:
    return os.path.join(directory, f"part-{name}.{suffix}")


class IndexBuilder:
    """Collect reference window hashes holding at most ``memory_grams``; :meth:`finish` builds the index.

    Args:
        references: how many reference sets will be added (1..64).
        memory_grams: the bound on grams held at any moment, at least 1.
        directory: where the index goes if it does not fit: a new directory
            inside it (default: inside the system's temporary directory),
            removed by :meth:`GramIndex.close`.

    Memory: at most ``memory_grams`` hashes and their bitmasks buffered
    (:attr:`peak_grams`), plus the temporaries of deduplicating them (a sort:
    about 3 times the buffer's bytes at that moment).
    """

    def __init__(self, references: int, memory_grams: int = DEFAULT_MEMORY_GRAMS, *,
                 directory: str | os.PathLike[str] | None = None) -> None:
        self.references = check_int("references", references, 1, maximum=MAX_REFERENCES)
        self.memory_grams = check_int("memory_grams", memory_grams, 1)
        self.dtype = members_dtype(self.references)
        self._directory = None if directory is None else os.fspath(directory)
        self._keys: list[U64Array] = []
        self._members: list[Members] = []
        self._buffered = 0
        self._sorted = True  # the buffer is one sorted, distinct array (or empty)
        self._spill_dir: str | None = None
        self._owns = False
        self._finished = False
        self.peak_grams = 0
        """The most grams held at once so far (buffer, or a partition being finished)."""

    def _held(self, grams: int) -> None:
        self.peak_grams = max(self.peak_grams, grams)

    def add(self, hashes: U64Array, reference: int) -> None:
        """Add the window hashes of reference ``reference`` (0-based; duplicates are fine; copied)."""
        if self._finished:
            raise InputError("add() after finish(): build a new IndexBuilder")
        reference = check_int("reference", reference, 0, maximum=self.references - 1)
        if not isinstance(hashes, np.ndarray) or hashes.dtype != np.uint64 or hashes.ndim != 1:
            got = getattr(hashes, "dtype", type(hashes))
            raise InputError(f"hashes must be a 1-D uint64 array, got {got} "
                             f"of shape {getattr(hashes, 'shape', None)}")
        pos, size = 0, int(hashes.size)
        while pos < size:
            if self._buffered == self.memory_grams:
                self._consolidate()
                if 2 * self._buffered > self.memory_grams:
                    self._spill()
            take = min(self.memory_grams - self._buffered, size - pos)
            self._keys.append(hashes[pos : pos + take].copy())
            self._members.append(np.full(take, 1 << reference, dtype=self.dtype))
            self._buffered += take
            self._sorted = False
            self._held(self._buffered)
            pos += take

    @property
    def spilled(self) -> bool:
        """Whether the buffer went to disk (the index will be on disk)."""
        return self._spill_dir is not None

    def _consolidate(self) -> None:
        if self._sorted:
            return
        if not self._keys:
            self._sorted = True
            return
        keys = np.concatenate(self._keys) if len(self._keys) > 1 else self._keys[0]
        self._keys = []  # the pieces go before the deduplication allocates
        members = np.concatenate(self._members) if len(self._members) > 1 else self._members[0]
        self._members = []
        k, m = unique_members(keys, members)
        del keys, members
        self._keys, self._members, self._buffered = [k], [m], int(k.size)
        self._sorted = True

    def _spill(self) -> None:
        """Append the (consolidated, sorted) buffer to the partition files and empty it."""
        if self._spill_dir is None:  # always a fresh directory (inside ``directory`` when given)
            if self._directory is not None:
                os.makedirs(self._directory, exist_ok=True)
            self._spill_dir = tempfile.mkdtemp(prefix="packing-theory-grams-", dir=self._directory)
            self._owns = True
        self._consolidate()
        if self._keys:
            _append_split(self._spill_dir, "", self._keys[0], self._members[0], 56)
        self._keys, self._members, self._buffered, self._sorted = [], [], 0, True

    def discard(self) -> None:
        """Give up the build: remove the files the builder created (idempotent)."""
        self._finished = True
        self._keys, self._members, self._buffered = [], [], 0
        if self._owns and self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._owns = False

    def finish(self) -> GramIndex:
        """The index (in memory when it never spilled, else on disk); the builder is spent."""
        if self._finished:
            raise InputError("finish() was already called")
        self._consolidate()
        self._finished = True
        if self._spill_dir is None:
            keys = self._keys[0] if self._keys else np.zeros(0, np.uint64)
            members = self._members[0] if self._members else np.zeros(0, self.dtype)
            self._keys, self._members, self._buffered = [], [], 0
            per_ref = tuple(int(x) for x in _per_reference(members, self.references))
            return GramIndex(mode="memory", references=self.references, memory_grams=self.memory_grams,
                             reference_grams=per_ref, grams=int(keys.size), table=GramTable(keys, members),
                             parent=self._directory)
        self._spill()
        try:
            return self._finish_disk(self._spill_dir)
        except BaseException:
            self.discard()
            raise

    def _finish_disk(self, directory: str) -> GramIndex:
        out = _Output(directory, self.dtype, self.references)
        for byte in range(PARTITIONS):
            self._finish_part(directory, f"{byte:03d}", 1, out)
        out.close()
        passes = tuple((first, min(out.total, first + self.memory_grams))
                       for first in range(0, out.total, self.memory_grams))
        files = IndexFiles(out.keys_path, out.members_path, self.dtype.name, passes)
        return GramIndex(mode="disk", references=self.references, memory_grams=self.memory_grams,
                         reference_grams=tuple(int(x) for x in out.per_ref), grams=out.total,
                         directory=directory, files=files, owns_directory=self._owns)

    def _finish_part(self, directory: str, name: str, level: int, out: _Output) -> None:
        """Deduplicate partition ``name`` (its top ``level`` bytes fixed) into ``out``, in key order."""
        keys_path = _part(directory, name, "keys")
        if not os.path.exists(keys_path):
            return
        members_path = _part(directory, name, "members")
        count = os.path.getsize(keys_path) // 8
        step = self.memory_grams
        if count <= step:
            self._held(count)
            keys, members = unique_members(np.fromfile(keys_path, dtype=np.uint64),
                                           np.fromfile(members_path, dtype=self.dtype))
            out.write(keys, members)
        elif level == 8:  # every hash here is the same one: OR the bitmasks while streaming
            acc = self.dtype.type(0)
            for lo in range(0, count, step):
                m = np.fromfile(members_path, dtype=self.dtype, count=step, offset=lo * self.dtype.itemsize)
                self._held(int(m.size))
                acc |= np.bitwise_or.reduce(m)
            first = np.fromfile(keys_path, dtype=np.uint64, count=1)
            out.write(first, np.array([acc], dtype=self.dtype))
        else:
            for lo in range(0, count, step):
                k = np.fromfile(keys_path, dtype=np.uint64, count=step, offset=8 * lo)
                m = np.fromfile(members_path, dtype=self.dtype, count=step, offset=lo * self.dtype.itemsize)
                self._held(int(k.size))
                _append_split(directory, name + "-", k, m, 56 - 8 * level)
        os.remove(keys_path)
        os.remove(members_path)
        if count > step and level < 8:
            for byte in range(PARTITIONS):
                self._finish_part(directory, f"{name}-{byte:03d}", level + 1, out)

    def _check(self) -> None:
        """Assert the buffer bookkeeping: counts match the arrays, the bound holds, bitmasks are non-zero."""
        assert self._buffered == sum(int(k.size) for k in self._keys)
        assert len(self._keys) == len(self._members)
        for k, m in zip(self._keys, self._members, strict=True):
            assert k.shape == m.shape and m.dtype == self.dtype and not bool(np.any(m == 0))
        assert self._buffered <= self.memory_grams and self.peak_grams <= self.memory_grams


def _append_split(directory: str, prefix: str, keys: U64Array, members: Members, shift: int) -> None:
    """Append ``keys`` (and ``members``) to the files ``prefix + byte``, by the byte at bit ``shift``."""
    byte = (keys >> np.uint64(shift)) & np.uint64(255)
    order = np.argsort(byte, kind="stable")
    byte, keys, members = byte[order], keys[order], members[order]
    bounds = np.searchsorted(byte, np.arange(PARTITIONS + 1, dtype=np.uint64))
    for b in range(PARTITIONS):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        if lo == hi:
            continue
        with open(_part(directory, f"{prefix}{b:03d}", "keys"), "ab") as fh:
            keys[lo:hi].tofile(fh)
        with open(_part(directory, f"{prefix}{b:03d}", "members"), "ab") as fh:
            members[lo:hi].tofile(fh)


class _Output:
    """The sorted, distinct keys and members of a disk index, appended partition by partition."""

    def __init__(self, directory: str, dtype: np.dtype[np.unsignedinteger], references: int) -> None:
        self.keys_path = os.path.join(directory, "keys.u64")
        self.members_path = os.path.join(directory, "members.bin")
        self._keys = open(self.keys_path, "wb")  # noqa: SIM115 -- closed by close()
        self._members = open(self.members_path, "wb")  # noqa: SIM115
        self.references = references
        self.per_ref = np.zeros(references, dtype=np.int64)
        self.total = 0
        self.dtype = dtype

    def write(self, keys: U64Array, members: Members) -> None:
        keys.tofile(self._keys)
        members.astype(self.dtype, copy=False).tofile(self._members)
        self.per_ref += _per_reference(members, self.references)
        self.total += int(keys.size)

    def close(self) -> None:
        self._keys.close()
        self._members.close()
