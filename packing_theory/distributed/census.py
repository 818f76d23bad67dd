"""A resumable, parallel census: document lengths (and byte lengths, text hashes) of many input shards.

One task per input file (a plain text file, a parquet file or a seed-002
token shard) runs :func:`census_shard` on any executor
(:func:`~packing_theory.distributed.executors.open_runner`). :func:`run_census`
writes, into one report directory (:class:`~packing_theory.audit.writer.ReportWriter`:
checked and locked first, files swapped in together):

``lengths.npy``
    BOS-inclusive lengths of every document, inputs in the order given;
``census.json``
    the manifest: per input its SHA-256, documents, tokens, parquet row-group
    sizes and the SHA-256 of its part; the tokenizer's identity; totals; and,
    under ``execution``, which executor and worker computed each part in how
    many attempts, and which parts were reused;
``doc_bytes.npy``, ``doc_hashes.npy`` (``hashes=True``)
    per-document UTF-8 byte length (2 bytes per id for shards) and a 64-bit
    BLAKE2b hash of the text (of the ids for shards), for duplicate exclusion.

**Resumable** (seed 002 §11: an interrupted build loses at most the shards in
flight; verify before accept). Each task's result is checked when it arrives
(``int64`` lengths whose count, sum and SHA-256 equal what the worker
recorded, the input's SHA-256 unchanged) and written at once to
``DIR/parts/`` (temporary file, then ``os.replace``; the part's JSON record
last). A rerun reuses a part only when its record names the same input
SHA-256 and census options and every part file still has its recorded
SHA-256; it recomputes the others. Parts are keyed by input content, so
reordering the inputs reuses them too. A changed tokenizer *name* is noticed;
a callable whose code changed under the same name is not.

Complexity: O(input bytes) to hash the inputs plus the tokenizer's cost, in
parallel over files; memory per task one file's documents (built-in tokenizers
without ``hashes``: O(1 MiB) plus 8 bytes per document), and in the driver
8 bytes per document (24 with ``hashes``).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_bool, check_int
from ..audit.writer import ReportWriter, verify_report
from ..corpus.manifest import file_sha256
from ..corpus.shards import read_shard
from ..corpus.text import iter_parquet_texts, iter_text_files, lengths_from_texts, tokenizer_name
from ..corpus.textcount import BUILTIN_TOKENIZERS, BuiltinTokenizer, count_text, count_text_files
from .executors import TaskRecord, open_runner

__all__ = [
    "CENSUS_FILES",
    "CENSUS_FORMAT",
    "CensusOptions",
    "CensusResult",
    "InputKind",
    "ShardResult",
    "census_row_groups",
    "census_shard",
    "check_shard_result",
    "load_part",
    "run_census",
    "text_hash",
    "verify_census",
    "write_part",
]

InputKind = Literal["text", "parquet", "shards"]
CENSUS_FORMAT = "packing-theory/census"
CENSUS_FILES: tuple[str, ...] = ("census.json", "lengths.npy", "doc_bytes.npy", "doc_hashes.npy")
"""The files of a census report directory (``parts/`` beside them holds the resumable parts)."""
PARTS = "parts"
_VERSION = 1

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


def text_hash(data: bytes) -> int:
    """The 64-bit BLAKE2b hash of ``data`` (little-endian), as the census records it.

    >>> text_hash(b"abc") == text_hash("abc".encode("utf-8"))
    True
    """
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


@dataclass(frozen=True, slots=True)
class CensusOptions:
    """How every input of one census is read (its :meth:`key` decides whether a part is reusable).

    ``tokenizer`` is a built-in name (``bytes``, ``chars``, ``whitespace``) or a
    picklable callable (see :mod:`packing_theory.corpus.text`); ``per_line``
    applies to plain text, ``column`` to parquet; shards ignore both and the
    tokenizer (their lengths are counted from the offsets).
    """

    kind: InputKind
    tokenizer: Any = "bytes"
    per_line: bool = False
    column: str = "text"
    bos: bool = True
    batched: bool = False
    batch_size: int = 128
    hashes: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("text", "parquet", "shards"):
            raise ValueError(f"kind must be text, parquet or shards, got {self.kind!r}")
        if isinstance(self.tokenizer, str):
            if self.tokenizer not in BUILTIN_TOKENIZERS:
                raise ValueError(f"tokenizer must be a callable or one of {', '.join(BUILTIN_TOKENIZERS)}, "
                                 f"got {self.tokenizer!r}")
        elif not callable(self.tokenizer):
            raise TypeError("tokenizer must be a callable or a built-in name, got "
                            f"{type(self.tokenizer).__name__}")
        for name in ("per_line", "bos", "batched", "hashes"):
            check_bool(name, getattr(self, name))
        check_int("batch_size", self.batch_size, 1)
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"column must be a non-empty str, got {self.column!r}")

    def tokenizer_identity(self) -> dict[str, str]:
        """``{"kind": "builtin"|"callable"|"none", "name": ...}`` (shards need no tokenizer)."""
        if self.kind == "shards":
            return {"kind": "none", "name": "shard offsets"}
        if isinstance(self.tokenizer, str):
            return {"kind": "builtin", "name": self.tokenizer}
        return {"kind": "callable", "name": tokenizer_name(self.tokenizer)}

    def key(self) -> dict[str, Any]:
        """Everything that determines a part's content, as JSON."""
        out: dict[str, Any] = {"kind": self.kind, "tokenizer": self.tokenizer_identity(),
                               "hashes": self.hashes}
        if self.kind != "shards":
            out.update(bos=self.bos, batched=self.batched, batch_size=self.batch_size)
        if self.kind == "text":
            out["per_line"] = self.per_line
        if self.kind == "parquet":
            out["column"] = self.column
        return out


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
    """

    lengths: Int64Array
    doc_bytes: Int64Array | None
    doc_hashes: UInt64Array | None
    n_docs: int
    n_tokens: int
    input_sha256: str
    lengths_sha256: str
    row_groups: tuple[int, ...] = ()


def _npy_bytes(arr: npt.NDArray[Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _with_bos(counts: Iterable[int], bos: bool, where: str) -> Int64Array:
    arr = np.fromiter(counts, dtype=np.int64) + (1 if bos else 0)
    if arr.size and int(arr.min()) < 1:
        raise ValueError(f"{where}: document {int(np.argmin(arr))} has 0 tokens (pass bos=True if the "
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
        digests.append(text_hash(data))
    return np.array(sizes, dtype=np.int64), np.array(digests, dtype=np.uint64)


def census_shard(path: str, options: CensusOptions) -> ShardResult:
    """The census of one input file (a task: runs in a worker; pure function of the file's bytes).

    Complexity: O(file bytes) plus the tokenizer.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a corrupt shard, an unreadable parquet file or column,
            invalid text, a tokenizer that raised (naming the input).
    """
    digest = file_sha256(path)
    doc_bytes = doc_hashes = None
    groups: tuple[int, ...] = ()
    if options.kind == "shards":
        shard = read_shard(path)
        lengths = shard.lengths()
        if options.hashes:
            doc_bytes, doc_hashes = _hashes_of(d.tobytes() for d in shard.documents())
    elif options.kind == "text":
        if isinstance(options.tokenizer, str) and not options.hashes:  # streamed, O(chunk) memory
            unit: BuiltinTokenizer = options.tokenizer  # type: ignore[assignment]  # checked in __post_init__
            counts = count_text_files([path], unit, per_line=options.per_line)
            lengths = _with_bos(counts, options.bos, f"text file {path!r}")
        else:
            texts = list(iter_text_files(path, per_line=options.per_line))
            lengths = _text_lengths(texts, options, f"text file {path!r}")
            if options.hashes:
                doc_bytes, doc_hashes = _hashes_of(t.encode("utf-8") for t in texts)
    else:
        lengths, doc_bytes, doc_hashes, groups = _parquet_census(path, options)
    return ShardResult(lengths, doc_bytes, doc_hashes, int(lengths.size), int(lengths.sum(dtype=np.int64)),
                       digest, _sha(_npy_bytes(lengths)), groups)


def _only(group: int) -> Callable[[int, int], tuple[int, ...]]:
    """A ``row_groups`` selector reading one row group of each file."""

    def select(file_index: int, n_groups: int) -> tuple[int, ...]:
        return (group,)

    return select


def _parquet_census(path: str, opts: CensusOptions
                    ) -> tuple[Int64Array, Int64Array | None, UInt64Array | None, tuple[int, ...]]:
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("reading parquet needs pyarrow: pip install pyarrow") from exc
    iter_parquet_texts(path, opts.column)  # validates the file and the column before anything is read
    n_groups = int(pq.ParquetFile(path).num_row_groups)
    parts: list[Int64Array] = []
    sizes: list[Int64Array] = []
    digests: list[UInt64Array] = []
    groups: list[int] = []
    for g in range(n_groups):
        texts = list(iter_parquet_texts(path, opts.column, row_groups=_only(g)))
        groups.append(len(texts))
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
    if not isinstance(value, ShardResult):
        raise ValueError(f"a census task returned {type(value).__name__}, not a ShardResult")
    arr = value.lengths
    if not isinstance(arr, np.ndarray) or arr.dtype != np.int64 or arr.ndim != 1:
        raise ValueError(f"census lengths must be a 1-D int64 array, got {getattr(arr, 'dtype', type(arr))}")
    if arr.size != value.n_docs or int(arr.sum(dtype=np.int64)) != value.n_tokens:
        raise ValueError(f"census lengths hold {arr.size} documents / {int(arr.sum())} tokens, the worker "
                         f"recorded {value.n_docs} / {value.n_tokens}")
    if arr.size and int(arr.min()) < 1:
        raise ValueError("census lengths hold a length < 1")
    if _sha(_npy_bytes(arr)) != value.lengths_sha256:
        raise ValueError("census lengths do not match the SHA-256 the worker recorded")
    if value.input_sha256 != expected_input_sha256:
        raise ValueError(f"the input changed while it was read (sha256 {value.input_sha256[:12]}..., "
                         f"expected {expected_input_sha256[:12]}...)")
    if options.hashes:
        for name, extra in (("doc_bytes", value.doc_bytes), ("doc_hashes", value.doc_hashes)):
            if not isinstance(extra, np.ndarray) or extra.shape != arr.shape:
                raise ValueError(f"census {name} must have one entry per document ({arr.size})")
    if value.row_groups and sum(value.row_groups) != arr.size:
        raise ValueError(f"row groups hold {sum(value.row_groups)} documents, lengths {arr.size}")
    return value


def _part_stem(input_sha256: str, options: CensusOptions) -> str:
    opts = hashlib.sha256(json.dumps(options.key(), sort_keys=True).encode()).hexdigest()
    return f"{input_sha256[:20]}-{opts[:12]}"


def _atomic_write(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _part_arrays(result: ShardResult) -> dict[str, npt.NDArray[Any]]:
    out: dict[str, npt.NDArray[Any]] = {"lengths": result.lengths}
    if result.doc_bytes is not None and result.doc_hashes is not None:
        out.update(doc_bytes=result.doc_bytes, doc_hashes=result.doc_hashes)
    return out


def write_part(parts: str, result: ShardResult, options: CensusOptions, source: str) -> dict[str, Any]:
    """Write one checked result to ``parts`` (arrays first, its JSON record last); return the record."""
    stem = _part_stem(result.input_sha256, options)
    files = {}
    for name, arr in _part_arrays(result).items():
        data = _npy_bytes(arr)
        _atomic_write(os.path.join(parts, f"{stem}.{name}.npy"), data)
        files[name] = {"file": f"{stem}.{name}.npy", "sha256": _sha(data)}
    record = {"format": CENSUS_FORMAT + "/part", "version": _VERSION, "source": source,
              "input_sha256": result.input_sha256, "options": options.key(), "n_docs": result.n_docs,
              "n_tokens": result.n_tokens, "row_groups": list(result.row_groups), "files": files}
    _atomic_write(os.path.join(parts, f"{stem}.json"), (json.dumps(record, indent=1) + "\n").encode())
    return record


def load_part(parts: str, input_sha256: str, options: CensusOptions) -> ShardResult | None:
    """The verified part of an input with this SHA-256 and these options, or ``None`` (then recompute)."""
    stem = _part_stem(input_sha256, options)
    try:
        with open(os.path.join(parts, f"{stem}.json"), encoding="utf-8") as fh:
            record = json.load(fh)
        if (record.get("input_sha256") != input_sha256 or record.get("options") != options.key()
                or record.get("format") != CENSUS_FORMAT + "/part"):
            return None
        arrays = {}
        for name, entry in record["files"].items():
            with open(os.path.join(parts, entry["file"]), "rb") as fh:
                data = fh.read()
            if _sha(data) != entry["sha256"]:
                return None
            arrays[name] = np.load(io.BytesIO(data), allow_pickle=False)
        lengths = arrays["lengths"]
        result = ShardResult(lengths, arrays.get("doc_bytes"), arrays.get("doc_hashes"),
                             int(record["n_docs"]), int(record["n_tokens"]), input_sha256,
                             record["files"]["lengths"]["sha256"],
                             tuple(int(g) for g in record["row_groups"]))
        return check_shard_result(result, input_sha256, options)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


# --------------------------------------------------------------------------- the whole census


@dataclass(frozen=True, eq=False)
class CensusResult:
    """What :func:`run_census` wrote: the lengths, the manifest document, and how much was reused."""

    lengths: Int64Array
    manifest: dict[str, Any]
    reused: int
    computed: int
    records: tuple[TaskRecord, ...] = field(default=())

    @property
    def summary_line(self) -> str:
        """``"reused k, computed m"``."""
        return f"reused {self.reused}, computed {self.computed}"


def _as_inputs(inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[str]:
    paths = [os.fspath(inputs)] if isinstance(inputs, (str, os.PathLike)) else [os.fspath(p) for p in inputs]
    if not paths:
        raise ValueError("inputs is empty: give at least one file")
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"census input {p!r} does not exist or is not a file")
    return paths


def run_census(
    inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    options: CensusOptions,
    out: str | os.PathLike[str],
    *,
    executor: object = "local",
    workers: int = 1,
    retries: int = 1,
    force: bool = False,
    tool: str = "packing_theory.distributed.run_census",
    progress: Callable[[int, int], None] | None = None,
) -> CensusResult:
    """Census ``inputs`` (one task per file) into the report directory ``out``; resume from ``out/parts``.

    ``executor`` is anything :func:`~packing_theory.distributed.executors.open_runner`
    accepts (``"local"``, ``"dask://HOST:PORT"``, a ``dask.distributed.Client``,
    a :class:`concurrent.futures.Executor`); the files written are the same
    whatever runs the tasks (only ``execution`` and ``seconds`` differ).
    ``progress(done, total)`` is called as parts complete.

    Raises:
        FileNotFoundError: a missing input.
        ValueError: no inputs, bad options, an unusable ``out``, or inputs with no document at all.
        TaskFailed: a task failed on every attempt (the parts of the others are kept for a rerun).
    """
    paths = _as_inputs(inputs)
    t0 = time.perf_counter()
    config = {"command": "census", "inputs": paths, "options": options.key()}
    with ReportWriter(out, names=CENSUS_FILES, config=config, tool=tool, force=force) as writer:
        parts = os.path.join(os.fspath(out), PARTS)
        os.makedirs(parts, exist_ok=True)
        with open_runner(executor, workers=workers, retries=retries) as runner:
            spec = runner.spec
            hashed: dict[int, str] = {}  # the inputs are hashed in parallel too (1 GB/s per core)
            runner.run(file_sha256, [(p,) for p in paths], on_result=hashed.__setitem__, label="hash")
            digests = [hashed[i] for i in range(len(paths))]
            results: dict[int, ShardResult] = {}
            for i, digest in enumerate(digests):
                found = load_part(parts, digest, options)
                if found is not None:
                    results[i] = found
            reused = sorted(results)
            todo = [i for i in range(len(paths)) if i not in results]
            t_tasks = time.perf_counter()

            def accept(j: int, value: Any) -> None:
                check_shard_result(value, digests[todo[j]], options)

            def on_result(j: int, value: Any) -> None:
                write_part(parts, value, options, paths[todo[j]])
                results[todo[j]] = value
                if progress is not None:
                    progress(len(results), len(paths))

            records = runner.run(census_shard, [(paths[i], options) for i in todo], on_result=on_result,
                                 accept=accept, label="census")
        seconds = {"hash_inputs": t_tasks - t0, "tasks": time.perf_counter() - t_tasks}
        ordered = [results[i] for i in range(len(paths))]
        lengths = np.concatenate([r.lengths for r in ordered]).astype(np.int64, copy=False)
        if lengths.size == 0:
            raise ValueError(f"census inputs {paths!r} hold no documents")
        execution = _execution(spec, paths, reused, todo, records)
        manifest = _manifest(writer, paths, digests, ordered, options, lengths, execution)
        _write_outputs(writer, ordered, options, lengths, manifest)
        seconds["total"] = time.perf_counter() - t0
        manifest["seconds"] = seconds
        writer.write_json("census.json", manifest)
        writer.commit()
    return CensusResult(lengths, manifest, len(reused), len(todo), tuple(records))


def _execution(spec: str, paths: list[str], reused: list[int], todo: list[int],
               records: list[TaskRecord]) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = [{"input": i, "status": "reused"} for i in reused]
    for rec in records:
        tasks.append({"input": todo[rec.index], "status": "computed", **rec.to_dict()})
    tasks.sort(key=lambda t: t["input"])
    return {"executor": spec, "reused": len(reused), "computed": len(todo), "tasks": tasks}


def _manifest(writer: ReportWriter, paths: list[str], digests: list[str], ordered: list[ShardResult],
              options: CensusOptions, lengths: Int64Array, execution: dict[str, Any]) -> dict[str, Any]:
    shards = []
    for path, digest, r in zip(paths, digests, ordered, strict=True):
        entry: dict[str, Any] = {"path": path, "sha256": digest, "n_docs": r.n_docs, "n_tokens": r.n_tokens,
                                 "part": _part_stem(digest, options), "part_sha256": r.lengths_sha256}
        if r.row_groups:
            entry["row_groups"] = list(r.row_groups)
        shards.append(entry)
    doc: dict[str, Any] = {
        "format": CENSUS_FORMAT, "version": _VERSION, "kind": options.kind,
        "ordering": "input order: the documents of inputs[0], then inputs[1], ...",
        "tokenizer": options.tokenizer_identity(), "options": options.key(),
        "n_inputs": len(paths), "n_docs": int(lengths.size), "n_tokens": int(lengths.sum(dtype=np.int64)),
        "lengths_sha256": _sha(_npy_bytes(lengths)), "shards": shards, "execution": execution,
        "run": {"id": writer.run_id, "config_hash": writer.config_hash},
    }
    if options.hashes:
        hashes = np.concatenate([r.doc_hashes for r in ordered if r.doc_hashes is not None])
        doc["duplicate_documents"] = int(hashes.size - np.unique(hashes).size)
    return doc


def _write_outputs(writer: ReportWriter, ordered: list[ShardResult], options: CensusOptions,
                   lengths: Int64Array, manifest: dict[str, Any]) -> None:
    writer.write_bytes("lengths.npy", _npy_bytes(lengths))
    if options.hashes:
        for name in ("doc_bytes", "doc_hashes"):
            arr = np.concatenate([getattr(r, name) for r in ordered])
            writer.write_bytes(f"{name}.npy", _npy_bytes(arr))


def census_row_groups(out: str | os.PathLike[str], row_group_size: int = 1024) -> list[list[Int64Array]]:
    """The lengths of a census directory cut into row groups, per input: ``groups[f][g]``.

    Parquet inputs get their recorded row groups; text and shard inputs blocks of
    ``row_group_size`` documents. Pass the result to
    :func:`~packing_theory.distributed.ranks.audit_ranks` (or
    :func:`~packing_theory.corpus.rank_stream`): tokenize once with the
    census, replay the ranks from lengths. O(documents); memory the lengths.

    Raises:
        ValueError: a directory that is not one complete census (see :func:`verify_census`).
    """
    size = check_int("row_group_size", row_group_size, 1)
    problems = verify_census(out)
    if problems:
        raise ValueError(f"census directory {os.fspath(out)!r} is not complete: {problems[0]}")
    with open(os.path.join(os.fspath(out), "census.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    lengths = np.load(os.path.join(os.fspath(out), "lengths.npy"), allow_pickle=False)
    groups: list[list[Int64Array]] = []
    at = 0
    for shard in manifest["shards"]:
        n = int(shard["n_docs"])
        sizes = shard.get("row_groups") or [min(size, n - i) for i in range(0, n, size)]
        file_groups = []
        for g in sizes:
            file_groups.append(lengths[at : at + g])
            at += g
        groups.append(file_groups)
    return groups


def verify_census(out: str | os.PathLike[str]) -> list[str]:
    """Problems with a census directory (empty when it is one complete, consistent run)."""
    check = verify_report(out, names=CENSUS_FILES)
    problems = list(check.problems)
    if check.ok:
        with open(os.path.join(os.fspath(out), "census.json"), encoding="utf-8") as fh:
            manifest = json.load(fh)
        lengths = np.load(os.path.join(os.fspath(out), "lengths.npy"), allow_pickle=False)
        if int(lengths.size) != manifest["n_docs"] or _sha(_npy_bytes(lengths)) != manifest["lengths_sha256"]:
            problems.append("lengths.npy disagrees with census.json")
    return problems
