"""The training inputs of a contamination scan: every format ``audit --data`` reads, as blocks of token ids.

One :class:`CorpusInput` is one file (or one saved dataset directory) in one
format; :func:`input_blocks` yields its documents as :class:`Block`\\ s of
token ids with their boundaries, opening the file with the reader of
:mod:`packing_theory.corpus.readers` (the same classes, options and checks as
``audit --data``):

============  ==================================================
kind          documents and their token ids
============  ==================================================
``shard``     seed-002 shard documents, read slice by slice from
              the file; a document's first token (its BOS) is
              skipped
``megatron``  ``MegatronIndex``: the ``.bin`` read in slices
``olmo``      ``OlmoTokenArray``: EOS or metadata boundaries
``hf``        ``HFDataset``: a token column as stored, a text
              column tokenized; one Arrow record batch at a time
``mds``       ``MDSDataset``
``jsonl``     ``iter_jsonl`` (plain, ``.gz``, ``.zst``)
``text``      ``iter_text_files``
``parquet``   a text column, one record batch at a time
============  ==================================================

A document is named as ``audit`` and ``explain`` name it
(:func:`input_names`, through
:func:`~packing_theory.corpus.readers.names.reader_names`): its record's own
``id`` / ``name`` (``jsonl``, ``parquet``, ``hf``), else its file and its place
in it: ``FILE`` for a file's only document, ``FILE#k`` for the ``k``-th; the
file of an ``hf`` row is its Arrow file (``DIR/data-00000-of-00002.arrow#k``),
of an ``mds`` sample its shard (``DIR/shard.00000.mds#k``), of a ``megatron``
document its prefix (``PREFIX#k``).

The readers are :class:`~packing_theory.corpus.readers.megatron.MegatronIndex`,
:class:`~packing_theory.corpus.readers.olmo.OlmoTokenArray`,
:class:`~packing_theory.corpus.readers.hf.HFDataset`,
:class:`~packing_theory.corpus.readers.mds.MDSDataset`,
:func:`~packing_theory.corpus.readers.jsonl.iter_jsonl` and
:func:`~packing_theory.corpus.text.iter_text_files`.

Token formats are scanned as stored: no token is skipped (the format does not
say whether its separator is a leading BOS or a trailing EOS; a window holding
it matches no reference window, which holds neither). Texts get no BOS. A
document's BOS-inclusive length (the mask's fingerprint) follows the
reader's ``bos`` rule: ``"included"`` counts the stored or tokenized ids,
``"add"`` one more (text: ``"auto"`` asks the tokenizer,
:func:`~packing_theory.corpus.text.resolve_bos`).

With ``source_column`` (``jsonl``, ``parquet``, ``hf``) each document's data
source is read beside its text, in the same pass.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ..corpus.readers.names import NAME_COLUMNS, record_name
from ..corpus.shards import HEADER, read_shard
from ..corpus.text import Tokenizer, iter_text_files, resolve_bos
from ..corpus.textcount import BuiltinTokenizer
from ..errors import InputError, InputTypeError, NotMeasured, import_optional
from .tokens import open_parquet, text_token_ids

__all__ = [
    "BLOCK_TOKENS",
    "INPUT_KINDS",
    "NAME_COLUMNS",
    "Block",
    "CorpusInput",
    "TokenSlices",
    "input_blocks",
    "input_names",
]

InputKind = Literal["shard", "text", "parquet", "jsonl", "megatron", "olmo", "hf", "mds"]
INPUT_KINDS: tuple[InputKind, ...] = ("shard", "text", "parquet", "jsonl", "megatron", "olmo", "hf", "mds")
"""Kinds of training input (the formats of ``--data`` that hold token ids or text)."""

_SOURCE_KINDS = ("parquet", "jsonl", "hf")
_TOKEN_KINDS = ("megatron", "olmo")


BLOCK_TOKENS = 1 << 20
"""Text documents (and stored ones read one by one) are gathered into blocks of about this many tokens."""

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]


class TokenSlices(Protocol):
    """Token ids that can be sliced (a numpy array, or a file read slice by slice)."""

    def __getitem__(self, key: slice, /) -> Any: ...


@dataclass(frozen=True)
class CorpusInput:
    """One training input of a scan (picklable: a worker process opens it).

    Attributes:
        path: the file, or the dataset directory (``hf``, ``mds``).
        kind: one of :data:`INPUT_KINDS`.
        source: the data source of all its documents, when known (a
            single-source shard of a manifest); ``None`` otherwise.
        column: the text (or token) column or field (default: the reader's).
        per_line: ``text``: one document per non-blank line.
        name: how the report names it (default: ``path``).
        source_column: ``jsonl`` / ``parquet`` / ``hf``: the column holding each document's source.
        bos: token formats: ``"included"`` or ``"add"`` (required); texts:
            ``"auto"`` (default), ``"add"`` or ``"included"``.
        eos_id, dtype: ``olmo`` (``dtype`` also ``mds``): as the readers take them.
        split: ``hf``: the split of a saved ``DatasetDict``.
    """

    path: str
    kind: InputKind = "shard"
    source: str | None = None
    column: str | None = None
    per_line: bool = False
    name: str | None = None
    source_column: str | None = None
    bos: str | None = None
    eos_id: int | None = None
    dtype: str | None = None
    split: str | None = None

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
        if self.source_column is not None and self.kind not in _SOURCE_KINDS:
            raise InputError(f"input {self.path!r}: a source column applies to {', '.join(_SOURCE_KINDS)} "
                             f"inputs, not {self.kind}")
        if self.kind in _TOKEN_KINDS and self.bos not in ("included", "add"):
            raise InputError(f"input {self.path!r}: {self.kind} data holds token ids: bos must be 'included' "
                             f"or 'add' (--bos), got {self.bos!r}")


@dataclass
class Block:
    """Whole documents of one input: document ``d`` is ``ids[starts[d] : ends[d]]``.

    Attributes:
        ids: the token ids (positions as in ``starts`` / ``ends``).
        starts, ends: each document's span (``ends[d] <= starts[d + 1]``).
        skip: leading tokens of every document no window may start in (a shard's BOS).
        extra: tokens to add to a span for its BOS-inclusive length (1 for ``bos="add"``).
        names: each document's name from the dataset (``None`` where it has none), or ``None``.
        sources: each document's data source from ``source_column``, or ``None``.
    """

    ids: TokenSlices
    starts: IntArray
    ends: IntArray
    skip: int = 0
    extra: int = 0
    names: list[str | None] | None = None
    sources: list[str] | None = None

    @property
    def n_documents(self) -> int:
        """Documents in the block."""
        return int(self.starts.size)

    def lengths(self) -> IntArray:
        """BOS-inclusive length of each document."""
        out: IntArray = (self.ends - self.starts) + self.extra
        return out


class FileIds:
    """Ids of ``dtype`` stored in ``path`` from byte ``offset``, read one slice at a time (O(slice)
    memory)."""

    def __init__(self, path: str, offset: int, dtype: npt.DTypeLike, size: int) -> None:
        self.path, self.offset, self.dtype, self.size = path, offset, np.dtype(dtype), size

    def __getitem__(self, s: slice) -> npt.NDArray[Any]:
        lo, hi, _ = s.indices(self.size)
        if hi <= lo:
            return np.zeros(0, dtype=self.dtype)
        out: npt.NDArray[Any] = np.fromfile(self.path, dtype=self.dtype, count=hi - lo,
                                            offset=self.offset + self.dtype.itemsize * lo)
        if out.size != hi - lo:
            raise NotMeasured(f"{self.path!r} ended at token {lo + out.size} while reading {lo}..{hi}: it "
                              "changed during the scan")
        return out


def _contiguous(counts: IntArray) -> tuple[IntArray, IntArray]:
    ends = np.cumsum(counts, dtype=np.int64)
    return ends - counts, ends


def input_blocks(inp: CorpusInput, tokenizer: Tokenizer | BuiltinTokenizer) -> Iterator[Block]:
    """Yield the documents of ``inp`` in order, as blocks (see the module docstring).

    Raises:
        OSError: a file that is missing or unreadable (the scan records the input as not read).
        InputError: what the format's reader refuses (a bad option, a corrupt index, a bad line).
    """
    if inp.kind == "shard":
        shard = read_shard(inp.path)
        offsets = np.asarray(shard.offsets, dtype=np.int64)
        ids = FileIds(shard.path, HEADER.size + 4 * offsets.size, "<u2", shard.n_tokens)
        del shard  # the ids are read in slices, never mapped whole
        yield Block(ids, offsets[:-1], offsets[1:], skip=1)
    elif inp.kind == "megatron":
        yield _megatron(inp)
    elif inp.kind == "olmo":
        yield _olmo(inp)
    elif inp.kind == "hf":
        yield from _hf(inp, tokenizer)
    elif inp.kind == "mds":
        yield from _mds(inp, tokenizer)
    else:
        yield from _texts(inp, tokenizer)


def input_names(inp: CorpusInput, documents: int) -> Any:
    """The names of the ``documents`` documents of ``inp``, as the per-document table and ``explain``
    name them: an input read by a reader of several files or a prefix (``hf``, ``mds``, ``megatron``) is
    opened (its metadata only) and named by
    :func:`~packing_theory.corpus.readers.names.reader_names`; a single file by
    :class:`~packing_theory.corpus.readers.names.FileNames` of its label (the scan's blocks carry
    the records' own names).

    Returns:
        an object with ``len`` and ``take(ids) -> list[str]``.

    Raises:
        NotMeasured: the reader names another number of documents than the scan read.
    """
    from ..corpus.readers.names import FileNames, reader_names

    reader: Any = None
    if inp.kind == "hf":
        from ..corpus.readers.hf import HFDataset

        reader = HFDataset(inp.path, bos=inp.bos or "auto", column=inp.column, split=inp.split)
    elif inp.kind == "mds":
        from ..corpus.readers.mds import MDSDataset

        reader = MDSDataset(inp.path, bos=inp.bos or "auto", column=inp.column, dtype=inp.dtype)
    elif inp.kind == "megatron":
        from ..corpus.readers.megatron import MegatronIndex

        reader = MegatronIndex(inp.path, bos=inp.bos)  # type: ignore[arg-type]  # checked in CorpusInput
    if reader is None:
        return FileNames([inp.label], [documents])
    names = reader_names(reader)
    if names is None or len(names) != documents:
        raise NotMeasured(f"{inp.kind} input {inp.path!r} names {0 if names is None else len(names):,} "
                          f"documents, the scan read {documents:,}: it changed during the scan")
    return names


def _megatron(inp: CorpusInput) -> Block:
    from ..corpus.readers.megatron import MegatronIndex

    r = MegatronIndex(inp.path, bos=inp.bos)  # type: ignore[arg-type]  # checked in CorpusInput
    lengths = r.sequence_lengths.astype(np.int64)
    pointers = r.sequence_pointers
    item = r.dtype.itemsize
    first = int(pointers[0]) if pointers.size else 0
    done = 0  # tokens before the chunk
    for lo in range(0, lengths.size, 1 << 20):  # the sequences must lie in order, back to back
        part = lengths[lo : lo + (1 << 20)]
        before = np.cumsum(part) - part + done
        done += int(part.sum())
        if not np.array_equal(pointers[lo : lo + part.size], first + item * before):
            raise InputError(f"Megatron index {r.idx_path!r}: its sequences are not stored in order, back to "
                             "back, in the .bin; this scan reads them in one sweep")
    starts, ends = _contiguous(r.token_counts())
    ids = FileIds(r.bin_path, first, r.dtype, int(ends[-1]) if ends.size else 0)
    return Block(ids, starts, ends, extra=1 if r.bos == "add" else 0)


def _olmo(inp: CorpusInput) -> Block:
    from ..corpus.readers.olmo import OlmoTokenArray

    r = OlmoTokenArray(inp.path, bos=inp.bos, eos_id=inp.eos_id, dtype=inp.dtype)  # type: ignore[arg-type]
    tokens = r.tokens
    ids: TokenSlices = tokens
    if isinstance(tokens, np.memmap) and tokens.filename:  # read in slices, not through the map
        ids = FileIds(os.fspath(tokens.filename), int(tokens.offset), tokens.dtype, int(tokens.size))
    return Block(ids, r.starts, r.ends, extra=1 if r.bos == "add" else 0)


def _text_extra(inp: CorpusInput, tokenizer: Tokenizer | BuiltinTokenizer) -> int:
    return 1 if resolve_bos(inp.bos or "auto", tokenizer)[0] == "add" else 0


class _Gather:
    """Documents' ids gathered into blocks of about :data:`BLOCK_TOKENS` tokens."""

    def __init__(self, extra: int) -> None:
        self.extra = extra
        self.parts: list[npt.NDArray[Any]] = []
        self.names: list[str | None] = []
        self.sources: list[str] = []
        self.size = 0

    def add(self, ids: npt.NDArray[Any], name: str | None = None, source: str | None = None) -> Block | None:
        self.parts.append(ids)
        self.names.append(name)
        if source is not None:
            self.sources.append(source)
        self.size += int(ids.size)
        return self.flush() if self.size >= BLOCK_TOKENS or len(self.parts) >= 65536 else None

    def flush(self) -> Block | None:
        if not self.parts:
            return None
        starts, ends = _contiguous(np.array([p.size for p in self.parts], dtype=np.int64))
        ids = np.concatenate([np.asarray(p).astype(np.uint64, copy=False) for p in self.parts])
        names = self.names if any(n is not None for n in self.names) else None
        block = Block(ids, starts, ends, extra=self.extra, names=names,
                      sources=self.sources if self.sources else None)
        self.parts, self.names, self.sources, self.size = [], [], [], 0
        return block


def _emit(blocks: Iterable[Block | None]) -> Iterator[Block]:
    for b in blocks:
        if b is not None:
            yield b


def _texts(inp: CorpusInput, tokenizer: Tokenizer | BuiltinTokenizer) -> Iterator[Block]:
    """``text``, ``jsonl`` and ``parquet`` inputs: texts (with names and sources) through the tokenizer."""
    rows: Iterable[tuple[str, str | None, str | None]]
    if inp.kind == "text":
        rows = ((t, None, None) for t in iter_text_files([inp.path], per_line=inp.per_line))
    elif inp.kind == "jsonl":
        rows = _jsonl_rows(inp)
    else:
        rows = _arrow_rows(inp, _parquet_batches(inp))
    yield from _tokenized_rows(rows, tokenizer, _Gather(_text_extra(inp, tokenizer)),
                               what=f"input {inp.path!r} document")


def _jsonl_rows(inp: CorpusInput) -> Iterator[tuple[str, str | None, str | None]]:
    """Each record's text, own name and source, in one pass over the file."""
    from ..corpus.readers.jsonl import iter_jsonl_records

    rows = iter_jsonl_records(inp.path, inp.column or "text", source_field=inp.source_column)
    for text, source, name in rows:  # a record without its source field is refused by the parser
        yield text, name, None if inp.source_column is None else str(source)


def _columns(inp: CorpusInput, names: Sequence[str], text: str) -> tuple[str | None, str | None]:
    """The name column and source column of a table with columns ``names`` (refusing an unknown one)."""
    if text not in names:
        raise InputError(f"{inp.kind} input {inp.path!r} has no column {text!r}; columns: {list(names)}")
    if inp.source_column is not None and inp.source_column not in names:
        raise InputError(f"{inp.kind} input {inp.path!r} has no source column {inp.source_column!r} "
                         f"(--source-column); columns: {list(names)}")
    name = next((c for c in NAME_COLUMNS if c in names), None)
    return name, inp.source_column


def _parquet_batches(inp: CorpusInput) -> Iterator[Any]:
    pf = open_parquet(inp.path, "input")
    names = list(pf.schema_arrow.names)
    text = inp.column or "text"
    name, source = _columns(inp, names, text)
    cols = list(dict.fromkeys(c for c in (text, name, source) if c is not None))
    yield from pf.iter_batches(batch_size=4096, columns=cols)


def _values(batch: Any, column: str | None, where: str, *, strings: bool) -> list[Any] | None:
    if column is None:
        return None
    col = batch.column(column)
    if col.null_count:
        first = int(np.flatnonzero(np.asarray(col.is_null()))[0])
        raise InputError(f"{where}: column {column!r} has a null row ({first} of its batch)")
    values: list[Any] = col.to_pylist()
    if strings:
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise InputTypeError(f"{where}: column {column!r} row {i} is {type(v).__name__}, expected a "
                                     "string")
    return values


def _own_names(batch: Any) -> list[str | None] | None:
    """Each row's own name from the batch's first name column (:func:`record_name`), ``None`` without
    one."""
    column = next((c for c in NAME_COLUMNS if c in batch.schema.names), None)
    return None if column is None else [record_name(v) for v in batch.column(column).to_pylist()]


def _arrow_rows(inp: CorpusInput, batches: Iterable[Any]) -> Iterator[tuple[str, str | None, str | None]]:
    """Texts of record batches, with each row's name and source."""
    text = inp.column or "text"
    for batch in batches:
        where = f"{inp.kind} input {inp.path!r}"
        texts = _values(batch, text, where, strings=True)
        assert texts is not None
        labels = _own_names(batch)
        sources = _values(batch, inp.source_column, where, strings=False)
        for i, t in enumerate(texts):
            yield (t, None if labels is None else labels[i],
                   None if sources is None else str(sources[i]))


def _hf(inp: CorpusInput, tokenizer: Tokenizer | BuiltinTokenizer) -> Iterator[Block]:
    from ..corpus.readers.hf import HFDataset

    r = HFDataset(inp.path, bos=inp.bos or "auto", column=inp.column, split=inp.split)  # ids need bos
    if not r.tokenized:  # a text column: opened again with the scan's tokenizer (its BOS rule)
        r = HFDataset(inp.path, bos=inp.bos or "auto", column=inp.column, split=inp.split,
                      tokenizer=tokenizer)
    pa = import_optional("pyarrow", extra="hf", purpose="reading a Hugging Face dataset")
    schema_names: list[str] = []

    def batches() -> Iterator[Any]:
        for path in r.paths:
            with pa.memory_map(path) as src:
                for batch in pa.ipc.open_stream(src):
                    if not schema_names:
                        schema_names.extend(batch.schema.names)
                        _columns(inp, schema_names, r.column)
                    yield batch

    where = f"Hugging Face dataset {r.root!r}"
    extra = 1 if r.bos == "add" else 0
    if not r.tokenized:
        sub = CorpusInput(r.root, "hf", column=r.column, source_column=inp.source_column)
        gather = _Gather(extra)
        rows = _arrow_rows(sub, batches())
        yield from _tokenized_rows(rows, tokenizer, gather, what=f"{where} row")
        return
    for batch in batches():
        col = batch.column(r.column)
        if col.null_count:
            raise InputError(f"{where}: column {r.column!r} has a null row")
        offsets = np.asarray(col.offsets, dtype=np.int64)
        values = np.asarray(col.values)[offsets[0] : offsets[-1]]
        if values.size and (values.dtype.kind not in "iu" or int(values.min()) < 0):
            raise InputTypeError(f"{where}: column {r.column!r} must hold non-negative integer token ids, "
                                 "got "
                                 f"{values.dtype}")
        names = _own_names(batch)
        sources = _values(batch, inp.source_column, where, strings=False)
        rel = offsets - offsets[0]
        yield Block(values, rel[:-1], rel[1:], extra=extra, names=names,
                    sources=None if sources is None else [str(v) for v in sources])


def _tokenized_rows(rows: Iterable[tuple[str, str | None, str | None]],
                    tokenizer: Tokenizer | BuiltinTokenizer, gather: _Gather, *,
                    what: str) -> Iterator[Block]:
    meta: deque[tuple[str | None, str | None]] = deque()  # the tokenizer reads ahead by one batch

    def texts() -> Iterator[str]:
        for text, name, source in rows:
            meta.append((name, source))
            yield text

    for ids in text_token_ids(texts(), tokenizer, what=what):
        name, source = meta.popleft()
        yield from _emit([gather.add(ids, name, source)])
    yield from _emit([gather.flush()])


def _mds(inp: CorpusInput, tokenizer: Tokenizer | BuiltinTokenizer) -> Iterator[Block]:
    from ..corpus.readers.mds import MDSDataset

    r = MDSDataset(inp.path, bos=inp.bos or "auto", column=inp.column, dtype=inp.dtype)  # ids need bos
    if not r.tokenized:
        r = MDSDataset(inp.path, bos=inp.bos or "auto", column=inp.column, dtype=inp.dtype,
                       tokenizer=tokenizer)
    gather = _Gather(1 if r.bos == "add" else 0)
    if not r.tokenized:
        rows = ((str(v), None, None) for v in r.iter_values())
        yield from _tokenized_rows(rows, tokenizer, gather, what=f"MDS dataset {r.root!r} sample")
        return
    for value in r.iter_values():
        arr = np.asarray(value)
        if arr.size and (arr.dtype.kind not in "iu" or int(arr.min()) < 0):
            raise InputTypeError(f"MDS dataset {r.root!r}: column {r.column!r} must hold non-negative "
                                 "integer "
                                 f"token ids, got {arr.dtype}")
        yield from _emit([gather.add(arr.ravel())])
    yield from _emit([gather.flush()])
