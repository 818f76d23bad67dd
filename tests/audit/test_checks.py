"""``_check()`` of the streaming consumers, called after every event, and corruption detection."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

import packing_theory as pt
from packing_theory.audit import Ledger
from packing_theory.audit.table import STARTED
from packing_theory.engine import SummaryAccumulator
from packing_theory.invariant.strategies import replay_cases


@given(replay_cases())
def test_consumers_check_after_every_event(case: Any) -> None:
    lengths, config = case
    acc = SummaryAccumulator(config.capacity)
    ledger = Ledger(config.capacity, config.min_buffer, chunk=3)
    for ev in pt.Packer(config).events(lengths):
        acc.feed(ev)
        acc._check()
        ledger.feed(ev)
        ledger._check()
    assert ledger.result().mass.emitted_tokens == acc.result().emitted_tokens


def _fed_ledger() -> Ledger:
    ledger = Ledger(8, 6, chunk=1)  # B-1 = 5 > the 3 long arrivals
    pt.feed_all(pt.Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4, 12, 2, 20, 1]), ledger)
    ledger._check()
    return ledger


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda lg: setattr(lg, "_emitted_tokens", lg._emitted_tokens + 1),
        lambda lg: lg._t.flags.__setitem__(slice(0, lg._t.cap), lg._t.flags[: lg._t.cap] | STARTED),
        lambda lg: setattr(lg, "_long_arrivals", lg._long_arrivals + 5),
        lambda lg: lg._t.discarded.__setitem__(0, 10**6),
        lambda lg: lg._t.first_inv.__setitem__(lg._t.n, 5),  # a first target past the arrived ids
    ],
)
def test_ledger_check_detects_corruption(corrupt: Any) -> None:
    ledger = _fed_ledger()
    corrupt(ledger)
    with pytest.raises(AssertionError):
        ledger._check()


def test_summary_check_detects_corruption() -> None:
    acc = SummaryAccumulator(8)
    for ev in pt.Packer(capacity=8, min_buffer=2, refill=2).events([5, 3, 9, 4]):
        acc.feed(ev)
    acc._check()
    acc.started += 1
    with pytest.raises(AssertionError):
        acc._check()
