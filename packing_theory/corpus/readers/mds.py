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

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._checks import is_int
from ..._files import confined, open_regular, read_json
from ...errors import InputError, InputTypeError, import_optional
from ._base import bos_inclusive, check_bos, file_codes

__all__ = ["MDSDataset", "check_shard_header", "is_mds_dataset"]

Int64Array = npt.NDArray[np.int64]


def is_mds_dataset(path: str) -> bool:
    """True for a directory holding an MDS ``index.json``."""
    index = os.path.join(path, "index.json")
    if not (os.path.isdir(path) and os.path.isfile(index)):
        return False
    try:
        shards = read_json(index, "MDS index").get("shards", [])
    except (OSError, InputError, AttributeError):
        return False
    return bool(shards) and isinstance(shards, list) and all(
        isinstance(s, dict) and s.get("format") == "mds" for s in shards)


def _shard_entry(root: str, index: str, k: int, shard: object) -> dict[str, Any]:
    """Shard ``k`` of ``index.json``, checked: the keys the reader uses, with their types; the file
    names confined to ``root``."""
    where = f"MDS index {index!r} shards[{k}]"
    if not isinstance(shard, dict):
        raise InputError(f"{where} must be an object, got {type(shard).__name__}")
    names, encodings, samples = shard.get("column_names"), shard.get("column_encodings"), shard.get("samples")
    if (not isinstance(names, list) or not isinstance(encodings, list) or len(names) != len(encodings)
            or not all(isinstance(v, str) for v in names + encodings)):
        raise InputError(f"{where}: column_names and column_encodings must be lists of strings of one length")
    if not is_int(samples) or int(samples) < 0:  # type: ignore[arg-type]
        raise InputError(f"{where}: samples must be an integer >= 0, got {samples!r}")
    raw = shard.get("raw_data")
    if not isinstance(raw, dict):
        raise InputError(f"{where}: raw_data must be an object with a basename")
    confined(root, raw.get("basename"), what=f"{where} raw_data.basename")
    zipped = shard.get("zip_data")
    if zipped is not None:
        if not isinstance(zipped, dict) or not isinstance(shard.get("compression"), str):
            raise InputError(f"{where}: zip_data must be an object with a basename, and compression a name")
        confined(root, zipped.get("basename"), what=f"{where} zip_data.basename")
    return shard


def check_shard_header(data: bytes | memoryview, size: int, samples: int, where: str) -> None:
    """Check an MDS shard's header against ``index.json``: its sample count, and its ``samples + 1``
    offsets rising from past the header to the shard's end (``size`` bytes). O(samples).

    Only the header is checked (the samples are ``streaming``'s to decode); a
    truncated shard, or an index that claims more samples than the shard holds,
    is refused here, naming the shard.

    Raises:
        InputError: naming ``where`` and what disagrees.
    """
    head = bytes(data[:4])
    if len(head) < 4:
        raise InputError(f"{where}: {size:,} bytes, too short for an MDS shard header")
    n = int.from_bytes(head, "little")
    if n != samples:
        raise InputError(f"{where}: the shard's header holds {n:,} samples, index.json says {samples:,}")
    first = 4 + 4 * (n + 1)
    if first > size:
        raise InputError(f"{where}: {size:,} bytes cannot hold the offsets of {n:,} samples: truncated")
    offsets = np.frombuffer(bytes(data[4:first]), dtype="<u4").astype(np.int64)
    if offsets.size and (int(offsets[0]) < first or int(offsets[-1]) != size
                         or bool((np.diff(offsets) < 0).any())):
        raise InputError(f"{where}: its sample offsets run {int(offsets[0]):,} .. {int(offsets[-1]):,} "
                         f"(expected: rising from {first:,} to the shard's {size:,} bytes): truncated or "
                         "damaged")


