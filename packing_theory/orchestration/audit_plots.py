"""PNG plots of an audit (matplotlib, the ``plots`` extra, imported only when plotting).

Every plot either shows data or is not drawn: :func:`plot_notes` says, for
each plot with nothing to show, the sentence the Markdown and the HTML page
print instead (an empty frame is never written). Colours come from the
colour-blind-safe :data:`~packing_theory.reporting.plotting.PALETTE`; legends
sit outside the axes. :func:`audit_plot_files` lists them as the report's
:class:`~packing_theory.reporting.model.PlotFile` entries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..audit.results import Aggregates
from ..reporting.model import PlotFile
from ..reporting.plotting import color, pyplot, save_figure

if TYPE_CHECKING:
    from .audit import AuditResult

__all__ = ["PLOT_FILES", "SOURCES_PLOT", "audit_plot_files", "plot_notes", "write_plots"]

SOURCES_PLOT = "source_mixture.png"
"""The realised share of each data source over training time (with source labels only)."""

PLOT_FILES: tuple[str, ...] = (
    "retention_by_stratum.png", "exposure_profile.png", "startup_delay.png", "buffered_mass.png",
)
"""The PNG files :func:`write_plots` may write (those without a :func:`plot_notes` sentence)."""



def _aggs(result: AuditResult) -> list[Aggregates]:
    return [r.aggregates for r in result.measurement.runs]


def plot_notes(result: AuditResult) -> dict[str, str]:
    """For each plot of :data:`PLOT_FILES` with nothing to show, the sentence saying why.

    O(policies × (strata + series)).
    """
    aggs = _aggs(result)
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
        long_docs = result.measurement.corpus.over_capacity_documents
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
    aggs = _aggs(result)
    labels = list(aggs[0].exposure.labels)
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(aggs)
    for i, a in enumerate(aggs):
        vals = [s.retention if s.retention is not None else 0.0 for s in a.strata]
        ax.bar([x + i * width for x in range(len(labels))], vals, width, label=a.policy, color=color(i))
    ax.set_xticks([x + width * (len(aggs) - 1) / 2 for x in range(len(labels))], labels, rotation=30)
    ax.set_ylabel("trained / arrived tokens")
    ax.set_xlabel("original document length, BOS included (tokens)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Share of each length stratum's tokens that was trained on")
    _outside_legend(ax, title="packer")
    return fig


def _exposure(plt: Any, result: AuditResult) -> Any:
    aggs = _aggs(result)
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
    aggs = _aggs(result)
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
    for i, a in enumerate(_aggs(result)):
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


SOURCE_PANELS_PER_ROW = 3
"""Packers side by side in the source-mixture plot; more go on further rows (21 packers in one row made
a 9,240-pixel-wide figure that a page shows 1,170 pixels wide)."""


def _sources_plot(plt: Any, result: AuditResult) -> Any:
    """The trained-token share of each source per block of rows, one panel per packer (at most
    :data:`SOURCE_PANELS_PER_ROW` a row), the declared token targets dashed."""
    assert result.sources is not None
    packers = result.sources.packers
    cols = min(len(packers), SOURCE_PANELS_PER_ROW)
    nrows = -(-len(packers) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols + 1.6, 3.2 * nrows + 0.8), squeeze=False,
                             sharey=True)
    mixture = result.sources.mixture
    alpha: Mapping[str, float] = {} if mixture is None else mixture.target_shares or {}
    flat = [ax for row in axes for ax in row]
    for ax, p in zip(flat, packers, strict=False):
        d = p.drift
        xs = [s + d.block_rows / 2 for s in d.block_starts]
        for k, src in enumerate(d.sources):
            line = ax.plot(xs, [sh[k] for sh in d.shares], marker=".", label=src)
            if src in alpha:
                ax.axhline(alpha[src], linestyle="--", color=line[0].get_color(), linewidth=0.8)
        ax.set_title(f"{p.policy}: D = {'–' if d.drift is None else f'{d.drift:.2f}'}", fontsize=9)
        ax.set_xlabel("row")
        ax.set_ylim(-0.02, 1.02)
    for ax in flat[len(packers):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("share of trained tokens")
    axes[0][cols - 1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig  # its title is the page's caption (a suptitle overlapped the first row of panels)


_DRAW: dict[str, Callable[[Any, AuditResult], Any]] = {
    "retention_by_stratum.png": _retention, "exposure_profile.png": _exposure,
    "startup_delay.png": _startup, "buffered_mass.png": _buffered,
}


def audit_plot_files(result: AuditResult) -> list[PlotFile]:
    """Every plot of the audit, each drawn from ``result`` or with the sentence saying why not."""
    notes = plot_notes(result)
    out = []
    for name in PLOT_FILES:
        if name in notes:
            out.append(PlotFile(name, note=notes[name]))
        else:
            out.append(PlotFile(name, draw=_drawer(_DRAW[name], result)))
    if result.sources is not None:
        if result.sources.packers:
            out.append(PlotFile(SOURCES_PLOT, draw=_drawer(_sources_plot, result)))
        else:
            out.append(PlotFile(SOURCES_PLOT, note="every packer refused the corpus: no realised mixture"))
    return out


def _drawer(fn: Callable[[Any, AuditResult], Any], result: AuditResult
            ) -> Callable[[Path, Mapping[str, str]], None]:
    def draw(path: Path, metadata: Mapping[str, str]) -> None:
        save_figure(fn(pyplot(), result), path, metadata=metadata, dpi=100)
    return draw

