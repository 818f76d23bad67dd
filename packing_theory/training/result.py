"""The result of a reconciliation: the verdict, the first divergence, per-document and per-source figures.

:class:`Reconciliation` is a :class:`~packing_theory.reporting.Report` (kind
``reconcile``): :meth:`~Reconciliation.headline` (one sentence, each share
beside its own quantity), :meth:`~Reconciliation.to_dict` (JSON),
:meth:`~Reconciliation.sections` (what a person reads; rendered by
:meth:`~Reconciliation.markdown` and the HTML page), written as one unit by
:func:`~packing_theory.reporting.write_report`. Its
:attr:`~Reconciliation.exit_code` is the command line's: 0 every step equals
the replay, 1 a divergence.

Per data source the ledger's consumption is set against the declared mixture
by the audit's one rule (:func:`~packing_theory.audit.sources.realised_mixture`):
the share of documents consumed against α, the share of tokens that reached
the trainer against the token targets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.declared import DeclaredMixture
from ..audit.sources import RealisedMixture, SourceAccount, realised_mixture
from ..corpus.labels import SourceLabels
from ..reporting.markdown import TablesOnly
from ..reporting.model import Amount, Column, Section, Table, Text
from .schedule import Schedule

__all__ = ["CLASSES", "LISTED", "Divergence", "Reconciliation", "SourceConsumption"]

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
            "reordered": (f"document {o[0] if o else 'none'} where the replay has "
                          + (f"document {e[0]}" if e else "no document")),
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
class SourceConsumption:
    """One data source in the ledger: documents consumed, positions that reached the trainer, targets that
    reached the loss, and the targets the replay prescribes for the same steps."""

    source: str
    documents: int
    positions: int
    targets: int
    expected_targets: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"source": self.source, "documents": self.documents, "positions": self.positions,
                "targets": self.targets, "expected_targets": self.expected_targets}


def _sources(labels: SourceLabels, mixture: DeclaredMixture | None, placed: npt.NDArray[np.int64],
             trained: npt.NDArray[np.int64], expected: npt.NDArray[np.int64]
             ) -> tuple[tuple[SourceConsumption, ...], RealisedMixture]:
    k = len(labels.names)
    codes = labels.codes.astype(np.int64)
    pos = np.bincount(codes, weights=placed, minlength=k).astype(np.int64)
    tgt = np.bincount(codes, weights=trained, minlength=k).astype(np.int64)
    exp = np.bincount(codes, weights=expected, minlength=k).astype(np.int64)
    docs = np.bincount(codes[placed > 0], minlength=k)
    labelled = np.bincount(codes, minlength=k)
    rows = tuple(SourceConsumption(name, int(docs[i]), int(pos[i]), int(tgt[i]), int(exp[i]))
                 for i, name in enumerate(labels.names))
    # what reached the trainer, as the audit's accounts: a document consumed is a document started, its
    # positions are tokens in rows the trainer received (the ledger knows nothing of what it did not see)
    accounts = [SourceAccount(r.source, int(labelled[i]), 0, r.documents, r.positions, r.documents, 0, 0, 0,
                              r.positions, r.positions, 0, 0, 0) for i, r in enumerate(rows)]
    return rows, realised_mixture(accounts, mixture)


@dataclass(frozen=True)
class Reconciliation(TablesOnly):
    """What :func:`~packing_theory.training.reconcile` found, as a report (see the module doc).

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
        trained_by_document: per consumed document, its trained targets.
        sources: per data source (when labels were given); ``mixture`` the realised mixture in both
            readings, against the declaration when one was given.
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
    sources: tuple[SourceConsumption, ...] | None
    mixture: RealisedMixture | None

    kind = "reconcile"
    title = "Training reconciliation"

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
        rows, mix = (None, None) if labels is None else _sources(labels, mixture, placed, trained,
                                                                 expected_targets)
        return cls(policy, schedule, unit, records, differing, divergence, dict(totals), int(consumed.size),
                   tuple(int(d) for d in never), int(mismatch.size), first,
                   {int(d): int(trained[d]) for d in consumed}, rows, mix)

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

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The JSON document (``run``: the run entry of a written report)."""
        from .._version import __version__

        first = None if self.first_mismatch is None else dict(
            zip(("doc", "observed", "replayed"), self.first_mismatch, strict=True))
        return {
            "kind": self.kind,
            "version": 1,
            "generator": {"name": "packing_theory", "version": __version__},
            "run": None if run is None else dict(run),
            "headline": self.headline(),
            "reconciled": self.reconciled,
            "settings": {"policy": self.policy, "schedule": self.schedule.to_dict(),
                         "target_unit": self.unit},
            "records": self.records,
            "differing_records": self.differing,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "totals": dict(self.totals),
            "documents": self.documents,
            "never_trained": {"count": len(self.never_trained),
                              "documents": list(self.never_trained[:LISTED])},
            "trained_vs_replay": {"documents_differing": self.trained_mismatch, "first": first},
            "sources": None if self.sources is None else [s.to_dict() for s in self.sources],
            "mixture": None if self.mixture is None else self.mixture.to_dict(),
        }

    def sections(self) -> Sequence[Section]:
        """The verdict first, then the first divergence, what was consumed, and the sources."""
        t = self.totals
        out = [Section("answer", "Verdict", (Text(self.headline()),), answer=True)]
        if self.divergence is not None:
            d = self.divergence
            out.append(Section("divergence", "First divergence", (
                Text(d.sentence()),
                Table("where", (Column("step", "count"), Column("rank", "count"),
                                Column("micro-batch", "count"), Column("row", "count"), Column("class"),
                                Column("observed"), Column("replay")),
                      ((d.step, d.rank, d.micro, d.row, d.cls, str(d.observed), str(d.expected)),),
                      key="divergence"))))
        pos = t["positions"]

        def part(key: str) -> Amount:
            return Amount(t[key], t[key] / pos if pos else None)

        out.append(Section("consumed", "What the trainer consumed", (
            Table("totals", (Column("quantity"), Column("positions", "tokens")), (
                ("positions", pos), ("trained targets", part("targets")), ("masked labels", part("masked")),
                ("padding", part("padding")), ("foreign positions", part("foreign"))), key="totals"),
            Text(f"{self.records:,} step records ({self.schedule.world_size} rank(s), "
                 f"{self.schedule.rows_per_step} row(s) per step, {self.schedule.deal}); {self.differing:,} "
                 f"differ from the {self.policy} replay. {self.documents:,} documents consumed, "
                 f"{len(self.never_trained):,} of them never trained"
                 + (f" (first: {', '.join(map(str, self.never_trained[:20]))})" if self.never_trained else "")
                 + "."),
            Text("Trained targets equal the replay's for every document (the "
                 f"{self.unit} rule)." if self.first_mismatch is None else
                 f"Trained targets differ from the replay's (the {self.unit} rule) for "
                 f"{self.trained_mismatch:,} documents; first: document {self.first_mismatch[0]}, "
                 f"{self.first_mismatch[1]:,} observed, {self.first_mismatch[2]:,} replayed."))))
        if self.sources is not None:
            blocks: list[Any] = [Table("per source", (
                Column("source"), Column("documents", "count"), Column("positions", "tokens"),
                Column("trained targets", "tokens"), Column("replayed targets", "tokens")),
                tuple((s.source, s.documents, s.positions, s.targets, s.expected_targets)
                      for s in self.sources), key="sources")]
            if self.mixture is not None:
                blocks.append(Text(self.mixture.headline()))
                for r in self.mixture.readings:
                    blocks.append(Table(f"{r.quantity}: share per source", (
                        Column("source"), Column(r.quantity, "count"), Column("share", "share"),
                        Column("declared", "share")),
                        tuple((x.source, x.count, x.share, x.declared) for x in r.shares), key=r.reading))
            out.append(Section("sources", "Sources", tuple(blocks)))
        return out



