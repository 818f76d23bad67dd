"""The audit's documents: versioned JSON, a one-screen Markdown summary, and (with the plots) PNGs.

:func:`write_report` writes all three for an
:class:`~packing_theory.orchestration.AuditResult` through a
:class:`~packing_theory.reporting.ReportWriter`. The JSON schema is identified
by ``"schema": "packing-theory/audit"`` and ``"version": 3``; its top-level
keys (:data:`TOP_LEVEL_KEYS`) and the per-policy keys (:data:`POLICY_KEYS`)
only change with a version bump.

Plots (:mod:`packing_theory.rendering.audit_plots`) need matplotlib (the
``plots`` extra), imported only when plotting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..audit.population import EvalPopulation
from ..audit.startup import StartupSpread
from ..orchestration.audit import AuditResult
from ..registry import entry
from ..reporting.markdown import count as _n
from ..reporting.markdown import md_text, run_line
from ..reporting.markdown import millions as _mt
from ..reporting.markdown import percent as _pct
from ..reporting.writer import ReportFiles, ReportWriter
from .audit_plots import PLOT_FILES, PLOT_SECTIONS, plot_notes, write_plots
from .headline import glossary_lines, headline, horizon_lines, packer_sentence, theorem_prediction

__all__ = [
    "DOCUMENTS_FILES",
    "NEVER_TRAINED_SHOWN",
    "PAPER_5_1",
    "PLOT_FILES",
    "POLICY_KEYS",
    "REPORT_FILES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TOP_LEVEL_KEYS",
    "audit_headline",
    "never_trained_documents",
    "render_markdown",
    "report_dict",
    "run_info",
    "write_json",
    "write_plots",
    "write_report",
    "write_report_files",
]

SCHEMA = "packing-theory/audit"
SCHEMA_VERSION = 3

TOP_LEVEL_KEYS: tuple[str, ...] = (
    "schema", "version", "generator", "run", "headline", "horizon", "corpus", "settings", "strata",
    "policies", "startup", "evaluation", "reference", "seconds",
)
"""Top-level keys of a version-3 report, in order (version 3 added ``headline``, ``horizon`` and, per
policy, ``horizon`` and ``never_trained``)."""

DOCUMENTS_FILES: tuple[str, ...] = ("documents.csv", "documents.parquet")
"""The per-document file's names (``audit --documents``)."""

REPORT_FILES: tuple[str, ...] = ("audit.html", "audit.json", "audit.md", *PLOT_FILES, *DOCUMENTS_FILES)
"""Every file an audit report directory may hold."""


def run_info(writer: ReportWriter) -> dict[str, str]:
    """The ``"run"`` entry for the files ``writer`` writes: run id, config hash, tool."""
    return writer.run_info

POLICY_KEYS: tuple[str, ...] = (
    "policy", "capacity", "min_buffer", "rows", "targets", "stop_reason", "partial_row_tokens",
    "exhausted_at_row", "mass", "crops", "sources", "over_capacity_emitted_fraction",
    "first_over_capacity_target", "protected", "strata", "exposure", "coverage", "series", "horizon",
    "never_trained",
)
"""Keys of each entry of ``"policies"`` (see :meth:`packing_theory.audit.Aggregates.to_dict`); a peer's
entry adds ``"peer_figures"`` (its framework's rule for padding and targets, every option it ran with,
defaults included, and the framework's own horizon)."""


PAPER_5_1: dict[str, Any] = {
    "source": "seed 000 §5.1 (ClimbMix, autoresearch settings R=2049, B=1000, refill 128, 243,968 rows)",
    "discard": {
        "arrived_sources": 836_864, "arrived_tokens": 623_932_921, "emitted_tokens": 499_890_432,
        "discarded_tokens": 96_750_834, "buffered_tokens": 27_291_655, "crop_events": 225_735,
        "median_crop_prefix": 14, "crop_bos_only": 15_711, "protected_members": 999,
        "protected_tokens": 27_244_798, "protected_share_of_arrived": 0.0437,
        "protected_share_of_buffered": 0.9983, "over_capacity_emitted_fraction": 0.1176,
        "retention": {"33–128": 0.207, "513–1024": 0.996, "1025–2049": 1.0, ">16384": 0.0},
        "never_started_over_16384": 785,
        "startup_delay_range": [12_990_000, 14_840_000], "startup_permutations": 20,
    },
    "continue": {"discarded_tokens": 0, "buffered_tokens": 25_129_596, "protected_tokens": 25_049_286},
    "segment-first": {
        "arrived_sources": 702_208, "discarded_tokens": 23_430_384, "buffered_tokens": 302_148,
        "added_bos": 52_544, "over_capacity_emitted_fraction": 0.2573,
    },
    "evaluation": {
        "targets": 20_971_520, "protected_tokens": 5_892_120, "protected_share_of_arrived": 0.2086,
        "first_over_capacity_target": 13_895_680,
        "zero_over_capacity_inclusion_prefixes": [2_097_152, 10_485_760],
    },
}
"""The paper's §5.1 figures, for the side-by-side column of the demo report."""


