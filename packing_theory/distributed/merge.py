"""Per-rank audit summaries and their merge: associative, commutative, with an identity.

A :class:`RankSummary` is what one DDP rank's replay reports (one policy).
A :class:`RanksSummary` holds the summaries of a set of distinct ranks of one
world and one configuration; :meth:`RanksSummary.merge` is the union of two
such sets (refused if a rank appears twice or the worlds differ), so any split
of the ranks merged in any order and any grouping gives the same value, and
:meth:`RanksSummary.empty` is its identity. Global figures are derived from
the union:

* **sources started on any rank** and **never started anywhere**: the ranks'
  row groups are disjoint, so these are sums over ranks;
* **the cross-rank minimum row count** ``min_rows``: DDP ranks step in
  lockstep, so training stops when the first rank runs out; and what is
  started when every rank is truncated to ``min_rows`` rows (each rank keeps
  how many occurrences got their first token in each row: O(rows) memory,
  not O(documents)).

>>> a = RankSummary.from_counts(rank=0, world_size=2, policy="discard", documents=4, tokens=40, rows=3,
...                             start_rows=[0, 0, 2], distinct_started=3)
>>> b = RankSummary.from_counts(rank=1, world_size=2, policy="discard", documents=5, tokens=50, rows=2,
...                             start_rows=[0, 1, 1, 1], distinct_started=4)
>>> s = RanksSummary.of(a).merge(RanksSummary.of(b))
>>> s == RanksSummary.of(b).merge(RanksSummary.of(a)), s.complete, s.min_rows, s.started_at_min_rows
(True, True, 2, 6)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError

__all__ = ["RankSummary", "RanksSummary"]

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RankSummary:
    """One rank's replay under one policy.

    Attributes:
        rank, world_size, policy: which replay.
        settings: the other settings that must agree to merge (capacity, B, budget, row-group size...).
        documents, tokens: the rank's stream (sources and BOS-inclusive tokens).
        row_groups: row groups the rank read.
        rows: complete rows emitted; ``stop_reason`` from the Horizon.
        arrived, started: source occurrences that arrived / got at least one token.
        distinct_started: distinct sources started (``documents - distinct_started`` never started).
        protected_members, protected_started: size of the protected set K at the horizon and its
            started members (0 for ``discard`` / ``continue`` by the proposition).
        emitted_tokens, discarded_tokens, buffered_tokens, identity_holds: the mass partition.
        starts_per_row: ``starts_per_row[i]`` occurrences got their first token in row ``i``
            (``rows + 1`` entries; the last is the partial row after the horizon).
        tokens_per_row: source tokens placed in each row (the same ``rows + 1`` entries), or ``None``
            when not counted.
    """

    rank: int
    world_size: int
    policy: str
    documents: int
    tokens: int
    rows: int
    starts_per_row: Int64Array
    distinct_started: int
    settings: tuple[tuple[str, Any], ...] = ()
    row_groups: int = 0
    stop_reason: str = ""
    arrived: int = -1
    protected_members: int = 0
    protected_started: int = 0
    emitted_tokens: int = 0
    discarded_tokens: int = 0
    buffered_tokens: int = 0
    identity_holds: bool = True
    tokens_per_row: Int64Array | None = None

    @classmethod
    def from_counts(cls, *, rank: int, world_size: int, policy: str, documents: int, tokens: int,
                    rows: int, start_rows: Sequence[int] | Int64Array, distinct_started: int,
                    row_tokens: Sequence[int] | Int64Array | None = None, **kwargs: Any) -> RankSummary:
        """Build one from plain values: ``start_rows`` lists the first row of each started occurrence
        (any order); ``row_tokens`` the source tokens placed in each row (rows beyond it: none);
        ``arrived`` defaults to ``documents``. O(started + rows)."""
        if row_tokens is not None:
            per = np.zeros(rows + 1, np.int64)
            got = np.asarray(row_tokens, np.int64)[: rows + 1]
            per[: got.size] = got
            kwargs["tokens_per_row"] = per
        first = np.asarray(start_rows, dtype=np.int64)
        if first.size and (int(first.min()) < 0 or int(first.max()) > rows):
            raise InputError(f"start_rows must lie in 0..rows={rows}, got "
                             f"{int(first.min())}..{int(first.max())}")
        kwargs.setdefault("arrived", documents)
        out = cls(rank=rank, world_size=world_size, policy=policy, documents=documents, tokens=tokens,
                  rows=rows, starts_per_row=np.bincount(first, minlength=rows + 1).astype(np.int64),
                  distinct_started=distinct_started, **kwargs)
        out._check()
        return out

    @property
    def started(self) -> int:
        """Occurrences started."""
        return int(self.starts_per_row.sum())

    @property
    def never_started(self) -> int:
        """Sources of this rank never started."""
        return self.documents - self.distinct_started

    def started_within(self, rows: int) -> int:
        """Occurrences whose first token lies in rows ``0 .. rows - 1``. O(rows)."""
        return int(self.starts_per_row[: check_int("rows", rows, 0)].sum())

    def trained_within(self, rows: int) -> int | None:
        """Source tokens placed in rows ``0 .. rows - 1`` (``None`` when not counted). O(rows)."""
        if self.tokens_per_row is None:
            return None
        return int(self.tokens_per_row[: check_int("rows", rows, 0)].sum())

    def _check(self) -> None:
        """Check the summary's invariants; ``AssertionError`` naming the first that fails.

        Explicit raises, not ``assert`` statements: the rank runner uses this check to reject
        a worker's result, so it must hold under ``python -O`` too. O(rows).
        """
        s = self.starts_per_row
        checks = (
            (0 <= self.rank < self.world_size, "0 <= rank < world_size"),
            (s.dtype == np.int64 and s.ndim == 1, "starts_per_row is a 1-D int64 array"),
            (s.size == self.rows + 1, "starts_per_row has one count per row and one for the partial row"),
            (bool((s >= 0).all()), "starts_per_row >= 0"),
            (self.tokens_per_row is None or (self.tokens_per_row.shape == s.shape
                                             and bool((self.tokens_per_row >= 0).all())),
             "tokens_per_row has one count >= 0 per row and one for the partial row"),
            (0 <= self.distinct_started <= min(self.documents, self.started),
             "0 <= distinct_started <= min(documents, started)"),
            (self.started <= self.arrived, "started <= arrived"),
            (0 <= self.protected_started <= self.protected_members,
             "0 <= protected_started <= protected_members"),
            (self.documents >= 0 and self.tokens >= self.documents and self.rows >= 0,
             "documents >= 0, tokens >= documents, rows >= 0"),
        )
        for ok, rule in checks:
            if not ok:
                raise AssertionError(f"rank {self.rank} summary fails {rule}")

    def _key(self) -> tuple[Any, ...]:
        return (self.rank, self.world_size, self.policy, self.settings, self.documents, self.tokens,
                self.row_groups, self.rows, self.stop_reason, self.arrived, self.distinct_started,
                self.protected_members, self.protected_started, self.emitted_tokens, self.discarded_tokens,
                self.buffered_tokens, self.identity_holds, self.starts_per_row.tobytes(),
                None if self.tokens_per_row is None else self.tokens_per_row.tobytes())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RankSummary) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``starts_per_row`` summarised, not listed)."""
        return {"rank": self.rank, "documents": self.documents, "tokens": self.tokens,
                "row_groups": self.row_groups, "rows": self.rows, "stop_reason": self.stop_reason,
                "arrived": self.arrived, "started": self.started, "distinct_started": self.distinct_started,
                "never_started": self.never_started, "protected_members": self.protected_members,
                "protected_started": self.protected_started,
                "mass": {"emitted_tokens": self.emitted_tokens, "discarded_tokens": self.discarded_tokens,
                         "buffered_tokens": self.buffered_tokens, "identity_holds": self.identity_holds}}


