"""The realised mixture over training time: per row and source, trained tokens and documents started.

:class:`MixtureSeries` is a consumer of any packer's event stream (events and
compiled batches alike, fed beside the :class:`~packing_theory.audit.Ledger`).
Its :class:`SourceSeries` holds, for every **complete** row (the rows the
trainer receives, ``0 .. Horizon.rows − 1``) and every data source, the
source tokens placed there and the documents whose first placement is there;
the unfinished last row of a stream that ran dry is its own line
(``unfinished_tokens``, ``unfinished_documents``), never counted as trained.

A *source token* is a token of the document: an added BOS marker
(``requeue-bos`` remainders, ``segment-first`` chunks after the first,
announced by :class:`~packing_theory.engine.events.BosAdded`) fills a row
position but is no source's token, as in the ledger's ``emitted`` column; a
``random-span`` crop's moved BOS is the document's own. So the column sums of
``tokens`` are the per-source trained tokens of
:func:`~packing_theory.audit.sources.source_accounts`, and their total is
:attr:`NeverTrained.trained_tokens <packing_theory.audit.untrained.NeverTrained.trained_tokens>`.

:func:`mixture_drift` cuts the complete rows into blocks and measures the
mixture in both readings per block: the share of **trained tokens** per source
(against the declared token targets, seed 002) and the share of **documents
started** per source (against the declared α, seed 004's sampling frequency
of documents). The **drift statistic** of a reading is
``D = max_b TV(p_b, p̄)``: over blocks ``b``, the total-variation distance
``½ Σ_s |p_b(s) − p̄(s)|`` between the block's share and the whole run's
share; a reading drifts when its ``D`` exceeds a threshold (default
:data:`DRIFT_THRESHOLD`). It isolates a change over time from a steady miss,
which the distance to the declaration shows.

>>> tv(np.array([0.5, 0.5]), np.array([1.0, 0.0]))
0.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..corpus.labels import SourceLabels
from ..engine.batches import BOS_ADDED, PLACEMENT, EventBatch, EventItem
from ..engine.events import BosAdded, Horizon, Placement
from ..errors import InputError
from .declared import DeclaredMixture

__all__ = [
    "DEFAULT_BLOCKS",
    "DRIFT_THRESHOLD",
    "MixtureDrift",
    "MixtureSeries",
    "SourceSeries",
    "mixture_drift",
    "tv",
]

DEFAULT_BLOCKS = 20
"""Blocks of rows the training time is cut into for the realised share over time."""

DRIFT_THRESHOLD = 0.25
"""A reading whose drift statistic ``D`` exceeds this is flagged: a quarter of a block's mass sits in other
sources than the run's own share."""

FloatArray = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]

_NONE = np.iinfo(np.int64).max
"""Per occurrence: no row yet (its first row), or no marker yet (the placements before its first marker)."""


