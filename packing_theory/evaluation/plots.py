"""The evaluation's plots: every contrast with its interval, and where in the tail window a difference sits.

matplotlib (the ``plots`` extra) is imported only when drawing. A plot with
nothing to show is not drawn: :func:`plot_notes` gives the sentence the report
prints instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..reporting.plotting import PALETTE, pyplot, save_figure
from .metrics import LN2
from .pipeline import EvaluationRun

__all__ = ["PLOT_FILES", "plot_notes", "write_plots"]

PLOT_FILES: tuple[str, ...] = ("intervals.png", "positions.png")
"""The PNG files :func:`write_plots` writes."""


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
