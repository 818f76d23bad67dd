"""Scan training documents for n-gram overlap with reference sets (seed 002 §11-12, seed 004's C_E).

:func:`scan_contamination` reads every reference set, piece by piece, into a
:class:`~packing_theory.contamination.index.GramIndex` of the hashes of their
``n``-token windows, holding at most ``memory_grams`` grams, then scans every
``n``-token window of every training document (:mod:`packing_theory.contamination.inputs`: seed-002
shards and every ``--data`` format) and counts the windows whose hash is in
the index:

* windows never cross a document boundary; a seed-002 shard document's first
  token is its BOS and is skipped (other inputs are scanned as stored or as
  tokenized), so a document of ``L`` tokens holds ``max(0, L - skip - n + 1)``
  windows;
* per document: matched windows (with repetition) and the references they
  come from; a document is *hit* with one matched window, *majority-hit* when
  more than half of its windows matched;
* the exclusion mask marks the hit documents (``exclude="any"``, seed 002's
  rule) or the majority-hit ones (``"majority"``).

One task scans one input against one pass of the index
(:func:`scan_input`); with an ``executor`` (a ``ProcessPoolExecutor``, or a
Dask cluster's through
:func:`packing_theory.distributed.executors.open_executor`) the tasks of a
pass run in parallel, one input per task, reading the pass from the index's
files, and the result is the serial scan's.

Inputs and references that cannot be read are recorded, not raised: the
report's verdict is "not measured" then (:mod:`~packing_theory.contamination.report`).
Bad usage (an unknown column, invalid UTF-8, a tokenizer that raises) raises
:class:`~packing_theory.InputError`.

Cost: a few operations per token (the rolling hash, one filter word, a
bisection of one bucket for the few windows that pass the filter: the
compiled loop when numba is installed, else vectorised numpy), once per pass
of the index (one pass when the reference grams fit ``memory_grams``).
Memory: the index's bound (about 12 bytes per gram, :mod:`packing_theory.contamination.table`), O(1 MiB)
per block of tokens, 8 bytes per training document (its length; 4 more with
a source column) and O(1) per hit document.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_int, distinct_files
from ..corpus.documents import run_index
from ..corpus.labels import SourceLabels
from ..corpus.text import Tokenizer
from ..corpus.textcount import BuiltinTokenizer
from ..errors import InputError, InputTypeError, NotMeasured
from .hashing import CHUNK_WINDOWS, DEFAULT_N, window_hashes
from .index import DEFAULT_MEMORY_GRAMS, GramIndex, IndexBuilder, IndexFiles
from .inputs import Block, CorpusInput, TokenSlices, input_blocks, input_names
from .report import ContaminationReport, InputRecord, ReferenceRecord
from .results import InputScan, InputTally
from .summary import summarise
from .table import MAX_REFERENCES, GramTable, compiled_scan_available, scan_chunks
from .tokens import ReferenceItems, ReferenceSpec, reference_pieces, tokenizer_label

__all__ = [
    "COMPILED_CHUNK",
    "EXCLUDE_RULES",
    "CorpusInput",
    "LabelsFor",
    "block_hits",
    "scan_contamination",
    "scan_input",
    "window_counts",
]

ExcludeRule = Literal["any", "majority"]
EXCLUDE_RULES: tuple[ExcludeRule, ...] = ("any", "majority")
"""Which documents the mask excludes: any matched window, or more than half of the windows matched."""

COMPILED_CHUNK = 1 << 17
"""Windows per call of the compiled loop (measured best between 2**16 and 2**18 on a 2-core machine)."""

BLOCK_TOKENS = 1 << 20
"""Reference items are hashed in blocks of about this many tokens."""

LabelsFor = Callable[[Sequence[int]], SourceLabels]
"""Source labels of a corpus, given its inputs' document counts (a labels file, ``--source-from``)."""

IntArray = npt.NDArray[np.int64]
Found = list[list[tuple[IntArray, npt.NDArray[np.uint64]]]]


