"""The OccurrenceWindow against a whole array: eviction is never visible, memory stays bounded."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from packing_theory.audit.store import ColumnStore
from packing_theory.audit.window import OccurrenceWindow
from packing_theory.testing import scaled_examples

Int64Array = npt.NDArray[np.int64]


def _pending(c: dict[str, npt.NDArray[np.int64]]) -> npt.NDArray[np.bool_]:
    return np.asarray(c["left"] > 0, np.bool_)


class WindowMachine(RuleBasedStateMachine):
    """Random grows, writes (to recent and old ids alike), evictions and reads; a plain array is the model."""

    def __init__(self) -> None:
        super().__init__()
        self.w = OccurrenceWindow({"left": np.int32, "src": np.int64}, store=ColumnStore(), window=4,
                                  fills={"src": None})
        self.w.fixed = frozenset({"src"})  # written back only for a record loaded back
        self.left = np.zeros(0, np.int64)
        self.src = np.zeros(0, np.int64)

    @rule(k=st.integers(1, 9))
    def grow(self, k: int) -> None:
        top = self.w.n + k
        self.w.grow(top)
        self.left = np.concatenate([self.left, np.zeros(k, np.int64)])
        self.src = np.concatenate([self.src, np.arange(self.src.size, top, dtype=np.int64)])

    @precondition(lambda self: self.w.n > 0)
    @rule(data=st.data())
    def write(self, data: st.DataObject) -> None:
        drawn = data.draw(st.lists(st.integers(0, self.w.n - 1), min_size=1, max_size=5))
        ids = np.asarray(sorted(set(drawn)))
        values = np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=ids.size, max_size=ids.size)))
        s = self.w.slots(ids)  # an evicted id is loaded back first
        assert (s >= 0).all()
        self.w.cols["left"][s] = values
        self.left[ids] = values

    @precondition(lambda self: self.w.base > 0)
    @rule(data=st.data())
    def arrive_late(self, data: st.DataObject) -> None:
        """An evicted id changes a fixed column (a late arrival): it is loaded back first, so it is kept."""
        o = data.draw(st.integers(0, self.w.base - 1))
        if o in self.w.old_ids().tolist():
            return  # pending since its eviction: its fixed columns never change
        s = self.w.slots(np.asarray([o], np.int64))
        v = data.draw(st.integers(100, 200))
        self.w.cols["src"][s] = v
        self.w.cols["left"][s] = 1
        self.src[o], self.left[o] = v, 1

    @rule()
    def evict(self) -> None:
        self.w.evict(_pending)
        assert self.w.n - self.w.base <= 2 * self.w.window or self.w.n < self.w._retry_at

    @invariant()
    def same_as_the_array(self) -> None:
        self.w._check()
        n = self.w.n
        got = self.w.column(("left", "src"), 0, n)
        assert np.array_equal(got["left"], self.left) and np.array_equal(got["src"], self.src)
        if n:
            ids = np.arange(n, dtype=np.int64)[::-1]
            assert np.array_equal(self.w.get("left", ids), self.left[::-1])
        blocks = list(self.w.blocks(3))
        assert [a for a, _ in blocks] == list(range(0, n, 3))
        if blocks:
            assert np.array_equal(np.concatenate([c["left"] for _, c in blocks]), self.left)

    @invariant()
    def pending_old_ids_are_in_memory(self) -> None:
        old = self.w.old_ids()
        assert (old < self.w.base).all()


TestWindowMachine = WindowMachine.TestCase
TestWindowMachine.settings = __import__("hypothesis").settings(max_examples=scaled_examples(60),
                                                                stateful_step_count=40, deadline=None)


def test_finish_writes_everything_and_memory_stays_bounded() -> None:
    store = ColumnStore()
    w = OccurrenceWindow({"left": np.int32}, store=store, window=100)
    rng = np.random.default_rng(1)
    model = np.zeros(0, np.int64)
    peak = 0
    for _ in range(50):  # a stream: each step 80 new ids, ~1% stay pending for long
        lo = w.n
        w.grow(lo + 80)
        vals = (rng.random(80) < 0.01).astype(np.int64)
        s = w.slots(np.arange(lo, lo + 80, dtype=np.int64))
        w.cols["left"][s] = vals
        model = np.concatenate([model, vals])
        w.evict(_pending)
        w._check()
        peak = max(peak, w.slots_used)
    assert peak <= 2 * 100 + 80 + int(model.sum())  # the window and the pending ids, not every id
    w.finish()
    w._check()
    assert store.rows == w.n == 4000 and np.array_equal(store.read(0, 4000)["left"], model)


def test_a_mostly_pending_chunk_stays_in_memory_until_it_settles() -> None:
    w = OccurrenceWindow({"left": np.int32}, store=ColumnStore(), window=10)
    w.grow(50)
    s = w.slots(np.arange(50, dtype=np.int64))
    w.cols["left"][s] = 1  # an offline packer: all pending
    w.evict(_pending)
    assert w.base == 0  # nothing written
    w.cols["left"][s] = 0  # all placed
    w.grow(61)
    w.evict(_pending)
    assert w.base >= 30 and w.k == 0
    w._check()


def test_without_a_store_the_slot_is_the_id() -> None:
    w = OccurrenceWindow({"left": np.int32}, reserve=8)
    w.grow(5)
    ids = np.array([4, 0, 2], np.int64)
    assert w.slots(ids).tolist() == [4, 0, 2] and w.slots(np.array([7, -1])).tolist() == [-1, -1]
    w.evict(_pending)
    w.finish()
    assert w.base == 0 and w.cap >= 8
    w._check()


def _reshapes(w: OccurrenceWindow) -> list[int]:
    seen: list[int] = []
    reshape = w._reshape

    def spy(off: int, cap: int) -> None:
        seen.append(cap)
        reshape(off, cap)

    w._reshape = spy  # type: ignore[method-assign]
    return seen


def test_a_window_that_keeps_every_id_pending_grows_to_the_ids_expected_at_once() -> None:
    # an offline packer arrives its whole corpus before any of it settles: one allocation past three chunks,
    # not one per chunk (each a copy of everything held, and for a moment twice the memory)
    w = OccurrenceWindow({"left": np.int32}, store=ColumnStore(), window=4, reserve=100)
    caps = _reshapes(w)
    for top in range(5, 101, 5):
        w.grow(top)
        s = w.slots(np.arange(top - 5, top))
        w.cols["left"][s] = 1
        w.evict(_pending)
    assert w.base == 0 and caps == [12, 100] and w.cap == 100
    w._check()


def test_a_settling_window_still_grows_a_chunk_at_a_time() -> None:
    w = OccurrenceWindow({"left": np.int32}, store=ColumnStore(), window=4, reserve=10_000)
    caps = _reshapes(w)
    for top in range(5, 101, 5):
        w.grow(top)
        w.evict(_pending)  # every record settled (left 0): chunks go to the store
    assert w.base > 0 and max(caps) < 100
    w._check()
