"""Public API hygiene: explicit ``__all__`` everywhere, a frozen public surface, no optional heavy imports.

The public surface is every public module's ``__all__`` (a module is public when
no part of its dotted path starts with ``_``), read from the source without
importing it. It is frozen in ``tests/data/public_api.json``: a change to it is
deliberate, and ``python -m tests.test_api --write`` rewrites the snapshot.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
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
            "packing_theory.audit._ledger_kernel": "numba", "packing_theory.engine._starts_kernel": "numba",
            "packing_theory.peers._kernels": "numba",
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
                "feed_all", "audit_corpus", "compare_corpus", "measure", "open_corpus", "Settings",
                "write_report", "audit_events", "InvariantMonitor"}


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


def _path(module: str) -> Path:
    parts = module.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def public_surface() -> dict[str, list[str]]:
    """``{module: sorted __all__}`` of every declared public module (``packing_theory.PUBLIC_MODULES``)."""
    out: dict[str, list[str]] = {}
    for module in pt.PUBLIC_MODULES:
        names = _static_all(_path(module))
        assert names is not None, f"{module} is declared public but has no literal __all__"
        out[module] = names
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


def test_the_snapshot_lists_only_declared_public_modules() -> None:
    frozen = json.loads(SNAPSHOT.read_text())
    assert sorted(frozen) == sorted(pt.PUBLIC_MODULES)
    for module in pt.PUBLIC_MODULES:
        assert not any(part.startswith("_") for part in module.split(".")), module
    assert not {m for m in frozen if m.startswith(("packing_theory.cli", "packing_theory.reporting."))}


def test_no_public_name_is_bound_to_two_different_objects() -> None:
    """One name, one thing: every public module that exports a name exports the same object."""
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for module in pt.PUBLIC_MODULES:
        if module in OPTIONAL and importlib.util.find_spec(OPTIONAL[module]) is None:
            continue
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if name in seen and seen[name][1] is not obj:
                clashes.append(f"{name}: {seen[name][0]} and {module}")
            seen.setdefault(name, (module, obj))
    assert not clashes, clashes


def test_a_submodule_never_shadows_a_root_name() -> None:
    """``packing_theory.audit`` is a subpackage: a root function of that name would be replaced by it."""
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    subpackages |= {p.stem for p in PACKAGE.glob("*.py")}
    assert not subpackages & set(pt.__all__)


def test_the_root_holds_entry_points_not_internals() -> None:
    assert set(pt.__all__) >= ENTRY_POINTS
    internals = {"FastBuffer", "LengthChunks", "SummaryAccumulator", "ProtectedSet", "MonitoredBuffer",
                 "make_packer", "summarize", "POLICIES", "PackingEngine", "EventSource"}
    assert not internals & set(pt.__all__)
    for name in internals:
        assert not hasattr(pt, name), f"packing_theory.{name} is an internal: import it from its subpackage"


def test_importing_the_root_loads_the_foundation_only() -> None:
    code = ("import sys, packing_theory; bad = sorted(m for m in sys.modules "
            "if m.startswith('packing_theory.') "
            "and m.split('.')[1] not in ('_startup', '_version', 'errors', '_deprecation', '_checks')); "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_deprecated_root_name_warns_and_is_the_new_object() -> None:
    import packing_theory.audit as audit

    with pytest.warns(DeprecationWarning, match=r"packing_theory\.audit_lengths is deprecated since .*: use "
                                                r"packing_theory\.audit\.audit_lengths"):
        assert pt.audit_lengths is audit.audit_lengths  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        pt.nope  # type: ignore[attr-defined]  # noqa: B018


def test_every_root_name_resolves() -> None:
    for name in pt.__all__:
        assert getattr(pt, name) is not None, name


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_api --write   (rewrites tests/data/public_api.json)")
    SNAPSHOT.write_text(json.dumps(public_surface(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT} ({sum(map(len, public_surface().values()))} names)")
