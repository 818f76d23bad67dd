"""One input's census (the task a worker runs) and its part on disk (written, checked, reloaded).

:func:`census_shard` is the task: a pure function of one file's bytes and the
:class:`CensusOptions`. :func:`check_shard_result` is what the driver checks
before it accepts a result; :func:`write_part` and :func:`load_part` keep the
accepted result in ``DIR/parts/`` (temporary file, ``os.replace``, the JSON
record last) and give it back only when every file still has its recorded
SHA-256. :mod:`packing_theory.distributed.census` runs the whole census.

>>> blake2b_64(b"abc") == blake2b_64("abc".encode("utf-8"))
True
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_bool, check_int
from .._files import confined
from ..corpus.manifest import file_sha256
from ..corpus.readers.names import NAME_COLUMNS, RecordNames, record_name
from ..corpus.shards import read_shard
from ..corpus.text import (
    _batch_ids,
    _call,
    _token_ids,
    iter_parquet_texts,
    iter_text_files,
    lengths_from_texts,
    tokenizer_name,
)
from ..corpus.textcount import BUILTIN_TOKENIZERS, BuiltinTokenizer, NotText, count_text, count_text_files
from ..errors import InputError, InputTypeError, import_optional
from .executors import ResultRejected

__all__ = [
    "CENSUS_FORMAT",
    "CensusOptions",
    "InputKind",
    "ShardResult",
    "SkippedInput",
    "atomic_write",
    "blake2b_64",
    "census_shard",
    "check_shard_result",
    "load_part",
    "npy_bytes",
    "part_arrays",
    "part_stem",
    "remove_partial_parts",
    "sha256_hex",
    "tokenizer_fingerprint",
    "tokenizer_state",
    "write_part",
]

InputKind = Literal["text", "parquet", "shards", "jsonl", "hf"]
ERRORS = ("strict", "replace", "skip")
"""What the census does with a file that is not text: stop (naming it), decode with U+FFFD, or skip it."""
CENSUS_FORMAT = "packing-theory/census"
"""The census manifest's format tag (a part's record: ``CENSUS_FORMAT + "/part"``)."""
_VERSION = 1

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


def blake2b_64(data: bytes) -> int:
    """The 64-bit BLAKE2b hash of ``data`` (little-endian), as the census records it.

    >>> blake2b_64(b"abc") == blake2b_64("abc".encode("utf-8"))
    True
    """
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


PROBE_TEXTS = (
    "The quick brown fox jumps over the lazy dog. 0123456789 +-*/=<>()[]{} \"quoted\" it's",
    "def f(x):\n    return x ** 2  # code, tabs\tand\nnewlines\r\n",
    "Größe, déjà vu, naïve café; Ελληνικά, русский, עברית, العربية, ",
    "हिन्दी, 中文文本, 日本語のテキスト, 한국어",
    "emoji 🙂🚀 and symbols ©®™ §¶ … — – · « » “ ” ‘ ’ and a long word: antidisestablishmentarianism",
    " ",
    "<|endoftext|> <s> </s> <pad> <unk> [CLS] [SEP] [MASK] <|im_start|>user<|im_end|> <bos> <eos>",
    " ".join(f"w{i % 97} {i}" for i in range(3000)),  # ~20 kB: a tokenizer that truncates cuts it
)
"""Texts a callable tokenizer is run on to tell it apart from another of the same name (the special
tokens' spellings of the common vocabularies, and one text longer than any usual truncation length)."""

_TOKENIZER_SETTINGS = ("model_max_length", "truncation_side", "padding_side", "special_tokens_map",
                       "add_bos_token", "add_eos_token", "name_or_path", "vocab_size")
"""Attributes of a Hugging Face tokenizer that change what it returns, recorded beside its serialisation."""


def tokenizer_state(tokenizer: Callable[..., Any]) -> str | None:
    """SHA-256 of a tokenizer's own description, or ``None`` when it has none.

    A Hugging Face fast tokenizer serialises itself (``backend_tokenizer.to_str()``:
    vocabulary, added and special tokens, truncation, padding, post-processor);
    its settings (:data:`_TOKENIZER_SETTINGS`) and a ``functools.partial``'s
    arguments (``truncation=True, max_length=...``) are added. A bound method
    (``tok.encode``) is described by its object. O(size of the serialisation).

    >>> import functools
    >>> def ids(text, limit=None): return list(text.encode())[:limit]
    >>> tokenizer_state(ids) is None
    True
    >>> tokenizer_state(functools.partial(ids, limit=4)) == tokenizer_state(functools.partial(ids, limit=5))
    False
    """
    parts: list[str] = []
    target: Any = tokenizer
    while isinstance(target, functools.partial):
        parts.append(repr((target.args, sorted(target.keywords.items()))))
        target = target.func
    owner = getattr(target, "__self__", None)
    if owner is not None and not isinstance(owner, type) and not inspect.ismodule(owner):
        target = owner
    backend = getattr(target, "backend_tokenizer", None)
    to_str = getattr(backend if backend is not None else target, "to_str", None)
    if callable(to_str):
        try:
            text = to_str()
        except Exception:  # a user's object: no description, the probe still applies
            text = None
        if isinstance(text, str):
            parts.append(text)
    settings = {k: repr(getattr(target, k)) for k in _TOKENIZER_SETTINGS if hasattr(target, k)}
    if settings:
        parts.append(json.dumps(settings, sort_keys=True))
    if not parts:
        return None
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def tokenizer_fingerprint(tokenizer: Callable[..., Any], *, batched: bool = False) -> str:
    """SHA-256 of the token ids ``tokenizer`` gives for :data:`PROBE_TEXTS`.

    A callable's name does not identify it (two Hugging Face tokenizers, or two
    instances of one class, share ``module.Class instance``); its output on a
    fixed probe does, for every tokenizer that differs on ordinary text. Part of
    a census part's key, so a rerun with another tokenizer recomputes. O(probe).

    >>> def utf8(text): return list(text.encode("utf-8"))
    >>> def utf16(text): return list(text.encode("utf-16-le"))
    >>> tokenizer_fingerprint(utf8) == tokenizer_fingerprint(utf8)
    True
    >>> tokenizer_fingerprint(utf8) == tokenizer_fingerprint(utf16)
    False
    """
    name = tokenizer_name(tokenizer)
    where = "the census's probe texts"
    if batched:
        results = _batch_ids(_call(tokenizer, list(PROBE_TEXTS), name, where), name, where)
    else:
        results = [_call(tokenizer, text, name, where) for text in PROBE_TEXTS]
    digest = hashlib.sha256()
    for value in results:
        ids = _token_ids(value, name, where)  # validated: ints (a list, tuple or integer array)
        digest.update(np.asarray(ids, dtype=np.int64).reshape(-1).tobytes() + b"|")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class CensusOptions:
    """How every input of one census is read (its :meth:`key` decides whether a part is reusable).

    ``tokenizer`` is a built-in name (``bytes``, ``chars``, ``whitespace``) or a
    picklable callable (see :mod:`packing_theory.corpus.text`); ``per_line``
    applies to plain text, ``column`` to parquet and JSON Lines (its text
    field); shards ignore both and the tokenizer (their lengths are counted
    from the offsets). ``encoding``, ``errors`` and ``universal_newlines``
    apply to plain text (JSON Lines is UTF-8): a file that does not decode, or
    is binary, stops the census naming it (``errors="strict"``), is decoded with
    U+FFFD for bad bytes (``"replace"``; binary files are still skipped), or is
    skipped, listed and counted (``"skip"``). Text is read without newline
    translation unless ``universal_newlines``.
    """

    kind: InputKind
    tokenizer: Any = "bytes"
    per_line: bool = False
    column: str = "text"
    bos: bool = True
    batched: bool = False
    batch_size: int = 128
    hashes: bool = False
    encoding: str = "utf-8"
    errors: str = "strict"
    universal_newlines: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("text", "parquet", "shards", "jsonl", "hf"):
            raise InputError(f"kind must be text, parquet, shards, jsonl or hf, got {self.kind!r}")
        if self.errors not in ERRORS:
            raise InputError(f"errors must be one of {', '.join(ERRORS)}, got {self.errors!r}")
        if not isinstance(self.encoding, str) or not self.encoding:
            raise InputError(f"encoding must be a non-empty str, got {self.encoding!r}")
        check_bool("universal_newlines", self.universal_newlines)
        if isinstance(self.tokenizer, str):
            if self.tokenizer not in BUILTIN_TOKENIZERS:
                raise InputError(f"tokenizer must be a callable or one of {', '.join(BUILTIN_TOKENIZERS)}, "
                                 f"got {self.tokenizer!r}")
        elif not callable(self.tokenizer):
            raise InputTypeError("tokenizer must be a callable or a built-in name, got "
                                 f"{type(self.tokenizer).__name__}")
        for name in ("per_line", "bos", "batched", "hashes"):
            check_bool(name, getattr(self, name))
        check_int("batch_size", self.batch_size, 1)
        if not isinstance(self.column, str) or not self.column:
            raise InputError(f"column must be a non-empty str, got {self.column!r}")

    def tokenizer_identity(self) -> dict[str, str]:
        """``{"kind": "builtin"|"callable"|"none", "name": ...}`` (shards need no tokenizer)."""
        if self.kind == "shards":
            return {"kind": "none", "name": "shard offsets"}
        if isinstance(self.tokenizer, str):
            return {"kind": "builtin", "name": self.tokenizer}
        out = {"kind": "callable", "name": tokenizer_name(self.tokenizer),
               "probe_sha256": tokenizer_fingerprint(self.tokenizer, batched=self.batched)}
        state = tokenizer_state(self.tokenizer)
        if state is not None:
            out["state_sha256"] = state
        return out

    def key(self) -> dict[str, Any]:
        """Everything that determines a part's content, as JSON."""
        out: dict[str, Any] = {"kind": self.kind, "tokenizer": self.tokenizer_identity(),
                               "hashes": self.hashes, "part_version": _VERSION}
        if self.kind != "shards":
            out.update(bos=self.bos, batched=self.batched, batch_size=self.batch_size)
        if self.kind == "text":
            out.update(per_line=self.per_line, encoding=self.encoding, decode=self.decode_errors,
                       newlines="universal" if self.universal_newlines else "kept")
        if self.kind == "jsonl":
            out.update(decode=self.decode_errors)
        if self.kind in ("parquet", "jsonl", "hf"):
            out.update(column=self.column, names="own")  # parts before records kept their names: recomputed
        return out

    @property
    def decode_errors(self) -> str:
        """How bytes are decoded: ``"replace"``, else ``"strict"`` (a skipped file is not read further)."""
        return "replace" if self.errors == "replace" else "strict"


@dataclass(frozen=True, eq=False)
class ShardResult:
    """One input's census, as a task returns it (the worker's own counts and digests included).

    Attributes:
        lengths: BOS-inclusive lengths (``int64``).
        doc_bytes, doc_hashes: per-document byte lengths and hashes (``hashes=True``), else ``None``.
        n_docs, n_tokens: the worker's counts.
        input_sha256: SHA-256 of the input file's bytes, as the worker read it.
        lengths_sha256: SHA-256 of ``lengths`` in ``.npy`` form (the part file's digest).
        row_groups: documents per parquet row group (empty for other inputs).
        name_bytes, name_offsets: the records' own names (JSON Lines, parquet:
            :class:`~packing_theory.corpus.readers.names.RecordNames`), UTF-8 bytes and ``n_docs + 1``
            offsets; ``None`` when no record of the input names itself (named by place).
    """

    lengths: Int64Array
    doc_bytes: Int64Array | None
    doc_hashes: UInt64Array | None
    n_docs: int
    n_tokens: int
    input_sha256: str
    lengths_sha256: str
    row_groups: tuple[int, ...] = ()
    name_bytes: npt.NDArray[np.uint8] | None = None
    name_offsets: Int64Array | None = None


@dataclass(frozen=True)
class SkippedInput:
    """A census task's answer for an input that is not text (undecodable or binary): nothing counted.

    The driver stops on it (``errors="strict"``) or lists it in ``census.json``
    (``"skip"``, and binary files under ``"replace"``); a task never raises for
    it, so it is not retried.
    """

    path: str
    input_sha256: str
    reason: str


def npy_bytes(arr: npt.NDArray[Any]) -> bytes:
    """``arr`` as the bytes ``np.save`` writes (the form every part and digest uses)."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data``, hex."""
    return hashlib.sha256(data).hexdigest()


def _with_bos(counts: Iterable[int], bos: bool, where: str) -> Int64Array:
    arr = np.fromiter(counts, dtype=np.int64) + (1 if bos else 0)
    if arr.size and int(arr.min()) < 1:
        raise InputError(f"{where}: document {int(np.argmin(arr))} has 0 tokens (pass bos=True if the "
                         "tokenizer adds none)")
    return arr


def _text_lengths(texts: list[str], opts: CensusOptions, where: str) -> Int64Array:
    if not texts:
        return np.zeros(0, dtype=np.int64)
    if isinstance(opts.tokenizer, str):
        unit: BuiltinTokenizer = opts.tokenizer  # type: ignore[assignment]  # checked in __post_init__
        return _with_bos((count_text(t, unit) for t in texts), opts.bos, where)
    return lengths_from_texts(texts, opts.tokenizer, bos=opts.bos, batched=opts.batched,
                              batch_size=opts.batch_size)


def _hashes_of(texts: Iterable[bytes]) -> tuple[Int64Array, UInt64Array]:
    sizes: list[int] = []
    digests: list[int] = []
    for data in texts:
        sizes.append(len(data))
        digests.append(blake2b_64(data))
    return np.array(sizes, dtype=np.int64), np.array(digests, dtype=np.uint64)


def census_shard(path: str, options: CensusOptions) -> ShardResult | SkippedInput:
    """The census of one input file (a task: runs in a worker; pure function of the file's bytes).

    A text or JSON Lines file that is not text (see :class:`CensusOptions`)
    gives a :class:`SkippedInput` instead of raising. Complexity: O(file
    bytes) plus the tokenizer.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a corrupt shard, an unreadable parquet file or column,
            a tokenizer that raised (naming the input).
    """
    digest = file_sha256(path)
    try:
        return _census(path, options, digest)
    except NotText as exc:
        return SkippedInput(path, digest, exc.reason)


def _census(path: str, options: CensusOptions, digest: str) -> ShardResult:
    doc_bytes = doc_hashes = None
    groups: tuple[int, ...] = ()
    names = RecordNames([path])  # the records' own names, read in the same pass as their texts
    if options.kind == "shards":
        shard = read_shard(path)
        lengths = shard.lengths()
        if options.hashes:
            doc_bytes, doc_hashes = _hashes_of(d.tobytes() for d in shard.documents())
    elif options.kind == "text":
        decode = {"encoding": options.encoding, "errors": options.decode_errors,
                  "universal_newlines": options.universal_newlines}
        if isinstance(options.tokenizer, str) and not options.hashes:  # streamed, O(chunk) memory
            unit: BuiltinTokenizer = options.tokenizer  # type: ignore[assignment]  # checked in __post_init__
            counts = count_text_files([path], unit, per_line=options.per_line, **decode)  # type: ignore[arg-type]
            lengths = _with_bos(counts, options.bos, f"text file {path!r}")
        else:
            texts = list(iter_text_files(path, per_line=options.per_line, **decode))  # type: ignore[arg-type]
            lengths = _text_lengths(texts, options, f"text file {path!r}")
            if options.hashes:
                doc_bytes, doc_hashes = _hashes_of(t.encode("utf-8") for t in texts)
    elif options.kind == "jsonl":
        from ..corpus.readers.jsonl import iter_jsonl_records

        texts = []
        for text, _, name in iter_jsonl_records(path, options.column, errors=options.decode_errors):
            texts.append(text)
            names.add(name)
        lengths = _text_lengths(texts, options, f"JSON Lines file {path!r}")
        if options.hashes:
            doc_bytes, doc_hashes = _hashes_of(t.encode("utf-8") for t in texts)
    elif options.kind == "hf":  # one Arrow file of a saved dataset
        from .census_arrow import arrow_census

        lengths, doc_bytes, doc_hashes = arrow_census(
            path, options, names, lambda texts, where: _text_lengths(texts, options, where), _hashes_of)
    else:
        lengths, doc_bytes, doc_hashes, groups = _parquet_census(path, options, names)
    own: tuple[Any, Any] = (None, None)
    if names.named:
        names.end_file()
        buffer, offsets = names.arrays()
        own = (np.frombuffer(buffer, np.uint8).copy(), offsets)
    return ShardResult(lengths, doc_bytes, doc_hashes, int(lengths.size), int(lengths.sum(dtype=np.int64)),
                       digest, sha256_hex(npy_bytes(lengths)), groups, *own)


def _only(group: int) -> Callable[[int, int], tuple[int, ...]]:
    """A ``row_groups`` selector reading one row group of each file."""

    def select(file_index: int, n_groups: int) -> tuple[int, ...]:
        return (group,)

    return select


def _parquet_census(path: str, opts: CensusOptions, names: RecordNames
                    ) -> tuple[Int64Array, Int64Array | None, UInt64Array | None, tuple[int, ...]]:
    pq = import_optional("pyarrow.parquet", extra="parquet", purpose="reading parquet")
    iter_parquet_texts(path, opts.column)  # validates the file and the column before anything is read
    file = pq.ParquetFile(path)
    n_groups = int(file.num_row_groups)
    schema = list(file.schema_arrow.names)
    name_column = next((c for c in NAME_COLUMNS if c in schema), None)
    parts: list[Int64Array] = []
    sizes: list[Int64Array] = []
    digests: list[UInt64Array] = []
    groups: list[int] = []
    for g in range(n_groups):
        texts = list(iter_parquet_texts(path, opts.column, row_groups=_only(g)))
        groups.append(len(texts))
        if name_column is not None:
            values = file.read_row_group(g, columns=[name_column]).column(name_column).to_pylist()
            if len(values) != len(texts):
                raise InputError(f"parquet file {path!r} row group {g}: {len(values):,} names for "
                                 f"{len(texts):,} texts")
            for value in values:
                names.add(record_name(value))
        parts.append(_text_lengths(texts, opts, f"parquet file {path!r} row group {g}"))
        if opts.hashes:
            s, h = _hashes_of(t.encode("utf-8") for t in texts)
            sizes.append(s)
            digests.append(h)
    lengths = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if not opts.hashes:
        return lengths, None, None, tuple(groups)
    cat_sizes = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    cat_digests = np.concatenate(digests) if digests else np.zeros(0, np.uint64)
    return lengths, cat_sizes, cat_digests, tuple(groups)


# --------------------------------------------------------------------------- checks and parts


def check_shard_result(value: object, expected_input_sha256: str, options: CensusOptions) -> ShardResult:
    """Accept a task's result only if it is self-consistent and of the input the driver hashed.

    Raises:
        ValueError: wrong type or dtype, counts or digests that disagree, a changed input.
    """
    if isinstance(value, SkippedInput):
        if value.input_sha256 != expected_input_sha256:
            raise ResultRejected("the input changed while it was read")
        return value  # type: ignore[return-value]  # the driver handles a skipped input itself
    if not isinstance(value, ShardResult):
        raise ResultRejected(f"a census task returned {type(value).__name__}, not a ShardResult")
    arr = value.lengths
    if not isinstance(arr, np.ndarray) or arr.dtype != np.int64 or arr.ndim != 1:
        raise ResultRejected("census lengths must be a 1-D int64 array, "
                             f"got {getattr(arr, 'dtype', type(arr))}")
    if arr.size != value.n_docs or int(arr.sum(dtype=np.int64)) != value.n_tokens:
        raise ResultRejected(f"census lengths hold {arr.size} documents / {int(arr.sum())} tokens, "
                             f"the worker recorded {value.n_docs} / {value.n_tokens}")
    if arr.size and int(arr.min()) < 1:
        raise ResultRejected("census lengths hold a length < 1")
    if sha256_hex(npy_bytes(arr)) != value.lengths_sha256:
        raise ResultRejected("census lengths do not match the SHA-256 the worker recorded")
    if value.input_sha256 != expected_input_sha256:
        raise ResultRejected(f"the input changed while it was read (sha256 {value.input_sha256[:12]}..., "
                             f"expected {expected_input_sha256[:12]}...)")
    if options.hashes:
        for name, extra in (("doc_bytes", value.doc_bytes), ("doc_hashes", value.doc_hashes)):
            if not isinstance(extra, np.ndarray) or extra.shape != arr.shape:
                raise ResultRejected(f"census {name} must have one entry per document ({arr.size})")
    if value.row_groups and sum(value.row_groups) != arr.size:
        raise ResultRejected(f"row groups hold {sum(value.row_groups)} documents, lengths {arr.size}")
    if (value.name_bytes is None) != (value.name_offsets is None):
        raise ResultRejected("census names come with their offsets")
    if value.name_bytes is not None and value.name_offsets is not None:
        buf, offsets = value.name_bytes, value.name_offsets
        if (not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or buf.ndim != 1
                or not isinstance(offsets, np.ndarray) or offsets.dtype != np.int64
                or offsets.shape != (arr.size + 1,) or int(offsets[0]) != 0 or int(offsets[-1]) != buf.size
                or bool(np.any(np.diff(offsets) < 0))):
            raise ResultRejected(f"census names must be uint8 bytes with {arr.size + 1} increasing int64 "
                                 "offsets from 0 to their size")
    return value


def part_stem(input_sha256: str, options: CensusOptions) -> str:
    """The file stem of an input's part: its content digest and the options' digest."""
    opts = hashlib.sha256(json.dumps(options.key(), sort_keys=True).encode()).hexdigest()
    return f"{input_sha256[:20]}-{opts[:12]}"


_PARTIAL = re.compile(r".+\.tmp-[0-9]+\Z")
"""A part file being written (``NAME.tmp-<pid>``) by :func:`atomic_write`."""


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a ``NAME.tmp-<pid>`` file, synced, then renamed
    (an interrupted write leaves at most that file, which :func:`remove_partial_parts` removes)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk, an interrupt: leave no partial file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_partial_parts(parts: str) -> list[str]:
    """Remove the ``NAME.tmp-<pid>`` files an interrupted census left in ``parts``; return their names.

    Call it only while holding the report directory's lock (no other census
    writes there then, so every such file is a leftover). O(files in ``parts``).
    """
    removed = []
    for name in sorted(os.listdir(parts)):
        path = os.path.join(parts, name)
        if _PARTIAL.match(name) and os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
            removed.append(name)
    return removed


def part_arrays(result: ShardResult) -> dict[str, npt.NDArray[Any]]:
    """The arrays a part stores: ``lengths``, and ``doc_bytes`` / ``doc_hashes``, ``name_bytes`` /
    ``name_offsets`` when present."""
    out: dict[str, npt.NDArray[Any]] = {"lengths": result.lengths}
    if result.doc_bytes is not None and result.doc_hashes is not None:
        out.update(doc_bytes=result.doc_bytes, doc_hashes=result.doc_hashes)
    if result.name_bytes is not None and result.name_offsets is not None:
        out.update(name_bytes=result.name_bytes, name_offsets=result.name_offsets)
    return out


def write_part(parts: str, result: ShardResult, options: CensusOptions, source: str) -> dict[str, Any]:
    """Write one checked result to ``parts`` (arrays first, its JSON record last); return the record."""
    stem = part_stem(result.input_sha256, options)
    files = {}
    for name, arr in part_arrays(result).items():
        data = npy_bytes(arr)
        atomic_write(os.path.join(parts, f"{stem}.{name}.npy"), data)
        files[name] = {"file": f"{stem}.{name}.npy", "sha256": sha256_hex(data)}
    record = {"format": CENSUS_FORMAT + "/part", "version": _VERSION, "source": source,
              "input_sha256": result.input_sha256, "options": options.key(), "n_docs": result.n_docs,
              "n_tokens": result.n_tokens, "row_groups": list(result.row_groups), "files": files}
    atomic_write(os.path.join(parts, f"{stem}.json"), (json.dumps(record, indent=1) + "\n").encode())
    return record


def load_part(parts: str, input_sha256: str, options: CensusOptions) -> ShardResult | None:
    """The verified part of an input with this SHA-256 and these options, or ``None`` (then recompute)."""
    stem = part_stem(input_sha256, options)
    try:
        with open(os.path.join(parts, f"{stem}.json"), encoding="utf-8") as fh:
            record = json.load(fh)
        if (record.get("input_sha256") != input_sha256 or record.get("options") != options.key()
                or record.get("format") != CENSUS_FORMAT + "/part"):
            return None
        arrays = {}
        for name, entry in record["files"].items():
            with open(confined(parts, entry["file"], what="census part record file"), "rb") as fh:
                data = fh.read()
            if sha256_hex(data) != entry["sha256"]:
                return None
            arrays[name] = np.load(io.BytesIO(data), allow_pickle=False)
        lengths = arrays["lengths"]
        result = ShardResult(lengths, arrays.get("doc_bytes"), arrays.get("doc_hashes"),
                             int(record["n_docs"]), int(record["n_tokens"]), input_sha256,
                             record["files"]["lengths"]["sha256"],
                             tuple(int(g) for g in record["row_groups"]), arrays.get("name_bytes"),
                             arrays.get("name_offsets"))
        return check_shard_result(result, input_sha256, options)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, ResultRejected):
        return None  # an edited or damaged record: recomputed, never trusted and never fatal