# --------------------------------------------------------------------------- JSON


def audit_headline(result: AuditResult, *, documents_file: str | None = None) -> str:
    """The report's plain-words first line (:func:`packing_theory.rendering.headline.headline`).

    >>> from packing_theory import PackerConfig
    >>> from packing_theory.orchestration import run_audit
    >>> res = run_audit([3, 40, 5, 50, 2, 60, 4, 70] * 3, PackerConfig(capacity=8, min_buffer=4, refill=2),
    ...                 permutations=0)
    >>> print(audit_headline(res).replace("; ", chr(10)))
    discard stopped at row 10 because the stream ran dry
    88.6% of your tokens (3 documents, the largest) were never trained
    the theorem predicts ≥ 3 never start at B = 4
    """
    return headline([(_sentence(result, i, documents_file), nt) for i, nt in enumerate(result.never_trained)])


def _sentence(result: AuditResult, i: int, documents_file: str | None) -> str:
    agg, h, nt = result.policies[i], result.horizons[i], result.never_trained[i]
    e = entry(agg.policy)
    predicted = theorem_prediction(e.in_family, e.protected_set, h, agg.protected.members)
    outside = None if e.in_family else e.status
    return packer_sentence(agg.policy, h, nt, predicted=predicted,
                           started_protected=agg.protected.started_members, documents_file=documents_file,
                           outside=outside)


def report_dict(result: AuditResult, *, reference: Mapping[str, Any] | None = None,
                run: Mapping[str, str] | None = None, documents_file: str | None = None) -> dict[str, Any]:
    """The version-2 JSON document of ``result`` (keys :data:`TOP_LEVEL_KEYS`); ``run`` from :func:`run_info`.

    >>> from packing_theory.orchestration import run_audit
    >>> res = run_audit([3, 9, 2, 4, 12, 1] * 20, policies=["discard"], permutations=2,
    ...                 config=__import__("packing_theory").PackerConfig(capacity=8, min_buffer=3, refill=2))
    >>> doc = report_dict(res)
    >>> doc["schema"], doc["version"], tuple(doc) == TOP_LEVEL_KEYS
    ('packing-theory/audit', 3, True)
    """
    from .._version import __version__
    from ..audit.strata import stratum_labels

    cfg = result.config
    evaluation: dict[str, Any] | None = None
    if result.eval_corpus is not None:
        evaluation = {"corpus": result.eval_corpus.to_dict(),
                      "populations": [e.to_dict() for e in result.evaluation]}
    extra: list[dict[str, Any]] = [{} for _ in result.policies]
    for i, (h, nt) in enumerate(zip(result.horizons, result.never_trained, strict=False)):
        extra[i] = {"horizon": h.to_dict(), "never_trained": nt.to_dict()}
    doc = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generator": {"name": "packing_theory", "version": __version__},
        "run": dict(run) if run is not None else None,
        "headline": audit_headline(result, documents_file=documents_file),
        "horizon": {**(result.horizon.to_dict() if result.horizon else {"unit": None, "value": None}),
                    "documents_file": documents_file},
        "corpus": result.corpus.to_dict(),
        "settings": {"capacity": cfg.capacity, "min_buffer": cfg.min_buffer,
                     "refill": list(cfg.batch_sizes), "passes": cfg.passes, "rows": cfg.row_budget,
                     "targets": (cfg.row_budget * (cfg.capacity - 1) if cfg.row_budget is not None else None),
                     "exhausted": cfg.exhausted, "random_span_seed": cfg.seed,
                     "max_wait": (cfg.max_wait if any(entry(a.policy).takes("max_wait")
                                                      for a in result.policies) else None),
                     "policies": [a.policy for a in result.policies]},
        "strata": {"boundaries": list(result.boundaries), "labels": stratum_labels(result.boundaries),
                   "convention": "BOS-inclusive original length L; stratum k holds "
                                 "boundaries[k-1] < L <= boundaries[k]; the last holds L > boundaries[-1]"},
        "policies": [{**a.to_dict(), **x} for a, x in zip(result.policies, extra, strict=True)],
        "startup": [s.to_dict() for s in result.startup],
        "evaluation": evaluation,
        "reference": dict(reference) if reference is not None else None,
        "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
    }
    out: dict[str, Any] = _plain(doc)
    return out


