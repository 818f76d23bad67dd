"""From a scan's tallies to its report: per input, reference and source, the hit documents, the mask.

:func:`summarise` fills a :class:`~packing_theory.contamination.report.ContaminationReport`
from the per-input :class:`~packing_theory.contamination.results.InputTally`\\ s:

* an input's documents get raw corpus indices from its position: the
  documents of the inputs before it (unknown, ``None``, after an input that
  was not read);
* each document's data source comes from the scan's ``labels`` (a labels
  file, ``--source-from``: applied only when every input was read, as they
  name documents by position), else from the input's source column, else
  from the input's own source (a single-source shard), else it is unattributed;
* the mask is written only when everything was measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ..corpus.labels import SourceLabels
from .inputs import CorpusInput
from .report import ContaminationReport, HitDocument, SourceHits
from .results import InputTally

__all__ = ["summarise"]

IntArray = npt.NDArray[np.int64]
Found = list[list[tuple[IntArray, npt.NDArray[np.uint64]]]]


def _bits(members: npt.NDArray[np.uint64], references: int) -> npt.NDArray[np.int64]:
    """How many of ``members`` have bit ``r`` set, for every reference ``r``."""
    one = np.uint64(1)
    return np.array([np.count_nonzero((members >> np.uint64(r)) & one) for r in range(references)],
                    dtype=np.int64)


def summarise(report: ContaminationReport, inputs: Sequence[CorpusInput], tallies: list[InputTally],
              found: Found, ref_matched: IntArray,
              labels: Callable[[Sequence[int]], SourceLabels] | None) -> None:
    """Fill the per-input, per-reference and per-source counts, the hit documents, reasons and mask."""
    refs = len(report.references)
    for pass_found in found:  # distinct grams found: a key is found in one pass only
        if not pass_found:
            continue
        pos = np.concatenate([p for p, _ in pass_found])
        bits = np.concatenate([b for _, b in pass_found])
        _, first = np.unique(pos, return_index=True)
        report.grams_found += int(first.size)
        for r, c in enumerate(_bits(bits[first], refs)):
            report.references[r].grams_found += int(c)
    for r, ref in enumerate(report.references):
        ref.matched_grams = int(ref_matched[r])
    everything_read = all(rec.read for rec in report.inputs)
    codes, names = _labels(report, tallies, labels) if labels is not None and everything_read else (None, ())
    doc_hits = np.zeros(refs, dtype=np.int64)
    first_doc: int | None = 0
    for inp, rec, tally in zip(inputs, report.inputs, tallies, strict=True):
        if not rec.read or tally.spans is None:
            first_doc = None  # the documents after an unread input have no known position
            continue
        tally._check(report.n)
        windows = tally.windows(report.n)
        docs, matched, members = tally.hits()
        rec.first_document = first_doc
        rec.documents = tally.documents
        rec.tokens = int(tally.spans.sum())
        rec.grams = int(windows.sum())
        rec.short_documents = int(np.count_nonzero(windows == 0))
        rec.matched_grams = int(matched.sum())
        rec.documents_with_any_hit = int(docs.size)
        rec.majority_hit_documents = int(np.count_nonzero(2 * matched > windows[docs]))
        doc_hits += _bits(members, refs)
        local_codes, local_names = _input_sources(inp, tally, codes, names, first_doc)
        _add_sources(report, local_codes, local_names, windows, docs, matched)
        for j, d in enumerate(docs.tolist()):
            src = None if local_codes is None else local_names[int(local_codes[d])]
            report.hit_documents.append(HitDocument(
                index=None if first_doc is None else first_doc + d, name=tally.names[d], source=src,
                input=rec.name, position=d, matched_grams=int(matched[j]), grams=int(windows[d]),
                references=[report.references[r].name for r in range(refs) if int(members[j]) >> r & 1]))
        if first_doc is not None:
            first_doc += rec.documents
    for r, ref in enumerate(report.references):
        ref.documents_with_any_hit = int(doc_hits[r])
    report.reasons = _reasons(report)
    if not report.reasons:
        report.mask, report.lengths = _mask(tallies, report.n, report.exclude)


def _labels(report: ContaminationReport, tallies: list[InputTally],
            labels: Callable[[Sequence[int]], SourceLabels]) -> tuple[npt.NDArray[np.int32], tuple[str, ...]]:
    counts = [t.documents for t in tallies]
    found = labels(counts).check_documents(sum(counts))
    report.sources_origin = found.origin
    return found.codes, found.names


def _input_sources(inp: CorpusInput, tally: InputTally, codes: npt.NDArray[np.int32] | None,
                   names: tuple[str, ...], first_doc: int | None
                   ) -> tuple[npt.NDArray[np.int32] | None, tuple[str, ...]]:
    """Each document's source code in the input, and the code's names (``None``: unattributed)."""
    if codes is not None and first_doc is not None:
        return codes[first_doc : first_doc + tally.documents], names
    if tally.source_codes is not None:
        return tally.source_codes, tally.source_names
    if inp.source is not None:
        return np.zeros(tally.documents, dtype=np.int32), (inp.source,)
    return None, ()


def _add_sources(report: ContaminationReport, codes: npt.NDArray[np.int32] | None, names: tuple[str, ...],
                 windows: IntArray, docs: IntArray, matched: IntArray) -> None:
    """Add one input's documents to their sources (or to the unattributed ones)."""
    majority = 2 * matched > windows[docs]
    if codes is None:
        u = report.unattributed
        u.documents += int(windows.size)
        u.grams += int(windows.sum())
        u.matched_grams += int(matched.sum())
        u.documents_with_any_hit += int(docs.size)
        u.majority_hit_documents += int(np.count_nonzero(majority))
        return
    k = len(names)
    per = {"documents": np.bincount(codes, minlength=k), "grams": np.bincount(codes, windows, minlength=k),
           "matched_grams": np.bincount(codes[docs], matched, minlength=k),
           "documents_with_any_hit": np.bincount(codes[docs], minlength=k),
           "majority_hit_documents": np.bincount(codes[docs], majority, minlength=k)}
    for c, name in enumerate(names):
        if not per["documents"][c]:
            continue
        s = report.source_records.setdefault(name, SourceHits())
        for key, values in per.items():
            setattr(s, key, getattr(s, key) + int(values[c]))
    if report.sources_origin is None and k:
        report.sources_origin = "the inputs"


