"""Where a run stopped, and what it never trained: the two numbers that make packers comparable.

:func:`horizon_statement` says where a packer's run stopped and why —
``budget reached`` (the horizon asked), ``stream exhausted`` (a streaming
packer could no longer refill its buffer to ``B``), ``drained`` (``--drain``
emptied the buffer below ``B``, outside the theorem) or ``natural end`` (a
peer packed its whole input).

:func:`never_trained` counts, at that horizon, the documents and tokens
*offered* to the packer (every document of the corpus in every pass) that no
row holds. Each document's tokens count once, in the first part that applies:

==================  ==========================================================
part                tokens
==================  ==========================================================
never started       every token of a document that arrived but never had a
                    token emitted (still buffered, or filtered before packing)
dropped             the discarded (truncated, cropped) and filtered tokens of
                    documents that did start
still buffered      the tokens of started documents still held at the horizon
in the partial row  the tokens placed in the incomplete last row of a stream
                    that ran dry (never delivered, so never trained)
never reached       every token of a document that never arrived (the run
                    stopped before it)
==================  ==========================================================

so that ``trained + never started + dropped + still buffered + in the partial
row + never reached == offered`` exactly (:meth:`NeverTrained._check`);
*trained* counts complete rows only. The mass view used by ``compare`` —
``emitted + dropped + buffered + never reached == offered`` with every
discarded, filtered and buffered token, started or not, and the partial row
among the emitted — is :meth:`NeverTrained.mass`.

>>> from packing_theory import Packer, feed_all
>>> from packing_theory.audit import Ledger
>>> packer = Packer(capacity=8, min_buffer=2, refill=2, rows=2)
>>> (agg,) = feed_all(packer.stream([5, 3, 9, 4, 6, 2]), ledger := Ledger.for_packer(packer))
>>> nt = never_trained(ledger, [5, 3, 9, 4, 6, 2])
>>> nt.offered_tokens, nt.trained_tokens, nt.tokens, nt.never_started.documents
(29, 16, 13, 1)
>>> horizon_statement(agg, None, streaming=True).reason
'budget reached'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine.events import end_reason
from ..engine.horizon import Budget
from ..errors import InputError
from ..lengths import VALIDATE_CHUNK, exact_sum, release_pages, validate_lengths
from .ledger import Ledger
from .results import Aggregates
from .rows import RowFacts

__all__ = [
    "STOP_REASONS",
    "HorizonStatement",
    "NeverTrained",
    "Part",
    "Reached",
    "horizon_statement",
    "never_trained",
]

STOP_REASONS: tuple[str, ...] = ("budget reached", "stream exhausted", "drained", "natural end",
                                  "buffer starved")
"""The ``reason`` values of a :class:`HorizonStatement`."""


@dataclass(frozen=True, slots=True)
class HorizonStatement:
    """Where one packer's run stopped: the horizon asked, the row reached, the reason, the partial row."""

    asked: Budget | None
    stopped_at_row: int
    reason: str
    partial_row_tokens: int
    exhausted_at_row: int | None
    min_buffer: int
    selected: bool = True
    """Whether any selection was made before the stop (each places a token: a started document);
    ``False`` only when the stream ran dry before the buffer ever held ``B`` documents."""

    @property
    def never_selected(self) -> bool:
        """Whether the stream ran dry before the buffer ever held ``B`` documents, so that no selection
        was made (a corpus of fewer than ``B`` documents without ``--drain``). Stopping at row 0 is not
        enough: a corpus smaller than one row stops there after its selections.

        >>> HorizonStatement(None, 0, "stream exhausted", 903, 0, 2).never_selected
        False
        >>> HorizonStatement(None, 0, "stream exhausted", 0, 0, 2, selected=False).never_selected
        True
        """
        return self.reason == "stream exhausted" and not self.selected

    def to_dict(self) -> dict[str, Any]:
        """``{"asked", "unit", "stopped_at_row", "reason", "partial_row_tokens", "exhausted_at_row"}``."""
        return {"asked": self.asked.value if self.asked else None,
                "unit": self.asked.unit if self.asked else None,
                "stopped_at_row": self.stopped_at_row, "reason": self.reason,
                "partial_row_tokens": self.partial_row_tokens, "exhausted_at_row": self.exhausted_at_row}

    def sentence(self) -> str:
        """The stop in plain words, e.g. ``"stopped at row 1,055 because the stream ran dry"``.

        >>> HorizonStatement(None, 1055, "stream exhausted", 12, 1055, 64).sentence()
        'stopped at row 1,055 because the stream ran dry (a partial row of 12 tokens is not trained)'
        >>> HorizonStatement(Budget("rows", 9), 9, "budget reached", 0, None, 64).sentence()
        'stopped at row 9: the horizon of 9 rows was reached'
        >>> dry = HorizonStatement(None, 0, "stream exhausted", 0, 0, 1000, selected=False)  # no selection
        >>> dry.sentence()  # doctest: +ELLIPSIS
        'stopped at row 0 because the stream ran dry before the buffer held B = 1,000 documents (...)'
        >>> HorizonStatement(None, 0, "stream exhausted", 903, 0, 2).sentence()  # selections, no full row
        'stopped at row 0 because the stream ran dry (a partial row of 903 tokens is not trained)'
        """
        row = f"row {self.stopped_at_row:,}"
        partial = (f" (a partial row of {self.partial_row_tokens:,} tokens is not trained)"
                   if self.partial_row_tokens else "")
        if self.reason == "budget reached":
            asked = f"the horizon of {self.asked.describe()}" if self.asked else "the horizon"
            return f"stopped at {row}: {asked} was reached"
        if self.never_selected:
            return (f"stopped at {row} because the stream ran dry before the buffer held B = "
                    f"{self.min_buffer:,} documents (a corpus this small needs --drain, which empties the "
                    "buffer at the end of the stream, or a smaller --min-buffer)")
        if self.reason == "stream exhausted":
            return f"stopped at {row} because the stream ran dry{partial}"
        if self.reason == "buffer starved":
            return (f"stopped at {row}: every buffered document is longer than a row and bestfit-pad never "
                    "crops, so this and every further row is padding")
        if self.reason == "drained":
            at = f" at row {self.exhausted_at_row:,}" if self.exhausted_at_row is not None else ""
            return (f"ran to {row}: the stream ran dry{at} and --drain then emptied the buffer with fewer "
                    f"than B = {self.min_buffer:,} documents, outside the theorem's hypotheses")
        return f"ran to its natural end at {row} (every document it was given was packed)"


