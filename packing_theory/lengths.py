"""Loading and validating BOS-inclusive length arrays (``.npy``)."""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from ._checks import is_int

__all__ = ["load_lengths", "validate_lengths"]


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
    TypeError: lengths must have an integer dtype, got float64
    """
    if not isinstance(array, np.ndarray):
        if isinstance(array, (str, bytes)) or not isinstance(array, Iterable):
            raise TypeError(f"{name} must be a sequence of ints or a numpy array, got {type(array).__name__}")
        values = list(array)
        for i, v in enumerate(values):
            if not is_int(v):
                raise TypeError(f"{name}[{i}] must be an int, got {type(v).__name__} {v!r}")
        array = np.asarray(values, dtype=np.int64)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must have an integer dtype, got {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty: a replay needs at least one document")
    bad = array < 1
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] must be a positive BOS-inclusive length, got {array[i]}")
    if array.dtype.kind == "u" and array.dtype.itemsize >= 8:
        too_big = array > np.iinfo(np.int64).max
        if too_big.any():
            i = int(np.argmax(too_big))
            raise ValueError(f"{name}[{i}] does not fit a signed 64-bit length, got {array[i]}")
    return array.astype(np.int64, copy=False)


def load_lengths(path: str | os.PathLike[str]) -> npt.NDArray[np.int64]:
    """Load and validate a ``.npy`` file of BOS-inclusive lengths.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable ``.npy`` array, or invalid lengths.
        TypeError: a non-integer dtype.
    """
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"lengths file {os.fspath(path)!r} is not a readable .npy array: {exc}") from exc
    if not isinstance(array, np.ndarray):
        raise ValueError(f"lengths file {os.fspath(path)!r} holds an archive, not one array")
    return validate_lengths(array, name=f"lengths file {os.fspath(path)!r}")
