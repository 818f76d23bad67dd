"""Per-source accounting, the share over time (events and batches alike) and the drift statistic."""

from __future__ import annotations

import numpy as np
import pytest

from packing_theory.audit.declared import DeclaredMixture
from packing_theory.audit.ledger import Ledger
from packing_theory.audit.sources import (
    MixtureSeries,
    mixture_drift,
    realised_mixture,
    source_accounts,
    tv,
)
from packing_theory.corpus.labels import SourceLabels
from packing_theory.engine.consumers import feed_all
from packing_theory.engine.packer import Packer
from packing_theory.errors import InputError


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
        if type(ev).__name__ == "Placement":
            placed[labels.codes[ev.source]] += ev.length
    m = series.result()
    assert m.shape == (150, 2) and m.sum(axis=0).tolist() == placed.tolist()
    assert (m.sum(axis=1) == 32).all()  # continue fills every row
    acc = source_accounts(ledger.arrays(), labels)
    assert all(a.reconciles for a in acc)


def test_events_and_compiled_batches_give_the_same_series() -> None:
    pytest.importorskip("numba")
    from packing_theory.engine.policies import PackerConfig
    from packing_theory.engine.replay import make_packer

    lengths, labels = _corpus()
    cfg = PackerConfig(capacity=32, min_buffer=8, refill=4, policy="discard", rows=120)
    (a,) = feed_all(make_packer("fast", cfg).stream(lengths), MixtureSeries(labels))
    (b,) = feed_all(make_packer("compiled", cfg).stream(lengths), MixtureSeries(labels))
    assert np.array_equal(a, b)


def test_result_needs_the_horizon_and_labels_must_cover_the_documents() -> None:
    lengths, labels = _corpus()
    s = MixtureSeries(labels)
    with pytest.raises(InputError, match="needs the Horizon"):
        s.result()
    short = labels.subset(np.arange(400) < 10)
    with pytest.raises(InputError, match="10 labels, but document"):
        feed_all(Packer(capacity=32, min_buffer=8, refill=4).events(lengths), MixtureSeries(short))


def test_shares_against_alpha() -> None:
    lengths, labels = _corpus()
    packer = Packer(capacity=32, min_buffer=8, refill=4, rows=100)
    ledger = Ledger.for_packer(packer)
    feed_all(packer.events(lengths), ledger)
    acc = source_accounts(ledger.arrays(), labels)
    mix = DeclaredMixture.from_document({"alpha": {"l": 0.5, "s": 0.25, "other": 0.25}})
    shares = {s.source: s for s in realised_mixture(acc, mix)}
    total = sum(a.trained_tokens for a in acc)
    assert shares["l"].share == next(a.trained_tokens for a in acc if a.source == "l") / total
    assert shares["other"].share == 0 and shares["other"].relative_error == -1.0
    assert shares["s"].absolute_error == pytest.approx(shares["s"].share - 0.25)
    with pytest.raises(InputError, match=r"source\(s\) \['s'\] that the declared mixture does not name"):
        realised_mixture(acc, DeclaredMixture.from_document({"alpha": {"l": 1.0}}))


def test_drift_blocks_and_statistic() -> None:
    m = np.array([[3, 1], [3, 1], [1, 3], [1, 3], [0, 0]])
    d = mixture_drift(m, ("a", "b"), blocks=3, alpha={"a": 0.5, "b": 0.5}, threshold=0.2)
    assert d.block_rows == 2 and d.block_starts == (0, 2, 4) and d.block_tokens == (8, 8, 0)
    assert d.shares[0] == (0.75, 0.25) and d.tv_overall == (0.25, 0.25, None)
    assert d.drift == 0.25 and d.max_tv_declared == 0.25 and d.drifted
    assert not mixture_drift(m, ("a", "b"), blocks=1).drifted
    assert tv(np.array([1.0, 0.0, 0.0]), np.array([1 / 3] * 3)) == pytest.approx(2 / 3)
    with pytest.raises(InputError, match=r"threshold must be in \[0, 1\]"):
        mixture_drift(m, ("a", "b"), threshold=2)
