"""Per-rank length streams, the way nanochat shards parquet row groups across DDP ranks.

nanochat's ``_document_batches`` (``nanochat/dataloader.py``) walks the
parquet files in order and, in each file, reads row groups ``rank, rank +
world_size, rank + 2 * world_size, ...``; each row group's texts are cut into
tokenizer batches of 128 documents, restarting at every row group, so the last
batch of a row group is usually shorter. A rank's refill model is therefore
that batch-size *sequence*, which :class:`packing_theory.PackerConfig` accepts
as ``refill`` (cycled per corpus pass, as the loader restarts from file 0 every
epoch). The train split is every file but the last; pass the files you mean.

>>> list(rank_row_groups(7, rank=1, world_size=3))
[1, 4]
>>> s = rank_stream([[[3, 4, 5], [6]], [[7, 8], [9], [2]]], rank=0, world_size=2, batch_size=2)
>>> s.lengths.tolist(), s.refill, s.row_groups
([3, 4, 5, 7, 8, 2], (2, 1, 2, 1), ((0, 0), (1, 0), (1, 2)))
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int, is_int
from ..engine.policies import PackerConfig
from ..errors import InputError, InputTypeError
from ..lengths import validate_lengths
from .text import (
    PathLike,
    Tokenizer,
    _as_paths,
    _check_batch_size,
    _column_texts,
    _open_column,
    _pyarrow_parquet,
    _read_row_group,
)
from .text import lengths_from_texts as _lengths_from_texts

__all__ = ["RankStream", "rank_row_groups", "rank_stream", "rank_stream_from_parquet"]


def _check_rank(rank: object, world_size: object) -> tuple[int, int]:
    for name, value in (("rank", rank), ("world_size", world_size)):
        if not is_int(value):
            raise InputTypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    assert isinstance(rank, (int, np.integer)) and isinstance(world_size, (int, np.integer))
    if world_size < 1:
        raise InputError(f"world_size must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise InputError(f"rank must be in 0..{int(world_size) - 1} for world_size={world_size}, got {rank}")
    return int(rank), int(world_size)


def rank_row_groups(n_row_groups: int, rank: int, world_size: int) -> range:
    """Row groups of one file that ``rank`` reads: ``range(rank, n_row_groups, world_size)``. O(1).

    Raises:
        ValueError: ``n_row_groups < 0``, ``world_size < 1`` or ``rank`` outside ``0..world_size-1``.
        TypeError: a non-int argument.
    """
    r, w = _check_rank(rank, world_size)
    return range(r, check_int("n_row_groups", n_row_groups, 0), w)


@dataclass(frozen=True, eq=False)
class RankStream:
    """One DDP rank's arrival stream.

    Attributes:
        rank, world_size: the rank and the world it belongs to.
        lengths: BOS-inclusive lengths in arrival order (``int64``).
        refill: tokenizer batch sizes in order (sum = ``lengths.size``); pass
            it as :attr:`packing_theory.PackerConfig.refill`.
        row_groups: ``(file_index, row_group_index)`` pairs read, in order.
    """

    rank: int
    world_size: int
    lengths: npt.NDArray[np.int64]
    refill: tuple[int, ...]
    row_groups: tuple[tuple[int, int], ...]

    def config(self, **kwargs: Any) -> PackerConfig:
        """A :class:`~packing_theory.PackerConfig` with ``refill=self.refill`` and ``kwargs``."""
        return PackerConfig(refill=self.refill, **kwargs)


def _batches(n: int, batch_size: int) -> list[int]:
    full, rest = divmod(n, batch_size)
    return [batch_size] * full + ([rest] if rest else [])


def rank_stream(
    row_group_lengths: Sequence[Sequence[Sequence[int] | npt.NDArray[np.integer]]],
    rank: int,
    world_size: int,
    *,
    batch_size: int = 128,
) -> RankStream:
    """Build ``rank``'s stream from per-file, per-row-group document lengths.

    ``row_group_lengths[f][g]`` holds the BOS-inclusive lengths of row group
    ``g`` of file ``f``. Complexity: O(documents of this rank).

    Raises:
        ValueError: no files, an invalid length, bad rank/world size, or a rank
            that receives no documents ("empty").
    """
    r, w = _check_rank(rank, world_size)
    size = _check_batch_size(batch_size)
    if len(row_group_lengths) == 0:
        raise InputError("row_group_lengths is empty: give at least one file")
    parts: list[npt.NDArray[np.int64]] = []
    refill: list[int] = []
    groups: list[tuple[int, int]] = []
    for f, file_groups in enumerate(row_group_lengths):
        for g in rank_row_groups(len(file_groups), r, w):
            arr = np.asarray(file_groups[g])
            groups.append((f, g))
            if arr.size == 0:
                continue
            parts.append(validate_lengths(arr, name=f"row_group_lengths[{f}][{g}]"))
            refill.extend(_batches(int(arr.size), size))
    return _finish(r, w, parts, refill, groups)


def _finish(
    r: int, w: int, parts: list[npt.NDArray[np.int64]], refill: list[int], groups: list[tuple[int, int]]
) -> RankStream:
    if not parts:
        raise InputError(
            f"rank {r} of world_size {w} receives no documents (row groups {groups}): "
            "the stream is empty and a replay needs at least one document"
        )
    return RankStream(r, w, np.concatenate(parts), tuple(refill), tuple(groups))


def rank_stream_from_parquet(
    paths: PathLike | Iterable[PathLike],
    tokenizer: Tokenizer,
    rank: int,
    world_size: int,
    *,
    column: str = "text",
    batch_size: int = 128,
    bos: bool = True,
    batched: bool = False,
) -> RankStream:
    """Read and tokenize ``rank``'s row groups of the parquet ``paths`` (nanochat's rule).

    Tokenizer arguments as in :func:`packing_theory.corpus.lengths_from_texts`.
    Memory: one row group of text at a time, plus the lengths.

    Raises:
        ImportError: no pyarrow.
        ValueError: no paths, unknown ``column`` (listing the available ones),
            or a rank that receives no documents.
    """
    r, w = _check_rank(rank, world_size)
    size = _check_batch_size(batch_size)
    pq = _pyarrow_parquet()
    files = _as_paths(paths)
    handles = [_open_column(pq, name, column) for name in files]
    parts: list[npt.NDArray[np.int64]] = []
    refill: list[int] = []
    groups: list[tuple[int, int]] = []
    for f, (name, pf) in enumerate(zip(files, handles, strict=True)):
        for g in rank_row_groups(pf.num_row_groups, r, w):
            groups.append((f, g))
            where = f"parquet file {os.fspath(name)!r} row group {g}"
            texts = _column_texts(_read_row_group(pf, os.fspath(name), g, column), column, where)
            if not texts:
                continue
            parts.append(_lengths_from_texts(texts, tokenizer, bos=bos, batched=batched, batch_size=size))
            refill.extend(_batches(len(texts), size))
    return _finish(r, w, parts, refill, groups)