def window_counts(offsets: IntArray, skip: int, n: int) -> IntArray:
    """Windows of each document: ``max(0, length - skip - n + 1)`` for ``length = diff(offsets)``.

    >>> import numpy as np
    >>> window_counts(np.array([0, 3, 20, 34]), 1, 13).tolist()
    [0, 4, 1]
    """
    lengths = np.diff(offsets)
    out: IntArray = np.maximum(lengths - skip - n + 1, 0).astype(np.int64)
    return out


def block_hits(ids: TokenSlices, starts: IntArray, ends: IntArray, skip: int, n: int, table: GramTable,
               *, compiled: bool = False) -> tuple[IntArray, IntArray]:
    """The matched windows of a block of documents: each hit's document and its index in ``table``.

    ``ids[starts[d] : ends[d]]`` is document ``d``; a window counts when it
    starts at or after ``starts[d] + skip`` and ends by ``ends[d]``. Every
    window from ``starts[0]`` to ``ends[-1]`` is hashed and looked up
    (:meth:`GramTable.scan`, in chunks); only the hits are placed in their
    document and checked against its boundaries, so the cost per window is the
    same whatever the documents' lengths.
    """
    if not starts.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    lo = int(starts[0])

    class _From:
        def __getitem__(self, s: slice) -> Any:
            return ids[s.start + lo : s.stop + lo]

    total = int(ends[-1]) - lo - n + 1
    win, pos = scan_chunks(_From(), total, n, table, compiled=compiled,
                           chunk=COMPILED_CHUNK if compiled else CHUNK_WINDOWS)
    p = win + lo
    d = np.searchsorted(starts, p, side="right") - 1
    ok = (d >= 0) & (p >= starts[d] + skip) & (p + n <= ends[d])
    return d[ok].astype(np.int64), pos[ok]


# --------------------------------------------------------------------------- one task

_CACHED: tuple[tuple[str, int, int, int], GramTable] | None = None


def _pass_table(source: GramTable | IndexFiles, k: int) -> GramTable:
    """The table of pass ``k``: given, or read from the index files and kept for the next task of the
    pass in this worker process (one table per process at most: the last one read)."""
    global _CACHED
    if isinstance(source, GramTable):
        return source
    st = os.stat(source.keys)  # a new index at a reused path is read again
    key = (source.keys, k, st.st_ino, st.st_mtime_ns)
    if _CACHED is None or _CACHED[0] != key:
        _CACHED = None  # the previous pass's table goes before the next one is read
        _CACHED = (key, source.table(k))
    return _CACHED[1]


def scan_input(inp: CorpusInput, source: GramTable | IndexFiles, k: int, n: int,
               tokenizer: Tokenizer | BuiltinTokenizer, *, first: bool, compiled: bool) -> InputScan:
    """Scan one input against pass ``k`` of an index (the task of the parallel scan; picklable arguments).

    A file that cannot be read (``OSError``; a corrupt shard) gives an
    :class:`InputScan` with ``error`` set; bad input of another kind gives one
    with ``usage`` set, which :func:`scan_contamination` raises.
    """
    try:
        table = _pass_table(source, k)
        return _scan(inp, table, n, tokenizer, first=first, compiled=compiled)
    except (OSError, NotMeasured) as exc:
        return InputScan(error=_unread(exc))
    except InputError as exc:
        if inp.kind == "shard":  # a corrupt shard was not measured
            return InputScan(error=_unread(exc))
        return InputScan(error=str(exc), usage=True,
                         error_type="InputTypeError" if isinstance(exc, TypeError) else "InputError")