def horizon_statement(agg: Aggregates, asked: Budget | None, *, streaming: bool) -> HorizonStatement:
    """The :class:`HorizonStatement` of one replay (``streaming``: a streaming policy, else a peer)."""
    words = {"rows": "budget reached", "exhausted": "stream exhausted", "starved": "buffer starved"}
    reason = words.get(agg.stop_reason) or end_reason(agg.stop_reason, streaming=streaming)
    return HorizonStatement(asked, agg.rows, reason, agg.partial_row_tokens, agg.exhausted_at_row,
                            agg.min_buffer, selected=agg.started_sources > 0)


@dataclass(frozen=True, slots=True)
class Part:
    """Documents and tokens of one part of what was never trained."""

    documents: int
    tokens: int


@dataclass(frozen=True, slots=True)
class NeverTrained:
    """What one packer never trained at its horizon (see the module doc for the parts).

    :attr:`untrained_documents` counts documents no row holds a token of (never started or
    never reached); :attr:`partial_row_only_documents` more, started only in the partial
    row, have no token trained either, and count among :attr:`trained_documents` (the
    documents started) and the partial row's documents (:attr:`partial_row_only_tokens`: their
    lengths); :attr:`no_token_trained` is all of them. ``largest`` is true when the never-started and
    never-reached documents are exactly the largest documents offered (no trained document is longer than
    any of them). With several passes every count of documents counts occurrences (a document once per
    pass); :attr:`never_started_distinct` then counts the distinct documents that never started in any
    pass they arrived in, and :attr:`no_token_trained_distinct` the distinct documents of which no
    token was trained in any pass, with their lengths (both ``None`` for one pass).
    """

    packer: str
    offered_documents: int
    offered_tokens: int
    trained_tokens: int
    trained_documents: int
    never_started: Part
    never_started_buffered_tokens: int
    never_started_filtered_tokens: int
    dropped: Part
    dropped_discarded_tokens: int
    dropped_filtered_tokens: int
    still_buffered: Part
    never_reached: Part
    largest: bool
    buffered_tokens: int
    discarded_tokens: int
    filtered_tokens: int
    partial_row: Part = Part(0, 0)
    partial_row_only_documents: int = 0
    partial_row_only_tokens: int = 0
    never_started_distinct: int | None = None
    passes: int = 1
    no_token_trained_distinct: Part | None = None

    def documents_without_training(self) -> tuple[Part, int, int]:
        """``(documents with no token trained and their tokens, documents offered, tokens offered)``, each
        document counted once: :attr:`no_token_trained` for one pass; with several, the distinct
        documents no pass trained a token of (:attr:`no_token_trained_distinct`), out of the distinct
        documents offered. The quantity ``compare`` ranks by and ``audit`` names: comparable between a
        packer that makes several passes and one that makes one.

        >>> nt = NeverTrained("p", 6, 60, 20, 2, Part(4, 40), 0, 0, Part(0, 0), 0, 0, Part(0, 0), Part(0, 0),
        ...                   True, 0, 0, 0, passes=2, no_token_trained_distinct=Part(1, 10))
        >>> nt.documents_without_training()
        (Part(documents=1, tokens=10), 3, 30)
        """
        if self.no_token_trained_distinct is None:
            return self.no_token_trained, self.offered_documents, self.offered_tokens
        return (self.no_token_trained_distinct, self.offered_documents // self.passes,
                self.offered_tokens // self.passes)

    @property
    def no_token_trained(self) -> Part:
        """Documents of which no token was trained — never started, never reached, or placed only in the
        unfinished row — and the tokens they hold (their lengths): the one count ``audit`` and
        ``compare`` give as "documents with no token trained"."""
        return Part(self.untrained_documents + self.partial_row_only_documents,
                    self.never_started.tokens + self.never_reached.tokens + self.partial_row_only_tokens)

    @property
    def tokens(self) -> int:
        """Tokens offered and never trained."""
        return self.offered_tokens - self.trained_tokens

    @property
    def untrained_documents(self) -> int:
        """Documents with no token trained (``"documents"`` in :meth:`to_dict`)."""
        return self.never_started.documents + self.never_reached.documents

    @property
    def share(self) -> float | None:
        """Never-trained tokens / offered tokens."""
        return self.tokens / self.offered_tokens if self.offered_tokens else None

    def parts_sentence(self) -> str:
        """Each part of the tokens offered with its own share of them, in words; parts that hold no token
        are left out and ``trained`` is always said (the sentence every report and the doctor use).

        >>> none = Part(0, 0)
        >>> NeverTrained("discard", 4, 200, 150, 3, Part(1, 50), 0, 0, none, 0, 0, none, none, True,
        ...              0, 0, 0).parts_sentence()
        'trained 75.0% of the 200 tokens offered; 1 document never started (25.0% of the tokens, the largest)'
        """
        from ..reporting.model import percent

        total = self.offered_tokens

        def share(v: int) -> str:
            return percent(v / total) if total else "—"

        unit = "document" if self.never_started_distinct is None else "occurrence"  # several passes

        def docs(n: int) -> str:
            return f"{n:,} {unit}{'s' if n != 1 else ''}"

        parts = [f"trained {share(self.trained_tokens)} of the {total:,} tokens offered"]
        ns = self.never_started
        if ns.documents:
            largest = ", the largest" if self.largest and not self.never_reached.documents else ""
            distinct = ""
            if self.never_started_distinct is not None:
                d = self.never_started_distinct
                distinct = f"; {d:,} distinct document{'s' if d != 1 else ''} never started in any pass"
            parts.append(f"{docs(ns.documents)} never started ({share(ns.tokens)} of the tokens{largest}"
                         f"{distinct})")
        if self.dropped.tokens:
            parts.append(f"tails of {docs(self.dropped.documents)} that started were cut off "
                         f"({share(self.dropped.tokens)})")
        if self.still_buffered.tokens:
            verb = "is" if self.still_buffered.documents == 1 else "are"
            parts.append(f"{docs(self.still_buffered.documents)} that started {verb} still buffered "
                         f"({share(self.still_buffered.tokens)})")
        if self.partial_row.tokens:
            only = self.partial_row_only_documents
            alone = (f"; {docs(only)} placed only there {'has' if only == 1 else 'have'} no token trained"
                     if only else "")
            parts.append(f"{self.partial_row.tokens:,} tokens sit in the unfinished last row "
                         f"({share(self.partial_row.tokens)}{alone})")
        if self.never_reached.documents:
            parts.append(f"{docs(self.never_reached.documents)} lie beyond the horizon "
                         f"({share(self.never_reached.tokens)})")
        return "; ".join(parts)

    def mass(self) -> dict[str, int]:
        """The compare view: emitted, dropped (discarded + filtered), buffered and never reached tokens.

        The four sum to ``offered`` exactly; buffered counts every held token,
        of started documents or not; emitted includes the partial row.
        """
        return {"emitted": self.trained_tokens + self.partial_row.tokens,
                "dropped": self.discarded_tokens + self.filtered_tokens,
                "buffered": self.buffered_tokens, "never_reached": self.never_reached.tokens,
                "offered": self.offered_tokens}

    def _check(self) -> None:
        parts = (self.never_started.tokens + self.dropped.tokens + self.still_buffered.tokens
                 + self.partial_row.tokens + self.never_reached.tokens)
        assert self.trained_tokens + parts == self.offered_tokens, "the parts do not reconcile"
        held = self.never_started_buffered_tokens + self.never_started_filtered_tokens
        assert self.never_started.tokens >= held
        assert self.dropped.tokens == self.dropped_discarded_tokens + self.dropped_filtered_tokens
        m = self.mass()
        assert m["emitted"] + m["dropped"] + m["buffered"] + m["never_reached"] == m["offered"]
        assert self.trained_documents + self.untrained_documents == self.offered_documents
        assert self.partial_row_only_documents <= min(self.partial_row.documents, self.trained_documents)
        assert self.partial_row_only_tokens >= self.partial_row_only_documents  # each holds >= 1 token
        assert (self.partial_row_only_tokens > 0) == bool(self.partial_row_only_documents)
        d = self.never_started_distinct
        assert d is None or d <= self.never_started.documents
        assert self.passes >= 1 and self.offered_documents % self.passes == 0
        nd = self.no_token_trained_distinct
        assert nd is None or (self.passes > 1 and nd.documents <= self.offered_documents // self.passes
                              and nd.tokens <= self.offered_tokens // self.passes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with ``tokens``, ``documents``, ``share`` and ``mass``."""
        return {**asdict(self), "tokens": self.tokens, "documents": self.untrained_documents,
                "share": self.share, "mass": self.mass()}


def never_trained(ledger: Ledger, lengths: npt.ArrayLike, *, passes: int | None = None,
                  rows: RowFacts | None = None) -> NeverTrained:
    """:class:`NeverTrained` of a finished ``ledger`` whose packer was offered ``lengths``, ``passes`` times.

    ``rows`` (a :class:`~packing_theory.audit.documents.DocumentRows` fed the
    same stream) says which tokens sit in an incomplete last row; it is
    required when the run ended with one.

    ``passes`` defaults to the passes the stream reached (at least 1), as in
    :func:`~packing_theory.audit.documents.document_table`, whose columns sum
    to these figures. O(offered documents) numpy work, in blocks of
    occurrences (:meth:`Ledger.array_blocks`) and of offered documents (a
    memory-mapped ``lengths`` has its pages dropped after each): memory
    O(block), plus one bit per offered document when the arrivals are not
    the offered documents in order (:class:`Reached`).

    Raises:
        InputError: a ledger without its Horizon, an arrival that is not a
            document of ``lengths``, or a partial last row without ``rows``.
    """
    if not ledger.finished:
        raise InputError("never_trained needs a ledger fed the whole stream (its Horizon event)")
    arr = validate_lengths(lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths))
    n = int(arr.size)
    top_source, low_source, top_pass = -1, 0, -1
    for _, c in ledger.array_blocks(_BLOCK, columns=("arrived", "source", "pass_index")):
        arrived = c["arrived"]
        if arrived.any():
            src, pas = c["source"][arrived], c["pass_index"][arrived]
            top_source, low_source = max(top_source, int(src.max())), min(low_source, int(src.min()))
            top_pass = max(top_pass, int(pas.max()))
    if low_source < 0 or top_source >= n:
        raise InputError(f"an arrival names source {top_source}, not a document of the {n:,} offered")
    P = max(top_pass + 1, 1, 1 if passes is None else int(passes))
    if rows is None and ledger.result().partial_row_tokens:
        raise InputError("never_trained needs rows (a DocumentRows fed the same stream): the run ended "
                         "with a partial row")
    pp = np.zeros((0, 3), np.int64) if rows is None else rows.partial_placements
    if pp.size and int(pp[:, 0].max()) >= ledger.occurrences:
        raise InputError(f"a partial-row placement names occurrence {int(pp[:, 0].max())}, "
                         "which never arrived")
    seen = Reached(n * P)
    acc = _Sums()
    # with several passes: which documents arrived / started in some pass (one byte each)
    arrived_any = np.zeros(n if P > 1 else 0, np.bool_)
    started_any = np.zeros(n if P > 1 else 0, np.bool_)
    trained_any = np.zeros(n if P > 1 else 0, np.bool_)  # a token of it trained in some pass
    for a, c in ledger.array_blocks(_BLOCK, columns=_COLUMNS):
        arrived = c["arrived"]
        partial = _partial_block(pp, c, a)
        if not arrived.all():
            c, partial = {k: v[arrived] for k, v in c.items()}, partial[arrived]
        seen.add(c["pass_index"] * n + c["source"])
        acc.add(c, partial)
        if P > 1:
            arrived_any[c["source"]] = True
            started_any[c["source"][c["started"]]] = True
            only_partial = (partial > 0) & (c["emitted"] == partial)  # as no_token_trained counts them
            trained_any[c["source"][c["started"] & ~only_partial]] = True
    unreached = _unreached(arr, seen, P)
    untrained_min = min([x for x in (acc.never_started_min, unreached[2]) if x is not None], default=None)
    largest = untrained_min is not None and (acc.trained_max is None or untrained_min >= acc.trained_max)
    t = acc.total
    out = NeverTrained(
        packer=ledger.policy,
        offered_documents=n * P,
        offered_tokens=exact_sum(arr) * P,
        trained_tokens=t["emitted"] - t["partial"],
        trained_documents=t["started"],
        never_started=Part(t["ns"], t["ns_length"]),
        never_started_buffered_tokens=t["ns_buffered"],
        never_started_filtered_tokens=t["ns_filtered"],
        dropped=Part(t["dropped_docs"], t["dropped"]),
        dropped_discarded_tokens=t["dropped_discarded"],
        dropped_filtered_tokens=t["dropped_filtered"],
        still_buffered=Part(t["held_docs"], t["held"]),
        never_reached=Part(unreached[0], unreached[1]),
        largest=largest,
        buffered_tokens=t["buffered"],
        discarded_tokens=t["discarded"],
        filtered_tokens=t["filtered"],
        partial_row=Part(t["partial_docs"], t["partial"]),
        partial_row_only_documents=t["only_partial"],
        partial_row_only_tokens=t["only_partial_length"],
        never_started_distinct=int(np.count_nonzero(arrived_any & ~started_any)) if P > 1 else None,
        passes=P,
        no_token_trained_distinct=(Part(int(np.count_nonzero(~trained_any)), exact_sum(arr[~trained_any]))
                                   if P > 1 else None),
    )
    out._check()
    return out


def _partial_block(pp: npt.NDArray[np.int64], c: dict[str, npt.NDArray[Any]], a: int
                   ) -> npt.NDArray[np.int64]:
    """Source tokens of occurrences ``[a, a + block)`` placed in the partial row (an inserted BOS counts
    only when the ledger counts it as an added marker), as
    :func:`~packing_theory.audit.documents.partial_row_tokens` does for the whole table."""
    size = int(c["length"].size)
    out = np.zeros(size, np.int64)
    if pp.size:
        sel = (pp[:, 0] >= a) & (pp[:, 0] < a + size)
        if sel.any():
            occ = pp[sel, 0] - a
            added = (pp[sel, 2] > 0) & (c["added_bos"][occ] > 0)
            np.add.at(out, occ, pp[sel, 1] - added)
    return out


_BLOCK = 1 << 16
"""Occurrences per block: 512 KiB columns, which the allocator reuses (a block of a million would
take fresh, zeroed huge pages for every column of every block)."""

_COLUMNS = ("arrived", "source", "pass_index", "length", "started", "emitted", "discarded", "filtered",
            "buffered", "added_bos")


class _Sums:
    """Exact running totals of :func:`never_trained` over blocks of arrived occurrences."""

    KEYS = ("emitted", "partial", "started", "ns", "ns_length", "ns_buffered", "ns_filtered", "dropped_docs",
            "dropped", "dropped_discarded", "dropped_filtered", "held_docs", "held", "buffered", "discarded",
            "filtered", "partial_docs", "only_partial", "only_partial_length")

    def __init__(self) -> None:
        self.total: dict[str, int] = dict.fromkeys(self.KEYS, 0)
        self.never_started_min: int | None = None
        self.trained_max: int | None = None

    def add(self, c: dict[str, npt.NDArray[Any]], partial: npt.NDArray[np.int64]) -> None:
        """Add one block of arrived occurrences. The never-started ones are few (at most the buffer
        at the horizon and the filtered ones), so sums over the started ones are taken as the whole
        block's minus theirs."""
        started = c["started"]
        length, emitted, discarded = c["length"], c["emitted"], c["discarded"]
        filtered, buffered = c["filtered"], c["buffered"]
        ns = np.flatnonzero(~started)
        lost = discarded + filtered
        lost_pos, held_pos, partial_pos = lost > 0, buffered > 0, partial > 0

        def count(mask: npt.NDArray[np.bool_]) -> int:
            return int(np.count_nonzero(mask))

        def total(x: npt.NDArray[np.int64]) -> int:
            return int(x.sum())

        parts = {
            "emitted": total(emitted), "partial": total(partial), "started": started.size - ns.size,
            "ns": ns.size, "ns_length": total(length[ns]), "ns_buffered": total(buffered[ns]),
            "ns_filtered": total(filtered[ns]),
            "dropped_docs": count(lost_pos) - count(lost_pos[ns]),
            "dropped": total(lost) - total(lost[ns]),
            "dropped_discarded": total(discarded) - total(discarded[ns]),
            "dropped_filtered": total(filtered) - total(filtered[ns]),
            "held_docs": count(held_pos) - count(held_pos[ns]),
            "held": total(buffered) - total(buffered[ns]), "buffered": total(buffered),
            "discarded": total(discarded), "filtered": total(filtered), "partial_docs": count(partial_pos),
        }
        only = started & partial_pos & (emitted == partial) if partial_pos.any() else None
        parts["only_partial"] = 0 if only is None else count(only)
        parts["only_partial_length"] = 0 if only is None else total(length[only])
        for k, v in parts.items():
            self.total[k] += int(v)
        if ns.size:
            low = int(length[ns].min())
            old = self.never_started_min
            self.never_started_min = low if old is None else min(old, low)
        if ns.size < started.size:
            high = int(length.max()) if not ns.size else int(length[started].max())
            self.trained_max = high if self.trained_max is None else max(self.trained_max, high)


class Reached:
    """Which of ``size`` offered documents (by key ``pass x n + document``) arrived, in O(1) memory while
    the keys come as one run from 0 (a streaming replay: occurrence ids are the keys), else one bit each.

    >>> r = Reached(6); r.add(np.array([0, 1, 2])); r.prefix, r.mask(0, 6).tolist()
    (3, [True, True, True, False, False, False])
    >>> r.add(np.array([5])); r.prefix, r.mask(0, 6).tolist()
    (-1, [True, True, True, False, False, True])
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.prefix = 0  # keys [0, prefix) arrived and no other; -1 once the bits are kept
        self._bits: npt.NDArray[np.uint8] | None = None

    def add(self, keys: npt.NDArray[np.int64]) -> None:
        """Mark ``keys`` (each in ``[0, size)``) arrived."""
        if not keys.size:
            return
        if self._bits is None:
            if keys[0] == self.prefix and (keys.size == 1 or bool((np.diff(keys) == 1).all())):
                self.prefix += int(keys.size)
                return
            self._bits = np.zeros((self.size + 7) // 8, np.uint8)
            self._set(np.arange(self.prefix, dtype=np.int64))
            self.prefix = -1
        self._set(keys)

    def _set(self, keys: npt.NDArray[np.int64]) -> None:
        assert self._bits is not None
        np.bitwise_or.at(self._bits, keys >> 3, (1 << (keys & 7)).astype(np.uint8))

    def mask(self, lo: int, hi: int) -> npt.NDArray[np.bool_]:
        """Whether each key of ``[lo, hi)`` arrived. O(hi - lo)."""
        if self._bits is None:
            return np.arange(lo, hi) < self.prefix
        keys = np.arange(lo, hi, dtype=np.int64)
        return np.asarray((self._bits[keys >> 3] >> (keys & 7).astype(np.uint8)) & 1 != 0, np.bool_)

    def _check(self) -> None:
        assert (self._bits is None) == (self.prefix >= 0)
        assert self.prefix <= self.size


def _unreached(arr: npt.NDArray[np.int64], seen: Reached, passes: int) -> tuple[int, int, int | None]:
    """(documents, tokens, shortest length) offered in ``passes`` passes of ``arr`` and never seen; by
    chunks of ``arr`` (a mapped file's pages are dropped after each). O(offered)."""
    n = int(arr.size)
    docs = tokens = 0
    low: int | None = None
    for lo in range(0, n, VALIDATE_CHUNK):
        part = arr[lo : lo + VALIDATE_CHUNK]
        hi = lo + part.size
        for p in range(passes):
            miss = part[~seen.mask(p * n + lo, p * n + hi)]
            if miss.size:
                docs += int(miss.size)
                tokens += exact_sum(miss)
                m = int(miss.min())
                low = m if low is None else min(low, m)
        release_pages(part)
    return docs, tokens, low
