"""The source mixture of each seed-002 shard, and the gate that every shard holds enough sources.

Seed 002 merges its 15 sources by largest-deficit round-robin and gates the
build on every shard holding at least half of the distinct sources: the first
build passed every other check while its first third was nothing but web text
(its E-016), which only ``distinct_sources_per_shard_min: 1`` revealed. Its
published mix had 15 of 15 sources in every shard against a floor of 7.

:func:`shard_mixture` reads a manifest's per-shard ``source_counts``
(documents per source) and, when present, ``source_tokens`` (tokens per
source) and returns, per shard, the distinct sources and the share of each
source, with the minimum, median and maximum of the distinct counts and the
shards below the gate. The default gate is :func:`default_min_sources`: half
of the mix's distinct sources, rounded down, at least 1 — 7 of 15, seed
002's floor.

>>> m = {"shards": [{"path": "a", "n_docs": 4, "source_counts": {"web": 3, "code": 1}},
...                 {"path": "b", "n_docs": 2, "source_counts": {"web": 2}}]}
>>> mix = shard_mixture(m)
>>> mix.sources, mix.min_sources, mix.distinct_min, mix.distinct_max, mix.below
(('code', 'web'), 1, 1, 2, ())
>>> mix.shards[0].document_shares
{'code': 0.25, 'web': 0.75}
>>> shard_mixture(m, min_sources=2).below
('b',)
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import check_int
from ..errors import InputError

__all__ = ["MixtureSummary", "ShardMixture", "default_min_sources", "shard_mixture"]


def default_min_sources(n_sources: int) -> int:
    """The default gate: ``max(1, n_sources // 2)`` (seed 002: 7 of 15).

    >>> default_min_sources(15), default_min_sources(4), default_min_sources(1)
    (7, 2, 1)
    """
    return max(1, check_int("n_sources", n_sources, 0) // 2)


@dataclass(frozen=True)
class ShardMixture:
    """One shard's sources: distinct count and shares (documents, and tokens when the manifest has them)."""

    path: str
    documents: int
    distinct: int
    document_shares: dict[str, float]
    token_shares: dict[str, float] | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"path": self.path, "documents": self.documents, "distinct": self.distinct,
                "document_shares": self.document_shares, "token_shares": self.token_shares}


@dataclass(frozen=True)
class MixtureSummary:
    """The mixture of every shard that records its sources, and the gate.

    Attributes:
        sources: the distinct sources of the whole mix (sorted).
        shards: one entry per shard with ``source_counts``, in manifest order.
        unrecorded: shards without ``source_counts``.
        min_sources: the gate applied.
        default_min_sources: :func:`default_min_sources` of ``len(sources)``.
        below: the shards holding fewer than ``min_sources`` sources.
    """

    sources: tuple[str, ...]
    shards: tuple[ShardMixture, ...]
    unrecorded: tuple[str, ...]
    min_sources: int
    default_min_sources: int
    below: tuple[str, ...]

    def _distinct(self) -> list[int]:
        return [s.distinct for s in self.shards]

    @property
    def distinct_min(self) -> int | None:
        """Fewest distinct sources in a shard (``None`` without recorded shards)."""
        return min(self._distinct(), default=None)

    @property
    def distinct_median(self) -> float | None:
        """Median distinct sources per shard."""
        d = self._distinct()
        return float(statistics.median(d)) if d else None

    @property
    def distinct_max(self) -> int | None:
        """Most distinct sources in a shard."""
        return max(self._distinct(), default=None)

    def share_range(self, source: str) -> tuple[float, float]:
        """The smallest and largest document share of ``source`` over the shards."""
        shares = [s.document_shares.get(source, 0.0) for s in self.shards]
        return (min(shares), max(shares)) if shares else (0.0, 0.0)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the per-shard shares included)."""
        return {"sources": list(self.sources), "min_sources": self.min_sources,
                "default_min_sources": self.default_min_sources,
                "distinct": {"min": self.distinct_min, "median": self.distinct_median,
                             "max": self.distinct_max},
                "below": list(self.below), "unrecorded": list(self.unrecorded),
                "shards": [s.to_dict() for s in self.shards]}


def _shares(counts: Mapping[str, Any], total: int) -> dict[str, float]:
    return {k: (int(v) / total if total else 0.0) for k, v in sorted(counts.items()) if int(v) > 0}


def shard_mixture(manifest: Mapping[str, Any], *, min_sources: int | None = None) -> MixtureSummary:
    """Per-shard distinct sources and shares of a manifest, and the shards below ``min_sources``.

    Args:
        manifest: a shard manifest (:func:`~packing_theory.corpus.read_manifest`).
        min_sources: the gate; default :func:`default_min_sources` of the
            mix's distinct sources.

    Complexity: O(shards x sources).

    Raises:
        InputError: ``min_sources`` below 1, or above the number of distinct
            sources of the mix (no shard could pass it).
    """
    recorded = [s for s in manifest["shards"] if s.get("source_counts") is not None]
    everything = sorted({label for s in recorded for label, n in s["source_counts"].items() if int(n) > 0})
    default = default_min_sources(len(everything))
    if min_sources is None:
        need = default
    else:
        need = check_int("min_sources", min_sources, 1)
        if recorded and need > len(everything):
            raise InputError(f"--min-sources {need} exceeds the {len(everything)} distinct sources of the "
                             f"mix ({', '.join(everything)}): no shard could hold that many")
    shards = []
    for s in recorded:
        counts = s["source_counts"]
        tokens = s.get("source_tokens")
        shards.append(ShardMixture(
            path=s["path"], documents=int(s["n_docs"]),
            distinct=sum(1 for v in counts.values() if int(v) > 0),
            document_shares=_shares(counts, sum(int(v) for v in counts.values())),
            token_shares=None if tokens is None else _shares(tokens, sum(int(v) for v in tokens.values()))))
    return MixtureSummary(
        sources=tuple(everything), shards=tuple(shards),
        unrecorded=tuple(s["path"] for s in manifest["shards"] if s.get("source_counts") is None),
        min_sources=need, default_min_sources=default,
        below=tuple(m.path for m in shards if m.distinct < need))
