"""Token documents from parquet text, read the way autoresearch and nanochat read it (pyarrow, lazily).

Both loaders walk their parquet files in order; in each file they read row
groups (all of them, or nanochat's ``rank, rank + world_size, ...`` under
DDP), cut each row group's ``text`` column into tokenizer batches of
``batch_size`` documents (restarting at every row group), and encode each
batch with a BOS prepended. :func:`parquet_documents` does the same once and
returns a :class:`~packing_theory.corpus.documents.TokenDocuments` whose
``refill`` is that batch-size sequence and whose ``row_groups`` name the
``(file, row group)`` of every document — so a replay refills exactly as the
loader does, epoch after epoch, and nanochat's ``pq_idx`` / ``rg_idx`` can be
reported.

The whole split is tokenized up front and held in memory (8 bytes per token):
fine for a tokenizer-sized experiment; for a large corpus write seed-002
shards once (:func:`packing_theory.corpus.write_shards`) and read them with
:class:`~packing_theory.corpus.cursor.ShardDocuments`.

:func:`autoresearch_files` and :func:`nanochat_files` find the files the two
loaders would read (their cache directories and split rules).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .._checks import check_int
from ..corpus.documents import TokenDocuments
from ..errors import InputError, import_optional

__all__ = ["autoresearch_files", "nanochat_files", "parquet_documents"]

Encode = Callable[[list[str]], Sequence[Sequence[int]]]
"""A batch encoder: texts -> BOS-inclusive token lists."""


def _pq() -> Any:
    return import_optional("pyarrow.parquet", extra="parquet", purpose="reading parquet")


def parquet_documents(
    paths: Iterable[str | os.PathLike[str]],
    encode: Encode,
    *,
    column: str = "text",
    batch_size: int = 128,
    rank: int = 0,
    world_size: int = 1,
) -> TokenDocuments:
    """Tokenize the parquet ``paths`` into documents, batch by batch, as the loaders do.

    Args:
        paths: parquet files in reading order.
        encode: a batch encoder returning BOS-inclusive token lists (e.g.
            ``lambda texts: tokenizer.encode(texts, prepend=bos)``).
        column: the text column.
        batch_size: documents per tokenizer batch (restarting at every row group).
        rank, world_size: nanochat's DDP row-group split (``rank, rank + world_size, ...``).

    Raises:
        ValueError: no files, an unknown column, a bad rank, an encoder
            returning the wrong number of documents, or no documents at all.
    """
    files = [os.fspath(p) for p in paths]
    if not files:
        raise InputError("paths is empty: give at least one parquet file")
    size = check_int("batch_size", batch_size, 1)
    world_size = check_int("world_size", world_size, 1)
    rank = check_int("rank", rank, 0, maximum=world_size - 1)
    pq = _pq()
    docs: list[Sequence[int]] = []
    refill: list[int] = []
    groups: list[tuple[int, int, int]] = []
    for f, name in enumerate(files):
        pf = pq.ParquetFile(name)
        if column not in pf.schema_arrow.names:
            raise InputError(
                f"parquet file {name!r} has no column {column!r} (columns: {pf.schema_arrow.names})"
            )
        if pf.schema_arrow.names.count(column) > 1:
            raise InputError(f"parquet file {name!r} has {pf.schema_arrow.names.count(column)} columns "
                             f"named {column!r}; the text column must be named once")
        for g in range(rank, pf.num_row_groups, world_size):
            texts = pf.read_row_group(g, columns=[column]).column(column).to_pylist()
            for i in range(0, len(texts), size):
                batch = texts[i : i + size]
                encoded = encode(batch)
                if len(encoded) != len(batch):
                    raise InputError(f"encode returned {len(encoded)} token lists for {len(batch)} texts")
                docs.extend(encoded)
                refill.append(len(batch))
            if texts:
                groups.append((f, g, len(texts)))
    if not docs:
        raise InputError(f"parquet files {files!r} hold no documents for rank {rank} of {world_size}")
    return TokenDocuments.from_lists(
        (np.asarray(d, dtype=np.int64) for d in docs), refill=refill, row_groups=groups
    )


def _listdir(directory: str) -> list[str]:
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"no data directory {directory!r}: download the data first, or pass documents="
        )
    return sorted(
        os.path.join(directory, f)
        for f in os.listdir(directory)
        if f.endswith(".parquet") and not f.endswith(".tmp")
    )


def autoresearch_files(split: str, data_dir: str | None = None) -> list[str]:
    """The parquet files autoresearch's loader reads for ``split``.

    ``~/.cache/autoresearch/data/shard_*.parquet``; ``val`` is the pinned
    ``shard_06542.parquet``, ``train`` every other file.

    Raises:
        ValueError: a split other than ``train`` / ``val``.
        FileNotFoundError: no data directory or no file for the split.
    """
    if split not in ("train", "val"):
        raise InputError(f"split must be 'train' or 'val', got {split!r}")
    directory = data_dir or os.path.join(os.path.expanduser("~"), ".cache", "autoresearch", "data")
    files = _listdir(directory)
    val = os.path.join(directory, "shard_06542.parquet")
    chosen = [p for p in files if p != val] if split == "train" else [p for p in files if p == val]
    if not chosen:
        raise FileNotFoundError(f"no {split} parquet file in {directory!r}")
    return chosen


def nanochat_files(split: str, data_dir: str | None = None) -> list[str]:
    """The parquet files nanochat's loader reads for ``split``: all but the last (train), the last (val).

    The directory is ``$NANOCHAT_BASE_DIR`` or ``~/.cache/nanochat``, then
    ``base_data_climbmix`` (falling back to ``base_data``, as nanochat does).

    Raises:
        ValueError: a split other than ``train`` / ``val``.
        FileNotFoundError: no data directory or no file for the split.
    """
    if split not in ("train", "val"):
        raise InputError(f"split must be 'train' or 'val', got {split!r}")
    if data_dir is None:
        base = os.environ.get("NANOCHAT_BASE_DIR") or os.path.join(
            os.path.expanduser("~"), ".cache", "nanochat"
        )
        data_dir = os.path.join(base, "base_data_climbmix")
        if not os.path.isdir(data_dir):
            data_dir = os.path.join(base, "base_data")
    files = _listdir(data_dir)
    chosen = files[:-1] if split == "train" else files[-1:]
    if not chosen:
        raise FileNotFoundError(f"no {split} parquet file in {data_dir!r}")
    return chosen
