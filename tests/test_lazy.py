"""Lazy subpackages (``packing_theory._lazy``): a package import loads nothing else, every export resolves."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import packing_theory as pt
from packing_theory._lazy import LazyPackage, lazy_package

ROOT = str(Path(__file__).resolve().parents[1])
LAZY = sorted(m for m in pt.PUBLIC_MODULES if m.count(".") == 1 and
              isinstance(importlib.import_module(m), LazyPackage))


def _fresh(code: str) -> object:
    """What ``code`` (ending with ``print(json.dumps(...))``) prints, run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", f"import json, sys\n{code}"], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_re_exporting_subpackages_are_lazy() -> None:
    assert {"packing_theory.engine", "packing_theory.audit", "packing_theory.orchestration",
            "packing_theory.corpus", "packing_theory.reporting", "packing_theory.invariant",
            "packing_theory.peers", "packing_theory.distributed"} <= set(LAZY)


@pytest.mark.parametrize("name", LAZY)
def test_importing_a_package_loads_none_of_its_modules(name: str) -> None:
    code = (f"import {name}\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith('{name}.'))))")
    assert _fresh(code) == ([] if name != "packing_theory.peers" else
                            ["packing_theory.peers._base", "packing_theory.peers._figures"])


@pytest.mark.parametrize("name", LAZY)
def test_every_export_resolves_and_dir_lists_it(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__) <= set(dir(module))
    for attr in module.__all__:
        value = getattr(module, attr)
        if attr in module._EXPORTS:  # (the rest is the package's own: peers' table and function)
            assert value is getattr(importlib.import_module(module._EXPORTS[attr]), attr), attr


@pytest.mark.parametrize(("package", "name"), [("packing_theory.engine", "replay"),
                                               ("packing_theory.orchestration", "measure"),
                                               ("packing_theory.training", "reconcile")])
@pytest.mark.parametrize("submodule_first", [True, False])
def test_an_export_named_like_its_module_stays_the_export(package: str, name: str,
                                                          submodule_first: bool) -> None:
    """With eager imports ``from .replay import replay`` rebound the name after the submodule: same here."""
    first, second = (f"import {package}.{name}", f"import {package}") if submodule_first else (
        f"import {package}", f"import {package}.{name}")
    code = (f"{first}\n{second}\nimport types\n"
            f"pkg = sys.modules['{package}']; mod = sys.modules.get('{package}.{name}')\n"
            f"value = getattr(pkg, '{name}')\n"
            f"print(json.dumps([isinstance(value, types.ModuleType), value is getattr(mod, '{name}')]))")
    assert _fresh(code) == [False, True]


def test_a_submodule_not_imported_yet_is_an_attribute() -> None:
    code = ("import packing_theory.engine as e\n"
            "before = 'packing_theory.engine.rows' in sys.modules\n"
            "print(json.dumps([before, e.rows.__name__]))")
    assert _fresh(code) == [False, "packing_theory.engine.rows"]


def test_a_relative_export_from_another_package() -> None:
    import packing_theory.corpus as corpus
    import packing_theory.lengths as lengths

    assert corpus.load_lengths is lengths.load_lengths


def test_an_unknown_name_is_an_attribute_error() -> None:
    import packing_theory.engine as e

    with pytest.raises(AttributeError, match=r"module 'packing_theory\.engine' has no attribute 'nope'"):
        e.nope  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(e, "__wrapped__")


def test_a_name_exported_twice_is_refused() -> None:
    sys.modules["_pt_lazy_demo"] = types.ModuleType("_pt_lazy_demo")
    try:
        with pytest.raises(ValueError, match="exports 'dumps' from json and pickle"):
            lazy_package("_pt_lazy_demo", {"json": ("dumps",), "pickle": ("dumps",)}, relative_to="")
    finally:
        del sys.modules["_pt_lazy_demo"]


def test_star_import_gives_every_export() -> None:
    namespace: dict[str, object] = {}
    exec("from packing_theory.invariant import *", namespace)
    import packing_theory.invariant as inv

    assert set(inv.__all__) <= set(namespace)
