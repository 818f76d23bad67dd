"""What a contamination scan measured: counts per input, per reference and per source, and its verdict.

Counts only: no record holds a matched window, a reference item or any text.

The verdict (:attr:`ContaminationReport.status`, the command's exit status),
as seed 002 §11-12 made it composite ("not measured" wins over a verdict):

* **3, not measured**: something listed was not measured
  (:attr:`~ContaminationReport.reasons`): an input or a reference missing or
  unreadable, a reference with fewer (or more) rows than declared, a
  reference that yields no gram, no document or no gram scanned. Overlap
  found in what *was* read is still counted and listed in the report (a
  finding over an incomplete audit is real, but the audit is not complete,
  and a report must never look complete when it is not);
* **1, overlap found**: everything listed was read, and at least one scanned
  window matched a reference gram;
* **0**: everything listed was read, grams were scanned, and none matched.

So a zero-overlap report over inputs that were not read cannot be written:
every input records whether it was read and what it contributed.

Every hit document is listed (:class:`HitDocument`) by its raw corpus index
(its position among the documents of the inputs in order; ``None`` after an
input that was not read), its name (a dataset's id or name, else its file
and its place there: ``FILE#k``, as ``audit`` and ``explain`` name it:
:func:`~packing_theory.corpus.readers.names.reader_names`) and its data source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ..corpus.verify import EXIT_FOUND, EXIT_OK, EXIT_UNMEASURED
from ..reporting.model import Attachment, PlotFile, Section
from .hashing import HASH_BITS, HASH_DESCRIPTION, expected_false_positives

__all__ = [
    "HITS_IN_JSON",
    "ContaminationReport",
    "HitDocument",
    "InputRecord",
    "ReferenceRecord",
    "SourceHits",
]


HITS_IN_JSON = 1000
"""Hit documents listed in ``contamination.json`` (every one is in ``hit_documents.jsonl``)."""


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
    pieces: int = 0
    largest_piece_tokens: int = 0
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
class SourceHits:
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the hit-document fraction."""
        return {**asdict(self), "hit_document_fraction": self.hit_document_fraction}


