"""The corpus a measurement reads: lengths, every document's name and source, the funnel and the mixture.

:func:`open_corpus` reads data where users keep it (the readers of
:mod:`packing_theory.corpus.readers`: a ``.npy`` of lengths, seed-002 token
shards, text, JSON Lines, parquet, a saved Hugging Face dataset, a Megatron
indexed dataset, OLMo-core arrays, MDS), names every document (its file,
``file#k`` for the k-th of several, or a dataset's name column), labels its
data source, applies a declared cleaning funnel and reads a declared mixture.
The result, a :class:`Corpus`, keeps both numberings: ``raw_lengths`` is the
corpus as read (the *raw index* every per-document answer uses) and
``lengths`` what the packers replay (the documents the funnel kept, in
order; ``raw_index`` maps one to the other). Every command of the command
line opens its input through this function.

>>> c = Corpus.from_lengths([5, 300, 7], label="three", names=["a", "b", "c"])
>>> c.lengths.tolist(), c.raw_index.tolist(), c.name(1)
([5, 300, 7], [0, 1, 2], 'b')
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..audit.strata import STRATA_BOUNDARIES, check_boundaries, stratum_index
from ..corpus.readers import open_inputs, plan_inputs
from ..errors import InputError, InputTypeError
from ..lengths import exact_sum, load_lengths, release_pages, validate_lengths

if TYPE_CHECKING:  # imported where used: a corpus of plain lengths needs none of them
    from ..audit.declared import DeclaredMixture
    from ..audit.identity import DocumentIdentity, NameSource
    from ..corpus.funnel import Funnel, FunnelResult
    from ..corpus.labels import SourceLabels

__all__ = ["TOKEN_FORMATS", "Corpus", "CorpusSummary", "census_of", "corpus_summary", "open_corpus"]

Int64Array = npt.NDArray[np.int64]

_SUMMARY_CHUNK = 1 << 16

TOKEN_FORMATS: tuple[str, ...] = ("megatron", "olmo")
"""Formats that store nothing but token ids: how BOS is counted must be said (``bos="included"`` or
``"add"``) before they are read. A saved Hugging Face dataset or an MDS dataset holds token ids or text
by column: its reader asks for ``bos`` when the column holds token ids, and takes ``"auto"`` for text."""


@dataclass(frozen=True, eq=False)
class Corpus:
    """A corpus to measure (see the module doc): :func:`open_corpus` or :meth:`from_lengths` builds one."""

    raw_lengths: Int64Array
    """Every document as read, BOS-inclusive, in the raw order (its position is its raw index)."""
    label: str = ""
    names: NameSource | Sequence[str] | None = None
    """One name per raw document, read lazily (a :class:`~packing_theory.audit.identity.NameSource`:
    a file's path, a dataset's name column), or a sequence; ``None``: documents are named by their raw
    index."""
    sources: SourceLabels | None = None
    """The data source of every raw document, or ``None``."""
    funnel: FunnelResult | None = None
    """The cleaning funnel applied to the raw corpus, or ``None``."""
    mixture: DeclaredMixture | None = None
    """The declared mixture (α, or token targets), or ``None``."""
    inputs: tuple[str, ...] = ()
    """The files read (a report never writes over them)."""
    described: str = ""
    """What the reader read, in one line (the format and how BOS was counted)."""
    options: dict[str, Any] = field(default_factory=dict)
    """How the corpus was opened (the report's configuration)."""

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "raw_lengths",
            validate_lengths(
                self.raw_lengths if isinstance(self.raw_lengths, np.ndarray) else np.asarray(self.raw_lengths)
            ),
        )
        n = int(self.raw_lengths.size)
        if self.names is not None and len(self.names) != n:
            raise InputError(f"names has {len(self.names):,} entries for {n:,} documents")
        if self.sources is not None:
            self.sources.check_documents(n)
        if self.funnel is not None and self.funnel.raw_documents != n:
            raise InputError(
                f"the funnel was applied to {self.funnel.raw_documents:,} documents, the corpus has {n:,}"
            )
        if self.funnel is not None and not self.funnel.keep.any():
            raise InputError("the funnel removes every document: nothing reaches the packer")
        if self.mixture is not None and self.sources is not None:
            undeclared = sorted(set(self.sources.names) - set(self.mixture.sources))
            if undeclared:
                raise InputError(
                    f"the corpus has source(s) {undeclared} that the declared mixture does not "
                    f"name (declared: {list(self.mixture.sources)})"
                )
        if self.mixture is not None and self.sources is None:
            raise InputError("a declared mixture needs source labels (which source each document is from)")

    @classmethod
    def from_lengths(
        cls,
        lengths: npt.ArrayLike,
        *,
        label: str = "",
        names: NameSource | Sequence[str] | None = None,
        sources: SourceLabels | None = None,
        funnel: Funnel | FunnelResult | None = None,
        mixture: DeclaredMixture | None = None,
    ) -> Corpus:
        """A corpus from a length array (``funnel`` may be a declaration: it is applied here)."""
        from ..corpus.funnel import Funnel

        raw = validate_lengths(lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths))
        applied = funnel.apply(raw) if isinstance(funnel, Funnel) else funnel
        return cls(raw, label, names, sources, applied, mixture)

    @property
    def raw_index(self) -> Int64Array:
        """The raw index of every replayed document (all of them without a funnel)."""
        if self.funnel is None:
            return np.arange(self.raw_lengths.size, dtype=np.int64)
        return np.flatnonzero(self.funnel.keep).astype(np.int64)

    @property
    def lengths(self) -> Int64Array:
        """What the packers replay: the documents the funnel kept, in raw order."""
        return self.raw_lengths if self.funnel is None else self.raw_lengths[self.funnel.keep]

    @property
    def replayed_sources(self) -> SourceLabels | None:
        """The sources of the replayed documents."""
        if self.sources is None or self.funnel is None:
            return self.sources
        return self.sources.subset(self.funnel.keep)

    def identity(self) -> DocumentIdentity:
        """Who every replayed document is: its raw index, name and data source, with the documents the
        funnel removed and the stage that removed each (the per-document tables' rows). O(documents)
        small integers; names stay lazy."""
        from ..audit.identity import document_identity

        return document_identity(self.raw_lengths, names=self.names, labels=self.sources, funnel=self.funnel)

    def name(self, raw: int) -> str:
        """The name of raw document ``raw`` (its index when the corpus has no names)."""
        if not 0 <= raw < self.raw_lengths.size:
            raise InputError(f"document must be a raw index in [0, {self.raw_lengths.size}), got {raw}")
        from ..audit.identity import as_names

        names = as_names(self.names)
        return str(raw) if names is None else names.take(np.asarray([raw], np.int64))[0]


