"""Declared contrast families: pairs, the Bonferroni level of the declaration, dropped strata, contrasts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from packing_theory.evaluation import (
    Contrast,
    ContrastFamily,
    WindowSpec,
    compare,
    declare_family,
    family_from_dict,
    family_of_pairs,
    parse_pair,
    read_family,
    sample_population,
    score,
)
from packing_theory.evaluation.published import SAME_SEED_PAIRS

V = 12
TB = np.r_[0, 1 + np.arange(V - 1) % 3]


def unigram(seed: int):
    p = np.random.default_rng(seed).dirichlet(np.ones(V))
    p[0] = 1e-6
    p /= p.sum()
    return lambda ids, seg, /: -np.log(p[ids[:, 1:]])


def experiment(lengths: list[int], names: list[str]):
    rng = np.random.default_rng(0)
    docs = []
    for L in lengths:
        d = rng.integers(1, V, size=L)
        d[0] = 0
        docs.append(d)
    pop = sample_population(docs, per_stratum=None, boundaries=(64, 256), drop_internal_duplicates=False)
    spec = WindowSpec(kinds=("beginning", "tail"), capacity=65)
    w = pop.windows(spec)
    scores = {n: score(w, unigram(i), TB, model=n, spec=spec) for i, n in enumerate(names)}
    return pop, scores


SIX = ["baseline_s43", "random_crop_s43", "segmented_s43", "baseline_s44", "random_crop_s44", "segmented_s44"]


def test_seed_000_family_is_eight_same_seed_contrasts_at_99_375() -> None:
    fam = family_of_pairs(SAME_SEED_PAIRS)
    assert fam.size == 8 and fam.dropped == ()
    assert all(c.baseline[-3:] == c.model[-3:] for c in fam.contrasts)  # never across seeds
    assert [c.stratum for c in fam.contrasts[:2]] == ["4097–8192", "8193–16384"]
    pop, scores = experiment([30, 40, 100, 120, 150, 300, 400, 500], SIX)
    pairs = [tuple(p) for p in SAME_SEED_PAIRS]
    decl = declare_family(pop, pairs, strata=("65–256", ">256"))
    cmp = compare(pop, scores, baseline="baseline_s43", family=decl, replicates=200, seed=1)
    assert cmp.family_size == 8 and cmp.adjusted_level == 0.99375 and len(cmp.family) == 8
    assert all(r.interval.level == 0.99375 for r in cmp.family)
    assert "8 contrasts at family level 0.95: Bonferroni-adjusted 99.375% intervals" in cmp.describe_family()
    # exploratory cells follow the declared pairs: no contrast across seeds
    assert {(r.contrast.model, r.baseline) for r in cmp.exploratory} <= set(pairs)
    # the baseline-for-everyone family of the same six models would be 10 contrasts at 99.5 %
    flat = declare_family(pop, [(m, "baseline_s43") for m in SIX[1:]], strata=("65–256", ">256"))
    assert compare(pop, scores, baseline="baseline_s43", family=flat, replicates=50).adjusted_level == 0.995


def test_a_stratum_with_too_few_sources_is_dropped_with_its_reason_and_m_is_kept() -> None:
    pop, scores = experiment([30, 40, 100, 120, 150, 300], ["a", "b", "c"])
    assert pop.sampled == (2, 3, 1)
    decl = declare_family(pop, [("b", "a"), ("c", "a")], strata=("65–256", ">256"))
    assert decl.size == 4 and len(decl.contrasts) == 2
    stratum = [d for d in decl.dropped if d.what == "stratum"]
    assert [d.name for d in stratum] == [">256"] and "1 source in the population" in stratum[0].reason
    assert sum(d.what == "contrast" for d in decl.dropped) == 2
    cmp = compare(pop, scores, baseline="a", family=decl, replicates=100)
    assert cmp.family_size == 4 and cmp.adjusted_level == 0.9875  # Bonferroni over the 4 declared
    assert len(cmp.family) == 2 and cmp.dropped == decl.dropped
    assert "2 of them dropped" in cmp.describe_family()
    assert cmp.to_dict()["dropped"][0]["what"] == "stratum"
    # a declared contrast whose windows are not paired is dropped by compare, with its reason
    fam = ContrastFamily((Contrast("b", "1–64", "tail", baseline="a"), Contrast("b", "65–256", "tail",
                                                                             baseline="a")), (("b", "a"),))
    got = compare(pop, scores, baseline="a", family=fam, replicates=50)
    assert [r.contrast.stratum for r in got.family] == ["65–256"] and got.family_size == 2
    assert "has tail windows" in got.dropped[0].reason and got.dropped[0].name.startswith("b − a, 1–64")
    # a plain sequence is strict: the same contrast is an error
    with pytest.raises(ValueError, match="not every source of stratum 1–64 has tail"):
        compare(pop, scores, baseline="a", family=list(fam.contrasts), replicates=50)
    with pytest.raises(ValueError, match="stratum must be one of"):
        declare_family(pop, [("b", "a")], strata=("4097–8192",))  # a typo is an error, not a drop
    with pytest.raises(ValueError, match="names model 'zz'"):
        compare(pop, scores, baseline="a", family=declare_family(pop, [("zz", "a")], strata=("65–256",)))


def test_family_files_and_pairs(tmp_path) -> None:
    assert parse_pair("b:a") == ("b", "a")
    for bad, msg in (("b", "MODEL:BASELINE"), ("b:b", "with itself"), ("b:a:c", "MODEL:BASELINE"),
                     (":a", "MODEL:BASELINE")):
        with pytest.raises(ValueError, match=msg):
            parse_pair(bad)
    doc = {"pairs": [["b", "a"], ["c", "a"]], "strata": ["65–256"]}
    assert family_from_dict(doc).size == 2
    explicit = family_from_dict({"contrasts": [{"model": "b", "baseline": "a", "stratum": "65–256",
                                                "kind": "tail", "minus": "beginning"}]})
    assert explicit.contrasts == (Contrast("b", "65–256", "tail", "beginning", "a"),)
    assert explicit.pairs == (("b", "a"),)
    path = tmp_path / "family.json"
    path.write_text(json.dumps(doc))
    assert read_family(path).contrasts == family_from_dict(doc).contrasts
    for bad, msg in (({"pairs": [], "contrasts": []}, "exactly one"), ({}, "exactly one"),
                     ({"pairs": [["a", "b"]], "extra": 1}, "unknown keys"),
                     ({"pairs": "ab"}, "must be a list"),
                     ({"pairs": [["a"]]}, r"must be \(model, baseline\)"),
                     ({"pairs": [["a", "b"], ["a", "b"]]}, "must not repeat"),
                     ({"contrasts": [{"model": "a"}]}, "needs model, baseline and stratum")):
        with pytest.raises(ValueError, match=msg):
            family_from_dict(bad)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not a readable JSON file"):
        read_family(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        read_family(tmp_path / "list.json")
    with pytest.raises(ValueError, match="declared=1 is fewer"):
        ContrastFamily(tuple(family_from_dict(doc).contrasts), declared=1)
