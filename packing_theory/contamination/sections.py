"""The contamination report as the one report model: its sections, its attachments, its mask's sidecar.

:func:`report_sections` lays a :class:`~packing_theory.contamination.report.ContaminationReport`
out as :class:`~packing_theory.reporting.model.Section` blocks (the answer card
first: the verdict, what was not measured, the totals; then the references,
the inputs, the data sources, the hit documents, the mask and the method),
which the Markdown and the page renderers both draw.
:func:`report_attachments` gives the files beside ``contamination.json``:
``hit_documents.jsonl`` (every hit document by index, name and source) and,
when everything was measured, the mask ``exclude.u8`` and its sidecar
``exclude.json`` (seed 004's declaration of the operator ``C_E``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.masks import mask_bytes, mask_sidecar
from ..reporting.model import Amount, Attachment, Block, Column, Section, Table, Text
from .hashing import HASH_DESCRIPTION

if TYPE_CHECKING:
    from .report import ContaminationReport

__all__ = ["HITS_SHOWN", "MASK_ORDER", "mask_stage", "report_attachments", "report_sections"]

HITS_SHOWN = 100
"""Hit documents listed in the Markdown and on the page (every one is in ``hit_documents.jsonl``)."""

MASK_ORDER = "the documents of the inputs in the order listed, each input's documents in file order"
"""The document order of ``exclude.u8``."""


def _share(part: int, whole: int) -> Amount:
    return Amount(part, part / whole if whole else None)


def _answer(r: ContaminationReport) -> Section:
    blocks: list[Block] = [Text(r.headline() + ".")]
    if r.reasons:
        blocks.append(Text("Not measured (the counts below cover only what was read): "
                           + "; ".join(r.reasons) + "."))
    docs = r.documents_scanned
    cols = (Column("documents scanned", "count"), Column("grams scanned", "count"),
            Column("matched grams", "count", term="contamination"), Column("documents with any hit", "count"),
            Column("majority-hit documents", "count"), Column("reference grams", "count"),
            Column("found in the corpus", "count"), Column("expected false positives", "number"))
    blocks.append(Table("What was scanned and found", cols, ((
        docs, r.grams_scanned, r.matched_grams, _share(r.documents_with_any_hit, docs),
        _share(r.majority_hit_documents, docs), r.reference_grams, _share(r.grams_found, r.reference_grams),
        r.expected_false_positives),), key="totals"))
    return Section("answer", "The answer", tuple(blocks), answer=True)


def _references(r: ContaminationReport) -> Section:
    cols = (Column("reference"), Column("read"), Column("rows", "count"), Column("declared rows", "count"),
            Column("items", "count"), Column("grams", "count"), Column("found in the corpus", "count"),
            Column("matched windows", "count"), Column("documents hit", "count"))
    rows = tuple((x.name, True if x.read else f"no: {x.error}", x.rows, x.declared_rows, x.items, x.grams,
                  x.grams_found, x.matched_grams, x.documents_with_any_hit) for x in r.references)
    return Section("references", "References", (Table("Each reference set", cols, rows, key="references"),))


def _inputs(r: ContaminationReport) -> Section:
    cols = (Column("input"), Column("source"), Column("read"), Column("documents", "count"),
            Column("grams", "count"), Column("matched grams", "count"), Column("documents hit", "count"),
            Column("majority-hit", "count"))
    rows = tuple((i.name, i.source, True if i.read else f"no: {i.error}", i.documents, i.grams,
                  i.matched_grams, i.documents_with_any_hit, i.majority_hit_documents) for i in r.inputs)
    return Section("inputs", "Inputs", (Table("Each training input, in document order", cols, rows,
                                              key="inputs"),), collapsed=len(rows) > 20)


def _sources(r: ContaminationReport) -> Section:
    sources, unattributed = r.sources()
    cols = (Column("source"), Column("documents", "count"),
            Column("documents hit", "count"), Column("majority-hit", "count"),
            Column("matched grams", "count"))
    rows = tuple((name, s.documents, _share(s.documents_with_any_hit, s.documents),
                  _share(s.majority_hit_documents, s.documents), s.matched_grams)
                 for name, s in [*sources.items(), ("(unattributed)", unattributed)])
    origin = f"Sources from {r.sources_origin}." if r.sources_origin else "No data source was given."
    return Section("sources", "Data sources", (Text(origin), Table("Hits per data source", cols, rows,
                                                                       key="sources")))


def _hits(r: ContaminationReport) -> Section:
    n = len(r.hit_documents)
    cols = (Column("index", term="raw index"), Column("name"), Column("source"),
            Column("matched grams", "count"), Column("grams", "count"), Column("majority"),
            Column("references"))
    rows = tuple(("?" if h.index is None else f"{h.index:,}", h.name, h.source, h.matched_grams, h.grams,
                  h.majority, ", ".join(h.references)) for h in r.hit_documents[:HITS_SHOWN])
    more = f"the first {HITS_SHOWN:,} of {n:,}; every one in hit_documents.jsonl" if n > HITS_SHOWN else ""
    text = (f"{n:,} document(s) with a matched window, by raw corpus index (its position among the "
            "documents of the inputs in order), name and data source." if n else
            "No document holds a matched window.")
    blocks: list[Block] = [Text(text)]
    if n:
        blocks.append(Table("Hit documents", cols, rows, more=more, key="hits"))
    return Section("hits", "Hit documents", tuple(blocks))


def _mask(r: ContaminationReport) -> Section:
    if r.mask is None:
        text = "exclude.u8 was not written: the scan did not measure everything (see the answer)."
    else:
        rule = "any matched window" if r.exclude == "any" else "more than half of the windows matched"
        text = (f"exclude.u8: {r.mask.size:,} documents, {int(r.mask.sum()):,} excluded (rule: {rule}); "
                "its sidecar exclude.json names each excluded document.")
    return Section("mask", "Exclusion mask", (Text(text),))


def _method(r: ContaminationReport) -> Section:
    ix = r.index
    return Section("method", "Method", (
        Text(f"{r.n}-grams of token ids ({r.tokenizer}), inside documents only; a shard document's first "
             "token (its BOS) is skipped, other token formats are scanned as stored, texts get no BOS."),
        Text(f"Hash: {HASH_DESCRIPTION}. Expected false positives = W x G / 2^64 = "
             f"{r.grams_scanned:,} x {r.reference_grams:,} / 2^64."),
        Text(f"Index: {ix.get('mode')}, {ix.get('passes')} pass(es), at most {ix.get('memory_grams', 0):,} "
             f"grams held at once ({ix.get('peak_grams', 0):,} at the peak); scan: "
             f"{ix.get('kernel', 'numpy')}."),
    ), collapsed=True)


def report_sections(r: ContaminationReport) -> list[Section]:
    """The report's sections, answer card first."""
    return [_answer(r), _references(r), _inputs(r), _sources(r), _hits(r), _mask(r), _method(r)]


