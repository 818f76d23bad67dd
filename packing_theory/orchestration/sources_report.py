"""The data-source section of an audit or a comparison: per packer and source, what was trained.

:func:`sources_section` turns a
:class:`~packing_theory.orchestration.sources.SourcesResult` into report
blocks: the labels' origin, the declared mixture and the cleaning funnel in
words, then per packer a table of its sources (documents, trained tokens, the
parts not trained, the realised share against the declared α) with the drift
over training time, and the funnel from raw to trained per source.
"""

from __future__ import annotations

from ..reporting.model import Block, Column, Plot, Section, Table, Text, percent
from .sources import PackerSources, SourcesResult

__all__ = ["sources_section"]


def _packer_blocks(p: PackerSources, result: SourcesResult) -> list[Block]:
    shares = {s.source: s for s in p.shares or ()}
    cols = (
        Column("source"),
        Column("documents", "count"),
        Column("arrived", "count"),
        Column("arrived tokens", "tokens"),
        Column("trained tokens", "tokens", "trained"),
        Column("cut off", "tokens", "cut off"),
        Column("buffered", "tokens", "still buffered"),
        Column("never started", "count", "never started"),
        Column("never reached", "count", "never reached"),
        Column("declared α", "share"),
        Column("trained share", "share"),
        Column("error", "share"),
    )
    rows = []
    for a in p.accounts:
        s = shares.get(a.source)
        rows.append(
            (
                a.source,
                a.documents,
                a.arrived,
                a.arrived_tokens,
                a.trained_tokens,
                a.dropped_tokens,
                a.buffered_tokens,
                a.never_started,
                a.never_reached,
                None if s is None else s.alpha,
                None if s is None else s.share,
                None if s is None else s.absolute_error,
            )
        )
    d = p.drift
    drift = "—" if d.drift is None else f"{d.drift:.3f}"
    verdict = "drift flagged" if d.drifted else "no drift flagged"
    declared = (
        ""
        if d.max_tv_declared is None
        else f" Largest distance of a block from the declared α: {d.max_tv_declared:.3f}."
    )
    blocks: list[Block] = [
        Table(
            f"{p.policy}: per data source ({p.rows:,} rows, {p.stop_reason}; every source reconciles: "
            f"{'yes' if p.reconciles else 'NO'})",
            cols,
            tuple(rows),
            key=f"sources-{p.policy}",
        ),
        Text(
            f"{p.policy}: drift statistic D = {drift} over {len(d.block_starts)} blocks of {d.block_rows:,} "
            f"rows (threshold {d.threshold:g}): {verdict}.{declared}"
        ),
    ]
    if result.funnel is not None and p.funnel:
        steps = next(iter(p.funnel.values()))["steps"]
        fcols = (
            Column("source"),
            *(Column(f"{st}: documents", "count") for st in steps),
            Column("trained tokens", "tokens", "trained"),
            Column("reconciles"),
        )
        frows = tuple(
            (src, *f["documents"], f["trained_tokens"], "yes" if f["reconciles"] else "NO")
            for src, f in p.funnel.items()
        )
        blocks.append(
            Table(f"{p.policy}: the cleaning funnel, raw to trained", fcols, frows, key=f"funnel-{p.policy}")
        )
    return blocks


def sources_section(result: SourcesResult, *, plot: str | None = None) -> Section:
    """The *Data sources* section (``plot``: the realised-share PNG's name)."""
    intro = [
        f"{len(result.sources)} data source(s) ({', '.join(result.sources)}), labels from "
        f"{result.labels_origin}."
    ]
    if result.mixture is not None:
        m = result.mixture
        intro.append(
            f"Declared mixture{' ' + repr(m.name) if m.name else ''} ({m.kind}): "
            + ", ".join(f"{s} {percent(a)}" for s, a in sorted(m.alpha.items()))
            + "."
        )
    if result.funnel is not None:
        f = result.funnel
        intro.append(
            f"Cleaning funnel: {f.raw_documents:,} raw documents; "
            + "; ".join(f"{s.stage.name} ({s.stage.kind}) removed {s.removed_documents:,}" for s in f.stages)
            + f"; {int(f.keep.sum()):,} reach the packers."
        )
    blocks: list[Block] = [Text(" ".join(intro))]
    blocks += [Text(f"{name} refused this corpus: {why}") for name, why in result.refused]
    for p in result.packers:
        blocks += _packer_blocks(p, result)
    if plot:
        blocks.append(Plot(plot, "Realised mixture over training time (dashed: declared α)"))
    return Section("sources", "Data sources", tuple(blocks))
