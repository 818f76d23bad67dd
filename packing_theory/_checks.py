"""Argument checks shared by the library (private).

One definition of "an integer": a Python ``int`` or a numpy integer, never a
``bool``. Every parameter check in the library goes through these helpers so
that the same value is accepted (or refused with the same message) everywhere.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InputError, InputTypeError

__all__ = ["check_bool", "check_id_sequence", "check_int", "distinct_files", "file_identity", "is_int"]


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer (``int`` or a numpy integer) and not a ``bool``.

    >>> import numpy as np
    >>> is_int(3), is_int(np.int64(3)), is_int(True), is_int(3.0)
    (True, True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(
    name: str,
    value: object,
    minimum: int,
    *,
    maximum: int | None = None,
    error: type[Exception] | None = None,
) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer in ``[minimum, maximum]``.

    Raises ``TypeError`` (not an integer, or a bool) or ``ValueError`` (out of
    range), both naming the parameter and the value; ``error`` replaces both
    (hypothesis strategies raise ``InvalidArgument``).

    >>> check_int("min_buffer", 3, 1)
    3
    >>> check_int("min_buffer", 0, 1)
    Traceback (most recent call last):
    packing_theory.InputError: min_buffer must be >= 1, got 0
    >>> check_int("flags", 2**32, 0, maximum=2**32 - 1)
    Traceback (most recent call last):
    packing_theory.InputError: flags must be <= 4294967295, got 4294967296
    """
    if not is_int(value):
        raise (error or InputTypeError)(f"{name} must be an int, got {type(value).__name__} {value!r}")
    out: int = int(value)  # type: ignore[call-overload]
    if out < minimum:
        raise (error or InputError)(f"{name} must be >= {minimum}, got {out}")
    if maximum is not None and out > maximum:
        raise (error or InputError)(f"{name} must be <= {maximum}, got {out}")
    return out


def check_bool(name: str, value: object, *, error: type[Exception] | None = None) -> bool:
    """Return ``value`` after checking it is a ``bool`` (``TypeError`` naming the parameter otherwise).

    >>> check_bool("ties", 1)
    Traceback (most recent call last):
    packing_theory.InputTypeError: ties must be a bool, got int 1
    """
    if not isinstance(value, bool):
        raise (error or InputTypeError)(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def file_identity(path: str) -> tuple[int, int] | str:
    """What makes two paths one file: ``(st_dev, st_ino)`` (symlinks followed, hard links alike).

    A path that cannot be stat-ed is identified by its real path.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); a = os.path.join(d, "a"); open(a, "w").close()
    >>> os.link(a, os.path.join(d, "b")); file_identity(a) == file_identity(os.path.join(d, "b"))
    True
    """
    try:
        st = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (st.st_dev, st.st_ino)


def distinct_files(what: str, paths: Sequence[str]) -> list[str]:
    """Refuse a file named twice in ``paths`` (also through a symlink or a hard link), naming ``what``.

    Its documents would otherwise be read, counted and audited twice.
    ``what`` names the input (an option such as ``"--text"``). O(len(paths))
    ``stat`` calls.

    >>> distinct_files("--text", ["README.md", "./README.md"])
    Traceback (most recent call last):
    ...
    packing_theory.InputError: --text './README.md' is given twice (also as 'README.md')
    """
    seen: dict[tuple[int, int] | str, str] = {}
    for p in paths:
        key = file_identity(os.fspath(p))
        if key in seen:
            raise InputError(f"{what} {os.fspath(p)!r} is given twice (also as {seen[key]!r})")
        seen[key] = os.fspath(p)
    return list(paths)


def check_id_sequence(ids: Sequence[Any], what: str) -> None:
    """Refuse a sequence whose items are not all ints (``None``, a float, a string, a nested list).

    ``what`` names the sequence (``"tokenizer NAME on texts[3]"``). O(len(ids))
    at numpy speed (one ``np.asarray``); the first bad item is found by a
    Python scan only when there is one.

    >>> check_id_sequence([1, None, None], "tokenizer t on texts[0]")
    Traceback (most recent call last):
    ...
    packing_theory.InputTypeError: tokenizer t on texts[0]: ids[1] is None (NoneType); token ids must be ints
    """
    if not len(ids):
        return
    try:
        arr = np.asarray(ids)
        if arr.ndim == 1 and arr.dtype.kind in "iu":
            return
    except (ValueError, TypeError, OverflowError):
        pass
    for i, value in enumerate(ids):
        if not is_int(value):
            shown = f"{value!r:.40} ({type(value).__name__})"
            raise InputTypeError(f"{what}: ids[{i}] is {shown}; token ids must be ints")
