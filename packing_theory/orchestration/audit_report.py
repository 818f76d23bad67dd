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

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..registry import entries
from ..reporting.model import Attachment, Block, Plot, Section, Text, percent
from .answer import RANKED, decomposition_bars, documents_not_trained, never_started_documents, packer_answer
from .audit_plots import SOURCES_PLOT
from .audit_sections import (
    DOCUMENTS_SHOWN,
    documents_section,
    evaluation_section,
    mass_table,
    protected_table,
    reference_section,
    startup_section,
    stop_table,
    strata_section,
    untrained_table,
)
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
    "rank_headline",
]

SCHEMA = "packing-theory/audit"
SCHEMA_VERSION = 5
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
per-packer document as ``compare.json``'s; version 5: a stratum's ``retention`` counts trained tokens only,
``ranks.row_group_size`` is ``None`` where the parquet files' own row groups were used)."""



def theorem_prediction(run: PackerRun) -> int | None:
    """Documents seed 000 §3 predicts never start at this horizon, or ``None`` where it does not apply."""
    e = entries()[run.packer]
    if not (e.in_family and e.protected_set) or run.horizon.reason == "drained" or _never_filled(run):
        return None
    return run.aggregates.protected.members


def _never_filled(run: PackerRun) -> bool:
    """The buffer never held B documents (fewer arrived), so no selection was made: the theorem's hypothesis
    fails."""
    h = run.horizon
    return h.reason == "stream exhausted" and run.aggregates.arrived_sources < h.min_buffer


def _theorem_sentence(run: PackerRun) -> str:
    predicted = theorem_prediction(run)
    e = entries()[run.packer]
    if predicted is not None:
        return f"the theorem predicts ≥ {predicted:,} never start at B = {run.horizon.min_buffer:,}"
    if e.in_family and e.protected_set and _never_filled(run):
        return (f"the theorem does not apply: the buffer never held B = {run.horizon.min_buffer:,} "
                "documents")
    if run.horizon.reason == "drained":
        return (
            f"{run.aggregates.protected.started_members:,} protected documents started during the drain, "
            "which the theorem does not cover"
        )
    return f"the theorem does not apply ({e.status})"


