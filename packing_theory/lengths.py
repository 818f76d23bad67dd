"""Loading and validating BOS-inclusive length arrays (``.npy``), and exact token totals.

Lengths are held as ``int64``; a length must fit a signed 64-bit integer.
Token *totals* can exceed that: :func:`exact_sum` returns a Python ``int``
that is exact for any input, using numpy's fast sum only when it cannot
overflow.
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
import numpy.typing as npt

from ._checks import is_int
from ._files import open_regular
from .errors import InputError, InputTypeError

__all__ = ["INT64_MAX", "VALIDATE_CHUNK", "exact_sum", "load_lengths", "reject_unordered", "release_pages",
           "validate_lengths"]

INT64_MAX = (1 << 63) - 1
"""The largest length (and the largest int64 total) representable in an ``int64`` array."""

VALIDATE_CHUNK = 1 << 20
"""Lengths checked per step by :func:`validate_lengths` (its scratch memory is O(this), not O(n))."""


def _mapping(array: npt.NDArray[Any]) -> mmap.mmap | None:
    """The ``mmap`` an array's memory belongs to (through its ``base`` chain), or ``None``."""
    base: object = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return base
        held = getattr(base, "_mmap", None)  # numpy.memmap and its views
        if isinstance(held, mmap.mmap):
            return held
        base = getattr(base, "base", None)
    return None


