"""``packing-theory evaluate``: a scaled-down demo, your own models from shards, and the error paths."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.corpus import write_shard
from packing_theory.evaluation.report import TOP_LEVEL_KEYS
from packing_theory.reporting import matplotlib_available

SMALL_DEMO = ["--demo", "--train-rows", "150", "--eval-candidates", "4000", "--per-stratum", "6",
              "--census-limit", "60", "--replicates", "300"]


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("packing-theory evaluate: error: ")
    return err


def _strip_seconds(doc: dict) -> dict:
    """The document without its run metadata (timings, the run id)."""
    doc = dict(doc)
    doc.pop("seconds")
    doc.pop("run")
    doc["models"] = {k: {kk: vv for kk, vv in v.items() if kk != "seconds"} for k, v in doc["models"].items()}
    for key in ("comparison", "census", "summary"):
        doc[key] = json.loads(json.dumps(doc[key]))
    return doc


def test_scaled_down_demo_is_complete_and_bit_identical(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["evaluate", *SMALL_DEMO, "--no-plots", "--out", str(a)]) == 0
    assert "wrote" in capsys.readouterr().err
    assert main(["evaluate", *SMALL_DEMO, "--no-plots", "--out", str(b)]) == 0
    da = json.loads((a / "evaluate.json").read_text())
    db = json.loads((b / "evaluate.json").read_text())
    assert tuple(da) == TOP_LEVEL_KEYS and da["schema"] == "packing-theory/evaluate" and da["version"] == 2
    assert _strip_seconds(da) == _strip_seconds(db)  # same seeds and inputs: identical results
    assert da["baseline"] == "discard" and list(da["models"]) == ["discard", "segment-first"]
    fps = da["fingerprints"]
    assert fps["discard"] == fps["segment-first"] and len(fps["discard"]["targets_sha256"]) == 64
    assert fps["census"]["targets"] > 0
    assert da["population"]["excluded_training"] and sum(da["population"]["excluded_training"]) == 8
    assert all(a_["ok"] for a_ in da["summary"]["accounting"] + da["census"]["accounting"])
    assert da["comparison"]["family_size"] == len(da["comparison"]["family"])
    assert all(c["interval"] is None for c in da["census"]["contrasts"])
    assert "finite-population correction" in da["statements"]["bootstrap"]
    assert "no sampling interval" in da["statements"]["census"]
    assert "never started" in da["support"]["discard"]["statement"]
    md = (a / "evaluate.md").read_text()
    for needle in ("## Support", "## BPB by stratum", "## Declared family", "## Whole-source census",
                   "## What the intervals mean",
                   "reconcile exactly for every model and window kind: **yes**"):
        assert needle in md


@pytest.mark.skipif(not matplotlib_available(), reason="matplotlib (the plots extra) is not installed")
def test_demo_writes_plots(tmp_path: Path) -> None:
    out = tmp_path / "p"
    argv = ["evaluate", *SMALL_DEMO, "--policy", "discard,continue,segment-first", "--out", str(out)]
    assert main(argv) == 0
    assert {"intervals.png", "positions.png"} <= {p.name for p in out.iterdir()}
    doc = json.loads((out / "evaluate.json").read_text())
    assert list(doc["models"]) == ["discard", "continue", "segment-first"]


@pytest.fixture()
def own_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(3)
    docs, train = [], []
    for i in range(60):
        L = int(rng.choice([rng.integers(2, 120), rng.integers(130, 500), rng.integers(600, 2000)]))
        d = rng.integers(1, 16, size=L)
        d[0] = 0
        docs.append(d.tolist())
        if i % 20 == 0:
            train.append(d.tolist())  # three exact duplicates to exclude
    write_shard(tmp_path / "eval.bin", docs, vocab=16)
    write_shard(tmp_path / "train.bin", train, vocab=16)
    tb = np.r_[0, 1 + np.arange(15) % 3]
    np.save(tmp_path / "tb.npy", tb)
    (tmp_path / "evalmodels.py").write_text(textwrap.dedent("""
        import numpy as np
        _P = np.r_[1e-6, np.full(15, (1 - 1e-6) / 15)]
        _Q = np.r_[1e-6, np.linspace(1, 2, 15) / np.linspace(1, 2, 15).sum() * (1 - 1e-6)]

        def flat(input_ids, segment_ids, /):
            return -np.log(_P[input_ids[:, 1:]])

        def tilted(input_ids, segment_ids, /):
            return -np.log(_Q[input_ids[:, 1:]])

        not_callable = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "eval.bin", tmp_path / "train.bin", tmp_path / "tb.npy"


