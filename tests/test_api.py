"""Public API hygiene: explicit ``__all__`` everywhere, no optional heavy imports at import time."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import packing_theory as pt

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(pt.__path__, prefix="packing_theory.")
)


# modules that import an optional extra at the top (the root conftest.py skips their doctests alike)
OPTIONAL = {"packing_theory.adapters.torch": "torch", "packing_theory.engine._kernel": "numba"}


@pytest.mark.parametrize("name", MODULES)
def test_module_has_explicit_all(name: str) -> None:
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name], reason=f"{name} needs {OPTIONAL[name]} (an optional extra)")
    module = importlib.import_module(name)
    assert isinstance(getattr(module, "__all__", None), list), f"{name} lacks __all__"
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr!r}"


def test_import_does_not_pull_optional_dependencies() -> None:
    code = (
        "import sys, packing_theory, packing_theory.cli;"
        "packing_theory.cli.build_parser();"
        "bad = [m for m in ('torch', 'hypothesis', 'matplotlib', 'tqdm', 'pyarrow', 'numba')"
        " if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_py_typed_is_shipped() -> None:
    from pathlib import Path

    assert (Path(pt.__file__).parent / "py.typed").exists()
