"""A fast start: building the parser and ``--help`` import no engine, audit, peer, orchestration, plotting
or numpy.

The import set is asserted, never a time (``benchmarks/bench_startup.py`` measures
the CPU seconds). Before the lazy command table ``packing-theory --help`` imported
every command module and, through them, the whole library (395 modules, 0.47 CPU s).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from packing_theory.cli import COMMANDS

ROOT = str(Path(__file__).resolve().parents[2])

HEAVY = ("packing_theory.engine", "packing_theory.audit", "packing_theory.peers",
         "packing_theory.orchestration", "packing_theory.registry", "packing_theory.corpus", "matplotlib",
         "numpy")
"""Modules (and their submodules) a parser or a help page must not import."""

IMPORTS_ITS_LIBRARY_AT_THE_TOP = {"contamination"}
"""Command modules that still import their library at module level (ported separately)."""


def _loaded(code: str) -> list[str]:
    """The heavy modules loaded after ``code`` runs in a fresh interpreter."""
    probe = (f"import sys\n{code}\n"
             f"heavy = {HEAVY!r}\n"
             "print(__import__('json').dumps(sorted(m for m in sys.modules "
             "if any(m == h or m.startswith(h + '.') for h in heavy))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120)
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_build_parser_imports_nothing_heavy() -> None:
    assert _loaded("import packing_theory.cli as c; c.build_parser()") == []


def test_the_top_level_help_imports_nothing_heavy() -> None:
    code = ("import contextlib, io, packing_theory.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert c.main(['--help']) == 0")
    assert _loaded(code) == []


def _command(name: str) -> object:
    if name in IMPORTS_ITS_LIBRARY_AT_THE_TOP:
        mark = pytest.mark.xfail(strict=True, reason="imports its library at the top")
        return pytest.param(name, marks=mark)
    return name


@pytest.mark.parametrize("command", [_command(c) for c in COMMANDS])
def test_a_command_s_help_imports_nothing_heavy(command: str) -> None:
    code = ("import contextlib, io, packing_theory.cli as c\n"
            f"with contextlib.redirect_stdout(io.StringIO()): assert c.main([{command!r}, '--help']) == 0")
    assert _loaded(code) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: running a command imports the engine."""
    assert "numpy" in _loaded("import packing_theory.cli as c; c.main(['policies', '--json'])")
