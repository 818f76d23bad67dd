"""Which corpus document a run of token ids comes from: a prefix and anchor index over the corpus.

A batch built by another library carries token ids and, at best, sequence
boundaries; the ledger needs the raw corpus index of every document span in
it and the span's offset in its document. :class:`DocumentIndex` answers
that by content:

* **prefixes**: a 64-bit hash of the first ``k`` tokens of every document
  (of the whole document when it is shorter), sorted (``searchsorted``
  lookups); a segment that starts at a document start is found in
  O(k^2 + log n) and verified token by token. Documents that share their
  first ``k`` tokens share a hash: up to :data:`MAX_CANDIDATES` of them are
  each verified; a larger group is sorted by content on first use (once,
  O(B log B) comparisons and O(its tokens) transient bytes for a group of
  ``B`` documents; 8 bytes per document kept) and binary-searched with the
  whole segment (O(n log B) for a segment of ``n`` tokens), so the document
  that holds the segment longest is found whatever the shared opening's length;
* **anchors**: the hash of the ``k`` tokens at every ``stride``-th position
  of every document; a segment that starts mid-document (the continuation of
  a split or cropped document) and holds at least ``stride + k - 1`` tokens
  has an anchor among its first ``stride`` positions, which gives the
  document and the offset. An anchor ``k``-gram held at more than
  :data:`MAX_CANDIDATES` positions (a shared opening longer than
  ``stride + k``) is resolved by extending every one of its positions over
  the segment, vectorised (O(B + the tokens the longest ones share with it)
  for ``B`` positions);
* **hints**: the documents whose last observed span ended recently (a
  continuation usually follows them, at the next row's start) are tried
  first;
* **a search**: a shorter mid-document run (or one every candidate
  diverged from before ``stride + k - 1`` tokens) is found by scanning the
  corpus's token array for its first token and extending every occurrence
  (O(corpus tokens), only for such runs).

Hints and document starts are tried first; the anchors are consulted unless
a candidate holds the whole segment or stops at its document's end (a
candidate that diverges from the segment inside its document is no answer
while another document may hold more of it).

Within a segment the matcher takes, at each position, the longest match
(ties: a document start, then a hint, then the lowest index; never a
shorter one because a group of candidates was cut), so one segment
holding several documents (a row cut across document boundaries) becomes
several spans. A position no document holds starts a :data:`FOREIGN` run.
When every document begins with the same id (the BOS), a lone BOS followed
by a continuation is one span flagged :data:`FLAG_BOS_INSERTED` (nanochat's
``requeue-bos``, ``segment-first``). Identical documents (or a span that
several documents hold) are resolved to one of them and flagged
:data:`FLAG_AMBIGUOUS`; :mod:`~packing_theory.training.reconcile` compares
such spans by content.

Memory: 16 bytes per document and per anchor (``16 / stride`` bytes per
corpus token) besides the corpus itself.

>>> from packing_theory.corpus.documents import TokenDocuments
>>> docs = TokenDocuments.from_lists([[0, 11, 12, 13, 14], [0, 21, 22], [0, 31, 32, 33]])
>>> ix = DocumentIndex(docs, k=2, stride=2)
>>> ix.match([0, 21, 22, 0, 31])            # two documents in one segment, the second cut
[(1, 0, 3, 0), (2, 0, 2, 0)]
>>> ix.match([13, 14])                      # a continuation: document 0 from offset 3
[(0, 3, 2, 0)]
>>> ix.match([0, 12, 13]), ix.bos_id        # a BOS inserted before a continuation
([(0, 2, 3, 1)], 0)
>>> ix.match([99, 98, 0, 21])               # tokens of no document, then document 1
[(-1, 0, 2, 0), (1, 0, 2, 0)]
"""

from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..corpus.documents import DocumentStore, TokenDocuments, lengths_fingerprint
from ..errors import InputError, InputTypeError
from .format import FLAG_AMBIGUOUS, FLAG_BOS_INSERTED, FOREIGN

__all__ = ["HINTS", "MAX_CANDIDATES", "DocumentIndex", "Span", "as_token_documents", "kgram_hashes"]

Int64Array = npt.NDArray[np.int64]
Span = tuple[int, int, int, int]
"""``(doc, start, length, flags)`` of one matched span."""

