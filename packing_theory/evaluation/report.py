"""The evaluation report: its JSON document with fingerprints, its sections and its plots.

:class:`EvaluationReport` wraps an :class:`~packing_theory.evaluation.pipeline.EvaluationRun`
as a :class:`~packing_theory.reporting.Report` (kind ``evaluate``): the answer
card holds the declared family of contrasts with their adjusted intervals;
then the population, the support statements, BPB by stratum and window kind,
the exploratory contrasts, where in the tail window a difference sits, the
whole-source census, the natural-context assay, the prefix ranking check and
the accounting. Imports: this package and :mod:`packing_theory.reporting`
(matplotlib, the ``plots`` extra, only when plotting).

The JSON document has ``"schema": "packing-theory/evaluate"`` and
``"version": 3``; its top-level keys are :data:`TOP_LEVEL_KEYS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..reporting.model import Attachment, Block, Column, Plot, PlotFile, Section, Table, Text
from ..reporting.publish import stage_report
from ..reporting.writer import ReportFiles, ReportWriter
from .bootstrap import ContrastResult
from .metrics import LN2
from .natural import natural_blocks
from .pipeline import EvaluationRun
from .plots import PLOT_FILES, plot_notes, write_plots
from .ranking import ranking_blocks

__all__ = ["PLOT_FILES", "REPORT_FILES", "SCHEMA", "SCHEMA_VERSION", "TOP_LEVEL_KEYS", "EvaluationReport",
           "evaluation_headline", "plot_notes", "report_dict", "write_json", "write_plots",
           "write_report_files"]

SCHEMA = "packing-theory/evaluate"
SCHEMA_VERSION = 3

TOP_LEVEL_KEYS: tuple[str, ...] = (
    "schema", "version", "generator", "run", "headline", "models", "baseline", "settings", "population",
    "windows", "fingerprints", "support", "summary", "comparison", "census", "natural", "ranking",
    "statements", "seconds",
)
"""Top-level keys of a version-3 evaluation report, in order (version 2 added ``run``, ``natural``
and ``ranking``; version 3 the plain-words ``headline``)."""

REPORT_FILES: tuple[str, ...] = ("evaluate.html", "evaluate.json", "evaluate.md", *PLOT_FILES)
"""Every file an evaluate report directory may hold."""


def report_dict(run: EvaluationRun, *, run_info: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The version-3 JSON document of ``run`` (keys :data:`TOP_LEVEL_KEYS`); ``run_info`` is its ``run``
    entry (:attr:`ReportWriter.run_info <packing_theory.reporting.ReportWriter.run_info>`)."""
    from .._version import __version__

    fps = {name: s.fingerprint.to_dict() for name, s in run.scores.items()}
    if run.census is not None:
        fps["census"] = run.census.fingerprint
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generator": {"name": "packing_theory", "version": __version__},
        "run": dict(run_info) if run_info is not None else None,
        "headline": evaluation_headline(run),
        "models": {name: run.model_info.get(name, {}) for name in run.models},
        "baseline": run.baseline,
        "settings": run.settings,
        "population": run.population.to_dict(),
        "windows": run.spec.to_dict(),
        "fingerprints": fps,
        "support": {name: s.to_dict() for name, s in run.support.items()},
        "summary": run.summary.to_dict(),
        "comparison": run.comparison.to_dict(),
        "census": None if run.census is None else run.census.to_dict(),
        "natural": None if run.natural is None else run.natural.to_dict(),
        "ranking": None if run.ranking is None else run.ranking.to_dict(),
        "statements": {"windows": run.summary.statement, "bootstrap": run.comparison.statement,
                       "census": None if run.census is None else run.census.statement,
                       "natural": None if run.natural is None else run.natural.statement,
                       "ranking": None if run.ranking is None else run.ranking.statement},
        "seconds": run.seconds,
    }


