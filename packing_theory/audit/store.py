"""Per-occurrence columns out of core: a :class:`ColumnStore` of named columns, in memory or on disk.

A ledger keeps a few numbers per occurrence (its length, emitted, discarded
and buffered tokens, flags, first row, ...). Held in memory that is
O(occurrences): 13 to 40 bytes each, 13 GiB and more at a billion documents.
A :class:`ColumnStore` holds such columns by row (row = occurrence id) in one
of two forms behind one interface:

* **in memory** (``ColumnStore()``): numpy arrays grown by doubling — what a
  small corpus or an offline peer (which holds its whole corpus by design)
  uses;
* **on disk** (``ColumnStore(path)`` or :meth:`ColumnStore.temporary`): a
  directory with one ``.npy`` file per column (``NAME.npy``, a fixed
  128-byte version-1.0 header, then the values in row order). Rows are
  appended with plain ``pwrite`` calls and read back with ``preadv`` into
  fresh arrays: no file is memory-mapped, so nothing written or read stays in
  the process's resident set (pages in the kernel's cache are not RSS). The
  header's shape is rewritten by :meth:`ColumnStore.sync` (and
  :meth:`ColumnStore.close`), after which every file opens with
  ``numpy.load(path, mmap_mode="r")``.

Rows are written once in order (:meth:`~ColumnStore.append`); a few rows can
be rewritten in place (:meth:`~ColumnStore.write`: the records a ledger
settled late). A column can be added after rows exist (filled with a
constant or with the row index) and widened to a larger integer type
(``int32`` to ``int64``, rewritten in chunks). Memory of the disk form:
O(columns) besides what a read returns.

>>> s = ColumnStore()
>>> s.add("length", np.int32)
>>> s.append({"length": np.array([5, 3, 9])})
>>> s.add("source", np.int64, fill=None)   # None: each row's own index
>>> s.read(0, 3)["source"].tolist(), s.take(np.array([2]))["length"].tolist()
([0, 1, 2], [9])
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError

__all__ = ["HEADER_BYTES", "OUT_OF_CORE", "ColumnStore", "out_of_core_store", "read_npy_rows", "runs"]

HEADER_BYTES = 128
"""Bytes of every column file's ``.npy`` header (magic, version 1.0, the padded dictionary)."""

OUT_OF_CORE = 1 << 22
"""Occurrences past which :func:`out_of_core_store` puts a replay's per-occurrence state on disk."""

_COPY_CHUNK = 1 << 20
Int64Array = npt.NDArray[np.int64]
Fill = int | None  # a constant, or None: each row's index


def _header(dtype: np.dtype[Any], rows: int) -> bytes:
    """A version-1.0 ``.npy`` header of exactly :data:`HEADER_BYTES` bytes."""
    text = f"{{'descr': {dtype.str!r}, 'fortran_order': False, 'shape': ({rows},), }}"
    body = text.encode("latin1")
    pad = HEADER_BYTES - 10 - len(body) - 1
    if pad < 0:  # pragma: no cover - a 1-D shape always fits
        raise InputError(f"a column header for {rows} rows does not fit {HEADER_BYTES} bytes")
    return b"\x93NUMPY\x01\x00" + (HEADER_BYTES - 10).to_bytes(2, "little") + body + b" " * pad + b"\n"


def runs(ids: Int64Array) -> list[tuple[int, int, int]]:
    """``(first id, stop id, position in ids)`` of each run of consecutive values of sorted ``ids``. O(n).

    >>> runs(np.array([2, 3, 4, 9, 11, 12]))
    [(2, 5, 0), (9, 10, 3), (11, 13, 4)]
    """
    if not ids.size:
        return []
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [ids.size]])
    return [(int(ids[a]), int(ids[b - 1]) + 1, int(a)) for a, b in zip(starts.tolist(), stops.tolist(),
                                                                      strict=True)]


def read_npy_rows(path: str | os.PathLike[str], a: int, b: int) -> npt.NDArray[Any]:
    """Rows ``[a, b)`` of a 1-D ``.npy`` file read with ``preadv`` (nothing mapped). O(b - a).

    Raises:
        InputError: not a 1-D C-order ``.npy`` file, or rows beyond its length.
    """
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        start = f.tell()
        if fortran or len(shape) != 1 or not 0 <= a <= b <= shape[0]:
            raise InputError(f"{os.fspath(path)}: rows [{a}, {b}) of a {shape} array (1-D, C order needed)")
        out = np.empty(b - a, dtype)
        if out.nbytes:
            os.preadv(f.fileno(), [out.data.cast("B")], start + a * dtype.itemsize)
    return out


