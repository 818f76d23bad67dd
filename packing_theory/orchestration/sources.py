"""The data-source audit: each packer's per-source accounting, realised mixture, drift and funnel.

A measurement with source labels (:func:`~packing_theory.orchestration.audit.audit`,
:func:`~packing_theory.orchestration.compare.compare` of a
:class:`~packing_theory.orchestration.corpus.Corpus` that has them) feeds every
packer's one event stream to a :class:`~packing_theory.audit.sources.MixtureSeries`
beside the ledger (:class:`SourcePlan`), and sums per data source
(:mod:`packing_theory.audit.sources`). With a declared mixture it sets the
trained share against α; with a cleaning funnel the corpus given is the raw
one, the packers replay what the funnel kept, and the funnel is reported per
source from raw to trained. :func:`rank_sources` does the same for every DDP
rank's stream (``audit --world-size``).

>>> import numpy as np
>>> from packing_theory.corpus.labels import SourceLabels
>>> from packing_theory.orchestration import Corpus, Settings, audit_corpus
>>> labels = SourceLabels.from_strings(["a", "b"] * 30, origin="example")
>>> corpus = Corpus.from_lengths(np.tile([3, 20], 30), sources=labels)
>>> res = audit_corpus(corpus, ["discard"], Settings(capacity=8, min_buffer=4, refill=4), permutations=0,
...             mixture_blocks=2).sources
>>> [(a.source, a.trained_tokens > 0, a.reconciles) for a in res.packers[0].accounts]
[('a', True, True), ('b', True, True)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..audit.declared import DeclaredMixture
from ..audit.ledger import Ledger
from ..audit.source_funnel import FunnelTable, funnel_table
from ..audit.source_series import (
    DEFAULT_BLOCKS,
    DRIFT_THRESHOLD,
    MixtureDrift,
    MixtureSeries,
    SourceSeries,
    mixture_drift,
)
from ..audit.sources import RealisedMixture, SourceAccount, merge_accounts, realised_mixture, source_accounts
from ..corpus.funnel import FunnelResult
from ..corpus.labels import SourceLabels
from ..engine.consumers import feed_all
from ..engine.policies import POLICIES, PackerConfig
from ..engine.replay import Engine, make_packer
from ..errors import InputError
from ..lengths import validate_lengths

__all__ = [
    "PackerSources",
    "RankSources",
    "SourcePlan",
    "SourcesResult",
    "packer_sources",
    "rank_documents",
    "rank_sources",
    "sources_result",
]


@dataclass(frozen=True)
class PackerSources:
    """One packer's data-source audit at its horizon."""

    policy: str
    rows: int
    stop_reason: str
    accounts: tuple[SourceAccount, ...]
    shares: RealisedMixture | None
    drift: MixtureDrift
    funnel: FunnelTable

    @property
    def reconciles(self) -> bool:
        """Every source's accounting and funnel reconcile."""
        return all(a.reconciles for a in self.accounts) and self.funnel.reconciles

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "policy": self.policy,
            "rows": self.rows,
            "stop_reason": self.stop_reason,
            "reconciles": self.reconciles,
            "accounts": [a.to_dict() for a in self.accounts],
            "shares": None if self.shares is None else self.shares.to_dict(),
            "drift": self.drift.to_dict(),
            "funnel": self.funnel.to_dict(),
        }