class MDSDataset:
    """The samples of an MDS dataset, one column's lengths.

    ``index.json`` and the shards' headers are checked before ``streaming`` is
    imported (:func:`check_shard_header`); every file name read from the index
    stays inside the dataset directory.

    Args:
        path: the dataset directory (holding ``index.json``).
        bos: ``"included"`` or ``"add"`` (a text column also ``"auto"``).
        column: the column (default: ``tokens`` or ``input_ids`` if present, else ``text``).
        tokenizer: for a ``str`` column (default ``bytes``).
        dtype: for a ``bytes`` column of token ids.

    Raises:
        MissingDependency: ``streaming`` is not installed.
        InputError: no ``index.json``, or one that is not JSON or not an MDS index; a file name leaving
            the directory; a shard whose header disagrees with the index; an unknown column (the
            message lists them), a column whose encoding does not give token ids or text, a missing
            tokenizer or dtype.
    """

    format = "mds"

    def __init__(self, path: str | os.PathLike[str], *, bos: str, column: str | None = None,
                 tokenizer: Any = None, dtype: str | None = None, batched: bool = False) -> None:
        self.root = os.fspath(path)
        index = os.path.join(self.root, "index.json")
        if not os.path.isfile(index):
            raise InputError(f"MDS dataset {self.root!r} has no index.json")
        self.index = read_json(index, "MDS index")
        shards = self.index.get("shards") if isinstance(self.index, dict) else None
        if not isinstance(shards, list):
            raise InputError(f"MDS index {index!r} must be an object with a 'shards' list")
        self.shards: list[dict[str, Any]] = [_shard_entry(self.root, index, k, s)
                                             for k, s in enumerate(shards)]
        if not self.shards:
            raise InputError(f"MDS dataset {self.root!r}: index.json lists no shards")
        first = self.shards[0]
        names = list(first["column_names"])
        for s in self.shards:
            if s.get("format") != "mds" or list(s["column_names"]) != names:
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
        for k, raw in enumerate(self.paths):
            if os.path.isfile(raw):
                with open_regular(raw, "MDS shard") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    head = fh.read(min(size, 8 + 4 * self.shards[k]["samples"]))
                check_shard_header(head, size, self.shards[k]["samples"], f"MDS shard {raw!r}")
        self.fmt = import_optional("streaming.base.format", extra="mds", purpose="reading MDS shards")
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

    def _readers(self) -> Iterator[tuple[str, Any]]:
        """``(shard path, streaming reader)`` per shard; a compressed shard is decompressed into a
        temporary directory (and its header checked) first."""
        for shard, raw in zip(self.shards, self.paths, strict=True):
            if os.path.isfile(raw):
                yield raw, self._reader(self.root, shard, raw)
                continue
            zipped = shard.get("zip_data")
            if not zipped:
                raise FileNotFoundError(f"MDS dataset {self.root!r}: shard {raw!r} is missing")
            comp = import_optional("streaming.base.compression", extra="mds", purpose="reading MDS shards")
            source = os.path.join(self.root, zipped["basename"])
            tmp = tempfile.mkdtemp(prefix="packing-theory-mds-")
            try:
                with open_regular(source, "MDS shard") as fh:
                    packed = fh.read()
                try:
                    data = comp.decompress(shard["compression"], packed)
                except Exception as exc:  # the codec's own error on damaged bytes
                    raise InputError(f"MDS shard {source!r} cannot be decompressed ({shard['compression']}): "
                                     f"{type(exc).__name__}: {exc}") from exc
                check_shard_header(data, len(data), shard["samples"], f"MDS shard {source!r} (decompressed)")
                with open(os.path.join(tmp, os.path.basename(raw)), "wb") as out:
                    out.write(data)
                del data, packed
                yield source, self._reader(tmp, shard, source)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def _reader(self, root: str, shard: dict[str, Any], where: str) -> Any:
        try:
            return self.fmt.reader_from_json(root, None, shard)
        except Exception as exc:  # streaming's own check of the index entry
            raise InputError(f"MDS shard {where!r}: streaming refuses its index entry: "
                             f"{type(exc).__name__}: {exc}") from exc

    def iter_values(self) -> Iterator[Any]:
        """The column's value of every sample, in order (decoded by ``streaming``).

        Raises:
            InputError: a sample that ``streaming`` cannot decode (naming the shard and the sample).
        """
        for where, reader in self._readers():
            for i in range(reader.samples):
                try:
                    value = reader.get_item(i)[self.column]
                    if self.encoding == "bytes":
                        value = np.frombuffer(value, dtype=self.dtype)
                except Exception as exc:  # a damaged sample: streaming's decoder raises what it meets
                    raise InputError(f"MDS shard {where!r} sample {i} cannot be decoded: "
                                     f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from exc
                yield value

    def token_counts(self) -> Int64Array:
        """Tokens per sample (ids in the column, or the tokenizer's count). O(samples)."""
        if self._counts is None:
            if self.tokenized:
                self._counts = np.fromiter((v.size for v in self.iter_values()), dtype=np.int64)
            else:
                from ..text import text_token_counts

                self._counts = text_token_counts(self.iter_values(), self.tokenizer, batched=self.batched,
                                                 where=f"MDS dataset {self.root!r} sample {{i}} (from 0)")
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
