"""The embedding API refuses misuse: raised in "raise" mode, recorded as a misuse otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import packing_theory as pt
from packing_theory.engine.events import Arrival, Horizon, Placement
from packing_theory.invariant import InvariantMonitor, MonitoredBuffer, MonitorMisuse, MonitorTypeError


def state(mon: InvariantMonitor) -> tuple[Any, ...]:
    return (mon.arrivals, mon.buffered_mass, mon.selections, mon.selections_checked, mon.violation_count,
            sorted(mon.protected.members), mon.protected.long_arrivals, dict(mon._tainted))


def monitor(mode: str) -> InvariantMonitor:
    mon = InvariantMonitor(capacity=4, min_buffer=3, on_violation=mode)  # type: ignore[arg-type]
    for occ, n in enumerate([9, 2, 7]):
        mon.on_arrival(occ, n)
    mon._check()
    return mon


CALLS = [
    ("on_select", (5,), {"buffered": 3}, MonitorMisuse, "unknown-occurrence"),  # never arrived
    ("on_select", (-1,), {}, MonitorMisuse, "bad-value"),
    ("on_select", (None,), {}, MonitorTypeError, "wrong-type"),
    ("on_select", ("0",), {}, MonitorTypeError, "wrong-type"),
    ("on_select", (1,), {"buffered": -2}, MonitorMisuse, "bad-value"),
    ("on_select", (1,), {"buffered": 2.5}, MonitorTypeError, "wrong-type"),
    ("on_remove", (17,), {}, MonitorMisuse, "unknown-occurrence"),
    ("on_remove", (None,), {}, MonitorTypeError, "wrong-type"),
    ("on_arrival", (1, 4), {}, MonitorMisuse, "out-of-order"),  # rejected: not counted (it was, before)
    ("on_arrival", (3, 0), {}, MonitorMisuse, "bad-value"),
    ("on_arrival", (None, 4), {}, MonitorTypeError, "wrong-type"),
    ("on_change", (0, 9, 5), {}, MonitorMisuse, "changed-protected"),
    ("on_change", (8, 9, 5), {}, MonitorMisuse, "unknown-occurrence"),
    ("feed", (None,), {}, MonitorMisuse, "not-an-event"),
    ("feed", ((1, 2, 3),), {}, MonitorMisuse, "not-an-event"),
    ("feed", (Placement(0, 0, 11, 11, 0, 2, False, False),), {}, MonitorMisuse, "unknown-occurrence"),
    ("feed", (Arrival(0, 0, 0, 3),), {}, MonitorMisuse, "out-of-order"),
]


@pytest.mark.parametrize(("call", "args", "kwargs", "exc", "kind"), CALLS)
def test_raise_mode_raises_and_changes_nothing(call: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                                              exc: type[Exception], kind: str) -> None:
    mon = monitor("raise")
    before = state(mon)
    with pytest.raises(exc) as info:
        getattr(mon, call)(*args, **kwargs)
    assert info.value.misuse.kind == kind  # type: ignore[attr-defined]
    assert state(mon) == before
    mon._check()


@pytest.mark.parametrize(("call", "args", "kwargs", "exc", "kind"), CALLS)
def test_record_mode_records_a_misuse_not_a_violation(call: str, args: tuple[Any, ...],
                                                      kwargs: dict[str, Any], exc: type[Exception],
                                                      kind: str) -> None:
    mon = monitor("record")
    before = state(mon)
    getattr(mon, call)(*args, **kwargs)
    assert state(mon) == before
    assert mon.misuse_count == 1 and mon.misuses[0].kind == kind and mon.violation_count == 0
    assert not mon.ok
    report = mon.result().to_dict()
    assert report["misuses"] == 1 and report["first_misuse"]["kind"] == kind and report["violations"] == 0
    mon._check()


def test_type_misuse_is_also_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"occurrence must be an int, got NoneType None"):
        monitor("raise").on_select(None)  # type: ignore[arg-type]


def test_events_after_the_horizon_are_misuse() -> None:
    mon = InvariantMonitor(capacity=4, min_buffer=1)
    pt.feed_all(pt.Packer(capacity=4, min_buffer=1, refill=1).events([3, 2]), mon)
    mon.feed(Horizon(0, 0, "rows", ()))
    assert [m.kind for m in mon.misuses] == ["after-horizon"]


def test_arrival_ids_may_skip_values() -> None:
    mon = InvariantMonitor(capacity=4, min_buffer=2, on_violation="raise")
    mon.on_arrival(0, 3)
    mon.on_arrival(5, 3)
    mon._check()
    assert mon.on_select(5, buffered=2)
    with pytest.raises(MonitorMisuse, match="occurrence 3 never arrived"):
        mon.on_select(3)
    mon._check()


# --------------------------------------------------------------------------- MonitoredBuffer


def buffer(mode: str) -> MonitoredBuffer[list[int]]:
    mon = InvariantMonitor(capacity=4, min_buffer=3, on_violation=mode)  # type: ignore[arg-type]
    buf: MonitoredBuffer[list[int]] = MonitoredBuffer(mon)
    buf.extend([[0] * 9, [0] * 2, [0] * 7])  # K = {0 (L=9), 2 (L=7)}
    return buf


def test_shrinking_a_protected_document_in_place_is_refused() -> None:
    """Before the fix ``buf[0] = shorter`` silently changed a protected span."""
    buf = buffer("raise")
    with pytest.raises(MonitorMisuse, match=r"protected occurrence 0 \(L=9\) changed from 9 to 4 tokens"):
        buf[0] = [0] * 4
    assert buf[0] == [0] * 9
    buf._check()
    buf[1] = [1, 1]  # same length: fine
    buf[1] = [1]  # an unprotected document may change
    buf._check()


def test_shrinking_a_protected_document_is_recorded_in_record_mode() -> None:
    buf = buffer("record")
    buf[0] = [0] * 4
    mon = buf.monitor
    assert mon.misuse_count == 1 and mon.misuses[0].kind == "changed-protected" and mon.violation_count == 0
    buf._check()


@pytest.mark.parametrize("second", ["keep", "requeue"])
@pytest.mark.parametrize("first", ["keep", "requeue"])
def test_one_continuation_per_pop(first: str, second: str) -> None:
    """Before the fix keep and requeue after one pop gave one occurrence two active spans."""
    buf = buffer("raise")
    doc = buf.pop(1)
    cont = {"keep": lambda item: buf.keep(0, item), "requeue": buf.requeue}
    cont[first](doc[1:])
    buf._check()
    n = len(buf)
    with pytest.raises(ValueError, match="would duplicate its span"):
        cont[second](doc[1:])
    assert len(buf) == n
    buf._check()


def test_continuation_rules() -> None:
    buf = buffer("raise")
    with pytest.raises(ValueError, match=r"keep\(\) needs a previous pop"):
        buf.keep(0, [1])
    doc = buf.pop(1)
    with pytest.raises(ValueError, match="a continuation of 3 tokens is longer than the 2 tokens popped"):
        buf.requeue([0, 0, 0])
    with pytest.raises(ValueError, match="must hold at least one token"):
        buf.keep(0, [])
    with pytest.raises(TypeError, match="index must be an int"):
        buf.keep(None, doc)  # type: ignore[arg-type]
    buf.keep(0, doc[:1])
    buf._check()


@pytest.mark.parametrize("bad", [slice(0, 1), None, 1.0, "0"])
def test_indices_must_be_ints(bad: object) -> None:
    buf = buffer("raise")
    with pytest.raises(TypeError, match="index must be an int"):
        buf[bad] = [1]  # type: ignore[index]
    with pytest.raises(TypeError, match="index must be an int"):
        buf.pop(bad)  # type: ignore[arg-type]
    buf._check()


def test_items_must_have_a_positive_length() -> None:
    buf = buffer("raise")
    with pytest.raises(ValueError, match="an appended item must hold at least one token"):
        buf.append([])
    assert len(buf) == 3 and buf.monitor.arrivals == 3  # nothing counted
    with pytest.raises(TypeError, match="length of an appended item must be an int"):
        MonitoredBuffer(InvariantMonitor(4, 2), length=lambda item: 1.5).append([1])
    buf._check()


class MisuseMachine(RuleBasedStateMachine):
    """Random loader calls, misuse included, against a naive model; _check() after every call."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "record"
        self.mon = InvariantMonitor(capacity=4, min_buffer=3)
        self.buf: MonitoredBuffer[list[int]] = MonitoredBuffer(self.mon)
        self.model: list[tuple[int, int]] = []  # (occurrence, length) in buffer order
        self.next_occ = 0
        self.pending: tuple[int, int] | None = None
        self.misuses = 0

    @rule(n=st.integers(1, 12))
    def append(self, n: int) -> None:
        self.buf.append([0] * n)
        self.model.append((self.next_occ, n))
        self.next_occ += 1

    @rule(i=st.integers(-3, 6))
    def pop(self, i: int) -> None:
        if not -len(self.model) <= i < len(self.model):
            with pytest.raises(IndexError):
                self.buf.pop(i)
            return
        occ, n = self.model.pop(i)
        assert self.buf.pop(i) == [0] * n
        self.pending = (occ, n)

    @rule(i=st.integers(0, 4), cut=st.integers(0, 12), requeue=st.booleans())
    def continuation(self, i: int, cut: int, requeue: bool) -> None:
        ok = self.pending is not None and 1 <= cut <= self.pending[1]
        call = (lambda item: self.buf.requeue(item)) if requeue else (lambda item: self.buf.keep(i, item))
        if not ok:
            with pytest.raises(ValueError):
                call([0] * cut)
            return
        assert self.pending is not None
        call([0] * cut)
        entry = (self.pending[0], cut)
        if requeue:
            self.model.append(entry)
        else:
            self.model.insert(i, entry)
        self.pending = None

    @rule(i=st.integers(0, 6), n=st.integers(1, 12))
    def setitem(self, i: int, n: int) -> None:
        if i >= len(self.model):
            with pytest.raises(IndexError):
                self.buf[i] = [0] * n
            return
        occ, old = self.model[i]
        if occ in self.mon.protected and n != old:
            self.misuses += 1
        self.buf[i] = [0] * n
        self.model[i] = (occ, n)

    @rule(occ=st.one_of(st.none(), st.integers(-2, 40)))
    def select_directly(self, occ: int | None) -> None:
        known = isinstance(occ, int) and 0 <= occ < self.next_occ
        self.mon.on_select(occ, buffered=len(self.model))  # type: ignore[arg-type]
        if not known:
            self.misuses += 1

    @invariant()
    def consistent(self) -> None:
        self.buf._check()
        self.mon._check()
        assert [(self.buf.occurrence_at(j), len(self.buf[j])) for j in range(len(self.buf))] == self.model
        assert self.mon.misuse_count == self.misuses
        assert self.mon.arrivals == self.next_occ


TestMisuseMachine = MisuseMachine.TestCase