class ColumnStore:
    """Named 1-D columns of equal length, in memory or one ``.npy`` file each in ``path`` (module doc).

    Args:
        path: a directory (created if missing; it must not hold column files
            of another store) for the disk form; ``None`` keeps the columns in memory.

    Not thread-safe. Complexity: :meth:`append` and :meth:`read` O(rows
    moved); :meth:`take` and :meth:`write` O(rows + runs of consecutive ids).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.rows = 0
        self._dtypes: dict[str, np.dtype[Any]] = {}
        self._fills: dict[str, Fill] = {}
        self._mem: dict[str, npt.NDArray[Any]] = {}
        self._fds: dict[str, int] = {}
        self._cleanup: weakref.finalize[Any, Any] | None = None
        self._synced = True
        if self.path is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            stale = sorted(p.name for p in self.path.glob("*.npy"))
            if stale:
                raise InputError(f"store directory {os.fspath(self.path)!r} already holds column files "
                                 f"({', '.join(stale[:3])}); give an empty directory")

    @classmethod
    def temporary(cls, dir: str | os.PathLike[str] | None = None) -> ColumnStore:
        """A disk store in a new temporary directory (under ``dir``), removed with the store."""
        store = cls(tempfile.mkdtemp(prefix="packing-theory-store-", dir=dir))
        assert store.path is not None
        store._cleanup = weakref.finalize(store, _remove, store.path, store._fds)
        return store

    # ------------------------------------------------------------------ columns

    @property
    def on_disk(self) -> bool:
        """Whether the columns are files (else numpy arrays in memory)."""
        return self.path is not None

    @property
    def names(self) -> tuple[str, ...]:
        """The columns, in the order they were added."""
        return tuple(self._dtypes)

    def dtype(self, name: str) -> np.dtype[Any]:
        """The type of column ``name``."""
        self._known(name)
        return self._dtypes[name]

    def _known(self, name: str) -> None:
        if name not in self._dtypes:
            raise InputError(f"column must be one of {', '.join(self._dtypes) or '(none)'}; got {name!r}")

    def add(self, name: str, dtype: npt.DTypeLike, fill: Fill = 0) -> None:
        """Add a column; the rows already held get ``fill`` (``None``: each row's index). O(rows)."""
        if not isinstance(name, str) or not name.isidentifier():
            raise InputError(f"a column name must be an identifier, got {name!r}")
        if name in self._dtypes:
            raise InputError(f"column {name!r} exists already")
        dt = np.dtype(dtype)
        if dt.kind not in "biu":
            raise InputTypeError(f"column {name!r} must hold integers or booleans, got {dt}")
        self._dtypes[name] = dt
        self._fills[name] = fill
        if self.path is None:
            cap = max(self._capacity(), 16)
            col = np.zeros(cap, dt)
            col[: self.rows] = self._filled(name, 0, self.rows)
            self._mem[name] = col
            return
        fd = os.open(self.path / f"{name}.npy", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._fds[name] = fd
        os.pwrite(fd, _header(dt, self.rows), 0)
        for a in range(0, self.rows, _COPY_CHUNK):
            self._pwrite(name, a, self._filled(name, a, min(self.rows, a + _COPY_CHUNK)))
        self._synced = False

    def _capacity(self) -> int:
        return next(iter(self._mem.values())).size if self._mem else 0

    def _filled(self, name: str, a: int, b: int) -> npt.NDArray[Any]:
        fill, dt = self._fills[name], self._dtypes[name]
        if fill is None:
            return np.arange(a, b, dtype=dt)
        return np.full(b - a, fill, dt)

    def widen(self, name: str, dtype: npt.DTypeLike) -> None:
        """Rewrite column ``name`` as ``dtype`` (values kept; a wider integer type). O(rows)."""
        self._known(name)
        dt = np.dtype(dtype)
        old = self._dtypes[name]
        if dt == old:
            return
        if not np.can_cast(old, dt, "safe"):
            raise InputError(f"column {name!r}: {old} does not widen to {dt}")
        self._dtypes[name] = dt
        if self.path is None:
            self._mem[name] = self._mem[name].astype(dt)
            return
        assert self.path is not None
        tmp = self.path / f".{name}.widen"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(fd, _header(dt, self.rows), 0)
        for a in range(0, self.rows, _COPY_CHUNK):
            b = min(self.rows, a + _COPY_CHUNK)
            part = self._pread(name, a, b, old).astype(dt)
            os.pwrite(fd, part.data.cast("B"), HEADER_BYTES + a * dt.itemsize)
        os.close(self._fds[name])
        os.replace(tmp, self.path / f"{name}.npy")
        self._fds[name] = fd
        self._synced = False

    # ------------------------------------------------------------------ rows

    def append(self, columns: Mapping[str, npt.ArrayLike]) -> None:
        """Append rows; columns not given get their fill. Every given column has the same length."""
        sizes = {name: np.shape(v)[0] if np.ndim(v) else -1 for name, v in columns.items()}
        for name in columns:
            self._known(name)
        if len(set(sizes.values())) > 1 or -1 in sizes.values():
            raise InputError(f"append needs 1-D columns of one length, got {sizes}")
        m = next(iter(sizes.values())) if sizes else 0
        a, b = self.rows, self.rows + m
        if not m:
            return
        if self.path is None and b > self._capacity():
            cap = max(b, 2 * self._capacity())
            for name, col in self._mem.items():
                grown = np.zeros(cap, col.dtype)
                grown[: self.rows] = col[: self.rows]
                self._mem[name] = grown
        for name in self._dtypes:
            values = (np.asarray(columns[name]) if name in columns else self._filled(name, a, b))
            self._put(name, a, self._cast(name, values))
        self.rows = b
        self._synced = False

    def _cast(self, name: str, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        dt = self._dtypes[name]
        out = values.astype(dt, copy=False)
        if values.dtype.kind in "iu" and dt.kind in "iu" and not np.can_cast(values.dtype, dt, "safe") \
                and values.size and (values.min() < np.iinfo(dt).min or values.max() > np.iinfo(dt).max):
            raise InputError(f"column {name!r} ({dt}) cannot hold {int(values.min())}..{int(values.max())}: "
                             "widen it first")
        return np.ascontiguousarray(out)

    def _put(self, name: str, a: int, values: npt.NDArray[Any]) -> None:
        if self.path is None:
            self._mem[name][a : a + values.size] = values
        else:
            self._pwrite(name, a, values)

    def _pwrite(self, name: str, a: int, values: npt.NDArray[Any]) -> None:
        data = np.ascontiguousarray(values).data.cast("B")
        offset = HEADER_BYTES + a * self._dtypes[name].itemsize
        while data:
            done = os.pwrite(self._fd(name), data, offset)
            data, offset = data[done:], offset + done

    def _fd(self, name: str) -> int:
        fd = self._fds.get(name)
        if fd is None:  # reopened after unpickling
            assert self.path is not None
            fd = self._fds[name] = os.open(self.path / f"{name}.npy", os.O_RDWR)
        return fd

    def _pread(self, name: str, a: int, b: int, dtype: np.dtype[Any] | None = None) -> npt.NDArray[Any]:
        out = np.empty(b - a, self._dtypes[name] if dtype is None else dtype)
        if out.nbytes:
            got = os.preadv(self._fd(name), [out.data.cast("B")], HEADER_BYTES + a * out.itemsize)
            if got != out.nbytes:
                raise OSError(f"short read of column {name!r} rows [{a}, {b}) in {self.path}")
        return out

    def read(self, a: int, b: int, names: Sequence[str] | None = None) -> dict[str, npt.NDArray[Any]]:
        """Rows ``[a, b)`` of ``names`` (default: every column), as new arrays. O(b - a)."""
        if not 0 <= a <= b <= self.rows:
            raise InputError(f"rows [{a}, {b}) are outside the store's {self.rows:,} rows")
        out: dict[str, npt.NDArray[Any]] = {}
        for name in self.names if names is None else names:
            self._known(name)
            out[name] = self._mem[name][a:b].copy() if self.path is None else self._pread(name, a, b)
        return out

    def take(self, ids: Int64Array, names: Sequence[str] | None = None) -> dict[str, npt.NDArray[Any]]:
        """The rows ``ids`` (sorted, distinct, ``< rows``) of ``names``. O(len(ids) + runs)."""
        ids = np.asarray(ids, np.int64)
        if ids.size and (ids[0] < 0 or ids[-1] >= self.rows or (np.diff(ids) <= 0).any()):
            raise InputError(f"take needs sorted distinct row ids below {self.rows:,}")
        names = self.names if names is None else tuple(names)
        for n in names:
            self._known(n)
        if self.path is None:
            return {n: self._mem[n][ids] for n in names}
        out = {n: np.empty(ids.size, self._dtypes[n]) for n in names}
        for lo, hi, at in runs(ids):
            for n in names:
                out[n][at : at + hi - lo] = self._pread(n, lo, hi)
        return out

    def write(self, ids: Int64Array, columns: Mapping[str, npt.ArrayLike]) -> None:
        """Overwrite rows ``ids`` (sorted, distinct, ``< rows``) of the given columns. O(len(ids) + runs).

        On disk, one ``pwrite`` per run of consecutive ids and column. (A writable mapping would save the
        system calls, but touching a page of a file held in the page cache maps whole large folios around
        it: a thousand scattered records mapped most of a 240 MB column into the resident set.)"""
        ids = np.asarray(ids, np.int64)
        if ids.size and (ids[0] < 0 or ids[-1] >= self.rows or (np.diff(ids) <= 0).any()):
            raise InputError(f"write needs sorted distinct row ids below {self.rows:,}")
        spans = runs(ids) if self.path is not None else []
        for name, values in columns.items():
            self._known(name)
            v = self._cast(name, np.asarray(values))
            if v.shape != ids.shape:
                raise InputError(f"write of column {name!r}: {v.size} values for {ids.size} rows")
            if self.path is None:
                self._mem[name][ids] = v
                continue
            for lo, hi, at in spans:
                self._pwrite(name, lo, v[at : at + hi - lo])
        self._synced = False

    def blocks(self, block: int, names: Sequence[str] | None = None
               ) -> Iterator[tuple[int, dict[str, npt.NDArray[Any]]]]:
        """``(first row, columns)`` for consecutive blocks of ``block`` rows. Memory O(block)."""
        check_int("block", block, 1)
        for a in range(0, self.rows, block):
            yield a, self.read(a, min(self.rows, a + block), names)

    # ------------------------------------------------------------------ files

    def sync(self) -> None:
        """Write every column file's header with the current row count (the files then load with numpy)."""
        if self.path is None or self._synced:
            return
        for name, dt in self._dtypes.items():
            os.pwrite(self._fd(name), _header(dt, self.rows), 0)
        self._synced = True

    def close(self) -> None:
        """:meth:`sync` and close the files (they reopen on the next access). A temporary store's
        directory stays until the store is garbage-collected or :meth:`remove` d."""
        self.sync()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def remove(self) -> None:
        """Close the files and delete a temporary store's directory (a no-op for the others)."""
        if self._cleanup is not None:
            self._cleanup()
        else:
            self.close()

    def nbytes(self) -> int:
        """Bytes held in memory by the columns (0 for the disk form)."""
        return sum(c.nbytes for c in self._mem.values())

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. from a worker process): a temporary directory changes owner with the pickle."""
        self.sync()
        state = {k: v for k, v in self.__dict__.items() if k not in ("_fds", "_cleanup")}
        state["_owned"] = self._cleanup is not None and self._cleanup.detach() is not None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        owned = state.pop("_owned")
        self.__dict__.update(state)
        self._fds = {}
        self._cleanup = None
        if owned and self.path is not None:
            self._cleanup = weakref.finalize(self, _remove, self.path, self._fds)

    def _check(self) -> None:
        """Every column holds ``rows`` values of its type; a synced disk column loads with numpy."""
        assert self.rows >= 0
        assert set(self._fills) == set(self._dtypes)
        if self.path is None:
            assert set(self._mem) == set(self._dtypes)
            for name, col in self._mem.items():
                assert col.dtype == self._dtypes[name] and col.size >= self.rows, name
            return
        for name, dt in self._dtypes.items():
            size = os.fstat(self._fd(name)).st_size
            assert size == HEADER_BYTES + self.rows * dt.itemsize, (name, size)
            head = os.pread(self._fd(name), HEADER_BYTES, 0)
            meta = ast.literal_eval(head[10:].decode("latin1").strip())
            assert np.dtype(meta["descr"]) == dt
            if self._synced:
                assert meta["shape"] == (self.rows,), name


def _remove(path: Path, fds: dict[str, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()
    shutil.rmtree(path, ignore_errors=True)


def out_of_core_store(occurrences: int, *, directory: str | os.PathLike[str] | None = None,
                      threshold: int = OUT_OF_CORE) -> ColumnStore | None:
    """A temporary disk store (under ``directory``, default the system's temporary directory) for a replay
    of more than ``threshold`` occurrences; ``None`` (in memory) for a smaller one.

    >>> out_of_core_store(1000) is None, out_of_core_store(10, threshold=5).on_disk
    (True, True)
    """
    check_int("occurrences", occurrences, 0)
    return ColumnStore.temporary(directory) if occurrences > threshold else None