def _scan(inp: CorpusInput, table: GramTable, n: int, tokenizer: Tokenizer | BuiltinTokenizer, *,
          first: bool, compiled: bool) -> InputScan:
    out = InputScan()
    spans: list[IntArray] = []
    docs: list[IntArray] = []
    matched: list[IntArray] = []
    members: list[npt.NDArray[np.uint64]] = []
    found: list[IntArray] = []
    unnamed: list[tuple[int, int]] = []
    sources: dict[str, int] = {}
    codes: list[npt.NDArray[np.int32]] = []
    refs = table.members.dtype.itemsize * 8  # every bit the table's bitmasks can hold
    ref_matched = np.zeros(refs, dtype=np.int64)
    for block in input_blocks(inp, tokenizer):
        d, pos = block_hits(block.ids, block.starts, block.ends, block.skip, n, table, compiled=compiled)
        if first:
            spans.append(block.ends - block.starts)
            out.skip, out.extra = block.skip, block.extra
            if block.sources is not None:
                codes.append(np.array([sources.setdefault(s, len(sources)) for s in block.sources], np.int32))
        if d.size:
            bits = table.members[pos].astype(np.uint64)
            uniq, inverse = np.unique(d, return_inverse=True)
            m = np.bincount(inverse, minlength=uniq.size).astype(np.int64)
            b = np.zeros(uniq.size, dtype=np.uint64)
            np.bitwise_or.at(b, inverse, bits)
            docs.append(uniq + out.documents)
            matched.append(m)
            members.append(b)
            for x in uniq.tolist():
                own = _own_name(block, x)
                if own is None:  # named by its place once the input's documents are counted
                    unnamed.append((len(out.hit_names), out.documents + x))
                out.hit_names.append(own or "")
            for r in range(refs):
                ref_matched[r] += int(np.count_nonzero((bits >> np.uint64(r)) & np.uint64(1)))
            found.append(np.unique(pos))
        out.documents += block.n_documents
    out.ref_matched = ref_matched
    if unnamed:  # named by their place, as the per-document table names them
        places = input_names(inp, out.documents).take(np.array([doc for _, doc in unnamed], np.int64))
        for (at, _), name in zip(unnamed, places, strict=True):
            out.hit_names[at] = name
    if docs:
        out.hit_docs, out.hit_matched = np.concatenate(docs), np.concatenate(matched)
        out.hit_members = np.concatenate(members)
        out.found = np.unique(np.concatenate(found))
        out.found_members = table.members[out.found].astype(np.uint64)
    if first:
        out.spans = np.concatenate(spans) if spans else np.zeros(0, dtype=np.int64)
        if inp.source_column is not None:
            out.source_names = tuple(sources)
            out.source_codes = np.concatenate(codes) if codes else np.zeros(0, dtype=np.int32)
    return out


def _own_name(block: Block, d: int) -> str | None:
    """Document ``d`` of ``block``: its own name (its record's ``id`` / ``name``), else ``None``."""
    return None if block.names is None or block.names[d] is None else str(block.names[d])


def _unread(exc: BaseException) -> str:
    """Why an input was not read: the system's error class for an OS error (``FileNotFoundError``, not
    the library's subclass of it), then the message on one line."""
    kind = type(exc)
    if isinstance(exc, OSError):
        kind = next(c for c in kind.__mro__ if c.__module__ == "builtins")
    return f"{kind.__name__}: {' '.join(str(exc).split())}"


# --------------------------------------------------------------------------- references


def _read_references(specs: Sequence[ReferenceSpec], tokenizer: Tokenizer | BuiltinTokenizer, n: int,
                     builder: IndexBuilder, vocab: int | None) -> list[ReferenceRecord]:
    records = []
    for r, spec in enumerate(specs):
        rec = ReferenceRecord(spec.label, spec.path, list(spec.columns) if spec.is_parquet else None,
                              None if spec.is_parquet else spec.per_line, spec.declared_rows)
        tally = ReferenceItems()
        try:
            _hash_reference(spec, r, tokenizer, n, builder, vocab, rec, tally)
        except OSError as exc:  # missing or unreadable: recorded, the verdict says "not measured"
            rec.error = _unread(exc)
        else:
            rec.read = True
        rec.rows, rec.items, rec.nulls = tally.rows, tally.items, tally.nulls
        rec.pieces, rec.largest_piece_tokens = tally.pieces, tally.largest_piece
        records.append(rec)
    return records


