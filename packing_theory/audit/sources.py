"""Per data source: what arrived, what was trained, what was dropped, buffered or never started.

A packer's :class:`~packing_theory.audit.Ledger` accounts every document
occurrence (:meth:`~packing_theory.audit.Ledger.arrays`); with the source
label of every document (:class:`~packing_theory.corpus.labels.SourceLabels`)
this module sums those columns per data source (:func:`source_accounts`),
sets the trained share against the declared α (:func:`realised_mixture`),
follows the realised share over training time (:class:`MixtureSeries`, a
consumer of the event stream, reduced to blocks of rows by
:func:`mixture_drift`) and joins the cleaning funnel to the packer
(:func:`funnel_table`).

Definitions (per source ``s``; "occurrence" = one arrival of a document, a
document arrives once per pass):

* ``arrived`` occurrences and their tokens; ``trained`` = source tokens
  emitted at the horizon; ``dropped`` = discarded + filtered tokens;
  ``buffered`` = tokens still in the buffer at the horizon; so
  ``arrived_tokens == trained + dropped + buffered`` exactly;
* ``started`` / ``never_started`` occurrences (``arrived == started +
  never_started``), with ``never_started_tokens`` their tokens;
* ``never_reached`` documents of the corpus with no arrival before the horizon.

The **drift statistic** is ``D = max_b TV(p_b, p̄)``: over blocks ``b`` of
consecutive rows, the total-variation distance ``½ Σ_s |p_b(s) − p̄(s)|``
between the block's share of row tokens per source and the whole run's
share; a run drifts when ``D`` exceeds a threshold (default
:data:`DRIFT_THRESHOLD`). It isolates a change over time from a steady
under-training, which the per-source error against α shows; the report also
gives ``max_b TV(p_b, α)``.

>>> import numpy as np
>>> tv(np.array([0.5, 0.5]), np.array([1.0, 0.0]))
0.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..corpus.funnel import FunnelResult
from ..corpus.labels import SourceLabels
from ..engine.batches import EventBatch, EventItem
from ..engine.events import Horizon, Placement
from ..errors import InputError
from .declared import DeclaredMixture

__all__ = [
    "DEFAULT_BLOCKS",
    "DRIFT_THRESHOLD",
    "MixtureDrift",
    "MixtureSeries",
    "SourceAccount",
    "SourceShare",
    "funnel_table",
    "mixture_drift",
    "realised_mixture",
    "source_accounts",
    "tv",
]

DEFAULT_BLOCKS = 20
"""Blocks of rows the training time is cut into for the realised share over time."""

DRIFT_THRESHOLD = 0.25
"""A run whose drift statistic ``D`` exceeds this is flagged: a quarter of a block's tokens sit in other
sources than the run's own share."""

FloatArray = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]


def tv(p: FloatArray, q: FloatArray) -> float:
    """Total-variation distance ``½ Σ |p − q|`` of two share vectors."""
    return float(0.5 * np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)).sum())


@dataclass(frozen=True)
class SourceAccount:
    """One data source's accounting by one packer at its horizon (see the module docstring)."""

    source: str
    documents: int
    never_reached: int
    arrived: int
    arrived_tokens: int
    started: int
    never_started: int
    never_started_tokens: int
    trained_tokens: int
    dropped_tokens: int
    buffered_tokens: int

    @property
    def reconciles(self) -> bool:
        """``arrived_tokens == trained + dropped + buffered`` and ``arrived == started + never_started``."""
        return (
            self.arrived_tokens == self.trained_tokens + self.dropped_tokens + self.buffered_tokens
            and self.arrived == self.started + self.never_started
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**asdict(self), "reconciles": self.reconciles}


def _per_source(codes: Int64Array, values: npt.ArrayLike, S: int) -> Int64Array:
    w = np.asarray(values, dtype=np.int64)
    if w.size and int(w.sum()) >= 2**53:
        return np.asarray([int(w[codes == s].sum()) for s in range(S)], dtype=np.int64)
    return np.bincount(codes, weights=w, minlength=S).round().astype(np.int64)


