"""FastBuffer against a naive list model, with ``_check()`` after every mutation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import packing_theory as pt
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

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        """The bounded-wait forced start: one given span leaves, wherever it is."""
        i = data.draw(st.integers(0, len(self.model) - 1), label="position")
        seq, rec = self.model.pop(i)
        assert self.buf.remove(seq) == rec

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
    buf._lens.clear()  # corrupt the index
    with pytest.raises(AssertionError):
        buf._check()


def test_a_length_held_once_is_its_seq_and_twice_a_heap() -> None:
    """A length's lone span is kept as its sequence number (no list); a second span makes a heap, and the
    heap goes back to the bare number when one is left, whichever way the spans leave."""
    buf = FastBuffer(8)
    a = buf.append((0, 0, 0, 5, False))
    assert buf._buckets[5] == a
    b = buf.append((1, 1, 0, 5, False))
    assert buf._buckets[5] == [a, b]
    buf._check()
    assert buf.take(5)[0] == a  # the earlier of the two
    assert buf._buckets[5] == b
    buf.extend([(2, 2, 0, 5, False), (3, 3, 0, 5, False)])
    assert buf._buckets[5] == [b, 2, 3]
    buf.remove(2)
    buf.remove(b)
    assert buf._buckets[5] == 3
    buf._check()
    buf._buckets[5] = [3]  # a one-element heap is not the representation
    with pytest.raises(AssertionError, match="lone span"):
        buf._check()


class SmallDistinctMachine(BufferMachine):
    """The same model with the sorted-list threshold at 3 distinct lengths: the SortedList path."""

    def __init__(self) -> None:
        import packing_theory.engine.buffer as mod

        self._saved = mod.SMALL_DISTINCT
        mod.SMALL_DISTINCT = 3
        super().__init__()

    def teardown(self) -> None:
        import packing_theory.engine.buffer as mod

        mod.SMALL_DISTINCT = self._saved


TestSmallDistinctMachine = SmallDistinctMachine.TestCase


def test_memory_does_not_grow_with_capacity() -> None:
    """Before the sparse index a buffer held an R+1 bucket list: ~64 MB at R = 10**6."""
    import tracemalloc

    for capacity in (2049, 10**6, 10**18):
        tracemalloc.start()
        buf = FastBuffer(capacity)
        for occ, n in enumerate([5, 70_000, 3, 999_999, 5]):
            buf.append((occ, occ, 0, n, False))
        assert buf.take(capacity)[1][3] == max(n for n in [5, 70_000, 3, 999_999, 5] if n <= capacity)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        buf._check()
        assert peak < 64 * 1024, (capacity, peak)


def test_huge_capacity_replay_matches_the_reference() -> None:
    """R = 10**12: the engines agree, and the fast one no longer needs O(R) memory to start."""

    import packing_theory as pt

    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 5 * 10**12, 400).tolist()
    for policy in ("discard", "continue", "requeue-bos"):
        cfg = pt.PackerConfig(capacity=10**12, min_buffer=7, refill=3, policy=policy, exhausted="drain")
        assert list(pt.Packer(cfg).events(lengths)) == list(pt.ReferencePacker(cfg).events(lengths))


def test_distinct_lengths_switch_to_a_sorted_list_and_keep_the_answers() -> None:
    from packing_theory.engine.buffer import SMALL_DISTINCT

    buf = FastBuffer(10**9)
    for occ in range(SMALL_DISTINCT + 10):
        buf.append((occ, occ, 0, 2 * occ + 1, False))
    assert buf._big
    buf._check()
    assert buf.take(10)[1][3] == 9  # largest fit
    assert buf.take(0)[1][3] == 1  # nothing fits: shortest, cropped
    buf._check()


def test_large_capacity_buffer_is_cheap() -> None:
    buf = FastBuffer(1_000_000)
    buf.extend([(0, 0, 0, 999_999, False), (1, 1, 0, 5, False)])
    assert buf.take(1_000_000)[0] == 0
    rep = pt.replay([3, 2_000_000, 7], capacity=1_000_000, min_buffer=1, refill=1, exhausted="drain")
    assert rep.summary().identity_holds()
