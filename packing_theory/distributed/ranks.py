"""Per-rank audits: every DDP rank's stream replayed as nanochat's loader does, in parallel, then merged.

nanochat's loader gives rank ``r`` of ``W`` the row groups ``r, r + W,
r + 2W, ...`` of every file and restarts its tokenizer batches of 128 at each
row group (:mod:`packing_theory.corpus.ranks`). :func:`audit_ranks` builds
each rank's stream, replays it under every requested streaming policy with the
rank's own refill sequence, and merges the per-rank
:class:`~packing_theory.distributed.merge.RankSummary` values into one
:class:`~packing_theory.distributed.merge.RanksSummary` per policy.

Row groups by input:

* **parquet** (:class:`ParquetSource`): the files' real row groups; each
  rank's task reads and tokenizes only its own row groups;
* **row groups given** (:class:`RowGroups`, e.g. from
  :func:`~packing_theory.distributed.census.census_row_groups`: a census's
  recorded parquet row groups): used as they are;
* **lengths** (an ``.npy`` array, the default corpus, or one array per
  seed-002 shard): a row group is a block of ``row_group_size`` consecutive
  documents of each file (the last one shorter). *Assumption*: 1024 documents,
  the row-group size nanochat's dataset repackaging writes
  (``dev/repackage_data_reference.py`` in karpathy/nanochat, read at commit
  ``03880dbc``: ``row_group_size = 1024``, "HF uses 1000 but we use multiple
  of 2"); pass the real size when you know it.

The row budget (``rows`` / ``targets`` of the config) applies to every rank
(each rank emits the same number of rows per step). One task per rank; the
result equals a serial replay of the same ranks in one process, whatever the
executor (the tests check it).

>>> import numpy as np
>>> from packing_theory.engine.policies import PackerConfig
>>> lengths = np.array([5, 3, 9, 4, 12, 2, 7, 6, 8, 8], dtype=np.int64)
>>> cfg = PackerConfig(capacity=8, min_buffer=2, exhausted="drain")
>>> (s,) = audit_ranks(lengths, 2, cfg, row_group_size=2)
>>> [(r.rank, r.documents, r.rows) for r in s.ranks], s.started_any, s.min_rows, s.started_at_min_rows
([(0, 6, 4), (1, 4, 2)], 10, 2, 8)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..audit.ledger import Ledger
from ..corpus.ranks import RankStream, rank_stream, rank_stream_from_parquet
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import feed_all
from ..engine.events import Placement
from ..engine.policies import POLICIES, PackerConfig
from ..engine.replay import Engine, make_packer
from ..errors import InputError
from ..lengths import validate_lengths
from .executors import LazyItems, ResultRejected, open_runner
from .merge import RanksSummary, RankSummary

__all__ = ["NANOCHAT_ROW_GROUP_SIZE", "ParquetSource", "RowGroups", "audit_rank", "audit_ranks",
           "length_row_groups"]

NANOCHAT_ROW_GROUP_SIZE = 1024
"""Documents per row group that nanochat's repackaging writes (the default for lengths inputs)."""

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ParquetSource:
    """Parquet files whose rank streams are read and tokenized inside each rank's task.

    ``tokenizer`` must be picklable (a built-in name or a module-level callable).
    """

    paths: tuple[str, ...]
    tokenizer: Any = "bytes"
    column: str = "text"
    batch_size: int = 128

    def __post_init__(self) -> None:
        if not self.paths:
            raise InputError("ParquetSource.paths is empty: give at least one parquet file")
        # read inside each rank's task, wherever it runs (a Dask worker has its own working directory)
        object.__setattr__(self, "paths", tuple(os.path.abspath(p) for p in self.paths))


@dataclass(frozen=True, eq=False)
class RowGroups:
    """Lengths already cut into row groups: ``files[f][g]`` holds row group ``g`` of file ``f``."""

    files: Sequence[Sequence[npt.NDArray[np.integer]]]

    def __post_init__(self) -> None:
        if not self.files:
            raise InputError("RowGroups.files is empty: give at least one file")


def length_row_groups(lengths: npt.ArrayLike,
                      row_group_size: int = NANOCHAT_ROW_GROUP_SIZE) -> list[Int64Array]:
    """Cut one file's lengths into row groups of ``row_group_size`` documents (views). O(groups).

    >>> [g.tolist() for g in length_row_groups([1, 2, 3, 4, 5], 2)]
    [[1, 2], [3, 4], [5]]
    """
    arr = validate_lengths(np.asarray(lengths))
    size = check_int("row_group_size", row_group_size, 1)
    return [arr[i : i + size] for i in range(0, int(arr.size), size)]


