"""Readers for the formats corpora are kept in, each giving BOS-inclusive document lengths.

=============  =================================================  ==========================================
format         what                                               reader (extra)
=============  =================================================  ==========================================
``lengths``    a ``.npy`` array of BOS-inclusive lengths          :func:`~packing_theory.corpus.load_lengths`
``megatron``   Megatron-LM indexed dataset ``.idx`` (+ ``.bin``)  :class:`~.megatron.MegatronIndex`
``olmo``       OLMo-core / Dolma token arrays (raw or ``.npy``)   :class:`~.olmo.OlmoTokenArray`
``hf``         a Hugging Face dataset saved with ``save_to_disk``  :class:`~.hf.HFDataset` (``hf``)
``mds``        MosaicML streaming MDS shards                      :class:`~.mds.MDSDataset` (``mds``)
``jsonl``      JSON Lines text, plain, ``.gz`` or ``.zst``        :class:`~.jsonl.JsonLines` (``zstd``)
``text``       plain text files                                   :func:`~.text.lengths_from_text_files`
``parquet``    parquet text columns                               :func:`~.text.iter_parquet_texts`
``shards``     seed-002 token shards                              :func:`~.shards.lengths_from_shards`
=============  =================================================  ==========================================

:func:`detect_format` names the format of a path and says why;
:func:`plan_inputs` turns paths, directories and glob patterns into the
inputs to read, each with its format, and lists the files a directory walk
skipped as not data (:mod:`~packing_theory.corpus.readers.inputs`);
:func:`open_data` opens inputs of one format as one
:class:`~._base.DataReader` and :func:`open_inputs` inputs of any formats
(each run of one format by its reader; several inputs are read in the order
given and concatenated). Token-id formats need an explicit ``bos`` (see
:mod:`packing_theory.corpus.readers._base`); the options a format does not
use are refused, never ignored.

>>> detect_format("data/wiki_text_document.idx")
('megatron', 'the .idx of a Megatron indexed dataset')
>>> detect_format("shard-000.jsonl.zst")
('jsonl', 'a JSON Lines file name (.jsonl.zst)')
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import InputError
from ._base import BOS_MODES, BosMode, DataReader, bos_inclusive, check_bos, file_codes
from .inputs import FORMATS, InputPlan, detect_format, expand_inputs, plan_inputs

__all__ = [
    "BOS_MODES",
    "FORMATS",
    "FORMAT_OPTIONS",
    "ArrayReader",
    "BosMode",
    "ConcatReader",
    "DataReader",
    "InputPlan",
    "MixedReader",
    "bos_inclusive",
    "check_bos",
    "detect_format",
    "expand_inputs",
    "open_data",
    "open_inputs",
    "plan_inputs",
]

FORMAT_OPTIONS: dict[str, frozenset[str]] = {
    "lengths": frozenset(),
    "megatron": frozenset({"bos"}),
    "olmo": frozenset({"bos", "eos_id", "dtype"}),
    "hf": frozenset({"bos", "field", "tokenizer", "split"}),
    "mds": frozenset({"bos", "field", "tokenizer", "dtype"}),
    "jsonl": frozenset({"bos", "field", "tokenizer", "errors", "source_field"}),
    "text": frozenset({"bos", "tokenizer", "per_line", "encoding", "errors"}),
    "parquet": frozenset({"bos", "field", "tokenizer"}),
    "shards": frozenset(),
}
"""The options each format uses; :func:`open_data` refuses any other."""

Int64Array = npt.NDArray[np.int64]


class ArrayReader:
    """Lengths already computed (a lengths file, text, parquet or shards), with their files."""

    def __init__(self, fmt: str, paths: Sequence[str], lengths: Int64Array, per_file: Sequence[int],
                 description: str, names: Any = None) -> None:
        self.format = fmt
        self._names = names
        self.paths: tuple[str, ...] = tuple(paths)
        self._lengths = lengths
        self._per_file = list(per_file)
        self._description = description

    def __len__(self) -> int:
        return int(self._lengths.size)

    def lengths(self) -> Int64Array:
        """The BOS-inclusive lengths."""
        return self._lengths

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """Every document's source label: its file."""
        return self.paths, file_codes(self._per_file)

    def names(self) -> Any:
        """The documents' own names (a parquet file's ``id`` / ``name`` column, read lazily), or ``None``
        (they are then named by file)."""
        return self._names

    def describe(self) -> str:
        """One line: what was read."""
        return self._description


