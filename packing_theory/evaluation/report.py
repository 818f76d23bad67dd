"""Evaluation reports: versioned JSON with fingerprints, Markdown tables, interval and position plots.

Job: render an :class:`~packing_theory.evaluation.pipeline.EvaluationRun`;
:func:`write_report_files` stages the report in an open
:class:`~packing_theory.reporting.ReportWriter` (locked, swapped in as one
unit, like every report). Imports: this package and the report
infrastructure (:mod:`packing_theory.reporting`; matplotlib, the ``plots``
extra, only when plotting).

The JSON document has ``"schema": "packing-theory/evaluate"`` and
``"version": 3``; its top-level keys are :data:`TOP_LEVEL_KEYS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..reporting.markdown import run_line
from ..reporting.plotting import PALETTE, pyplot, save_figure
from ..reporting.writer import ReportFiles, ReportWriter
from .bootstrap import ContrastResult
from .metrics import LN2
from .natural import natural_section
from .pipeline import EvaluationRun
from .ranking import ranking_section

__all__ = ["PLOT_FILES", "PLOT_SECTIONS", "REPORT_FILES", "SCHEMA", "SCHEMA_VERSION", "TOP_LEVEL_KEYS",
           "evaluation_headline", "plot_notes", "render_markdown", "report_dict", "write_json", "write_plots",
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

PLOT_FILES: tuple[str, ...] = ("intervals.png", "positions.png")
"""The PNG files :func:`write_plots` writes."""

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
    :func:`write_report_files` with a :class:`~packing_theory.reporting.ReportWriter`.
    """
    out = Path(path)
    out.write_text(json.dumps(report_dict(run), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- Markdown


def _f(v: float | None, digits: int = 4) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _s(v: float | None, digits: int = 5) -> str:
    return "—" if v is None else f"{v:+.{digits}f}"


def _interval(r: ContrastResult) -> str:
    return f"[{r.interval.lo:+.5f}, {r.interval.hi:+.5f}]"


def render_markdown(run: EvaluationRun, *, plots: list[str] | None = None,
                    run_info: Mapping[str, str] | None = None, notes: Mapping[str, str] | None = None) -> str:
    """A readable report: population, support, BPB tables, the declared family, positions, census.

    With ``run_info`` the last line names the run and the config hash.
    """
    pop = run.population
    cmp = run.comparison
    lines: list[str] = [
        evaluation_headline(run), "",
        f"# Evaluation: {', '.join(run.models)} (baseline {run.baseline})", "",
        f"Windows: {run.spec.describe()}. Population: {pop.n_sources:,} sources sampled from "
        f"{pop.candidates:,} candidates (at most {pop.per_stratum} per stratum, seed {pop.seed}); "
        f"{sum(pop.excluded_training):,} exact duplicates of training data and "
        f"{sum(pop.excluded_internal):,} internal repeats excluded ({pop.hash_kind} hashes).", "",
        "| stratum | offered | eligible | sampled | census stratum |", "|---|---:|---:|---:|---|",
    ]
    for i, lab in enumerate(pop.labels):
        lines.append(f"| {lab} | {pop.offered[i]:,} | {pop.eligible[i]:,} | {pop.sampled[i]:,} | "
                     f"{'yes' if lab in pop.census_strata else ''} |")
    lines += ["", "## Support", ""]
    for name, sup in run.support.items():
        lines.append(f"- **{name}**: {sup.statement}")
    lines += ["", "## BPB by stratum and window kind", "", run.summary.statement, ""]
    head = "| model | kind | " + " | ".join(pop.labels) + " |"
    lines += [head, "|---|---|" + "---:|" * len(pop.labels)]
    for name in run.models:
        for kind in run.summary.kinds:
            vals = []
            for lab in pop.labels:
                try:
                    vals.append(_f(run.summary.cell(name, kind, lab).bpb))
                except KeyError:
                    vals.append("")
            lines.append(f"| {name} | {kind} | " + " | ".join(vals) + " |")
    lines += ["", f"## Declared family ({cmp.family_size} contrasts, {cmp.replicates:,} paired-source "
              f"bootstrap replicates, Bonferroni-adjusted {100 * cmp.adjusted_level:.3f}% intervals)", "",
              f"Family: {cmp.describe_family()}.", ""]
    lines += [f"- dropped {d.what} {d.name}: {d.reason}" for d in cmp.dropped] + ([""] if cmp.dropped else [])
    if cmp.family:
        lines += ["| model | baseline | stratum | sources | prefix Δ | tail Δ | tail − prefix | interval |",
                  "|---|---|---|---:|---:|---:|---:|---|"]
        for r in cmp.family:
            c = r.contrast
            if c.minus is None:
                lines.append(f"| {c.model} | {r.baseline} | {c.stratum} | {r.sources} | | "
                             f"{_s(r.estimate)} | | {_interval(r)} |")
            else:
                lines.append(f"| {c.model} | {r.baseline} | {c.stratum} | {r.sources} | {_s(r.parts[1])} | "
                             f"{_s(r.parts[0])} | "
                             f"{_s(r.estimate)} | {_interval(r)} |")
    else:
        lines.append("No contrast was declared.")
    lines += ["", "## Exploratory contrasts (nominal, unadjusted intervals)", "",
              "| contrast | sources | estimate | interval | census stratum |", "|---|---:|---:|---|---|"]
    for r in cmp.exploratory:
        lines.append(f"| {r.contrast.name} | {r.sources} | {_s(r.estimate)} | {_interval(r)} | "
                     f"{'yes' if r.census_stratum else ''} |")
    lines += _positions_table(run)
    if run.census is not None:
        cs = run.census
        lines += ["", "## Whole-source census", "", cs.statement, "",
                  "| model | sources | targets | bytes | BPB | CE | PPL |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for m in cs.models:
            a = m.aggregate
            lines.append(f"| {m.model} | {a.sources:,} | {a.targets:,} | {a.bytes:,} | {_f(a.bpb, 6)} | "
                         f"{_f(a.ce, 6)} | {_f(a.perplexity, 4)} |")
        if cs.contrasts:
            lines += ["", "| contrast | ΔBPB | " + " | ".join(f"from {lab}" for lab in cs.labels) + " |",
                      "|---|---:|" + "---:|" * len(cs.labels)]
            for cc in cs.contrasts:
                lines.append(f"| {cc.model} − {cc.baseline} | {_s(cc.delta_bpb, 6)} | "
                             + " | ".join(_s(v, 6) for v in cc.stratum_contributions) + " |")
            lines += ["", "Regions are positions in the source (each target's source position), and their "
                      "contributions add up to the ΔBPB:", "",
                      "| contrast | ΔBPB | " + " | ".join(f"positions {b}" for b in cs.bins) + " |",
                      "|---|---:|" + "---:|" * len(cs.bins)]
            for cc in cs.contrasts:
                lines.append(f"| {cc.model} − {cc.baseline} | {_s(cc.delta_bpb, 6)} | "
                             + " | ".join(_s(v, 6) for v in cc.bin_contributions) + " |")
    if run.natural is not None:
        lines += natural_section(run.natural)
    if run.ranking is not None:
        lines += ranking_section(run.ranking)
    ok = run.accounting_ok
    lines += ["", "## Accounting and fingerprints", "",
              f"Sources, targets and bytes reconcile exactly for every model and window kind: "
              f"**{'yes' if ok else 'NO'}**.", ""]
    for name, s in run.scores.items():
        lines.append(f"- {name}: targets sha256 `{s.fingerprint.targets_sha256}`, padding check "
                     f"max |Δ| = {s.padding_max_diff}")
    lines += ["", "## What the intervals mean", "", cmp.statement, ""]
    if plots:
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    lines += [f"Not drawn: {name}: {why}" for name, why in (notes or {}).items()] + ([""] if notes else [])
    lines += [f"Wall time: {run.seconds.get('total', sum(run.seconds.values())):.1f} s.", ""]
    if run_info is not None:
        lines += [run_line(run_info), ""]
    return "\n".join(lines)


def _positions_table(run: EvaluationRun) -> list[str]:
    """Tail-window ΔBPB against the baseline split into position-bin contributions (seed 000 §5.5)."""
    pop = run.population
    out = ["", "## Where in the window the difference sits (tail windows)", "",
           "Each bin's contribution is its NLL difference divided by ln 2 × all bytes of the stratum's tail "
           "windows, so the contributions add up to the full ΔBPB.", ""]
    base = run.scores[run.baseline]
    if "tail" not in base.kinds:
        return []
    bins = list(run.summary.bins)
    out += ["| model | stratum | full Δ | " + " | ".join(bins) + " |", "|---|---|---:|" + "---:|" * len(bins)]
    strat = pop.strata[base.sources]
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
            full = (ma.bpb or 0.0) - (mb.bpb or 0.0)
            out.append(f"| {name} | {lab} | {_s(full)} | " + " | ".join(_s(v) for v in contrib) + " |")
    return out


# --------------------------------------------------------------------------- plots


def write_plots(run: EvaluationRun, outdir: str | os.PathLike[str], *,
                metadata: Mapping[str, str] | None = None) -> list[Path]:
    """Write ``intervals.png`` (every contrast with its interval) and ``positions.png``; return their paths.

    A plot with a :func:`plot_notes` sentence is not written.

    ``metadata`` becomes PNG text chunks (the run id and config hash of a report).

    Raises:
        MissingDependency: matplotlib is not installed (the message names the extra).
    """
    plt = pyplot()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    notes = plot_notes(run)
    paths = []
    if PLOT_FILES[0] not in notes:
        paths.append(_intervals(plt, run, out / PLOT_FILES[0], metadata))
    if PLOT_FILES[1] not in notes:
        paths.append(_positions(plt, run, out / PLOT_FILES[1], metadata))
    return paths


def _tail_labels(run: EvaluationRun) -> list[str]:
    base = run.scores[run.baseline]
    if "tail" not in base.kinds:
        return []
    strat = run.population.strata[base.sources]
    return [lab for k, lab in enumerate(run.population.labels) if (base.mask("tail") & (strat == k)).any()]


def plot_notes(run: EvaluationRun) -> dict[str, str]:
    """For each plot of :data:`PLOT_FILES` with nothing to show, the sentence saying why."""
    notes: dict[str, str] = {}
    if not (run.comparison.family or run.comparison.exploratory):
        notes[PLOT_FILES[0]] = "no contrast was computed, so there is no interval to plot."
    if not _tail_labels(run) or len(run.models) < 2:
        notes[PLOT_FILES[1]] = ("no tail windows were scored (or only the baseline model), so there is no "
                                "position-bin contribution to plot.")
    return notes


def _intervals(plt: Any, run: EvaluationRun, path: Path, metadata: Mapping[str, str] | None) -> Path:
    cmp = run.comparison
    rows = list(cmp.family) + list(cmp.exploratory)
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.28 * len(rows) + 1)))
    for y, r in enumerate(rows):
        color = PALETTE[3] if r.family else PALETTE[0]
        ax.plot([r.interval.lo, r.interval.hi], [y, y], color=color, lw=2)
        ax.plot([r.estimate], [y], "o", color=color, ms=4)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [r.contrast.name for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ΔBPB, model − baseline (red: declared family, adjusted; blue: exploratory, nominal)")
    ax.set_title("Paired-source bootstrap intervals")
    save_figure(fig, path, metadata=metadata, dpi=110)
    return path


def _positions(plt: Any, run: EvaluationRun, path: Path, metadata: Mapping[str, str] | None) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4))
    base = run.scores[run.baseline]
    strat = run.population.strata[base.sources]
    labels = _tail_labels(run)
    others = [m for m in run.models if m != run.baseline]
    width = 0.8 / max(1, len(others))
    bins = list(run.summary.bins)
    for i, name in enumerate(others):
        s = run.scores[name]
        bottom_pos = [0.0] * len(labels)
        bottom_neg = [0.0] * len(labels)
        for j, b in enumerate(bins):
            vals = []
            for lab in labels:
                m = s.mask("tail") & (strat == run.population.stratum_of(lab))
                mb, ma = base.metrics(m), s.metrics(m)
                vals.append((ma.bin_nll[j] - mb.bin_nll[j]) / (LN2 * mb.bytes) if mb.bytes else 0.0)
            bottoms = [bp if v >= 0 else bn for v, bp, bn in zip(vals, bottom_pos, bottom_neg, strict=True)]
            ax.bar([x + i * width for x in range(len(labels))], vals, width, bottom=bottoms,
                   label=f"{name} {b}", color=PALETTE[j % len(PALETTE)], alpha=0.55 + 0.45 * (i % 2))
            bottom_pos = [bp + max(v, 0.0) for bp, v in zip(bottom_pos, vals, strict=True)]
            bottom_neg = [bn + min(v, 0.0) for bn, v in zip(bottom_neg, vals, strict=True)]
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks([x + width * (len(others) - 1) / 2 for x in range(len(labels))], labels, rotation=20)
    ax.set_ylabel("contribution to tail ΔBPB")
    ax.set_title("Tail windows: position-bin contributions to ΔBPB against the baseline")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(fig, path, metadata=metadata, dpi=110)
    return path


