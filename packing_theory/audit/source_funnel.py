"""The cleaning funnel joined to a packer: per source, from the raw corpus through each stage to trained.

:func:`funnel_table` follows every data source from the raw corpus
(:class:`~packing_theory.corpus.funnel.FunnelResult`) through each cleaning
stage, then to the documents that arrived at the packer and those it started
in a complete row, and ends with the trained tokens. Its reconciliation can
fail: it recomputes, independently of the figures it checks,

* the funnel itself (:meth:`FunnelResult.reconcile
  <packing_theory.corpus.funnel.FunnelResult.reconcile>`): a stage removes
  only documents that reached it, the removed sets are disjoint, each
  stage's recorded counts are its mask's, ``keep`` is what no stage removed,
  and per source ``raw = kept + Σ removed`` in documents and tokens;
* the join: every arrival is a kept document with its raw length, the
  accounts' documents are the kept ones, their arrived tokens are the raw
  lengths of the arrivals, their trained tokens are the ledger's emitted
  tokens less those placed in the unfinished row (summed through the raw
  labels, not the accounts'), and their documents started are the
  occurrences first placed in a complete row;
* the steps shrink: ``raw ≥`` each stage ``≥ arrived ≥ started``.

Every failure is a :class:`~packing_theory.corpus.funnel.FunnelProblem`
naming the stage and the source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..corpus.funnel import FunnelProblem, FunnelResult
from ..corpus.labels import SourceLabels
from ..errors import InputError
from ..lengths import validate_lengths
from .source_series import SourceSeries
from .sources import SourceAccount

__all__ = ["FunnelSource", "FunnelTable", "funnel_table"]

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True)
class FunnelSource:
    """One source from raw to trained: documents and tokens per step, what each stage removed, its problems.

    ``steps`` are ``raw``, each stage's name, ``arrived`` (documents with an arrival before the horizon)
    and ``started`` (a placement in a complete row); ``documents[k]`` / ``tokens[k]`` are those left after
    step ``k``; ``removed_documents[k]`` / ``removed_tokens[k]`` what stage ``k`` removed.
    """

    source: str
    steps: tuple[str, ...]
    documents: tuple[int, ...]
    tokens: tuple[int, ...]
    removed_documents: tuple[int, ...]
    removed_tokens: tuple[int, ...]
    trained_tokens: int
    unfinished_row_tokens: int
    problems: tuple[FunnelProblem, ...]

    @property
    def reconciles(self) -> bool:
        """Whether no check concerning this source failed."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"steps": list(self.steps), "documents": list(self.documents), "tokens": list(self.tokens),
                "removed_documents": list(self.removed_documents),
                "removed_tokens": list(self.removed_tokens), "trained_tokens": self.trained_tokens,
                "unfinished_row_tokens": self.unfinished_row_tokens, "reconciles": self.reconciles,
                "problems": [p.message for p in self.problems]}