def _plain(value: Any) -> Any:
    """Tuples to lists and numpy scalars to Python numbers, recursively (JSON round-trips exactly)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (int, float, str, bool)):
        return value.item()
    return value


def write_json(result: AuditResult, path: str | os.PathLike[str], *,
               reference: Mapping[str, Any] | None = None) -> Path:
    """Write :func:`report_dict` as indented JSON to one file; return the path.

    A plain single-file write (no run id, no lock): for a report directory use
    :func:`write_report`.
    """
    out = Path(path)
    out.write_text(json.dumps(report_dict(result, reference=reference), indent=2) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- Markdown


def _spread(s: StartupSpread | None) -> str:
    if s is None or s.minimum is None:
        return "—"
    missing = sum(d is None for d in s.delays)
    extra = f", {missing} none" if missing else ""
    return f"{_mt(s.minimum)}–{_mt(s.maximum)} (n={s.permutations}{extra})"


def _eval_line(e: EvalPopulation) -> str:
    """One policy's row; a budget past what the stream let the run score is said so, not claimed."""
    parts = []
    scored = sum(e.target_counts)
    for p in e.prefixes:
        z = ", ".join(p.zero_inclusion) or "none"
        parts.append(f"{_mt(p.targets)}: {z}" if p.targets <= scored else f"{_mt(p.targets)}: not reached")
    z = ", ".join(e.zero_inclusion) or "none"
    if scored < e.targets:  # the stream ran dry: the population is what was scored, not the budget
        parts.append(f"**{_mt(scored)} scored (budget {_mt(e.targets)}; the stream ran dry): {z}**")
    else:
        parts.append(f"**{_mt(e.targets)}: {z}**")
    return (f"| {e.policy} | {'; '.join(parts)} | {_mt(e.first_over_capacity_target)} | "
            f"{_n(e.protected_tokens)} ({_pct(e.protected_share_of_arrived)}) |")


def render_markdown(result: AuditResult, *, reference: Mapping[str, Any] | None = None,
                    plots: Sequence[str] = (), run: Mapping[str, str] | None = None,
                    extra: Sequence[str] = (), documents_file: str | None = None,
                    notes: Mapping[str, str] | None = None) -> str:
    """A one-screen Markdown summary: the headline first, horizon and never trained, mass partition,
    sources, strata, startup, evaluation verdict, the glossary.

    With ``reference`` (e.g. :data:`PAPER_5_1`) a last column quotes the paper's figures;
    with ``run`` (:func:`run_info`) the last line names the run and the config hash;
    ``notes`` (plot file name -> sentence) says why a plot was not drawn.
    """
    lines = [audit_headline(result, documents_file=documents_file), "", "# Source-inclusion audit", "",
             _md_corpus_line(result), ""]
    lines += horizon_lines([(a.policy, h, nt) for a, h, nt in
                            zip(result.policies, result.horizons, result.never_trained, strict=False)])
    lines += _md_main_table(result, reference)
    lines += _md_strata_table(result, reference)
    lines += _md_evaluation(result, reference)
    lines += list(extra)
    lines += glossary_lines()
    if plots:
        lines += ["Plots: " + ", ".join(f"[{Path(p).name}]({Path(p).name})" for p in plots), ""]
    lines += [f"Not drawn: {name}: {why}" for name, why in (notes or {}).items()]
    lines += [""] if notes else []
    total = sum(result.seconds.values())
    lines.append(f"Computed in {total:.1f} s (replays, permutations, evaluation). "
                 f"Full figures: `audit.json` (schema packing-theory/audit v{SCHEMA_VERSION}).")
    if run is not None:
        lines += ["", run_line(run)]
    return "\n".join(lines) + "\n"


