"""``audit --world-size W``: every data-parallel rank's audit, as the ``ranks`` section of the report.

Every streaming policy is replayed once per rank, on the rank's own stream
(nanochat's row-group rule, :mod:`packing_theory.distributed.ranks`), through
``--executor`` / ``--workers``; :func:`rank_section` returns the mapping the
audit's result carries (:attr:`packing_theory.orchestration.AuditResult.ranks`):
each policy's merged summary, who ran each rank, a plain-text summary, and —
with source labels — each policy's per-source accounting over the ranks.
Row groups: the real ones of parquet files; blocks of ``--row-group-size``
documents of each shard file, of each plain-text file, and of any other corpus.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import InputError

__all__ = ["check_rank_options", "check_world_size", "rank_section", "rank_source"]


def check_rank_options(args: argparse.Namespace, packers: Sequence[str]) -> None:
    """Refuse ``--world-size`` with a framework's packer (the per-rank audit replays streaming policies)."""
    if args.world_size is None:
        return
    from ..registry import entry

    peers = [p for p in packers if entry(p).kind == "peer"]
    if peers:
        raise InputError(f"--world-size applies to streaming policies only; got {peers[0]!r} (drop it or "
                         "drop --world-size)")


def rank_source(args: argparse.Namespace, corpus: Any) -> Any:
    """What :func:`~packing_theory.distributed.ranks.audit_ranks` reads: the corpus cut per input file.

    Parquet files are read by each rank's task (a :class:`~packing_theory.distributed.ranks.ParquetSource`);
    shard and text files are counted one file at a time (row groups never cross a file boundary) and
    checked to be the corpus the audit read.
    """
    import numpy as np

    if getattr(args, "demo", False):
        return corpus.raw_lengths
    from ..corpus.readers import plan_inputs
    from ..corpus.textcount import load_tokenizer
    from ..distributed.ranks import ParquetSource
    from ..orchestration.corpus import open_corpus
    from ._inputs import data_spec

    specs, asked, _ = data_spec(args)
    plan = plan_inputs(specs, asked)
    paths, fmt = plan.paths, plan.format  # inputs of several formats: the corpus's lengths, as read
    if fmt == "parquet":
        return ParquetSource(tuple(paths), load_tokenizer(args.tokenizer or "bytes"), args.column or "text")
    if fmt not in ("shards", "text") or len(paths) == 1:
        return corpus.raw_lengths
    options = {k: getattr(args, k) for k in ("tokenizer", "bos", "encoding", "errors")
               if getattr(args, k, None) is not None}
    files = []
    for p in paths:
        try:
            files.append(open_corpus(p, format=fmt, per_line=bool(args.per_line), **options).raw_lengths)
        except InputError as exc:
            if "hold no documents" not in str(exc):  # a file without documents has no row group
                raise
    if not files or not np.array_equal(np.concatenate(files), corpus.raw_lengths):
        raise InputError(f"--tokenizer gave different lengths on a second read of {len(paths)} {fmt} "
                         "file(s): the per-rank audit needs a deterministic tokenizer")
    return files


def check_world_size(source: Any, world_size: int, row_group_size: int) -> None:
    """Refuse a ``--world-size`` larger than the row groups of the largest input (a rank would get nothing).

    Rank r reads row groups r, r + W, ... of every file, so some rank is empty
    exactly when no file has more than W - 1 row groups. O(files); parquet
    inputs read only their footers.
    """
    import numpy as np

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