@dataclass(frozen=True)
class SourcesResult:
    """The data-source audit of several packers on one labelled corpus."""

    sources: tuple[str, ...]
    labels_origin: str
    mixture: DeclaredMixture | None
    funnel: FunnelResult | None
    packers: tuple[PackerSources, ...]
    refused: tuple[tuple[str, str], ...] = ()
    """Peers whose framework's own rule refused the corpus: ``(name, why)``."""

    def packer(self, name: str) -> PackerSources:
        """One packer's part."""
        for p in self.packers:
            if p.policy == name:
                return p
        raise KeyError(f"packer {name!r} was not audited (audited: {[p.policy for p in self.packers]})")

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``sources`` section of a report."""
        return {
            "sources": list(self.sources),
            "labels": self.labels_origin,
            "mixture": None if self.mixture is None else self.mixture.to_dict(),
            "funnel": None
            if self.funnel is None
            else {
                "raw_documents": self.funnel.raw_documents,
                "raw_tokens": self.funnel.raw_tokens,
                "kept_documents": int(self.funnel.keep.sum()),
                "stages": [s.to_dict() for s in self.funnel.stages],
            },
            "packers": [p.to_dict() for p in self.packers],
            "refused": [{"policy": n, "why": w} for n, w in self.refused],
        }


@dataclass(frozen=True, eq=False)
class SourcePlan:
    """What the per-source consumers of a measurement need (picklable: it travels with each packer's task).

    ``labels`` are the sources of the replayed documents; ``raw_lengths`` and
    ``raw_labels`` the corpus before the funnel (the funnel's table counts from
    them). :meth:`series` is the consumer fed with the packer's stream and
    :meth:`account` sums it, with the ledger, per source.
    """

    labels: SourceLabels
    raw_lengths: npt.NDArray[np.int64]
    raw_labels: SourceLabels
    funnel: FunnelResult | None = None
    mixture: DeclaredMixture | None = None
    blocks: int = DEFAULT_BLOCKS
    threshold: float = DRIFT_THRESHOLD

    def __post_init__(self) -> None:
        check_int("blocks", self.blocks, 1)
        if not 0 <= self.threshold <= 1:
            raise InputError(f"threshold must be in [0, 1], got {self.threshold}")

    def series(self) -> MixtureSeries:
        """A fresh per-source series consumer for one packer's stream."""
        return MixtureSeries(self.labels)

    def account(self, policy: str, ledger: Ledger, series: SourceSeries, agg: Any) -> PackerSources:
        """One packer's per-source figures from its finished ``ledger`` and ``series``."""
        arrays = ledger.arrays()
        accounts = source_accounts(arrays, self.labels, series)
        shares = None if self.mixture is None else realised_mixture(accounts, self.mixture)
        drift = mixture_drift(series, mixture=self.mixture, blocks=self.blocks, threshold=self.threshold)
        table = funnel_table(self.funnel, self.raw_labels, self.raw_lengths, accounts, arrays, series)
        return PackerSources(policy, agg.rows, agg.stop_reason, accounts, shares, drift, table)


def packer_sources(
    policy: str,
    events: Any,
    ledger: Ledger,
    plan: SourcePlan,
    *,
    also: Sequence[Any] = (),
) -> PackerSources:
    """Feed one packer's ``events`` to ``ledger`` and ``plan``'s series and sum per source.

    ``also``: more consumers fed in the same pass (``replay``'s summary); ask
    them for their ``result()`` afterwards.
    """
    agg, series, *_ = feed_all(events, ledger, plan.series(), *also)
    return plan.account(policy, ledger, series, agg)


def sources_result(plan: SourcePlan, runs: Sequence[Any], refused: Sequence[tuple[str, str]] = ()
                   ) -> SourcesResult:
    """The data-source section of a measurement: every run's per-source figures (``run.sources``)."""
    return SourcesResult(plan.raw_labels.names, plan.raw_labels.origin, plan.mixture, plan.funnel,
                         tuple(r.sources for r in runs if r.sources is not None), tuple(refused))


@dataclass(frozen=True)
class RankSources:
    """One policy's data-source audit over every DDP rank: per rank, and merged (accounts summed)."""

    policy: str
    world_size: int
    ranks: tuple[PackerSources, ...]
    accounts: tuple[SourceAccount, ...]
    shares: RealisedMixture | None

    @property
    def reconciles(self) -> bool:
        """Every rank's accounting reconciles, and so does the merge."""
        return all(r.reconciles for r in self.ranks) and all(a.reconciles for a in self.accounts)

    @property
    def max_drift(self) -> float | None:
        """The largest drift statistic of a rank."""
        values = [r.drift.drift for r in self.ranks if r.drift.drift is not None]
        return max(values) if values else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "policy": self.policy,
            "world_size": self.world_size,
            "reconciles": self.reconciles,
            "accounts": [a.to_dict() for a in self.accounts],
            "shares": None if self.shares is None else self.shares.to_dict(),
            "max_drift": self.max_drift,
            "ranks": [
                {
                    "rank": i,
                    "rows": r.rows,
                    "stop_reason": r.stop_reason,
                    "reconciles": r.reconciles,
                    "drift": r.drift.drift,
                    "drifted": r.drift.drifted,
                    "accounts": [a.to_dict() for a in r.accounts],
                }
                for i, r in enumerate(self.ranks)
            ],
        }