def test_own_models_from_shards(own_inputs: tuple[Path, Path, Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    ev, train, tb = own_inputs
    out = tmp_path / "own"
    status = main(["evaluate", "--sources", str(ev), "--token-bytes", str(tb),
                   "--model", "flat=evalmodels:flat", "--model", "tilted=evalmodels:tilted",
                   "--exclude-shards", str(train), "--capacity", "129",
                   "--context", "64", "--stride", "16", "--natural-targets", "32", "--census",
                   "--family-strata", "129–512,513–1024", "--replicates", "200", "--no-plots", "--json",
                   "--out", str(out)])
    assert status == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["baseline"] == "flat"
    assert sum(doc["population"]["excluded_training"]) == 3
    assert doc["windows"]["capacity"] == 129
    assert [c["stratum"] for c in doc["comparison"]["family"]] == ["129–512", "513–1024"]
    assert doc["census"]["models"][0]["aggregate"]["targets"] > 0


@pytest.mark.parametrize(("args", "needle"), [
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat"], "at least two --model"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model", "b"],
     "--model must be NAME=module:attribute"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "a=evalmodels:tilted"], "names 'a' twice"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "b=nosuchmodule_xyz:f"], "cannot import module 'nosuchmodule_xyz'"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "b=evalmodels:missing"], "has no attribute 'missing'"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "b=evalmodels:not_callable"], "is not callable"),
    (["--sources", "{ev}", "--model", "a=evalmodels:flat", "--model", "b=evalmodels:tilted"],
     "--token-bytes FILE.npy is required"),
    (["--sources", "{ev}", "--token-bytes", "{ev}", "--model", "a=evalmodels:flat", "--model",
      "b=evalmodels:tilted"], "is not a readable .npy array"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "b=evalmodels:tilted", "--kinds", "census"], "use --census for a census"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "b=evalmodels:tilted", "--baseline", "c"], "baseline 'c' is not among the models"),
    ([], "give --demo, or --sources"),
    (["--demo", "--model", "a=evalmodels:flat"], "--demo brings its own models"),
    (["--demo", "--policy", "discard"], "at least two policies"),
    (["--demo", "--policy", "discard,nope"], "policy must be one of"),
    (["--demo", "--baseline", "segment-first"], "the baseline is the first policy"),
])
def test_bad_input_is_one_line_and_status_2(own_inputs: tuple[Path, Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str], args: list[str],
                                            needle: str) -> None:
    ev, _, tb = own_inputs
    argv = ["evaluate", *(a.format(ev=ev, tb=tb) for a in args), "--no-plots", "--out", str(tmp_path / "x")]
    assert main(argv) == 2
    assert needle in one_line_error(capsys)


def test_out_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["evaluate", "--demo", "--no-plots", "--out", str(f)]) == 2
    assert "is not a directory" in one_line_error(capsys)


def test_evaluate_is_registered_and_importing_it_pulls_no_heavy_dependency() -> None:
    import subprocess

    code = ("import importlib, sys, packing_theory.cli, packing_theory.evaluation;"
            "importlib.import_module(packing_theory.cli.COMMANDS['evaluate']);"
            "packing_theory.cli.build_parser().parse_args(['evaluate', '--demo']);"
            "print(','.join(m for m in ('torch', 'scipy', 'matplotlib', 'hypothesis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