def _row_group_sizes(source: Any, row_group_size: int) -> list[list[int]]:
    """Documents per row group of each file of a per-rank source (as the per-rank audit cuts them)."""
    import numpy as np

    from ..distributed.ranks import ParquetSource

    if isinstance(source, ParquetSource):
        from ..errors import import_optional

        pq = import_optional("pyarrow.parquet", extra="parquet", purpose="the row groups of parquet inputs")
        out = []
        for p in source.paths:
            meta = pq.ParquetFile(p).metadata
            out.append([meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
        return out
    files = [source] if isinstance(source, np.ndarray) else list(source)
    sizes = []
    for f in files:
        n = int(np.asarray(f).size)
        sizes.append([min(row_group_size, n - i) for i in range(0, n, row_group_size)])
    return sizes


def _summary_text(summaries: Any, sources: Any) -> str:
    lines = []
    for s in summaries:
        g = s.to_dict()["global"]
        failing = [str(r["rank"]) for r in s.to_dict()["ranks"] if not r["mass"]["identity_holds"]]
        identity = "holds on every rank" if not failing else "FAILS on rank(s) " + ", ".join(failing)
        rows = "–" if g["min_rows"] is None else f"{g['min_rows']:,}"
        lines.append(f"{s.policy}, world size {s.world_size}: {g['started_any_rank']:,} of "
                     f"{g['documents']:,} documents started on some rank, "
                     f"{g['never_started_anywhere']:,} never started anywhere; ranks step in lockstep, so "
                     f"training stops at the fewest rows of any rank, {rows}, by when "
                     f"{g['started_at_min_rows']:,} documents have started; the mass identity {identity}.")
    for r in sources or ():
        drift = "–" if r.max_drift is None else f"{r.max_drift:.3f}"
        ok = "yes" if r.reconciles else "NO"
        lines.append(f"{r.policy}: every rank's sources reconcile: {ok}; largest drift statistic of a rank: "
                     f"{drift}.")
    return "\n".join(lines)


def rank_section(args: argparse.Namespace, corpus: Any, settings: Any, packers: Sequence[str], source: Any,
                 horizon: Any, workers: int) -> tuple[dict[str, Any], list[str]]:
    """The per-rank section of the audit (``AuditResult.ranks``) and the policies failing on a rank.

    ``horizon``: the audit's budget (each rank is cut at its rows), or ``None``.
    """
    from ..distributed.ranks import ParquetSource, audit_ranks
    from ..engine.policies import PackerConfig

    R = settings.streaming_capacity
    config = PackerConfig(capacity=R, min_buffer=settings.min_buffer, refill=settings.refill,
                          passes=settings.passes, exhausted=settings.exhausted,
                          seed=settings.seed, rows=None if horizon is None else horizon.streaming_rows(R))
    execution: dict[str, Any] = {}
    # a task failing on bad input inside a rank is still bad input (status 2: cli._exit)
    summaries = audit_ranks(source, args.world_size, config, policies=list(packers),
                            row_group_size=args.row_group_size, engine=settings.engine,
                            executor=args.executor, workers=workers, execution=execution)
    failing = [f"{s.policy} (a rank)" for s in summaries if not s.identity_holds]
    groups = _row_group_sizes(source, args.row_group_size)  # as the ranks were cut
    sources = None
    if corpus.sources is not None:
        from ..orchestration.sources import rank_sources

        extra = {k: v for k, v in (("blocks", args.mixture_blocks), ("threshold", args.drift_threshold))
                 if v is not None}
        sources = rank_sources(corpus.raw_lengths, corpus.sources, groups, args.world_size, config,
                               policies=list(packers), engine=settings.engine, mixture=corpus.mixture,
                               **extra)
        failing += [f"{r.policy} (a rank's data sources)" for r in sources if not r.reconciles]
    parquet = isinstance(source, ParquetSource)
    sizes = [g for file in groups for g in file]
    section: dict[str, Any] = {
        "world_size": args.world_size, "passes": settings.passes,
        # the audit's horizon, as the rows each rank is cut at (every rank gets that budget)
        "horizon": None if horizon is None else {"asked": horizon.describe(), "rows_per_rank": config.rows},
        # what cut the row groups: the parquet files' own groups, or --row-group-size documents
        "row_group_size": None if parquet else args.row_group_size,
        "row_groups": {"from": "parquet" if parquet else "row_group_size", "count": len(sizes),
                       "documents_min": min(sizes, default=0), "documents_max": max(sizes, default=0)},
        "summary": _summary_text(summaries, sources),
        "policies": {s.policy: s.to_dict() for s in summaries},
        "execution": execution,
        "sources": None if sources is None else [r.to_dict() for r in sources],
    }
    return section, failing