def release_pages(array: npt.NDArray[Any]) -> None:
    """Drop this process's resident pages of a memory-mapped ``array`` (``madvise(MADV_DONTNEED)``).

    The data stay in the file and the page cache and are read again on the
    next access, so a chunked pass over a mapped input holds O(chunk) of it
    in the process's RSS instead of the whole file. Only whole pages inside
    ``array`` are dropped; a no-op for an array that is not memory-mapped,
    on a mapping that can be written, or where ``madvise`` is unavailable.
    O(pages).

    >>> release_pages(np.arange(3))  # not mapped: nothing to do
    """
    mm = _mapping(array) if isinstance(array, np.ndarray) and array.size else None
    if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    try:
        view = np.frombuffer(mm, dtype=np.uint8)  # fails on a closed map; read-only maps only
    except (TypeError, ValueError):
        return
    if view.flags.writeable:
        return  # a private or writable mapping could lose data: leave it alone
    begin = array.ctypes.data - view.ctypes.data
    end = begin + array.nbytes
    del view
    page = mmap.PAGESIZE
    lo, hi = -(-begin // page) * page, end // page * page
    if 0 <= lo < hi <= len(mm):
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def exact_sum(values: npt.NDArray[np.integer] | Iterable[int]) -> int:
    """The exact sum of integers as a Python ``int``, whatever their size.

    For an integer numpy array the sum is taken in numpy when
    ``max|v| * n`` fits ``int64`` (no overflow is possible), otherwise in
    chunks small enough not to overflow; other iterables are summed as Python ints.
    O(n).

    >>> big = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    >>> int(big.sum()) < 0, exact_sum(big) == 3 * 2**62
    (True, True)
    """
    if not isinstance(values, np.ndarray):
        return sum(int(v) for v in values)
    arr = values.ravel()
    if arr.size == 0:
        return 0
    if arr.size > VALIDATE_CHUNK and _mapping(arr) is not None:  # a mapped file: by chunks, pages dropped
        total = 0
        for lo in range(0, arr.size, VALIDATE_CHUNK):
            part = arr[lo : lo + VALIDATE_CHUNK]
            total += exact_sum(np.array(part))
            release_pages(part)
        return total
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8:
        top = int(arr.max())
    else:
        top = max(abs(int(arr.min())), abs(int(arr.max())))
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and top > INT64_MAX:
        return sum(int(v) for v in arr.tolist())
    if top * arr.size <= INT64_MAX:
        return int(arr.sum(dtype=np.int64))
    step = max(1, INT64_MAX // max(top, 1))
    if step < 64:  # lengths near 2**63: Python ints, element by element
        return sum(arr.tolist())
    return sum(int(arr[i : i + step].sum(dtype=np.int64)) for i in range(0, arr.size, step))


def reject_unordered(name: str, value: object) -> None:
    """Raise ``TypeError`` when ``value`` is a mapping or a set: it has no arrival order to replay.

    >>> reject_unordered("lengths", {3, 4})
    Traceback (most recent call last):
    packing_theory.InputTypeError: lengths must be an ordered sequence of ints (a list, tuple, array or \
iterator), got set: a mapping or set has no arrival order
    """
    if isinstance(value, (Mapping, AbstractSet)):
        raise InputTypeError(f"{name} must be an ordered sequence of ints (a list, tuple, array or "
                             f"iterator), got {type(value).__name__}: a mapping or set has no arrival order")


def validate_lengths(
    array: object, name: str = "lengths", *, allow_empty: bool = False
) -> npt.NDArray[np.int64]:
    """Return ``array`` (a numpy array or a sequence of ints) as a 1-D ``int64`` array of lengths >= 1.

    Raises:
        TypeError: not an integer array (float, bool, object dtype), or an
            element of a sequence that is not an int.
        ValueError: not 1-D, empty (unless ``allow_empty``), or holding a length < 1.

    >>> validate_lengths(np.array([3, 1], dtype=np.uint16)).tolist()
    [3, 1]
    >>> validate_lengths([4, 2], "long_lengths").tolist()
    [4, 2]
    >>> validate_lengths(np.array([2.0]))
    Traceback (most recent call last):
    packing_theory.InputTypeError: lengths must have an integer dtype, got float64
    >>> validate_lengths({3: 1, 4: 1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputTypeError: lengths must be an ordered sequence of ints ..., got dict: a mapping ...
    """
    if isinstance(array, np.ndarray) and array.size and any(seen() is array for seen in _VALIDATED):
        return array  # a read-only mapped int64 array validated whole before (read by every step of a run)
    if not isinstance(array, np.ndarray):
        reject_unordered(name, array)
        if isinstance(array, (str, bytes)) or not isinstance(array, Iterable):
            raise InputTypeError(f"{name} must be a sequence of ints or a numpy array, "
                                 f"got {type(array).__name__}")
        values = list(array)
        for i, v in enumerate(values):
            if not is_int(v):
                raise InputTypeError(f"{name}[{i}] must be an int, got {type(v).__name__} {v!r}")
            if not 1 <= v <= INT64_MAX:
                what = ("a positive BOS-inclusive length" if v < 1
                        else "a length that fits a signed 64-bit int")
                raise InputError(f"{name}[{i}] must be {what}, got {v}")
        array = np.asarray(values, dtype=np.int64)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise InputTypeError(f"{name} must have an integer dtype, got {array.dtype}")
    if array.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise InputError(f"{name} is empty: a replay needs at least one document")
    wide_unsigned = array.dtype.kind == "u" and array.dtype.itemsize >= 8
    for lo in range(0, array.size, VALIDATE_CHUNK):  # chunked: O(chunk) scratch, not O(n)
        part = array[lo : lo + VALIDATE_CHUNK]
        if int(part.min()) < 1:
            i = lo + int(np.argmax(part < 1))
            raise InputError(f"{name}[{i}] must be a positive BOS-inclusive length, got {array[i]}")
        if wide_unsigned and int(part.max()) > INT64_MAX:
            i = lo + int(np.argmax(part > INT64_MAX))
            raise InputError(f"{name}[{i}] does not fit a signed 64-bit length, got {array[i]}")
        release_pages(part)
    out = array.astype(np.int64, copy=False)
    if out is array and array.size and _immutable(array):
        _VALIDATED.append(weakref.ref(array))
        del _VALIDATED[:-_VALIDATED_KEPT]
    return out


_VALIDATED: list[weakref.ReferenceType[npt.NDArray[Any]]] = []
"""The last read-only ``int64`` arrays :func:`validate_lengths` checked whole: the same object is not read
again (an audit's steps each validate the memory-mapped input: 0.1 CPU s per step at 100 M lengths)."""
_VALIDATED_KEPT = 8


def _immutable(array: npt.NDArray[Any]) -> bool:
    """Whether nothing can write ``array`` through it: read-only views of a memory map opened read-only
    (``np.load(mmap_mode="r")``: numpy refuses to make them writeable again; an array that owns its
    memory, or a map opened ``r+``, could be made writeable and changed). The file itself could still
    be rewritten by another writer, as it could between any two reads of a run."""
    a: object = array
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return isinstance(a, mmap.mmap) and memoryview(a).readonly


def _check_npy_header(path: str | os.PathLike[str]) -> None:
    """Check a ``.npy`` file's header against its size and dtype *before* anything is allocated.

    A header may claim any shape: the data it implies must be exactly the bytes
    the file holds after the header, and the dtype must be an integer type.
    O(1) time and memory.
    """
    name = os.fspath(path)
    fmt = np.lib.format
    if os.path.isdir(name):
        raise InputError(f"lengths file {name!r} is a directory: give a .npy file (or --data DIR for a "
                         "dataset directory)")
    with open_regular(name, "lengths file") as fh:  # a FIFO, a device: refused before reading
        head = fh.read(12)
        if head[:4] == b"PK\x03\x04":
            raise InputError(f"lengths file {name!r} holds an archive (.npz), not one array")
        size = os.fstat(fh.fileno()).st_size
        if len(head) >= 10 and head[:6] == b"\x93NUMPY" and head[6] in (2, 3):  # a 4-byte header length
            length = 12 + int.from_bytes(head[8:12], "little")
            if length > size:  # checked before numpy reads (and allocates) what the field claims
                raise InputError(f"lengths file {name!r}: the .npy header length field claims "
                                 f"{length:,} bytes, the file holds {size:,} (truncated, or a false header)")
        fh.seek(0)
        try:
            version = fmt.read_magic(fh)
            reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _fortran, dtype = reader(fh)
        except Exception as exc:  # numpy's header parser raises ValueError, SyntaxError, TokenError, ...
            raise InputError(f"lengths file {name!r} is not a readable .npy array: "
                             f"{type(exc).__name__}: {exc}") from exc
        offset = fh.tell()
    if dtype.hasobject or dtype.kind not in "iub":
        raise InputTypeError(f"lengths file {name!r} must have an integer dtype, got {dtype}")
    count = 1
    for n in shape:
        count *= int(n)
    claimed = count * dtype.itemsize
    held = size - offset
    if claimed != held:
        what = "truncated, or a false header" if held < claimed else f"{held - claimed} trailing bytes"
        raise InputError(f"lengths file {name!r}: the .npy header claims shape {tuple(shape)} of {dtype} = "
                         f"{claimed:,} bytes, the file holds {held:,} bytes after the header ({what})")


def load_lengths(path: str | os.PathLike[str], *, mmap: bool = True) -> npt.NDArray[np.int64]:
    """Load and validate a ``.npy`` file of BOS-inclusive lengths.

    The header's shape and dtype are checked against the file size before
    the array is read, so a false header is refused without allocating what
    it claims.

    Memory: with ``mmap=True`` (the default) the file is memory-mapped
    (``np.load(mmap_mode="r")``, read-only): an ``int64`` file is returned as
    the map itself, so no copy is made and the pages are the operating
    system's page cache (validation reads it in chunks of
    :data:`VALIDATE_CHUNK`, O(chunk) scratch, dropping each chunk's pages
    from the process with :func:`release_pages`); a file of another integer
    dtype is converted to a new ``int64`` array (8 bytes per document).
    ``mmap=False`` reads the whole array into memory.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable ``.npy`` array, a header that disagrees
            with the file size, or invalid lengths.
        TypeError: a non-integer dtype.
    """
    _check_npy_header(path)
    try:
        array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"lengths file {os.fspath(path)!r} is not a readable .npy array: {exc}") from exc
    if not isinstance(array, np.ndarray):
        raise InputError(f"lengths file {os.fspath(path)!r} holds an archive, not one array")
    return validate_lengths(array, name=f"lengths file {os.fspath(path)!r}")
