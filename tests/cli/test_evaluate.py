"""``packing-theory evaluate``: a scaled-down demo, your own models from shards, and the error paths."""

from __future__ import annotations

import json
import sys
import textwrap
import warnings
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
    assert tuple(da) == TOP_LEVEL_KEYS and da["schema"] == "packing-theory/evaluate" and da["version"] == 3
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
    for needle in ("## The answer", "## Population and support", "## BPB by stratum",
                   "The declared family of", "## Whole-source census", "what the intervals mean",
                   "reconcile exactly for every model and window kind: yes"):
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

        def raising(input_ids, segment_ids, /):
            raise RuntimeError("CUDA out of sorts")

        def huge(input_ids, segment_ids, /):
            return np.full((input_ids.shape[0], input_ids.shape[1] - 1), 1e308)

        def __getattr__(name):
            if name == "lazy":
                raise OSError("weights.bin not found")
            raise AttributeError(name)
    """))
    (tmp_path / "brokenmodels.py").write_text("raise RuntimeError('no weights here')\n")
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
    ([], "one of the arguments --demo --sources is required"),
    (["--demo", "--model", "a=evalmodels:flat"], "--demo brings its own models"),
    (["--demo", "--policy", "discard"], "at least two policies"),
    (["--demo", "--policy", "discard,nope"], "argument --policy: invalid choice: 'nope'"),
    (["--demo", "--policy", "discard,discard"], "--policy names a policy twice"),
    (["--sources", "{ev}", "--token-bytes", "{tb}", "--model", "a=evalmodels:flat", "--model",
      "b=evalmodels:tilted", "--policy", "discard"], "--policy applies to --demo"),
    (["--demo", "--baseline", "segment-first"], "the baseline is the first policy"),
])
def test_bad_input_is_one_line_and_status_2(own_inputs: tuple[Path, Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str], args: list[str],
                                            needle: str) -> None:
    ev, _, tb = own_inputs
    argv = ["evaluate", *(a.format(ev=ev, tb=tb) for a in args), "--no-plots", "--out", str(tmp_path / "x")]
    assert main(argv) == 2
    assert needle in one_line_error(capsys)


@pytest.mark.parametrize(("model", "needle"), [
    ("evalmodels:raising", "--model 'evalmodels:raising' raised RuntimeError while scoring input_ids "),
    ("brokenmodels:nll", "--model 'brokenmodels:nll': importing 'brokenmodels' raised RuntimeError: no "
                         "weights here"),
    ("evalmodels:lazy", "--model 'evalmodels:lazy': reading evalmodels.lazy raised OSError: weights.bin not "
                        "found"),
    ("evalmodels:huge", "model 'b' returned the NLL 1e+308 for window "),
])
def test_a_model_that_fails_is_bad_input_naming_it(own_inputs: tuple[Path, Path, Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str], model: str,
                                                  needle: str) -> None:
    """Before the fix a raising model was exit 3 ("internal error ... a bug") and 1e308 overflowed the sums
    (numpy's RuntimeWarning, then "replicates hold a non-finite value (a resample without bytes?)")."""
    ev, _, tb = own_inputs
    argv = ["evaluate", "--sources", str(ev), "--token-bytes", str(tb), "--model", "a=evalmodels:flat",
            "--model", f"b={model}", "--capacity", "129", "--context", "64", "--stride", "16",
            "--natural-targets", "32", "--replicates", "50", "--no-plots", "--out", str(tmp_path / "x")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning fails the test
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


SIX = ["baseline_s43", "random_crop_s43", "segmented_s43", "baseline_s44", "random_crop_s44", "segmented_s44"]
SAME_SEED = ["random_crop_s43:baseline_s43", "segmented_s43:baseline_s43", "random_crop_s44:baseline_s44",
             "segmented_s44:baseline_s44"]


@pytest.fixture()
def six_models(own_inputs: tuple[Path, Path, Path], tmp_path: Path) -> list[str]:
    (tmp_path / "sixmodels.py").write_text(textwrap.dedent("""
        import numpy as np

        def _make(seed):
            p = np.random.default_rng(seed).dirichlet(np.ones(15))
            p = np.r_[1e-6, p * (1 - 1e-6)]
            return lambda input_ids, segment_ids, /: -np.log(p[input_ids[:, 1:]])

        baseline_s43, random_crop_s43, segmented_s43, baseline_s44, random_crop_s44, segmented_s44 = (
            _make(s) for s in range(6))
    """))
    return [a for name in SIX for a in ("--model", f"{name}=sixmodels:{name}")]


def test_a_declared_same_seed_family_of_eight_uses_99_375(own_inputs: tuple[Path, Path, Path], tmp_path: Path,
                                                          six_models: list[str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ev, _, tb = own_inputs
    base = ["evaluate", "--sources", str(ev), "--token-bytes", str(tb), *six_models, "--capacity", "129",
            "--context", "64", "--stride", "16", "--natural-targets", "32",
            "--family-strata", "513–1024,1025–2049",
            "--replicates", "200", "--no-plots", "--json"]
    contrasts = [a for c in SAME_SEED for a in ("--contrast", c)]
    assert main([*base, *contrasts, "--out", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    cmp = doc["comparison"]
    assert cmp["family_size"] == 8 and cmp["adjusted_level"] == 0.99375 and len(cmp["family"]) == 8
    assert all(c["interval"]["level"] == 0.99375 for c in cmp["family"])
    assert {(c["model"][-3:], c["baseline"][-3:]) for c in cmp["family"]} == {("s43", "s43"), ("s44", "s44")}
    assert "declared family of 8 contrasts at family level 0.95: Bonferroni-adjusted 99.375% intervals" in err
    assert "99.375%" in (tmp_path / "a" / "evaluate.md").read_text()
    # without the declaration every model is compared with the first: 10 contrasts at 99.5 %
    assert main([*base, "--out", str(tmp_path / "b")]) == 0
    flat = json.loads(capsys.readouterr().out)["comparison"]
    assert flat["family_size"] == 10 and flat["adjusted_level"] == 0.995
    # the same family from a file; a declared stratum of fewer than 2 sources is dropped with its reason
    fam = tmp_path / "family.json"
    fam.write_text(json.dumps({"pairs": [c.split(":") for c in SAME_SEED], "strata": ["513–1024", ">16384"]}))
    assert main([*base, "--family", str(fam), "--out", str(tmp_path / "c")]) == 0
    out, err = capsys.readouterr()
    cmp = json.loads(out)["comparison"]
    assert cmp["family_size"] == 8 and cmp["adjusted_level"] == 0.99375 and len(cmp["family"]) == 4
    assert [d["name"] for d in cmp["dropped"] if d["what"] == "stratum"] == [">16384"]
    report = (tmp_path / "c" / "evaluate.md").read_text()
    assert "Dropped stratum >16384: stratum >16384 has 0 sources in the population" in report
    assert "(4 of them dropped, each reported with its reason)" in err  # the one summary line says so
    assert len(err.strip().splitlines()) == 1, err


def test_natural_context_assay_and_ranking_sections(own_inputs: tuple[Path, Path, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from packing_theory.evaluation import RowStatistics

    ev, _, tb = own_inputs
    rng = np.random.default_rng(0)
    nbytes = rng.integers(100, 200, size=40)
    rows = RowStatistics.from_arrays({"flat": nbytes * 0.9, "tilted": nbytes * 0.95}, nbytes,
                                     np.full(40, 128))
    rows.save(tmp_path / "rows.npz")
    status = main(["evaluate", "--sources", str(ev), "--token-bytes", str(tb),
                   "--model", "flat=evalmodels:flat", "--model", "tilted=evalmodels:tilted",
                   "--capacity", "129", "--context", "64", "--stride", "16", "--natural-targets", "32",
                   "--ranking", str(tmp_path / "rows.npz"), "--ranking-prefixes", "512,2560",
                   "--ranking-subsets", "50", "--replicates", "100", "--no-plots", "--json",
                   "--out", str(tmp_path / "n")])
    assert status == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    nat = doc["natural"]
    assert nat["contexts"] == [32, 64] and nat["cells"]
    assert all(w["natural_above"] == 256 for w in nat["windows"])
    assert {c["stratum"] for c in nat["cells"]} <= {"513–1024", "1025–2049"}
    assert [d["name"] for d in nat["dropped"]] == ["129–512"]  # straddles the 256-token threshold
    assert "dropped, each with its reason in the report" in err and len(err.strip().splitlines()) == 1
    rk = doc["ranking"]
    assert [p["rows"] for p in rk["prefixes"]] == [4, 20]
    assert rk["reversal_count"] == 0 and rk["subsets"] == 50
    md = (tmp_path / "n" / "evaluate.md").read_text()
    assert "## Natural preceding context and the prefix-region control" in md
    assert "## Prefix ranking check" in md
    assert main(["evaluate", "--sources", str(ev), "--token-bytes", str(tb),
                 "--model", "flat=evalmodels:flat", "--model", "tilted=evalmodels:tilted",
                 "--ranking", str(tmp_path / "missing.npz"), "--no-plots", "--out", str(tmp_path / "m")]) == 2
    missing = str(tmp_path / "missing.npz")
    assert f"argument --ranking: no such file or directory {missing!r}" in one_line_error(capsys)