def _md_corpus_line(result: AuditResult) -> str:
    cfg, c = result.config, result.corpus
    budget = (f"{cfg.row_budget:,} rows = {cfg.row_budget * (cfg.capacity - 1):,} targets"
              if cfg.row_budget is not None else "until the stream ends")
    if result.horizon is not None and result.horizon.unit == "tokens":
        budget = f"{result.horizon.describe()} ({budget} for the streaming policies)"
    refill = ",".join(map(str, cfg.batch_sizes))
    name = f": {md_text(c.label)}" if c.label else ""
    line = (f"Corpus{name} — {c.documents:,} sources, {c.tokens:,} BOS-inclusive tokens "
            f"({c.over_capacity_documents:,} longer than R). R = {cfg.capacity:,}, "
            f"B = {cfg.min_buffer:,}, refill {refill}, passes {cfg.passes}, budget {budget}.")
    peers = [_peer_width(a.policy, a.capacity, a.peer_figures.options if a.peer_figures else {})
             for a in result.policies if entry(a.policy).kind != "streaming"]
    if peers:
        line += (" Peers (B and refill do not apply): " + "; ".join(peers)
                 + ". `--capacity` is the row width of every packer; `--seq-length L` gives the framework's "
                   "sequence length instead.")
    return line


def _peer_width(name: str, capacity: int, options: Mapping[str, Any]) -> str:
    """``name`` at its row width and the framework's sequence length that width is (its registry rule)."""
    e = entry(name)
    knobs = {k.name: options[k.name] for k in e.knobs if k.name in options}
    seq = e.row_width.seq_length(capacity, e.options(knobs))
    return f"{name} at row width {capacity:,} = sequence length {seq:,} ({e.row_width.rule})"


def _md_main_table(result: AuditResult, ref: Mapping[str, Any] | None) -> list[str]:
    """The quantities side by side, one column per policy, the paper's figures last (with ``ref``)."""
    aggs = list(result.policies)
    startup = {s.policy: s for s in result.startup}
    head = "| quantity | " + " | ".join(a.policy for a in aggs) + " |" + (" paper §5.1 |" if ref else "")
    lines = [head, "|---|" + "---:|" * len(aggs) + ("---|" if ref else "")]

    def ref_cell(*keys: tuple[str, str], fmt: Callable[[Any], str] = _n) -> str:
        if not ref:
            return ""
        vals = []
        for pol, key in keys:
            v = ref.get(pol, {}).get(key)
            if v is not None:
                vals.append(f"{fmt(v)} ({pol})" if len(keys) > 1 else fmt(v))
        return " " + ("; ".join(vals) or "—") + " |"

    def row(label: str, cells: list[str], refcell: str = "") -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |" + ((refcell or " |") if ref else ""))

    def pct2(v: float | None) -> str:
        return _pct(v, 2)

    three = ("discard", "continue", "segment-first")
    row("arrived tokens", [_n(a.mass.arrived_tokens) for a in aggs], ref_cell(("discard", "arrived_tokens")))
    row("+ added BOS", [_n(a.mass.added_bos) for a in aggs], ref_cell(("segment-first", "added_bos")))
    row("emitted tokens", [_n(a.mass.emitted_tokens) for a in aggs], ref_cell(("discard", "emitted_tokens")))
    row("discarded tokens", [_n(a.mass.discarded_tokens) for a in aggs],
        ref_cell(*((p, "discarded_tokens") for p in three)))
    row("buffered tokens", [_n(a.mass.buffered_tokens) for a in aggs],
        ref_cell(*((p, "buffered_tokens") for p in three)))
    row("mass identity", ["holds" if a.mass.identity_holds and not a.conservation_violations else "**FAILS**"
                          for a in aggs], " exact |")
    row("crop events", [_n(a.crop_events) for a in aggs], ref_cell(("discard", "crop_events")))
    row("median retained prefix", [_n(a.median_crop_prefix) for a in aggs],
        ref_cell(("discard", "median_crop_prefix")))
    row("crops emitting only BOS", [_n(a.crop_bos_only) for a in aggs],
        ref_cell(("discard", "crop_bos_only")))
    row("sources arrived", [_n(a.arrived_sources) for a in aggs],
        ref_cell(("discard", "arrived_sources"), ("segment-first", "arrived_sources")))
    row("sources started", [_n(a.started_sources) for a in aggs])
    row("sources never started", [_n(a.never_started_sources) for a in aggs])
    row("protected set (B−1 largest long)",
        [f"{_n(a.protected.members)}: {_n(a.protected.tokens)}" for a in aggs],
        ref_cell(("discard", "protected_tokens"), ("continue", "protected_tokens")))
    row("protected / arrived mass", [pct2(a.protected.share_of_arrived) for a in aggs],
        ref_cell(("discard", "protected_share_of_arrived"), fmt=pct2))
    row("protected / buffered mass", [pct2(a.protected.share_of_buffered) for a in aggs],
        ref_cell(("discard", "protected_share_of_buffered"), fmt=pct2))
    row("protected members started", [_n(a.protected.started_members) for a in aggs], " 0 (theorem) |")
    row("emitted from sources > R", [pct2(a.over_capacity_emitted_fraction) for a in aggs],
        ref_cell(("discard", "over_capacity_emitted_fraction"),
                 ("segment-first", "over_capacity_emitted_fraction"), fmt=pct2))
    row("startup delay (first target of a source > R)", [_mt(a.first_over_capacity_target) for a in aggs],
        " 13.90 M (dev stream) |")
    row("startup delay over permutations", [_spread(startup.get(a.policy)) for a in aggs],
        " 12.99–14.84 M (n=20) |")
    note = ("Protected members started = 0 is the proposition of seed 000 §3 for `discard` and "
            "`continue`; `segment-first` splits long sources before buffering and is outside it.")
    return [*lines, "", note, ""]


