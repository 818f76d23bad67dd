"""Paired-source bootstrap: planted effect recovery, Bonferroni against an exact case, null coverage."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from packing_theory.evaluation import (
    BOOTSTRAP_TARGET,
    Contrast,
    WindowSpec,
    bonferroni_quantiles,
    compare,
    interaction_family,
    percentile_interval,
    sample_population,
    score,
)
from packing_theory.evaluation.calibration import (
    UnigramModel,
    null_experiment,
    planted_experiment,
    planted_value,
)

STRATA = ["66–650", ">650"]


def test_bonferroni_quantiles_of_seed_000() -> None:
    assert bonferroni_quantiles(0.95, 8) == (0.003125, 0.996875, 0.99375)
    assert bonferroni_quantiles(0.95, 1) == (0.025, 0.975, 0.95)
    assert bonferroni_quantiles(0.9, 4) == (0.0125, 0.9875, 0.975)
    with pytest.raises(ValueError, match="level must be a number in"):
        bonferroni_quantiles(1.5, 2)
    with pytest.raises(ValueError, match="family_size must be >= 1"):
        bonferroni_quantiles(0.95, 0)
    with pytest.raises(ValueError, match="non-finite"):
        percentile_interval([0.0, np.nan])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        percentile_interval([])


def _two_model_scores(nll_a: list[float], nll_b: list[float], nbytes: list[int]):
    """One stratum of len(nll_a) sources, each one beginning window of one target with given NLL and bytes."""
    n = len(nll_a)
    V = n + 1
    tb = np.r_[0, nbytes].astype(np.int64)
    docs = [np.array([0, i + 1]) for i in range(n)]
    pop = sample_population(docs, per_stratum=None, boundaries=(10,), drop_internal_duplicates=False)
    spec = WindowSpec(kinds=("beginning",), capacity=4)
    windows = pop.windows(spec)

    def table(values: list[float]):
        t = np.zeros(V)
        t[1:] = values
        return lambda ids, seg, /: t[ids[:, 1:]]

    scores = {"A": score(windows, table(nll_a), tb, spec=spec, model="A"),
              "B": score(windows, table(nll_b), tb, spec=spec, model="B")}
    return pop, scores


def test_bonferroni_widening_against_the_exact_bootstrap_distribution() -> None:
    nll_a = [1.0, 2.0, 1.5, 3.0]
    nll_b = [0.7, 2.4, 1.1, 2.0]
    nbytes = [2, 3, 1, 4]
    pop, scores = _two_model_scores(nll_a, nll_b, nbytes)
    # exact bootstrap law: all 4**4 ordered resamples are equally likely
    d = np.array(nll_b) - np.array(nll_a)
    b = np.array(nbytes, dtype=float)
    stats = np.sort([d[list(r)].sum() / (math.log(2) * b[list(r)].sum())
                     for r in itertools.product(range(4), repeat=4)])
    cdf_steps = np.arange(1, stats.size + 1) / stats.size

    def exact_quantile(q: float) -> float:
        return float(stats[np.searchsorted(cdf_steps, q - 1e-15)])

    B = 200_000
    distinct = np.unique(stats)
    cdf_at = np.searchsorted(stats, distinct, side="right") / stats.size
    intervals = {}
    for m in (1, 8):
        q_lo, q_hi, level = bonferroni_quantiles(0.95, m)
        # the quantile levels sit well away from the exact law's jumps, so the sampled
        # percentile must land on the exact atom
        for q in (q_lo, q_hi):
            assert np.min(np.abs(cdf_at - q)) > 5 * math.sqrt(q * (1 - q) / B), (m, q)
        got = intervals[m] = _interval_with_family_size(pop, scores, m, B)
        assert got.level == level
        assert got.lo == pytest.approx(exact_quantile(q_lo), abs=1e-12)
        assert got.hi == pytest.approx(exact_quantile(q_hi), abs=1e-12)
    assert intervals[8].lo < intervals[1].lo and intervals[8].hi > intervals[1].hi  # Bonferroni widens


def _interval_with_family_size(pop, scores, m: int, B: int):
    """The first interval of a declared family of m contrasts: B and m - 1 copies of B against A."""
    extra = {f"B{i}": scores["B"] for i in range(1, m)}
    family = [Contrast("B", "1–10", "beginning")]
    family += [Contrast(f"B{i}", "1–10", "beginning") for i in range(1, m)]
    cmp = compare(pop, {**scores, **extra}, baseline="A", family=family, replicates=B, seed=7,
                  exploratory=False)
    assert cmp.family_size == m
    return cmp.family[0].interval


def test_planted_position_effect_is_recovered() -> None:
    truth = planted_value()
    assert truth < -0.1
    exp = planted_experiment(0)
    fam = interaction_family(["late"], STRATA)
    cmp = compare(exp.population, exp.scores, baseline="base", family=fam, replicates=4000, seed=11)
    assert cmp.adjusted_level == 0.975 and cmp.family_size == 2
    for r in cmp.family:
        assert r.interval.lo < truth < r.interval.hi, (r.contrast.name, r.interval, truth)
        assert r.interval.hi < 0 and r.interval.excludes_zero
        assert abs(r.estimate - truth) < 0.25 * abs(truth)
        assert r.parts[1] == 0.0  # the beginning delta is exactly zero: both models agree on early tokens
        assert r.census_stratum  # every source of the stratum is in the population
    explo = {(r.contrast.stratum, r.contrast.kind, r.contrast.minus): r for r in cmp.exploratory}
    for s in STRATA:
        assert explo[(s, "beginning", None)].estimate == 0.0
        assert explo[(s, "tail", None)].estimate == pytest.approx(
            next(r.estimate for r in cmp.family if r.contrast.stratum == s), abs=1e-15)
    # over seeds the estimate is centred on the planted value
    ests = []
    for seed in range(1, 9):
        e = planted_experiment(seed)
        c = compare(e.population, e.scores, baseline="base", family=fam, replicates=500, seed=seed)
        ests.extend(r.estimate for r in c.family)
    assert abs(np.mean(ests) - truth) < 0.05 * abs(truth)
    assert all(v < 0 for v in ests)


def test_null_intervals_cover_zero_at_about_the_nominal_rate() -> None:
    seeds = 120
    nominal: list[bool] = []
    familywise: list[bool] = []
    fam = interaction_family(["B"], STRATA)
    for seed in range(seeds):
        exp = null_experiment(seed)
        c = compare(exp.population, exp.scores, baseline="A", family=fam, replicates=600, seed=seed)
        familywise.append(all(r.interval.lo <= 0 <= r.interval.hi for r in c.family))
        nominal.extend(r.interval.lo <= 0 <= r.interval.hi for r in c.exploratory)
    rate = float(np.mean(nominal))
    fw = float(np.mean(familywise))
    # nominal 95 % per contrast (4 contrasts x 120 seeds); Bonferroni family of 2 at 97.5 % each
    assert 0.90 <= rate <= 0.99, rate
    assert fw >= 0.90, fw


def test_comparison_is_bit_identical_for_equal_seeds_and_inputs() -> None:
    exp = planted_experiment(3, per_stratum=20)
    fam = interaction_family(["late"], STRATA)
    a = compare(exp.population, exp.scores, baseline="base", family=fam, replicates=300, seed=5)
    b = compare(exp.population, exp.scores, baseline="base", family=fam, replicates=300, seed=5)
    c = compare(exp.population, exp.scores, baseline="base", family=fam, replicates=300, seed=6)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != c.to_dict()
    again = planted_experiment(3, per_stratum=20)
    d = compare(again.population, again.scores, baseline="base", family=fam, replicates=300, seed=5)
    assert d.to_dict() == a.to_dict()
    assert a.statement == BOOTSTRAP_TARGET and "finite-population correction" in a.statement
    assert a.fingerprint["targets_sha256"] == exp.scores["base"].fingerprint.targets_sha256


def test_compare_rejects_bad_input() -> None:
    exp = planted_experiment(4, per_stratum=10)
    pop, scores = exp.population, exp.scores
    with pytest.raises(ValueError, match="at least two model names"):
        compare(pop, {"base": scores["base"]}, baseline="base")
    with pytest.raises(ValueError, match="baseline 'nope'"):
        compare(pop, scores, baseline="nope")
    other = planted_experiment(5, per_stratum=10)
    with pytest.raises(ValueError, match="did not score the same windows"):
        compare(pop, {"base": scores["base"], "late": other.scores["late"]}, baseline="base")
    with pytest.raises(ValueError, match="names model 'x'"):
        compare(pop, scores, baseline="base", family=[Contrast("x", "66–650")])
    with pytest.raises(ValueError, match="with itself"):
        compare(pop, scores, baseline="base", family=[Contrast("base", "66–650")])
    with pytest.raises(ValueError, match="stratum must be one of"):
        compare(pop, scores, baseline="base", family=[Contrast("late", "1–2")])
    with pytest.raises(ValueError, match="must not repeat"):
        compare(pop, scores, baseline="base", family=[Contrast("late", "66–650")] * 2)
    with pytest.raises(ValueError, match="not every source of stratum 66–650 has natural-tail"):
        compare(pop, scores, baseline="base", family=[Contrast("late", "66–650", "natural-tail")])
    with pytest.raises(ValueError, match="replicates must be >= 1"):
        compare(pop, scores, baseline="base", replicates=0)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        compare(pop, scores, baseline="base", seed=-2)
    with pytest.raises(TypeError, match="must be Contrast"):
        compare(pop, scores, baseline="base", family=["late"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="reported without sampling intervals"):
        Contrast("late", "66–650", "census")
    with pytest.raises(ValueError, match="two different kinds"):
        Contrast("late", "66–650", "tail", "tail")
    with pytest.raises(ValueError, match="kind must be a window kind"):
        Contrast("late", "66–650", "middle")
    # a stratum of one source has no bootstrap interval
    docs = [np.r_[0, np.ones(99, dtype=int)], np.r_[0, np.ones(20, dtype=int)]]
    small = sample_population(docs, per_stratum=None, boundaries=(50,), drop_internal_duplicates=False)
    spec = WindowSpec(kinds=("beginning",), capacity=65)
    w = small.windows(spec)
    q = UnigramModel(np.full(4, 0.25))
    tb = np.array([0, 1, 1, 1])
    s = {"a": score(w, q, tb, spec=spec), "b": score(w, q, tb, spec=spec)}
    with pytest.raises(ValueError, match="needs at least 2"):
        compare(small, s, baseline="a", family=[Contrast("b", ">50", "beginning")])
    with pytest.raises(ValueError, match="1–50 has 1 source"):
        compare(small, s, baseline="a", family=[Contrast("b", "1–50", "tail")])