HINTS = 256
"""Recently ended documents remembered as continuation hints."""
MAX_CANDIDATES = 64
"""Candidates verified one by one per lookup; a larger group of documents sharing a hashed prefix is
binary-searched in content order, a larger anchor group extended vectorised (see the module doc)."""

_P = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def kgram_hashes(tokens: Int64Array, starts: Int64Array, k: int) -> npt.NDArray[np.uint64]:
    """The 64-bit hash of ``tokens[s : s + k]`` for every ``s`` in ``starts``, vectorised. O(len(starts) k).

    >>> t = np.array([5, 6, 7, 5, 6, 7])
    >>> h = kgram_hashes(t, np.array([0, 3, 1]), 2)
    >>> bool(h[0] == h[1]), bool(h[0] == h[2])
    (True, False)
    """
    h = np.zeros(starts.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for q in range(k):
            h = h * _P + tokens[starts + q].astype(np.uint64)
        h ^= h >> np.uint64(29)
        h *= _MIX
    return h


def as_token_documents(documents: DocumentStore | Sequence[Sequence[int]]) -> TokenDocuments:
    """A corpus as :class:`~packing_theory.corpus.documents.TokenDocuments` (no copy when it is one)."""
    if isinstance(documents, TokenDocuments):
        return documents
    tokens = getattr(documents, "tokens", None)
    offsets = getattr(documents, "offsets", None)
    if isinstance(tokens, np.ndarray) and isinstance(offsets, np.ndarray):
        return TokenDocuments(tokens, offsets)
    if isinstance(documents, (str, bytes)) or not hasattr(documents, "__len__"):
        raise InputTypeError(f"documents must be a TokenDocuments or a sequence of token lists, got "
                             f"{type(documents).__name__}")
    return TokenDocuments.from_lists(documents[i] for i in range(len(documents)))


def _ordered_bytes(tokens: Int64Array) -> bytes:
    """Bytes whose order is the order of the token sequences (big-endian, sign bit flipped). O(len)."""
    flipped = tokens.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    return flipped.astype(">u8").tobytes()


def _extend(tokens: Int64Array, starts: Int64Array, ends: Int64Array, seg: Int64Array) -> Int64Array:
    """How many leading tokens of ``seg`` equal ``tokens[s : e]`` for every ``(s, e)``, vectorised.

    Blocks of doubling width are compared only for the starts still equal, so
    the work is O(len(starts) + the tokens the longest ones share with ``seg``).

    >>> t = np.array([1, 2, 3, 1, 2, 4, 1, 2, 3, 5])
    >>> _extend(t, np.array([0, 3, 6]), np.array([3, 6, 10]), np.array([1, 2, 3, 5])).tolist()
    [3, 2, 4]
    """
    got = np.zeros(starts.size, dtype=np.int64)
    alive = np.arange(starts.size)
    last = tokens.size - 1
    q, width = 0, 8
    while alive.size and q < seg.size:
        w = min(width, int(seg.size) - q)
        pos = starts[alive, None] + q + np.arange(w)
        eq = (pos < ends[alive, None]) & (tokens[np.minimum(pos, last)] == seg[q : q + w])
        whole = eq.all(axis=1)
        got[alive] += np.where(whole, w, np.argmin(eq, axis=1))
        alive = alive[whole]
        q, width = q + w, min(2 * width, 1024)
    return got


class DocumentIndex:
    """Find the documents and offsets of token runs (see the module doc).

    Args:
        documents: the corpus as the trainer saw it (BOS-inclusive token ids),
            a :class:`~packing_theory.corpus.documents.TokenDocuments` or a
            sequence of token lists.
        k: the hashed prefix and anchor length (default 8).
        stride: the distance between anchors (default 16; 1 indexes every position).

    Building is O(corpus tokens / stride * k) numpy work.
    """

    def __init__(self, documents: DocumentStore | Sequence[Sequence[int]], *, k: int = 8,
                 stride: int = 16) -> None:
        self.k = check_int("k", k, 1)
        self.stride = check_int("stride", stride, 1)
        self.documents = as_token_documents(documents)
        self.tokens: Int64Array = self.documents.tokens
        self.offsets: Int64Array = self.documents.offsets
        self.lengths: Int64Array = np.diff(self.offsets)
        self.fingerprint: dict[str, Any] = lengths_fingerprint(self.lengths)
        firsts = self.tokens[self.offsets[:-1]]
        self.bos_id: int | None = int(firsts[0]) if firsts.size and (firsts == firsts[0]).all() else None
        self._prefix_keys, self._prefix_docs = self._hashed(np.flatnonzero(self.lengths >= self.k), self.k)
        self._short: dict[int, tuple[npt.NDArray[np.uint64], Int64Array]] = {}
        self._whole = {m: self._hashed(np.flatnonzero(self.lengths == m), m) for m in range(1, self.k)}
        self._anchor_keys, self._anchor_pos = self._anchors()
        self._ordered: dict[int, Int64Array] = {}  # a large prefix group's start -> its documents by content
        self.hints: OrderedDict[int, int] = OrderedDict()
        self.uncertain: set[int] = set()  # hinted documents whose last span several documents held

    def __len__(self) -> int:
        return int(self.lengths.size)

    def _anchors(self) -> tuple[npt.NDArray[np.uint64], Int64Array]:
        """Sorted hashes of the ``k``-grams at every ``stride``-th offset ``>= 1`` of every document."""
        per_doc = np.maximum((self.lengths - self.k) // self.stride, 0)  # offsets stride, 2*stride, ...
        n = int(per_doc.sum())
        if n == 0:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64)
        doc = np.repeat(np.arange(self.lengths.size, dtype=np.int64), per_doc)
        first = np.cumsum(per_doc) - per_doc
        rank = np.arange(n, dtype=np.int64) - np.repeat(first, per_doc)
        pos = self.offsets[doc] + (rank + 1) * self.stride
        keys = kgram_hashes(self.tokens, pos, self.k)
        order = np.argsort(keys, kind="stable")
        return keys[order], pos[order]

    # ------------------------------------------------------------------ verification

    def common(self, doc: int, start: int, seg: Int64Array) -> int:
        """How many leading tokens of ``seg`` equal document ``doc`` from offset ``start``. O(len(seg))."""
        if start < 0 or start >= int(self.lengths[doc]):
            return 0
        n = min(seg.size, int(self.lengths[doc]) - start)
        base = int(self.offsets[doc]) + start
        eq = self.tokens[base : base + n] == seg[:n]
        return n if bool(eq.all()) else int(np.argmin(eq))

    def doc_of(self, flat: Int64Array) -> Int64Array:
        """The document holding each flat corpus position. O(log n) each."""
        out: Int64Array = np.searchsorted(self.offsets, flat, side="right") - 1
        return out

    def _lookup(self, keys: npt.NDArray[np.uint64], vals: Int64Array, key: np.uint64) -> Int64Array:
        """The first :data:`MAX_CANDIDATES` values under ``key`` (for groups whose members all hold the key's
        whole run, so that any two tie and the cut loses no longer match)."""
        lo, hi = self._group(keys, key)
        return vals[lo : min(hi, lo + MAX_CANDIDATES)]

    @staticmethod
    def _group(keys: npt.NDArray[np.uint64], key: np.uint64) -> tuple[int, int]:
        return int(np.searchsorted(keys, key, side="left")), int(np.searchsorted(keys, key, side="right"))

    def _content(self, doc: int, n: int | None = None) -> bytes:
        """Document ``doc``'s first ``n`` tokens (all: ``None``) as bytes that sort as the token sequence."""
        a, b = int(self.offsets[doc]), int(self.offsets[doc + 1])
        return _ordered_bytes(self.tokens[a : b if n is None else min(b, a + n)])

    def _by_content(self, lo: int, hi: int) -> Int64Array:
        """The documents of prefix group ``[lo, hi)`` in content order, sorted on first use and kept."""
        got = self._ordered.get(lo)
        if got is None:
            docs = self._prefix_docs[lo:hi].tolist()
            got = np.asarray(sorted(docs, key=self._content), dtype=np.int64)
            self._ordered[lo] = got
        return got

    def _prefix_starts(self, key: np.uint64, seg: Int64Array) -> Int64Array:
        """Documents whose start holds ``seg`` longest among those whose first ``k`` tokens hash to ``key``.

        A group of at most :data:`MAX_CANDIDATES` is returned whole (each is
        verified by the caller). A larger one is binary-searched in content
        order: the documents holding all of ``seg`` are one run of it; when
        none does, the longest holders neighbour ``seg``'s place and those
        sharing that many tokens are again one run. The lowest
        :data:`MAX_CANDIDATES` indices of the run come back: all tie, so two
        or more mean the span is ambiguous. O(n log B).
        """
        lo, hi = self._group(self._prefix_keys, key)
        if hi - lo <= MAX_CANDIDATES:
            return self._prefix_docs[lo:hi]
        order = self._by_content(lo, hi)
        docs = order.tolist()
        n = int(seg.size)

        def run(m: int) -> tuple[int, int]:
            want = _ordered_bytes(seg[:m])
            return (bisect.bisect_left(docs, want, key=lambda d: self._content(d, m)),
                    bisect.bisect_right(docs, want, key=lambda d: self._content(d, m)))

        i, j = run(n)
        if j == i:
            m = max((self.common(docs[x], 0, seg) for x in (i - 1, i) if 0 <= x < len(docs)), default=0)
            if m == 0:
                return order[:0]
            i, j = run(m)
        return np.sort(order[i:j])[:MAX_CANDIDATES]

    def _anchor_starts(self, lo: int, hi: int, j: int, seg: Int64Array) -> list[tuple[int, int]]:
        """``(doc, start)`` of the anchor positions ``[lo, hi)`` (as ``seg[j]``) holding ``seg`` longest.

        A group of at most :data:`MAX_CANDIDATES` comes back whole (verified by
        the caller); a larger one is extended over ``seg`` vectorised and only
        the longest (lowest indices first, at most :data:`MAX_CANDIDATES`)
        come back. O(B + the tokens the longest ones share with ``seg``).
        """
        pos = self._anchor_pos[lo:hi]
        doc = self.doc_of(pos)
        start = pos - j
        keep = start >= self.offsets[doc]
        pos, doc, start = pos[keep], doc[keep], start[keep]
        if pos.size > MAX_CANDIDATES:
            got = _extend(self.tokens, start, self.offsets[doc + 1], seg)
            best = got == got.max()
            doc, start = doc[best], start[best]
            first = np.lexsort((start, doc))[:MAX_CANDIDATES]
            doc, start = doc[first], start[first]
        return list(zip(doc.tolist(), (start - self.offsets[doc]).tolist(), strict=True))

    def _hashed(self, docs: Int64Array, m: int) -> tuple[npt.NDArray[np.uint64], Int64Array]:
        """Sorted hashes of the first ``m`` tokens of ``docs``, and the documents in that order."""
        keys = kgram_hashes(self.tokens, self.offsets[docs], m)
        order = np.argsort(keys, kind="stable")
        return keys[order], docs[order]

    def _short_table(self, m: int) -> tuple[npt.NDArray[np.uint64], Int64Array]:
        """Hashes of every document's first ``m < k`` tokens, built on first use and kept."""
        got = self._short.get(m)
        if got is None:
            got = self._hashed(np.flatnonzero(self.lengths >= m), m)
            self._short[m] = got
        return got

    # ------------------------------------------------------------------ candidates

    def _candidates(self, seg: Int64Array) -> list[tuple[int, int, int, int]]:
        """``(match length, preference, doc, start)`` of the candidates for ``seg`` (unsorted)."""
        out: list[tuple[int, int, int, int]] = []
        seen: set[tuple[int, int]] = set()

        def add(doc: int, start: int, pref: int) -> None:
            if (doc, start) in seen:
                return
            seen.add((doc, start))
            m = self.common(doc, start, seg)
            if m:
                out.append((m, pref, doc, start))

        for rank, (doc, end) in enumerate(reversed(self.hints.items())):
            if rank >= 16:
                break
            add(doc, end, 1)
            add(doc, end - 1, 1)
        k, n = self.k, int(seg.size)
        zero = np.zeros(1, np.int64)
        if n >= k:
            for doc in self._prefix_starts(kgram_hashes(seg, zero, k)[0], seg).tolist():
                add(doc, 0, 0)
        else:
            keys, docs = self._short_table(n)
            for doc in self._lookup(keys, docs, kgram_hashes(seg, zero, n)[0]).tolist():
                add(doc, 0, 0)
        for m in range(1, min(k, n + 1)):  # a whole document shorter than k at the start of seg
            keys, docs = self._whole[m]
            if keys.size:
                for doc in self._lookup(keys, docs, kgram_hashes(seg, zero, m)[0]).tolist():
                    add(doc, 0, 0)
        if self._settled(out, n):
            return out
        for j in range(min(self.stride, n - k + 1)):  # every anchor that may lie in seg's first stride tokens
            lo, hi = self._group(self._anchor_keys, kgram_hashes(seg, np.array([j], np.int64), k)[0])
            for doc, start in self._anchor_starts(lo, hi, j, seg):
                add(doc, start, 2)
        if self._settled(out, n) or max((m for m, *_ in out), default=0) >= self.stride + k - 1:
            return out  # a longer run would hold an anchor: the anchors found it
        for doc, start in self._search(seg):  # a short mid-document run, or one the candidates diverged from
            add(doc, start, 3)
        return out

    def _settled(self, cands: list[tuple[int, int, int, int]], n: int) -> bool:
        """Whether a candidate holds the whole segment, or holds at least ``k`` tokens and stops at its
        document's end (not at a mismatch; a shorter whole document may be the start of a longer match)."""
        return any(m == n or (m >= min(n, self.k) and start + m == int(self.lengths[doc]))
                   for m, _, doc, start in cands)

    def _search(self, seg: Int64Array) -> list[tuple[int, int]]:
        """Where in the corpus ``seg`` is held longest inside a document (lowest positions first, at most
        :data:`MAX_CANDIDATES`).

        A scan of the corpus for ``seg[0]``, then every occurrence extended
        over ``seg`` (:func:`_extend`). O(corpus + occurrences + the tokens the
        longest ones share with ``seg``).
        """
        pos = np.flatnonzero(self.tokens == seg[0])
        if pos.size == 0:
            return []
        length = _extend(self.tokens, pos, self.offsets[self.doc_of(pos) + 1], seg)
        best = pos[length == length.max()][:MAX_CANDIDATES]
        doc = self.doc_of(best)
        return list(zip(doc.tolist(), (best - self.offsets[doc]).tolist(), strict=True))

    @staticmethod
    def _best(cands: list[tuple[int, int, int, int]]) -> tuple[int, int, int, bool] | None:
        """``(doc, start, length, ambiguous)`` of the longest candidate (ties: preference, then index)."""
        if not cands:
            return None
        cands.sort(key=lambda c: (-c[0], c[1], c[2], c[3]))
        m, _, doc, start = cands[0]
        ambiguous = len(cands) > 1 and cands[1][0] == m
        return doc, start, m, ambiguous

    # ------------------------------------------------------------------ matching

    def match_at(self, seg: Int64Array) -> Span | None:
        """The span matching ``seg`` from its first token (``None``: no document holds that token there)."""
        best = self._best(self._candidates(seg))
        if (self.bos_id is not None and seg.size > 1 and int(seg[0]) == self.bos_id
                and (best is None or (best[2] == 1 and best[1] == 0))):
            rest = self._best(self._candidates(seg[1:]))
            if rest is not None and rest[1] > 0:
                d2, s2, m2, amb2 = rest
                return d2, s2, m2 + 1, FLAG_BOS_INSERTED | (FLAG_AMBIGUOUS if amb2 else 0)
        if best is None:
            return None
        doc, start, m, ambiguous = best
        # the continuation of a span that was itself ambiguous is as uncertain as it was
        ambiguous = ambiguous or (doc in self.uncertain and self.hints.get(doc) in (start, start + 1))
        return doc, start, m, FLAG_AMBIGUOUS if ambiguous else 0

    def match(self, tokens: Sequence[int] | Int64Array) -> list[Span]:
        """Split a segment into document spans ``(doc, start, length, flags)``, in order.

        Every token of ``tokens`` is in exactly one span; runs that no document
        holds are ``(FOREIGN, 0, length, 0)``. Updates the continuation hints.
        O(len(tokens) * k) plus the lookups (see the module doc).
        """
        seg = np.asarray(tokens, dtype=np.int64)
        if seg.ndim != 1:
            raise InputError(f"tokens must be 1-D, got shape {seg.shape}")
        out: list[Span] = []
        j = 0
        foreign = 0
        while j < seg.size:
            got = self.match_at(seg[j:])
            if got is None:
                foreign += 1
                j += 1
                continue
            if foreign:
                out.append((FOREIGN, 0, foreign, 0))
                foreign = 0
            out.append(got)
            self.note(got[0], got[1] + got[2] - (1 if got[3] & FLAG_BOS_INSERTED else 0),
                      ambiguous=bool(got[3] & FLAG_AMBIGUOUS))
            j += got[2]
        if foreign:
            out.append((FOREIGN, 0, foreign, 0))
        return out

    def note(self, doc: int, end: int, *, ambiguous: bool = False) -> None:
        """Remember that document ``doc``'s last observed span ended at offset ``end`` (a hint). O(1).

        ``ambiguous``: several documents held that span, so a continuation
        found through this hint is flagged ambiguous too.
        """
        if doc < 0:
            return
        self.hints[doc] = min(end, int(self.lengths[doc]))  # a finished one: its last token may repeat
        self.hints.move_to_end(doc)
        if ambiguous:
            self.uncertain.add(doc)
        else:
            self.uncertain.discard(doc)
        while len(self.hints) > HINTS:
            gone, _ = self.hints.popitem(last=False)
            self.uncertain.discard(gone)

    def whole_documents(self, tokens: Int64Array, starts: Int64Array, lengths: Int64Array
                        ) -> tuple[Int64Array, npt.NDArray[np.bool_]]:
        """Vectorised fast path: for segments ``tokens[s : s + n]``, the document each one *is the start of*.

        Returns ``(doc, ok)``: ``ok[i]`` when segment ``i`` (at least ``k``
        tokens) equals the first ``n`` tokens of exactly one indexed prefix
        candidate ``doc[i]``; the others need :meth:`match`. O(sum of lengths).
        """
        doc = np.full(starts.size, -1, dtype=np.int64)
        ok = np.zeros(starts.size, dtype=bool)
        cand = np.flatnonzero(lengths >= self.k)
        if cand.size == 0 or self._prefix_keys.size == 0:
            return doc, ok
        keys = kgram_hashes(tokens, starts[cand], self.k)
        lo = np.searchsorted(self._prefix_keys, keys, side="left")
        hi = np.searchsorted(self._prefix_keys, keys, side="right")
        unique = (hi - lo) == 1
        cand, lo = cand[unique], lo[unique]
        d = self._prefix_docs[lo]
        fits = self.lengths[d] >= lengths[cand]
        cand, d = cand[fits], d[fits]
        if cand.size == 0:
            return doc, ok
        n = lengths[cand]
        run_start = np.repeat(starts[cand] - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        doc_pos = np.repeat(self.offsets[d] - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        ne = (tokens[run_start] != self.tokens[doc_pos]).astype(np.int64)
        bad = np.add.reduceat(ne, np.cumsum(n) - n)
        good = bad == 0
        doc[cand[good]] = d[good]
        ok[cand[good]] = True
        return doc, ok

    def _check(self) -> None:
        """Assert the index's invariants: sorted keys, prefix docs long enough, content-ordered groups,
        hints inside documents."""
        for keys in (self._prefix_keys, self._anchor_keys):
            assert bool((keys[1:] >= keys[:-1]).all())
        assert (self.lengths[self._prefix_docs] >= self.k).all()
        assert self._prefix_docs.size == int((self.lengths >= self.k).sum())
        for lo, order in self._ordered.items():  # a content-ordered group: its members, in content order
            hi = int(np.searchsorted(self._prefix_keys, self._prefix_keys[lo], side="right"))
            assert np.array_equal(np.sort(order), np.sort(self._prefix_docs[lo:hi]))
            content = [self._content(d) for d in order.tolist()]
            assert all(a <= b for a, b in itertools.pairwise(content))
        for doc, end in self.hints.items():
            assert 0 <= end <= int(self.lengths[doc]), (doc, end)
        assert len(self.hints) <= HINTS
        assert self.uncertain <= self.hints.keys()
