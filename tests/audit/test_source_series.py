"""The realised mixture over training time: the series (events and batches alike) and both drift readings."""

from __future__ import annotations

import numpy as np
import pytest

from packing_theory.audit.declared import DeclaredMixture
from packing_theory.audit.ledger import Ledger
from packing_theory.audit.source_series import MixtureSeries, SourceSeries, mixture_drift, tv
from packing_theory.corpus.labels import SourceLabels
from packing_theory.engine.consumers import feed_all
from packing_theory.engine.events import BosAdded, Horizon, Placement
from packing_theory.engine.packer import Packer
from packing_theory.errors import InputError

R = 64


def _corpus() -> tuple[np.ndarray, SourceLabels]:
    rng = np.random.default_rng(2)
    names = rng.choice(["s", "l"], 400)
    lengths = np.where(names == "s", rng.integers(2, 20, 400), rng.integers(30, 120, 400))
    return lengths, SourceLabels.from_strings(names.tolist(), origin="t")


def test_the_series_is_checked_after_every_event_and_sums_to_the_placements() -> None:
    lengths, labels = _corpus()
    packer = Packer(capacity=32, min_buffer=8, refill=4, policy="continue", rows=150)
    series, ledger = MixtureSeries(labels), Ledger.for_packer(packer)
    placed = np.zeros(2, np.int64)
    for ev in packer.events(lengths):
        series.feed(ev)
        ledger.feed(ev)
        series._check()
        if isinstance(ev, Placement):
            placed[labels.codes[ev.source]] += ev.length
    s = series.result()
    s._check()
    assert s.tokens.shape == (150, 2) and s.tokens.sum(axis=0).tolist() == placed.tolist()
    assert (s.tokens.sum(axis=1) == 32).all()  # continue fills every row
    assert s.unfinished.shape == (0, 2) and s.unfinished_tokens.tolist() == [0, 0]
    started = ledger.arrays()["started"]
    assert int(s.documents.sum()) == int(started.sum()) == int((s.first_row >= 0).sum())


def test_events_and_compiled_batches_give_the_same_series() -> None:
    pytest.importorskip("numba")
    from packing_theory.engine.policies import PackerConfig
    from packing_theory.engine.replay import make_packer

    lengths, labels = _corpus()
    for policy in ("discard", "requeue-bos", "segment-first"):
        cfg = PackerConfig(capacity=32, min_buffer=8, refill=4, policy=policy)  # ends with an unfinished row
        (a,) = feed_all(make_packer("fast", cfg).stream(lengths), MixtureSeries(labels))
        (b,) = feed_all(make_packer("compiled", cfg).stream(lengths), MixtureSeries(labels))
        for field in ("tokens", "documents", "unfinished_tokens", "unfinished_documents", "first_row",
                      "unfinished"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), (policy, field)


def test_an_added_bos_marker_is_no_source_token_and_a_moved_own_bos_is() -> None:
    labels = SourceLabels.from_strings(["a", "b"], origin="t")
    series = MixtureSeries(labels)
    events = [
        Placement(0, 0, 0, 0, 0, 3, True, False),  # no marker yet: the document's own BOS, moved
        BosAdded(1, 1, 1),
        Placement(0, 3, 1, 1, 0, 3, True, False),  # after its marker: 2 source tokens
        Placement(1, 0, 0, 0, 3, 2, False, False),  # the unfinished row
        Horizon(1, 2, "exhausted", ()),
    ]
    for ev in events:
        series.feed(ev)
        series._check()
    s = series.result()
    s._check()
    assert s.tokens.tolist() == [[3, 2]] and s.documents.tolist() == [[1, 1]]
    assert s.unfinished_tokens.tolist() == [2, 0] and s.unfinished_documents.tolist() == [0, 0]
    assert s.unfinished.tolist() == [[0, 2]] and s.unfinished_per_occurrence(3).tolist() == [2, 0, 0]
    with pytest.raises(InputError, match="names occurrence 0, past the 0 accounted"):
        s.unfinished_per_occurrence(0)


def test_result_needs_the_horizon_and_refuses_placements_past_the_unfinished_row() -> None:
    _, labels = _corpus()
    s = MixtureSeries(labels)
    with pytest.raises(InputError, match="needs the Horizon"):
        s.result()
    s.feed(Placement(5, 0, 0, 0, 0, 3, False, False))
    s.feed(Horizon(3, 3, "exhausted", ()))
    with pytest.raises(InputError, match="a placement in row 5, past the unfinished row 3"):
        s.result()


def test_the_drift_series_in_both_readings() -> None:
    z = np.zeros(2, np.int64)
    tokens = np.array([[3, 1], [3, 1], [1, 3], [1, 3], [0, 0]])
    docs = np.array([[2, 0], [2, 0], [0, 2], [0, 2], [0, 0]])
    s = SourceSeries(("a", "b"), 5, tokens, docs, z, z, np.arange(8), np.zeros((0, 2), np.int64))
    mix = DeclaredMixture({"a": 0.5, "b": 0.5}, {"a": 1, "b": 3})
    d = mixture_drift(s, mixture=mix, blocks=3, threshold=0.2)
    assert d.block_rows == 2 and d.block_starts == (0, 2, 4)
    assert d.block_tokens == (8, 8, 0) and d.block_documents == (4, 4, 0)
    assert d.shares[0] == (0.75, 0.25) and d.tv_overall == (0.25, 0.25, None) and d.drift == 0.25
    assert d.document_shares[0] == (1.0, 0.0) and d.document_drift == 0.5
    assert d.tv_targets == (0.5, 0.0, None) and d.max_tv_targets == 0.5  # tokens against 1:3 targets
    assert d.tv_alpha == (0.5, 0.5, None) and d.max_tv_alpha == 0.5  # documents against α
    assert d.drifted and d.document_drifted
    assert d.to_dict()["documents"]["tv_declared"] == [0.5, 0.5, None]
    with pytest.raises(InputError, match=r"threshold must be in \[0, 1\]"):
        mixture_drift(s, threshold=2)


def test_the_drift_covers_complete_rows_only() -> None:
    lengths, labels = _corpus()
    packer = Packer(capacity=R, min_buffer=4, refill=3, policy="continue")
    agg, series = feed_all(packer.stream(lengths), Ledger.for_packer(packer), MixtureSeries(labels))
    assert agg.partial_row_tokens > 0 and int(series.unfinished_tokens.sum()) == agg.partial_row_tokens
    d = mixture_drift(series, blocks=7)
    assert d.block_starts[-1] < agg.rows <= d.block_starts[-1] + d.block_rows
    assert sum(d.block_tokens) == agg.rows * R  # continue fills every complete row with source tokens


def test_tv() -> None:
    assert tv(np.array([1.0, 0.0, 0.0]), np.array([1 / 3] * 3)) == pytest.approx(2 / 3)
