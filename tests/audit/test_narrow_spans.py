"""A Horizon's buffered spans in ``int32`` columns are accounted as the same spans in ``int64``, at the bound.

The horizon cut gives ``int32`` span columns while every value fits
(``packing_theory/engine/horizon_batches.py``); the ledger and the stream
ledger read them (``span_columns``) and must neither wrap nor change a result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.audit import Ledger
from packing_theory.audit import ledger as ledger_module
from packing_theory.audit.stream import StreamLedger
from packing_theory.engine.events import Arrival, BosAdded, BufferedSpan, BufferedSpans, Horizon, Placement

TOP = int(np.iinfo(np.int32).max)


def _stream(spans: Any) -> list[Any]:
    """Two documents of ``TOP`` tokens and one of 3 with a BOS marker added, all buffered but 2 tokens."""
    return [Arrival(0, 0, 0, TOP), Arrival(1, TOP, 0, TOP), Arrival(2, 2, 0, 3), BosAdded(2, 2, 1),
            Placement(0, 0, 0, 0, 0, 2, False, False), Horizon(0, 2, "exhausted", spans)]


WIDE = (BufferedSpan(0, 0, 2, TOP - 2, False), BufferedSpan(1, TOP, 0, TOP, False),
        BufferedSpan(2, 2, 0, 4, True))


def _narrow(spans: tuple[BufferedSpan, ...]) -> BufferedSpans:
    occ, src, start, length, bos = zip(*spans, strict=True)
    return BufferedSpans(np.array(occ, np.int32), np.array(src, np.int32), np.array(start, np.int32),
                         np.array(length, np.int32), bos)


def test_int32_span_columns_are_the_spans() -> None:
    narrow = _narrow(WIDE)
    assert all(c.dtype == np.int32 for c in narrow.columns()[:4])
    assert narrow == WIDE and hash(narrow) == hash(WIDE) and narrow == BufferedSpans.of(WIDE)
    assert narrow.total_length() == 2 * TOP + 2 == pt.engine.events.buffered_length(WIDE)


@pytest.mark.parametrize(("chunk", "at_once"), [(2, 2), (1 << 20, 1 << 16)])
def test_the_ledger_accounts_int32_spans_as_int64_ones(chunk: int, at_once: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_module, "_SPANS_AT_ONCE", at_once)  # spans looked up in pieces, or at once
    got = Ledger(8, 2, chunk=chunk)
    pt.feed_all(_stream(_narrow(WIDE)), got)
    want = Ledger(8, 2, chunk=chunk)
    pt.feed_all(_stream(WIDE), want)
    assert got.result() == want.result()
    assert got.result().mass.buffered_tokens == 2 * TOP + 2
    assert got.result().mass.buffered_added_bos == 1
    assert got.arrays()["buffered"].tolist() == want.arrays()["buffered"].tolist() == [TOP - 2, TOP, 3]


def test_the_stream_ledger_accounts_int32_spans_as_int64_ones() -> None:
    got = StreamLedger(8, 2)
    pt.feed_all(_stream(_narrow(WIDE)), got)
    want = StreamLedger(8, 2)
    pt.feed_all(_stream(WIDE), want)
    assert got.result() == want.result()


def test_the_ledger_names_a_buffered_span_of_no_arrival_in_a_later_piece(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_module, "_SPANS_AT_ONCE", 2)
    spans = (*WIDE, BufferedSpan(7, 7, 0, 1, False))
    led = Ledger(8, 2)
    with pytest.raises(pt.InputError, match=(r"^inconsistent event stream: buffered span for occurrence 7 "
                                             r"before its Arrival$")):
        pt.feed_all(_stream(_narrow(spans)), led)