def _md_strata_table(result: AuditResult, ref: Mapping[str, Any] | None) -> list[str]:
    aggs = list(result.policies)
    lines = ["## Retention of loaded source tokens by original length (never-started sources)", "",
             "Strata: BOS-inclusive length, boundaries " + ", ".join(map(str, result.boundaries))
             + " (seed 000 §5.1), each `lo–hi` inclusive.", "",
             "| stratum | arrived | " + " | ".join(a.policy for a in aggs) + " |"
             + (" paper (discard) |" if ref else ""),
             "|---|---:|" + "---:|" * len(aggs) + ("---:|" if ref else "")]
    ret_ref = (ref or {}).get("discard", {}).get("retention", {})
    for s, row0 in enumerate(aggs[0].strata):
        cells = [f"{_pct(a.strata[s].retention)} ({_n(a.strata[s].never_started_sources)})" for a in aggs]
        extra = f" {_pct(ret_ref[row0.label])} |" if row0.label in ret_ref else (" |" if ref else "")
        lines.append(f"| {row0.label} | {_n(row0.arrived_sources)} | " + " | ".join(cells) + " |"
                     + (extra if ref else ""))
    return [*lines, ""]


def _md_evaluation(result: AuditResult, ref: Mapping[str, Any] | None) -> list[str]:
    if not result.evaluation or result.eval_corpus is None:
        return []
    ec = result.eval_corpus
    ename = f": {md_text(ec.label)}" if ec.label else ""
    lines = ["## Evaluation population (support statement, seed 000 §3)", "",
             f"Evaluation stream{ename} — {ec.documents:,} sources, {ec.tokens:,} tokens; "
             "strata present in it with **zero** scored sources, by target budget:", "",
             "| policy | zero-inclusion strata | first source > R | protected mass (of arrived) |",
             "|---|---|---:|---:|"]
    lines += [_eval_line(e) for e in result.evaluation]
    if ref:
        ev = ref.get("evaluation", {})
        first = _mt(ev.get("first_over_capacity_target"))
        share = _pct(ev.get("protected_share_of_arrived"))
        lines.append(f"| paper | no source > R in 2.10 M or 10.49 M | {first}"
                     f" | {_n(ev.get('protected_tokens'))} ({share}) |")
    return [*lines, "", f"Verdict ({result.evaluation[0].policy}): {result.evaluation[0].verdict}.", ""]


# --------------------------------------------------------------------------- all files


def write_report(
    result: AuditResult,
    outdir: str | os.PathLike[str],
    *,
    plots: bool = True,
    reference: Mapping[str, Any] | None = None,
    force: bool = False,
    config: Mapping[str, Any] | None = None,
) -> ReportFiles:
    """Write ``audit.html``, ``audit.json``, ``audit.md`` and (with ``plots``) the PNGs into ``outdir``.

    All of them as one unit.

    Goes through :class:`~packing_theory.reporting.ReportWriter`: locked,
    staged and swapped in together, the previous run's stale plots removed;
    ``force`` replaces report-named files this tool did not write. ``config``
    (default: the result's settings) is hashed into every file.
    A command that must validate ``outdir`` *before* computing opens a writer
    itself and calls :func:`write_report_files`.

    Raises:
        ImportError: ``plots=True`` without matplotlib.
        ReportError: see :meth:`~packing_theory.reporting.ReportWriter.open`.
        OSError: ``outdir`` cannot be created or written.
    """
    if config is None:
        config = {"settings": report_dict(result)["settings"]}
    with ReportWriter(outdir, names=REPORT_FILES, config=config, tool="packing_theory.rendering.write_report",
                      force=force) as writer:
        files = write_report_files(writer, result, plots=plots, reference=reference)
        writer.commit()
    root = Path(os.path.realpath(outdir))
    return ReportFiles(root / files.json.name, root / files.markdown.name,
                       tuple(root / p.name for p in files.plots),
                       None if files.html is None else root / files.html.name)


