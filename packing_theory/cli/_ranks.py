"""``audit --world-size W``: the per-rank section of the audit report (options, source, rendering).

Every streaming policy is replayed once per rank, on the rank's own stream
(nanochat's row-group rule, :mod:`packing_theory.distributed.ranks`), through
``--executor`` / ``--workers``; the merged result becomes the ``ranks``
section of ``audit.json`` and a table in ``audit.md``. Row groups: the real
ones for ``--text`` parquet files; blocks of ``--row-group-size`` documents
of each ``--shards`` file, of the ``--lengths`` array, of the demo corpus and
of the concatenated ``--text`` plain-text lengths.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..distributed.ranks import NANOCHAT_ROW_GROUP_SIZE
from ..errors import InputError

__all__ = ["add_rank_options", "check_rank_options", "check_world_size", "rank_section", "rank_source"]


def add_rank_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--world-size``, ``--row-group-size`` and ``--executor``."""
    parser.add_argument("--world-size", type=int, default=None, metavar="W",
                        help="also audit each of W DDP ranks as nanochat's loader feeds them (rank r reads "
                             "row groups r, r+W, ...); streaming policies only")
    parser.add_argument("--row-group-size", type=int, default=NANOCHAT_ROW_GROUP_SIZE, metavar="N",
                        help=f"documents per row group of a lengths / shard / plain-text input for "
                             f"--world-size (default {NANOCHAT_ROW_GROUP_SIZE}, nanochat's repackaging); "
                             "parquet files use their real row groups")
    add_executor_option(parser)


def add_executor_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--executor`` (where the ``--workers`` processes run)."""
    parser.add_argument("--executor", default="local", metavar="SPEC",
                        help="where the replays run: local (default; --workers processes) or "
                             "dask://HOST:PORT (pip install 'packing-theory[distributed]')")


def check_executor_option(args: argparse.Namespace) -> None:
    """Refuse a bad ``--executor`` spec, or a Dask one without dask installed, before anything runs."""
    from ..distributed.executors import import_distributed, parse_executor_spec

    if parse_executor_spec(args.executor) != "local":
        import_distributed()


def check_rank_options(args: argparse.Namespace, policies: list[str]) -> None:
    """Refuse bad ``--world-size`` / ``--row-group-size`` / ``--executor`` values before anything runs."""
    from ._packers import is_peer

    check_executor_option(args)
    if args.row_group_size < 1:
        raise InputError(f"--row-group-size must be >= 1, got {args.row_group_size}")
    if args.world_size is None:
        return
    if args.world_size < 1:
        raise InputError(f"--world-size must be >= 1, got {args.world_size}")
    peers = [p for p in policies if is_peer(p)]
    if peers:
        raise InputError(f"--world-size applies to streaming policies only; got peer policy {peers[0]!r} "
                         "(drop it or drop --world-size)")


def rank_source(args: argparse.Namespace, train: npt.NDArray[np.int64],
                tokenizer: Callable[[str], Any]) -> Any:
    """What :func:`~packing_theory.distributed.ranks.audit_ranks` reads for this invocation.

    ``tokenizer`` turns the ``--tokenizer`` spec into a tokenizer (parquet inputs only).
    """
    from ..distributed.ranks import ParquetSource

    if args.shards:
        from ..corpus import lengths_from_shards

        return [lengths_from_shards([p]) for p in args.shards]
    if args.text and all(str(p).endswith(".parquet") for p in args.text):
        return ParquetSource(tuple(args.text), tokenizer(args.tokenizer), args.text_column)
    if args.text:  # per file, as the census and nanochat cut row groups: never across a file boundary
        return _text_files(args.text, tokenizer(args.tokenizer), args.per_line, train)
    return train


def _text_files(paths: list[str], tok: Any, per_line: bool,
                train: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
    """Each plain-text file's lengths (a file without documents has no row group: left out).

    Checked to concatenate to ``train`` (what the whole-corpus audit read).
    """
    from ..corpus.text import lengths_from_text_files

    out: list[npt.NDArray[np.int64]] = []
    for p in paths:
        try:
            out.append(lengths_from_text_files([p], tok, per_line=per_line))
        except ValueError as exc:
            if "is empty" not in str(exc):
                raise
    if not out or not np.array_equal(np.concatenate(out), train):  # another answer the second time
        raise InputError(f"--tokenizer gave different lengths on a second read of {len(paths)} --text "
                         "file(s): the per-rank audit needs a deterministic tokenizer")
    return out


def check_world_size(source: Any, world_size: int, row_group_size: int) -> None:
    """Refuse a ``--world-size`` larger than the row groups of the largest input (a rank would get nothing).

    Rank r reads row groups r, r + W, ... of every file, so some rank is empty
    exactly when no file has more than W - 1 row groups. O(files); parquet
    inputs read only their footers.
    """
    from ..distributed.ranks import ParquetSource

    if isinstance(source, ParquetSource):
        from ..corpus.text import _pyarrow_parquet

        pq = _pyarrow_parquet()
        groups = [pq.ParquetFile(p).metadata.num_row_groups for p in source.paths]
        unit = "parquet row group(s)"
    else:
        files = [source] if isinstance(source, np.ndarray) else list(source)
        groups = [-(-int(np.asarray(f).size) // row_group_size) for f in files]
        unit = f"row group(s) of --row-group-size {row_group_size}"
    most = max(groups, default=0)
    if world_size > most:
        raise InputError(f"--world-size {world_size} is more than the {most} {unit} of the largest input: "
                         f"rank {most} and above would receive no documents")


def rank_section(summaries: Any) -> tuple[dict[str, Any], list[str]]:
    """The ``ranks`` JSON section and its Markdown lines."""
    doc = {s.policy: s.to_dict() for s in summaries}
    lines: list[str] = []
    for s in summaries:
        g = s.to_dict()["global"]
        lines += [f"## Per-rank audit: {s.policy}, world size {s.world_size}", "",
                  f"Sources started on any rank: {g['started_any_rank']:,} of {g['documents']:,}; never "
                  f"started anywhere: {g['never_started_anywhere']:,}. Ranks step in lockstep, so training "
                  f"stops at the fewest rows of any rank, {g['min_rows']:,}: "
                  f"{g['started_at_min_rows']:,} occurrences are started by then.", "",
                  "| rank | documents | rows | started | never started | started by min rows | K size | "
                  "mass identity |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in s.to_dict()["ranks"]:
            identity = "holds" if r["mass"]["identity_holds"] else "FAILS"
            lines.append(f"| {r['rank']} | {r['documents']:,} | {r['rows']:,} | {r['distinct_started']:,} | "
                         f"{r['never_started']:,} | {r['started_at_min_rows']:,} | "
                         f"{r['protected_members']:,} | {identity} |")
        lines.append("")
    return doc, lines
