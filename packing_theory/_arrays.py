"""Growable ``int32`` columns that widen to ``int64``: Python ``array`` buffers seen through numpy.

Per-document state kept in an ``array("i")`` costs 4 bytes a value while every value fits ``int32``
(:data:`INT32`); the first value that would not makes the holder call :func:`widened` once and go on in
``array("q")``. :func:`as_numpy` views either without a copy.
"""

from __future__ import annotations

from array import array

import numpy as np
import numpy.typing as npt

__all__ = ["INT32", "as_numpy", "index_dtype", "widened"]

INT32 = np.iinfo(np.int32)
"""The bounds a value must lie within to be kept in an ``array("i")``."""

_DTYPE = {"i": np.int32, "q": np.int64}


def index_dtype(bound: int) -> type[np.int32] | type[np.int64]:
    """``int32`` for values in ``[0, bound]`` when ``bound`` fits it, else ``int64``.

    >>> index_dtype(2**31 - 1).__name__, index_dtype(2**31).__name__
    ('int32', 'int64')
    """
    return np.int32 if bound <= INT32.max else np.int64
assert array("i").itemsize == 4 and array("q").itemsize == 8


def as_numpy(a: array[int]) -> npt.NDArray[np.int32] | npt.NDArray[np.int64]:
    """The values of ``a`` (typecode ``"i"`` or ``"q"``) as a numpy view of its own buffer, no copy.

    >>> as_numpy(array("i", [1, 2])).dtype.name, as_numpy(array("q", [3])).tolist()
    ('int32', [3])
    """
    return np.frombuffer(a, dtype=_DTYPE[a.typecode])


def widened(a: array[int]) -> array[int]:
    """The ``int32`` array ``a`` as a new ``array("q")`` holding the same values. O(len(a)).

    >>> widened(array("i", [1, -2])).typecode, widened(array("i", [1, -2])).tolist()
    ('q', [1, -2])
    """
    out = array("q")
    out.frombytes(np.frombuffer(a, np.int32).astype(np.int64).tobytes())
    return out
