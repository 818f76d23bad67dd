"""``bestfit-pad``: nanochat's SFT loader rule, on streams whose events are written out by hand."""

from __future__ import annotations

import pytest

import packing_theory as pt
from packing_theory.engine.events import Arrival, BufferedSpan, Horizon, Padding, Placement
from packing_theory.registry import entry


def _events(lengths: list[int], **kw: object) -> dict[str, list[object]]:
    out = {}
    for engine in ("fast", "reference"):
        out[engine] = list(pt.replay(lengths, engine=engine, policy="bestfit-pad", **kw).events)
    return out


def test_pads_the_row_instead_of_cropping_and_starves_on_long_documents() -> None:
    # R = 8, B = 2, one document per refill (nanochat's refill): 3 and 4 fill row 0 to 7; nothing of
    # [9, 10] fits the last position, so it is padding; row 1 would be all padding: the replay stops.
    got = _events([3, 9, 4, 10, 2, 2, 5], capacity=8, min_buffer=2, refill=1)
    want = [
        Arrival(0, 0, 0, 3), Arrival(1, 1, 0, 9),
        Placement(0, 0, 0, 0, 0, 3, False, False),
        Arrival(2, 2, 0, 4),
        Placement(0, 3, 2, 2, 0, 4, False, False),
        Arrival(3, 3, 0, 10),
        Padding(0, 7, 1),
        Horizon(1, 0, "starved", (BufferedSpan(1, 1, 0, 9, False), BufferedSpan(3, 3, 0, 10, False))),
    ]
    assert got["fast"] == want and got["reference"] == want


def test_best_fit_takes_the_largest_that_fits_earliest_on_ties_and_pads_only_the_end() -> None:
    # R = 6, B = 3: buffer [2, 4, 4]: the first 4, then 2 fill row 0; 5 then 1 fill row 1 (drained
    # below B); the last 4 starts row 2, which ends partial when the buffer is empty
    got = _events([2, 4, 4, 1, 5], capacity=6, min_buffer=3, refill=1, exhausted="drain")
    want = [
        Arrival(0, 0, 0, 2), Arrival(1, 1, 0, 4), Arrival(2, 2, 0, 4),
        Placement(0, 0, 1, 1, 0, 4, False, False),
        Arrival(3, 3, 0, 1),
        Placement(0, 4, 0, 0, 0, 2, False, False),
        Arrival(4, 4, 0, 5),
        Placement(1, 0, 4, 4, 0, 5, False, False),
        pt.Exhausted(1, 5, 2),
        Placement(1, 5, 3, 3, 0, 1, False, False),
        Placement(2, 0, 2, 2, 0, 4, False, False),
        Horizon(2, 4, "drained", ()),
    ]
    assert got["fast"] == want and got["reference"] == want


def test_a_row_budget_ends_before_starvation_and_starvation_ends_before_the_budget() -> None:
    # R = 8, B = 2: row 0 holds 3 (6 does not fit the 5 left), row 1 holds 6; row 2 would be padding
    early = _events([3, 9, 6, 10, 2], capacity=8, min_buffer=2, refill=1, rows=1)
    assert early["fast"] == early["reference"]
    assert early["fast"][-2:] == [Padding(0, 3, 5), Horizon(1, 0, "rows", (BufferedSpan(1, 1, 0, 9, False),
                                                                        BufferedSpan(2, 2, 0, 6, False)))]
    late = _events([3, 9, 6, 10, 2], capacity=8, min_buffer=2, refill=1, rows=50)
    assert late["fast"] == late["reference"]
    assert late["fast"][-2:] == [Padding(1, 6, 2), Horizon(2, 0, "starved", (BufferedSpan(1, 1, 0, 9, False),
                                                                         BufferedSpan(3, 3, 0, 10, False)))]


def test_declaration() -> None:
    e = entry("bestfit-pad")
    assert e.kind == "streaming" and not e.in_family and e.engines == ("fast", "reference")
    assert "padded instead of cropped" in e.family and "PR #811" in e.reference
    with pytest.raises(pt.InputError, match=("policy 'bestfit-pad' runs on the engines fast, reference; "
                                             "got engine='compiled'")):
        pt.build_packer("bestfit-pad", capacity=8, engine="compiled")
