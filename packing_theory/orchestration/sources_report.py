"""The data-source section of an audit or a comparison: per packer and source, what was trained.

:func:`sources_section` turns a
:class:`~packing_theory.orchestration.sources.SourcesResult` into report
blocks: the labels' origin, the declared mixture and the cleaning funnel in
words, then per packer a table of its sources (documents, trained tokens, the
unfinished row, the parts not trained), the realised mixture in both readings
(documents started against α, trained tokens against the token targets), the
drift over training time in both readings, and the funnel from raw to trained
per source with its reconciliation.
"""

from __future__ import annotations

from ..reporting.model import Block, Column, Plot, Section, Table, Text, percent
from .sources import PackerSources, SourcesResult

__all__ = ["sources_section"]

_STOP_WORDS: dict[str, str] = {
    "rows": "its row budget reached",
    "exhausted": "the stream ran dry",
    "drained": "the stream ran dry and the buffer drained",
    "starved": "no buffered document fits an empty row",
}
"""The engine's stop reasons (:data:`~packing_theory.engine.events.STOP_REASONS`) in words."""


def _packer_blocks(p: PackerSources, result: SourcesResult) -> list[Block]:
    cols = (
        Column("source"),
        Column("documents", "count"),
        Column("arrived", "count"),
        Column("arrived tokens", "tokens"),
        Column("trained tokens", "tokens", "trained"),
        Column("unfinished row", "tokens", "unfinished row"),
        Column("cut off", "tokens", "cut off"),
        Column("buffered (started or not)", "tokens"),
        Column("started", "count"),
        Column("only in the unfinished row", "count", "unfinished row"),
        Column("never started", "count", "never started"),
        Column("never reached", "count", "never reached"),
    )
    # started + only in the unfinished row + never started + never reached = documents, per source
    rows = tuple(
        (a.source, a.documents, a.arrived, a.arrived_tokens, a.trained_tokens, a.unfinished_row_tokens,
         a.dropped_tokens, a.buffered_tokens, a.started, a.unfinished_row_only, a.never_started,
         a.never_reached)
        for a in p.accounts
    )
    blocks: list[Block] = [
        Table(
            f"{p.policy}: per data source ({p.rows:,} rows, {_STOP_WORDS.get(p.stop_reason, p.stop_reason)}; "
            "every source reconciles: "
            f"{'yes' if p.reconciles else 'NO'})",
            cols,
            rows,
            key=f"sources-{p.policy}",
        )
    ]
    if p.shares is not None:
        blocks.append(Text(f"{p.policy}: {p.shares.headline()}"))
        for r in p.shares.readings:
            rcols = (
                Column("source"),
                Column(r.quantity, "tokens" if r.reading == "tokens" else "count"),
                Column("share", "share"),
                Column("declared α" if r.reading == "documents" else "token target share", "share"),
                Column("error", "share"),
                *((Column("of target", "share"),) if r.reading == "tokens" else ()),
            )
            rrows = tuple(
                (s.source, s.count, s.share, s.declared, s.absolute_error,
                 *((s.of_target,) if r.reading == "tokens" else ()))
                for s in r.shares
            )
            dist = "—" if r.distance is None else f"{r.distance:.3f}"
            blocks.append(Table(f"{p.policy}: {r.label} (distance {dist}{', missed' if r.missed else ''})",
                                rcols, rrows, key=f"mixture-{r.reading}-{p.policy}"))
    d = p.drift
    for what, D, flagged, far, against in (
        ("trained tokens", d.drift, d.drifted, d.max_tv_targets, "the token targets"),
        ("documents started", d.document_drift, d.document_drifted, d.max_tv_alpha, "α"),
    ):
        blocks.append(Text(
            f"{p.policy}: drift statistic of the {what} D = {'—' if D is None else f'{D:.3f}'} over "
            f"{len(d.block_starts)} blocks of {d.block_rows:,} complete rows (threshold {d.threshold:g}): "
            f"{'drift flagged' if flagged else 'no drift flagged'}."
            + ("" if far is None else f" Largest distance of a block from {against}: {far:.3f}.")
        ))
    if result.funnel is not None:
        t = p.funnel
        fcols = (
            Column("source"),
            *(Column(f"{st}: documents", "count") for st in t.steps),
            Column("trained tokens", "tokens", "trained"),
            Column("unfinished row", "tokens", "unfinished row"),
            Column("reconciles"),
        )
        frows = tuple(
            (s.source, *s.documents, s.trained_tokens, s.unfinished_row_tokens,
             "yes" if s.reconciles else "NO")
            for s in t.sources
        )
        blocks.append(
            Table(f"{p.policy}: the cleaning funnel, raw to trained ({t.headline()})", fcols, frows,
                  key=f"funnel-{p.policy}")
        )
        blocks += [Text(f"{p.policy}: {problem.message}") for problem in t.problems]
    return blocks


def sources_section(result: SourcesResult, *, plot: str | None = None) -> Section:
    """The *Data sources* section (``plot``: the realised-share PNG's name)."""
    intro = [
        f"{len(result.sources)} data source(s) ({', '.join(result.sources)}), labels from "
        f"{result.labels_origin}."
    ]
    if result.mixture is not None:
        m = result.mixture
        shares = m.target_shares or {}
        intro.append(
            f"Declared mixture{' ' + repr(m.name) if m.name else ''} ({m.kind}): "
            + ", ".join(
                s
                + (f" α {percent(m.alpha[s])}" if m.alpha and s in m.alpha else "")
                + (f" target {m.targets[s]:,} tokens ({percent(shares[s])})" if m.targets else "")
                for s in m.sources
            )
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
        declared = result.mixture is not None and bool(result.mixture.target_shares)
        blocks.append(Plot(plot, "Realised token mixture over training time, one panel per packer"
                                 + (" (dashed: declared token targets)" if declared else "")))
    return Section("sources", "Data sources", tuple(blocks))
