"""``docs/architecture.rst`` and ``CONTRIBUTING.md`` name only files and objects that exist.

Every repository path (``packing_theory/...``, ``tests/...``, ``tools/...``, a
module path such as ``engine/policies.py`` relative to the package) and every
dotted name (``packing_theory.engine.events.Horizon``, or relative to the
package: ``engine.policies.apply_crop``) in the two files must resolve. Paths
with a placeholder (``tests/test_<policy>.py``) are templates, and the worked
example's new module is listed in :data:`WORKED_EXAMPLE`.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import packing_theory as pt

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(pt.__file__).resolve().parent
DOCS = (ROOT / "docs" / "architecture.rst", ROOT / "CONTRIBUTING.md")
TOP = ("packing_theory", "tests", "tools", "docs", "benchmarks", "examples", "proofs", ".ci")
SUBPACKAGES = tuple(sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()) +
                    sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"))
WORKED_EXAMPLE = {"packing_theory/peers/toy_nextfit.py": "CONTRIBUTING.md's worked example of a new peer "
                                                         "(created by tests/test_recipes.py in a copy)"}

PATH_RE = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in TOP) + r"|"
                     + "|".join(re.escape(s) for s in SUBPACKAGES) + r")/[\w./<>-]*[\w>])")
DOTTED_RE = re.compile(r"(?<![\w.])((?:packing_theory|" + "|".join(re.escape(s) for s in SUBPACKAGES)
                       + r")(?:\.\w+)+)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def referenced_paths() -> list[tuple[str, str]]:
    """``(document, path)`` for every repository path the two documents mention."""
    out = []
    for doc in DOCS:
        for m in PATH_RE.finditer(_text(doc)):
            out.append((doc.name, m.group(1).rstrip(".")))
    return sorted(set(out))


def referenced_names() -> list[tuple[str, str]]:
    """``(document, dotted name)`` for every dotted name of the package the two documents mention."""
    out = []
    for doc in DOCS:
        for m in DOTTED_RE.finditer(_text(doc)):
            name = m.group(1)
            if re.search(r"\.(py|rst|md|json|npy|v|lean|txt|ipynb)$", name):
                continue  # a file name, checked as a path
            out.append((doc.name, name if name.startswith("packing_theory") else f"packing_theory.{name}"))
    return sorted(set(out))


def _exists(path: str) -> bool:
    return (ROOT / path).exists() or (PACKAGE / path).exists()


def resolve(dotted: str) -> object:
    """The object a dotted name denotes: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize(("doc", "path"), referenced_paths())
def test_referenced_path_exists(doc: str, path: str) -> None:
    if "<" in path or any(part.isupper() for part in re.split(r"[/.]", path)) or path in WORKED_EXAMPLE:
        return  # a template (``<policy>``, ``NAME``), or the file the worked example creates
    assert _exists(path), f"{doc} names {path}, which does not exist"


BARE_RE = re.compile(r"[`]{1,2}(_?\w+\.py)[`]{1,2}")


def referenced_files() -> list[tuple[str, str]]:
    """``(document, file name)`` for every bare ``name.py`` the two documents mention."""
    return sorted({(doc.name, m.group(1)) for doc in DOCS for m in BARE_RE.finditer(_text(doc))})


@pytest.mark.parametrize(("doc", "name"), referenced_files())
def test_referenced_file_name_exists(doc: str, name: str) -> None:
    places = [p for top in ("packing_theory", "tests", "tools", "benchmarks", "examples") for p in
              (ROOT / top).rglob(name)]
    assert places or (ROOT / name).exists(), f"{doc} names {name}, which is nowhere in the repository"


@pytest.mark.parametrize(("doc", "name"), referenced_names())
def test_referenced_name_exists(doc: str, name: str) -> None:
    if name == "packing_theory.peers.toy_nextfit":
        return  # the module the worked example creates (WORKED_EXAMPLE)
    try:
        resolve(name)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{doc} names {name}, which does not resolve ({exc})")


def test_the_scanners_see_references() -> None:
    assert ("architecture.rst", "packing_theory.engine.events.Horizon") in referenced_names()
    assert any(p == "tests/test_layout.py" for _, p in referenced_paths())
    assert _exists("engine/policies.py") and not _exists("engine/nothing.py")
    with pytest.raises(AttributeError):
        resolve("packing_theory.engine.events.NoSuchEvent")
