"""A fast start: building the parser and ``--help`` import no engine, audit, peer, orchestration, plotting
or numpy; ``replay`` imports what a replay uses and nothing of the audit, the measurement or the
task runner.

The import set is asserted, never a time (``benchmarks/bench_startup.py`` and
``benchmarks/bench_replay.py`` measure the CPU seconds). Before the lazy command
table ``packing-theory --help`` imported every command module and, through them,
the whole library (395 modules, 0.47 CPU s); before the lazy subpackages
``replay`` imported 134 of the package's modules to use 50.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import COMMANDS

ROOT = str(Path(__file__).resolve().parents[2])

HEAVY = ("packing_theory.engine", "packing_theory.audit", "packing_theory.peers",
         "packing_theory.orchestration", "packing_theory.registry", "packing_theory.corpus", "matplotlib",
         "numpy")
"""Modules (and their submodules) a parser or a help page must not import."""

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


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_s_help_imports_nothing_heavy(command: str) -> None:
    code = ("import contextlib, io, packing_theory.cli as c\n"
            f"with contextlib.redirect_stdout(io.StringIO()): assert c.main([{command!r}, '--help']) == 0")
    assert _loaded(code) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: running a command imports the engine."""
    assert "numpy" in _loaded("import packing_theory.cli as c; c.main(['policies', '--json'])")


REPLAY_MAY_USE = {
    "packing_theory.orchestration": {"settings", "corpus"},  # Settings and open_corpus, nothing else
    "packing_theory.audit": {"strata"},
    "packing_theory.peers": {"_base", "_figures"},  # the registry's base class, not one framework
    "packing_theory.reporting": {"progress"},
    "packing_theory.invariant": set(),
    "packing_theory.distributed": set(),
    "packing_theory.evaluation": set(),
    "packing_theory.adapters": set(),
    "packing_theory.training": set(),
    "packing_theory.configs": set(),
    "packing_theory.contamination": set(),
}
"""Per subpackage, the only modules a small ``replay --json`` (discard, the fast engine) may import."""

REPLAY_NEVER = (
    "packing_theory.engine.reference", "packing_theory.engine.compiled", "packing_theory.engine._kernel",
    "packing_theory.engine.rows", "packing_theory.engine.variants", "packing_theory.engine.starts",
    "matplotlib", "numba", "pyarrow", "torch", "dask", "pandas", "hypothesis", "tqdm", "sortedcontainers",
)
"""Modules (and their submodules) it never imports: other engines, and every optional dependency."""


def _all_loaded(code: str) -> list[str]:
    """Every module loaded after ``code`` runs in a fresh interpreter."""
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
                         timeout=120)
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def _replay_modules(tmp_path: Path, *options: str) -> list[str]:
    path = tmp_path / "lengths.npy"
    np.save(path, np.random.default_rng(0).integers(1, 200, 2000).astype(np.int64))
    argv = ["replay", "--lengths", str(path), "--capacity", "64", "--min-buffer", "8", "--json", *options]
    code = ("import contextlib, io, packing_theory.cli as c\n"
            f"with contextlib.redirect_stdout(io.StringIO()): assert c.main({argv!r}) == 0")
    return _all_loaded(code)


def test_replay_imports_what_a_replay_uses_and_no_more(tmp_path: Path) -> None:
    loaded = _replay_modules(tmp_path)
    assert {"numpy", "packing_theory.engine.packer", "packing_theory.engine.summary",
            "packing_theory.orchestration.settings"} <= set(loaded)  # it did replay
    assert _beyond(loaded) == []
    assert [m for m in loaded if any(m == n or m.startswith(n + ".") for n in REPLAY_NEVER)] == []


def _beyond(loaded: list[str]) -> list[str]:
    """The modules of ``loaded`` that :data:`REPLAY_MAY_USE` does not allow."""
    return sorted(m for m in loaded for pkg, allowed in REPLAY_MAY_USE.items()
                  if m.startswith(pkg + ".") and m[len(pkg) + 1:].split(".")[0] not in allowed)


def test_the_replay_probe_sees_what_another_engine_imports(tmp_path: Path) -> None:
    """The check can fail: the reference engine is a module of its own, bounded-wait's monitor is the
    invariant's."""
    loaded = set(_replay_modules(tmp_path, "--engine", "reference", "--policy", "bounded-wait"))
    assert {"packing_theory.engine.reference", "packing_theory.invariant.wait_bound"} <= loaded
    assert "packing_theory.peers.trl" in _beyond(_replay_modules(tmp_path, "--policy", "trl-bfd"))


def _blas_after_replay(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """``OPENBLAS_NUM_THREADS`` and the thread count of a fresh interpreter after a small replay, run with
    ``env`` (every BLAS variable else removed)."""
    import os

    path = tmp_path / "lengths.npy"
    np.save(path, np.arange(1, 300, dtype=np.int64))
    argv = ["replay", "--lengths", str(path), "--capacity", "64", "--min-buffer", "8", "--json"]
    code = ("import contextlib, io, json, os, packing_theory.cli as c\n"
            f"with contextlib.redirect_stdout(io.StringIO()): assert c.main({argv!r}) == 0\n"
            "print(json.dumps({'openblas': os.environ.get('OPENBLAS_NUM_THREADS', ''),\n"
            "                  'threads': str(len(os.listdir('/proc/self/task')))}))")
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                                "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         timeout=120, env={**clean, **env})
    found: dict[str, str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_a_command_asks_numpy_s_blas_for_one_thread(tmp_path: Path) -> None:
    """No command does linear algebra; OpenBLAS's idle pool of one thread per core cost 0.12 CPU s per
    process on 2 cores (benchmarks/results/replay.md)."""
    assert _blas_after_replay(tmp_path, {}) == {"openblas": "1", "threads": "1"}


def test_a_blas_size_the_user_set_is_kept(tmp_path: Path) -> None:
    assert _blas_after_replay(tmp_path, {"OPENBLAS_NUM_THREADS": "3"})["openblas"] == "3"
    assert _blas_after_replay(tmp_path, {"OMP_NUM_THREADS": "2"})["openblas"] == ""
