"""The command line at scale: --engine compiled and --workers give the report of the fast engine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from packing_theory.cli import main
from packing_theory.engine.compiled import compiled_available

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from diff_audit_json import differences


def _demo(tmp_path: Path, name: str, *extra: str) -> dict[str, object]:
    out = tmp_path / name
    assert main(["audit", "--demo", "--scale", "0.02", "--no-plots", "--no-progress", "--out", str(out),
                 *extra]) == 0
    doc: dict[str, object] = json.loads((out / "audit.json").read_text())
    return doc


@pytest.mark.slow  # over 30 s: the demo under three engine and worker settings
def test_demo_report_is_identical_across_engines_and_workers(tmp_path: Path) -> None:
    base = _demo(tmp_path, "fast")
    runs = [("fast-workers", "--workers", "2")]
    if compiled_available():
        runs += [("compiled", "--engine", "compiled"),
                 ("compiled-workers", "--engine", "compiled", "--workers", "2")]
    for name, *extra in runs:
        other = _demo(tmp_path, name, *extra)
        # the report records the engine it ran on; every figure is the same
        assert [d for d in differences(base, other) if not d.startswith("$.settings.engine:")] == [], name
        assert set(other["seconds"]) == set(base["seconds"])  # type: ignore[arg-type]
    # the diff does see a changed number
    changed = json.loads(json.dumps(base))
    changed["packers"][0]["mass"]["emitted_tokens"] += 1
    assert differences(base, changed) == ["$.packers[0].mass.emitted_tokens: "
                                          f"{base['packers'][0]['mass']['emitted_tokens']!r} != "  # type: ignore[index]
                                          f"{changed['packers'][0]['mass']['emitted_tokens']!r}"]


def test_workers_must_not_be_negative(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--demo", "--scale", "0.01", "--no-plots", "--no-progress", "--workers", "-1",
                 "--out", str(tmp_path / "x")]) == 2
    assert "--workers must be >= 0, got -1" in capsys.readouterr().err


NO_NUMBA = 'numba not installed: pip install "packing-theory[fast]"'


@pytest.mark.skipif(not compiled_available(), reason=NO_NUMBA)
def test_replay_command_compiled_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    path = tmp_path / "l.npy"
    np.save(path, np.random.default_rng(1).integers(1, 5000, 3000))
    out = {}
    for engine in ("fast", "compiled"):
        argv = ["replay", "--lengths", str(path), "--json", "--engine", engine, "--policy", "random-span"]
        assert main(argv) == 0
        out[engine] = json.loads(capsys.readouterr().out)
        out[engine].pop("seconds")
    assert out["compiled"] == out["fast"]
