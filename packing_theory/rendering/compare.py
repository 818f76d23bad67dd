"""The comparison's documents: ``compare.json``, the one-screen ``compare.md`` and PNG plots.

:func:`write_report_files` stages all of them for a
:class:`~packing_theory.orchestration.PackerComparison` in an open
:class:`~packing_theory.reporting.ReportWriter` (locked, swapped in as one
unit). The JSON is :meth:`PackerComparison.to_dict
<packing_theory.orchestration.PackerComparison.to_dict>` (``schema``
``packing-theory/compare``, version 3) with the run entry. The Markdown's first
line is the comparison's headline; the packers are listed by never-trained
tokens at the common horizon, fewest first.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..audit.costs import COST_COLUMNS, costs_table
from ..orchestration.compare import PackerComparison
from ..reporting.markdown import count, md_text, percent, run_line, table
from ..reporting.plotting import color, pyplot, save_figure
from ..reporting.writer import ReportFiles, ReportWriter
from .headline import glossary_lines

__all__ = ["PLOT_FILES", "PLOT_SECTIONS", "REPORT_FILES", "plot_notes",
           "render_markdown", "write_plots", "write_report_files"]

PLOT_FILES: tuple[str, ...] = (
    "compare_retention.png", "compare_never_started.png", "compare_start_delay.png",
)
"""The PNG files :func:`write_plots` may write (the start-delay plot only when a packer has a delay)."""

PLOT_SECTIONS: dict[str, str] = dict.fromkeys(PLOT_FILES, "packers")
"""The ``compare.json`` entry each plot illustrates (the HTML page shows the plots there)."""

REPORT_FILES: tuple[str, ...] = ("compare.html", "compare.json", "compare.md", *PLOT_FILES)
"""Every file a compare report directory may hold."""


def render_markdown(cmp: PackerComparison, *, run: dict[str, str] | None = None,
                    notes: dict[str, str] | None = None) -> str:
    """A one-screen Markdown table (one row per packer) plus the verdicts and trainer views.

    With ``run`` (:attr:`ReportWriter.run_info <packing_theory.reporting.ReportWriter.run_info>`)
    the last line names the run and the config hash.
    """
    from ..orchestration.compare import HORIZON_RULES

    told = cmp.horizon.describe() if cmp.horizon is not None else "each packer's natural end"
    stream = f"; streaming: {cmp.exhausted}, {cmp.passes} pass(es)"
    lines = [
        cmp.headline(),
        "",
        f"# Packer comparison — {md_text(cmp.corpus_label or 'corpus')}",
        "",
        f"{cmp.documents:,} documents, {cmp.tokens:,} tokens. Horizon: {told} — "
        f"{HORIZON_RULES[cmp.horizon_rule]}{stream}. "
        f"Streaming R = {cmp.capacity}, B = {cmp.min_buffer}; peers at sequence length {cmp.seq_length} "
        f"(a framework that accepts only some lengths at the largest one below it), each row width by "
        f"its framework's rule (`packing-theory policies`).",
        "",
    ]
    rows = []
    by_name = {c.policy: c for c in cmp.columns}
    for c in (by_name[n] for n in cmp.ranking):
        long_ns = sum(n for n, lab in zip(c.never_started_by_stratum, cmp.labels, strict=True)
                      if lab.startswith(">") or int(lab.split("–")[0]) > c.row_width)
        nt = c.never_trained
        rows.append([c.policy, str(c.row_width), count(c.rows),
                     c.horizon.reason if c.horizon is not None else "—",
                     f"{count(nt.tokens)} ({percent(nt.share)})" if nt is not None else "—",
                     percent(c.utilization), count(c.padding_tokens), count(c.unused_capacity_tokens),
                     count(c.targets), count(c.discarded_tokens + c.filtered_tokens),
                     count(nt.buffered_tokens if nt is not None else c.buffered_tokens),
                     count(nt.never_reached.tokens) if nt is not None else "—",
                     count(c.never_started_sources), count(long_ns), "member" if c.in_family else "outside"])
    lines += table(["packer", "row width", "rows", "stopped", "never trained tokens", "utilization",
                    "padding", "unused capacity", "targets", "dropped tokens", "buffered tokens",
                    "never reached tokens", "never started", "never started > R", "family"],
                   rows, "lrrlrrrrrrrrrrl")
    lines += ["", "Ranked by never-trained tokens, fewest first. For every packer emitted + dropped + "
              "buffered + never reached = the tokens offered, exactly; dropped = truncated, discarded or "
              "filtered source tokens (padding never counts as emitted); buffered = still held at the "
              "horizon (never trained either). Padding = pad tokens the framework stores or its collator "
              "always adds; unused capacity = row positions holding no token (a TRL bin's free space is "
              "unused capacity, not padding). Targets = positions the trainer predicts (a peer: its "
              "framework's collator rule, `docs/peers.rst`). Never started = arrived documents with no "
              "emitted token (filtered ones included).", "", "## Verdicts", ""]
    lines += [f"- **{c.policy}**: {c.verdict}" for c in cmp.columns]
    if cmp.refused:
        lines += ["", "## Refused by the framework's own rule", ""]
        lines += [f"- **{n}**: {r}" for n, r in cmp.refused]
    costs = [c.costs for c in cmp.columns if c.costs is not None]
    if costs:
        shown = [c for c in COST_COLUMNS if c[0] not in ("utilization", "discarded_tokens")]
        lines += ["", "## Costs (start delays in rows; see `packing_theory.audit.costs`)", "",
                  costs_table(costs, shown)]
        offline = [c.policy for c in cmp.columns if c.start_delays != "measured"]
        if offline:
            lines += ["", "Start delays of " + ", ".join(offline) + " are not reported (—): each reads "
                      "the whole dataset, or a window of it, before emitting that window's rows, so a delay "
                      "would "
                      "only be a row position in the framework's emission order."]
    lines += ["", "## What the trainer gets", ""]
    lines += [f"- **{c.policy}**: {c.trainer_view}" for c in cmp.columns]
    if notes:
        lines += ["", *(f"Not drawn: {name}: {why}" for name, why in notes.items())]
    lines += ["", *glossary_lines()]
    lines += [f"Computed in {cmp.seconds:.1f} s."]
    if run is not None:
        lines += ["", run_line(run)]
    return "\n".join(lines) + "\n"


def plot_notes(cmp: PackerComparison) -> dict[str, str]:
    """For each plot of :data:`PLOT_FILES` with nothing to show, the sentence saying why."""
    notes: dict[str, str] = {}
    if not any(r is not None for c in cmp.columns for r in c.retention_by_stratum):
        notes[PLOT_FILES[0]] = "no document arrived, so no stratum has a retention to plot."
    if not cmp.columns:
        notes[PLOT_FILES[1]] = "no packer was compared."
    if not [c for c in cmp.columns if c.costs is not None and c.costs.start_delay_max is not None]:
        notes[PLOT_FILES[2]] = ("no packer recorded a start delay (no document was placed), so there is no "
                                "delay to rank.")
    return notes


def write_plots(cmp: PackerComparison, outdir: str | os.PathLike[str], *,
                metadata: dict[str, str] | None = None) -> list[Path]:
    """The PNGs of :data:`PLOT_FILES` that have data (see :func:`plot_notes`).

    Readable at any number of packers: retention as small multiples (one
    panel per packer, strata on the x axis), never-started documents and start
    delays as ranked bar charts. ``metadata`` becomes PNG text chunks.

    Raises:
        MissingDependency: matplotlib is not installed (the message names the extra).
    """
    plt = pyplot()
    out = Path(outdir)
    notes = plot_notes(cmp)
    paths = []
    if PLOT_FILES[0] not in notes:
        paths.append(out / PLOT_FILES[0])
        save_figure(_retention(plt, cmp), paths[-1], metadata=metadata, dpi=100)
    if PLOT_FILES[1] not in notes:
        paths.append(out / PLOT_FILES[1])
        save_figure(_never_started(plt, cmp), paths[-1], metadata=metadata, dpi=100)
    if PLOT_FILES[2] not in notes:
        paths.append(out / PLOT_FILES[2])
        save_figure(_start_delay(plt, cmp), paths[-1], metadata=metadata, dpi=100)
    return paths


def _retention(plt: Any, cmp: PackerComparison) -> Any:
    """Small multiples: one panel per packer, ranked by its share of long-document tokens trained on."""
    cols = sorted(cmp.columns, key=lambda c: (-_long_retention(c, cmp.labels), c.policy))
    ncol = min(5, len(cols))
    nrow = -(-len(cols) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol + 0.6, 2.1 * nrow + 1.0), squeeze=False,
                             sharex=True, sharey=True)
    x = list(range(len(cmp.labels)))
    for k, ax in enumerate(axes.ravel()):
        if k >= len(cols):
            ax.axis("off")
            continue
        c = cols[k]
        vals = [r if r is not None else 0.0 for r in c.retention_by_stratum]
        ax.bar(x, vals, color=color(0 if c.in_family else 1), width=0.8)
        ax.set_title(c.policy, fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xticks(x, cmp.labels, rotation=90, fontsize=6)
    for row in axes:
        row[0].set_ylabel("trained share", fontsize=8)
    fig.suptitle("Share of each length stratum's tokens trained on, one panel per packer "
                 "(ranked by long documents; blue: family member, orange: outside)", fontsize=10)
    return fig


def _long_retention(c: Any, labels: Sequence[str]) -> float:
    vals = [r for r, lab in zip(c.retention_by_stratum, labels, strict=True)
            if r is not None and _is_long(lab, c.row_width)]
    return sum(vals) / len(vals) if vals else 1.0


def _is_long(label: str, width: int) -> bool:
    return label.startswith(">") or int(label.split("–")[0]) > width


def _never_started(plt: Any, cmp: PackerComparison) -> Any:
    cols = sorted(cmp.columns, key=lambda c: (c.never_started_sources, c.policy))
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(cols) + 1.4))
    vals = [c.never_started_sources for c in cols]
    ax.barh([c.policy for c in cols], vals, color=[color(0 if c.in_family else 1) for c in cols])
    for y, v in enumerate(vals):
        ax.text(v, y, f" {v:,}", va="center", fontsize=7)
    ax.set_xscale("symlog")
    ax.set_xlim(0, max([*vals, 1]) * 3)
    ax.set_xlabel("documents never started (one pass; log scale)")
    ax.invert_yaxis()
    ax.set_title("Documents never started, by packer (fewest first)\nblue: family member, orange: outside",
                 fontsize=10)
    return fig


def _start_delay(plt: Any, cmp: PackerComparison) -> Any:
    with_costs = [c for c in cmp.columns if c.costs is not None and c.costs.start_delay_max is not None]
    with_costs.sort(key=lambda c: (c.costs.start_delay_max if c.costs else 0, c.policy))
    fig, ax = plt.subplots(figsize=(9, 0.36 * len(with_costs) + 1.4))
    y = list(range(len(with_costs)))
    delays = [c.costs for c in with_costs if c.costs is not None]
    ax.barh([v - 0.2 for v in y], [d.start_delay_max or 0 for d in delays], 0.4, label="max", color=color(3))
    ax.barh([v + 0.2 for v in y], [d.start_delay_p99 or 0 for d in delays], 0.4, label="99th percentile",
            color=color(5))
    ax.set_yticks(y, [c.policy for c in with_costs])
    ax.set_xscale("symlog")
    ax.set_xlabel("rows from a document's arrival to its first trained token (log scale)")
    ax.invert_yaxis()
    ax.set_title("Start delay by packer (shortest first)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig


def write_report_files(writer: ReportWriter, cmp: PackerComparison, *, plots: bool = True,
                       sections: Mapping[str, Any] | None = None,
                       markdown: Sequence[str] = ()) -> ReportFiles:
    """Stage ``compare.html``, ``compare.json``, ``compare.md`` and (with ``plots``) the PNGs in an open
    ``writer``.

    ``sections`` adds top-level JSON entries (e.g. ``sources``) and ``markdown``
    lines after the comparison's own. The caller commits. Every file carries the writer's run id.
    """
    from ..reporting.html import write_html

    run = writer.run_info
    pngs: tuple[Path, ...] = ()
    notes = plot_notes(cmp) if plots else {}
    if plots:
        pngs = tuple(write_plots(cmp, writer.path(PLOT_FILES[0]).parent, metadata=writer.png_metadata))
    doc = {**cmp.to_dict(run), **(sections or {})}
    j = writer.write_json("compare.json", doc)
    text = render_markdown(cmp, run=run, notes=notes)
    md = writer.write_text("compare.md", text + ("\n" + "\n".join(markdown) + "\n" if markdown else ""))
    shown = [(n, notes.get(n)) for n in PLOT_FILES if n in notes or any(p.name == n for p in pngs)]
    title = f"Packer comparison — {cmp.corpus_label or 'corpus'}"
    page = write_html(writer, "compare.html", doc, title=title, headline=cmp.headline(), plots=shown,
                      sections=PLOT_SECTIONS)
    return ReportFiles(j, md, pngs, page)

