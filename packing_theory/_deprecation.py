"""Renamed public names keep working for a while: :func:`deprecated`, the one way to rename.

A public name (in a module of :data:`packing_theory.PUBLIC_MODULES`) that is
renamed or moved stays importable under its old name: the module's
``__getattr__`` (PEP 562) hands the old name to :func:`deprecated`'s lookup,
which warns once per name with a ``DeprecationWarning`` naming the new one
and the version that deprecated it, then returns the new object itself (so
``isinstance`` and identity still hold). A name that was never public raises
the usual ``AttributeError``.

>>> import warnings
>>> lookup = deprecated("example", {"old_sum": "builtins.sum"}, since="0.2.0")
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     lookup("old_sum")([1, 2]), str(caught[0].message)
(3, 'example.old_sum is deprecated since 0.2.0: use builtins.sum')
>>> lookup("nope")
Traceback (most recent call last):
AttributeError: module 'example' has no attribute 'nope'
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated"]


def deprecated(module: str, aliases: Mapping[str, str], *, since: str) -> Callable[[str], Any]:
    """A lookup for ``module``'s ``__getattr__``: old name -> the object at its new path, with a warning.

    Args:
        module: the module serving the old names (for the messages).
        aliases: old name -> the new object's dotted path (``package.module.name``).
        since: the version that deprecated them.

    Raises:
        ValueError: an alias whose new path has no module part.
    """
    table = dict(aliases)
    for old, new in table.items():
        if "." not in new:
            raise ValueError(
                f"deprecated alias {module}.{old}: the new name must be a dotted path, got {new!r}"
            )

    def lookup(name: str) -> Any:
        new = table.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated since {since}: use {new}", DeprecationWarning, stacklevel=3
        )
        owner, _, attr = new.rpartition(".")
        return getattr(importlib.import_module(owner), attr)

    return lookup