def _hash_reference(spec: ReferenceSpec, r: int, tokenizer: Tokenizer | BuiltinTokenizer, n: int,
                    builder: IndexBuilder, vocab: int | None, rec: ReferenceRecord,
                    tally: ReferenceItems) -> None:
    """Hash every window of every item of ``spec`` into ``builder``: whole short items in blocks, a long
    item piece by piece (its last ``n - 1`` tokens carried to the next piece)."""
    parts: list[npt.NDArray[np.uint64]] = []
    size = 0
    carry: npt.NDArray[np.uint64] | None = None  # the tail of an item continued in the next piece
    for ids, last in reference_pieces(spec, tokenizer, tally):
        if vocab is not None and ids.size and int(ids.max()) >= vocab:
            raise InputError(
                f"reference {spec.label!r} item {tally.items - 1} holds token id {int(ids.max())} >= the "
                f"shards' vocab {vocab}: tokenize the references with the tokenizer that wrote the shards "
                "(--tokenizer module:callable)")
        rec.tokens += int(ids.size)
        if carry is None and last:
            parts.append(ids)
            size += int(ids.size)
            if size >= BLOCK_TOKENS or len(parts) >= 65536:
                _add_items(builder, r, parts, n, rec)
                parts, size = [], 0
            continue
        joined = ids if carry is None else np.concatenate((carry, ids))
        hashes = window_hashes(joined, n)
        rec.windows += int(hashes.size)
        builder.add(hashes, r)
        carry = None if last else joined[joined.size - min(joined.size, n - 1):].copy()
    if parts:
        _add_items(builder, r, parts, n, rec)


def _add_items(builder: IndexBuilder, r: int, parts: list[npt.NDArray[np.uint64]], n: int,
               rec: ReferenceRecord) -> None:
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in parts], out=offsets[1:])
    counts = window_counts(offsets, 0, n)
    rec.windows += int(counts.sum())
    if counts.sum():
        hashes = window_hashes(np.concatenate(parts), n)
        builder.add(hashes[run_index(offsets[:-1], counts)], r)


# --------------------------------------------------------------------------- the scan


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
    existing = [i.path for i in inputs if os.path.exists(i.path)]
    distinct_files("training input", existing)  # one file twice (also as ./f or a link) would count twice
    check_int("n", n, 1)
    if exclude not in EXCLUDE_RULES:
        raise InputError(f"exclude must be one of {', '.join(EXCLUDE_RULES)}, got {exclude!r}")