def _labels(
    paths: list[str],
    fmt: str,
    reader: Any,
    documents: int,
    *,
    labels: str | None,
    labels_manifest: str | None,
    source_column: str | None,
    source_from: str | None,
    split: str | None,
) -> SourceLabels | None:
    """The source labels one option names (one origin at most), one per document."""
    given = [
        k
        for k, v in (
            ("labels", labels),
            ("labels_manifest", labels_manifest),
            ("source_column", source_column),
        )
        if v
    ]
    if len(given) > 1:
        raise InputError(f"give one origin of source labels, got {', '.join(given)}")
    if not (given or source_from):
        return None
    from ..corpus.labels import (
        SOURCE_FROM,
        SourceLabels,
        labels_from_census,
        labels_from_column,
        labels_from_file,
        labels_from_manifest,
        labels_from_paths,
    )

    if labels:
        return labels_from_file(labels, documents=documents)
    if labels_manifest:
        from .._files import read_json
        from ..corpus.manifest import read_manifest

        doc = read_json(labels_manifest, "labels_manifest")  # a regular file, bounded, strict JSON
        if isinstance(doc, dict) and doc.get("format") == "packing-theory/census":
            if fmt == "lengths" and len(paths) == 1:
                census_of(labels_manifest, doc, paths[0])
            return labels_from_census(
                doc, source_from or "dir", origin=f"census {labels_manifest!r}", documents=documents
            )
        manifest = read_manifest(labels_manifest)
        if fmt == "shards":
            root = os.path.dirname(os.path.abspath(labels_manifest))
            listed = [os.path.realpath(os.path.join(root, s["path"])) for s in manifest["shards"]]
            if [os.path.realpath(p) for p in paths] != listed:
                raise InputError(
                    f"the shards are not the shards of labels_manifest {labels_manifest!r} in its order"
                )
        return labels_from_manifest(manifest, origin=f"manifest {labels_manifest!r}", documents=documents)
    if source_column:
        if fmt == "jsonl":  # the reader took the field in the pass that read the texts
            names, codes = reader.sources()
            where = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
            return SourceLabels.from_codes(names, codes, origin=f"field {source_column!r} of {where!r}")
        if fmt not in ("parquet", "hf"):
            raise InputError(f"source_column reads a JSON Lines field or a parquet or Hugging Face column; "
                             f"the data is {fmt}")
        return labels_from_column(paths, source_column, split=split, documents=documents)
    if source_from:
        if source_from not in SOURCE_FROM:
            raise InputError(f"source_from must be one of {', '.join(SOURCE_FROM)}; got {source_from!r}")
        names, codes = reader.sources()
        return labels_from_paths(list(names), codes, source_from, documents=documents)
    return None


