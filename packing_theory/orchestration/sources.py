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

from ..audit.declared import DeclaredMixture
from ..audit.ledger import Ledger
from ..audit.sources import (
    DEFAULT_BLOCKS,
    DRIFT_THRESHOLD,
    MixtureDrift,
    MixtureSeries,
    SourceAccount,
    SourceShare,
    funnel_table,
    mixture_drift,
    realised_mixture,
    source_accounts,
)
from ..corpus.funnel import Funnel, FunnelResult
from ..corpus.labels import SourceLabels
from ..engine.consumers import feed_all
from ..engine.policies import POLICIES, PackerConfig
from ..engine.replay import Engine, make_packer
from ..errors import InputError
from ..lengths import validate_lengths
from ..registry import entry
from ..registry import names as packer_names

__all__ = ["PackerSources", "SourcesResult", "audit_sources", "packer_sources"]


@dataclass(frozen=True)
class PackerSources:
    """One packer's data-source audit at its horizon."""

    policy: str
    rows: int
    stop_reason: str
    accounts: tuple[SourceAccount, ...]
    shares: tuple[SourceShare, ...] | None
    drift: MixtureDrift
    funnel: dict[str, dict[str, Any]]

    @property
    def reconciles(self) -> bool:
        """Every source's accounting and funnel reconcile."""
        return all(a.reconciles for a in self.accounts) and all(f["reconciles"] for f in self.funnel.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "policy": self.policy,
            "rows": self.rows,
            "stop_reason": self.stop_reason,
            "reconciles": self.reconciles,
            "accounts": [a.to_dict() for a in self.accounts],
            "shares": None if self.shares is None else [s.to_dict() for s in self.shares],
            "drift": self.drift.to_dict(),
            "funnel": self.funnel,
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
    agg, matrix, *_ = feed_all(events, ledger, MixtureSeries(labels), *also)
    arrays = ledger.arrays()
    accounts = source_accounts(arrays, labels)
    shares = None if mixture is None else realised_mixture(accounts, mixture)
    drift = mixture_drift(
        matrix,
        labels.names,
        blocks=blocks,
        threshold=threshold,
        alpha=None if mixture is None else mixture.alpha,
    )
    table = funnel_table(funnel, raw_labels, raw_lengths, accounts, arrays)
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
        undeclared = sorted(set(labels.names) - set(mixture.alpha))
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
