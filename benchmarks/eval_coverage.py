"""Calibration of the paired-source bootstrap: coverage of a true zero and of a planted effect.

Method
------
* **Null** (:func:`packing_theory.evaluation.calibration.null_experiment`):
  for each seed ``0 .. N-1``, 40 sources in each of two over-context strata
  (lengths 300–600 and 700–1000), beginning and tail windows at R = 65, two
  oracle models whose every contrast is 0 by symmetry. Two comparisons per
  seed, both with ``B`` replicates and bootstrap seed = the seed:

  - no declared family: the six cells (beginning Δ, tail Δ, tail − beginning,
    in each stratum) get nominal 95 % intervals; we count how often each
    covers 0 (per-contrast coverage);
  - the declared family of the two tail − beginning interactions
    (Bonferroni, 97.5 % each): we count seeds where *both* cover 0
    (familywise coverage; nominal at least 95 %).

* **Planted** (:func:`~packing_theory.evaluation.calibration.planted_experiment`):
  60 sources per stratum, model ``late`` better on late tokens by a known
  amount; the family of two interactions; we count how often each interval
  covers the planted value, how often it excludes 0, and the mean estimate.

Binomial standard errors are ``sqrt(p (1 - p) / n)``. Run:
``python benchmarks/eval_coverage.py [--seeds 1000] [--replicates 1000] [--planted-seeds 200]``;
results go to ``benchmarks/results/evaluation_coverage.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

from packing_theory.evaluation import compare, interaction_family
from packing_theory.evaluation.calibration import null_experiment, planted_experiment, planted_value

STRATA = ["66–650", ">650"]
RESULTS = Path(__file__).parent / "results"


def _rate(hits: list[bool]) -> dict[str, float | int]:
    n = len(hits)
    p = float(np.mean(hits)) if n else math.nan
    return {"rate": p, "n": n, "se": math.sqrt(p * (1 - p) / n) if n else math.nan}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--planted-seeds", type=int, default=200)
    args = ap.parse_args()
    t0 = time.perf_counter()
    per_kind: dict[str, list[bool]] = {"beginning": [], "tail": [], "tail − beginning": []}
    familywise: list[bool] = []
    for seed in range(args.seeds):
        exp = null_experiment(seed)
        c = compare(exp.population, exp.scores, baseline="A", replicates=args.replicates, seed=seed)
        for r in c.exploratory:
            key = r.contrast.kind if r.contrast.minus is None else f"{r.contrast.kind} − {r.contrast.minus}"
            per_kind[key].append(r.interval.lo <= 0.0 <= r.interval.hi)
        f = compare(exp.population, exp.scores, baseline="A", family=interaction_family(["B"], STRATA),
                    replicates=args.replicates, seed=seed, exploratory=False)
        familywise.append(all(r.interval.lo <= 0.0 <= r.interval.hi for r in f.family))
    t_null = time.perf_counter() - t0
    truth = planted_value()
    cover: list[bool] = []
    excl: list[bool] = []
    ests: list[float] = []
    t1 = time.perf_counter()
    for seed in range(args.planted_seeds):
        exp = planted_experiment(seed)
        c = compare(exp.population, exp.scores, baseline="base", family=interaction_family(["late"], STRATA),
                    replicates=args.replicates, seed=seed, exploratory=False)
        for r in c.family:
            cover.append(r.interval.lo <= truth <= r.interval.hi)
            excl.append(r.interval.excludes_zero)
            ests.append(r.estimate)
    t_planted = time.perf_counter() - t1
    all_cells = [h for hits in per_kind.values() for h in hits]
    doc = {
        "method": "benchmarks/eval_coverage.py docstring",
        "seeds": args.seeds, "replicates": args.replicates, "planted_seeds": args.planted_seeds,
        "null": {"per_contrast_nominal_95": _rate(all_cells),
                 "by_kind": {k: _rate(v) for k, v in per_kind.items()},
                 "familywise_bonferroni_2_at_95": _rate(familywise)},
        "planted": {"truth_bpb": truth, "covers_truth_97_5": _rate(cover), "excludes_zero": _rate(excl),
                    "mean_estimate": float(np.mean(ests)), "sd_estimate": float(np.std(ests, ddof=1))},
        "seconds": {"null": t_null, "planted": t_planted},
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "platform": platform.platform()},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "evaluation_coverage.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    pc = doc["null"]["per_contrast_nominal_95"]
    fw = doc["null"]["familywise_bonferroni_2_at_95"]
    lines = [
        "# Bootstrap calibration (method: `benchmarks/eval_coverage.py`)", "",
        f"{args.seeds} null seeds and {args.planted_seeds} planted seeds, {args.replicates} paired-source "
        f"bootstrap replicates each, 40 (null) or 60 (planted) sources per stratum, two strata.", "",
        "| what | nominal | measured | n | binomial s.e. |", "|---|---:|---:|---:|---:|",
        f"| null, per-contrast coverage of 0 (all cells) | 0.950 | {pc['rate']:.4f} | {pc['n']} "
        f"| {pc['se']:.4f} |",
    ]
    for k, v in doc["null"]["by_kind"].items():
        lines.append(f"| null, {k} cells | 0.950 | {v['rate']:.4f} | {v['n']} | {v['se']:.4f} |")
    pl = doc["planted"]
    lines += [
        f"| null, familywise (2 interactions, Bonferroni 97.5 % each) | >= 0.950 | {fw['rate']:.4f} "
        f"| {fw['n']} | {fw['se']:.4f} |",
        f"| planted, 97.5 % interval covers the planted value | 0.975 "
        f"| {pl['covers_truth_97_5']['rate']:.4f} | {pl['covers_truth_97_5']['n']} "
        f"| {pl['covers_truth_97_5']['se']:.4f} |",
        f"| planted, interval excludes 0 | — | {pl['excludes_zero']['rate']:.4f} "
        f"| {pl['excludes_zero']['n']} | |",
        "",
        f"Planted tail − beginning interaction: {truth:.5f} BPB; mean estimate {pl['mean_estimate']:.5f} "
        f"(sd {pl['sd_estimate']:.5f} over {len(ests)} estimates).",
        f"Wall time (provisional, shared machine): null {t_null:.1f} s, planted {t_planted:.1f} s.", "",
    ]
    (RESULTS / "evaluation_coverage.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