@functools.lru_cache(maxsize=4)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file, once per version of it (its size and mtime are in the key): the labels and the
    names of one ``open_corpus`` check the same census against the same lengths."""
    from ..corpus.manifest import file_sha256

    return file_sha256(path)


def census_of(census: str | os.PathLike[str], doc: dict[str, Any], lengths_file: str) -> None:
    """Refuse a census that describes other lengths than ``lengths_file``: its names and source labels
    would be pinned to the wrong documents whenever the count agrees. The census records the SHA-256 of the
    ``lengths.npy`` it wrote; the file is hashed (O(file)). A census without that digest is taken as is.

    Raises:
        InputError: the digests differ (naming both files).
    """
    recorded = doc.get("lengths_sha256")
    if not isinstance(recorded, str):
        return
    st = os.stat(lengths_file)
    if _file_digest(lengths_file, st.st_size, st.st_mtime_ns) != recorded:
        raise InputError(f"census {os.fspath(census)!r} describes other lengths than {lengths_file!r} (their "
                         "SHA-256 differs from the census's lengths_sha256): its names and source labels "
                         "would belong to other documents; give the census that wrote these lengths, or "
                         "move this one away")


def _names(fmt: str, paths: list[str], reader: Any, lengths: Int64Array,
           labels_manifest: str | None = None) -> NameSource | list[str] | None:
    """One name per document where the input knows them (a dataset's own name column, read lazily;
    files; a census: the records' own names it kept, else its inputs), else ``None``. Lengths are named by
    the census given as ``labels_manifest``, else by the ``census.json`` beside them."""
    if fmt == "lengths" and len(paths) == 1:
        beside = Path(paths[0]).parent / "census.json"
        for census in (labels_manifest, beside):
            if census is None or not Path(census).is_file():  # no census: no names (and no census reader)
                continue
            from .._files import read_json
            from ..audit.documents import census_names

            try:
                doc = read_json(census, "census")
            except InputError:  # not a census: census_names says so (no names)
                doc = None
            if isinstance(doc, dict) and doc.get("format") == "packing-theory/census":
                census_of(census, doc, paths[0])
            found = census_names(census, int(lengths.size))
            if found is not None:
                return found
        return None
    from ..corpus.readers.names import reader_names

    found = reader_names(reader)  # the one rule contamination names documents by too
    if found is None or len(found) != lengths.size:
        return None
    from ..audit.identity import NameSource

    return found if isinstance(found, NameSource) else list(found)


def open_corpus(
    data: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str = "auto",
    bos: str | None = None,
    eos_id: int | None = None,
    dtype: str | None = None,
    column: str | None = None,
    split: str | None = None,
    tokenizer: Any = "bytes",
    per_line: bool = False,
    encoding: str = "utf-8",
    errors: str = "strict",
    labels: str | None = None,
    labels_manifest: str | None = None,
    source_column: str | None = None,
    source_from: str | None = None,
    mixture: str | os.PathLike[str] | DeclaredMixture | None = None,
    funnel: str | os.PathLike[str] | Funnel | None = None,
    label: str | None = None,
) -> Corpus:
    """Read a corpus (see the module doc): its lengths, names, sources, funnel and mixture.

    Args:
        data: files, directories or glob patterns (one or a list), of one format or several
            (:func:`~packing_theory.corpus.readers.plan_inputs`: each input read by its own reader, in
            order; a directory walk skips files that are not data and :attr:`Corpus.described` lists them).
        format: one of :data:`~packing_theory.corpus.readers.FORMATS` (every input read in it), or
            ``"auto"`` (each input's detected from its path; :attr:`Corpus.described` says what was
            found).
        bos: how BOS is counted: ``"included"`` or ``"add"`` (token formats must say), ``"auto"`` for
            text (the tokenizer is asked on a probe).
        eos_id, dtype: OLMo-core arrays: the EOS id ending each document, the ids' dtype.
        column: the field or column holding the documents (text or token ids).
        split: a saved Hugging Face ``DatasetDict``'s split.
        tokenizer: text inputs: ``bytes``, ``chars``, ``whitespace``, ``"module:callable"`` or a callable.
        per_line, encoding, errors: text files: one document per line; their encoding;
            ``strict`` or ``replace`` for bytes that do not decode.
        labels, labels_manifest, source_column, source_from: one origin of source labels: a labels
            file (one per document), a seed-002 manifest or a census, a parquet / dataset column, or
            the directory (``"dir"``) or file (``"file"``) each document was read from.
        mixture: the declared mixture (a JSON / YAML file, or a :class:`DeclaredMixture`).
        funnel: the cleaning funnel (a JSON / YAML file, or a :class:`~packing_theory.corpus.funnel.Funnel`);
            the packers replay what it keeps.
        label: the corpus's name in reports (default: the format and the first path).

    Raises:
        InputError: a missing or unreadable input, an option the input does not use, labels of another
            count, a mixture that does not name a source, a funnel that removes everything.
    """
    specs = [os.fspath(data)] if isinstance(data, (str, os.PathLike)) else [os.fspath(d) for d in data]
    if not specs:
        raise InputError("data must name at least one file, directory or pattern")
    if errors == "skip":
        raise InputError(
            "errors='skip' applies to the census (which lists what it skips); use strict or replace here"
        )
    plan = plan_inputs(specs, format)
    paths, fmt, why = plan.paths, plan.format, plan.reason
    for kind in plan.formats:
        if kind in TOKEN_FORMATS and bos in (None, "auto"):
            named = f" input {plan.first(kind)!r}" if fmt == "mixed" else ""
            raise InputError(
                f"bos {'auto' if bos else 'must be given'}: {kind}{named} stores token ids, so say how BOS "
                "is counted: bos='included' (each stored document holds its BOS or EOS) or "
                "bos='add' (one more token per document)"
            )
    if source_column and fmt == "mixed":
        raise InputError(
            f"source_column reads one format's field or column; the data holds {', '.join(plan.formats)} "
            "inputs: label them with source_from='dir' or 'file', or a labels file"
        )
    options: dict[str, Any] = {"bos": bos, "eos_id": eos_id, "dtype": dtype, "field": column, "split": split}
    if set(plan.formats) & {"jsonl", "text", "parquet"} or tokenizer != "bytes":
        from ..corpus.textcount import load_tokenizer

        options["tokenizer"] = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    if source_column and fmt == "jsonl":
        options["source_field"] = source_column
    if per_line:
        options["per_line"] = True
    if encoding != "utf-8":
        options["encoding"] = encoding
    if errors != "strict":
        options["errors"] = errors
    reader = open_inputs(plan, **options)
    raw = reader.lengths() if fmt != "lengths" or len(paths) != 1 else load_lengths(paths[0])
    n = int(raw.size)
    src = _labels(
        paths,
        fmt,
        reader,
        n,
        labels=labels,
        labels_manifest=labels_manifest,
        source_column=source_column,
        source_from=source_from,
        split=split,
    )
    declared = mixture
    if declared is not None:  # the declaration's modules are imported only for a declared mixture
        from ..audit.declared import DeclaredMixture, read_mixture

        declared = read_mixture(mixture) if isinstance(mixture, (str, os.PathLike)) else mixture
        if not isinstance(declared, DeclaredMixture):
            raise InputTypeError(f"mixture must be a file or a DeclaredMixture, got "
                                 f"{type(declared).__name__}")
    stages: Funnel | None = None
    if isinstance(funnel, (str, os.PathLike)):
        from ..corpus.funnel import Funnel

        stages = Funnel.read(funnel)
    else:
        stages = funnel
    applied = stages.apply(raw) if stages is not None else None
    first = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
    opened = {
        "data": specs,
        "format": fmt,
        "bos": bos,
        "eos_id": eos_id,
        "dtype": dtype,
        "column": column,
        "split": split,
        "tokenizer": tokenizer if isinstance(tokenizer, str) else repr(tokenizer),
        "per_line": per_line,
        "encoding": encoding,
        "errors": errors,
        "labels": labels,
        "labels_manifest": labels_manifest,
        "source_column": source_column,
        "source_from": source_from,
        "mixture": None
        if mixture is None
        else os.fspath(mixture)
        if isinstance(mixture, (str, os.PathLike))
        else "given",
        "funnel": None
        if funnel is None
        else os.fspath(funnel)
        if isinstance(funnel, (str, os.PathLike))
        else "given",
    }
    inputs = [*paths, *(p for p in (labels, labels_manifest) if p)]
    inputs += [os.fspath(p) for p in (mixture, funnel) if isinstance(p, (str, os.PathLike))]
    return Corpus(
        raw,
        label or f"{fmt} {first}",
        _names(fmt, paths, reader, raw, labels_manifest),
        src,
        applied,
        declared,
        tuple(inputs),
        f"{fmt} ({why}): {reader.describe()}" + (f"; {plan.skipped_line()}" if plan.skipped else ""),
        opened,
    )


@dataclass(frozen=True, slots=True)
class CorpusSummary:
    """The measured corpus: size and documents per length stratum."""

    label: str
    documents: int
    tokens: int
    over_capacity_documents: int
    max_length: int
    strata_sources: tuple[int, ...]
    strata_tokens: tuple[int, ...]
    read: str = ""
    """How the corpus was read (:attr:`Corpus.described`: the format, how it was found, what the reader
    read and its BOS rule); empty for lengths given in Python."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def corpus_summary(
    lengths: npt.ArrayLike,
    capacity: int = 2049,
    *,
    label: str = "",
    boundaries: Sequence[int] = STRATA_BOUNDARIES,
) -> CorpusSummary:
    """Size and stratum census of a length array, in chunks (a memory-mapped input stays unread). O(n).

    >>> corpus_summary([3, 40, 5], capacity=8, boundaries=(8,)).strata_sources
    (2, 1)
    """
    arr = validate_lengths(lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths))
    boundaries = check_boundaries(boundaries)
    S = len(boundaries) + 1
    sources = [0] * S
    tokens = [0] * S
    over = top = 0
    # a histogram of the lengths clipped past the last boundary (its bins fall in the strata in order):
    # two bincounts a chunk instead of a binary search per length
    clip = boundaries[-1] + 1
    by_bin = clip <= _SUMMARY_CHUNK  # a histogram no longer than a chunk: O(chunk) a chunk
    counts = np.zeros(clip + 1 if by_bin else 0, np.int64)  # a large last boundary: never allocated
    sums = np.zeros(clip + 1 if by_bin else 0, np.int64)
    held = 0  # the tokens in sums: moved into the Python ints before an int64 bin could overflow
    edges = [0, *(b + 1 for b in boundaries), clip + 1]  # stratum k: bins edges[k] .. edges[k + 1] - 1

    def flush() -> None:
        for k in range(S):
            sources[k] += int(counts[edges[k] : edges[k + 1]].sum())
            tokens[k] += int(sums[edges[k] : edges[k + 1]].sum())
        counts[:] = 0
        sums[:] = 0

    for lo in range(0, arr.size, _SUMMARY_CHUNK):
        part = arr[lo : lo + _SUMMARY_CHUNK]
        over += int((part > capacity).sum())
        top = max(top, int(part.max()))
        total = exact_sum(part)
        if by_bin and total < 2**53:  # float64 weights are exact
            if held + total >= 2**62:
                flush()
                held = 0
            held += total
            clipped = np.minimum(part, clip)
            counts += np.bincount(clipped, minlength=clip + 1)
            sums += np.bincount(clipped, weights=part, minlength=clip + 1).round().astype(np.int64)
        else:
            s = stratum_index(part, boundaries)
            for k, v in enumerate(np.bincount(s, minlength=S).tolist()):
                sources[k] += v
            if total < 2**53:  # float64 weights are exact
                by_stratum = [int(v) for v in np.bincount(s, weights=part, minlength=S).round()]
            else:
                by_stratum = [exact_sum(part[s == k]) for k in range(S)]
            for k, v in enumerate(by_stratum):
                tokens[k] += v
        release_pages(part)
    flush()
    return CorpusSummary(label, int(arr.size), sum(tokens), over, top, tuple(sources), tuple(tokens))