class ConcatReader:
    """Several readers of one format, read in order as one corpus."""

    def __init__(self, readers: Sequence[Any]) -> None:
        if not readers:
            raise InputError("no inputs to concatenate")
        self.readers = list(readers)
        self.format = str(self.readers[0].format)
        self.paths: tuple[str, ...] = tuple(p for r in self.readers for p in r.paths)

    def __len__(self) -> int:
        return sum(len(r) for r in self.readers)

    def lengths(self) -> Int64Array:
        """The readers' lengths, concatenated."""
        return np.concatenate([r.lengths() for r in self.readers])

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """The readers' source labels, merged (equal labels share a code)."""
        labels: dict[str, int] = {}
        codes: list[npt.NDArray[np.int32]] = []
        for r in self.readers:
            names, own = r.sources()
            remap = np.array([labels.setdefault(n, len(labels)) for n in names], dtype=np.int32)
            codes.append(remap[own] if own.size else own)
        return tuple(labels), np.concatenate(codes)

    def names(self) -> Any:
        """The rows' own names (a dataset's name column, read lazily) as one name source over the
        concatenation, an input without them named by file (``FILE#k``); ``None`` when no input has
        them (the rows are then all named by file)."""
        parts = []
        for r in self.readers:
            own = getattr(r, "names", None)
            parts.append(own() if callable(own) else None)
        if all(p is None for p in parts):
            return None
        for k, r in enumerate(self.readers):
            if parts[k] is None:
                from .names import FileNames

                files, codes = r.sources()
                parts[k] = FileNames(files, np.bincount(codes, minlength=len(files)).tolist())
        return parts[0] if len(parts) == 1 else _ConcatNames(parts)

    def describe(self) -> str:
        """One line: the first input's line and how many inputs there are."""
        first = self.readers[0].describe()
        return first if len(self.readers) == 1 else f"{len(self.readers)} inputs; first: {first}"


class MixedReader(ConcatReader):
    """Inputs of several formats read as one corpus: one reader per run of inputs of one format, in
    order (:func:`open_inputs`). Lengths, sources and names are the readers', concatenated."""

    def __init__(self, readers: Sequence[Any]) -> None:
        super().__init__(readers)
        self.format = "mixed"

    def describe(self) -> str:
        """One line: every reader's line, in order."""
        return " | ".join(f"{r.format}: {r.describe()}" for r in self.readers)


class _ConcatNames:
    """Several inputs' name sources read as one (``len`` and ``take`` of raw row ids)."""

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = list(parts)
        self._ends = np.cumsum(np.asarray([len(p) for p in self.parts], np.int64))

    def __len__(self) -> int:
        return int(self._ends[-1]) if self._ends.size else 0

    def take(self, ids: Int64Array) -> list[str]:
        ids = np.asarray(ids, np.int64)
        part = np.searchsorted(self._ends, ids, side="right")
        out = [""] * int(ids.size)
        for k in np.unique(part).tolist():
            at = np.flatnonzero(part == k)
            start = int(self._ends[k - 1]) if k else 0
            for j, name in zip(at.tolist(), self.parts[k].take(ids[at] - start), strict=True):
                out[j] = name
        return out


