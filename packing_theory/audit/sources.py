"""Per data source: what arrived, what was trained, what was dropped, buffered or never started.

A packer's :class:`~packing_theory.audit.Ledger` accounts every document
occurrence (:meth:`~packing_theory.audit.Ledger.arrays`), and a
:class:`~packing_theory.audit.source_series.MixtureSeries` fed the same
stream says which tokens sit in the rows the trainer receives; with the
source label of every document (:class:`~packing_theory.corpus.labels.SourceLabels`)
this module sums them per data source (:func:`source_accounts`) and sets the
realised mixture against the declared one in both readings
(:func:`realised_mixture`).

**Trained** means tokens in the rows the trainer receives: the complete rows.
The unfinished last row of a stream that ran dry is never delivered; its
tokens are their own line (``unfinished_row_tokens``), in every figure —
per source here, the drift series
(:mod:`~packing_theory.audit.source_series`),
:func:`~packing_theory.audit.untrained.never_trained` and the per-document
table (:func:`~packing_theory.audit.documents.document_table`) alike.

Definitions (per source ``s``; "occurrence" = one arrival of a document, a
document arrives once per pass; tokens are source tokens, an added BOS
marker is no source's token):

* ``arrived`` occurrences and their ``arrived_tokens``; ``emitted_tokens``
  placed in any row (the ledger); ``trained_tokens`` in complete rows and
  ``unfinished_row_tokens`` in the unfinished row (the series); ``dropped``
  = discarded + filtered; ``buffered`` = still in the buffer at the horizon;
* ``started`` occurrences (a placement in a complete row),
  ``unfinished_row_only`` (placed in the unfinished row only) and
  ``never_started`` (no placement, the ledger), with ``never_started_tokens``;
* ``never_reached`` documents of the corpus with no arrival before the horizon.

:attr:`SourceAccount.problems` checks the ledger against the series:
``arrived_tokens = trained + unfinished + dropped + buffered``,
``emitted = trained + unfinished`` and
``arrived = started + unfinished_row_only + never_started``.

The **realised mixture** has two readings, each against its own declaration
(:class:`~packing_theory.audit.declared.DeclaredMixture`): the share of
*documents started* per source against α (seed 004: α is a sampling
frequency of documents), and the share of *trained tokens* per source
against the token targets (seed 002). Each reading has its distance,
the total variation ``½ Σ_s |share_s − declared_s|``, and misses when that
exceeds a threshold (default :data:`MIXTURE_THRESHOLD`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from ..corpus.labels import SourceLabels
from ..errors import InputError
from .declared import DeclaredMixture
from .source_series import SourceSeries, tv

__all__ = [
    "MIXTURE_THRESHOLD",
    "MixtureReading",
    "RealisedMixture",
    "SourceAccount",
    "SourceShare",
    "merge_accounts",
    "realised_mixture",
    "source_accounts",
]

MIXTURE_THRESHOLD = 0.05
"""A reading whose total-variation distance from its declaration exceeds this misses the declared mixture:
more than 5% of the documents started (or of the trained tokens) sit in other sources than declared."""

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SourceAccount:
    """One data source's accounting by one packer at its horizon (see the module docstring)."""

    source: str
    documents: int
    never_reached: int
    arrived: int
    arrived_tokens: int
    started: int
    unfinished_row_only: int
    never_started: int
    never_started_tokens: int
    emitted_tokens: int
    trained_tokens: int
    unfinished_row_tokens: int
    dropped_tokens: int
    buffered_tokens: int

    @property
    def problems(self) -> tuple[str, ...]:
        """The identities between the ledger and the series that fail, in words (empty: it reconciles)."""
        out = []
        parts = self.trained_tokens + self.unfinished_row_tokens + self.dropped_tokens + self.buffered_tokens
        if self.arrived_tokens != parts:
            out.append(f"source {self.source!r}: arrived tokens {self.arrived_tokens:,} != trained "
                       f"{self.trained_tokens:,} + unfinished row {self.unfinished_row_tokens:,} + dropped "
                       f"{self.dropped_tokens:,} + buffered {self.buffered_tokens:,}")
        if self.emitted_tokens != self.trained_tokens + self.unfinished_row_tokens:
            out.append(f"source {self.source!r}: the ledger placed {self.emitted_tokens:,} tokens, the rows "
                       f"hold {self.trained_tokens:,} trained + {self.unfinished_row_tokens:,} unfinished")
        if self.arrived != self.started + self.unfinished_row_only + self.never_started:
            out.append(f"source {self.source!r}: arrived {self.arrived:,} != started {self.started:,} + "
                       f"unfinished row only {self.unfinished_row_only:,} + never started "
                       f"{self.never_started:,}")
        if min(self.documents - self.never_reached, self.started, self.unfinished_row_only) < 0:
            out.append(f"source {self.source!r}: a negative count")
        return tuple(out)

    @property
    def reconciles(self) -> bool:
        """Whether every identity of :attr:`problems` holds."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**asdict(self), "reconciles": self.reconciles, "problems": list(self.problems)}


def _per_source(codes: Int64Array, values: npt.ArrayLike, S: int) -> Int64Array:
    w = np.asarray(values, dtype=np.int64)
    if w.size and int(w.sum()) >= 2**53:
        return np.asarray([int(w[codes == s].sum()) for s in range(S)], dtype=np.int64)
    return np.bincount(codes, weights=w, minlength=S).round().astype(np.int64)


def source_accounts(
    arrays: Mapping[str, npt.NDArray[Any]], labels: SourceLabels, series: SourceSeries
) -> tuple[SourceAccount, ...]:
    """Sum a ledger's per-occurrence columns and a series' rows per data source. O(occurrences + documents).

    ``arrays``: :meth:`Ledger.arrays() <packing_theory.audit.Ledger.arrays>` (after the Horizon);
    ``labels``: one label per document of the corpus replayed (``arrays["source"]`` indexes it);
    ``series``: the :class:`~packing_theory.audit.source_series.SourceSeries` of a
    :class:`~packing_theory.audit.source_series.MixtureSeries` fed the same stream with the same labels.

    Raises:
        InputError: an occurrence's document outside the labels, or a series of other sources.
    """
    if tuple(series.sources) != tuple(labels.names):
        raise InputError(f"the series counts sources {list(series.sources)}, the labels from "
                         f"{labels.origin} name {list(labels.names)}")
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
    never_n = arrived_n - np.bincount(codes[started], minlength=S)
    per = {
        "tok": _per_source(codes, length, S),
        "never_tok": _per_source(codes, np.where(started, 0, length), S),
        "emitted": _per_source(codes, col["emitted"], S),
        "dropped": _per_source(codes, col["discarded"] + col["filtered"], S),
        "buffered": _per_source(codes, col["buffered"], S),
    }
    trained = series.tokens.sum(axis=0, dtype=np.int64)
    first = series.documents.sum(axis=0, dtype=np.int64)
    return tuple(
        SourceAccount(
            source=name,
            documents=int(documents[s]),
            never_reached=int(documents[s] - n_reached[s]),
            arrived=int(arrived_n[s]),
            arrived_tokens=int(per["tok"][s]),
            started=int(first[s]),
            unfinished_row_only=int(series.unfinished_documents[s]),
            never_started=int(never_n[s]),
            never_started_tokens=int(per["never_tok"][s]),
            emitted_tokens=int(per["emitted"][s]),
            trained_tokens=int(trained[s]),
            unfinished_row_tokens=int(series.unfinished_tokens[s]),
            dropped_tokens=int(per["dropped"][s]),
            buffered_tokens=int(per["buffered"][s]),
        )
        for s, name in enumerate(labels.names)
    )


def merge_accounts(parts: Sequence[Sequence[SourceAccount]]) -> tuple[SourceAccount, ...]:
    """Sum several accounts of the same sources (e.g. one per DDP rank), field by field. O(parts × sources).

    Raises:
        InputError: no account list, or lists that name other sources (or in another order).
    """
    if not parts:
        raise InputError("merge_accounts needs at least one list of accounts")
    names = [a.source for a in parts[0]]
    for k, p in enumerate(parts):
        if [a.source for a in p] != names:
            raise InputError(f"accounts[{k}] lists sources {[a.source for a in p]}, accounts[0] {names}")
    counts = [f.name for f in fields(SourceAccount) if f.name != "source"]
    return tuple(
        SourceAccount(name, **{f: sum(getattr(p[i], f) for p in parts) for f in counts})
        for i, name in enumerate(names)
    )


@dataclass(frozen=True)
class SourceShare:
    """One source in one reading: its count, its share, and the declared share it is set against.

    ``count`` is documents started (document reading) or trained tokens (token reading); ``declared``
    is α (document reading) or the source's token target over the targets' sum (token reading), ``None``
    when that reading has no declaration; ``target_tokens`` is the declared token target (token reading).
    """

    source: str
    count: int
    share: float | None
    declared: float | None
    target_tokens: int | None
    absolute_error: float | None  # share − declared
    relative_error: float | None  # (share − declared) / declared; None when declared is 0 or absent

    @property
    def of_target(self) -> float | None:
        """Trained tokens over the source's token target (``None`` without a target, or a zero one)."""
        return self.count / self.target_tokens if self.target_tokens else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**asdict(self), "of_target": self.of_target}