def _reasons(report: ContaminationReport) -> list[str]:
    n = report.n
    out = []
    for ref in report.references:
        if not ref.read:
            out.append(f"reference {ref.name!r} was not read ({ref.error})")
            continue
        if ref.declared_rows is not None and ref.rows != ref.declared_rows:
            out.append(f"reference {ref.name!r} yielded {ref.rows:,} rows, {ref.declared_rows:,} declared")
        if ref.grams == 0:
            out.append(f"reference {ref.name!r} yielded no {n}-gram ({ref.items:,} items, {ref.tokens:,} "
                       "tokens)")
    for rec in report.inputs:
        if not rec.read:
            out.append(f"input {rec.name!r} was not read ({rec.error})")
    if report.documents_scanned == 0 and any(r.read for r in report.inputs):
        out.append("no document was scanned (the inputs that were read hold none)")
    elif report.grams_scanned == 0 and report.documents_scanned:
        out.append(f"no {n}-gram was scanned: all {report.documents_scanned:,} documents are shorter than "
                   "a window")
    return out


def _mask(tallies: list[InputTally], n: int, exclude: str) -> tuple[npt.NDArray[np.uint8], IntArray]:
    parts = []
    for t in tallies:
        rule = np.zeros(t.documents, dtype=np.uint8)
        docs, matched, _ = t.hits()
        hit = matched > 0 if exclude == "any" else 2 * matched > t.windows(n)[docs]
        rule[docs[hit]] = 1
        parts.append(rule)
    lengths = np.concatenate([t.lengths() for t in tallies]) if tallies else np.zeros(0, np.int64)
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint8)), lengths
