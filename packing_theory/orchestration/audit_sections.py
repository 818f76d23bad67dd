"""The audit's tables beyond the answer card: per packer, by length, startup, evaluation, documents, the
published figures (each a block or a section of :mod:`~packing_theory.orchestration.audit_report`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..reporting.model import Amount, Column, Plot, Section, Table, Text

if TYPE_CHECKING:
    from .audit import AuditResult
    from .measure import PackerRun

__all__ = ["DOCUMENTS_SHOWN", "documents_section", "evaluation_section", "mass_table", "protected_table",
           "reference_section", "startup_section", "stop_table", "strata_section", "untrained_table"]

DOCUMENTS_SHOWN = 200
"""Rows of the per-document table the page and the Markdown embed (all are in the documents file)."""


def _amounts(whole: int) -> Callable[[int], Amount]:
    """A count with its share of ``whole``."""

    def amount(v: int) -> Amount:
        return Amount(v, v / whole if whole else None)

    return amount


def untrained_table(runs: Sequence[PackerRun]) -> Table:
    cols = (
        Column("packer"),
        Column("documents offered", "count"),
        Column("trained tokens", "tokens", "trained"),
        Column("never started: documents", "count", "never started"),
        Column("never started: tokens", "tokens", "never started"),
        Column("cut off: documents", "count", "cut off"),
        Column("cut off: tokens", "tokens", "cut off"),
        Column("still buffered: tokens", "tokens", "still buffered"),
        Column("unfinished row: tokens", "tokens", "unfinished row"),
        Column("never reached: documents", "count", "never reached"),
        Column("never reached: tokens", "tokens", "never reached"),
    )
    rows = []
    for r in runs:
        nt = r.never_trained
        a = _amounts(nt.offered_tokens)

        rows.append(
            (
                r.packer,
                nt.offered_documents,
                a(nt.trained_tokens),
                nt.never_started.documents,
                a(nt.never_started.tokens),
                nt.dropped.documents,
                a(nt.dropped.tokens),
                a(nt.still_buffered.tokens),
                a(nt.partial_row.tokens),
                nt.never_reached.documents,
                a(nt.never_reached.tokens),
            )
        )
    return Table(
        "What each packer did not train (tokens with their share of those offered)",
        cols,
        tuple(rows),
        note="trained + never started + cut off + still buffered + unfinished row + "
        "never reached = the tokens offered, exactly, for every packer.",
        key="packers",
    )


def stop_table(runs: Sequence[PackerRun]) -> Table:
    cols = (
        Column("packer"),
        Column("row width", "count", "row width R"),
        Column("rows", "count"),
        Column("horizon asked"),
        Column("stopped because", term="horizon"),
        Column("family", term="family"),
    )
    rows = tuple(
        (
            r.packer,
            r.row_width,
            r.aggregates.rows,
            r.horizon.asked.describe() if r.horizon.asked else "natural end",
            r.horizon.reason,
            "member" if r.in_family else "outside",
        )
        for r in runs
    )
    return Table("Where each packer stopped", cols, rows, key="stops")


def mass_table(runs: Sequence[PackerRun]) -> Table:
    cols = (
        Column("packer"),
        Column("arrived", "tokens"),
        Column("added BOS", "tokens"),
        Column("emitted", "tokens"),
        Column("discarded", "tokens", "discarded / dropped tokens"),
        Column("filtered", "tokens"),
        Column("buffered", "tokens", "buffered tokens"),
        Column("padding", "tokens", "utilization"),
        Column("identity"),
    )
    rows = []
    for r in runs:
        m = r.aggregates.mass
        ok = "holds" if m.identity_holds and not r.aggregates.conservation_violations else "FAILS"
        rows.append(
            (
                r.packer,
                m.arrived_tokens,
                m.added_bos,
                m.emitted_tokens,
                m.discarded_tokens,
                m.filtered_tokens,
                m.buffered_tokens,
                m.padding_tokens,
                ok,
            )
        )
    return Table(
        "Token mass (arrived + added BOS = emitted + discarded + filtered + buffered)",
        cols,
        tuple(rows),
        key="mass",
    )


def protected_table(runs: Sequence[PackerRun]) -> Table:
    cols = (
        Column("packer"),
        Column("members", "count", "protected set"),
        Column("tokens", "tokens"),
        Column("share of arrived", "share"),
        Column("share of buffered", "share"),
        Column("members started", "count"),
        Column("crops", "count", "crop"),
        Column("median crop prefix", "count"),
        Column("first target of a long document", "count", "startup delay"),
    )
    rows = tuple(
        (
            r.packer,
            r.aggregates.protected.members,
            r.aggregates.protected.tokens,
            r.aggregates.protected.share_of_arrived,
            r.aggregates.protected.share_of_buffered,
            r.aggregates.protected.started_members,
            r.aggregates.crop_events,
            r.aggregates.median_crop_prefix,
            r.aggregates.first_over_capacity_target,
        )
        for r in runs
    )
    return Table(
        "The protected set (the B − 1 largest long documents) and the crops",
        cols,
        rows,
        note="Members started = 0 is the paper's §3 proposition for discard and continue (proved in "
             "proofs/coq/Invariant.v).",
        key="protected",
    )


def strata_section(result: AuditResult) -> Section:
    runs = result.measurement.runs
    cols = (
        Column("length stratum", term="length stratum"),
        Column("packer"),
        Column("arrived", "count"),
        Column("never started", "count", "never started"),
        Column("retention", "share", "retention"),
    )
    rows = tuple(
        (s.label, r.packer, s.arrived_sources, s.never_started_sources, s.retention)
        for s_i in range(len(runs[0].aggregates.strata) if runs else 0)
        for r in runs
        for s in (r.aggregates.strata[s_i],)
    )
    return Section(
        "strata",
        "By original length",
        (
            Text(
                "Strata of BOS-inclusive length, boundaries "
                + ", ".join(map(str, result.measurement.settings.boundaries))
                + "."
            ),
            Table("Retention of arrived tokens by length stratum", cols, rows, key="strata"),
            Plot("retention_by_stratum.png", "Share of each length stratum's tokens trained on"),
            Plot("exposure_profile.png", "Which positions of long documents were trained on"),
        ),
    )


def startup_section(result: AuditResult) -> Section | None:
    if not result.startup:
        return None
    cols = (
        Column("policy"),
        Column("permutations", "count"),
        Column("fewest targets", "count"),
        Column("most targets", "count"),
        Column("none started", "count"),
    )
    rows = tuple(
        (s.policy, s.permutations, s.minimum, s.maximum, sum(d is None for d in s.delays))
        for s in result.startup
    )
    return Section(
        "startup",
        "Startup delay over random orders",
        (
            Text(
                "Targets before the first document longer than a row is trained, over random permutations of "
                "the corpus (the paper's §5.1)."
            ),
            Table("Startup delay", cols, rows, key="startup"),
            Plot("startup_delay.png"),
        ),
    )


def evaluation_section(result: AuditResult) -> Section | None:
    if not result.evaluation or result.eval_corpus is None:
        return None
    ec = result.eval_corpus
    cols = (
        Column("policy"),
        Column("targets scored", "count"),
        Column("strata with no scored document"),
        Column("first target of a long document", "count"),
        Column("protected tokens", "tokens"),
        Column("of arrived", "share"),
    )
    rows = tuple(
        (
            e.policy,
            sum(e.target_counts),
            ", ".join(e.zero_inclusion) or "none",
            e.first_over_capacity_target,
            e.protected_tokens,
            e.protected_share_of_arrived,
        )
        for e in result.evaluation
    )
    return Section(
        "evaluation",
        "Evaluation population",
        (
            Text(
                f"Evaluation stream{': ' + ec.label if ec.label else ''}: {ec.documents:,} documents, "
                f"{ec.tokens:,} tokens. Verdict ({result.evaluation[0].policy}): "
                f"{result.evaluation[0].verdict}."
            ),
            Table("Which strata an evaluation at this budget can score", cols, rows, key="evaluation"),
        ),
    )


def documents_section(result: AuditResult) -> Section | None:
    """The largest documents each packer trained no token of (never started, never reached), by raw
    index, name and data source; the documents file has every document. O(rows listed) per packer,
    whatever the corpus size (:meth:`~packing_theory.audit.documents.DocumentTable.largest_untrained`)."""
    runs = [r for r in result.measurement.runs if r.documents is not None]
    if not runs:
        return None
    cols = (
        Column("packer"),
        Column("document", "count", "raw index"),
        Column("name"),
        Column("source"),
        Column("tokens", "tokens"),
        Column("fate"),
        Column("buffered", "tokens", "still buffered"),
        Column("never reached", "tokens", "never reached"),
    )
    rows: list[tuple[Any, ...]] = []
    total = cut = 0
    per = max(1, DOCUMENTS_SHOWN // len(runs))
    for run in runs:
        assert run.documents is not None
        listed, count = run.documents.largest_untrained(per)
        total += count
        cut += run.never_trained.dropped.documents
        rows += [
            (
                run.packer,
                row["document"],
                row["name"] or "—",
                row["source"] or "—",
                row["length"],
                row["fate"],
                row["buffered"],
                row["never_reached"],
            )
            for row in listed
        ]
    more = f"every document and packer is in {result.documents_file}" if result.documents_file else ""
    return Section(
        "documents",
        "Documents not trained" + (", as a single stream" if result.ranks is not None else ""),
        (
            Text(
                f"{total:,} (document, packer) pairs have no token trained (never started, never reached, "
                f"or placed only in the unfinished last row: fate \"never trained (unfinished row)\"); "
                f"the largest are shown here, by raw index (the document's position in the corpus as read), "
                f"name and data source. {cut:,} more pairs started and had tails cut off"
                + (f"; every pair is in {result.documents_file}." if result.documents_file else ".")
            ),
            Table("Documents not trained, largest first", cols, tuple(rows), more=more, key="documents"),
        ),
    )


_MEASURED: dict[str, Callable[[PackerRun], Any]] = {
    "arrived_sources": lambda r: r.aggregates.arrived_sources,
    "arrived_tokens": lambda r: r.aggregates.mass.arrived_tokens,
    "emitted_tokens": lambda r: r.aggregates.mass.emitted_tokens,
    "discarded_tokens": lambda r: r.aggregates.mass.discarded_tokens,
    "buffered_tokens": lambda r: r.aggregates.mass.buffered_tokens,
    "added_bos": lambda r: r.aggregates.mass.added_bos,
    "crop_events": lambda r: r.aggregates.crop_events,
    "median_crop_prefix": lambda r: r.aggregates.median_crop_prefix,
    "crop_bos_only": lambda r: r.aggregates.crop_bos_only,
    "protected_members": lambda r: r.aggregates.protected.members,
    "protected_tokens": lambda r: r.aggregates.protected.tokens,
    "protected_share_of_arrived": lambda r: r.aggregates.protected.share_of_arrived,
    "protected_share_of_buffered": lambda r: r.aggregates.protected.share_of_buffered,
    "over_capacity_emitted_fraction": lambda r: r.aggregates.over_capacity_emitted_fraction,
}
"""The published figures this audit measures too (shown side by side)."""


def reference_section(result: AuditResult) -> Section | None:
    ref = result.reference
    if not ref:
        return None
    runs = {r.packer: r for r in result.measurement.runs}
    rows = []
    for policy, figures in ref.items():
        if not isinstance(figures, Mapping):
            continue
        for k, v in figures.items():
            published = v if isinstance(v, (int, float)) else str(v)
            mine = _MEASURED[k](runs[policy]) if k in _MEASURED and policy in runs else None
            rows.append((str(policy), k.replace("_", " "), published, mine))
    cols = (Column("policy"), Column("figure"), Column("published", "number"), Column("this audit", "number"))
    return Section(
        "reference",
        "Published figures",
        (Text(str(ref.get("source", ""))), Table("The paper's figures beside this audit's", cols,
                                                 tuple(rows))),
        collapsed=True,
    )
