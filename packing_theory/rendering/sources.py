"""The ``sources`` section of an audit or comparison: JSON, Markdown and the share-over-time plot.

:func:`sources_markdown` renders a
:class:`~packing_theory.orchestration.sources.SourcesResult` as its own
Markdown section (per packer: the per-source accounting, the trained share
against α, the drift statistic, and the funnel from raw to trained);
:func:`write_sources_plot` draws the realised share per block of rows
against the declared α (``source_mixture.png``). The JSON is
:meth:`SourcesResult.to_dict() <packing_theory.orchestration.sources.SourcesResult.to_dict>`,
under the report's ``sources`` key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..orchestration.sources import PackerSources, SourcesResult
from ..reporting.markdown import count, md_cell, md_text, percent, table
from ..reporting.plotting import pyplot, save_figure

__all__ = ["SOURCES_PLOT", "sources_markdown", "write_sources_plot"]

SOURCES_PLOT = "source_mixture.png"
"""The file name of the realised-share-over-time plot."""


def _signed(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:+.1f}%"


def _packer_lines(p: PackerSources, result: SourcesResult) -> list[str]:
    lines = [
        f"### {p.policy}",
        "",
        f"{p.rows:,} rows ({p.stop_reason}); every source reconciles: {'yes' if p.reconciles else 'NO'}.",
        "",
    ]
    shares = {s.source: s for s in p.shares or ()}
    rows = []
    for a in p.accounts:
        s = shares.get(a.source)
        rows.append(
            [
                md_cell(a.source),
                count(a.documents),
                count(a.arrived),
                count(a.arrived_tokens),
                count(a.trained_tokens),
                count(a.dropped_tokens),
                count(a.buffered_tokens),
                count(a.never_started),
                count(a.never_reached),
                percent(None if s is None else s.alpha),
                percent(None if s is None else s.share),
                _signed(None if s is None else s.absolute_error),
                _signed(None if s is None else s.relative_error),
            ]
        )
    lines += table(
        [
            "source",
            "documents",
            "arrived",
            "arrived tokens",
            "trained",
            "dropped",
            "buffered",
            "never started",
            "never reached",
            "α",
            "trained share",
            "error",
            "relative",
        ],
        rows,
        "lrrrrrrrrrrrr",
    )
    d = p.drift
    verdict = "**drift flagged**" if d.drifted else "no drift flagged"
    lines += [
        "",
        f"Drift statistic D = max over {len(d.block_starts)} blocks of {d.block_rows:,} rows of "
        f"TV(block share, run share) = {count(d.drift) if d.drift is None else f'{d.drift:.3f}'} "
        f"(threshold {d.threshold:g}): {verdict}."
        + (
            ""
            if d.max_tv_declared is None
            else f" Largest TV of a block from the declared α: {d.max_tv_declared:.3f}."
        ),
        "",
    ]
    if result.funnel is not None and p.funnel:
        steps = [md_cell(step) for step in next(iter(p.funnel.values()))["steps"]]
        frows = [
            [
                md_cell(src),
                *(count(v) for v in f["documents"]),
                count(f["trained_tokens"]),
                "yes" if f["reconciles"] else "NO",
            ]
            for src, f in p.funnel.items()
        ]
        lines += ["Funnel (documents):", ""]
        lines += table(
            ["source", *steps, "trained tokens", "reconciles"], frows, "l" + "r" * (len(steps) + 1) + "l"
        )
        lines.append("")
    return lines


def sources_markdown(result: SourcesResult, *, plot: str | None = None) -> list[str]:
    """The Markdown lines of the ``sources`` section (``plot``: the PNG's name, when written)."""
    lines = [
        "## Data sources",
        "",
        f"{len(result.sources)} source(s) ({', '.join(md_text(s) for s in result.sources)}), labels from "
        f"{md_text(result.labels_origin)}.",
    ]
    if result.mixture is not None:
        m = result.mixture
        lines.append(
            f"Declared mixture{' ' + md_text(repr(m.name)) if m.name else ''} ({m.kind}): "
            + ", ".join(f"{md_text(s)} {percent(a)}" for s, a in sorted(m.alpha.items()))
            + "."
        )
    if result.funnel is not None:
        f = result.funnel
        lines.append(
            f"Cleaning funnel: {f.raw_documents:,} raw documents, "
            + "; ".join(f"{md_text(s.stage.name)} ({s.stage.kind}) removed {s.removed_documents:,}"
                        for s in f.stages)
            + f"; {int(f.keep.sum()):,} reach the packer."
        )
    for name, why in result.refused:
        lines.append(f"{name}: refused this corpus ({why}).")
    lines.append("")
    for p in result.packers:
        lines += _packer_lines(p, result)
    if plot:
        lines += [f"![realised share per block of rows]({plot})", ""]
    return lines


def write_sources_plot(
    result: SourcesResult, path: str | os.PathLike[str], *, metadata: Mapping[str, str] | None = None
) -> None:
    """Draw the realised share of each source per block of rows, one panel per packer, α dashed."""
    plt = pyplot()
    n = len(result.packers)
    fig, axes = plt.subplots(1, n, figsize=(4.4 * n, 3.6), squeeze=False, sharey=True)
    alpha: dict[str, float] = {} if result.mixture is None else result.mixture.alpha
    for ax, p in zip(axes[0], result.packers, strict=True):
        _panel(ax, p, alpha)
    axes[0][0].set_ylabel("share of row tokens")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle("Realised mixture over training time (dashed: declared α)")
    save_figure(fig, path, metadata=metadata)


def _panel(ax: Any, p: PackerSources, alpha: Mapping[str, float]) -> None:
    d = p.drift
    xs = [s + d.block_rows / 2 for s in d.block_starts]
    for k, src in enumerate(d.sources):
        line = ax.plot(xs, [sh[k] for sh in d.shares], marker=".", label=src)
        if src in alpha:
            ax.axhline(alpha[src], linestyle="--", color=line[0].get_color(), linewidth=0.8)
    ax.set_title(f"{p.policy}: D = {'–' if d.drift is None else f'{d.drift:.2f}'}")
    ax.set_xlabel("row")
    ax.set_ylim(-0.02, 1.02)
