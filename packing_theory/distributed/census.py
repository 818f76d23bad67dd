"""A resumable, parallel census: document lengths (and byte lengths, text hashes) of many input shards.

One task per input file (a plain text file, a JSON Lines file, a parquet file,
an Arrow file of a saved Hugging Face dataset or a seed-002 token shard; inputs
of several kinds take one :class:`CensusOptions` each) runs :func:`census_shard` on any executor
(:func:`~packing_theory.distributed.executors.open_runner`). :func:`run_census`
writes, into one report directory (:class:`~packing_theory.reporting.ReportWriter`:
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
    BLAKE2b hash of the text (of the ids for shards), for duplicate exclusion;
``doc_names.bin``, ``doc_name_offsets.npy`` (when a record names itself)
    the records' own names (JSON Lines and parquet ``id`` / ``name``: the rule of
    :mod:`packing_theory.corpus.readers.names`), their UTF-8 bytes in one file and
    ``n_docs + 1`` ``int64`` offsets; an empty span is a document named by place
    (``FILE#k``). ``census.json``'s ``names`` entry names the two files;
    :func:`~packing_theory.audit.documents.census_names` reads them lazily.

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
without ``hashes``: O(1 MiB) plus 8 bytes per document). The driver keeps only
counts and digests per part and concatenates the parts from disk one at a
time (memory: the largest part; with ``hashes``, 8 bytes per document more
for the duplicate count).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int, distinct_files
from .._unique import distinct
from ..corpus.manifest import file_sha256
from ..errors import InputError
from ..reporting import ReportWriter, verify_report
from ..reporting.publish import stage_report
from .census_report import CensusReport, census_headline
from .executors import TaskRecord, open_runner
from .parts import (
    CENSUS_FORMAT,
    CensusOptions,
    ShardResult,
    SkippedInput,
    blake2b_64,
    census_shard,
    check_shard_result,
    load_part,
    npy_bytes,
    part_arrays,
    part_stem,
    remove_partial_parts,
    sha256_hex,
    write_part,
)

__all__ = [
    "CENSUS_FILES",
    "CENSUS_FORMAT",
    "CensusOptions",
    "CensusResult",
    "ShardResult",
    "blake2b_64",
    "census_headline",
    "census_row_groups",
    "census_shard",
    "check_shard_result",
    "load_part",
    "run_census",
    "verify_census",
    "write_part",
]

CENSUS_FILES: tuple[str, ...] = ("census.html", "census.json", "census.md", "lengths.npy", "doc_bytes.npy",
                                 "doc_hashes.npy", "doc_names.bin", "doc_name_offsets.npy")
"""The files of a census report directory (``parts/`` beside them holds the resumable parts)."""
PARTS = "parts"
_VERSION = 1

Int64Array = npt.NDArray[np.int64]

# --------------------------------------------------------------------------- the whole census


@dataclass(frozen=True, eq=False)
class CensusResult:
    """What :func:`run_census` wrote: the lengths (``lengths.npy``, memory-mapped read-only), the
    manifest document, and how much was reused."""

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
        raise InputError("inputs is empty: give at least one file")
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"census input {p!r} does not exist or is not a file")
    return distinct_files("census input", paths)  # counted twice, and tokenized twice, by mistake


def run_census(
    inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    options: CensusOptions | Sequence[CensusOptions],
    out: str | os.PathLike[str],
    *,
    executor: object = "local",
    workers: int = 1,
    retries: int = 1,
    force: bool = False,
    tool: str = "packing_theory.distributed.run_census",
    progress: Callable[[int, int], None] | None = None,
    named: Sequence[str | os.PathLike[str]] = (),
) -> CensusResult:
    """Census ``inputs`` (one task per file) into the report directory ``out``; resume from ``out/parts``.

    ``options``: one :class:`~packing_theory.distributed.parts.CensusOptions` for every input, or one
    per input (inputs of several kinds; they share ``hashes``, ``errors`` and the
    tokenizer); ``census.json``'s ``kind`` is then ``"mixed"`` and each input's
    entry names its own.

    ``executor`` is anything :func:`~packing_theory.distributed.executors.open_runner`
    accepts (``"local"``, ``"dask://HOST:PORT"``, a ``dask.distributed.Client``,
    a :class:`concurrent.futures.Executor`); the files written are the same
    whatever runs the tasks (only ``execution`` and ``seconds`` differ).
    ``progress(done, total)`` is called as parts complete. ``named`` are the
    paths as the user named them (directories included); with the inputs, they
    must stay apart from ``out`` (:func:`~packing_theory.reporting.writer.inputs_problem`:
    the report never inside an input directory, no input one of its files or
    parts), ``force`` or not.

    Raises:
        FileNotFoundError: a missing input.
        ValueError: no inputs, bad options, an unusable ``out``, or inputs with no document at all.
        TaskFailed: a task failed on every attempt (the parts of the others are kept for a rerun).
    """
    paths = _as_inputs(inputs)
    each = _per_input(options, len(paths))
    options = each[0]  # what every input shares: hashes, errors, the tokenizer
    t0 = time.perf_counter()
    config = {"command": "census", "inputs": paths, "options": _options_key(each)}
    with ReportWriter(out, names=CENSUS_FILES, config=config, tool=tool, force=force,
                      inputs=[*paths, *named], owned=(PARTS,)) as writer:
        parts = os.path.join(os.fspath(out), PARTS)
        os.makedirs(parts, exist_ok=True)
        remove_partial_parts(parts)  # an interrupted run's half-written parts (the lock is ours)
        with open_runner(executor, workers=workers, retries=retries) as runner:
            spec = runner.spec
            hashed: dict[int, str] = {}  # the inputs are hashed in parallel too (1 GB/s per core)
            where = [os.path.abspath(p) for p in paths]  # what a task reads: a worker's cwd is its own
            runner.run(file_sha256, [(p,) for p in where], on_result=hashed.__setitem__, label="hash",
                       names=lambda i: f"hashing {paths[i]!r}")
            digests = [hashed[i] for i in range(len(paths))]
            infos: dict[int, _Part] = {}  # what the driver keeps of each part: counts and digests
            for i, digest in enumerate(digests):
                found = load_part(parts, digest, each[i])
                if found is not None:
                    infos[i] = _Part.of(found, digest, each[i])
            reused = sorted(infos)
            todo = [i for i in range(len(paths)) if i not in infos]
            t_tasks = time.perf_counter()

            def accept(j: int, value: Any) -> None:
                check_shard_result(value, digests[todo[j]], each[todo[j]])

            skipped: dict[int, SkippedInput] = {}

            def on_result(j: int, value: Any) -> None:
                if isinstance(value, SkippedInput):
                    value = dataclasses.replace(value, path=paths[todo[j]])  # named as the user named it
                    _not_text(value, options)  # raises under errors="strict": no further file is started
                    skipped[todo[j]] = value
                    return
                write_part(parts, value, each[todo[j]], paths[todo[j]])
                infos[todo[j]] = _Part.of(value, digests[todo[j]], each[todo[j]])  # arrays on disk now
                if progress is not None:
                    progress(len(infos), len(paths))

            tasks = [(where[i], each[i]) for i in todo]
            records = runner.run(census_shard, tasks, on_result=on_result,
                                 accept=accept, label="census",
                                 names=lambda j: f"census of {paths[todo[j]]!r}")
        seconds = {"hash_inputs": t_tasks - t0, "tasks": time.perf_counter() - t_tasks}
        kept = [i for i in range(len(paths)) if i not in skipped]
        ordered = [infos[i] for i in kept]
        total = sum(p.n_docs for p in ordered)
        if total == 0:
            more = f" ({len(skipped)} skipped as not text)" if skipped else ""
            raise InputError(f"census inputs {paths[:5]!r} hold no documents{more}")
        summary = _assemble(writer, parts, ordered, options, total)
        execution = _execution(spec, paths, reused, todo, records)
        manifest = _manifest(writer, [paths[i] for i in kept], [digests[i] for i in kept], ordered,
                             [each[i] for i in kept], summary, execution)
        manifest["errors"] = options.errors
        manifest["n_skipped"] = len(skipped)
        manifest["skipped"] = [{"path": s.path, "sha256": s.input_sha256, "reason": s.reason}
                               for _, s in sorted(skipped.items())]
        seconds["total"] = time.perf_counter() - t0
        manifest["seconds"] = seconds
        manifest["headline"] = census_headline(manifest)
        lengths = np.load(writer.path("lengths.npy"), mmap_mode="r", allow_pickle=False)
        stage_report(writer, CensusReport(manifest, lengths), plots=False, config=writer.config)
        del lengths
        writer.commit()
    lengths = np.load(os.path.join(os.fspath(out), "lengths.npy"), mmap_mode="r", allow_pickle=False)
    return CensusResult(lengths, manifest, len(reused), len(todo), tuple(records))


def _per_input(options: CensusOptions | Sequence[CensusOptions], n: int) -> list[CensusOptions]:
    """One :class:`CensusOptions` per input (inputs of several kinds: one each, sharing ``hashes``,
    ``errors`` and the tokenizer)."""
    if isinstance(options, CensusOptions):
        return [options] * n
    each = list(options)
    if len(each) != n or not all(isinstance(o, CensusOptions) for o in each):
        raise InputError(f"options must be one CensusOptions or one per input ({n}), got {len(each)}")
    shared = {(o.errors, o.tokenizer if isinstance(o.tokenizer, str) else id(o.tokenizer))
              for o in each if o.kind != "shards"}
    if len({o.hashes for o in each}) != 1 or len(shared) > 1:
        raise InputError("the inputs' CensusOptions must share hashes, errors and the tokenizer")
    return each


def _options_key(each: list[CensusOptions]) -> dict[str, Any]:
    """The census's options: the one kind's :meth:`~CensusOptions.key`, or one per kind (in order)."""
    keys = {o.kind: o.key() for o in each}
    return next(iter(keys.values())) if len(keys) == 1 else {"kinds": keys}


def _not_text(value: SkippedInput, options: CensusOptions) -> None:
    """Under ``errors="strict"``, stop the census on an input that is not text, naming it."""
    if options.errors != "strict":
        return
    raise InputError(f"census input {value.path!r} {value.reason}; stopped at the first such file (no "
                     "further file is started). --errors skip leaves such files out and lists them in "
                     "census.json, --errors replace decodes bad bytes as U+FFFD, --encoding names another "
                     "encoding")


def _execution(spec: str, paths: list[str], reused: list[int], todo: list[int],
               records: list[TaskRecord]) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = [{"input": i, "status": "reused"} for i in reused]
    for rec in records:
        tasks.append({"input": todo[rec.index], "status": "computed", **rec.to_dict()})
    tasks.sort(key=lambda t: t["input"])
    return {"executor": spec, "reused": len(reused), "computed": len(todo), "tasks": tasks}


@dataclass(frozen=True)
class _Part:
    """A verified part as the driver keeps it: counts and digests, the arrays left on disk."""

    stem: str
    n_docs: int
    n_tokens: int
    lengths_sha256: str
    row_groups: tuple[int, ...]
    files: dict[str, str]  # array name -> SHA-256 of its .npy file in parts/
    named: int = 0  # documents with their own name (their names are in the part's names arrays)

    @classmethod
    def of(cls, result: ShardResult, digest: str, options: CensusOptions) -> _Part:
        files = {name: sha256_hex(npy_bytes(arr)) for name, arr in part_arrays(result).items()}
        named = 0 if result.name_offsets is None else int(np.count_nonzero(np.diff(result.name_offsets)))
        return cls(part_stem(digest, options), result.n_docs, result.n_tokens, result.lengths_sha256,
                   result.row_groups, files, named)


def _assemble(writer: ReportWriter, parts: str, ordered: list[_Part], options: CensusOptions,
              total: int) -> dict[str, Any]:
    """Concatenate the parts into the staged ``.npy`` files, one part in memory at a time.

    Each part file is checked against its SHA-256 again as it is read (verify before accept).
    Memory: the largest part, plus, with hashes, 8 bytes per document for the duplicate count.
    """
    names = ["lengths", *(["doc_bytes", "doc_hashes"] if options.hashes else [])]
    dtypes = {"lengths": np.int64, "doc_bytes": np.int64, "doc_hashes": np.uint64}
    for name in names:
        out = np.lib.format.open_memmap(writer.path(f"{name}.npy"), mode="w+", dtype=dtypes[name],
                                        shape=(total,))
        at = 0
        for part in ordered:
            arr = _part_array(parts, part, name)
            out[at : at + arr.size] = arr
            at += arr.size
        out.flush()
        del out
    summary: dict[str, Any] = {"n_docs": total, "n_tokens": sum(p.n_tokens for p in ordered),
                               "lengths_sha256": file_sha256(writer.path("lengths.npy")),
                               "names": _assemble_names(writer, parts, ordered, total)}
    if options.hashes:
        hashes = np.load(writer.path("doc_hashes.npy"), mmap_mode="r")
        summary["duplicate_documents"] = int(total - distinct(hashes).size)
    return summary


def _part_array(parts: str, part: _Part, name: str) -> npt.NDArray[Any]:
    """One array of a verified part, checked against its SHA-256 again as it is read."""
    path = os.path.join(parts, f"{part.stem}.{name}.npy")
    with open(path, "rb") as fh:
        data = fh.read()
    if sha256_hex(data) != part.files[name]:
        raise InputError(f"census part {path!r} changed since it was verified; rerun the census")
    arr: npt.NDArray[Any] = np.load(io.BytesIO(data), allow_pickle=False)
    return arr


def _assemble_names(writer: ReportWriter, parts: str, ordered: list[_Part], total: int) -> dict[str, Any]:
    """The parts' own names, in input order, into ``doc_names.bin`` (their UTF-8 bytes) and
    ``doc_name_offsets.npy`` (``total + 1`` offsets; a part without names gives empty spans: named by
    place); the manifest's ``names`` entry. Nothing is written when no record names itself. Memory: one
    part's names."""
    named = sum(p.named for p in ordered)
    if not named:
        return {"named": 0}
    offsets = np.lib.format.open_memmap(writer.path("doc_name_offsets.npy"), mode="w+", dtype=np.int64,
                                        shape=(total + 1,))
    offsets[0] = 0
    at = size = 0
    with open(writer.path("doc_names.bin"), "wb") as fh:
        for part in ordered:
            if part.named:
                own = _part_array(parts, part, "name_offsets")
                offsets[at : at + part.n_docs + 1] = own + size
                data = _part_array(parts, part, "name_bytes").tobytes()
                fh.write(data)
                size += len(data)
            else:
                offsets[at + 1 : at + part.n_docs + 1] = size
            at += part.n_docs
    if int(offsets[-1]) != size:
        raise InputError("census part names do not add up to the names written; rerun the census")
    offsets.flush()
    del offsets
    return {"named": named, "bytes": "doc_names.bin", "offsets": "doc_name_offsets.npy", "size": size,
            "rule": "a record's own id / name; an empty span: FILE#k (FILE for a file's only document)"}