def write_json(run: EvaluationRun, path: str | os.PathLike[str]) -> Path:
    """Write :func:`report_dict` as indented JSON (no NaN) to one file; return the path.

    A plain single-file write (no run id, no lock): for a report directory use
    :func:`~packing_theory.reporting.write_report` with an :class:`EvaluationReport`.
    """
    out = Path(path)
    out.write_text(json.dumps(report_dict(run), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return out


def evaluation_headline(run: EvaluationRun) -> str:
    """The evaluation's first sentence: the models, the population and the declared family's outcome."""
    cmp = run.comparison
    excluded = [r for r in cmp.family if r.interval.lo > 0 or r.interval.hi < 0]
    others = [m for m in run.models if m != run.baseline] or list(run.models)
    return (f"{', '.join(others)} against {run.baseline} on {run.population.n_sources:,} sources: "
            f"{len(excluded)} of {len(cmp.family)} declared contrasts have an adjusted interval that "
            "excludes zero")


# --------------------------------------------------------------------------- the report


def _interval(r: ContrastResult) -> str:
    return f"[{r.interval.lo:+.5f}, {r.interval.hi:+.5f}]"


def _excludes_zero(r: ContrastResult) -> str:
    return "yes" if r.interval.lo > 0 or r.interval.hi < 0 else "no"


@dataclass(frozen=True, eq=False)
class EvaluationReport:
    """An evaluation run as a :class:`~packing_theory.reporting.Report` (kind ``evaluate``)."""

    run: EvaluationRun

    kind = "evaluate"

    @property
    def title(self) -> str:
        """``Evaluation: <models>``."""
        return f"Evaluation: {', '.join(self.run.models)}"

    def headline(self) -> str:
        """:func:`evaluation_headline`."""
        return evaluation_headline(self.run)

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """:func:`report_dict` (``run``: the run entry)."""
        return report_dict(self.run, run_info=run)

    def sections(self) -> Sequence[Section]:
        """The declared family first, then every part of the protocol."""
        return _sections(self.run)

    def plots(self) -> Sequence[PlotFile]:
        """``intervals.png`` and ``positions.png``, or the sentence saying why not."""
        notes = plot_notes(self.run)
        return [PlotFile(name, note=notes[name]) if name in notes else PlotFile(name, draw=self._drawer(name))
                for name in PLOT_FILES]

    def attachments(self) -> Sequence[Attachment]:
        """None."""
        return []

    def _drawer(self, name: str) -> Callable[[Path, Mapping[str, str]], None]:
        def draw(path: Path, metadata: Mapping[str, str]) -> None:
            written = write_plots(self.run, path.parent, metadata=metadata)
            assert any(p.name == name for p in written), name

        return draw


def _family(run: EvaluationRun) -> list[Block]:
    cmp = run.comparison
    blocks: list[Block] = [Text(f"The {cmp.describe_family()}, over {cmp.replicates:,} paired-source "
                                "bootstrap replicates.")]
    blocks += [Text(f"Dropped {d.what} {d.name}: {d.reason}") for d in cmp.dropped]
    if not cmp.family:
        return [*blocks, Text("No contrast was declared.")]
    cols = (Column("model"), Column("baseline"), Column("stratum", term="length stratum"),
            Column("sources", "count"), Column("prefix Δ", "delta", "contrast"), Column("tail Δ", "delta"),
            Column("tail − prefix", "delta"), Column("adjusted interval"), Column("excludes zero"))
    rows = []
    for r in cmp.family:
        c = r.contrast
        prefix = None if c.minus is None else r.parts[1]
        tail = r.estimate if c.minus is None else r.parts[0]
        both = None if c.minus is None else r.estimate
        rows.append((c.model, r.baseline, c.stratum, r.sources, prefix, tail, both, _interval(r),
                     _excludes_zero(r)))
    return [*blocks, Table("The declared family of contrasts (ΔBPB, model − baseline)", cols, tuple(rows),
                           key="family")]


def _population(run: EvaluationRun) -> Section:
    pop = run.population
    cols = (Column("stratum", term="length stratum"), Column("offered", "count"), Column("eligible", "count"),
            Column("sampled", "count"), Column("census stratum"))
    rows = tuple((lab, pop.offered[i], pop.eligible[i], pop.sampled[i], "yes" if lab in pop.census_strata
                  else "") for i, lab in enumerate(pop.labels))
    blocks: list[Block] = [
        Text(f"Windows: {run.spec.describe()}. Population: {pop.n_sources:,} sources sampled from "
             f"{pop.candidates:,} candidates (at most {pop.per_stratum} per stratum, seed {pop.seed}); "
             f"{sum(pop.excluded_training):,} exact duplicates of training data and "
             f"{sum(pop.excluded_internal):,} internal repeats excluded ({pop.hash_kind} hashes)."),
        Table("Sources by stratum", cols, rows, key="population"),
    ]
    blocks += [Text(f"{name}: {sup.statement}") for name, sup in run.support.items()]
    return Section("population", "Population and support", tuple(blocks))


def _bpb(run: EvaluationRun) -> Section:
    pop = run.population
    cols = (Column("model"), Column("kind"), *(Column(lab, "decimal", "BPB") for lab in pop.labels))
    rows = []
    for name in run.models:
        for kind in run.summary.kinds:
            vals: list[Any] = []
            for lab in pop.labels:
                try:
                    vals.append(run.summary.cell(name, kind, lab).bpb)
                except KeyError:
                    vals.append(None)
            rows.append((name, kind, *vals))
    return Section("bpb", "BPB by stratum and window kind", (
        Text(run.summary.statement), Table("Bits per byte", cols, tuple(rows), key="bpb"),
        Plot("positions.png", "Where in the tail window the difference sits")))


def _exploratory(run: EvaluationRun) -> Section:
    cols = (Column("contrast"), Column("sources", "count"), Column("estimate", "delta", "contrast"),
            Column("nominal interval"), Column("census stratum"))
    rows = tuple((r.contrast.name, r.sources, r.estimate, _interval(r), "yes" if r.census_stratum else "")
                 for r in run.comparison.exploratory)
    return Section("exploratory", "Exploratory contrasts (nominal, unadjusted intervals)",
                   (Table("Exploratory contrasts", cols, rows, key="exploratory"),
                    Plot("intervals.png", "Every contrast with its interval")), collapsed=True)


def _positions(run: EvaluationRun) -> Section | None:
    pop = run.population
    base = run.scores[run.baseline]
    if "tail" not in base.kinds:
        return None
    bins = list(run.summary.bins)
    cols = (Column("model"), Column("stratum"), Column("full Δ", "delta"),
            *(Column(b, "delta") for b in bins))
    strat = pop.strata[base.sources]
    rows = []
    for name in run.models:
        if name == run.baseline:
            continue
        s = run.scores[name]
        for k, lab in enumerate(pop.labels):
            m = s.mask("tail") & (strat == k)
            if not m.any():
                continue
            mb, ma = base.metrics(m), s.metrics(m)
            if not mb.bytes:
                continue
            contrib = [(a - b) / (LN2 * mb.bytes) for a, b in zip(ma.bin_nll, mb.bin_nll, strict=True)]
            rows.append((name, lab, (ma.bpb or 0.0) - (mb.bpb or 0.0), *contrib))
    return Section("positions", "Where in the window the difference sits (tail windows)", (
        Text("Each bin's contribution is its NLL difference divided by ln 2 × all bytes of the stratum's "
             "tail windows, so the contributions add up to the full ΔBPB."),
        Table("Tail-window ΔBPB by position bin", cols, tuple(rows), key="positions")), collapsed=True)


def _census(run: EvaluationRun) -> Section | None:
    cs = run.census
    if cs is None:
        return None
    cols = (Column("model"), Column("sources", "count"), Column("targets", "count"), Column("bytes", "count"),
            Column("BPB", "decimal", "BPB"), Column("CE", "decimal"), Column("PPL", "number"))
    rows = tuple((m.model, m.aggregate.sources, m.aggregate.targets, m.aggregate.bytes, m.aggregate.bpb,
                  m.aggregate.ce, m.aggregate.perplexity) for m in cs.models)
    blocks: list[Block] = [Text(cs.statement), Table("Whole-source census", cols, rows, key="census")]
    if cs.contrasts:
        scols = (Column("contrast"), Column("ΔBPB", "delta"),
                 *(Column(f"from {lab}", "delta") for lab in cs.labels))
        blocks.append(Table("ΔBPB by stratum of origin", scols, tuple(
            (f"{cc.model} − {cc.baseline}", cc.delta_bpb, *cc.stratum_contributions) for cc in cs.contrasts),
            key="census-strata"))
        bcols = (Column("contrast"), Column("ΔBPB", "delta"),
                 *(Column(f"positions {b}", "delta") for b in cs.bins))
        blocks.append(Table("ΔBPB by position in the source (the regions add up to the ΔBPB)", bcols, tuple(
            (f"{cc.model} − {cc.baseline}", cc.delta_bpb, *cc.bin_contributions) for cc in cs.contrasts),
            key="census-positions"))
    return Section("census", "Whole-source census", tuple(blocks), collapsed=True)


def _accounting(run: EvaluationRun) -> Section:
    ok = run.accounting_ok
    blocks: list[Block] = [Text("Sources, targets and bytes reconcile exactly for every model and window "
                                f"kind: {'yes' if ok else 'NO'}.")]
    cols = (Column("model"), Column("targets sha256"), Column("padding check max |Δ|", "number"))
    blocks.append(Table("Fingerprints", cols, tuple((name, s.fingerprint.targets_sha256, s.padding_max_diff)
                                                    for name, s in run.scores.items()), key="fingerprints"))
    blocks.append(Text(run.comparison.statement))
    return Section("accounting", "Accounting, fingerprints and what the intervals mean", tuple(blocks),
                   collapsed=True)


def _sections(run: EvaluationRun) -> list[Section]:
    out = [Section("answer", "The answer", tuple(_family(run)), answer=True), _population(run), _bpb(run),
           _exploratory(run)]
    for extra in (_positions(run), _census(run)):
        if extra is not None:
            out.append(extra)
    if run.natural is not None:
        out.append(natural_blocks(run.natural))
    if run.ranking is not None:
        out.append(ranking_blocks(run.ranking))
    out.append(_accounting(run))
    return out


def write_report_files(writer: ReportWriter, run: EvaluationRun, *, plots: bool = True) -> ReportFiles:
    """Stage the evaluation's report in an open ``writer`` (the caller commits): :func:`stage_report` of
    an :class:`EvaluationReport`."""
    return stage_report(writer, EvaluationReport(run), plots=plots)