def _run_pass(inputs: Sequence[CorpusInput], records: list[InputRecord], tallies: list[InputTally],
              source: GramTable | IndexFiles, k: int, n: int, tokenizer: Tokenizer | BuiltinTokenizer,
              executor: Executor | None, compiled: bool, ref_matched: IntArray,
              progress: Callable[[int], None] | None) -> list[tuple[IntArray, npt.NDArray[np.uint64]]]:
    """Scan every input still read against pass ``k``; return each input's found positions and bits."""
    todo = [i for i, rec in enumerate(records) if k == 0 or rec.read]
    args = [(inputs[i], source, k, n, tokenizer) for i in todo]
    if executor is None:
        results: Any = (scan_input(*a, first=k == 0, compiled=compiled) for a in args)
    else:
        futures = [executor.submit(scan_input, *a, first=k == 0, compiled=compiled) for a in args]
        results = (f.result() for f in futures)
    found = []
    for i, res in zip(todo, results, strict=True):
        if res.usage:
            raise (InputTypeError if res.error_type == "InputTypeError" else InputError)(res.error)
        rec = records[i]
        if res.error is not None:
            rec.read, rec.error = False, res.error
        else:
            try:
                tallies[i].add(res, first=k == 0)
            except NotMeasured as exc:
                rec.read, rec.error = False, f"input {rec.name!r}: {exc}"
            else:
                rec.read = True
                found.append((res.found, res.found_members))
                ref_matched += res.ref_matched[: ref_matched.size]
        if progress is not None:
            progress(1)
    return found


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
    executor: Executor | None = None,
    compiled: bool | None = None,
    labels: LabelsFor | None = None,
    progress: Callable[[int], None] | None = None,
) -> ContaminationReport:
    """Count the ``n``-gram overlap of ``inputs`` with ``references``; see the module docstring.

    Args:
        inputs: the training inputs, in document order (a file named twice is refused).
        references: the reference sets (at most 64).
        tokenizer: how references and text inputs become token ids
            (:mod:`~packing_theory.contamination.tokens`); token formats are already ids.
        n: window length (default 13).
        memory_grams: the most reference grams held at once; beyond, the
            index goes to ``index_dir`` (default: a temporary directory).
        exclude: the mask's rule, ``"any"`` or ``"majority"``.
        vocab: when given (the shards' vocabulary), a reference token id at
            or above it is refused (references tokenized with another tokenizer).
        executor: run the tasks of each pass there (one input per task);
            ``None``: in this process.
        compiled: use the numba loop (default: when numba is installed); the answer is the same.
        labels: each document's data source, from the inputs' document counts
            (else an input's own source or source column; else unattributed).
        progress: called with 1 after each task (an input scanned in one pass).

    Returns:
        The report; its ``mask`` is set only when the scan measured.

    Raises:
        InputError: bad arguments or bad input (see the module docstring).
    """
    _check_options(inputs, references, n, exclude)
    memory_grams = check_int("memory_grams", memory_grams, 1)
    use_compiled = compiled_scan_available() if compiled is None else bool(compiled)
    t0, c0 = time.perf_counter(), time.process_time()
    builder = IndexBuilder(len(references), memory_grams, directory=index_dir)
    try:
        ref_records = _read_references(references, tokenizer, n, builder, vocab)
        index = builder.finish()
    except BaseException:
        builder.discard()
        raise
    t1, c1 = time.perf_counter(), time.process_time()
    records = [InputRecord(i.label, i.kind, i.source) for i in inputs]
    tallies = [InputTally() for _ in inputs]
    found: Found = []
    ref_matched = np.zeros(len(references), dtype=np.int64)
    with index:
        for ref, grams in zip(ref_records, index.reference_grams, strict=True):
            ref.grams = grams
        if index.grams:
            _scan_passes(index, inputs, records, tallies, found, n, tokenizer, executor, use_compiled,
                         ref_matched, progress)
        else:
            for rec in records:
                rec.error = "not scanned: no reference yielded a gram"
        describe = {**index.describe(), "peak_grams": builder.peak_grams,
                    "kernel": "compiled (numba)" if use_compiled else "numpy"}
        report = ContaminationReport(n=n, tokenizer=tokenizer_label(tokenizer), exclude=exclude,
                                     inputs=records, references=ref_records, index=describe,
                                     reference_grams=index.grams, corpus=_corpus_label(inputs),
                                     settings=_settings(references, n, tokenizer, exclude, memory_grams))
    summarise(report, inputs, tallies, found, ref_matched, labels)
    t2, c2 = time.perf_counter(), time.process_time()
    report.seconds = t2 - t0
    report.timings = {"references_wall_s": t1 - t0, "references_cpu_s": c1 - c0, "scan_wall_s": t2 - t1,
                      "scan_cpu_s": c2 - c1}
    return report


def _corpus_label(inputs: Sequence[CorpusInput]) -> str:
    first = inputs[0]
    more = f" and {len(inputs) - 1:,} more" if len(inputs) > 1 else ""
    return f"{first.kind} {first.label}{more}"


def _settings(references: Sequence[ReferenceSpec], n: int, tokenizer: Tokenizer | BuiltinTokenizer,
              exclude: str, memory_grams: int) -> dict[str, Any]:
    """What determines the report besides the corpus (hashed into its files' config hash)."""
    return {"n": n, "tokenizer": tokenizer_label(tokenizer), "exclude": exclude, "memory_grams": memory_grams,
            "references": [{"path": r.path, "columns": list(r.columns), "per_line": r.per_line,
                            "rows": r.declared_rows} for r in references]}


def _scan_passes(index: GramIndex, inputs: Sequence[CorpusInput], records: list[InputRecord],
                 tallies: list[InputTally], found: Found, n: int,
                 tokenizer: Tokenizer | BuiltinTokenizer, executor: Executor | None, compiled: bool,
                 ref_matched: IntArray, progress: Callable[[int], None] | None) -> None:
    if executor is not None:
        files = index.files()
        for k in range(index.passes):
            found.append(_run_pass(inputs, records, tallies, files, k, n, tokenizer, executor, compiled,
                                   ref_matched, progress))
        return
    for k, table in enumerate(index.tables()):
        found.append(_run_pass(inputs, records, tallies, table, k, n, tokenizer, None, compiled, ref_matched,
                               progress))
        del table