@dataclass(frozen=True, eq=False)
class RanksSummary:
    """The summaries of distinct ranks of one world, one policy and one configuration (mergeable).

    Construct with :meth:`of` or :meth:`empty`; combine with :meth:`merge`
    (associative and commutative; :meth:`empty` is the identity). Memory: 8
    bytes per row over the ranks held.
    """

    world_size: int
    policy: str
    settings: tuple[tuple[str, Any], ...]
    ranks: tuple[RankSummary, ...] = field(default=())

    @classmethod
    def empty(cls, world_size: int, policy: str, settings: Iterable[tuple[str, Any]] = ()) -> RanksSummary:
        """No rank yet (the identity of :meth:`merge`)."""
        return cls(check_int("world_size", world_size, 1), policy, tuple(settings), ())

    @classmethod
    def of(cls, *summaries: RankSummary) -> RanksSummary:
        """The summary of the given ranks (at least one; they must share world, policy and settings)."""
        if not summaries:
            raise InputError("of() needs at least one RankSummary; use empty() for none")
        first = summaries[0]
        out = cls.empty(first.world_size, first.policy, first.settings)
        for s in summaries:
            out = out.merge(cls(s.world_size, s.policy, s.settings, (s,)))
        return out

    def merge(self, other: RanksSummary) -> RanksSummary:
        """The union of two sets of ranks. O(ranks).

        Raises:
            ValueError: different world sizes, policies or settings, or a rank in both.
        """
        if not isinstance(other, RanksSummary):
            raise InputTypeError(f"other must be a RanksSummary, got {type(other).__name__}")
        for name in ("world_size", "policy", "settings"):
            if getattr(self, name) != getattr(other, name):
                raise InputError(f"cannot merge summaries with different {name}: {getattr(self, name)!r} "
                                 f"and {getattr(other, name)!r}")
        mine = {s.rank for s in self.ranks}
        both = sorted(mine & {s.rank for s in other.ranks})
        if both:
            raise InputError(f"cannot merge: rank(s) {both} appear in both summaries")
        merged = RanksSummary(self.world_size, self.policy, self.settings,
                              tuple(sorted((*self.ranks, *other.ranks), key=lambda s: s.rank)))
        merged._check()
        return merged

    def _check(self) -> None:
        """Assert the invariants: distinct ranks in order, one world, one policy, one configuration."""
        assert self.world_size >= 1
        ranks = [s.rank for s in self.ranks]
        assert ranks == sorted(set(ranks)), "ranks must be distinct and sorted"
        for s in self.ranks:
            assert (s.world_size, s.policy, s.settings) == (self.world_size, self.policy, self.settings)
            s._check()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RanksSummary) and (self.world_size, self.policy, self.settings, self.ranks)
                == (other.world_size, other.policy, other.settings, other.ranks))

    def __hash__(self) -> int:
        return hash((self.world_size, self.policy, self.settings, self.ranks))

    @property
    def complete(self) -> bool:
        """Every rank ``0 .. world_size - 1`` is present."""
        return len(self.ranks) == self.world_size

    @property
    def documents(self) -> int:
        """Sources over the ranks held."""
        return sum(s.documents for s in self.ranks)

    @property
    def started_any(self) -> int:
        """Sources started on some rank (the ranks' sources are disjoint)."""
        return sum(s.distinct_started for s in self.ranks)

    @property
    def never_started_anywhere(self) -> int:
        """Sources started on no rank."""
        return self.documents - self.started_any

    @property
    def min_rows(self) -> int | None:
        """The fewest rows any rank emitted (``None`` without ranks): where lockstep training stops."""
        return min((s.rows for s in self.ranks), default=None)

    @property
    def started_at_min_rows(self) -> int:
        """Occurrences started when every rank is truncated to :attr:`min_rows` rows."""
        m = self.min_rows
        return 0 if m is None else sum(s.started_within(m) for s in self.ranks)

    @property
    def trained_at_min_rows(self) -> int | None:
        """Source tokens in the rows every rank trains (each truncated to :attr:`min_rows`); ``None``
        without ranks or when a rank did not count its tokens per row."""
        m = self.min_rows
        got = [s.trained_within(m) for s in self.ranks] if m is not None else [None]
        return None if any(v is None for v in got) else sum(v for v in got if v is not None)

    @property
    def identity_holds(self) -> bool:
        """The mass identity holds on every rank."""
        return all(s.identity_holds for s in self.ranks)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: per rank and global."""
        m = self.min_rows
        return {
            "world_size": self.world_size, "policy": self.policy, "settings": dict(self.settings),
            "complete": self.complete,
            "global": {"documents": self.documents, "tokens": sum(s.tokens for s in self.ranks),
                       "started_any_rank": self.started_any,
                       "never_started_anywhere": self.never_started_anywhere,
                       "started_occurrences": sum(s.started for s in self.ranks),
                       "min_rows": m, "started_at_min_rows": self.started_at_min_rows,
                       "trained_tokens_at_min_rows": self.trained_at_min_rows,
                       "identity_holds": self.identity_holds},
            "ranks": [dict(s.to_dict(), started_at_min_rows=s.started_within(m) if m is not None else 0,
                           trained_tokens_at_min_rows=None if m is None else s.trained_within(m))
                      for s in self.ranks],
        }
