"""The document index against a brute-force search: every segment split into maximal document runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing_theory.corpus.documents import TokenDocuments
from packing_theory.errors import InputError, InputTypeError
from packing_theory.testing import scaled_examples
from packing_theory.training.format import FLAG_AMBIGUOUS, FLAG_BOS_INSERTED, FOREIGN
from packing_theory.training.index import DocumentIndex, kgram_hashes


@st.composite
def corpus_and_pieces(draw: Any) -> tuple[TokenDocuments, list[tuple[int, int, int, bool]], list[int]]:
    """A corpus of BOS-0 documents with distinct tokens, and pieces cut from it (some with a BOS inserted)."""
    n = draw(st.integers(1, 12))
    lengths = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    docs = [[0, *[(d + 1) * 1000 + j for j in range(1, m)]] for d, m in enumerate(lengths)]
    pieces = []
    for _ in range(draw(st.integers(1, 6))):
        d = draw(st.integers(0, n - 1))
        s = draw(st.integers(0, lengths[d] - 1))
        m = draw(st.integers(1, lengths[d] - s))
        bos = s > 1 and draw(st.booleans())  # BOS + offset 1 onwards *is* the document's start
        if m >= 2 or bos:  # a lone token may be another document's (a BOS): left to the ambiguity test
            pieces.append((d, s, m, bos))
    foreign = draw(st.lists(st.integers(10**6, 10**6 + 5), max_size=3))
    return TokenDocuments.from_lists(docs), pieces, foreign


def brute_common(docs: TokenDocuments, doc: int, start: int, seg: np.ndarray) -> int:
    d = docs[doc]
    m = 0
    while m < seg.size and start + m < d.size and d[start + m] == seg[m]:
        m += 1
    return m


@given(corpus_and_pieces(), st.integers(1, 6), st.integers(1, 5))
@settings(max_examples=scaled_examples(200), deadline=None)
@example(case=(TokenDocuments.from_lists([[0, 1001, 1002], [0]]), [(0, 0, 2, False), (0, 0, 2, False)], []),
         k=3, stride=1)  # a one-token document's candidate once stopped the search for the longer match
def test_segments_split_into_their_pieces(case: Any, k: int, stride: int) -> None:
    docs, pieces, foreign = case
    ix = DocumentIndex(docs, k=k, stride=stride)
    seg = []
    for d, s, m, bos in pieces:
        seg += ([0] if bos else []) + docs[d][s : s + m].tolist()
    seg += foreign
    got = ix.match(seg)
    ix._check()
    # the spans tile the segment and each holds its document's tokens there, as long as they agree
    pos = 0
    arr = np.array(seg, dtype=np.int64)
    for doc, start, length, flags in got:
        part = arr[pos : pos + length]
        if doc == FOREIGN:
            assert not np.isin(part, docs.tokens).any()
        elif flags & FLAG_BOS_INSERTED:
            assert part[0] == docs[doc][0] and brute_common(docs, doc, start, part[1:]) == length - 1
        else:
            assert brute_common(docs, doc, start, part) == length
            after = arr[pos:]
            assert brute_common(docs, doc, start, after) == length  # maximal: the next token differs
        pos += length
    assert pos == len(seg)
    # distinct tokens: the pieces come back exactly (adjacent continuing pieces join)
    want: list[tuple[int, int, int, int]] = []
    for d, s, m, bos in pieces:
        if want and not bos and want[-1][0] == d and want[-1][1] + want[-1][2] - (want[-1][3] & 1) == s:
            want[-1] = (d, want[-1][1], want[-1][2] + m, want[-1][3])
        else:
            want.append((d, s, m + bos, FLAG_BOS_INSERTED if bos else 0))
    if foreign:
        want.append((FOREIGN, 0, len(foreign), 0))
    assert [(d, s, m, f & FLAG_BOS_INSERTED) for d, s, m, f in got] == want


def test_identical_documents_are_flagged_ambiguous() -> None:
    docs = TokenDocuments.from_lists([[0, 5, 6, 7], [0, 9], [0, 5, 6, 7]])
    ix = DocumentIndex(docs, k=2)
    assert ix.match([0, 5, 6, 7]) == [(0, 0, 4, FLAG_AMBIGUOUS)]
    assert ix.match([0, 9]) == [(1, 0, 2, 0)]
    # the fast path leaves duplicates to match()
    doc, ok = ix.whole_documents(np.array([0, 5, 6, 7, 0, 9]), np.array([0, 4]), np.array([4, 2]))
    assert ok.tolist() == [False, True] and doc[1] == 1


def test_whole_documents_fast_path_agrees_with_match() -> None:
    rng = np.random.default_rng(0)
    docs = TokenDocuments.from_lists([[0, *rng.integers(1, 10**9, size=int(m)).tolist()]
                                      for m in rng.integers(1, 40, size=50)])
    ix = DocumentIndex(docs, k=4)
    pick = rng.integers(0, 50, size=20)
    cut = [int(rng.integers(1, docs.lengths()[d] + 1)) for d in pick]
    tokens = np.concatenate([docs[d][:c] for d, c in zip(pick, cut, strict=True)])
    starts = np.r_[0, np.cumsum(cut)[:-1]]
    doc, ok = ix.whole_documents(tokens, starts, np.array(cut))
    for i in range(pick.size):
        assert ok[i] == (cut[i] >= 4)
        if ok[i]:
            assert doc[i] == pick[i] == ix.match(tokens[starts[i] : starts[i] + cut[i]])[0][0]


def test_kgram_hashes_depend_on_content_only() -> None:
    t = np.array([3, 1, 4, 1, 5, 3, 1, 4, 1, 5])
    h = kgram_hashes(t, np.arange(6), 5)
    assert h[0] == h[5] and len(set(h[:5].tolist())) == 5


def test_bad_arguments() -> None:
    with pytest.raises(InputError, match="k must be >= 1, got 0"):
        DocumentIndex([[0, 1]], k=0)
    with pytest.raises(InputTypeError, match="documents must be a TokenDocuments"):
        DocumentIndex(5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="tokens must be 1-D"):
        DocumentIndex([[0, 1]]).match([[0, 1]])
