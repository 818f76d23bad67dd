"""Scan training documents for n-gram overlap with reference sets (seed 002 §11-12, seed 004's C_E).

:func:`scan_contamination` reads every reference set into a
:class:`~packing_theory.contamination.index.GramIndex` (the hashes of their
``n``-token windows), then hashes every ``n``-token window of every training
document and counts the windows whose hash is in the index:

* windows never cross a document boundary; a seed-002 shard document's first
  token is its BOS and is skipped (texts get no BOS), so a document of ``L``
  tokens holds ``max(0, L - 1 - n + 1)`` windows (``max(0, L - n + 1)`` for a
  text document of ``L`` tokens);
* per document: matched windows (with repetition) and the references they
  come from; a document is *hit* with one matched window, *majority-hit* when
  more than half of its windows matched;
* the exclusion mask marks the hit documents (``exclude="any"``, seed 002's
  rule) or the majority-hit ones (``"majority"``).

Inputs and references that cannot be read are recorded, not raised: the
report's verdict is "not measured" then (:mod:`~packing_theory.contamination.report`).
Bad usage (an unknown column, invalid UTF-8, a tokenizer that raises) raises
:class:`~packing_theory.InputError`.

Cost: O(n) vectorised operations per token for the hashes, plus O(log G) per
window that passes the index's pre-filter; the inputs are read once per pass
of the index (one pass when the reference grams fit ``memory_grams``). Memory:
the index (:mod:`~packing_theory.contamination.index`), O(chunk) per step,
and about 17 bytes per training document (window counts, matches, reference
bits) plus 9 for the mask and lengths.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..corpus.documents import run_index
from ..corpus.shards import HEADER, read_shard
from ..corpus.text import Tokenizer, iter_parquet_texts, iter_text_files
from ..corpus.textcount import BuiltinTokenizer
from ..errors import InputError, NotMeasured
from .hashing import CHUNK_WINDOWS, DEFAULT_N, window_hashes
from .index import DEFAULT_MEMORY_GRAMS, MAX_REFERENCES, GramIndex, GramTable, IndexBuilder
from .report import ContaminationReport, InputRecord, ReferenceRecord
from .tokens import ReferenceItems, ReferenceSpec, reference_items, text_token_ids, tokenizer_label

__all__ = [
    "EXCLUDE_RULES",
    "INPUT_KINDS",
    "CorpusInput",
    "TokenSlices",
    "block_hits",
    "describe_inputs",
    "scan_contamination",
    "window_counts",
]

InputKind = Literal["shard", "text", "parquet"]
INPUT_KINDS: tuple[InputKind, ...] = ("shard", "text", "parquet")
"""Kinds of training input: a seed-002 shard, a plain text file, a parquet file."""

ExcludeRule = Literal["any", "majority"]
EXCLUDE_RULES: tuple[ExcludeRule, ...] = ("any", "majority")
"""Which documents the mask excludes: any matched window, or more than half of the windows matched."""

BLOCK_TOKENS = 1 << 20
"""Text documents and reference items are hashed in blocks of about this many tokens."""

IntArray = npt.NDArray[np.int64]


class TokenSlices(Protocol):
    """Token ids that can be sliced (a numpy array, or a shard read from its file slice by slice)."""

    def __getitem__(self, key: slice, /) -> Any: ...


@dataclass(frozen=True)
class CorpusInput:
    """One training input of a scan.

    Attributes:
        path: the file.
        kind: ``"shard"`` (seed-002 token shard; already token ids), ``"text"``
            (UTF-8, one document per file or per non-blank line) or ``"parquet"``.
        source: the data source of all its documents, when known (a
            single-source shard of a manifest); ``None`` otherwise.
        column: parquet: the text column.
        per_line: text: one document per non-blank line.
        name: how the report names it (default: ``path``; a manifest's shard path).
    """

    path: str
    kind: InputKind = "shard"
    source: str | None = None
    column: str = "text"
    per_line: bool = False
    name: str | None = None

    @property
    def label(self) -> str:
        """The report's name for the input."""
        return self.name if self.name is not None else self.path

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise InputError(f"input kind must be one of {', '.join(INPUT_KINDS)}, got {self.kind!r}")
        if not isinstance(self.path, str) or not self.path:
            raise InputError(f"input path must be a non-empty str, got {self.path!r}")
        if self.per_line and self.kind != "text":
            raise InputError(f"input {self.path!r}: per_line applies to text inputs, not {self.kind}")


def window_counts(offsets: IntArray, skip: int, n: int) -> IntArray:
    """Windows of each document: ``max(0, length - skip - n + 1)`` for ``length = diff(offsets)``.

    >>> import numpy as np
    >>> window_counts(np.array([0, 3, 20, 34]), 1, 13).tolist()
    [0, 4, 1]
    """
    lengths = np.diff(offsets)
    out: IntArray = np.maximum(lengths - skip - n + 1, 0).astype(np.int64)
    return out


def block_hits(ids: TokenSlices, offsets: IntArray, skip: int, n: int, table: GramTable,
               chunk: int = CHUNK_WINDOWS) -> tuple[IntArray, IntArray]:
    """The matched windows of a block of whole documents: each hit's document and its index in ``table``.

    ``ids[offsets[d] : offsets[d + 1]]`` is document ``d``; a window counts
    when it starts at or after ``offsets[d] + skip`` and ends by
    ``offsets[d + 1]``. Every window of the block is hashed (in chunks of
    ``chunk``, vectorised) and looked up; only the hits are placed in their
    document and checked against its boundaries, so the cost per window is a
    few numpy operations whatever the documents' lengths.
    """
    total = int(offsets[-1]) - n + 1
    docs: list[IntArray] = []
    positions: list[IntArray] = []
    for lo in range(0, max(total, 0), chunk):
        hi = min(total, lo + chunk)
        hashes = window_hashes(ids[lo : hi + n - 1], n, chunk=hi - lo)
        idx, pos = table.lookup(hashes)
        if idx.size == 0:
            continue
        p = idx + lo
        d = np.searchsorted(offsets, p, side="right") - 1
        ok = (p >= offsets[d] + skip) & (p + n <= offsets[d + 1])
        docs.append(d[ok])
        positions.append(pos[ok])
    if not docs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(docs), np.concatenate(positions)


# --------------------------------------------------------------------------- reading


def _blocks(inp: CorpusInput, tokenizer: Tokenizer | BuiltinTokenizer
            ) -> Iterator[tuple[TokenSlices, IntArray, int]]:
    """Yield ``(ids, offsets, skip)`` blocks of whole documents of ``inp``."""
    if inp.kind == "shard":
        shard = read_shard(inp.path)
        offsets = np.asarray(shard.offsets, dtype=np.int64)
        source = _ShardIds(shard.path, HEADER.size + 4 * offsets.size, shard.n_tokens)
        del shard  # the ids are read in chunks, never mapped whole
        yield source, offsets, 1
        return
    texts = (iter_text_files([inp.path], per_line=inp.per_line) if inp.kind == "text"
             else iter_parquet_texts([inp.path], inp.column))
    parts: list[npt.NDArray[np.uint64]] = []
    size = 0
    for ids in text_token_ids(texts, tokenizer, what=f"input {inp.path!r} document"):
        parts.append(ids)
        size += int(ids.size)
        if size >= BLOCK_TOKENS or len(parts) >= 65536:
            yield _concat(parts)
            parts, size = [], 0
    if parts:
        yield _concat(parts)


class _ShardIds:
    """A shard's ids read from the file one slice at a time (resident memory O(slice), whatever the shard)."""

    def __init__(self, path: str, offset: int, size: int) -> None:
        self.path, self.offset, self.size = path, offset, size

    def __getitem__(self, s: slice) -> npt.NDArray[np.uint16]:
        lo, hi, _ = s.indices(self.size)
        if hi <= lo:
            return np.zeros(0, dtype="<u2")
        out: npt.NDArray[np.uint16] = np.fromfile(self.path, dtype="<u2", count=hi - lo,
                                                  offset=self.offset + 2 * lo)
        if out.size != hi - lo:
            raise NotMeasured(f"shard {self.path!r} ended at token {lo + out.size} while reading {lo}..{hi}: "
                              "it changed during the scan")
        return out


def _concat(parts: list[npt.NDArray[np.uint64]]) -> tuple[npt.NDArray[np.uint64], IntArray, int]:
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in parts], out=offsets[1:])
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64), offsets, 0