def source_accounts(
    arrays: Mapping[str, npt.NDArray[Any]], labels: SourceLabels
) -> tuple[SourceAccount, ...]:
    """Sum a ledger's per-occurrence columns per data source. O(occurrences + documents).

    ``arrays``: :meth:`Ledger.arrays() <packing_theory.audit.Ledger.arrays>` (after the Horizon);
    ``labels``: one label per document of the corpus replayed (``arrays["source"]`` indexes it).

    Raises:
        InputError: an occurrence's document outside the labels.
    """
    arrived = np.asarray(arrays["arrived"], np.bool_)
    doc = np.asarray(arrays["source"], np.int64)[arrived]
    if doc.size and (doc.min() < 0 or doc.max() >= len(labels)):
        raise InputError(
            f"source labels from {labels.origin}: {len(labels)} labels, but document {int(doc.max())} arrived"
        )
    S = len(labels.names)
    codes = labels.codes.astype(np.int64)[doc]
    started = np.asarray(arrays["started"], np.bool_)[arrived]
    length = np.asarray(arrays["length"], np.int64)[arrived]
    col = {
        k: np.asarray(arrays[k], np.int64)[arrived] for k in ("emitted", "discarded", "filtered", "buffered")
    }
    reached = np.zeros(len(labels), np.bool_)
    reached[doc] = True
    documents = np.bincount(labels.codes, minlength=S)
    n_reached = np.bincount(labels.codes[reached], minlength=S)
    arrived_n = np.bincount(codes, minlength=S)
    started_n = np.bincount(codes[started], minlength=S)
    tok = _per_source(codes, length, S)
    never_tok = _per_source(codes, np.where(started, 0, length), S)
    trained = _per_source(codes, col["emitted"], S)
    dropped = _per_source(codes, col["discarded"] + col["filtered"], S)
    buffered = _per_source(codes, col["buffered"], S)
    return tuple(
        SourceAccount(
            name,
            int(documents[s]),
            int(documents[s] - n_reached[s]),
            int(arrived_n[s]),
            int(tok[s]),
            int(started_n[s]),
            int(arrived_n[s] - started_n[s]),
            int(never_tok[s]),
            int(trained[s]),
            int(dropped[s]),
            int(buffered[s]),
        )
        for s, name in enumerate(labels.names)
    )


@dataclass(frozen=True)
class SourceShare:
    """One source's share of trained tokens against its declared α."""

    source: str
    alpha: float
    trained_tokens: int
    share: float | None
    absolute_error: float | None  # share − α
    relative_error: float | None  # (share − α) / α; None when α = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def realised_mixture(
    accounts: tuple[SourceAccount, ...], mixture: DeclaredMixture
) -> tuple[SourceShare, ...]:
    """Per declared source: the share of trained tokens, with its absolute and relative error against α.

    Raises:
        InputError: a labelled source with documents that the declaration does not name.
    """
    present = {a.source for a in accounts if a.documents}
    undeclared = sorted(present - set(mixture.alpha))
    if undeclared:
        raise InputError(
            f"the corpus has source(s) {undeclared} that the declared mixture does not name "
            f"(declared: {list(mixture.sources)})"
        )
    trained = {a.source: a.trained_tokens for a in accounts}
    total = sum(trained.values())
    out = []
    for s in mixture.sources:
        a, t = mixture.alpha[s], trained.get(s, 0)
        share = t / total if total else None
        err = None if share is None else share - a
        rel = None if err is None or a == 0 else err / a
        out.append(SourceShare(s, a, t, share, err, rel))
    return tuple(out)


