"""What an audit says: its headline, its JSON document and its sections (the Markdown and the page).

The answer card comes first: per packer, what happened to the tokens offered
(:func:`~packing_theory.orchestration.answer.decomposition`) as numbers and a
stacked bar, and the largest documents never started by raw index, name and
data source. Then the per-packer figures (where each stopped, what it did not
train, the token mass of seed 000 §6, the protected set), the data sources,
the length strata, the startup delay, the evaluation population, the
per-document table, the published figures and the plots.

The JSON (``schema`` ``packing-theory/audit``, version :data:`SCHEMA_VERSION`)
holds the measurement's entries (``corpus``, ``settings``, ``horizon``,
``packers`` — one entry per packer with the same keys as ``compare.json``'s —
and ``refused``) and the audit's own (``startup``, ``evaluation``,
``sources``, ``documents``, ``ranks``, ``reference``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..registry import entries
from ..reporting.model import Amount, Attachment, Block, Column, Plot, Section, Table, Text, percent
from .answer import decomposition_bars, document_identity, never_started_documents, packer_answer
from .audit_plots import SOURCES_PLOT
from .sources_report import sources_section

if TYPE_CHECKING:
    from .audit import AuditResult
    from .measure import PackerRun

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "TOP_LEVEL_KEYS",
    "audit_attachments",
    "audit_document",
    "audit_headline",
    "audit_sections",
    "plain",
]

SCHEMA = "packing-theory/audit"
SCHEMA_VERSION = 4
TOP_LEVEL_KEYS: tuple[str, ...] = (
    "schema",
    "version",
    "generator",
    "run",
    "headline",
    "corpus",
    "settings",
    "horizon",
    "packers",
    "refused",
    "startup",
    "evaluation",
    "sources",
    "documents",
    "ranks",
    "reference",
    "seconds",
)
"""Top-level keys of ``audit.json``, in order (version 4: one ``packers`` entry per packer, the same
per-packer document as ``compare.json``'s)."""

DOCUMENTS_SHOWN = 200
"""Rows of the per-document table the page and the Markdown embed (all are in the documents file)."""


def theorem_prediction(run: PackerRun) -> int | None:
    """Documents seed 000 §3 predicts never start at this horizon, or ``None`` where it does not apply."""
    e = entries()[run.packer]
    if not (e.in_family and e.protected_set) or run.horizon.reason == "drained":
        return None
    return run.aggregates.protected.members


def _theorem_sentence(run: PackerRun) -> str:
    predicted = theorem_prediction(run)
    e = entries()[run.packer]
    if predicted is not None:
        return f"the theorem predicts ≥ {predicted:,} never start at B = {run.horizon.min_buffer:,}"
    if run.horizon.reason == "drained":
        return (
            f"{run.aggregates.protected.started_members:,} protected documents started during the drain, "
            "which the theorem does not cover"
        )
    return f"the theorem does not apply ({e.status})"


def audit_headline(result: AuditResult) -> str:
    """The first packer's answer and the theorem's prediction; for the others, the documents each never
    started, with the share of the tokens they hold.

    >>> from packing_theory.orchestration import Settings, audit
    >>> res = audit([3, 40, 5, 50, 2, 60, 4, 70] * 3, ["discard"], Settings(capacity=8, min_buffer=4,
    ...             refill=2), permutations=0)
    >>> print(audit_headline(res).replace("; ", chr(10)))
    discard stopped at row 10 because the stream ran dry: trained 11.4% of the 702 tokens offered
    3 documents never started (29.9% of the tokens, the largest)
    tails of 9 documents that started were cut off (58.7%)
    the theorem predicts ≥ 3 never start at B = 4
    """
    runs = result.measurement.runs
    if not runs:
        return "no packer could be audited: " + "; ".join(f"{n}: {w}" for n, w in result.measurement.refused)
    first = f"{packer_answer(runs[0])}; {_theorem_sentence(runs[0])}"
    if len(runs) == 1:
        return first
    others = []
    for r in runs[1:]:
        nt = r.never_trained
        share = percent(nt.never_started.tokens / nt.offered_tokens) if nt.offered_tokens else "—"
        others.append(f"{r.packer} {nt.never_started.documents:,} ({share} of the tokens)")
    return f"{first}; the others never started: {', '.join(others)}"


def plain(value: Any) -> Any:
    """Tuples to lists and numpy scalars to Python numbers, recursively (JSON round-trips exactly)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (int, float, str, bool)):
        return value.item()
    return value


def audit_document(result: AuditResult, run: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``audit.json`` document (keys :data:`TOP_LEVEL_KEYS`); ``run`` names the run."""
    m = result.measurement.to_dict()
    evaluation = None
    if result.eval_corpus is not None:
        evaluation = {
            "corpus": result.eval_corpus.to_dict(),
            "populations": [e.to_dict() for e in result.evaluation],
        }
    table, count = never_started_documents(result.measurement.runs, result.corpus, limit=DOCUMENTS_SHOWN)
    documents = None
    if result.documents_file is not None:
        documents = {
            "file": result.documents_file,
            "never_started_count": count,
            "never_started_largest": [
                dict(zip(("document", "name", "source", "length", "never_started_by"), row, strict=True))
                for row in (table.rows if table else ())
            ],
        }
    doc = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generator": {"name": "packing_theory", "version": __version__},
        "run": dict(run) if run is not None else None,
        "headline": result.headline(),
        **{k: m[k] for k in ("corpus", "settings", "horizon", "packers", "refused")},
        "startup": [s.to_dict() for s in result.startup],
        "evaluation": evaluation,
        "sources": None if result.sources is None else result.sources.to_dict(),
        "documents": documents,
        "ranks": None if result.ranks is None else dict(result.ranks),
        "reference": None if result.reference is None else dict(result.reference),
        "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
    }
    out: dict[str, Any] = plain(doc)
    return out


