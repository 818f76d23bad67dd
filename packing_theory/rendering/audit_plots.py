"""PNG plots of an audit (matplotlib, the ``plots`` extra, imported only when plotting)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..orchestration.audit import AuditResult
from ..reporting.plotting import pyplot, save_figure

__all__ = ["PLOT_FILES", "write_plots"]

PLOT_FILES: tuple[str, ...] = (
    "retention_by_stratum.png", "exposure_profile.png", "startup_delay.png", "buffered_mass.png",
)
"""The PNG files :func:`write_plots` writes."""


def write_plots(result: AuditResult, outdir: str | os.PathLike[str], *,
                metadata: Mapping[str, str] | None = None) -> list[Path]:
    """Write the four PNGs of :data:`PLOT_FILES` into ``outdir``; return their paths.

    ``metadata`` becomes PNG text chunks (the run id and config hash of a report).

    Raises:
        MissingDependency: matplotlib is not installed (the message names the extra).
    """
    plt = pyplot()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for name, draw in zip(PLOT_FILES, (_retention, _exposure, _startup, _buffered), strict=True):
        paths.append(out / name)
        save_figure(draw(plt, result), paths[-1], metadata=metadata, dpi=100)
    return paths


def _retention(plt: Any, result: AuditResult) -> Any:
    aggs = list(result.policies)
    labels = list(aggs[0].exposure.labels)
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(aggs)
    for i, a in enumerate(aggs):
        vals = [s.retention if s.retention is not None else 0.0 for s in a.strata]
        ax.bar([x + i * width for x in range(len(labels))], vals, width, label=a.policy)
    ax.set_xticks([x + width * (len(aggs) - 1) / 2 for x in range(len(labels))], labels, rotation=30)
    ax.set_ylabel("emitted / loaded source tokens")
    ax.set_xlabel("original BOS-inclusive length")
    ax.set_ylim(0, 1.05)
    ax.set_title("Retention of loaded token mass by original-length stratum")
    ax.legend()
    return fig


def _exposure(plt: Any, result: AuditResult) -> Any:
    aggs = list(result.policies)
    labels = list(aggs[0].exposure.labels)
    fig, axes = plt.subplots(1, len(aggs), figsize=(4.2 * len(aggs), 3.8), squeeze=False, sharey=True)
    for ax, a in zip(axes[0], aggs, strict=True):
        nb = a.exposure.bins
        xs = [(k + 0.5) / nb for k in range(nb)]
        for s, lab in enumerate(labels):
            ys = a.exposure.fraction(s)
            if all(y is None for y in ys):
                continue
            ax.plot(xs, [float("nan") if y is None else y for y in ys], label=lab)
        ax.set_title(a.policy)
        ax.set_xlabel("relative position within source")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("fraction of positions emitted")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), title="length")
    fig.suptitle("Exposure profile by original-length stratum (prefix bias)")
    return fig


def _startup(plt: Any, result: AuditResult) -> Any:
    aggs = list(result.policies)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    spreads = {s.policy: s for s in result.startup}
    for i, a in enumerate(aggs):
        spread = spreads.get(a.policy)
        if spread is not None:
            ys = [d / 1e6 for d in spread.delays if d is not None]
            ax.scatter([i] * len(ys), ys, alpha=0.6, label="permutations" if i == 0 else None)
        if a.first_over_capacity_target is not None:
            ax.scatter([i], [a.first_over_capacity_target / 1e6], marker="_", s=600, color="black",
                       label="given order" if i == 0 else None)
    ax.set_xticks(range(len(aggs)), [a.policy for a in aggs])
    ax.set_ylabel("first target of a source > R (M targets)")
    ax.set_title("Startup delay over random permutations of the length multiset")
    ax.legend()
    return fig


def _buffered(plt: Any, result: AuditResult) -> Any:
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for a in result.policies:
        xs = [p.targets / 1e6 for p in a.series]
        line = ax.plot(xs, [p.buffered_tokens / 1e6 for p in a.series], label=f"{a.policy}: buffered")
        ax.plot(xs, [p.protected_tokens / 1e6 for p in a.series], linestyle="--", color=line[0].get_color(),
                label=f"{a.policy}: protected set")
    ax.set_xlabel("targets emitted (M)")
    ax.set_ylabel("tokens (M)")
    ax.set_title("Buffered mass and protected-set mass over the replay")
    ax.legend(fontsize=7)
    return fig
