"""tools/mutation.py points at code that exists: a refactor that moves a planted weak spot or a
scoped function fails here, not silently in the next mutation run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.tool_modules import load_tool

ROOT = Path(__file__).resolve().parents[1]
mutation = load_tool("mutation")


def _defined(module: Path) -> set[str]:
    """``function`` and ``Class.method`` names defined at the top of ``module``."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


@pytest.mark.parametrize("planted", mutation.PLANTED, ids=lambda p: p.name)
def test_each_planted_bug_applies_exactly_once(planted) -> None:  # type: ignore[no-untyped-def]
    assert (ROOT / planted.module).read_text(encoding="utf-8").count(planted.old) == 1, planted.module
    assert planted.old != planted.new
    assert all((ROOT / t).is_file() for t in planted.tests), planted.tests


@pytest.mark.parametrize("target", mutation.TARGETS, ids=lambda t: t.name)
def test_each_target_names_existing_functions_and_tests(target) -> None:  # type: ignore[no-untyped-def]
    missing = set(target.functions) - _defined(ROOT / target.module)
    assert not missing, f"{target.module} defines none of {sorted(missing)}"
    assert all((ROOT / t).is_file() for t in target.tests), target.tests