# --------------------------------------------------------------------------- sections


def _corpus_text(result: AuditResult) -> str:
    c, s = result.measurement.corpus, result.measurement.settings
    name = f" ({c.label})" if c.label else ""
    widths = ", ".join(f"{r.packer} {r.row_width:,}" for r in result.measurement.runs)
    asked = result.measurement.horizon
    horizon = asked.describe() if asked is not None else "each packer's natural end"
    return (
        f"Your corpus{name}: {c.documents:,} documents, {c.tokens:,} tokens (BOS included); "
        f"{c.over_capacity_documents:,} are longer than a streaming row of {s.streaming_capacity:,}. "
        f"Horizon: {horizon}. Row widths: {widths}. Streaming B = {s.min_buffer:,}, refill "
        f"{', '.join(map(str, s.to_dict()['refill']))}, passes {s.passes}."
    )


def _answer(result: AuditResult) -> Section:
    runs = result.measurement.runs
    blocks: list[Block] = [Text(_corpus_text(result))]
    blocks += [Text(f"{packer_answer(r)}; {_theorem_sentence(r)}.") for r in runs]
    note = result.measurement.horizon_note()
    if note:
        blocks.append(Text(note[0].upper() + note[1:] + "."))
    if runs:
        blocks.append(decomposition_bars(runs, "What happened to the tokens offered"))
    table, _ = never_started_documents(runs, result.corpus)
    if table is not None:
        blocks.append(table)
    elif any(r.never_trained.never_started.documents for r in runs):
        blocks.append(
            Text(
                "Which documents never started: ask for the per-document table (documents=True, "
                "or --documents on the command line)."
            )
        )
    for name, why in result.measurement.refused:
        blocks.append(Text(f"{name} refused this corpus by its framework's own rule: {why}"))
    return Section("answer", "The answer", tuple(blocks), answer=True)


def _amounts(whole: int) -> Callable[[int], Amount]:
    """A count with its share of ``whole``."""

    def amount(v: int) -> Amount:
        return Amount(v, v / whole if whole else None)

    return amount


def _untrained_table(runs: Sequence[PackerRun]) -> Table:
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
        key="untrained",
    )


def _stop_table(runs: Sequence[PackerRun]) -> Table:
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


def _mass_table(runs: Sequence[PackerRun]) -> Table:
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


