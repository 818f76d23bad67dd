"""Module paths of release 0.1 that now live elsewhere (deprecated, kept working).

Release 0.1 had a flat package (``packing_theory.spans``,
``packing_theory.packer``, ``packing_theory.report``, ...). The layout now
names the architecture (``engine``, ``invariant``, ``audit``, ``cli``, ...).
Importing an old path still works: it yields a module whose public names
are the very objects of their new homes, and emits a
:class:`DeprecationWarning` naming the new path.

>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     import packing_theory.spans as old
>>> import packing_theory.engine.events as new
>>> old.Placement is new.Placement
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence

__all__ = ["ALIASES", "MOVED_NAMES", "install", "moved_name"]

_CLI = ("audit", "bounds", "check", "replay", "_common")

ALIASES: dict[str, tuple[str, ...]] = {
    "packing_theory.spans": ("packing_theory.engine.events",),
    "packing_theory.policies": ("packing_theory.engine.policies", "packing_theory.engine.refill"),
    "packing_theory.buffer": ("packing_theory.engine.buffer",),
    "packing_theory.packer": ("packing_theory.engine.packer", "packing_theory.engine.replay"),
    "packing_theory.reference": ("packing_theory.engine.reference",),
    "packing_theory.summary": ("packing_theory.engine.summary",),
    "packing_theory.variants": ("packing_theory.engine.variants",),
    "packing_theory.bounds": ("packing_theory.invariant.bounds",),
    "packing_theory.strategies": ("packing_theory.invariant.strategies",),
    "packing_theory.report": (
        "packing_theory.rendering.audit", "packing_theory.rendering.audit_plots",
        "packing_theory.reporting.progress", "packing_theory.reporting.plotting",
    ),
    "packing_theory.commands": ("packing_theory.cli",),
    **{f"packing_theory.commands.{name}": (f"packing_theory.cli.{name}",) for name in _CLI},
}
"""Old module path -> the module(s) now holding its public names."""

MOVED_NAMES: dict[str, dict[str, str]] = {
    "packing_theory.audit": {name: "packing_theory.orchestration" for name in (
        "AUTORESEARCH_ROWS", "AuditResult", "CorpusSummary", "corpus_summary", "run_audit")},
}
"""Names of 0.1 modules that still exist but moved out of them (module -> name -> new home).

``packing_theory.audit`` now holds the consumers of the event stream only; the
orchestration of a whole audit moved up a layer, to :mod:`packing_theory.orchestration`.
"""


def moved_name(module: str, name: str) -> object:
    """The object that ``module.name`` was in 0.1, from its new home (a :class:`DeprecationWarning`).

    A module of :data:`MOVED_NAMES` calls this from its ``__getattr__``.

    Raises:
        AttributeError: ``name`` never was in ``module``.
    """
    home = MOVED_NAMES.get(module, {}).get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} is deprecated; import it from {home}", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(home), name)


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves the paths of :data:`ALIASES` to compatibility modules."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ALIASES:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=fullname.endswith(".commands"))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        homes = ALIASES[spec.name]
        warnings.warn(
            f"{spec.name} is deprecated; import from {' / '.join(homes)}", DeprecationWarning, stacklevel=2
        )
        module = types.ModuleType(spec.name, f"Deprecated alias of {', '.join(homes)}.")
        names: list[str] = []
        for home in homes:
            real = importlib.import_module(home)
            for name in getattr(real, "__all__", ()):
                setattr(module, name, getattr(real, name))
                names.append(name)
        module.__all__ = sorted(set(names))  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to execute: :meth:`create_module` filled the module."""


def install() -> None:
    """Register the alias finder once (``import packing_theory`` does it)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
