"""Golden fixtures as pytest parameters: a representative few in the default run, every one under ``-m slow``.

The default run (the README's test command) must stay short on a shared
machine; CI's slow step (``python -m pytest -m slow``) replays every fixture.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def fixture_params(paths: Iterable[Path], default: Callable[[Path], bool]) -> list[Any]:
    """One ``pytest.param`` per fixture (id: its stem), marked ``slow`` unless ``default(path)``."""
    return [pytest.param(p, id=p.stem, marks=() if default(p) else pytest.mark.slow) for p in paths]


def first_of_each_group(paths: Iterable[Path]) -> Callable[[Path], bool]:
    """True for the first fixture (by name) of each configuration group ``NAME-cNN.json`` -> ``NAME``."""
    firsts: dict[str, Path] = {}
    for p in sorted(paths):
        firsts.setdefault(re.sub(r"-c\d+$", "", p.stem), p)
    kept = set(firsts.values())
    return lambda p: p in kept


def not_realistic(path: Path) -> bool:
    """True unless the fixture is one of the realistic-size ones (``T2048_B1000``)."""
    return "realistic" not in path.stem
