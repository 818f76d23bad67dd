"""Public API hygiene: explicit ``__all__`` everywhere, a frozen public surface, no optional heavy imports.

The public surface is every public module's ``__all__`` (a module is public when
no part of its dotted path starts with ``_``), read from the source without
importing it. It is frozen in ``tests/data/public_api.json``: a change to it is
deliberate, and ``python -m tests.test_api --write`` rewrites the snapshot.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import packing_theory as pt

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(pt.__path__, prefix="packing_theory.")
)


# modules that import an optional extra at the top (the root conftest.py skips their doctests alike)
OPTIONAL = {"packing_theory.adapters.torch": "torch", "packing_theory.engine._kernel": "numba",
            "packing_theory.audit._ledger_kernel": "numba", "packing_theory.peers._kernels": "numba",
            "packing_theory.peers._best_fit_kernel": "numba", "packing_theory.peers._binpack_kernel": "numba",
            "packing_theory.contamination._kernel": "numba"}


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
    assert (Path(pt.__file__).parent / "py.typed").exists()


PACKAGE = Path(pt.__file__).resolve().parent
SNAPSHOT = Path(__file__).resolve().parent / "data" / "public_api.json"
ENTRY_POINTS = {"Packer", "PackerConfig", "ReferencePacker", "CompiledPacker", "replay", "build_packer",
                "feed_all", "run_audit", "audit_lengths", "audit_events", "InvariantMonitor"}


def _static_all(path: Path) -> list[str] | None:
    """The literal ``__all__`` of a module's source (``None`` when it has none)."""
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, ast.Assign):
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list), f"{path}: __all__ is not a list literal"
            return sorted(value)
    return None


def public_surface() -> dict[str, list[str]]:
    """``{module: sorted __all__}`` for every public module of the package."""
    out: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts):
            continue
        names = _static_all(path)
        if names is not None:
            out[".".join(["packing_theory", *parts])] = names
    return out


def test_public_surface_is_the_committed_snapshot() -> None:
    frozen = json.loads(SNAPSHOT.read_text())
    now = public_surface()
    added = {m: sorted(set(now.get(m, ())) - set(frozen.get(m, ()))) for m in set(now) | set(frozen)}
    removed = {m: sorted(set(frozen.get(m, ())) - set(now.get(m, ()))) for m in set(now) | set(frozen)}
    added = {m: v for m, v in added.items() if v}
    removed = {m: v for m, v in removed.items() if v}
    assert not added and not removed and set(now) == set(frozen), (
        f"the public surface changed (added {added}, removed {removed}, modules "
        f"{sorted(set(now) ^ set(frozen))}); if that is deliberate: python -m tests.test_api --write")


def test_the_root_holds_entry_points_not_internals() -> None:
    assert set(pt.__all__) >= ENTRY_POINTS
    internals = {"FastBuffer", "LengthChunks", "SummaryAccumulator", "ProtectedSet", "MonitoredBuffer",
                 "make_packer", "summarize", "POLICIES", "PackingEngine", "EventSource"}
    assert not internals & set(pt.__all__)
    for name in internals:
        assert not hasattr(pt, name), f"packing_theory.{name} is an internal: import it from its subpackage"


def test_every_private_module_is_private_in_the_snapshot() -> None:
    assert public_surface()["packing_theory"] == sorted(pt.__all__)
    assert not [m for m in public_surface() if any(p.startswith("_") for p in m.split("."))]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_api --write   (rewrites tests/data/public_api.json)")
    SNAPSHOT.write_text(json.dumps(public_surface(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT} ({sum(map(len, public_surface().values()))} names)")