def _unread(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


# --------------------------------------------------------------------------- references


def _read_references(specs: Sequence[ReferenceSpec], tokenizer: Tokenizer | BuiltinTokenizer, n: int,
                     builder: IndexBuilder, vocab: int | None) -> list[ReferenceRecord]:
    records = []
    for r, spec in enumerate(specs):
        rec = ReferenceRecord(spec.label, spec.path, list(spec.columns) if spec.is_parquet else None,
                              None if spec.is_parquet else spec.per_line, spec.declared_rows)
        tally = ReferenceItems()
        try:
            parts: list[npt.NDArray[np.uint64]] = []
            size = 0
            for ids in reference_items(spec, tokenizer, tally):
                if vocab is not None and ids.size and int(ids.max()) >= vocab:
                    raise InputError(
                        f"reference {spec.label!r} item {tally.items - 1} holds token id {int(ids.max())} >= "
                        f"the shards' vocab {vocab}: tokenize the references with the tokenizer that wrote "
                        "the shards (--tokenizer module:callable)")
                parts.append(ids)
                size += int(ids.size)
                if size >= BLOCK_TOKENS or len(parts) >= 65536:
                    _add_reference(builder, r, _concat(parts), n, rec)
                    parts, size = [], 0
            if parts:
                _add_reference(builder, r, _concat(parts), n, rec)
        except OSError as exc:  # missing or unreadable: recorded, the verdict says "not measured"
            rec.error = _unread(exc)
        else:
            rec.read = True
        rec.rows, rec.items, rec.nulls = tally.rows, tally.items, tally.nulls
        records.append(rec)
    return records


def _add_reference(builder: IndexBuilder, r: int, block: tuple[npt.NDArray[np.uint64], IntArray, int], n: int,
                   rec: ReferenceRecord) -> None:
    ids, offsets, _ = block
    counts = window_counts(offsets, 0, n)
    rec.tokens += int(offsets[-1])
    rec.windows += int(counts.sum())
    if counts.sum():
        hashes = window_hashes(ids, n)
        builder.add(hashes[run_index(offsets[:-1], counts)], r)


# --------------------------------------------------------------------------- the scan


@dataclass
class _Tally:
    """Per-document arrays of one input, filled by the first pass and added to by the others."""

    grams: IntArray | None = None
    lengths: IntArray | None = None
    matched: IntArray | None = None
    members: npt.NDArray[np.unsignedinteger] | None = None
    skip: int = 0

    def _check(self) -> None:
        """Assert the arrays agree: one entry per document, matches within the windows."""
        if self.grams is None:
            return
        assert self.lengths is not None and self.matched is not None and self.members is not None
        assert self.grams.shape == self.lengths.shape == self.matched.shape == self.members.shape
        assert bool(np.all(self.matched <= self.grams)), "a document cannot match more windows than it has"
        assert bool(np.all((self.matched > 0) == (self.members != 0)))


@dataclass
class _Scan:
    """The running totals of a scan over all passes."""

    index: GramIndex
    n: int
    tokenizer: Tokenizer | BuiltinTokenizer
    tallies: list[_Tally] = field(default_factory=list)
    ref_matched: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    ref_found: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    found: int = 0

    def run(self, inputs: Sequence[CorpusInput], records: list[InputRecord]) -> None:
        self.tallies = [_Tally() for _ in inputs]
        self.ref_matched = np.zeros(self.index.references, np.int64)
        self.ref_found = np.zeros(self.index.references, np.int64)
        for k, table in enumerate(self.index.tables()):
            hit = np.zeros(len(table), dtype=np.bool_)
            for inp, rec, tally in zip(inputs, records, self.tallies, strict=True):
                if k and not rec.read:
                    continue
                try:
                    self._scan_input(inp, tally, table, hit, first=k == 0)
                except OSError as exc:
                    rec.read, rec.error = False, _unread(exc)
                except InputError as exc:
                    if inp.kind != "shard":
                        raise  # bad text input: usage
                    rec.read, rec.error = False, _unread(exc)  # a corrupt shard was not measured
                except NotMeasured as exc:
                    rec.read, rec.error = False, str(exc)
                else:
                    rec.read = rec.error is None
            one = table.members.dtype.type(1)
            for r in range(self.index.references):
                self.ref_found[r] += int(np.count_nonzero((table.members[hit] >> table.members.dtype.type(r))
                                                          & one))
            self.found += int(hit.sum())

    def _scan_input(self, inp: CorpusInput, tally: _Tally, table: GramTable, hit: npt.NDArray[np.bool_],
                    *, first: bool) -> None:
        grams: list[IntArray] = []
        lengths: list[IntArray] = []
        matched: list[IntArray] = []
        members: list[npt.NDArray[np.unsignedinteger]] = []
        for ids, offsets, skip in _blocks(inp, self.tokenizer):
            docs, pos = block_hits(ids, offsets, skip, self.n, table)
            d = offsets.size - 1
            m = np.bincount(docs, minlength=d).astype(np.int64)
            bits = np.zeros(d, dtype=table.members.dtype)
            if docs.size:
                found = table.members[pos]
                np.bitwise_or.at(bits, docs, found)
                hit[pos] = True
                one = found.dtype.type(1)
                for r in range(self.index.references):
                    self.ref_matched[r] += int(np.count_nonzero((found >> found.dtype.type(r)) & one))
            matched.append(m)
            members.append(bits)
            if first:
                grams.append(window_counts(offsets, skip, self.n))
                lengths.append(np.diff(offsets) + (1 - skip))  # BOS-inclusive, as a replay counts them
                tally.skip = skip
        m_all = np.concatenate(matched) if matched else np.zeros(0, np.int64)
        b_all = np.concatenate(members) if members else np.zeros(0, table.members.dtype)
        if first:
            tally.grams = np.concatenate(grams) if grams else np.zeros(0, np.int64)
            tally.lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
            tally.matched, tally.members = m_all, b_all
        else:
            assert tally.matched is not None and tally.members is not None
            if m_all.size != tally.matched.size:
                raise NotMeasured(f"input {inp.path!r} held {tally.matched.size} documents in the first pass "
                                  f"and {m_all.size} in a later one: it changed during the scan")
            tally.matched += m_all
            tally.members |= b_all


def _check_options(inputs: Sequence[CorpusInput], references: Sequence[ReferenceSpec], n: int,
                   exclude: str) -> None:
    if not inputs:
        raise InputError("inputs is empty: give at least one training input (shards or texts)")
    if not references:
        raise InputError("references is empty: give at least one reference set (the library ships none)")
    if len(references) > MAX_REFERENCES:
        raise InputError(f"at most {MAX_REFERENCES} references per scan, got {len(references)}")
    labels = [r.label for r in references]
    if len(set(labels)) != len(labels):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise InputError(f"reference {dup!r} is listed twice")
    check_int("n", n, 1)
    if exclude not in EXCLUDE_RULES:
        raise InputError(f"exclude must be one of {', '.join(EXCLUDE_RULES)}, got {exclude!r}")


def scan_contamination(
    inputs: Sequence[CorpusInput],
    references: Sequence[ReferenceSpec],
    *,
    tokenizer: Tokenizer | BuiltinTokenizer = "bytes",
    n: int = DEFAULT_N,
    memory_grams: int = DEFAULT_MEMORY_GRAMS,
    index_dir: str | os.PathLike[str] | None = None,
    exclude: ExcludeRule = "any",
    vocab: int | None = None,
) -> ContaminationReport:
    """Count the ``n``-gram overlap of ``inputs`` with ``references``; see the module docstring.

    Args:
        inputs: the training inputs, in document order.
        references: the reference sets (at most 64).
        tokenizer: how references and text inputs become token ids
            (:mod:`~packing_theory.contamination.tokens`); shards are already ids.
        n: window length (default 13).
        memory_grams: distinct reference grams held in memory; beyond, the
            index goes to ``index_dir`` (default: a temporary directory).
        exclude: the mask's rule, ``"any"`` or ``"majority"``.
        vocab: when given (the shards' vocabulary), a reference token id at
            or above it is refused (references tokenized with another tokenizer).

    Returns:
        The report; its ``mask`` is set only when the scan measured.

    Raises:
        InputError: bad arguments or bad input (see the module docstring).
    """
    _check_options(inputs, references, n, exclude)
    memory_grams = check_int("memory_grams", memory_grams, 1)
    t0 = time.perf_counter()
    builder = IndexBuilder(len(references), memory_grams, directory=index_dir)
    try:
        ref_records = _read_references(references, tokenizer, n, builder, vocab)
    except BaseException:
        builder.discard()
        raise
    records = [InputRecord(i.label, i.kind, i.source) for i in inputs]
    with builder.finish() as index:
        for ref, grams in zip(ref_records, index.reference_grams, strict=True):
            ref.grams = grams
        scan = _Scan(index, n, tokenizer)
        if index.grams:
            scan.run(inputs, records)
        else:
            for rec in records:
                rec.error = "not scanned: no reference yielded a gram"
        report = ContaminationReport(n=n, tokenizer=tokenizer_label(tokenizer), exclude=exclude,
                                     inputs=records, references=ref_records, index=index.describe(),
                                     reference_grams=index.grams, grams_found=scan.found)
    _summarise(report, scan, n)
    report.seconds = time.perf_counter() - t0
    return report


def _summarise(report: ContaminationReport, scan: _Scan, n: int) -> None:
    """Fill the per-input and per-reference counts, the reasons, and the mask when everything was read."""
    refs = scan.index.references
    for r, ref in enumerate(report.references):
        ref.matched_grams = int(scan.ref_matched[r]) if scan.ref_matched.size else 0
        ref.grams_found = int(scan.ref_found[r]) if scan.ref_found.size else 0
    doc_hits = np.zeros(refs, dtype=np.int64)
    first = 0
    for rec, tally in zip(report.inputs, scan.tallies or [_Tally()] * len(report.inputs), strict=True):
        if not rec.read or tally.grams is None:
            first = -1  # the documents after an unread input have no known position
            continue
        assert tally.matched is not None and tally.members is not None and tally.lengths is not None
        tally._check()
        rec.first_document = first if first >= 0 else None
        rec.documents = int(tally.grams.size)
        rec.tokens = int(tally.lengths.sum()) - (1 - tally.skip) * rec.documents
        rec.grams = int(tally.grams.sum())
        rec.short_documents = int(np.count_nonzero(tally.grams == 0))
        rec.matched_grams = int(tally.matched.sum())
        rec.documents_with_any_hit = int(np.count_nonzero(tally.matched))
        rec.majority_hit_documents = int(np.count_nonzero(2 * tally.matched > tally.grams))
        one = tally.members.dtype.type(1)
        for r in range(refs):
            doc_hits[r] += int(np.count_nonzero((tally.members >> tally.members.dtype.type(r)) & one))
        if first >= 0:
            first += rec.documents
    for r, ref in enumerate(report.references):
        ref.documents_with_any_hit = int(doc_hits[r])
    report.reasons = _reasons(report, n)
    if not report.reasons:
        report.mask, report.lengths = _mask(scan.tallies, report.exclude)


def _reasons(report: ContaminationReport, n: int) -> list[str]:
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


def _mask(tallies: list[_Tally], exclude: str) -> tuple[npt.NDArray[np.uint8], IntArray]:
    matched = np.concatenate([t.matched for t in tallies if t.matched is not None])
    grams = np.concatenate([t.grams for t in tallies if t.grams is not None])
    lengths = np.concatenate([t.lengths for t in tallies if t.lengths is not None])
    rule = matched > 0 if exclude == "any" else 2 * matched > grams
    return rule.astype(np.uint8), lengths.astype(np.int64)


def describe_inputs(report: ContaminationReport) -> list[dict[str, Any]]:
    """The mask sidecar's ``inputs``: path, kind, source, documents and first document of each input."""
    return [{"path": r.name, "kind": r.kind, "source": r.source, "documents": r.documents,
             "first_document": r.first_document} for r in report.inputs]
