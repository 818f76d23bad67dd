"""The layout shows the system: layers import downwards only, no cycles, small modules."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import packing_theory as pt

ROOT = Path(pt.__file__).parent

# Layers, top to bottom. A module may import its own layer and any layer below it.
LAYERS: list[set[str]] = [
    {"cli"},
    {"orchestration"},
    {"distributed"},
    {"audit", "evaluation", "adapters", "training", "configs", "testing"},
    {"invariant"},
    {"registry"},
    {"peers", "corpus", "contamination"},
    {"engine"},
    {"reporting"},
    {"_allocator", "_arrays", "_checks", "_deprecation", "_files", "_lazy", "_unique", "lengths", "errors",
     "_version", "_startup"},
]
LEVEL = {name: i for i, layer in enumerate(LAYERS) for name in layer}

MAX_LINES = 600
OVERSIZE_ALLOWED: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(["packing_theory", *parts])] = path
    return out


MODULES = _modules()


def _typing_only(tree: ast.Module) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:``: annotations only, never imported at run time."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                out |= {id(n) for n in ast.walk(stmt)}
    return out


def _imports(name: str, path: Path, *, typing: bool = True) -> set[str]:
    """Intra-package modules imported by ``name`` (relative and absolute, any depth); ``typing=False``
    leaves out the imports under ``if TYPE_CHECKING:`` (they make no cycle at run time)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    skip = set() if typing else _typing_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        for c in candidates:
            if c.startswith("packing_theory"):
                while c not in MODULES and "." in c:
                    c = c.rsplit(".", 1)[0]
                if c in MODULES and c != name:
                    found.add(c)
    return found


def _top(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_subpackage_is_in_a_layer() -> None:
    tops = {_top(m) for m in MODULES} - {None}
    assert tops <= set(LEVEL), f"modules outside the layer table: {tops - set(LEVEL)}"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if _top(m) is not None))
def test_imports_point_down(name: str) -> None:
    mine = LEVEL[_top(name)]  # type: ignore[index]
    for target in _imports(name, MODULES[name]):
        top = _top(target)
        if top is None:  # the package root re-exports everything: nothing inside may import it
            pytest.fail(f"{name} imports the package root {target}")
        assert LEVEL[top] >= mine, f"{name} (layer {mine}) imports {target} (layer {LEVEL[top]}): upward"


# Private names imported across subpackages that predate the check (corpus.text's tokenizer-call
# helpers and its pyarrow loader); new code imports public names only.
PRIVATE_IMPORTS_ALLOWED = {
    ("packing_theory.distributed.parts", "packing_theory.corpus.text", "_batch_ids"),
    ("packing_theory.distributed.parts", "packing_theory.corpus.text", "_call"),
    ("packing_theory.distributed.parts", "packing_theory.corpus.text", "_token_ids"),
    ("packing_theory.cli._ranks", "packing_theory.corpus.text", "_pyarrow_parquet"),
}


def _private_imports(name: str, path: Path) -> set[tuple[str, str, str]]:
    """``(module, target, name)`` for every ``_name`` imported from another subpackage."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            target = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if not target.startswith("packing_theory") or _top(target) == _top(name):
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.add((name, target, alias.name))
    return found


def test_no_private_name_crosses_a_subpackage() -> None:
    """A subpackage uses another's public names only (evaluation once imported audit.plots._pyplot)."""
    found = set().union(*(_private_imports(m, p) for m, p in MODULES.items()))
    assert found - PRIVATE_IMPORTS_ALLOWED == set()
    assert not PRIVATE_IMPORTS_ALLOWED - found, "an allowed private import is gone: drop it from the list"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a closed path, or ``None`` (depth-first search)."""
    state: dict[str, int] = defaultdict(int)
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state[n] == 1:
                return [*stack[stack.index(n):], n]
            if state[n] == 0 and (found := visit(n)) is not None:
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if state[m] == 0 and (found := visit(m)) is not None:
            return found
    return None


def test_no_import_cycle() -> None:
    graph = {m: _imports(m, p, typing=False) for m, p in MODULES.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_cycle_detector_finds_a_planted_cycle() -> None:
    graph = {m: _imports(m, p, typing=False) for m, p in MODULES.items()}
    graph["packing_theory.engine.events"] |= {"packing_theory.audit.ledger"}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert "packing_theory.engine.events" in cycle and "packing_theory.audit.ledger" in cycle


def test_typing_only_imports_are_left_out_of_the_cycle_check_only() -> None:
    name = "packing_theory.orchestration.audit_plots"
    assert "packing_theory.orchestration.audit" in _imports(name, MODULES[name])
    assert "packing_theory.orchestration.audit" not in _imports(name, MODULES[name], typing=False)


def test_import_scanner_sees_relative_imports() -> None:
    found = _imports("packing_theory.audit.accounting", MODULES["packing_theory.audit.accounting"])
    assert {"packing_theory.engine.events", "packing_theory.audit.results", "packing_theory._checks"} <= found


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_size(name: str) -> None:
    path = MODULES[name]
    rel = str(path.relative_to(ROOT))
    n = len(path.read_text().splitlines())
    if rel in OVERSIZE_ALLOWED:
        return
    assert n <= MAX_LINES, f"{rel} has {n} lines > {MAX_LINES}; split it or justify it in OVERSIZE_ALLOWED"