def audit_headline(result: AuditResult) -> str:
    """The answer in one sentence: with ``--world-size`` what the ranks trained first
    (:func:`rank_headline`), then the first packer's answer and the theorem's prediction; with several
    packers, each packer's documents with no token trained (the quantity ``compare`` ranks by:
    :func:`~packing_theory.orchestration.answer.documents_not_trained`), with the share of the tokens
    they hold.

    >>> from packing_theory.orchestration import Settings, audit_corpus
    >>> res = audit_corpus([3, 40, 5, 50, 2, 60, 4, 70] * 3, ["discard"], Settings(capacity=8, min_buffer=4,
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
    ranks = rank_headline(result.ranks)
    first = f"{packer_answer(runs[0])}; {_theorem_sentence(runs[0])}"
    if ranks:
        first = f"{ranks}; {SINGLE_STREAM}: {first}"
    missed = _mixture_missed(result)
    if len(runs) == 1:
        return first + missed
    each = []
    for r in runs:
        nt = r.never_trained
        held = nt.no_token_trained.tokens
        share = percent(held / nt.offered_tokens) if nt.offered_tokens else "—"
        each.append(f"{r.packer} {documents_not_trained(r):,} ({share} of the tokens)")
    return f"{first}; {RANKED[0].label}: {', '.join(each)}{missed}"


SINGLE_STREAM = "as a single stream (one process reading the whole corpus, not what the ranks train)"
"""How the audit labels its single-stream figures when ``--world-size`` replays the ranks."""


def rank_headline(ranks: Mapping[str, Any] | None) -> str:
    """What data-parallel ranks train (``--world-size``), per packer, from the per-rank section: the rows
    every rank trains (ranks step in lockstep, so the fewest rows of any rank), the tokens they hold,
    the documents with no token trained then and those never started on any rank; ``""`` without ranks.

    >>> g = {"documents": 10, "started_any_rank": 8, "never_started_anywhere": 2, "min_rows": 3,
    ...      "started_at_min_rows": 6, "trained_tokens_at_min_rows": 40, "tokens": 100}
    >>> rank_headline({"world_size": 2, "passes": 1, "policies": {"discard": {"global": g, "ranks": [
    ...     {"rank": 0, "rows": 3}, {"rank": 1, "rows": 5}]}}})  # doctest: +NORMALIZE_WHITESPACE
    'with --world-size 2, discard trains 3 rows on each rank (ranks step in lockstep: rank 0 has 3, rank 1
    has 5), 40 of the 100 tokens offered (40.0%); 4 of the 10 documents have no token trained then; 2
    documents never started on any rank'
    """
    if not ranks or not ranks.get("policies"):
        return ""
    passes = int(ranks.get("passes", 1))
    unit = "documents" if passes == 1 else "occurrences"
    parts = []
    for policy, summary in ranks["policies"].items():
        g = summary["global"]
        if g.get("min_rows") is None:
            continue
        per = ", ".join(f"rank {r['rank']} has {r['rows']:,}" for r in summary["ranks"])
        offered = int(g["documents"]) * passes
        words = (f"{policy} trains {g['min_rows']:,} rows on each rank (ranks step in lockstep: {per})")
        trained, tokens = g.get("trained_tokens_at_min_rows"), int(g.get("tokens") or 0) * passes
        if trained is not None and tokens:
            words += f", {trained:,} of the {tokens:,} tokens offered ({percent(trained / tokens)})"
        words += (f"; {offered - int(g['started_at_min_rows']):,} of the {offered:,} {unit} have no token "
                  f"trained then; {g['never_started_anywhere']:,} documents never started on any rank")
        parts.append(words)
    if not parts:
        return ""
    return f"with --world-size {ranks['world_size']}, " + "; ".join(parts)


def _mixture_missed(result: AuditResult) -> str:
    """``"; the declared mixture was missed by discard (books: 1.3% of the trained tokens against 41.7%
    declared)"``:
    each packer whose realised mixture misses the declaration, with the source furthest below its share
    (the token reading first), or ``""``."""
    if result.sources is None:
        return ""
    missed = []
    for p in result.sources.packers:
        readings = (p.shares.tokens, p.shares.documents) if p.shares is not None else ()
        reading = next((r for r in readings if r.missed), None)
        worst = reading.worst() if reading is not None else None
        if reading is None or worst is None or worst.share is None or worst.declared is None:
            continue
        what = "the trained tokens" if reading.reading == "tokens" else "the documents started"
        missed.append(f"{p.policy} ({worst.source}: {percent(worst.share)} of {what} against "
                      f"{percent(worst.declared)} declared)")
    return f"; the declared mixture was missed by {', '.join(missed)}" if missed else ""


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
            "never_started_pairs": count,  # (document, packer) pairs
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
        "settings": {**m["settings"], "audit": dict(result.options)},
        "startup": [s.to_dict() for s in result.startup],
        "evaluation": evaluation,
        "sources": None if result.sources is None else result.sources.to_dict(),
        "documents": documents,
        "ranks": None if result.ranks is None else {
            **result.ranks, "answer": rank_headline(result.ranks),
            "note": f"corpus, horizon, packers, sources and documents are {SINGLE_STREAM}"},
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
    """The answer card: the corpus in one line, each packer's tokens by part (bars with their numbers), the
    largest documents never started, then each packer's answer in words."""
    runs = result.measurement.runs
    blocks: list[Block] = [Text(_corpus_text(result))]
    ranks = rank_headline(result.ranks)
    if ranks:
        blocks.append(Text(f"{ranks[0].upper()}{ranks[1:]} (see Per rank). Every other figure of this report "
                           f"is {SINGLE_STREAM}."))
    if runs:
        single = ", as a single stream" if result.ranks is not None else ""
        blocks.append(decomposition_bars(runs, f"What happened to the tokens offered{single}"))
    table, _ = never_started_documents(runs, result.corpus)
    if table is not None:
        blocks.append(table)
    elif any(r.never_trained.never_started.documents for r in runs):
        blocks.append(Text("Which documents never started: ask for the per-document table (documents=True, "
                           "or --documents on the command line)."))
    blocks += [Text(f"{packer_answer(r)}; {_theorem_sentence(r)}.") for r in runs]
    note = result.measurement.horizon_note()
    if note:
        blocks.append(Text(note[0].upper() + note[1:] + "."))
    for name, why in result.measurement.refused:
        blocks.append(Text(f"{name} refused this corpus by its framework's own rule: {why}"))
    return Section("answer", "The answer", tuple(blocks), answer=True)


def audit_sections(result: AuditResult) -> list[Section]:
    """Every section of the audit, the answer card first."""
    runs = result.measurement.runs
    out = [_answer(result)]
    if result.ranks is not None:  # what data-parallel training sees comes right after the answer
        out.append(Section("ranks", "Per rank", (Text(str(result.ranks.get("summary", ""))),)))
    if runs:
        out.append(
            Section(
                "packers",
                "Per packer" + (", as a single stream" if result.ranks is not None else ""),
                (
                    untrained_table(runs),
                    stop_table(runs),
                    mass_table(runs),
                    protected_table(runs),
                    Plot("buffered_mass.png", "Tokens waiting in the buffer over the run"),
                ),
            )
        )
    if result.sources is not None:
        out.append(sources_section(result.sources, plot=SOURCES_PLOT))
    if runs:
        out.append(strata_section(result))
    for extra in (
        startup_section(result),
        evaluation_section(result),
        documents_section(result),
        reference_section(result),
    ):
        if extra is not None:
            out.append(extra)
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