NEVER_TRAINED_SHOWN = 1000
"""The most never-trained documents the HTML page lists per packer (all of them are in the documents file)."""


def never_trained_documents(result: AuditResult, *, limit: int = NEVER_TRAINED_SHOWN) -> dict[str, Any]:
    """The page's table of documents with no emitted token (never started or never reached), largest first.

    One record per packer and document (packer, document, name, length, fate, buffered, never reached
    tokens), at most ``limit`` per packer, with a sentence saying how many were left out. Empty when
    the run kept no per-document table. O(documents log documents) per packer.

    >>> from packing_theory import PackerConfig
    >>> from packing_theory.orchestration import run_audit
    >>> res = run_audit([3, 40, 5, 50, 2, 60, 4, 70] * 3, PackerConfig(capacity=8, min_buffer=4, refill=2),
    ...                 permutations=0, documents=True)
    >>> page = never_trained_documents(res)
    >>> [(r["document"], r["length"], r["fate"]) for r in page["never_trained_documents"]]
    [(7, 70, 'never started'), (15, 70, 'never started'), (23, 70, 'never started')]
    """
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    for table in result.document_tables:
        fate = table.column("fate")
        idx = np.flatnonzero((fate == "never started") | (fate == "never reached"))
        order = idx[np.lexsort((idx, -table.column("length")[idx]))]
        for i in order[:limit].tolist():
            row = table.row(i)
            records.append({k: row[k] for k in ("packer", "document", "name", "length", "fate", "buffered",
                                                "never_reached")})
        if order.size > limit:
            notes.append(f"{table.packer}: the {limit:,} largest of {order.size:,} shown; all are in the "
                         "documents file")
    if not result.document_tables:
        return {}
    out: dict[str, Any] = {"never_trained_documents": records}
    if notes:
        out["never_trained_documents_note"] = "; ".join(notes)
    return out


def write_report_files(writer: ReportWriter, result: AuditResult, *, plots: bool = True,
                       reference: Mapping[str, Any] | None = None, sections: Mapping[str, Any] | None = None,
                       markdown: Sequence[str] = (), documents_file: str | None = None) -> ReportFiles:
    """Stage the report's files in an open ``writer`` (the caller commits). Returns the staged paths.

    ``sections`` adds top-level JSON entries (e.g. ``ranks``) and ``markdown``
    lines go before the Markdown's closing lines. ``documents_file`` (one of
    :data:`DOCUMENTS_FILES`) writes ``result.document_tables``, one row per document
    and packer (:func:`packing_theory.audit.documents.write_documents`).
    """
    from ..reporting.html import write_html

    run = writer.run_info
    pngs: tuple[Path, ...] = ()
    notes = plot_notes(result) if plots else {}
    if plots:
        pngs = tuple(write_plots(result, writer.path(PLOT_FILES[0]).parent, metadata=writer.png_metadata))
    if documents_file is not None:
        from ..audit.documents import write_documents

        write_documents(writer.path(documents_file), result.document_tables, run_id=writer.run_id)
    doc = report_dict(result, reference=reference, run=run, documents_file=documents_file)
    doc.update(sections or {})
    j = writer.write_json("audit.json", doc)
    md = writer.write_text("audit.md", render_markdown(result, reference=reference,
                                                       plots=[p.name for p in pngs], run=run, extra=markdown,
                                                       documents_file=documents_file, notes=notes))
    shown = [(n, notes.get(n)) for n in PLOT_FILES if n in notes or any(p.name == n for p in pngs)]
    page_doc = {**doc, **never_trained_documents(result)}
    page = write_html(writer, "audit.html", page_doc, title="Source-inclusion audit",
                      headline=audit_headline(result, documents_file=documents_file),
                      plots=shown, sections=PLOT_SECTIONS)
    return ReportFiles(j, md, pngs, page)