def rank_documents(
    row_group_sizes: Sequence[Sequence[int]], rank: int, world_size: int
) -> npt.NDArray[np.int64]:
    """The corpus indices of the documents rank ``rank`` reads, in its arrival order (nanochat's rule).

    ``row_group_sizes[f][g]``: documents of row group ``g`` of file ``f``; the
    corpus is the files in order, each file's row groups in order; rank ``r``
    reads row groups ``r, r + W, ...`` of every file
    (:func:`~packing_theory.corpus.ranks.rank_row_groups`). O(documents of the rank).

    >>> rank_documents([[2, 2, 1], [3]], 1, 2).tolist()
    [2, 3]
    """
    from ..corpus.ranks import rank_row_groups

    parts: list[npt.NDArray[np.int64]] = []
    start = 0
    for groups in row_group_sizes:
        offsets = np.concatenate([[0], np.cumsum(np.asarray(groups, dtype=np.int64))]) + start
        for g in rank_row_groups(len(groups), rank, world_size):
            parts.append(np.arange(offsets[g], offsets[g + 1], dtype=np.int64))
        start = int(offsets[-1])
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def rank_sources(
    lengths: npt.ArrayLike,
    labels: SourceLabels,
    row_group_sizes: Sequence[Sequence[int]],
    world_size: int,
    config: PackerConfig,
    *,
    policies: Sequence[str] | None = None,
    batch_size: int = 128,
    engine: Engine = "fast",
    mixture: DeclaredMixture | None = None,
    blocks: int = DEFAULT_BLOCKS,
    threshold: float = DRIFT_THRESHOLD,
) -> tuple[RankSources, ...]:
    """The data-source audit of every rank of a ``world_size``-rank nanochat run, one result per policy.

    ``lengths`` / ``labels``: the whole corpus (files in order); ``row_group_sizes``
    cut it into row groups (:func:`rank_documents`). Each rank replays its own
    documents with its own refill sequence (a batch of ``batch_size`` restarted
    at each row group), as :func:`~packing_theory.distributed.ranks.audit_ranks`
    does; the merged accounts are the sums over ranks, the shares are recomputed
    from them. Sequential, in this process. O(events of every rank).

    Raises:
        InputError: labels or row groups that do not cover the corpus, a peer policy, a rank with no
            documents.
    """
    from ..corpus.ranks import rank_stream

    arr = validate_lengths(np.asarray(lengths))
    labels.check_documents(arr.size)
    total = sum(int(sum(g)) for g in row_group_sizes)
    if total != arr.size:
        raise InputError(f"row groups hold {total} documents for a corpus of {arr.size}")
    names = list(policies) if policies is not None else [config.policy]
    for name in names:
        if name not in POLICIES:
            raise InputError(
                f"a per-rank audit replays streaming policies ({', '.join(POLICIES)}); got {name!r}"
            )
    start = 0
    groups: list[list[npt.NDArray[np.int64]]] = []
    for sizes in row_group_sizes:
        file_groups = []
        for n in sizes:
            file_groups.append(arr[start : start + int(n)])
            start += int(n)
        groups.append(file_groups)
    per: dict[str, list[PackerSources]] = {n: [] for n in names}
    for r in range(check_int("world_size", world_size, 1)):
        stream = rank_stream(groups, r, world_size, batch_size=batch_size)
        idx = rank_documents(row_group_sizes, r, world_size)
        mine = SourceLabels(labels.names, labels.codes[idx], f"{labels.origin}, rank {r}")
        for name in names:
            cfg = replace(config, policy=name, refill=stream.refill)  # type: ignore[arg-type]
            packer = make_packer(engine, cfg)
            plan = SourcePlan(mine, stream.lengths, mine, None, mixture, blocks, threshold)
            events = packer.stream(stream.lengths)
            per[name].append(packer_sources(name, events, Ledger.for_packer(packer), plan))
    out = []
    for name in names:
        ranks = tuple(per[name])
        merged = merge_accounts([p.accounts for p in ranks])
        shares = None if mixture is None else realised_mixture(merged, mixture)
        out.append(RankSources(name, world_size, ranks, merged, shares))
    return tuple(out)