def _settings(config: PackerConfig, row_group_size: int | None, engine: str) -> tuple[tuple[str, Any], ...]:
    return (("capacity", config.capacity), ("min_buffer", config.min_buffer), ("rows", config.rows),
            ("targets", config.targets), ("passes", config.passes), ("exhausted", config.exhausted),
            ("row_group_size", row_group_size), ("engine", engine))


class _StartRows:
    """Per occurrence, the earliest row of its placements (8 bytes per occurrence), and per row the
    source tokens placed in it (an inserted BOS marker is not a source token); a stream consumer.

    :meth:`result`: the start rows of the started occurrences, by occurrence id, and the tokens per row.
    """

    _UNSET = np.iinfo(np.int64).max

    def __init__(self, occurrences: int) -> None:
        self._first: Int64Array = np.full(occurrences, self._UNSET, dtype=np.int64)
        self._tokens: Int64Array = np.zeros(0, np.int64)

    def _add(self, rows: Int64Array, tokens: Int64Array) -> None:
        top = int(rows.max()) + 1
        if top > self._tokens.size:
            self._tokens = np.concatenate([self._tokens, np.zeros(max(top, 2 * self._tokens.size)
                                                                  - self._tokens.size, np.int64)])
        np.add.at(self._tokens, rows, tokens)

    def feed(self, item: EventItem) -> None:
        if type(item) is Placement:
            if item.row < self._first[item.occurrence]:
                self._first[item.occurrence] = item.row
            self._add(np.asarray([item.row], np.int64),
                      np.asarray([item.length - item.bos_inserted], np.int64))
        elif type(item) is EventBatch and item.placement.occurrence.size:
            p = item.placement
            np.minimum.at(self._first, p.occurrence, p.row)
            self._add(p.row, p.length - p.bos_inserted)

    def result(self) -> tuple[Int64Array, Int64Array]:
        started: Int64Array = self._first[self._first != self._UNSET]
        return started, self._tokens

    def _check(self) -> None:
        assert (self._first >= 0).all(), "a negative start row"
        assert (self._tokens >= 0).all(), "a negative token count"


def _replay_one(stream: RankStream, config: PackerConfig, engine: Engine,
                settings: tuple[tuple[str, Any], ...]) -> RankSummary:
    cfg = replace(config, refill=stream.refill)
    packer = make_packer(engine, cfg)
    agg, (start_rows, row_tokens) = feed_all(packer.stream(stream.lengths), Ledger.for_packer(packer),
                                             _StartRows(int(stream.lengths.size) * cfg.passes))
    if start_rows.size != agg.started_sources:
        raise InputError(f"rank {stream.rank}: {start_rows.size} occurrences placed, the ledger counts "
                         f"{agg.started_sources} started")
    return RankSummary.from_counts(
        rank=stream.rank, world_size=stream.world_size, policy=cfg.policy, documents=int(stream.lengths.size),
        tokens=int(stream.lengths.sum(dtype=np.int64)), rows=agg.rows, start_rows=start_rows,
        row_tokens=row_tokens[: agg.rows + 1],
        distinct_started=agg.distinct_sources_started, settings=settings, row_groups=len(stream.row_groups),
        stop_reason=agg.stop_reason, arrived=agg.arrived_sources, protected_members=agg.protected.members,
        protected_started=agg.protected.started_members, emitted_tokens=agg.mass.emitted_tokens,
        discarded_tokens=agg.mass.discarded_tokens, buffered_tokens=agg.mass.buffered_tokens,
        identity_holds=agg.mass.identity_holds)


def audit_rank(source: RankStream | ParquetSource, rank: int, world_size: int,
               configs: Sequence[PackerConfig], engine: Engine,
               settings: tuple[tuple[str, Any], ...]) -> tuple[RankSummary, ...]:
    """One rank's task: build (parquet) or take its stream and replay it under every config.

    Complexity: one replay per config, O(events) each; memory one ledger.
    """
    if isinstance(source, ParquetSource):
        stream = rank_stream_from_parquet(list(source.paths), source.tokenizer, rank, world_size,
                                          column=source.column, batch_size=source.batch_size)
    else:
        stream = source
    return tuple(_replay_one(stream, cfg, engine, settings) for cfg in configs)


