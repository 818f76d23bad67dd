"""Run a census and per-rank audits in parallel: local processes, any executor, or a Dask cluster.

===========================  ==================================================================
module                       what it owns
===========================  ==================================================================
:mod:`.executors`            :func:`open_runner` (``"local"``, ``"dask://HOST:PORT"``, a
                             ``dask.distributed.Client`` or any ``concurrent.futures.Executor``),
                             :class:`TaskRunner` (retries, result checks, who ran what)
:mod:`.census`               :func:`run_census`: resumable lengths / byte lengths / text hashes
                             of text, parquet and seed-002 shard inputs, one task per input
:mod:`.parts`                one input's census (the task), the checks before a result is
                             accepted, and its part on disk
:mod:`.ranks`                :func:`audit_ranks`: every DDP rank's stream replayed as nanochat's
                             loader reads it
:mod:`.merge`                :class:`RankSummary`, :class:`RanksSummary` (an associative,
                             commutative merge)
===========================  ==================================================================

``dask`` is optional (``pip install "packing-theory[distributed]"``) and imported
only when a Dask executor is used. This layer sits between ``cli`` and
``audit``: it imports ``audit``, ``corpus``, ``engine`` and the foundation.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .census import (
        CENSUS_FILES,
        CENSUS_FORMAT,
        CensusOptions,
        CensusResult,
        ShardResult,
        census_row_groups,
        census_shard,
        run_census,
        verify_census,
    )
    from .executors import (
        DASK_INSTALL_HINT,
        ResultRejected,
        TaskFailed,
        TaskRecord,
        TaskRunner,
        import_distributed,
        open_runner,
        parse_executor_spec,
    )
    from .merge import RanksSummary, RankSummary
    from .ranks import NANOCHAT_ROW_GROUP_SIZE, ParquetSource, RowGroups, audit_ranks, length_row_groups

__all__ = [
    "CENSUS_FILES",
    "CENSUS_FORMAT",
    "DASK_INSTALL_HINT",
    "NANOCHAT_ROW_GROUP_SIZE",
    "CensusOptions",
    "CensusResult",
    "ParquetSource",
    "RankSummary",
    "RanksSummary",
    "ResultRejected",
    "RowGroups",
    "ShardResult",
    "TaskFailed",
    "TaskRecord",
    "TaskRunner",
    "audit_ranks",
    "census_row_groups",
    "census_shard",
    "import_distributed",
    "length_row_groups",
    "open_runner",
    "parse_executor_spec",
    "run_census",
    "verify_census",
]

lazy_package(__name__, {
    ".census": ("CENSUS_FILES", "CENSUS_FORMAT", "CensusOptions", "CensusResult", "ShardResult",
                "census_row_groups", "census_shard", "run_census", "verify_census"),
    ".executors": ("DASK_INSTALL_HINT", "ResultRejected", "TaskFailed", "TaskRecord", "TaskRunner",
                   "import_distributed", "open_runner", "parse_executor_spec"),
    ".merge": ("RanksSummary", "RankSummary"),
    ".ranks": ("NANOCHAT_ROW_GROUP_SIZE", "ParquetSource", "RowGroups", "audit_ranks", "length_row_groups"),
})
