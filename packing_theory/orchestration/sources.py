"""The data-source audit: each packer's per-source accounting, realised mixture, drift and funnel.

:func:`audit_sources` replays one labelled corpus under each chosen packer
(streaming policies and peers), feeds each event stream to a
:class:`~packing_theory.audit.Ledger` and a
:class:`~packing_theory.audit.sources.MixtureSeries` in one pass, and sums
per data source (:mod:`packing_theory.audit.sources`). With a declared
mixture it sets the trained share against α; with a cleaning funnel
(:class:`~packing_theory.corpus.funnel.Funnel`) the corpus given is the raw
one, the packers replay what the funnel kept, and the funnel is reported
per source from raw to trained. ``packing-theory audit --mixture FILE`` and
``compare --mixture FILE`` are this function plus
:mod:`packing_theory.rendering.sources`.

>>> import numpy as np
>>> from packing_theory.corpus.labels import SourceLabels
>>> from packing_theory.engine.policies import PackerConfig
>>> labels = SourceLabels.from_strings(["a", "b"] * 30, origin="example")
>>> lengths = np.tile([3, 20], 30)
>>> res = audit_sources(lengths, labels, PackerConfig(capacity=8, min_buffer=4, refill=4, rows=20),
...                     policies=["discard"], blocks=2)
>>> [(a.source, a.trained_tokens > 0, a.reconciles) for a in res.packers[0].accounts]
[('a', True, True), ('b', True, True)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..audit.declared import DeclaredMixture
from ..audit.ledger import Ledger
from ..audit.source_funnel import FunnelTable, funnel_table
from ..audit.source_series import DEFAULT_BLOCKS, DRIFT_THRESHOLD, MixtureDrift, MixtureSeries, mixture_drift
from ..audit.sources import RealisedMixture, SourceAccount, merge_accounts, realised_mixture, source_accounts
from ..corpus.funnel import Funnel, FunnelResult
from ..corpus.labels import SourceLabels
from ..engine.consumers import feed_all
from ..engine.policies import POLICIES, PackerConfig
from ..engine.replay import Engine, make_packer
from ..errors import InputError
from ..lengths import validate_lengths
from ..registry import entry
from ..registry import names as packer_names

__all__ = [
    "PackerSources",
    "RankSources",
    "SourcesResult",
    "audit_sources",
    "packer_sources",
    "rank_documents",
    "rank_sources",
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


def packer_sources(
    policy: str,
    events: Any,
    ledger: Ledger,
    labels: SourceLabels,
    *,
    raw_lengths: npt.NDArray[np.int64],
    raw_labels: SourceLabels,
    funnel: FunnelResult | None,
    mixture: DeclaredMixture | None,
    blocks: int = DEFAULT_BLOCKS,
    threshold: float = DRIFT_THRESHOLD,
    also: Sequence[Any] = (),
) -> PackerSources:
    """Feed one packer's ``events`` to ``ledger`` and a :class:`MixtureSeries` and sum per source.

    ``also``: more consumers fed in the same pass (``replay``'s summary); ask
    them for their ``result()`` afterwards.
    """
    agg, series, *_ = feed_all(events, ledger, MixtureSeries(labels), *also)
    arrays = ledger.arrays()
    accounts = source_accounts(arrays, labels, series)
    shares = None if mixture is None else realised_mixture(accounts, mixture)
    drift = mixture_drift(series, mixture=mixture, blocks=blocks, threshold=threshold)
    table = funnel_table(funnel, raw_labels, raw_lengths, accounts, arrays, series)
    return PackerSources(policy, agg.rows, agg.stop_reason, accounts, shares, drift, table)


def audit_sources(
    lengths: npt.ArrayLike,
    labels: SourceLabels,
    config: PackerConfig,
    *,
    policies: Sequence[str] | None = None,
    peer_options: Mapping[str, Mapping[str, Any]] | None = None,
    seq_length: int | None = None,
    peer_widths: Mapping[str, int] | None = None,
    engine: Engine = "fast",
    mixture: DeclaredMixture | None = None,
    funnel: Funnel | FunnelResult | None = None,
    blocks: int = DEFAULT_BLOCKS,
    threshold: float = DRIFT_THRESHOLD,
) -> SourcesResult:
    """Audit the data sources of ``lengths`` (one ``labels`` entry per document) under each packer.

    Args:
        lengths: BOS-inclusive document lengths; with ``funnel``, the *raw*
            corpus (the packers replay the documents the funnel keeps).
        labels: the data source of every document of ``lengths``.
        config: the streaming loader settings (row budget, ``B``, ...); peers
            replay at row width ``config.capacity`` (or ``seq_length``'s rule).
        policies: packers, streaming and peer (default ``config.policy``).
        peer_widths: a row width per peer, overriding ``config.capacity`` and
            ``seq_length`` (``compare`` fixes them by its own rule).
        mixture: the declared mixture (α per source), or ``None``.
        funnel: the cleaning funnel (declared, or already applied), or ``None``.
        blocks: blocks of rows for the share over training time.
        threshold: the drift statistic's flag threshold.

    A peer whose framework refuses the corpus (a ``ValueError`` from its own
    rule) is listed in ``refused`` instead.

    Raises:
        InputError: labels of another length, an unknown packer, an undeclared
            source, a funnel stage whose outcome does not cover its input.

    Complexity: one replay per packer, O(events) each, plus O(documents × stages).
    """
    raw = validate_lengths(np.asarray(lengths))
    labels.check_documents(raw.size)
    result = funnel.apply(raw) if isinstance(funnel, Funnel) else funnel
    if result is not None and result.raw_documents != raw.size:
        raise InputError(
            f"the funnel was applied to {result.raw_documents} documents, the corpus has {raw.size}"
        )
    kept = raw if result is None else raw[result.keep]
    kept_labels = labels if result is None else labels.subset(result.keep)
    if kept.size == 0:
        raise InputError("the funnel removes every document: nothing reaches the packer")
    if mixture is not None:  # before any replay (a peer's refusal is told apart from this)
        undeclared = sorted(set(labels.names) - set(mixture.sources))
        if undeclared:
            raise InputError(
                f"the corpus has source(s) {undeclared} that the declared mixture does not name "
                f"(declared: {list(mixture.sources)})"
            )
    names = list(policies) if policies is not None else [config.policy]
    peers = set(packer_names("peer"))
    out: list[PackerSources] = []
    refused: list[tuple[str, str]] = []
    for name in names:
        if name in peers:
            opts = dict((peer_options or {}).get(name, {}))
            width = (
                peer_widths[name]
                if peer_widths and name in peer_widths
                else config.capacity
                if seq_length is None
                else entry(name).capacity_for(seq_length, opts)
            )
            peer = entry(name).build(width, **opts)
            events: Any = peer.events(kept)
            ledger = Ledger(peer.capacity, config.min_buffer, policy=name)
        elif name in POLICIES:
            packer = make_packer(engine, replace(config, policy=name))
            events = packer.stream(kept)
            ledger = Ledger.for_packer(packer)
        else:
            raise InputError(f"policy must be one of {', '.join(packer_names())}; got {name!r}")
        try:
            out.append(
                packer_sources(
                    name,
                    events,
                    ledger,
                    kept_labels,
                    raw_lengths=raw,
                    raw_labels=labels,
                    funnel=result,
                    mixture=mixture,
                    blocks=blocks,
                    threshold=threshold,
                )
            )
        except ValueError as exc:
            if name not in peers:
                raise
            refused.append((name, str(exc)))  # the framework's own rule refuses this corpus
    return SourcesResult(labels.names, labels.origin, mixture, result, tuple(out), tuple(refused))


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
            per[name].append(
                packer_sources(
                    name,
                    packer.stream(stream.lengths),
                    Ledger.for_packer(packer),
                    mine,
                    raw_lengths=stream.lengths,
                    raw_labels=mine,
                    funnel=None,
                    mixture=mixture,
                    blocks=blocks,
                    threshold=threshold,
                )
            )
    out = []
    for name in names:
        ranks = tuple(per[name])
        merged = merge_accounts([p.accounts for p in ranks])
        shares = None if mixture is None else realised_mixture(merged, mixture)
        out.append(RankSources(name, world_size, ranks, merged, shares))
    return tuple(out)