_READINGS = {
    "documents": ("documents started (a placement in a complete row)", "α",
                  "α, the sampling frequency of documents (seed 004)"),
    "tokens": ("trained tokens (complete rows)", "token target share",
               "the token targets (seed 002), as shares of their sum"),
}


@dataclass(frozen=True)
class MixtureReading:
    """The realised mixture in one reading, against its declaration when there is one.

    Attributes:
        reading: ``"documents"`` (against α) or ``"tokens"`` (against the token targets).
        total: the documents started, or the trained tokens, over every source.
        shares: one :class:`SourceShare` per source (sorted by name).
        declared: whether this reading's declaration was given (α, or token targets).
        distance: the total variation ``½ Σ |share − declared|`` (``None`` without a declaration or a count).
        threshold: :attr:`missed` is ``distance > threshold``.
    """

    reading: str
    total: int
    shares: tuple[SourceShare, ...]
    declared: bool
    distance: float | None
    threshold: float

    @property
    def quantity(self) -> str:
        """What is counted, in words."""
        return _READINGS[self.reading][0]

    @property
    def against(self) -> str:
        """What the shares are set against, in words."""
        return _READINGS[self.reading][2]

    @property
    def label(self) -> str:
        """The reading's label, e.g. ``"share of trained tokens (complete rows) against the token targets
        (seed 002), as shares of their sum"``."""
        return f"share of {self.quantity}" + (f" against {self.against}" if self.declared else "")

    @property
    def missed(self) -> bool:
        """Whether the distance from the declaration exceeds the threshold."""
        return self.distance is not None and self.distance > self.threshold

    def worst(self) -> SourceShare | None:
        """The source furthest below its declared share (``None`` without a declaration or a count)."""
        rows = [s for s in self.shares if s.absolute_error is not None]
        return min(rows, key=lambda s: (s.absolute_error, s.source)) if rows else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"reading": self.reading, "label": self.label, "quantity": self.quantity,
                "against": self.against if self.declared else None, "total": self.total,
                "declared": self.declared, "distance": self.distance, "threshold": self.threshold,
                "missed": self.missed, "shares": [s.to_dict() for s in self.shares]}