@dataclass(frozen=True)
class FunnelTable:
    """Every source's funnel for one packer, and every failed check (:attr:`problems`, each naming its
    stage and source when it has them)."""

    steps: tuple[str, ...]
    sources: tuple[FunnelSource, ...]
    problems: tuple[FunnelProblem, ...]

    @property
    def reconciles(self) -> bool:
        """Whether every check passed."""
        return not self.problems

    def source(self, name: str) -> FunnelSource:
        """One source's row."""
        for s in self.sources:
            if s.source == name:
                return s
        raise KeyError(f"source {name!r} is not in the funnel (sources: {[s.source for s in self.sources]})")

    def headline(self) -> str:
        """One sentence: raw to started documents, and whether it reconciles."""
        docs = [sum(s.documents[k] for s in self.sources) for k in range(len(self.steps))]
        flow = " → ".join(f"{step} {d:,}" for step, d in zip(self.steps, docs, strict=True))
        verdict = "reconciles" if self.reconciles else f"does NOT reconcile ({len(self.problems)} problem(s))"
        return f"documents {flow}; the funnel {verdict}."

    def markdown(self) -> list[str]:
        """A table of documents per step per source, trained tokens, and the problems."""
        head = ["source", *self.steps, "trained tokens", "unfinished row", "reconciles"]
        lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
        for s in self.sources:
            cells = [s.source, *(f"{d:,}" for d in s.documents), f"{s.trained_tokens:,}",
                     f"{s.unfinished_row_tokens:,}", "yes" if s.reconciles else "NO"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        lines += [f"- {p.message}" for p in self.problems]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``steps``, per-source rows under ``sources``, ``problems``, ``reconciles``."""
        return {"steps": list(self.steps), "sources": {s.source: s.to_dict() for s in self.sources},
                "problems": [p.to_dict() for p in self.problems], "reconciles": self.reconciles}


def _sum_by(codes: Int64Array, values: npt.ArrayLike, S: int) -> Int64Array:
    out = np.zeros(S, np.int64)
    np.add.at(out, codes, np.asarray(values, np.int64))
    return out


def funnel_table(
    funnel: FunnelResult | None,
    raw_labels: SourceLabels,
    raw_lengths: npt.ArrayLike,
    accounts: Sequence[SourceAccount],
    arrays: Mapping[str, npt.NDArray[Any]],
    series: SourceSeries,
) -> FunnelTable:
    """Per source, documents and tokens from raw through each stage to arrived, started and trained; checked.

    ``raw_labels`` / ``raw_lengths``: the corpus before the funnel (``funnel``
    ``None``: nothing removed); the packer replayed the documents
    ``funnel.keep`` kept, in order (``arrays["source"]`` indexes those);
    ``accounts``: :func:`~packing_theory.audit.sources.source_accounts` of that
    replay; ``arrays`` / ``series``: the ledger's columns and the
    :class:`~packing_theory.audit.source_series.SourceSeries` fed the same stream.
    See the module docstring for what is checked. O(documents × stages + occurrences).

    Raises:
        InputError: labels of another length than the raw corpus, a funnel applied to another corpus size.
    """
    raw = validate_lengths(raw_lengths)
    raw_labels.check_documents(raw.size)
    if funnel is not None and funnel.keep.shape != (raw.size,):
        raise InputError(f"the funnel was applied to {funnel.keep.size:,} documents, the corpus has "
                         f"{raw.size:,}")
    names, S = raw_labels.names, len(raw_labels.names)
    codes = raw_labels.codes.astype(np.int64)
    keep = np.ones(raw.size, np.bool_) if funnel is None else np.asarray(funnel.keep, np.bool_)
    kept_ids = np.flatnonzero(keep)
    problems: list[FunnelProblem] = [] if funnel is None else list(funnel.reconcile(raw_labels, raw))
    stage_names = [] if funnel is None else [st.stage.name for st in funnel.stages]
    steps = ("raw", *stage_names, "arrived", "started")

    arrived = np.asarray(arrays["arrived"], np.bool_)
    occ = np.flatnonzero(arrived)
    doc = np.asarray(arrays["source"], np.int64)[occ]
    if doc.size and (doc.min() < 0 or doc.max() >= kept_ids.size):
        bad = int(doc.max()) if doc.max() >= kept_ids.size else int(doc.min())
        problems.append(FunnelProblem(None, None, f"an arrival names document {bad:,}, not one of the "
                                      f"{kept_ids.size:,} documents the funnel kept"))
        doc = np.clip(doc, 0, max(kept_ids.size - 1, 0))
    rid = kept_ids[doc] if kept_ids.size else np.zeros(0, np.int64)
    rcode = codes[rid]
    length = np.asarray(arrays["length"], np.int64)[occ]
    emitted = np.asarray(arrays["emitted"], np.int64)[occ]
    total_occ = int(arrived.size)
    unfinished = series.unfinished_per_occurrence(max(total_occ, series.first_row.size))[occ]
    first = np.full(max(total_occ, series.first_row.size), -1, np.int64)
    first[: series.first_row.size] = series.first_row
    placed_row = first[occ]
    ledger_started = np.asarray(arrays["started"], np.bool_)[occ]
    in_complete = (placed_row >= 0) & (placed_row < series.rows)

    problems += _join_problems(names, rcode, rid, raw, length, placed_row, ledger_started,
                               first, arrived)
    kept_docs = np.bincount(codes[keep], minlength=S)
    checks = (
        ("documents kept", kept_docs, "documents", [a.documents for a in accounts]),
        ("arrived tokens (raw lengths of the arrivals)", _sum_by(rcode, raw[rid], S), "arrived_tokens",
         [a.arrived_tokens for a in accounts]),
        ("trained tokens (the ledger's emitted, less the unfinished row)",
         _sum_by(rcode, emitted - unfinished, S), "trained_tokens", [a.trained_tokens for a in accounts]),
        ("documents started (first placed in a complete row)", _sum_by(rcode, in_complete, S), "started",
         [a.started for a in accounts]),
    )
    by_name = {a.source: k for k, a in enumerate(accounts)}
    for what, recomputed, field, claimed in checks:
        for s, name in enumerate(names):
            k = by_name.get(name)
            got = 0 if k is None else int(claimed[k])
            if got != int(recomputed[s]):
                problems.append(FunnelProblem(None, name, f"source {name!r}: the accounts' {field} {got:,}; "
                                              f"recomputed {what}: {int(recomputed[s]):,}"))

    per = (funnel.per_source(raw_labels, raw) if funnel is not None else
           {n: {"documents": [int(np.sum(codes == s))], "tokens": [int(raw[codes == s].sum())]}
            for s, n in enumerate(names)})
    reached = np.zeros(raw.size, np.bool_)
    reached[rid] = True
    began = np.zeros(raw.size, np.bool_)
    began[rid[in_complete]] = True
    rows = []
    for s, name in enumerate(names):
        mine = codes == s
        docs = [*per[name]["documents"], int((reached & mine).sum()), int((began & mine).sum())]
        toks = [*per[name]["tokens"], int(raw[reached & mine].sum()), int(raw[began & mine].sum())]
        for k in range(len(steps) - 1):
            if docs[k + 1] > docs[k] or toks[k + 1] > toks[k]:
                problems.append(FunnelProblem(
                    steps[k + 1], name, f"source {name!r}: step {steps[k + 1]!r} holds more than step "
                    f"{steps[k]!r} ({docs[k + 1]:,} > {docs[k]:,} documents or {toks[k + 1]:,} > {toks[k]:,} "
                    "tokens)"))
        n_st = len(stage_names)
        k = by_name.get(name)
        rows.append((name, docs, toks, [docs[j] - docs[j + 1] for j in range(n_st)],
                     [toks[j] - toks[j + 1] for j in range(n_st)],
                     0 if k is None else accounts[k].trained_tokens,
                     0 if k is None else accounts[k].unfinished_row_tokens))
    return FunnelTable(steps, tuple(
        FunnelSource(name, steps, tuple(d), tuple(t), tuple(rd), tuple(rt), tr, un,
                     tuple(p for p in problems if p.source == name))
        for name, d, t, rd, rt, tr, un in rows), tuple(problems))


def _join_problems(names: tuple[str, ...], rcode: Int64Array, rid: Int64Array, raw: Int64Array,
                   length: Int64Array, placed_row: Int64Array, ledger_started: npt.NDArray[np.bool_],
                   first: Int64Array, arrived: npt.NDArray[np.bool_]) -> list[FunnelProblem]:
    """Per source: arrivals with another length than their raw document; placements the ledger does not
    start (or the reverse); placements of occurrences that never arrived."""
    out: list[FunnelProblem] = []
    for s, name in enumerate(names):
        mine = rcode == s
        wrong = mine & (length != raw[rid])
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            out.append(FunnelProblem(None, name, f"source {name!r}: {int(wrong.sum()):,} arrival(s) with "
                                     f"another length than their raw document (raw {int(rid[i])}: "
                                     f"{int(length[i]):,} arrived, {int(raw[rid[i]]):,} in the corpus)"))
        split = mine & ((placed_row >= 0) != ledger_started)
        if split.any():
            out.append(FunnelProblem(None, name, f"source {name!r}: {int(split.sum()):,} occurrence(s) "
                                     "placed in the rows but not started in the ledger, or the reverse"))
    ghost = (first[: arrived.size] >= 0) & ~arrived
    if (first.size > arrived.size and (first[arrived.size:] >= 0).any()) or ghost.any():
        out.append(FunnelProblem(None, None, "the rows place an occurrence that never arrived"))
    return out
