"""The result of a reconciliation: the verdict, the first divergence, per-document and per-source figures.

:class:`Reconciliation` is a report: :meth:`~Reconciliation.to_dict` (JSON),
:meth:`~Reconciliation.headline` (one sentence, each share beside its own
quantity) and :meth:`~Reconciliation.markdown`. Its
:attr:`~Reconciliation.exit_code` is the command line's: 0 every step equals
the replay, 1 a divergence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.declared import DeclaredMixture
from ..corpus.labels import SourceLabels
from .schedule import Schedule

__all__ = ["CLASSES", "LISTED", "Divergence", "Reconciliation", "SourceShare"]

CLASSES = ("duplicated", "skipped", "reordered", "truncated", "foreign", "fully masked")
"""The classes of a divergence (see :mod:`~packing_theory.training.reconcile`)."""
LISTED = 1000
"""Documents listed by name in :meth:`Reconciliation.to_dict` (the counts are always complete)."""


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


@dataclass(frozen=True)
class Divergence:
    """The first place where the run differs from the replay.

    Attributes:
        cls: one of :data:`CLASSES`.
        step, rank: where.
        micro, row: the ledger's micro-batch and row within it (``-1``: a step the rank never recorded).
        observed: ``(doc, start, length)`` the model consumed there (``None``: nothing).
        expected: ``(doc, start, length)`` the replay prescribes there (``None``: nothing).
        expected_row: the replay's row of :attr:`expected`.
    """

    cls: str
    step: int
    rank: int
    micro: int
    row: int
    observed: tuple[int, int, int] | None
    expected: tuple[int, int, int] | None
    expected_row: int | None

    @property
    def document(self) -> int:
        """The document the divergence is about: the observed one, else the expected one (-1: foreign)."""
        if self.cls in ("skipped",) and self.expected is not None:
            return self.expected[0]
        if self.observed is not None:
            return self.observed[0]
        return self.expected[0] if self.expected is not None else -1

    def sentence(self) -> str:
        """The divergence in words."""
        where = f"step {self.step}, rank {self.rank}" + (f", micro-batch {self.micro} row {self.row}"
                                                         if self.row >= 0 else "")
        o, e = self.observed, self.expected
        d = self.document
        n_obs, n_exp = (o[2] if o else 0), (e[2] if e else 0)
        say = {
            "duplicated": f"document {d} consumed again (offsets {o[1]}..{o[1] + o[2]})" if o else "",
            "skipped": f"document {d} (replay row {self.expected_row}) never consumed",
            "reordered": f"document {o[0] if o else '-'} where the replay has document {e[0] if e else '-'}",
            "truncated": f"document {d} cut to {n_obs} of {n_exp} positions",
            "foreign": (f"{n_obs} positions of no corpus document" if o and o[0] < 0
                        else f"document {d}, which the replay never places"),
            "fully masked": f"document {d}: none of its {n_obs} positions reached the loss",
        }[self.cls]
        return f"{where}: {self.cls}: {say}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"class": self.cls, "step": self.step, "rank": self.rank, "micro": self.micro, "row": self.row,
                "document": self.document,
                "observed": None if self.observed is None else dict(zip(("doc", "start", "length"),
                                                                        self.observed, strict=True)),
                "expected": None if self.expected is None else dict(zip(("doc", "start", "length"),
                                                                        self.expected, strict=True)),
                "expected_row": self.expected_row, "sentence": self.sentence()}


@dataclass(frozen=True)
class SourceShare:
    """One data source: trained targets observed and replayed, and the declared share."""

    source: str
    documents: int
    positions: int
    targets: int
    expected_targets: int
    share: float
    declared: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"source": self.source, "documents": self.documents, "positions": self.positions,
                "targets": self.targets, "expected_targets": self.expected_targets, "share": self.share,
                "declared": self.declared,
                "difference": None if self.declared is None else self.share - self.declared}


def _sources(labels: SourceLabels, mixture: DeclaredMixture | None, placed: npt.NDArray[np.int64],
             trained: npt.NDArray[np.int64], expected: npt.NDArray[np.int64]) -> tuple[SourceShare, ...]:
    k = len(labels.names)
    codes = labels.codes.astype(np.int64)
    pos = np.bincount(codes, weights=placed, minlength=k).astype(np.int64)
    tgt = np.bincount(codes, weights=trained, minlength=k).astype(np.int64)
    exp = np.bincount(codes, weights=expected, minlength=k).astype(np.int64)
    docs = np.bincount(codes[placed > 0], minlength=k)
    total = int(tgt.sum())
    names = list(labels.names)
    if mixture is not None:
        names += [s for s in mixture.sources if s not in labels.names]
    out = []
    for name in names:
        i = labels.names.index(name) if name in labels.names else None

        def at(values: npt.NDArray[np.int64], i: int | None = i) -> int:
            return 0 if i is None else int(values[i])

        t = at(tgt)
        out.append(SourceShare(name, at(docs), at(pos), t, at(exp), t / total if total else 0.0,
                               None if mixture is None else mixture.alpha.get(name, 0.0)))
    return tuple(out)


@dataclass(frozen=True)
class Reconciliation:
    """What :func:`~packing_theory.training.reconcile` found (see the module doc).

    Attributes:
        policy: the packer replayed.
        schedule: how its rows were dealt.
        unit: the trainer rule's unit used for the replay's targets.
        records: ``(step, rank)`` records compared; ``differing`` of them differ from the replay.
        divergence: the first divergence, or ``None``.
        totals: rows, positions, padding, masked, targets, foreign positions and spans observed.
        documents: documents consumed; ``never_trained`` those of them with no target.
        trained_mismatch: documents whose trained targets differ from the replay's;
            ``first_mismatch`` the first of them ``(doc, observed, replayed)``.
        sources: per data source (when labels were given).
    """

    policy: str
    schedule: Schedule
    unit: str
    records: int
    differing: int
    divergence: Divergence | None
    totals: dict[str, int]
    documents: int
    never_trained: tuple[int, ...]
    trained_mismatch: int
    first_mismatch: tuple[int, int, int] | None
    trained_by_document: dict[int, int]
    sources: tuple[SourceShare, ...] | None
    mixture_name: str | None

    @classmethod
    def build(cls, *, policy: str, schedule: Schedule, records: int, differing: int,
              divergence: Divergence | None, totals: dict[str, int], placed: npt.NDArray[np.int64],
              trained: npt.NDArray[np.int64], expected_positions: npt.NDArray[np.int64],
              expected_targets: npt.NDArray[np.int64], unit: str, labels: SourceLabels | None,
              mixture: DeclaredMixture | None) -> Reconciliation:
        """Assemble the result from the walk's per-document arrays. O(documents)."""
        consumed = np.flatnonzero(placed > 0)
        never = np.flatnonzero((placed > 0) & (trained == 0))
        mismatch = np.flatnonzero(trained != expected_targets)
        first = None if mismatch.size == 0 else (int(mismatch[0]), int(trained[mismatch[0]]),
                                                 int(expected_targets[mismatch[0]]))
        sources = None if labels is None else _sources(labels, mixture, placed, trained, expected_targets)
        return cls(policy, schedule, unit, records, differing, divergence, dict(totals), int(consumed.size),
                   tuple(int(d) for d in never), int(mismatch.size), first,
                   {int(d): int(trained[d]) for d in consumed}, sources,
                   None if mixture is None else (mixture.name or "declared"))

    @property
    def reconciled(self) -> bool:
        """Every step equals the replay (no divergence)."""
        return self.divergence is None

    @property
    def exit_code(self) -> int:
        """0 reconciled, 1 a divergence."""
        return 0 if self.reconciled else 1

    def headline(self) -> str:
        """One sentence: the verdict, then what was trained."""
        t = self.totals
        trained = (f"{t['targets']:,} trained targets ({_pct(t['targets'], t['positions'])} of "
                   f"{t['positions']:,} positions) from {self.documents:,} documents")
        if self.divergence is None:
            return (f"every step equals the {self.policy} replay: {self.records:,} step records, {trained}; "
                    f"{len(self.never_trained):,} consumed documents never trained")
        share = _pct(self.differing, self.records)
        return (f"diverged from the {self.policy} replay at {self.divergence.sentence()}; "
                f"{self.differing:,} of {self.records:,} step records differ ({share}); {trained}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        first = None if self.first_mismatch is None else dict(
            zip(("doc", "observed", "replayed"), self.first_mismatch, strict=True))
        return {
            "kind": "training-reconciliation",
            "headline": self.headline(),
            "reconciled": self.reconciled,
            "policy": self.policy,
            "schedule": self.schedule.to_dict(),
            "target_unit": self.unit,
            "records": self.records,
            "differing_records": self.differing,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "totals": dict(self.totals),
            "documents": self.documents,
            "never_trained": {"count": len(self.never_trained),
                              "documents": list(self.never_trained[:LISTED])},
            "trained_vs_replay": {"documents_differing": self.trained_mismatch, "first": first},
            "sources": None if self.sources is None else [s.to_dict() for s in self.sources],
            "mixture": self.mixture_name,
        }

    def markdown(self) -> str:
        """The report as Markdown."""
        t = self.totals
        lines = ["# Training reconciliation", "", self.headline(), "",
                 f"- packer: `{self.policy}` (targets by the `{self.unit}` rule); schedule: "
                 f"{self.schedule.world_size} rank(s), {self.schedule.rows_per_step} row(s) per step, "
                 f"{self.schedule.deal}",
                 f"- step records: {self.records:,}; differing from the replay: {self.differing:,}",
                 f"- rows: {t['rows']:,}; positions: {t['positions']:,}; padding: {t['padding']:,} "
                 f"({_pct(t['padding'], t['positions'])}); masked labels: {t['masked']:,} "
                 f"({_pct(t['masked'], t['positions'])}); foreign positions: {t['foreign']:,}",
                 f"- documents consumed: {self.documents:,}; never trained: {len(self.never_trained):,}"]
        if self.never_trained:
            shown = ", ".join(map(str, self.never_trained[:20]))
            lines.append(f"  (first: {shown}{' ...' if len(self.never_trained) > 20 else ''})")
        if self.first_mismatch is not None:
            d, o, r = self.first_mismatch
            lines.append(f"- trained targets differ from the replay for {self.trained_mismatch:,} documents "
                         f"(first: document {d}, {o} observed, {r} replayed)")
        else:
            lines.append("- trained targets equal the replay's for every document")
        if self.divergence is not None:
            lines += ["", "## First divergence", "", self.divergence.sentence()]
        if self.sources:
            lines += ["", "## Sources", "", "| source | documents | trained targets | share | declared | "
                      "replayed targets |", "|---|---:|---:|---:|---:|---:|"]
            for s in self.sources:
                declared = "" if s.declared is None else f"{s.declared:.1%}"
                lines.append(f"| {s.source} | {s.documents:,} | {s.targets:,} | {s.share:.1%} | {declared} | "
                             f"{s.expected_targets:,} |")
        return "\n".join(lines) + "\n"