def _manifest(writer: ReportWriter, paths: list[str], digests: list[str], ordered: list[_Part],
              each: list[CensusOptions], summary: dict[str, Any], execution: dict[str, Any]
              ) -> dict[str, Any]:
    kinds = list(dict.fromkeys(o.kind for o in each))
    options = next((o for o in each if o.kind != "shards"), each[0])  # whose tokenizer is named
    shards = []
    for path, digest, r, opts in zip(paths, digests, ordered, each, strict=True):
        entry: dict[str, Any] = {"path": path, "sha256": digest, "n_docs": r.n_docs, "n_tokens": r.n_tokens,
                                 "part": r.stem, "part_sha256": r.lengths_sha256}
        if len(kinds) > 1:
            entry["kind"] = opts.kind
        if r.row_groups:
            entry["row_groups"] = list(r.row_groups)
        shards.append(entry)
    doc: dict[str, Any] = {
        "format": CENSUS_FORMAT, "version": _VERSION, "kind": kinds[0] if len(kinds) == 1 else "mixed",
        "ordering": "input order: the documents of inputs[0], then inputs[1], ...",
        "tokenizer": options.tokenizer_identity(), "options": _options_key(each),
        "n_inputs": len(paths), "n_docs": summary["n_docs"], "n_tokens": summary["n_tokens"],
        "lengths_sha256": summary["lengths_sha256"], "names": summary["names"], "shards": shards,
        "execution": execution,
        "run": {"id": writer.run_id, "config_hash": writer.config_hash},
    }
    if "duplicate_documents" in summary:
        doc["duplicate_documents"] = summary["duplicate_documents"]
    return doc


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
        raise InputError(f"census directory {os.fspath(out)!r} is not complete: {problems[0]}")
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
        path = os.path.join(os.fspath(out), "lengths.npy")
        lengths = np.load(path, mmap_mode="r", allow_pickle=False)
        if int(lengths.size) != manifest["n_docs"] or file_sha256(path) != manifest["lengths_sha256"]:
            problems.append("lengths.npy disagrees with census.json")
    return problems