@dataclass(frozen=True)
class RealisedMixture:
    """The realised mixture in both readings: documents started against α, trained tokens against targets."""

    documents: MixtureReading
    tokens: MixtureReading
    name: str = ""

    @property
    def readings(self) -> tuple[MixtureReading, MixtureReading]:
        """``(documents, tokens)``."""
        return self.documents, self.tokens

    @property
    def missed(self) -> bool:
        """Whether a declared reading misses its declaration by more than its threshold."""
        return any(r.missed for r in self.readings)

    def headline(self) -> str:
        """One sentence per declared reading, each share beside its own quantity.

        E.g. ``"documents started: TV 0.201 from α (missed; threshold 0.05), pdf 3.6% of 11,872 against
        33.3%; trained tokens: ..."``.
        """
        parts = []
        for r in self.readings:
            if not r.declared:
                continue
            w = r.worst()
            verdict = "missed" if r.missed else "within"
            what = "α" if r.reading == "documents" else "the token targets"
            dist = "–" if r.distance is None else f"{r.distance:.3f}"
            head = f"{r.quantity}: TV {dist} from {what} ({verdict}; threshold {r.threshold:g})"
            if w is not None and w.share is not None and w.declared is not None:
                head += (f", furthest below: {w.source} {100 * w.share:.1f}% of {r.total:,} "
                         f"{'documents' if r.reading == 'documents' else 'tokens'} against "
                         f"{100 * w.declared:.1f}%")
            parts.append(head)
        return "; ".join(parts) + "." if parts else "no declared mixture."

    def markdown(self) -> list[str]:
        """One table per reading (source, count, share, declared, error, relative, and of target)."""
        lines: list[str] = []
        for r in self.readings:
            pct = _pct
            lines += [f"**{r.label[0].upper()}{r.label[1:]}** — total {r.total:,}; distance (TV) "
                      f"{'–' if r.distance is None else f'{r.distance:.3f}'}"
                      f"{' (**missed**)' if r.missed else ''}.", ""]
            head = ["source", r.reading, "share", _READINGS[r.reading][1], "error", "relative"]
            head += ["of target"] if r.reading == "tokens" else []
            lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for s in r.shares:
                cells = [s.source, f"{s.count:,}", pct(s.share), pct(s.declared), pct(s.absolute_error, True),
                         pct(s.relative_error, True)]
                cells += [pct(s.of_target)] if r.reading == "tokens" else []
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``{"documents": ..., "tokens": ..., "missed": ...}``."""
        return {"name": self.name, "documents": self.documents.to_dict(), "tokens": self.tokens.to_dict(),
                "missed": self.missed}


def _pct(v: float | None, signed: bool = False) -> str:
    return "–" if v is None else f"{100 * v:+.1f}%" if signed else f"{100 * v:.1f}%"


def _reading(reading: str, counts: Mapping[str, int], declared: Mapping[str, float] | None,
             targets: Mapping[str, int] | None, threshold: float) -> MixtureReading:
    names = sorted({*counts, *(declared or {})})
    total = sum(counts.values())
    rows = []
    for s in names:
        c = counts.get(s, 0)
        share = c / total if total else None
        d = None if declared is None else declared.get(s, 0.0)
        err = None if share is None or d is None else share - d
        rel = None if err is None or not d else err / d
        rows.append(SourceShare(s, c, share, d, None if targets is None else targets.get(s, 0), err, rel))
    distance = None
    if declared is not None and total:
        distance = tv([r.share or 0.0 for r in rows], [declared.get(s, 0.0) for s in names])
    return MixtureReading(reading, total, tuple(rows), declared is not None, distance, threshold)


def realised_mixture(
    accounts: Sequence[SourceAccount],
    mixture: DeclaredMixture | None = None,
    *,
    threshold: float = MIXTURE_THRESHOLD,
) -> RealisedMixture:
    """The realised mixture in both readings, each against its own declaration when ``mixture`` gives it.

    The document reading counts each source's documents started (``started``:
    occurrences with a placement in a complete row) and sets their share
    against α; the token reading counts trained tokens and sets their share
    against the token targets' shares. Sources are those labelled with
    documents and those declared (a declared source with no document has
    share 0). O(sources).

    >>> a = [SourceAccount("a", 3, 0, 3, 30, 3, 0, 0, 0, 30, 30, 0, 0, 0),
    ...      SourceAccount("b", 1, 0, 1, 90, 1, 0, 0, 0, 90, 90, 0, 0, 0)]
    >>> m = realised_mixture(a, DeclaredMixture({"a": 0.5, "b": 0.5}, {"a": 50, "b": 50}))
    >>> m.documents.distance, m.tokens.distance, m.documents.missed
    (0.25, 0.25, True)

    Raises:
        InputError: a labelled source with documents that the declaration does not name; a threshold
            outside [0, 1].
    """
    if not 0 <= threshold <= 1:
        raise InputError(f"mixture threshold must be in [0, 1], got {threshold}")
    if mixture is not None:
        undeclared = sorted({a.source for a in accounts if a.documents} - set(mixture.sources))
        if undeclared:
            raise InputError(
                f"the corpus has source(s) {undeclared} that the declared mixture does not name "
                f"(declared: {list(mixture.sources)})"
            )
    present = [a for a in accounts if a.documents or (mixture is not None and a.source in mixture.sources)]
    docs = {a.source: a.started for a in present}
    toks = {a.source: a.trained_tokens for a in present}
    alpha = None if mixture is None else mixture.alpha
    targets = None if mixture is None else mixture.targets
    shares = None if mixture is None else mixture.target_shares
    return RealisedMixture(
        _reading("documents", docs, alpha, None, threshold),
        _reading("tokens", toks, shares, targets, threshold),
        "" if mixture is None else mixture.name,
    )