def _protected_table(runs: Sequence[PackerRun]) -> Table:
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
        note="Members started = 0 is seed 000 §3's proposition for discard and continue.",
        key="protected",
    )


def _strata_section(result: AuditResult) -> Section:
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


def _startup_section(result: AuditResult) -> Section | None:
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
                "the corpus (seed 000 §5.1)."
            ),
            Table("Startup delay", cols, rows, key="startup"),
            Plot("startup_delay.png"),
        ),
    )


def _evaluation_section(result: AuditResult) -> Section | None:
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


def _documents_section(result: AuditResult) -> Section | None:
    tables = [r.documents for r in result.measurement.runs if r.documents is not None]
    if not tables:
        return None
    cols = (
        Column("packer"),
        Column("document", "count", "raw index"),
        Column("name"),
        Column("source"),
        Column("tokens", "tokens"),
        Column("fate"),
        Column("trained", "tokens", "trained"),
        Column("cut off", "tokens", "cut off"),
        Column("buffered", "tokens", "still buffered"),
        Column("first row", "count"),
    )
    rows: list[tuple[Any, ...]] = []
    total = 0
    per = max(1, DOCUMENTS_SHOWN // len(tables))
    for t in tables:
        fate = t.column("fate")
        idx = np.flatnonzero(fate != "trained")
        total += int(idx.size)
        order = idx[np.lexsort((idx, -t.column("length")[idx]))][:per]
        cols_of = {
            k: t.column(k)[order].tolist()
            for k in ("document", "length", "fate", "emitted", "discarded", "buffered", "first_row")
        }
        for k in range(order.size):
            raw, name, source = document_identity(int(cols_of["document"][k]), result.corpus)
            first = cols_of["first_row"][k]
            rows.append(
                (
                    t.packer,
                    raw,
                    name,
                    source,
                    cols_of["length"][k],
                    cols_of["fate"][k],
                    cols_of["emitted"][k],
                    cols_of["discarded"][k],
                    cols_of["buffered"][k],
                    None if first < 0 else first,
                )
            )
    more = f"every document and packer is in {result.documents_file}" if result.documents_file else ""
    return Section(
        "documents",
        "Documents not fully trained",
        (
            Text(
                f"{total:,} (document, packer) pairs were not fully trained; the largest are shown here, by "
                "raw index (the document's position in the corpus as read), name and data source."
            ),
            Table(
                "Documents not fully trained, largest first", cols, tuple(rows), more=more, key="documents"
            ),
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


def _reference_section(result: AuditResult) -> Section | None:
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


def audit_sections(result: AuditResult) -> list[Section]:
    """Every section of the audit, the answer card first."""
    runs = result.measurement.runs
    out = [_answer(result)]
    if runs:
        out.append(
            Section(
                "packers",
                "Per packer",
                (
                    _untrained_table(runs),
                    _stop_table(runs),
                    _mass_table(runs),
                    _protected_table(runs),
                    Plot("buffered_mass.png", "Tokens waiting in the buffer over the run"),
                ),
            )
        )
    if result.sources is not None:
        out.append(sources_section(result.sources, plot=SOURCES_PLOT))
    if runs:
        out.append(_strata_section(result))
    for extra in (
        _startup_section(result),
        _evaluation_section(result),
        _documents_section(result),
        _reference_section(result),
    ):
        if extra is not None:
            out.append(extra)
    if result.ranks is not None:
        out.append(
            Section("ranks", "Per rank", (Text(str(result.ranks.get("summary", ""))),), collapsed=True)
        )
    return out


FILE_NAMES: tuple[str, ...] = ("documents.csv", "documents.parquet")
"""Attachments an audit report may hold (a later run without them removes the earlier run's)."""


def audit_attachments(result: AuditResult) -> list[Attachment]:
    """The per-document file, when the audit kept the tables."""
    tables = tuple(r.documents for r in result.measurement.runs if r.documents is not None)
    if result.documents_file is None or not tables:
        return []
    from ..audit.documents import write_documents

    def write(path: Path, run_id: str) -> None:
        write_documents(path, tables, run_id=run_id)

    return [Attachment(result.documents_file, write)]