def open_data(paths: Sequence[str], fmt: str, **options: Any) -> Any:
    """Open ``paths`` (already expanded: :func:`expand_inputs`) as one reader of format ``fmt``.

    ``options`` are the format's (:data:`FORMAT_OPTIONS`): ``bos``, ``eos_id``,
    ``dtype``, ``field``, ``tokenizer``, ``split``, ``per_line``, ``encoding``,
    ``errors``; an option the format does not use is refused.

    Raises:
        InputError: an unknown format, an option that does not apply, or the reader's own errors.
    """
    if fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    given = {k: v for k, v in options.items() if v is not None}
    extra = sorted(set(given) - FORMAT_OPTIONS[fmt])
    if extra:
        raise InputError(f"{', '.join(extra)} does not apply to {fmt} data (it uses "
                         f"{', '.join(sorted(FORMAT_OPTIONS[fmt])) or 'no options'})")
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise InputError("no inputs: give at least one path")
    if fmt in ("megatron", "olmo", "hf", "mds"):
        return ConcatReader([_open_one(p, fmt, given) for p in paths])
    return _open_files(paths, fmt, given)


def _open_one(path: str, fmt: str, opts: dict[str, Any]) -> Any:
    if "bos" not in opts and fmt in ("hf", "mds"):  # by column: text takes "auto", token ids ask for bos
        opts = {**opts, "bos": "auto"}
    if "bos" not in opts:
        raise InputError(f"{fmt} data holds token ids: say how BOS is counted: bos='included' "
                         "(--bos included: the stored documents hold their BOS or EOS/EOD) or bos='add' "
                         "(--bos add: one BOS added per document)")
    if fmt == "megatron":
        from .megatron import MegatronIndex

        return MegatronIndex(path, bos=opts["bos"])
    if fmt == "olmo":
        from .olmo import OlmoTokenArray

        return OlmoTokenArray(path, bos=opts["bos"], eos_id=opts.get("eos_id"), dtype=opts.get("dtype"))
    if fmt == "hf":
        from .hf import HFDataset

        return HFDataset(path, bos=opts["bos"], column=opts.get("field"), tokenizer=opts.get("tokenizer"),
                         split=opts.get("split"))
    from .mds import MDSDataset

    return MDSDataset(path, bos=opts["bos"], column=opts.get("field"), tokenizer=opts.get("tokenizer"),
                      dtype=opts.get("dtype"))


def _open_files(paths: list[str], fmt: str, opts: dict[str, Any]) -> Any:
    from ..text import resolve_bos

    tokenizer = opts.get("tokenizer", "bytes")
    if fmt == "jsonl":
        from .jsonl import JsonLines

        return JsonLines(paths, tokenizer=tokenizer, field=opts.get("field", "text"),
                         bos=opts.get("bos", "auto"), errors=opts.get("errors", "strict"),
                         source_field=opts.get("source_field"))
    if fmt == "lengths":
        from ...lengths import load_lengths

        parts = [load_lengths(p) for p in paths]  # memory-mapped int64 files: no copy for one file
        return ArrayReader(fmt, paths, parts[0] if len(parts) == 1 else np.concatenate(parts),
                           [p.size for p in parts],
                           f"lengths file(s) {paths[0]!r}{' ...' if len(paths) > 1 else ''}: "
                           f"{sum(p.size for p in parts):,} BOS-inclusive lengths")
    if fmt == "shards":
        from ..shards import read_shard

        parts = [read_shard(p).lengths() for p in paths]
        lengths = np.concatenate(parts)
        if not lengths.size:
            raise InputError(f"shards {paths!r} hold no documents")
        return ArrayReader(fmt, paths, lengths, [p.size for p in parts],
                           f"{len(paths)} seed-002 shard(s): {lengths.size:,} documents (BOS stored)")
    bos, reason = resolve_bos(opts.get("bos", "auto"), tokenizer)
    if fmt == "parquet":
        from ..text import iter_parquet_texts, text_token_counts

        column = opts.get("field", "text")
        parts = [text_token_counts(iter_parquet_texts(p, column), tokenizer,
                                   where=f"parquet file {p!r} row {{i}} (from 0)") for p in paths]
    else:
        from ..text import iter_text_files, text_token_counts

        parts = [text_token_counts(iter_text_files(p, per_line=bool(opts.get("per_line")),
                                                   encoding=opts.get("encoding", "utf-8"),
                                                   errors=opts.get("errors", "strict")), tokenizer,
                                   where=f"text file {p!r} document {{i}} (from 0)")
                 if not isinstance(tokenizer, str) else _builtin_counts(p, tokenizer, opts) for p in paths]
    counts = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if not counts.size:
        raise InputError(f"{fmt} inputs {paths[:3]!r} hold no documents")
    lengths = bos_inclusive(counts, check_bos(bos, fmt), f"{fmt} input")
    per_file = [p.size for p in parts]
    names = None
    if fmt == "parquet":
        from .names import parquet_names

        names = parquet_names(paths, per_file)
    return ArrayReader(fmt, paths, lengths, per_file,
                       f"{len(paths)} {fmt} file(s): {lengths.size:,} documents; bos={bos}: {reason}", names)