PLOT_SECTIONS: dict[str, str] = {"intervals.png": "comparison", "positions.png": "summary"}
"""The ``evaluate.json`` entry each plot illustrates (the HTML page shows the plot there)."""


def evaluation_headline(run: EvaluationRun) -> str:
    """The evaluation's first sentence: the models, the population and the declared family's outcome."""
    cmp = run.comparison
    excluded = [r for r in cmp.family if r.interval.lo > 0 or r.interval.hi < 0]
    others = [m for m in run.models if m != run.baseline] or list(run.models)
    return (f"{', '.join(others)} against {run.baseline} on {run.population.n_sources:,} sources: "
            f"{len(excluded)} of {len(cmp.family)} declared contrasts have an adjusted interval that "
            "excludes zero")


def write_report_files(writer: ReportWriter, run: EvaluationRun, *, plots: bool = True) -> ReportFiles:
    """Stage ``evaluate.html``, ``evaluate.json``, ``evaluate.md`` and (with ``plots``) the PNGs in an open
    ``writer``.

    The caller commits. Every file carries the writer's run id.
    """
    from ..reporting.html import write_html

    info = writer.run_info
    pngs: tuple[Path, ...] = ()
    if plots:
        pngs = tuple(write_plots(run, writer.path(PLOT_FILES[0]).parent, metadata=writer.png_metadata))
    doc = report_dict(run, run_info=info)
    j = writer.write_json("evaluate.json", doc)
    notes = plot_notes(run) if plots else {}
    md = writer.write_text("evaluate.md", render_markdown(run, plots=[p.name for p in pngs], run_info=info,
                                                          notes=notes))
    shown = [(n, notes.get(n)) for n in PLOT_FILES if n in notes or any(p.name == n for p in pngs)]
    page = write_html(writer, "evaluate.html", doc, title=f"Evaluation: {', '.join(run.models)}",
                      headline=evaluation_headline(run), plots=shown, sections=PLOT_SECTIONS)
    return ReportFiles(j, md, pngs, page)
