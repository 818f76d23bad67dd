"""Argument checks shared by the library (private)."""

from __future__ import annotations

import numbers

__all__ = ["check_int"]


def check_int(name: str, value: object, minimum: int, *, error: type[Exception] | None = None) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer ``>= minimum``.

    Raises ``TypeError`` (not an integer, or a bool) or ``ValueError`` (too
    small), both naming the parameter and the value; ``error`` replaces both
    (hypothesis strategies raise ``InvalidArgument``).

    >>> check_int("min_buffer", 3, 1)
    3
    >>> check_int("min_buffer", 0, 1)
    Traceback (most recent call last):
    ValueError: min_buffer must be >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise (error or TypeError)(f"{name} must be an int, got {type(value).__name__} {value!r}")
    out = int(value)
    if out < minimum:
        raise (error or ValueError)(f"{name} must be >= {minimum}, got {out}")
    return out