def _builtin_counts(path: str, unit: str, opts: dict[str, Any]) -> Int64Array:
    from ..textcount import count_text_files

    counts = count_text_files([path], unit, per_line=bool(opts.get("per_line")),  # type: ignore[arg-type]
                              encoding=opts.get("encoding", "utf-8"), errors=opts.get("errors", "strict"))
    return np.frombuffer(counts, dtype=np.int64).copy() if len(counts) else np.zeros(0, np.int64)


def open_inputs(plan: InputPlan | Sequence[tuple[str, str]], **options: Any) -> Any:
    """Open inputs of any formats (an :class:`InputPlan`, or ``(path, format)`` pairs) as one reader.

    Inputs of one format are :func:`open_data`'s reader, exactly. Inputs of several formats: each run
    of consecutive inputs of one format is opened by :func:`open_data` with the options its format
    uses (:data:`FORMAT_OPTIONS`), and a :class:`MixedReader` reads them in order. An option that no
    input's format uses is refused; ``bos`` is required while a token-id input (``megatron``,
    ``olmo``) is among them, and the message names that input (as does any reader's error). The
    built-in ``bytes`` tokenizer (the default) is not passed to a dataset (``hf``, ``mds``): its text
    column counts bytes without it, and a token column takes no tokenizer.

    Raises:
        InputError: an option no format uses, a missing ``bos``, the readers' own errors.
    """
    plan = plan if isinstance(plan, InputPlan) else InputPlan(tuple((os.fspath(p), f) for p, f in plan))
    runs = plan.runs()
    if len(runs) == 1:
        return open_data(runs[0][1], runs[0][0], **options)
    given = {k: v for k, v in options.items() if v is not None}
    used = set().union(*(FORMAT_OPTIONS[f] for f in plan.formats))
    extra = sorted(set(given) - used)
    if extra:
        raise InputError(f"{', '.join(extra)} does not apply to any input ({', '.join(plan.formats)} data; "
                         f"they use {', '.join(sorted(used)) or 'no options'})")
    for fmt in plan.formats:
        if fmt in ("megatron", "olmo") and given.get("bos") in (None, "auto"):
            raise InputError(f"bos must be 'included' or 'add': {fmt} input {plan.first(fmt)!r} holds token "
                             "ids, so say how BOS is counted (it applies to every input that takes it)")
    readers = []
    for fmt, paths in runs:
        opts = {k: v for k, v in given.items() if k in FORMAT_OPTIONS[fmt]}
        if fmt in ("hf", "mds") and opts.get("tokenizer") == "bytes":  # default; a token column takes none
            del opts["tokenizer"]
        try:
            readers.append(open_data(paths, fmt, **opts))
        except InputError as exc:  # say which of the inputs, where the reader's message does not
            if any(repr(p) in str(exc) for p in paths):
                raise
            more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
            raise type(exc)(f"{fmt} input {paths[0]!r}{more}: {exc}") from exc
    return MixedReader(readers)