class MixtureSeries:
    """A consumer of the event stream: row-position tokens per (row, source), for the share over time.

    Args:
        labels: the source of every document of the replayed corpus.

    Each :class:`~packing_theory.engine.events.Placement` adds its length
    (the row positions it fills, an inserted BOS included) to its row and its
    document's source; rows may arrive in any order (offline peers). Feed it
    beside the :class:`~packing_theory.audit.Ledger`
    (:func:`~packing_theory.engine.consumers.feed_all`). ``result()`` is the
    ``rows × sources`` matrix. O(1) amortised per placement; memory
    O(rows × sources) int64.
    """

    def __init__(self, labels: SourceLabels) -> None:
        self.labels = labels
        self._codes = labels.codes.astype(np.int64)
        self._S = len(labels.names)
        self._m = np.zeros((0, self._S), np.int64)
        self._pending: list[Placement] = []
        self._horizon: Horizon | None = None
        self._total = 0

    def feed(self, ev: EventItem) -> None:
        """Account one event or batch (only placements and the Horizon matter)."""
        if type(ev) is Placement:
            self._pending.append(ev)
            if len(self._pending) >= 8192:
                self._flush()
        elif type(ev) is EventBatch:
            c = ev.placement
            self._add(
                np.asarray(c.row, np.int64), np.asarray(c.source, np.int64), np.asarray(c.length, np.int64)
            )
            if ev.horizon is not None:
                self._end(ev.horizon)
        elif isinstance(ev, Placement):
            self._pending.append(Placement(*ev))
        elif isinstance(ev, Horizon):
            self._end(ev)

    def _end(self, h: Horizon) -> None:
        self._flush()
        self._horizon = h
        if self._m.shape[0] < h.rows:
            self._grow(h.rows)

    def _flush(self) -> None:
        if self._pending:
            p = np.asarray(self._pending, dtype=np.int64).reshape(-1, 8)
            self._pending.clear()
            self._add(p[:, 0], p[:, 3], p[:, 5])

    def _grow(self, rows: int) -> None:
        grown = np.zeros((max(rows, 2 * self._m.shape[0]), self._S), np.int64)
        grown[: self._m.shape[0]] = self._m
        self._m = grown

    def _add(self, row: Int64Array, doc: Int64Array, length: Int64Array) -> None:
        if not row.size:
            return
        if doc.min() < 0 or doc.max() >= self._codes.size:
            raise InputError(
                f"source labels from {self.labels.origin}: {self._codes.size} labels, but "
                f"document {int(doc.max())} was placed"
            )
        top = int(row.max()) + 1
        if top > self._m.shape[0]:
            self._grow(top)
        np.add.at(self._m, (row, self._codes[doc]), length)
        self._total += int(length.sum())

    def result(self) -> Int64Array:
        """Row-position tokens per ``(row, source)``, rows ``0 .. Horizon.rows − 1`` (needs the Horizon)."""
        if self._horizon is None:
            raise InputError("MixtureSeries.result() needs the Horizon event: feed the whole stream first")
        rows = max(
            self._horizon.rows, int(np.flatnonzero(self._m.any(axis=1)).max() + 1) if self._total else 0
        )
        out: Int64Array = self._m[:rows].copy()
        return out

    def _check(self) -> None:
        """Assert the matrix is non-negative and sums to the placement tokens accounted."""
        assert (self._m >= 0).all()
        assert int(self._m.sum()) == self._total
        assert self._m.shape[1] == self._S


@dataclass(frozen=True)
class MixtureDrift:
    """The realised share per block of rows, and the drift statistic (see the module docstring)."""

    sources: tuple[str, ...]
    block_rows: int
    block_starts: tuple[int, ...]  # first row of each block
    block_tokens: tuple[int, ...]
    shares: tuple[tuple[float, ...], ...]  # per block, per source (blocks with no token: zeros)
    overall: tuple[float, ...]
    tv_declared: tuple[float | None, ...]  # per block: TV to α (None without a declaration or tokens)
    tv_overall: tuple[float | None, ...]  # per block: TV to the run's own share
    drift: float | None  # D = max_b TV(p_b, p̄)
    max_tv_declared: float | None
    threshold: float

    @property
    def drifted(self) -> bool:
        """Whether ``D`` exceeds the threshold."""
        return self.drift is not None and self.drift > self.threshold

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            **asdict(self),
            "drifted": self.drifted,
            "statistic": "D = max over blocks of TV(block share, run share); TV = half the L1 distance",
        }


