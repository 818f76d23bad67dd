"""What a contamination scan measured: counts per input, per reference and per source, and its verdict.

Counts only: no record holds a matched window, a reference item or any text.

The verdict (:attr:`ContaminationReport.status`, the command's exit status):

* **1, overlap found**: at least one scanned window of a read input matched a
  reference gram. A finding wins over "not measured": what was found in the
  inputs that were read is real, and :attr:`~ContaminationReport.reasons`
  still lists what was not measured;
* **3, not measured**: something listed was not measured
  (:attr:`~ContaminationReport.reasons`): an input or a reference missing or
  unreadable, a reference with fewer (or more) rows than declared, a
  reference that yields no gram, no document or no gram scanned;
* **0**: every input and every reference listed was read, grams were
  scanned, and none matched.

So a zero-overlap report over inputs that were not read cannot be written:
every input records whether it was read and what it contributed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..corpus.verify import EXIT_FOUND, EXIT_OK, EXIT_UNMEASURED
from ..reporting.markdown import md_cell, md_text
from .hashing import HASH_BITS, HASH_DESCRIPTION, expected_false_positives

__all__ = [
    "ContaminationReport",
    "InputRecord",
    "ReferenceRecord",
    "SourceRecord",
]


@dataclass
class InputRecord:
    """One listed training input (a shard, a text or parquet file) and what it contributed."""

    name: str
    kind: str
    source: str | None = None
    read: bool = False
    error: str | None = None
    first_document: int | None = None
    documents: int = 0
    tokens: int = 0
    grams: int = 0
    short_documents: int = 0
    matched_grams: int = 0
    documents_with_any_hit: int = 0
    majority_hit_documents: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class ReferenceRecord:
    """One reference set and what it contributed (grams) and matched (in the corpus)."""

    name: str
    path: str
    columns: list[str] | None
    per_line: bool | None
    declared_rows: int | None
    read: bool = False
    error: str | None = None
    rows: int = 0
    items: int = 0
    nulls: int = 0
    tokens: int = 0
    windows: int = 0
    grams: int = 0
    grams_found: int = 0
    matched_grams: int = 0
    documents_with_any_hit: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class SourceRecord:
    """Documents of one data source and how many of them hold reference grams."""

    documents: int = 0
    grams: int = 0
    matched_grams: int = 0
    documents_with_any_hit: int = 0
    majority_hit_documents: int = 0

    @property
    def hit_document_fraction(self) -> float | None:
        """Documents with any hit over documents (``None`` without documents)."""
        return self.documents_with_any_hit / self.documents if self.documents else None

    def add(self, other: InputRecord) -> None:
        """Add an input's counts."""
        self.documents += other.documents
        self.grams += other.grams
        self.matched_grams += other.matched_grams
        self.documents_with_any_hit += other.documents_with_any_hit
        self.majority_hit_documents += other.majority_hit_documents

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the hit-document fraction."""
        return {**asdict(self), "hit_document_fraction": self.hit_document_fraction}


@dataclass
class ContaminationReport:
    """The result of :func:`~packing_theory.contamination.scan_contamination` (see the module docstring).

    Attributes:
        n: window length in tokens.
        tokenizer: how texts were tokenized (a built-in name or the callable's name).
        exclude: the exclusion rule of the mask (``"any"``: a document with
            any matched gram; ``"majority"``: more than half of its grams matched).
        inputs, references: one record each, in the order given.
        index: the index's shape (mode, bound, passes).
        reference_grams: ``G``, distinct reference hashes.
        grams_found: distinct reference hashes that occur in the scanned inputs.
        reasons: why the scan did not measure (empty when it did).
        mask: the exclusion mask (``uint8``, one byte per document of the
            inputs in order), or ``None`` when the scan did not measure.
        lengths: the BOS-inclusive lengths of those documents (the mask's
            fingerprint), or ``None`` with the mask.
    """

    n: int
    tokenizer: str
    exclude: str
    inputs: list[InputRecord]
    references: list[ReferenceRecord]
    index: dict[str, Any]
    reference_grams: int = 0
    grams_found: int = 0
    reasons: list[str] = field(default_factory=list)
    mask: npt.NDArray[np.uint8] | None = None
    lengths: npt.NDArray[np.int64] | None = None
    seconds: float = 0.0

    # ------------------------------------------------------------------ totals

    def _total(self, key: str) -> int:
        return sum(int(getattr(r, key)) for r in self.inputs if r.read)

    @property
    def documents_scanned(self) -> int:
        """Documents scanned (of the inputs that were read)."""
        return self._total("documents")

    @property
    def grams_scanned(self) -> int:
        """``W``: windows scanned."""
        return self._total("grams")

    @property
    def matched_grams(self) -> int:
        """Scanned windows whose hash is a reference gram's (positions, counted with repetition)."""
        return self._total("matched_grams")

    @property
    def documents_with_any_hit(self) -> int:
        """Documents holding at least one matched window."""
        return self._total("documents_with_any_hit")

    @property
    def majority_hit_documents(self) -> int:
        """Documents more than half of whose windows matched (verbatim inclusion)."""
        return self._total("majority_hit_documents")

    @property
    def expected_false_positives(self) -> float:
        """``W * G / 2**64`` (:func:`~packing_theory.contamination.expected_false_positives`)."""
        return expected_false_positives(self.grams_scanned, self.reference_grams)

    @property
    def measured(self) -> bool:
        """Every listed input and reference was read, and documents and grams were scanned."""
        return not self.reasons

    @property
    def overlap(self) -> bool:
        """Some scanned window matched."""
        return self.matched_grams > 0

    @property
    def status(self) -> int:
        """1 overlap found, else 3 not measured, else 0 (the exit status)."""
        if self.overlap:
            return EXIT_FOUND
        return EXIT_UNMEASURED if self.reasons else EXIT_OK

    @property
    def verdict(self) -> str:
        """``"overlap found"``, ``"not measured"`` or ``"no overlap"``."""
        names = {EXIT_FOUND: "overlap found", EXIT_UNMEASURED: "not measured", EXIT_OK: "no overlap"}
        return names[self.status]

    def sources(self) -> tuple[dict[str, SourceRecord], SourceRecord]:
        """Per data source (inputs that were read and name one), and the documents of no known source."""
        out: dict[str, SourceRecord] = {}
        unattributed = SourceRecord()
        for r in self.inputs:
            if not r.read:
                continue
            (out.setdefault(r.source, SourceRecord()) if r.source is not None else unattributed).add(r)
        return dict(sorted(out.items())), unattributed

    # ------------------------------------------------------------------ output

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (counts only)."""
        sources, unattributed = self.sources()
        excluded = None if self.mask is None else int(self.mask.sum())
        return {
            "verdict": {"status": self.status, "verdict": self.verdict, "overlap": self.overlap,
                        "measured": self.measured, "reasons": list(self.reasons)},
            "method": {"n": self.n, "unit": "token ids", "tokenizer": self.tokenizer,
                       "windows": "inside documents only; a shard document's first token (its BOS) is "
                                  "skipped; texts get no BOS",
                       "hash": {"bits": HASH_BITS, "function": HASH_DESCRIPTION},
                       "exclude": self.exclude},
            "false_positives": {"formula": "W * G / 2**64", "windows_scanned": self.grams_scanned,
                                "reference_grams": self.reference_grams,
                                "expected": self.expected_false_positives},
            "index": dict(self.index),
            "totals": {"inputs": len(self.inputs), "inputs_read": sum(r.read for r in self.inputs),
                       "references": len(self.references),
                       "references_read": sum(r.read for r in self.references),
                       "documents": self.documents_scanned, "grams": self.grams_scanned,
                       "matched_grams": self.matched_grams,
                       "documents_with_any_hit": self.documents_with_any_hit,
                       "majority_hit_documents": self.majority_hit_documents,
                       "reference_grams": self.reference_grams, "reference_grams_found": self.grams_found},
            "inputs": [r.to_dict() for r in self.inputs],
            "references": [r.to_dict() for r in self.references],
            "sources": {k: v.to_dict() for k, v in sources.items()},
            "unattributed": unattributed.to_dict(),
            "mask": {"written": self.mask is not None,
                     "documents": None if self.mask is None else int(self.mask.size), "excluded": excluded,
                     "why_not": None if self.mask is not None else
                     "the scan did not measure (see verdict.reasons)"},
            "seconds": self.seconds,
        }

    def lines(self) -> list[str]:
        """A short summary for standard error: one line per reason, then the totals and the verdict."""
        out = [f"NOT MEASURED {reason}" for reason in self.reasons]
        out.append(
            f"{sum(r.read for r in self.inputs)}/{len(self.inputs)} inputs read, "
            f"{sum(r.read for r in self.references)}/{len(self.references)} references read; "
            f"{self.documents_scanned:,} documents, {self.grams_scanned:,} {self.n}-grams scanned against "
            f"{self.reference_grams:,} reference grams: {self.matched_grams:,} matched grams, "
            f"{self.documents_with_any_hit:,} documents with any hit, {self.majority_hit_documents:,} "
            f"majority-hit; expected false positives {self.expected_false_positives:.3g}: "
            f"{self.verdict} (exit {self.status})")
        return out

    def headline(self) -> str:
        """The verdict in plain words: what was found, over what, and whether everything listed was read."""
        over = (f"{self.documents_scanned:,} training document(s), {self.grams_scanned:,} {self.n}-grams "
                f"against {self.reference_grams:,} reference grams")
        missing = (f"; {len(self.reasons)} thing(s) not measured, first: {self.reasons[0]}"
                   if self.reasons else "")
        if self.status == 1:
            return (f"overlap found: {self.matched_grams:,} matched {self.n}-grams in "
                    f"{self.documents_with_any_hit:,} document(s) ({self.majority_hit_documents:,} "
                    f"majority-hit) of {over}{missing}")
        if self.status == 3:
            return f"not measured: {over}{missing}"
        return f"no overlap: {over}; everything listed was read"

    def markdown(self, run_line: str = "") -> str:
        """The Markdown report (counts only)."""
        d = self.to_dict()
        t = d["totals"]
        md = [self.headline(), "", f"# Contamination audit: {self.verdict}", "",
              f"Exit status {self.status}. {self.n}-grams of token ids ({self.tokenizer}), 64-bit hashes; "
              f"{t['inputs_read']}/{t['inputs']} inputs and {t['references_read']}/{t['references']} "
              "references read.", ""]
        if self.reasons:
            md += ["**Not measured:**", ""] + [f"- {r}" for r in self.reasons] + [""]
        md += ["| documents | grams scanned | matched grams | documents with any hit "
               "| majority-hit documents | reference grams | found in corpus | expected false positives |",
               "|---:|---:|---:|---:|---:|---:|---:|---:|",
               f"| {t['documents']:,} | {t['grams']:,} | {t['matched_grams']:,} | "
               f"{t['documents_with_any_hit']:,} | {t['majority_hit_documents']:,} | "
               f"{t['reference_grams']:,} | "
               f"{t['reference_grams_found']:,} | {self.expected_false_positives:.3g} |", "",
               f"Expected false positives = W · G / 2^64 = {t['grams']:,} · {t['reference_grams']:,} / 2^64. "
               f"Index: {self.index.get('mode')}, {self.index.get('passes')} pass(es), at most "
               f"{self.index.get('memory_grams'):,} grams in memory.", "",
               "## References", "",
               "| reference | read | rows (declared) | items | grams | found in corpus | matched windows "
               "| documents hit |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in self.references:
            declared = "" if r.declared_rows is None else f" ({r.declared_rows:,})"
            md.append(f"| {md_cell(r.name)} | {'yes' if r.read else 'NO: ' + md_text(r.error)} | "
                      f"{r.rows:,}{declared} | "
                      f"{r.items:,} | {r.grams:,} | {r.grams_found:,} | {r.matched_grams:,} | "
                      f"{r.documents_with_any_hit:,} |")
        md += ["", "## Inputs", "", "| input | source | read | documents | grams | matched grams "
               "| documents hit | majority-hit |", "|---|---|---|---:|---:|---:|---:|---:|"]
        for i in self.inputs:
            md.append(f"| {md_cell(i.name)} | {md_text(i.source or '')} | "
                      f"{'yes' if i.read else 'NO: ' + md_text(i.error)} | "
                      f"{i.documents:,} | {i.grams:,} | {i.matched_grams:,} | {i.documents_with_any_hit:,} | "
                      f"{i.majority_hit_documents:,} |")
        sources, unattributed = self.sources()
        md += ["", "## Sources", "", "| source | documents | documents hit | hit fraction | majority-hit |",
               "|---|---:|---:|---:|---:|"]
        for name, s in [*sources.items(), ("(unattributed)", unattributed)]:
            frac = "" if s.hit_document_fraction is None else f"{s.hit_document_fraction:.4%}"
            md.append(f"| {md_cell(name)} | {s.documents:,} | {s.documents_with_any_hit:,} | {frac} | "
                      f"{s.majority_hit_documents:,} |")
        mask = d["mask"]
        md += ["", "## Exclusion mask", "",
               (f"`exclude.u8`: {mask['documents']:,} documents, {mask['excluded']:,} excluded "
                f"(rule: {self.exclude})." if mask["written"] else f"Not written: {mask['why_not']}."), ""]
        if run_line:
            md += [run_line, ""]
        return "\n".join(md)