def mask_stage(r: ContaminationReport) -> dict[str, Any]:
    """Seed 004's declaration of the decontamination operator ``C_E`` that produced the mask."""
    from .._version import __version__

    return {"name": "decontamination", "operator": "C_E (seed 004)",
            "protected_collection": [{"name": x.name, "path": x.path, "rows": x.rows, "grams": x.grams}
                                     for x in r.references],
            "normalization": f"tokenizer {r.tokenizer}; shard documents without their first token (BOS)",
            "match": f"{r.n}-gram of token ids, 64-bit hash (expected false positives "
                     f"{r.expected_false_positives:.3g})",
            "threshold": "any matched window" if r.exclude == "any" else "more than half the windows",
            "removal": "whole document", "revision": f"packing_theory {__version__}"}


def report_attachments(r: ContaminationReport) -> Sequence[Attachment]:
    """``hit_documents.jsonl`` always; ``exclude.u8`` and ``exclude.json`` when the mask exists."""

    def hits(path: Path, run_id: str) -> None:
        path.write_text("".join(json.dumps(h.to_dict()) + "\n" for h in r.hit_documents), encoding="utf-8")

    out = [Attachment("hit_documents.jsonl", hits)]
    if r.mask is None:
        return out
    mask, lengths = r.mask, r.lengths
    assert lengths is not None

    def u8(path: Path, run_id: str) -> None:
        path.write_bytes(mask_bytes(mask))

    def sidecar(path: Path, run_id: str) -> None:
        inputs = [{"path": x.name, "kind": x.kind, "source": x.source, "documents": x.documents,
                   "first_document": x.first_document} for x in r.inputs]
        doc = mask_sidecar(mask, lengths, mask_name="exclude.u8", inputs=inputs, order=MASK_ORDER,
                           stage=mask_stage(r))
        doc["excluded_documents"] = [{"index": h.index, "name": h.name, "source": h.source}
                                     for h in r.hit_documents if h.index is not None and mask[h.index]]
        path.write_text(json.dumps({"run": {"id": run_id}, **doc}, indent=1) + "\n", encoding="utf-8")

    return [*out, Attachment("exclude.u8", u8), Attachment("exclude.json", sidecar)]
