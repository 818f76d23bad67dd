"""MosaicML streaming MDS datasets, read through the ``streaming`` package's own shard readers.

An MDS dataset is a directory with ``index.json`` (format version 2: one
entry per shard, with its columns, encodings, sample count and files) and
the shards it lists. Each shard is opened with
``streaming.base.format.reader_from_json`` (mosaicml-streaming 0.13.0, the
version that writes the test fixtures) and every sample decoded by that
reader; a shard written compressed (``MDSWriter(compression="zstd")`` and
friends) is decompressed with ``streaming.base.compression.decompress`` into
a temporary directory first, one shard at a time. Nothing of the format is
re-implemented here: ``pip install 'packing-theory[mds]'``.

A sample's length comes from one column:

* an ``ndarray`` column (``ndarray:uint16``, ``ndarray:int32``, ...) or a
  ``bytes`` column with ``dtype`` given: token ids, length = their count;
* a ``str`` column: text, through a tokenizer.

``bos`` as for every token-id format (:mod:`packing_theory.corpus.readers._base`);
a text column also takes ``"auto"``. Memory: one decoded sample plus 8 bytes per sample.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import InputError, InputTypeError, import_optional
from ._base import bos_inclusive, check_bos, file_codes

__all__ = ["MDSDataset", "is_mds_dataset"]

Int64Array = npt.NDArray[np.int64]


def is_mds_dataset(path: str) -> bool:
    """True for a directory holding an MDS ``index.json``."""
    index = os.path.join(path, "index.json")
    if not (os.path.isdir(path) and os.path.isfile(index)):
        return False
    try:
        with open(index, encoding="utf-8") as fh:
            shards = json.load(fh).get("shards", [])
    except (OSError, ValueError, AttributeError):
        return False
    return bool(shards) and all(isinstance(s, dict) and s.get("format") == "mds" for s in shards)


class MDSDataset:
    """The samples of an MDS dataset, one column's lengths.

    Args:
        path: the dataset directory (holding ``index.json``).
        bos: ``"included"`` or ``"add"`` (a text column also ``"auto"``).
        column: the column (default: ``tokens`` or ``input_ids`` if present, else ``text``).
        tokenizer: for a ``str`` column (default ``bytes``).
        dtype: for a ``bytes`` column of token ids.

    Raises:
        MissingDependency: ``streaming`` is not installed.
        InputError: no ``index.json``, an unknown column (the message lists them), a column whose
            encoding does not give token ids or text, a missing tokenizer or dtype.
    """

    format = "mds"

    def __init__(self, path: str | os.PathLike[str], *, bos: str, column: str | None = None,
                 tokenizer: Any = None, dtype: str | None = None, batched: bool = False) -> None:
        self.fmt = import_optional("streaming.base.format", extra="mds", purpose="reading MDS shards")
        self.root = os.fspath(path)
        index = os.path.join(self.root, "index.json")
        if not os.path.isfile(index):
            raise InputError(f"MDS dataset {self.root!r} has no index.json")
        with open(index, encoding="utf-8") as fh:
            self.index = json.load(fh)
        self.shards: list[dict[str, Any]] = list(self.index.get("shards", []))
        if not self.shards:
            raise InputError(f"MDS dataset {self.root!r}: index.json lists no shards")
        first = self.shards[0]
        names = list(first.get("column_names", []))
        for s in self.shards:
            if s.get("format") != "mds" or list(s.get("column_names", [])) != names:
                raise InputError(f"MDS dataset {self.root!r}: every shard must be MDS with the same columns")
        if column is None:
            column = next((c for c in ("tokens", "input_ids", "text") if c in names), None)
            if column is None:
                raise InputError(f"MDS dataset {self.root!r}: choose a column (--column); columns: {names}")
        if column not in names:
            raise InputError(f"MDS dataset {self.root!r} has no column {column!r}; columns: {names}")
        self.column = column
        self.encoding = str(first["column_encodings"][names.index(column)])
        self.paths: tuple[str, ...] = tuple(os.path.join(self.root, s["raw_data"]["basename"])
                                            for s in self.shards)
        self.tokenizer = tokenizer
        self.batched = batched
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.tokenized = self.encoding.startswith("ndarray") or self.encoding == "bytes"
        if self.tokenized:
            if tokenizer is not None:
                raise InputError(f"column {column!r} of {self.root!r} holds token ids ({self.encoding}): a "
                                 "tokenizer does not apply")
            if self.encoding == "bytes" and self.dtype is None:
                raise InputError(f"column {column!r} of {self.root!r} is raw bytes: give the ids' dtype "
                                 "(--dtype, e.g. int64 for llm-foundry's concatenated tokens)")
            self.bos: str = check_bos(bos, self.format)
            self.bos_reason = ""
        elif self.encoding == "str":
            from ..text import resolve_bos

            self.tokenizer = tokenizer = "bytes" if tokenizer is None else tokenizer

            self.bos, self.bos_reason = resolve_bos(bos, tokenizer, batched=batched)
        else:
            raise InputTypeError(f"column {column!r} of {self.root!r} has encoding {self.encoding!r}; "
                                 "expected ndarray token ids, bytes with --dtype, or str text")
        self._counts: Int64Array | None = None

    def _readers(self) -> Iterator[Any]:
        """A ``streaming`` reader per shard, a compressed shard decompressed into a temporary directory."""
        for shard in self.shards:
            raw = os.path.join(self.root, shard["raw_data"]["basename"])
            if os.path.isfile(raw):
                yield self.fmt.reader_from_json(self.root, None, shard)
                continue
            zipped = shard.get("zip_data")
            if not zipped:
                raise FileNotFoundError(f"MDS dataset {self.root!r}: shard {raw!r} is missing")
            comp = import_optional("streaming.base.compression", extra="mds", purpose="reading MDS shards")
            tmp = tempfile.mkdtemp(prefix="packing-theory-mds-")
            try:
                with open(os.path.join(self.root, zipped["basename"]), "rb") as fh:
                    data = comp.decompress(shard["compression"], fh.read())
                with open(os.path.join(tmp, shard["raw_data"]["basename"]), "wb") as fh:
                    fh.write(data)
                del data
                yield self.fmt.reader_from_json(tmp, None, shard)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def iter_values(self) -> Iterator[Any]:
        """The column's value of every sample, in order (decoded by ``streaming``)."""
        for reader in self._readers():
            for i in range(reader.samples):
                value = reader.get_item(i)[self.column]
                if self.encoding == "bytes":
                    value = np.frombuffer(value, dtype=self.dtype)
                yield value

    def token_counts(self) -> Int64Array:
        """Tokens per sample (ids in the column, or the tokenizer's count). O(samples)."""
        if self._counts is None:
            if self.tokenized:
                self._counts = np.fromiter((v.size for v in self.iter_values()), dtype=np.int64)
            else:
                from ..text import text_token_counts

                self._counts = text_token_counts(self.iter_values(), self.tokenizer, batched=self.batched)
        return self._counts

    def __len__(self) -> int:
        return sum(int(s["samples"]) for s in self.shards)

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths under :attr:`bos`."""
        counts = self.token_counts()
        if counts.size == 0:
            raise InputError(f"MDS dataset {self.root!r} holds no samples")
        return bos_inclusive(counts, self.bos, f"MDS dataset {self.root!r}")  # type: ignore[arg-type]

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """Every sample's source label: its shard file."""
        return self.paths, file_codes([int(s["samples"]) for s in self.shards])

    def describe(self) -> str:
        """One line: shards, samples, column and the BOS rule."""
        rule = self.bos_reason or {"included": "length = stored tokens (each sample holds its BOS/EOS)",
                                   "add": "length = stored tokens + 1 BOS"}[self.bos]
        return (f"MDS dataset {self.root!r}: {len(self.shards)} shard(s), {len(self):,} samples, column "
                f"{self.column!r} ({self.encoding}); bos={self.bos}: {rule}")
