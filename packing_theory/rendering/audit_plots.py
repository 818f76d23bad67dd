"""PNG plots of an audit (matplotlib, the ``plots`` extra, imported only when plotting).

Every plot either shows data or is not drawn: :func:`plot_notes` says, for
each plot with nothing to show, the sentence the Markdown and the HTML page
print instead (an empty frame is never written). Colours come from the
colour-blind-safe :data:`~packing_theory.reporting.plotting.PALETTE`; legends
sit outside the axes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..orchestration.audit import AuditResult
from ..reporting.plotting import color, pyplot, save_figure

__all__ = ["PLOT_FILES", "PLOT_SECTIONS", "plot_notes", "write_plots"]

PLOT_FILES: tuple[str, ...] = (
    "retention_by_stratum.png", "exposure_profile.png", "startup_delay.png", "buffered_mass.png",
)
"""The PNG files :func:`write_plots` may write (those without a :func:`plot_notes` sentence)."""

PLOT_SECTIONS: dict[str, str] = {
    "retention_by_stratum.png": "strata", "exposure_profile.png": "policies", "startup_delay.png": "startup",
    "buffered_mass.png": "policies",
}
"""The ``audit.json`` entry each plot illustrates (the HTML page shows the plot there)."""


def plot_notes(result: AuditResult) -> dict[str, str]:
    """For each plot of :data:`PLOT_FILES` with nothing to show, the sentence saying why.

    O(policies × (strata + series)).
    """
    aggs = list(result.policies)
    notes: dict[str, str] = {}
    if not any(s.retention is not None for a in aggs for s in a.strata):
        notes["retention_by_stratum.png"] = "no document arrived, so no stratum has a retention to plot."
    if not any(y is not None for a in aggs for s in range(len(a.exposure.labels))
               for y in a.exposure.fraction(s)):
        notes["exposure_profile.png"] = "no document arrived, so there is no exposure profile to plot."
    spreads = {s.policy: s for s in result.startup}
    started = any(a.first_over_capacity_target is not None for a in aggs) or any(
        d is not None for s in spreads.values() for d in s.delays)
    if not started:
        longest = max((a.capacity for a in aggs), default=0)
        long_docs = result.corpus.over_capacity_documents
        why = (f"the corpus has no document longer than R = {longest:,}"
               if not long_docs else
               f"none of the corpus's {long_docs:,} documents longer than R = {longest:,} started before "
               "the run ended (in the given order or any permutation): see the never-started counts")
        notes["startup_delay.png"] = f"no startup delay to plot: {why}."
    if all(len(a.series) < 2 for a in aggs):
        notes["buffered_mass.png"] = ("the replay emitted fewer than two rows, so the buffered mass has no "
                                      "curve to draw.")
    return notes


def write_plots(result: AuditResult, outdir: str | os.PathLike[str], *,
                metadata: Mapping[str, str] | None = None) -> list[Path]:
    """Write the PNGs of :data:`PLOT_FILES` that have data into ``outdir``; return their paths.

    A plot with a :func:`plot_notes` sentence is not written. ``metadata``
    becomes PNG text chunks (the run id and config hash of a report).

    Raises:
        MissingDependency: matplotlib is not installed (the message names the extra).
    """
    plt = pyplot()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    notes = plot_notes(result)
    paths: list[Path] = []
    for name, draw in zip(PLOT_FILES, (_retention, _exposure, _startup, _buffered), strict=True):
        if name in notes:
            continue
        paths.append(out / name)
        save_figure(draw(plt, result), paths[-1], metadata=metadata, dpi=100)
    return paths


def _outside_legend(ax: Any, **kw: Any) -> None:
    """A legend to the right of the axes: it never covers data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8, **kw)


def _retention(plt: Any, result: AuditResult) -> Any:
    aggs = list(result.policies)
    labels = list(aggs[0].exposure.labels)
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(aggs)
    for i, a in enumerate(aggs):
        vals = [s.retention if s.retention is not None else 0.0 for s in a.strata]
        ax.bar([x + i * width for x in range(len(labels))], vals, width, label=a.policy, color=color(i))
    ax.set_xticks([x + width * (len(aggs) - 1) / 2 for x in range(len(labels))], labels, rotation=30)
    ax.set_ylabel("emitted / arrived tokens")
    ax.set_xlabel("original document length, BOS included (tokens)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Share of each length stratum's tokens that was trained on")
    _outside_legend(ax, title="packer")
    return fig


def _exposure(plt: Any, result: AuditResult) -> Any:
    aggs = list(result.policies)
    labels = list(aggs[0].exposure.labels)
    fig, axes = plt.subplots(1, len(aggs), figsize=(3.6 * len(aggs) + 1.6, 3.8), squeeze=False, sharey=True)
    for ax, a in zip(axes[0], aggs, strict=True):
        nb = a.exposure.bins
        xs = [(k + 0.5) / nb for k in range(nb)]
        for s, lab in enumerate(labels):
            ys = a.exposure.fraction(s)
            if all(y is None for y in ys):
                continue
            ax.plot(xs, [float("nan") if y is None else y for y in ys], label=lab, color=color(s),
                    linestyle="-" if s < 8 else "--")
        ax.set_title(a.policy)
        ax.set_xlabel("relative position in the document")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("share of positions trained on")
    _outside_legend(axes[0][-1], title="length")
    fig.suptitle("Which positions of each length stratum were trained on (a falling line: prefix bias)")
    return fig


def _startup(plt: Any, result: AuditResult) -> Any:
    aggs = list(result.policies)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    spreads = {s.policy: s for s in result.startup}
    top = 0.0
    labelled: set[str] = set()
    empty = []
    for i, a in enumerate(aggs):
        spread = spreads.get(a.policy)
        ys = [d / 1e6 for d in spread.delays if d is not None] if spread is not None else []
        if ys:
            ax.scatter([i] * len(ys), ys, alpha=0.6, color=color(0),
                       label=None if "p" in labelled else "random permutations")
            labelled.add("p")
        if a.first_over_capacity_target is not None:
            ys.append(a.first_over_capacity_target / 1e6)
            ax.scatter([i], [ys[-1]], marker="_", s=600, color=color(7),
                       label=None if "g" in labelled else "given order")
            labelled.add("g")
        top = max([top, *ys])
        if not ys:
            empty.append(i)
    top = top * 1.15 or 1.0
    for i in empty:  # a packer that never started a long document says so in place of its points
        ax.text(i, top / 2, "no document > R\nstarted", ha="center", va="center", fontsize=8, color="#555555")
    ax.set_xticks(range(len(aggs)), [a.policy for a in aggs])
    ax.set_xlim(-0.6, len(aggs) - 0.4)
    ax.set_ylim(0, top)
    ax.set_ylabel("targets (millions)")
    ax.set_title("Targets before the first document longer than R is trained")
    _outside_legend(ax)
    return fig


def _buffered(plt: Any, result: AuditResult) -> Any:
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for i, a in enumerate(result.policies):
        xs = [p.targets / 1e6 for p in a.series]
        ax.plot(xs, [p.buffered_tokens / 1e6 for p in a.series], label=f"{a.policy}: buffered",
                color=color(i))
        ax.plot(xs, [p.protected_tokens / 1e6 for p in a.series], linestyle="--", color=color(i),
                label=f"{a.policy}: protected set")
    ax.set_xlabel("targets emitted (millions)")
    ax.set_ylabel("tokens (millions)")
    ax.set_title("Tokens waiting in the buffer, and the protected set's share of them, over the run")
    _outside_legend(ax)
    return fig
