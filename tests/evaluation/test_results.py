"""Tables, exact accounting of sources/targets/bytes, and the whole-source census (no intervals)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from packing_theory.evaluation import (
    CENSUS_TARGET,
    NGramModel,
    WindowSpec,
    account,
    census_summary,
    sample_population,
    score,
    summarize_scores,
)

V = 9
TB = np.array([0, 1, 2, 3, 4, 1, 2, 0, 3], dtype=np.int64)  # 7 is a zero-byte special token


def population(seed: int = 0, n: int = 40):
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n):
        L = int(rng.choice([rng.integers(2, 60), rng.integers(60, 400), rng.integers(400, 1500)]))
        d = rng.integers(1, V, size=L)
        d[0] = 0
        docs.append(d)
    return sample_population(docs, per_stratum=None, boundaries=(60, 400)), docs


def models(docs) -> dict[str, NGramModel]:
    return {"uni": NGramModel(V, order=1, k=0.5).fit(docs[:10]),
            "bi": NGramModel(V, order=2, k=0.5).fit(docs[:10]),
            "tri": NGramModel(V, order=3, k=0.5).fit(docs[:10])}


def test_byte_and_token_totals_reconcile_exactly() -> None:
    pop, docs = population()
    spec = WindowSpec(kinds=("beginning", "tail", "natural-tail", "census"), capacity=100, natural_targets=30,
                      context=64, stride=20)
    windows = pop.windows(spec)
    sc = {name: score(windows, m, TB, spec=spec, model=name) for name, m in models(docs).items()}
    summary = summarize_scores(pop, sc, TB)
    assert all(a.ok for a in summary.accounting)
    by_kind = {a.kind: a for a in summary.accounting if a.model == "uni"}
    L = pop.lengths
    cb = [np.cumsum(TB[d]) for d in pop.documents]
    # independent totals from the documents
    assert by_kind["census"].targets_observed == int((L - 1).sum())
    assert by_kind["census"].bytes_observed == sum(int(c[-1]) for c in cb)  # BOS has 0 bytes
    assert by_kind["beginning"].targets_observed == int((np.minimum(L, 100) - 1).sum())
    long = L > 100
    assert by_kind["tail"].sources_observed == int(long.sum())
    assert by_kind["tail"].targets_observed == 99 * int(long.sum())
    # natural tails only from sources longer than 2 (R - 1) = 198 (seed 000 §5.7: the strata above 4,096)
    assert by_kind["natural-tail"].targets_observed == 30 * int((L > 198).sum()) < 30 * int(long.sum())
    assert by_kind["tail"].bytes_observed == sum(int(c[-1] - c[-100]) for c, ln in zip(cb, long, strict=True)
                                                 if ln)
    # per-stratum cells add up to the pooled cell exactly for integers
    for model in sc:
        for kind in summary.kinds:
            cells = [c for c in summary.cells if c.model == model and c.kind == kind]
            pooled = summary.cell(model, kind, "all")
            assert sum(c.metrics.targets for c in cells) == pooled.targets
            assert sum(c.metrics.bytes for c in cells) == pooled.bytes
            assert sum(c.metrics.sources for c in cells) == pooled.sources
    with pytest.raises(KeyError):
        summary.cell("uni", "tail", "nope")


def test_accounting_catches_missing_or_foreign_windows() -> None:
    pop, docs = population(1)
    spec = WindowSpec(kinds=("beginning", "census"), capacity=100, context=64, stride=20)
    windows = pop.windows(spec)
    m = NGramModel(V, order=2).fit(docs[:5])
    # drop one census window: a gap in one source
    drop = next(i for i, w in enumerate(windows) if w.kind == "census" and w.first_target > 0)
    short = score(windows[:drop] + windows[drop + 1 :], m, TB, spec=spec)
    acc = {a.kind: a for a in account(pop, short, TB)}
    assert acc["beginning"].ok and not acc["census"].ok
    assert "expected positions" in (acc["census"].first_problem or "")
    with pytest.raises(ValueError, match="accounting fails"):
        summarize_scores(pop, {"m": short}, TB)
    # windows from another population
    other, _ = population(2)
    foreign = score(other.windows(spec), m, TB, spec=spec)
    assert not all(a.ok for a in account(pop, foreign, TB))
    with pytest.raises(ValueError, match="carry no WindowSpec"):
        account(pop, dataclasses.replace(short, spec=None), TB)
    with pytest.raises(ValueError, match="outside token_bytes"):
        account(pop, short, TB[:3])


def test_census_summary_contributions_add_up_and_carry_no_interval() -> None:
    pop, docs = population(3)
    spec = WindowSpec(kinds=("census",), context=64, stride=16)
    windows = pop.windows(spec)
    sc = {name: score(windows, m, TB, spec=spec, model=name, position="source")
          for name, m in models(docs).items()}
    cs = census_summary(pop, sc, TB, baseline="uni")
    assert cs.statement == CENSUS_TARGET
    for m in cs.models:
        assert abs(sum(m.stratum_contributions) - m.aggregate.bpb) <= 1e-12
        assert m.aggregate.targets == int((pop.lengths - 1).sum())
    for c in cs.contrasts:
        assert abs(sum(c.stratum_contributions) - c.delta_bpb) <= 1e-12
        assert abs(sum(c.bin_contributions) - c.delta_bpb) <= 1e-12
        assert c.to_dict()["interval"] is None
    d = cs.to_dict()
    assert d["fingerprint"]["targets"] == int((pop.lengths - 1).sum())
    assert all(a["ok"] for a in d["accounting"])
    with pytest.raises(ValueError, match="baseline 'x'"):
        census_summary(pop, sc, TB, baseline="x")
    beg = WindowSpec(kinds=("beginning",), capacity=100)
    w2 = pop.windows(beg)
    with pytest.raises(ValueError, match="no census windows"):
        census_summary(pop, {"a": score(w2, models(docs)["uni"], TB, spec=beg)}, TB, baseline="a")


def test_summaries_reject_mismatched_scores() -> None:
    pop, docs = population(4)
    spec = WindowSpec(kinds=("beginning",), capacity=100)
    m = models(docs)["uni"]
    a = score(pop.windows(spec), m, TB, spec=spec)
    b = score(pop.windows(spec)[1:], m, TB, spec=spec)
    with pytest.raises(ValueError, match="did not score the same windows"):
        summarize_scores(pop, {"a": a, "b": b}, TB)
    with pytest.raises(TypeError, match="must be WindowScores"):
        summarize_scores(pop, {"a": "scores"}, TB)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="at least one model"):
        summarize_scores(pop, {}, TB)


def test_census_regions_are_positions_in_the_source() -> None:
    pop, docs = population(5)
    spec = WindowSpec(kinds=("census",), context=64, stride=20)
    windows = pop.windows(spec)
    ms = models(docs)
    by_source = {n: score(windows, m, TB, spec=spec, model=n, position="source", bin_edges=(0, 32, 128))
                 for n, m in ms.items()}
    cs = census_summary(pop, by_source, TB, baseline="uni")
    # region [128, end) holds exactly the targets at source positions >= 128, whatever window scored them
    agg = cs.models[0].aggregate
    assert agg.bin_targets == (int(np.minimum(pop.lengths - 1, 31).sum()),
                               int(np.clip(pop.lengths - 32, 0, 96).sum()),
                               int(np.clip(pop.lengths - 128, 0, None).sum()))
    for c in cs.contrasts:
        assert abs(sum(c.bin_contributions) - c.delta_bpb) <= 1e-12
    # scores binned by window position would put late source positions in the first bins: refused
    by_window = {n: score(windows, m, TB, spec=spec, model=n) for n, m in ms.items()}
    with pytest.raises(ValueError, match="binned by position in the source"):
        census_summary(pop, by_window, TB, baseline="uni")