def mixture_drift(
    matrix: npt.ArrayLike,
    sources: tuple[str, ...],
    *,
    blocks: int = DEFAULT_BLOCKS,
    alpha: Mapping[str, float] | None = None,
    threshold: float = DRIFT_THRESHOLD,
) -> MixtureDrift:
    """Cut a :class:`MixtureSeries` matrix into ``blocks`` blocks of rows and measure the drift.

    Blocks have ``ceil(rows / blocks)`` rows (the last may be shorter); a
    block with no token has no share and is skipped by the statistics. O(rows × sources).

    >>> m = np.array([[4, 0], [4, 0], [0, 4], [0, 4]])
    >>> d = mixture_drift(m, ("a", "b"), blocks=2, alpha={"a": 0.5, "b": 0.5})
    >>> d.shares, d.drift, d.drifted
    (((1.0, 0.0), (0.0, 1.0)), 0.5, True)
    """
    m = np.asarray(matrix, np.int64)
    blocks = check_int("blocks", blocks, 1)
    if not 0 <= threshold <= 1:
        raise InputError(f"drift threshold must be in [0, 1], got {threshold}")
    rows = m.shape[0]
    size = max(1, -(-rows // blocks))
    starts = tuple(range(0, rows, size))
    sums = np.asarray([m[s : s + size].sum(axis=0) for s in starts], np.int64).reshape(
        len(starts), m.shape[1]
    )
    tokens = sums.sum(axis=1)
    total = int(tokens.sum())
    overall = sums.sum(axis=0) / total if total else np.zeros(m.shape[1])
    a = None if alpha is None else np.asarray([alpha.get(s, 0.0) for s in sources], np.float64)
    shares, tv_d, tv_o = [], [], []
    for b, t in zip(sums, tokens, strict=True):
        p = b / t if t else np.zeros(m.shape[1])
        shares.append(tuple(float(x) for x in p))
        tv_o.append(tv(p, overall) if t else None)
        tv_d.append(tv(p, a) if t and a is not None else None)
    seen_o = [v for v in tv_o if v is not None]
    seen_d = [v for v in tv_d if v is not None]
    return MixtureDrift(
        sources,
        size,
        starts,
        tuple(int(t) for t in tokens),
        tuple(shares),
        tuple(float(x) for x in overall),
        tuple(tv_d),
        tuple(tv_o),
        max(seen_o) if seen_o else None,
        max(seen_d) if seen_d else None,
        float(threshold),
    )


def funnel_table(
    funnel: FunnelResult | None,
    raw_labels: SourceLabels,
    raw_lengths: npt.ArrayLike,
    accounts: tuple[SourceAccount, ...],
    arrays: Mapping[str, npt.NDArray[Any]],
) -> dict[str, dict[str, Any]]:
    """Per source, documents and tokens from raw through each stage to arrived, started and trained.

    ``raw_labels`` / ``raw_lengths``: the corpus before the funnel; the packer
    replayed the documents ``funnel.keep`` kept, in order (``arrays["source"]``
    indexes those). Steps: ``raw``, each stage, ``arrived`` (documents with an
    arrival before the horizon), ``started`` (with an emitted token), then
    ``trained`` tokens (all passes). Every step's documents are a subset of
    the step before; ``reconciles`` checks that the documents removed at each
    step sum to ``raw − started`` and that ``trained`` equals the accounts'
    trained tokens. O(documents × stages).
    """
    raw = np.asarray(raw_lengths, np.int64)
    keep = np.ones(raw.size, np.bool_) if funnel is None else funnel.keep
    kept_ids = np.flatnonzero(keep)
    stage_counts = (
        funnel.per_source(raw_labels, raw)
        if funnel is not None
        else {
            s: {"steps": ["raw"], "documents": [d], "tokens": [int(raw[raw_labels.codes == i].sum())]}
            for i, (s, d) in enumerate(raw_labels.documents_per_source().items())
        }
    )
    arrived = np.asarray(arrays["arrived"], np.bool_)
    doc = np.asarray(arrays["source"], np.int64)
    reached = np.zeros(raw.size, np.bool_)
    reached[kept_ids[doc[arrived]]] = True
    started = np.zeros(raw.size, np.bool_)
    started[kept_ids[doc[arrived & np.asarray(arrays["started"], np.bool_)]]] = True
    out: dict[str, dict[str, Any]] = {}
    trained = {a.source: a.trained_tokens for a in accounts}
    for i, s in enumerate(raw_labels.names):
        mine = raw_labels.codes == i
        row = dict(stage_counts[s])
        steps = [*row["steps"], "arrived", "started"]
        docs = [*row["documents"], int((reached & mine).sum()), int((started & mine).sum())]
        toks = [*row["tokens"], int(raw[reached & mine].sum()), int(raw[started & mine].sum())]
        removed = [docs[k] - docs[k + 1] for k in range(len(docs) - 1)]
        ok = all(r >= 0 for r in removed) and sum(removed) == docs[0] - docs[-1]
        ok = ok and all(toks[k] >= toks[k + 1] for k in range(len(toks) - 1))
        out[s] = {
            "steps": steps,
            "documents": docs,
            "tokens": toks,
            "removed_documents": removed,
            "trained_tokens": trained.get(s, 0),
            "reconciles": bool(ok),
        }
    return out
