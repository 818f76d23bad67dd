"""FastBuffer against a naive list model, with ``_check()`` after every mutation."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from packing_theory.engine.buffer import FastBuffer

R = 9


class BufferMachine(RuleBasedStateMachine):
    """Append, take, replace (in place) and requeue (at the end) against a list model."""

    def __init__(self) -> None:
        super().__init__()
        self.buf = FastBuffer(R)
        self.model: list[tuple[int, tuple[int, int, int, int, bool]]] = []  # (seq, record)
        self.next_seq = 0
        self.occ = 0

    @rule(length=st.one_of(st.integers(1, 3 * R), st.sampled_from([1, 2, R, R + 1])))
    def append(self, length: int) -> None:
        rec = (self.occ, self.occ, 0, length, False)
        self.occ += 1
        seq = self.buf.append(rec)
        assert seq == self.next_seq
        self.model.append((seq, rec))
        self.next_seq += 1

    @rule(lengths=st.lists(st.integers(1, 3 * R), max_size=5))
    def extend(self, lengths: list[int]) -> None:
        recs = [(self.occ + i, self.occ + i, 0, n, False) for i, n in enumerate(lengths)]
        self.occ += len(lengths)
        self.buf.extend(recs)
        for rec in recs:
            self.model.append((self.next_seq, rec))
            self.next_seq += 1

    @precondition(lambda self: bool(self.model))
    @rule(remaining=st.integers(1, R), action=st.sampled_from(["remove", "keep", "requeue"]))
    def take(self, remaining: int, action: str) -> None:
        fits = [(i, s, r) for i, (s, r) in enumerate(self.model) if r[3] <= remaining]
        if fits:
            best = max(r[3] for _, _, r in fits)
            i, seq, rec = next(x for x in fits if x[2][3] == best)
            crop = False
        else:
            short = min(r[3] for _, r in self.model)
            i, (seq, rec) = next((i, x) for i, x in enumerate(self.model) if x[1][3] == short)
            crop = True
        assert self.buf.take(remaining) == (seq, rec, crop)
        del self.model[i]
        if crop and action != "remove":
            new = (rec[0], rec[1], rec[2] + remaining, rec[3] - remaining, False)
            if action == "keep":
                self.buf.replace(seq, new)
                self.model.insert(i, (seq, new))
            else:
                self.model.append((self.buf.append(new), new))
                self.next_seq += 1

    @invariant()
    def consistent(self) -> None:
        self.buf._check()
        assert len(self.buf) == len(self.model)
        assert [tuple(s) for s in self.buf.snapshot()] == [r for _, r in self.model]


TestBufferMachine = BufferMachine.TestCase


def test_take_from_empty_raises() -> None:
    with pytest.raises(IndexError, match="empty"):
        FastBuffer(4).take(2)


def test_replace_rejects_buffered_or_unknown_seq() -> None:
    buf = FastBuffer(4)
    seq = buf.append((0, 0, 0, 3, False))
    with pytest.raises(KeyError):
        buf.replace(seq, (0, 0, 0, 3, False))
    with pytest.raises(KeyError):
        buf.replace(5, (0, 0, 0, 3, False))


@pytest.mark.parametrize(("bad", "error"), [(1, ValueError), (0, ValueError), (-3, ValueError),
                                            (True, TypeError), (2.5, TypeError)])
def test_bad_capacity(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="capacity"):
        FastBuffer(bad)  # type: ignore[arg-type]


def test_numpy_capacity_is_accepted_as_everywhere_else() -> None:
    import numpy as np

    from packing_theory import PackerConfig

    # the same value PackerConfig accepts must not be refused by the buffer it drives
    assert PackerConfig(capacity=np.int64(8)).capacity == 8
    buf = FastBuffer(np.int64(8))  # type: ignore[arg-type]
    buf.append((0, 0, 0, 8, False))
    assert buf.take(8)[2] is False
    buf._check()


def test_check_detects_corruption() -> None:
    buf = FastBuffer(4)
    buf.append((0, 0, 0, 3, False))
    buf._mask = 0  # corrupt the index
    with pytest.raises(AssertionError):
        buf._check()
