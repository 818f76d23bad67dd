"""Subpackages import what they re-export on first use (PEP 562): the one way a package re-exports.

A subpackage's ``__init__`` names its exports and the module each comes from,
imports them under ``if TYPE_CHECKING:`` (for type checkers and readers), and
ends with ``lazy_package(__name__, {...})``. Importing the package then runs
nothing but its ``__init__``; ``package.Name`` imports the module that defines
``Name`` the first time it is read and keeps it. So ``import
packing_theory.engine.summary`` costs the summary's own imports, not every
module of the engine, and a command loads only the modules it uses
(``tests/cli/test_import_set.py``).

What stays as it was with eager imports: every name of ``__all__`` resolves to
the same object (``tests/test_api.py``), ``dir(package)`` lists the exports,
``from package import *`` works, and a submodule that has not been imported
yet is still reachable as an attribute (``package.submodule``). Where an
export has the name of the submodule defining it (``engine.replay`` the
function, in ``engine/replay.py``), the name stays the export even after the
submodule is imported — the import system's binding of the submodule to its
parent is redirected to the export, exactly as the eager
``from .replay import replay`` rebinding did.

>>> import sys, types
>>> pkg = types.ModuleType("demo_pkg")
>>> sys.modules["demo_pkg"] = pkg
>>> lazy_package("demo_pkg", {"json": ("dumps",)}, relative_to="")
>>> "dumps" in dir(pkg), pkg.dumps([1])
(True, '[1]')
>>> pkg.nope
Traceback (most recent call last):
AttributeError: module 'demo_pkg' has no attribute 'nope'
>>> del sys.modules["demo_pkg"]
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["LazyPackage", "lazy_package"]


class LazyPackage(types.ModuleType):
    """A package module whose exports (its ``_EXPORTS``: name -> defining module) load on first use."""

    def __getattr__(self, name: str) -> Any:
        exports: dict[str, str] = self.__dict__.get("_EXPORTS", {})
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            self.__dict__[name] = value
            return value
        if not name.startswith("__") and "__path__" in self.__dict__ and _is_submodule(self.__name__, name):
            return importlib.import_module(f"{self.__name__}.{name}")  # binds itself (see __setattr__)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        exports: dict[str, str] = self.__dict__.get("_EXPORTS", {})
        if (isinstance(value, types.ModuleType) and exports.get(name) == value.__name__
                and value.__name__ == f"{self.__name__}.{name}"):
            value = getattr(value, name)  # the import system binds a submodule named like its own export
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__.get("_EXPORTS", {})))


def lazy_package(name: str, exports: Mapping[str, Iterable[str]], *, relative_to: str | None = None) -> None:
    """Make package ``name`` (already in ``sys.modules``) serve ``exports`` lazily.

    Args:
        name: the package's ``__name__``.
        exports: module -> the names it provides. A module is relative to the
            package (``"buffer"``, ``"..lengths"``: one dot per level above)
            unless ``relative_to`` is given (``""``: absolute names).

    Raises:
        ValueError: a name exported from two modules (a fault of the package).
    """
    module = sys.modules[name]
    base = name if relative_to is None else relative_to
    table: dict[str, str] = {}
    for source, names in exports.items():
        full = _resolve(source, base) if relative_to is None else (
            f"{base}.{source}" if base else source)
        for export in names:
            if export in table:
                raise ValueError(f"{name} exports {export!r} from {table[export]} and {full}")
            table[export] = full
    module.__dict__["_EXPORTS"] = table
    module.__class__ = LazyPackage


def _is_submodule(package: str, name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"{package}.{name}") is not None


def _resolve(source: str, package: str) -> str:
    """``source`` (``"mod"``, ``".mod"`` or ``"..mod"``, relative to ``package``) as an absolute name."""
    stripped = source.lstrip(".")
    up = max(len(source) - len(stripped) - 1, 0)
    parts = package.split(".")
    if up:
        parts = parts[:-up]
    return ".".join([*parts, stripped])