@dataclass
class HitDocument:
    """One training document with at least one matched window.

    Attributes:
        index: its raw corpus index (``None`` when an earlier input was not read).
        name: a dataset's id or name for it, else ``FILE#k``, the k-th document of the file holding it
            (a saved dataset's Arrow file, an MDS shard; a file's only document: ``FILE``).
        source: its data source, when known.
        input: the input it was read from, and ``position`` its index there.
        matched_grams: its matched windows; ``grams`` its windows.
        references: the references holding at least one of its matched windows.
    """

    index: int | None
    name: str
    source: str | None
    input: str
    position: int
    matched_grams: int
    grams: int
    references: list[str]

    @property
    def majority(self) -> bool:
        """More than half of its windows matched."""
        return 2 * self.matched_grams > self.grams

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**asdict(self), "majority": self.majority}


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
        source_records: per data source, the documents of known source.
        unattributed: the documents of no known source.
        sources_origin: where the sources came from (a labels file, a column, ...), or ``None``.
        hit_documents: every hit document, in corpus order.
        mask: the exclusion mask (``uint8``, one byte per document of the
            inputs in order), or ``None`` when the scan did not measure.
        lengths: the BOS-inclusive lengths of those documents (the mask's
            fingerprint), or ``None`` with the mask.
        seconds: wall time of the scan; ``timings``: wall and CPU seconds (of
            this process: not of worker processes) of reading the references
            and building the index, and of the scan and summary.
        corpus: the training corpus in words (the command's inputs).
        settings: what determines the report (``n``, tokenizer, rule, bound,
            references): hashed, with the corpus, into every file's config hash.

    It implements the :class:`~packing_theory.reporting.model.Report` protocol
    (kind ``contamination``): :meth:`headline`, :meth:`to_dict`,
    :meth:`sections`, :meth:`plots`, :meth:`attachments`.
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
    source_records: dict[str, SourceHits] = field(default_factory=dict)
    unattributed: SourceHits = field(default_factory=SourceHits)
    sources_origin: str | None = None
    hit_documents: list[HitDocument] = field(default_factory=list)
    mask: npt.NDArray[np.uint8] | None = None
    lengths: npt.NDArray[np.int64] | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    corpus: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    kind: ClassVar[str] = "contamination"
    title: ClassVar[str] = "Contamination audit"
    file_names: ClassVar[tuple[str, ...]] = ("hit_documents.jsonl", "exclude.u8", "exclude.json")
    """Attachments written only sometimes (the mask): a run without them removes the previous run's."""

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
        """3 not measured, else 1 overlap found, else 0 (the exit status): "not measured" wins."""
        if self.reasons:
            return EXIT_UNMEASURED
        return EXIT_FOUND if self.overlap else EXIT_OK

    @property
    def verdict(self) -> str:
        """``"overlap found"``, ``"not measured"`` or ``"no overlap"``."""
        names = {EXIT_FOUND: "overlap found", EXIT_UNMEASURED: "not measured", EXIT_OK: "no overlap"}
        return names[self.status]

    def sources(self) -> tuple[dict[str, SourceHits], SourceHits]:
        """Per data source, and the documents of no known source."""
        return dict(sorted(self.source_records.items())), self.unattributed

    # ------------------------------------------------------------------ output

    def to_dict(self, run: Mapping[str, str] | None = None, *, hit_limit: int | None = HITS_IN_JSON
                ) -> dict[str, Any]:
        """The JSON report (counts, and the hit documents' index, name and source; never a text).

        ``run`` is the run entry (id, config hash, tool); ``hit_limit`` keeps the
        first so many hit documents (``None``: all; every one is in ``hit_documents.jsonl``).
        """
        sources, unattributed = self.sources()
        excluded = None if self.mask is None else int(self.mask.sum())
        hits = self.hit_documents if hit_limit is None else self.hit_documents[:hit_limit]
        head: dict[str, Any] = {"schema": "packing-theory/contamination", "version": 2}
        if run is not None:
            head["run"] = dict(run)
        return {
            **head,
            "headline": self.headline(),
            "settings": dict(self.settings),
            "corpus": {"label": self.corpus, "documents": self.documents_scanned,
                       "tokens": self._total("tokens")},
            "verdict": {"status": self.status, "verdict": self.verdict, "overlap": self.overlap,
                        "measured": self.measured, "reasons": list(self.reasons)},
            "method": {"n": self.n, "unit": "token ids", "tokenizer": self.tokenizer,
                       "windows": "inside documents only; a shard document's first token (its BOS) is "
                                  "skipped; other token formats are scanned as stored; texts get no BOS",
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
            "sources_from": self.sources_origin,
            "sources": {k: v.to_dict() for k, v in sources.items()},
            "unattributed": unattributed.to_dict(),
            "hit_documents": {"count": len(self.hit_documents), "listed": len(hits),
                              "file": "hit_documents.jsonl", "documents": [h.to_dict() for h in hits]},
            "mask": {"written": self.mask is not None, "path": None if self.mask is None else "exclude.u8",
                     "documents": None if self.mask is None else int(self.mask.size), "excluded": excluded,
                     "why_not": None if self.mask is not None else
                     "the scan did not measure (see verdict.reasons)"},
            "seconds": self.seconds,
            "timings": dict(self.timings),
        }

    def _found(self) -> str:
        """What was found, each share beside its own quantity."""
        docs = self.documents_scanned
        share = f" ({self.documents_with_any_hit / docs:.2%})" if docs else ""
        return (f"{self.matched_grams:,} matched {self.n}-grams in {self.documents_with_any_hit:,} of "
                f"{docs:,} training document(s){share}, {self.majority_hit_documents:,} majority-hit; "
                f"{self.grams_scanned:,} {self.n}-grams scanned against {self.reference_grams:,} reference "
                "grams")

    def lines(self) -> list[str]:
        """A short summary for standard error: one line per reason, then the totals and the verdict."""
        out = [f"NOT MEASURED {reason}" for reason in self.reasons]
        out.append(f"{sum(r.read for r in self.inputs)}/{len(self.inputs)} inputs read, "
                   f"{sum(r.read for r in self.references)}/{len(self.references)} references read; "
                   f"{self._found()}; expected false positives {self.expected_false_positives:.3g}: "
                   f"{self.verdict} (exit {self.status})")
        return out

    def headline(self) -> str:
        """The verdict in one sentence: whether everything listed was read, and what was found, over what."""
        if self.status == EXIT_UNMEASURED:
            first = self.reasons[0]
            return (f"not measured: {len(self.reasons)} thing(s) not measured (first: {first}); in what was "
                    f"read, {self._found()}")
        if self.status == EXIT_FOUND:
            return f"overlap found: {self._found()}; everything listed was read"
        return f"no overlap: {self._found()}; everything listed was read"

    def markdown(self, run_line: str = "") -> str:
        """The Markdown report (:func:`~packing_theory.reporting.markdown.render_markdown`)."""
        from ..reporting.markdown import render_markdown

        text = render_markdown(self)
        return text + (f"\n{run_line}\n" if run_line else "")

    # ------------------------------------------------------------------ the report model

    def sections(self) -> Sequence[Section]:
        """What a person reads, answer card first (:func:`~.sections.report_sections`)."""
        from .sections import report_sections

        return report_sections(self)

    def plots(self) -> Sequence[PlotFile]:
        """None: every number is in the tables."""
        return []

    def attachments(self) -> Sequence[Attachment]:
        """``hit_documents.jsonl``; with the mask, ``exclude.u8`` and ``exclude.json``."""
        from .sections import report_attachments

        return report_attachments(self)