def audit_ranks(
    source: npt.ArrayLike | Sequence[npt.ArrayLike] | ParquetSource | RowGroups,
    world_size: int,
    config: PackerConfig | None = None,
    *,
    policies: Sequence[str] | None = None,
    row_group_size: int = NANOCHAT_ROW_GROUP_SIZE,
    batch_size: int = 128,
    engine: Engine = "fast",
    executor: object = None,
    workers: int = 1,
    retries: int = 1,
    execution: dict[str, Any] | None = None,
) -> tuple[RanksSummary, ...]:
    """Replay every rank of a ``world_size``-rank nanochat run; one merged summary per policy.

    Args:
        source: one lengths array (one file), a list of arrays (one per file,
            e.g. per seed-002 shard), a :class:`RowGroups`, or a :class:`ParquetSource`.
        world_size: ``W >= 1``.
        config: the loader settings (default :class:`PackerConfig`); ``refill`` is
            replaced by each rank's batch sequence.
        policies: streaming policies (default ``config.policy``); peers are refused.
        row_group_size: documents per row group of a lengths input.
        batch_size: tokenizer batch size (nanochat: 128).
        executor, workers, retries: see :func:`~packing_theory.distributed.executors.open_runner`
            (``None``: in this process).
        execution: a dict to fill with who ran what: ``{"executor": spec, "tasks": [{"rank",
            "worker", "attempts"}, ...]}`` (kept out of the summaries, which are equal whatever ran them).

    Complexity: one task per rank, each one replay per policy (O(that rank's events)); with
    ``engine="compiled"`` (the ``fast`` extra) the ledger and the first-row tracking take column
    batches instead of one Python object per event.

    Raises:
        ValueError: ``world_size < 1``, an unknown or peer policy, a rank with no documents.
    """
    world_size = check_int("world_size", world_size, 1)
    config = config or PackerConfig()
    names = list(policies) if policies is not None else [config.policy]
    for name in names:
        if name not in POLICIES:
            raise InputError(f"policies must be streaming policies ({', '.join(POLICIES)}); got {name!r}")
    if not names or len(set(names)) != len(names):
        raise InputError(f"policies must name distinct policies, got {names}")
    configs = [replace(config, policy=name) for name in names]  # type: ignore[arg-type]
    given = isinstance(source, (ParquetSource, RowGroups))
    settings = _settings(config, None if given else check_int("row_group_size", row_group_size, 1), engine)
    if isinstance(source, ParquetSource):
        tasks: list[tuple[Any, ...]] | LazyItems = [(source, r, world_size, configs, engine, settings)
                                                    for r in range(world_size)]
    else:
        groups = ([list(f) for f in source.files] if isinstance(source, RowGroups)
                  else [length_row_groups(f, row_group_size) for f in _files(source)])
        rank_stream(groups, world_size - 1, world_size, batch_size=batch_size)  # refuse an empty rank now

        def make(r: int) -> tuple[Any, ...]:  # built when submitted: one rank's stream per task in flight
            return (rank_stream(groups, r, world_size, batch_size=batch_size), r, world_size, configs,
                    engine, settings)

        tasks = LazyItems(world_size, make)
    out = {name: RanksSummary.empty(world_size, name, settings) for name in names}
    results: dict[int, tuple[RankSummary, ...]] = {}

    def accept(r: int, value: Any) -> None:  # checked before it is accepted
        if not (isinstance(value, tuple) and len(value) == len(configs)
                and all(isinstance(s, RankSummary) and s.rank == r for s in value)):
            raise ResultRejected(f"rank task {r} returned {type(value).__name__}, "
                                 f"not {len(configs)} RankSummary")
        for s in value:
            try:
                s._check()
            except AssertionError as exc:  # a rejected result: the runner reruns it, on every executor
                raise ResultRejected(f"rank task {r} returned a summary that fails its check: {exc}") from exc

    with open_runner(executor, workers=workers, retries=retries) as runner:
        records = runner.run(audit_rank, tasks, on_result=results.__setitem__, accept=accept, label="rank")
    if execution is not None:
        execution.update(executor=runner.spec, tasks=[{"rank": r.index, **r.to_dict()} for r in records])
    for r in sorted(results):
        for summary in results[r]:
            out[summary.policy] = out[summary.policy].merge(RanksSummary.of(summary))
    return tuple(out[name] for name in names)


def _files(source: npt.ArrayLike | Sequence[npt.ArrayLike]) -> list[Int64Array]:
    if isinstance(source, np.ndarray):
        return [validate_lengths(source)]
    if isinstance(source, Sequence) and source and all(isinstance(f, np.ndarray) for f in source):
        return [validate_lengths(np.asarray(f), name=f"source[{i}]") for i, f in enumerate(source)]
    return [validate_lengths(np.asarray(source))]