def tv(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Total-variation distance ``½ Σ |p − q|`` of two share vectors."""
    return float(0.5 * np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)).sum())


@dataclass(frozen=True, eq=False)
class SourceSeries:
    """What a :class:`MixtureSeries` measured (see the module docstring).

    The per-row matrices are ``int32`` (a row holds at most ``R < 2**31`` tokens and documents), the
    other arrays ``int64``.

    Attributes:
        sources: the source names (columns).
        rows: complete rows (``Horizon.rows``): the rows the trainer receives.
        tokens: ``rows × sources``: source tokens placed in each complete row.
        documents: ``rows × sources``: occurrences whose smallest row is that row.
        unfinished_tokens: per source, source tokens placed in the unfinished row (never trained).
        unfinished_documents: per source, occurrences placed only in the unfinished row.
        first_row: per occurrence id, the smallest row holding one of its placements (``-1``: none);
            ``>= rows`` means the unfinished row only.
        unfinished: ``(k, 2)``: ``(occurrence, source tokens)`` of each placement in the unfinished row.
    """

    sources: tuple[str, ...]
    rows: int
    tokens: Int32Array
    documents: Int32Array
    unfinished_tokens: Int64Array
    unfinished_documents: Int64Array
    first_row: Int64Array
    unfinished: Int64Array

    def unfinished_per_occurrence(self, occurrences: int) -> Int64Array:
        """Source tokens in the unfinished row per occurrence id ``0 .. occurrences − 1``. O(occurrences)."""
        out = np.zeros(occurrences, np.int64)
        if self.unfinished.size:
            occ = self.unfinished[:, 0]
            if int(occ.max()) >= occurrences:
                raise InputError(f"an unfinished-row placement names occurrence {int(occ.max())}, "
                                 f"past the {occurrences:,} accounted")
            np.add.at(out, occ, self.unfinished[:, 1])
        return out

    def _check(self) -> None:
        S = len(self.sources)
        assert self.tokens.shape == (self.rows, S) and self.documents.shape == (self.rows, S)
        assert (self.tokens >= 0).all() and (self.documents >= 0).all()
        placed = self.first_row >= 0
        assert int(self.documents.sum()) == int((self.first_row[placed] < self.rows).sum())
        assert int(self.unfinished_documents.sum()) == int((self.first_row[placed] >= self.rows).sum())
        assert int(self.unfinished_tokens.sum()) == int(self.unfinished[:, 1].sum())


class MixtureSeries:
    """A consumer of the event stream: source tokens and document starts per (row, source).

    Args:
        labels: the source of every document of the replayed corpus.

    Each :class:`~packing_theory.engine.events.Placement` adds its source
    tokens (its length, less an added BOS marker) to its row and its
    document's source, and lowers its occurrence's first row; rows may arrive
    in any order (offline peers). Feed it beside the
    :class:`~packing_theory.audit.Ledger`
    (:func:`~packing_theory.engine.consumers.feed_all`); ``result()`` is a
    :class:`SourceSeries`. O(1) amortised per placement (numpy in chunks of
    8,192); memory O(rows × sources) int32 plus 12 bytes per occurrence (its
    first row and source), and 8 more per occurrence once a BOS marker is added; ``result()`` adds
    the document-start matrix (O(rows × sources) int32).
    """

    _CHUNK = 8192

    def __init__(self, labels: SourceLabels) -> None:
        self.labels = labels
        self._codes = labels.codes.astype(np.int64)
        self._S = len(labels.names)
        self._m = np.zeros((0, self._S), np.int32)
        self._first = np.zeros(0, np.int64)  # per occurrence: smallest row (_NONE: none)
        self._code = np.zeros(0, np.int32)  # per occurrence: its source's code
        self._marker: Int64Array | None = None  # per occurrence: placements fed before its first marker
        self._placed = 0  # placements accounted so far, in stream order
        self._pending: list[Placement] = []
        self._markers: list[tuple[int, int]] = []  # (occurrence, placements fed before it)
        self._horizon: Horizon | None = None
        self._total = 0
        self._last_row = -1  # the highest row placed into so far, and its (occurrence, source tokens)
        self._last: list[Int64Array] = []

    def feed(self, ev: EventItem) -> None:
        """Account one event or batch (placements, BOS markers and the Horizon matter)."""
        if type(ev) is Placement:
            self._pending.append(ev)
            if len(self._pending) >= self._CHUNK:
                self._flush()
        elif type(ev) is EventBatch:
            self._batch(ev)
        elif isinstance(ev, Placement):
            self.feed(Placement(*ev))
        elif isinstance(ev, BosAdded):
            self._markers.append((ev.occurrence, self._placed + len(self._pending)))
            if len(self._markers) >= self._CHUNK:
                self._flush()
        elif isinstance(ev, Horizon):
            self._end(ev)

    def _batch(self, b: EventBatch) -> None:
        self._flush()
        kinds = b.kinds
        if b.bos_added.occurrence.size:
            before = np.cumsum(kinds == PLACEMENT) - (kinds == PLACEMENT)
            at = self._placed + before[kinds == BOS_ADDED]
            self._mark(np.asarray(b.bos_added.occurrence, np.int64), at.astype(np.int64))
        c = b.placement
        self._add(np.asarray(c.row, np.int64), np.asarray(c.occurrence, np.int64),
                  np.asarray(c.source, np.int64), np.asarray(c.length, np.int64),
                  np.asarray(c.bos_inserted, np.bool_))
        if b.horizon is not None:
            self._end(b.horizon)

    def _end(self, h: Horizon) -> None:
        self._flush()
        self._horizon = h
        if self._m.shape[0] < h.rows:
            self._grow_rows(h.rows)

    def _flush(self) -> None:
        if self._markers:
            mk = np.asarray(self._markers, np.int64).reshape(-1, 2)
            self._markers.clear()
            self._mark(mk[:, 0], mk[:, 1])
        if self._pending:
            p = np.asarray(self._pending, dtype=np.int64).reshape(-1, 8)
            self._pending.clear()
            self._add(p[:, 0], p[:, 2], p[:, 3], p[:, 5], p[:, 6].astype(np.bool_))

    def _grow_rows(self, rows: int) -> None:
        grown = np.zeros((max(rows, 2 * self._m.shape[0]), self._S), np.int32)
        grown[: self._m.shape[0]] = self._m
        self._m = grown

    def _grow_occurrences(self, top: int) -> None:
        if top < self._first.size:
            return
        size = max(top + 1, 2 * self._first.size)
        self._first = np.concatenate([self._first, np.full(size - self._first.size, _NONE, np.int64)])
        self._code = np.concatenate([self._code, np.zeros(size - self._code.size, np.int32)])
        if self._marker is not None:
            self._marker = np.concatenate([self._marker, np.full(size - self._marker.size, _NONE, np.int64)])

    def _mark(self, occ: Int64Array, at: Int64Array) -> None:
        """Occurrences ``occ`` got an added BOS marker after ``at`` placements of the stream."""
        if not occ.size:
            return
        if occ.min() < 0:
            raise InputError(f"a BosAdded event names occurrence {int(occ.min())}")
        self._grow_occurrences(int(occ.max()))
        if self._marker is None:
            self._marker = np.full(self._first.size, _NONE, np.int64)
        np.minimum.at(self._marker, occ, at)

    def _add(self, row: Int64Array, occ: Int64Array, doc: Int64Array, length: Int64Array,
             bos: npt.NDArray[np.bool_]) -> None:
        n = int(row.size)
        if not n:
            return
        if doc.min() < 0 or doc.max() >= self._codes.size:
            raise InputError(
                f"source labels from {self.labels.origin}: {self._codes.size} labels, but "
                f"document {int(doc.max())} was placed"
            )
        if occ.min() < 0 or row.min() < 0:
            raise InputError("a Placement names a negative row or occurrence")
        top = int(row.max()) + 1
        if top > self._m.shape[0]:
            self._grow_rows(top)
        self._grow_occurrences(int(occ.max()))
        tokens = length
        if self._marker is not None and bos.any():
            seq = self._placed + np.arange(n, dtype=np.int64)
            tokens = length - (bos & (self._marker[occ] <= seq))
        code = self._codes[doc]
        np.add.at(self._m, (row, code), tokens)
        np.minimum.at(self._first, occ, row)
        self._code[occ] = code
        self._placed += n
        self._total += int(tokens.sum())
        if top - 1 > self._last_row:
            self._last_row, self._last = top - 1, []
        if top - 1 == self._last_row:
            at = row == self._last_row
            self._last.append(np.column_stack([occ[at], tokens[at]]))

    def result(self) -> SourceSeries:
        """The :class:`SourceSeries` (needs the Horizon). O(rows × sources + occurrences)."""
        h = self._horizon
        if h is None:
            raise InputError("MixtureSeries.result() needs the Horizon event: feed the whole stream first")
        rows, S = h.rows, self._S
        complete = self._m[:rows].copy()
        late = self._m[rows:]
        placed = np.flatnonzero(self._first != _NONE)
        fr, code = self._first[placed], self._code[placed].astype(np.int64)
        early = fr < rows
        docs = np.zeros((rows, S), np.int32)
        np.add.at(docs, (fr[early], code[early]), 1)
        n = self._occurrences()
        first_row = np.where(self._first[:n] == _NONE, -1, self._first[:n])
        unfinished = self._unfinished_placements(rows)
        return SourceSeries(
            sources=self.labels.names,
            rows=rows,
            tokens=complete,
            documents=docs,
            unfinished_tokens=late.sum(axis=0, dtype=np.int64),
            unfinished_documents=np.bincount(code[~early], minlength=S).astype(np.int64),
            first_row=first_row,
            unfinished=unfinished,
        )

    def _occurrences(self) -> int:
        placed = np.flatnonzero(self._first != _NONE)
        return int(placed.max()) + 1 if placed.size else 0

    def _unfinished_placements(self, rows: int) -> Int64Array:
        """``(occurrence, source tokens)`` of the placements in the unfinished row ``rows`` (the last row).

        Raises:
            InputError: placements in a row past ``rows``, or in row ``rows`` and another after it.
        """
        if self._last_row < rows:
            return np.zeros((0, 2), np.int64)
        if self._last_row > rows:
            raise InputError(f"inconsistent event stream: a placement in row {self._last_row:,}, past the "
                             f"unfinished row {rows:,} after the Horizon's {rows:,} complete rows")
        return np.concatenate(self._last).astype(np.int64).reshape(-1, 2)

    def _check(self) -> None:
        """Assert the matrix is non-negative and sums to the source tokens accounted."""
        assert (self._m >= 0).all()
        assert int(self._m.sum(dtype=np.int64)) == self._total
        assert self._m.shape[1] == self._S
        assert self._first.size == self._code.size
        assert self._marker is None or self._marker.size == self._first.size


@dataclass(frozen=True)
class MixtureDrift:
    """The realised mixture per block of complete rows, in both readings, and each reading's drift.

    Token reading: ``block_tokens``, ``shares`` (per block, per source), ``overall``, ``tv_overall``,
    ``drift`` and, with declared token targets, ``tv_targets`` / ``max_tv_targets``. Document reading
    (documents started, counted at their first row): ``block_documents``, ``document_shares``,
    ``document_overall``, ``document_tv_overall``, ``document_drift`` and, with a declared α,
    ``tv_alpha`` / ``max_tv_alpha``. A block with nothing in a reading has zero shares and no distance.
    """

    sources: tuple[str, ...]
    block_rows: int
    block_starts: tuple[int, ...]  # first row of each block
    block_tokens: tuple[int, ...]
    shares: tuple[tuple[float, ...], ...]
    overall: tuple[float, ...]
    tv_overall: tuple[float | None, ...]
    tv_targets: tuple[float | None, ...]
    drift: float | None  # D of the token reading
    max_tv_targets: float | None
    block_documents: tuple[int, ...]
    document_shares: tuple[tuple[float, ...], ...]
    document_overall: tuple[float, ...]
    document_tv_overall: tuple[float | None, ...]
    tv_alpha: tuple[float | None, ...]
    document_drift: float | None  # D of the document reading
    max_tv_alpha: float | None
    threshold: float

    @property
    def drifted(self) -> bool:
        """Whether the token reading's ``D`` exceeds the threshold."""
        return self.drift is not None and self.drift > self.threshold

    @property
    def document_drifted(self) -> bool:
        """Whether the document reading's ``D`` exceeds the threshold."""
        return self.document_drift is not None and self.document_drift > self.threshold

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, the two readings under ``tokens`` and ``documents``."""
        return {
            "sources": list(self.sources),
            "block_rows": self.block_rows,
            "block_starts": list(self.block_starts),
            "threshold": self.threshold,
            "statistic": "D = max over blocks of TV(block share, run share); TV = half the L1 distance; "
                         "over complete rows only",
            "tokens": {
                "reading": "share of trained tokens (complete rows) against the declared token targets",
                "block_totals": list(self.block_tokens), "shares": [list(s) for s in self.shares],
                "overall": list(self.overall), "tv_overall": list(self.tv_overall),
                "tv_declared": list(self.tv_targets), "drift": self.drift,
                "max_tv_declared": self.max_tv_targets, "drifted": self.drifted,
            },
            "documents": {
                "reading": "share of documents started (at their first complete row) against α",
                "block_totals": list(self.block_documents),
                "shares": [list(s) for s in self.document_shares],
                "overall": list(self.document_overall), "tv_overall": list(self.document_tv_overall),
                "tv_declared": list(self.tv_alpha), "drift": self.document_drift,
                "max_tv_declared": self.max_tv_alpha, "drifted": self.document_drifted,
            },
        }


@dataclass(frozen=True)
class _Reading:
    totals: tuple[int, ...]
    shares: tuple[tuple[float, ...], ...]
    overall: tuple[float, ...]
    tv_overall: tuple[float | None, ...]
    tv_declared: tuple[float | None, ...]
    drift: float | None
    max_tv_declared: float | None


def _reading(sums: Int64Array, declared: FloatArray | None) -> _Reading:
    """Per-block shares and distances of one reading (``sums``: blocks × sources)."""
    S = sums.shape[1]
    totals = sums.sum(axis=1)
    total = int(totals.sum())
    overall = sums.sum(axis=0) / total if total else np.zeros(S)
    shares, tv_o, tv_d = [], [], []
    for b, t in zip(sums, totals, strict=True):
        p = b / t if t else np.zeros(S)
        shares.append(tuple(float(x) for x in p))
        tv_o.append(tv(p, overall) if t else None)
        tv_d.append(tv(p, declared) if t and declared is not None else None)
    seen_o = [v for v in tv_o if v is not None]
    seen_d = [v for v in tv_d if v is not None]
    return _Reading(tuple(int(t) for t in totals), tuple(shares), tuple(float(x) for x in overall),
                    tuple(tv_o), tuple(tv_d), max(seen_o) if seen_o else None,
                    max(seen_d) if seen_d else None)


def _declared(shares: Mapping[str, float] | None, sources: tuple[str, ...]) -> FloatArray | None:
    return None if shares is None else np.asarray([shares.get(s, 0.0) for s in sources], np.float64)


def mixture_drift(
    series: SourceSeries,
    *,
    mixture: DeclaredMixture | None = None,
    blocks: int = DEFAULT_BLOCKS,
    threshold: float = DRIFT_THRESHOLD,
) -> MixtureDrift:
    """Cut a :class:`SourceSeries` into ``blocks`` blocks of complete rows and measure both readings.

    Blocks have ``ceil(rows / blocks)`` rows (the last may be shorter); a
    block with nothing in a reading has no share there and is skipped by its
    statistics. The token reading is set against ``mixture``'s token targets,
    the document reading against its α, when declared. O(rows × sources).

    >>> z = np.zeros(2, np.int64)
    >>> s = SourceSeries(("a", "b"), 4, np.array([[4, 0], [4, 0], [0, 4], [0, 4]]),
    ...                  np.array([[1, 0], [1, 0], [0, 1], [0, 1]]), z, z, np.arange(4), np.zeros((0, 2)))
    >>> d = mixture_drift(s, blocks=2, mixture=DeclaredMixture.from_document({"alpha": {"a": 0.5, "b": 0.5}}))
    >>> d.shares, d.drift, d.drifted, d.max_tv_alpha, d.max_tv_targets
    (((1.0, 0.0), (0.0, 1.0)), 0.5, True, 0.5, None)
    """
    blocks = check_int("blocks", blocks, 1)
    if not 0 <= threshold <= 1:
        raise InputError(f"drift threshold must be in [0, 1], got {threshold}")
    rows, sources = series.rows, series.sources
    size = max(1, -(-rows // blocks))
    starts = tuple(range(0, rows, size))
    S = len(sources)

    def cut(m: npt.NDArray[Any]) -> Int64Array:
        return np.asarray([m[s : s + size].sum(axis=0, dtype=np.int64) for s in starts], np.int64).reshape(
            len(starts), S)

    tok = _reading(cut(series.tokens), _declared(None if mixture is None else mixture.target_shares, sources))
    doc = _reading(cut(series.documents), _declared(None if mixture is None else mixture.alpha, sources))
    return MixtureDrift(
        sources, size, starts,
        tok.totals, tok.shares, tok.overall, tok.tv_overall, tok.tv_declared, tok.drift, tok.max_tv_declared,
        doc.totals, doc.shares, doc.overall, doc.tv_overall, doc.tv_declared, doc.drift, doc.max_tv_declared,
        float(threshold),
    )
