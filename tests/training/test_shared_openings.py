"""Many documents that open with the same tokens: each span is still named by its own document.

More than ``MAX_CANDIDATES`` documents share an opening shorter than, equal
to, longer than the index's ``k`` and longer than ``stride + k`` (so the
anchors inside it are shared too). The index must find the document that
holds a run longest (a brute-force search says which) or flag the run
ambiguous when several hold it; a correct run reconciles and planted
skips and repeats are still named.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory.corpus.documents import TokenDocuments
from packing_theory.testing import scaled_examples
from packing_theory.training import Schedule, reconcile
from packing_theory.training.format import FLAG_AMBIGUOUS
from packing_theory.training.index import MAX_CANDIDATES, DocumentIndex
from tests.training.simulate import replay_rows, run_ledger, step_batches

K, STRIDE = 4, 4  # the index's k and stride in run_ledger
OPENINGS = [K - 1, K, K + 2, STRIDE + K + 5]  # < k, = k, > k, and past an anchor


def shared_opening_docs(n: int, opening: int, seed: int, high: int = 26) -> TokenDocuments:
    """``n`` documents that all begin with the same ``opening`` tokens (BOS 0 first), then their own."""
    rng = np.random.default_rng(seed)
    head = [0, *rng.integers(1, 50, size=opening - 1).tolist()]
    return TokenDocuments.from_lists(
        [head + rng.integers(1, 5000, size=int(m)).tolist() for m in rng.integers(1, high, size=n)])


def longest_holders(docs: TokenDocuments, seg: np.ndarray) -> tuple[int, set[tuple[int, int]]]:
    """Brute force: the longest run of ``seg``'s leading tokens held, and every ``(doc, start)``."""
    best, where = 0, set[tuple[int, int]]()
    for d in range(len(docs)):
        t = docs[d]
        for s in range(t.size):
            m = 0
            while m < seg.size and s + m < t.size and t[s + m] == seg[m]:
                m += 1
            if m > best:
                best, where = m, set()
            if m == best and m:
                where.add((d, s))
    return best, where


@given(st.sampled_from(OPENINGS), st.integers(MAX_CANDIDATES + 1, 2 * MAX_CANDIDATES), st.integers(0, 10**6),
       st.data())
@settings(max_examples=scaled_examples(40), deadline=None)
def test_a_run_is_named_by_the_document_holding_it_longest(opening: int, n: int, seed: int,
                                                           data: Any) -> None:
    docs = shared_opening_docs(n, opening, seed)
    d = data.draw(st.integers(0, n - 1))
    size = int(docs.lengths()[d])
    if data.draw(st.booleans()) or size < STRIDE + K:  # a document start, or an anchored run
        start = 0
        length = data.draw(st.integers(1, size))
    else:
        start = data.draw(st.integers(1, size - (STRIDE + K - 1)))
        length = data.draw(st.integers(STRIDE + K - 1, size - start))
    seg = docs[d][start : start + length]
    ix = DocumentIndex(docs, k=K, stride=STRIDE)  # no hints: the lookup alone decides
    doc, got_start, got_length, flags = ix.match(seg)[0]
    ix._check()
    best, where = longest_holders(docs, seg)
    assert got_length == best
    assert (doc, got_start) in where
    assert bool(flags & FLAG_AMBIGUOUS) == (len(where) > 1)
    if len(where) == 1:
        assert (doc, got_start) == (d, start) or best < length


def test_a_large_group_is_searched_in_content_order() -> None:
    docs = shared_opening_docs(3 * MAX_CANDIDATES, STRIDE + K + 5, seed=7)
    ix = DocumentIndex(docs, k=K, stride=STRIDE)
    last = len(docs) - 1  # beyond the first MAX_CANDIDATES of its group
    assert ix.match(docs[last]) == [(last, 0, int(docs.lengths()[last]), 0)]
    assert ix._ordered, "the group of documents sharing the opening was put in content order"
    ix._check()
    lo, order = next(iter(ix._ordered.items()))
    ix._ordered[lo] = order[::-1].copy()  # a corrupted order is caught
    with pytest.raises(AssertionError):
        ix._check()


def _run(docs: TokenDocuments, policy: str, opts: dict[str, Any], source: Any = None) -> Any:
    R = 32
    rows = replay_rows(policy, docs, R, **opts)
    sched = Schedule(rows_per_step=4)
    steps = range(len(rows) // 4)
    buf, _ = run_ledger(docs, step_batches(rows, docs, R, sched, 0, steps, source=source), check=True)
    return reconcile(buf, docs, policy, capacity=R, options=opts, schedule=sched)


POLICIES = [("trl-bfd", {}), ("continue", {"min_buffer": 8, "refill": 4})]


LONG = STRIDE + K + 5
CORRECT_RUNS = [(p, o, n) for p, o in POLICIES for n in OPENINGS]


@pytest.mark.parametrize(("policy", "opts", "opening"), CORRECT_RUNS)
def test_a_correct_run_over_shared_openings_reconciles(policy: str, opts: dict[str, Any],
                                                       opening: int) -> None:
    docs = shared_opening_docs(3 * MAX_CANDIDATES, opening, seed=opening)
    res = _run(docs, policy, opts)
    assert res.reconciled and res.divergence is None, res.headline()
    assert res.differing == 0


@pytest.mark.parametrize("opening", [K, STRIDE + K + 5])
@pytest.mark.parametrize(("policy", "opts"), POLICIES)
@pytest.mark.parametrize(("fault", "cls"), [(1, "skipped"), (-1, "duplicated")])
def test_a_skipped_or_repeated_batch_over_shared_openings_is_named(opening: int, policy: str,
                                                                   opts: dict[str, Any], fault: int,
                                                                   cls: str) -> None:
    docs = shared_opening_docs(3 * MAX_CANDIDATES, opening, seed=opening)
    res = _run(docs, policy, opts, source=lambda s: s + fault if s >= 3 else s)
    d = res.divergence
    assert d is not None and (d.cls, d.step, d.rank) == (cls, 3, 0), res.headline()
    assert res.exit_code == 1
