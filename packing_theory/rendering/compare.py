"""The comparison's documents: ``compare.json``, the one-screen ``compare.md`` and PNG plots.

:func:`write_report_files` stages all of them for a
:class:`~packing_theory.orchestration.PackerComparison` in an open
:class:`~packing_theory.reporting.ReportWriter` (locked, swapped in as one
unit). The JSON is :meth:`PackerComparison.to_dict
<packing_theory.orchestration.PackerComparison.to_dict>` (``schema``
``packing-theory/compare``, version 2) with the run entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..audit.costs import COST_COLUMNS, costs_table
from ..orchestration.compare import PackerComparison
from ..reporting.markdown import count, percent, run_line, table
from ..reporting.plotting import pyplot, save_figure
from ..reporting.writer import ReportFiles, ReportWriter

__all__ = ["PLOT_FILES", "REPORT_FILES", "render_markdown", "write_plots",
           "write_report_files"]

PLOT_FILES: tuple[str, ...] = (
    "compare_retention.png", "compare_never_started.png", "compare_start_delay.png",
)
"""The PNG files :func:`write_plots` may write (the start-delay plot only when a packer has a delay)."""

REPORT_FILES: tuple[str, ...] = ("compare.json", "compare.md", *PLOT_FILES)
"""Every file a compare report directory may hold."""


def render_markdown(cmp: PackerComparison, *, run: dict[str, str] | None = None) -> str:
    """A one-screen Markdown table (one row per packer) plus the verdicts and trainer views.

    With ``run`` (:attr:`ReportWriter.run_info <packing_theory.reporting.ReportWriter.run_info>`)
    the last line names the run and the config hash.
    """
    lines = [
        f"# Packer comparison — {cmp.corpus_label or 'corpus'}",
        "",
        f"{cmp.documents:,} documents, {cmp.tokens:,} tokens; budget: one pass over the corpus. "
        f"Streaming R = {cmp.capacity}, B = {cmp.min_buffer}; peers at sequence length {cmp.seq_length} "
        f"(a framework that accepts only some lengths at the largest one below it), each row width by "
        f"its framework's rule (`packing-theory policies`).",
        "",
    ]
    rows = []
    for c in cmp.columns:
        long_ns = sum(n for n, lab in zip(c.never_started_by_stratum, cmp.labels, strict=True)
                      if lab.startswith(">") or int(lab.split("–")[0]) > c.row_width)
        rows.append([c.policy, str(c.row_width), count(c.rows), percent(c.utilization),
                     count(c.padding_tokens), count(c.discarded_tokens), count(c.filtered_sources),
                     count(c.never_started_sources), count(long_ns), "member" if c.in_family else "outside"])
    lines += table(["packer", "row width", "rows", "utilization", "padding", "dropped tokens",
                    "filtered sources", "never started", "never started > R", "family"], rows, "lrrrrrrrrl")
    lines += ["", "Dropped tokens = truncated or discarded source tokens (padding never counts as emitted). "
              "Never started = arrived occurrences with no emitted token (filtered ones included); "
              "still-buffered tokens at the end: "
              + ", ".join(f"{c.policy} {c.buffered_tokens:,}" for c in cmp.columns if c.buffered_tokens)
              + ".", "", "## Verdicts", ""]
    lines += [f"- **{c.policy}**: {c.verdict}" for c in cmp.columns]
    if cmp.refused:
        lines += ["", "## Refused by the framework's own rule", ""]
        lines += [f"- **{n}**: {r}" for n, r in cmp.refused]
    costs = [c.costs for c in cmp.columns if c.costs is not None]
    if costs:
        shown = [c for c in COST_COLUMNS if c[0] not in ("utilization", "discarded_tokens")]
        lines += ["", "## Costs (start delays in rows; see `packing_theory.audit.costs`)", "",
                  costs_table(costs, shown)]
    lines += ["", "## What the trainer gets", ""]
    lines += [f"- **{c.policy}**: {c.trainer_view}" for c in cmp.columns]
    lines += ["", f"Computed in {cmp.seconds:.1f} s."]
    if run is not None:
        lines += ["", run_line(run)]
    return "\n".join(lines) + "\n"


def write_plots(cmp: PackerComparison, outdir: str | os.PathLike[str], *,
                metadata: dict[str, str] | None = None) -> list[Path]:
    """The PNGs of :data:`PLOT_FILES`: emitted share and never-started sources by packer, start delays.

    ``metadata`` becomes PNG text chunks (the run id and config hash of a report).

    Raises:
        MissingDependency: matplotlib is not installed (the message names the extra).
    """
    import numpy as np

    plt = pyplot()
    out = Path(outdir)
    paths = []
    x = np.arange(len(cmp.labels))
    fig, ax = plt.subplots(figsize=(11, 5))
    for c in cmp.columns:
        ys = [r if r is not None else np.nan for r in c.retention_by_stratum]
        ax.plot(x, ys, marker="o", label=c.policy)
    ax.set_xticks(x, cmp.labels, rotation=30)
    ax.set_ylabel("emitted share of the stratum's tokens")
    ax.set_title("Exposure by length stratum (one pass)")
    ax.legend(fontsize=7, ncol=2)
    paths.append(out / PLOT_FILES[0])
    save_figure(fig, paths[-1], metadata=metadata, dpi=110)
    fig, ax = plt.subplots(figsize=(11, 5))
    names = [c.policy for c in cmp.columns]
    ax.barh(names, [c.never_started_sources for c in cmp.columns], color="tab:red")
    ax.set_xscale("symlog")
    ax.set_xlabel("sources never started (one pass)")
    ax.invert_yaxis()
    paths.append(out / PLOT_FILES[1])
    save_figure(fig, paths[-1], metadata=metadata, dpi=110)
    with_costs = [c for c in cmp.columns if c.costs is not None and c.costs.start_delay_max is not None]
    if with_costs:
        fig, ax = plt.subplots(figsize=(11, 5))
        y = np.arange(len(with_costs))
        delays = [c.costs for c in with_costs if c.costs is not None]
        ax.barh(y - 0.2, [d.start_delay_max or 0 for d in delays], 0.4, label="max")
        ax.barh(y + 0.2, [d.start_delay_p99 or 0 for d in delays], 0.4, label="p99")
        ax.set_yticks(y, [c.policy for c in with_costs])
        ax.set_xscale("symlog")
        ax.set_xlabel("start delay (rows from arrival to first placed token)")
        ax.invert_yaxis()
        ax.legend()
        paths.append(out / PLOT_FILES[2])
        save_figure(fig, paths[-1], metadata=metadata, dpi=110)
    return paths


def write_report_files(writer: ReportWriter, cmp: PackerComparison, *, plots: bool = True) -> ReportFiles:
    """Stage ``compare.json``, ``compare.md`` and (with ``plots``) the PNGs in an open ``writer``.

    The caller commits. Every file carries the writer's run id.
    """
    run = writer.run_info
    pngs: tuple[Path, ...] = ()
    if plots:
        pngs = tuple(write_plots(cmp, writer.path(PLOT_FILES[0]).parent, metadata=writer.png_metadata))
    j = writer.write_json("compare.json", cmp.to_dict(run))
    md = writer.write_text("compare.md", render_markdown(cmp, run=run))
    return ReportFiles(j, md, pngs)

