"""What a comparison says: it ranks a quantity that differs between the packers, never one that is equal
for all of them, states what is equal once, and its plots stay readable at every registered packer."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from packing_theory.orchestration import Comparison, Settings, compare_corpus, default_packers
from packing_theory.orchestration.answer import RANKED, ranking
from packing_theory.orchestration.compare_report import (
    PLOT_FILES,
    _never_started,
    _retention,
    compare_headline,
)
from packing_theory.reporting import matplotlib_available, pyplot
from packing_theory.reporting.model import Table
from packing_theory.reporting.plotting import PALETTE

needs_plots = pytest.mark.skipif(
    not matplotlib_available(), reason="matplotlib (the plots extra) not installed"
)


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    rng = np.random.default_rng(1)
    lengths = np.concatenate([rng.integers(10, 400, 600), rng.integers(600, 2000, 30)])
    rng.shuffle(lengths)
    return compare_corpus(lengths, default_packers(), Settings(seq_length=512, min_buffer=32, refill=8))


def test_the_ranking_key_differs_between_the_packers(comparison: Comparison) -> None:
    rk = comparison.ranking
    assert rk.by is not None
    values = [rk.values[n] for n in rk.order]
    assert len(set(values)) > 1 and values == sorted(values)  # type: ignore[type-var]
    # the untrained total is equal at the common token horizon, up to the row that crosses it and the
    # BOS markers a packer adds (they are placed, not trained source tokens): stated once, not ranked
    eq = comparison.equal
    runs = [comparison.measurement.run(n) for n in eq["packers"]]  # the packers that fill their rows
    assert set(eq["padded"]) | set(eq["packers"]) == {r.packer for r in comparison.measurement.runs}
    assert "bestfit-pad" in eq["padded"]  # it pads instead of cropping
    slack = max(r.row_width for r in runs) + max(r.aggregates.mass.emitted_added_bos for r in runs)
    assert 0 < eq["trained_tokens_max"] - eq["trained_tokens_min"] <= slack
    headline = comparison.headline()
    assert f"{rk.by.label}: " in headline and "equal by construction" in headline
    first = comparison.measurement.run(rk.order[0])
    assert f"{rk.values[first.packer]:,}" in headline


def test_a_quantity_equal_for_every_packer_is_never_the_ranking_key(comparison: Comparison) -> None:
    runs = list(comparison.measurement.runs)
    for _ in RANKED:
        rk = ranking(runs)
        if rk.by is None:
            break
        values = {q2.key: [q2.value(r) for r in runs] for q2 in RANKED}
        assert len(set(values[rk.by.key])) > 1
        for earlier in RANKED[
            : RANKED.index(rk.by)
        ]:  # every quantity considered first is equal or unmeasured
            v = values[earlier.key]
            assert any(x is None for x in v) or len(set(v)) == 1
        # make the chosen quantity equal for every packer: the ranking moves on to another one
        runs = [_flatten(r, rk.by.key) for r in runs]
        assert ranking(runs).by != rk.by


def _flatten(run, key):  # type: ignore[no-untyped-def]
    """``run`` with the ranked quantity ``key`` set to one value for every run."""
    nt, costs, agg = run.never_trained, run.costs, run.aggregates
    if key == "untrained_documents":
        return replace(run, never_trained=replace(
            nt, never_started=replace(nt.never_started, documents=0),
            never_reached=replace(nt.never_reached, documents=0), partial_row_only_documents=0))
    if key == "cut_off_tokens":
        return replace(run, never_trained=replace(nt, dropped=replace(nt.dropped, tokens=0)))
    if key in ("start_delay_max", "start_delay_p50"):
        return replace(run, costs=replace(costs, **{key: 0}))
    if key == "unused_positions":  # every position holds a token
        full = run.row_positions - agg.mass.repeated_tokens
        return replace(run, aggregates=replace(agg, mass=replace(agg.mass, emitted_tokens=full)))
    exp = agg.exposure
    flat = tuple(tuple(0 for _ in row) for row in exp.emitted)
    return replace(run, aggregates=replace(agg, exposure=replace(exp, emitted=flat)))


def test_the_answer_card_ranks_with_every_number(comparison: Comparison) -> None:
    answer = comparison.sections()[0]
    assert answer.answer
    table = next(b for b in answer.blocks if isinstance(b, Table) and b.key == "ranking")
    rk = comparison.ranking
    assert [row[1] for row in table.rows] == list(rk.order)
    ranks = [row[0] for row in table.rows]
    assert ranks[0] == 1 and ranks == sorted(ranks) and ranks == [rk.ranks[n] for n in rk.order]
    # a shared rank means equal on every ranked quantity measured for both; a new rank is the position
    for i in range(1, len(ranks)):
        assert ranks[i] in (ranks[i - 1], i + 1)
        if ranks[i] == ranks[i - 1]:
            pairs = zip(table.rows[i][2:], table.rows[i - 1][2:], strict=True)
            assert all(a == b for a, b in pairs if a is not None and b is not None)
    labels = [c.label for c in table.columns]
    assert "documents with no token trained" in labels and "tokens cut off" in labels


@needs_plots
def test_retention_is_one_panel_per_packer(comparison: Comparison) -> None:
    plt = pyplot()
    fig = _retention(plt, comparison)
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert len(comparison.measurement.runs) >= 19
    assert sorted(ax.get_title() for ax in titled) == sorted(r.packer for r in comparison.measurement.runs)
    assert all(ax.get_legend() is None for ax in fig.axes)
    from matplotlib.colors import to_rgb

    colours = {tuple(round(v, 3) for v in p.get_facecolor()[:3]) for ax in titled for p in ax.patches}
    assert colours <= {tuple(round(v, 3) for v in to_rgb(c)) for c in PALETTE}
    plt.close(fig)


@needs_plots
def test_never_started_is_a_ranked_bar_chart(comparison: Comparison) -> None:
    plt = pyplot()
    fig = _never_started(plt, comparison)
    ax = fig.axes[0]
    runs = comparison.measurement.runs
    bars = [[p.get_width() for p in c.patches] for c in ax.containers]
    partial = any(r.never_trained.partial_row_only_documents for r in runs)  # a part no packer has: no bar
    assert [c.get_label() for c in ax.containers] == ["never started", "never reached",
                                                       *(["only in the unfinished row"] if partial else [])]
    totals = [sum(v) for v in zip(*bars, strict=True)]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names[: len(comparison.ranking.order)] == list(comparison.ranking.order)  # the table's order
    assert len(totals) == len(runs)
    # each bar is the ranked count: documents with no token trained, whatever their label
    by_name = {r.packer: r.never_trained for r in runs}
    assert totals == [by_name[n].untrained_documents + by_name[n].partial_row_only_documents for n in names]
    plt.close(fig)
    assert PLOT_FILES[1] == "compare_never_started.png"


def test_a_common_horizon_set_by_an_early_stop_says_so() -> None:
    # every document but three is longer than a row: bestfit-pad (never crops) starves after a few rows
    starving = compare_corpus([3, 20, 2, 30, 25, 1, 40, 22, 50, 31, 27, 45] * 3, ["discard", "bestfit-pad"],
                              Settings(capacity=8, min_buffer=2, refill=2))
    m = starving.measurement
    assert m.horizon is not None and m.horizon.unit == "tokens" and m.horizon_set_by == ("bestfit-pad",)
    reach = m.horizon.value / m.corpus.tokens
    assert reach < 0.5
    head = compare_headline(starving)
    assert (f"set by bestfit-pad ({reach:.1%} of the tokens offered: bestfit-pad stops early here; "
            "see --natural-end)") in head
    assert "bestfit-pad pads or repeats in its rows" in head
    small = Settings(capacity=8, min_buffer=2, refill=2)
    healthy = compare_corpus([3, 9, 2, 4, 10, 1] * 4, ["discard", "trl-bfd"], small)
    assert healthy.measurement.horizon is not None
    assert healthy.measurement.horizon.value / healthy.measurement.corpus.tokens >= 0.5
    assert "stops early" not in compare_headline(healthy)
