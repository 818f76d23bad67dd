"""One stratum's coverage summary from values streamed in order: numpy's mean and median, bit for bit.

The ledger reports, per length stratum, the mean and median of each
occurrence's *coverage* (emitted / length), as ``numpy.mean`` and
``numpy.median`` of the values in occurrence order give them. Held whole,
those values cost 8 bytes per occurrence (2.8 GB for the largest stratum of a
billion documents). :class:`CoverageSummary` takes them in blocks instead:

* the **mean** with :class:`PairwiseSum`, which adds the values with numpy's
  own pairwise summation tree. numpy's float64 ``add.reduce`` of ``n``
  contiguous values splits ``n > 128`` values at ``n2 = n // 2`` rounded down
  to a multiple of 8 and adds the two halves' sums; any subtree of at most
  ``leaf`` values is therefore exactly ``numpy.add.reduce`` of that slice.
  The summer plans the tree's top from ``n``, reduces each leaf slice with
  numpy as its values arrive, and adds the leaf sums in the tree's order —
  the same float operations in the same order, so the same bits (the tests
  compare it with ``numpy.mean`` on many sizes and feeds);
* the **median** with :class:`MedianSelect`, an exact radix selection on the
  values' bit patterns (coverage is never negative, so the unsigned bits
  order as the values do): a histogram of the top 16 bits with each bucket's
  least and greatest value finds the bucket of the middle rank(s); a bucket
  holding a single value answers at once, a small one is collected and
  partitioned, a large one is refined by the next 16 bits in another pass.
  Beside the histogram the first pass keeps the values between two quantiles
  of the first 65,536 values and counts the values below them: when the middle
  ranks fall among those kept (the stream is about stationary) they settle the
  median in that one pass. A stratum of at most :data:`DIRECT_LIMIT` values is
  simply kept whole in the first pass. The middle values are then averaged as
  ``numpy.median`` does.

Memory: O(leaf + 65,536) per stratum, plus at most :data:`COLLECT_LIMIT`
values while a bucket (or the first pass's middle) is collected. Most strata
need one pass (their median is 0 or 1, or among the values kept near the
middle); :attr:`MedianSelect.passes` counts them.

>>> x = np.array([0.25, 1.0, 0.5, 1.0, 0.0, 0.75])
>>> s = CoverageSummary(x.size)
>>> s.feed(x[:4]); s.feed(x[4:])
>>> s.needs_pass()
False
>>> s.result() == (6, float(np.mean(x)), float(np.median(x)), 1, 2)
True
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError

__all__ = ["COLLECT_LIMIT", "DIRECT_LIMIT", "LEAF", "CoverageSummary", "MedianSelect", "PairwiseSum"]

LEAF = 1 << 16
"""Values of the largest subtree :class:`PairwiseSum` hands to ``numpy.add.reduce`` at once."""

COLLECT_LIMIT = 1 << 22
"""The most values :class:`MedianSelect` collects from one bucket (32 MiB) instead of refining it."""

DIRECT_LIMIT = 1 << 21
"""Values up to which :class:`MedianSelect` keeps them all in its first pass (16 MiB) and needs no other."""

_BLOCK = 128  # numpy's pairwise summation block (PW_BLOCKSIZE): larger slices are split
_BUCKETS = 1 << 16
Float64Array = npt.NDArray[np.float64]


def _half(n: int) -> int:
    """Where numpy's pairwise summation splits ``n > 128`` values."""
    n2 = n // 2
    return n2 - n2 % 8


class PairwiseSum:
    """numpy's float64 ``add.reduce`` of ``n`` values fed in order, in chunks of any size (module doc).

    Args:
        n: how many values will be fed.
        leaf: the largest slice reduced by numpy at once (at least 128).

    Complexity: O(n) numpy work, O(n / leaf) Python steps; memory O(leaf + chunk).
    """

    def __init__(self, n: int, leaf: int = LEAF) -> None:
        self.n = check_int("n", n, 0)
        self.leaf = check_int("leaf", leaf, _BLOCK)
        self._plan = list(self._leaves(self.n)) if self.n else []
        self._next = 0  # the leaf being filled
        self._parts: list[Float64Array] = []
        self._have = 0
        self._sums: list[float] = []
        self.fed = 0

    def _leaves(self, n: int) -> Iterator[int]:
        if n <= self.leaf:
            yield n
            return
        n2 = _half(n)
        yield from self._leaves(n2)
        yield from self._leaves(n - n2)

    def feed(self, values: Float64Array) -> None:
        """Add the next values (float64, in order)."""
        if self.fed + values.size > self.n:
            raise InputError(f"PairwiseSum of {self.n} values fed {self.fed + values.size}")
        self.fed += int(values.size)
        if values.size:
            self._parts.append(values)
            self._have += int(values.size)
        while self._next < len(self._plan) and self._have >= self._plan[self._next]:
            size = self._plan[self._next]
            pool = np.concatenate(self._parts) if len(self._parts) > 1 else self._parts[0]
            self._sums.append(float(np.add.reduce(pool[:size])))
            rest = pool[size:]
            self._parts = [rest] if rest.size else []
            self._have -= size
            self._next += 1
        if self._parts and self._parts[-1] is values:  # keep a copy, not a view of the caller's block
            self._parts[-1] = values.copy()
        elif len(self._parts) == 1 and self._parts[0].base is not None:
            self._parts[0] = self._parts[0].copy()

    def result(self) -> float:
        """The sum (every value fed), as ``numpy.add.reduce`` of them all gives it."""
        if self.fed != self.n:
            raise InputError(f"PairwiseSum of {self.n} values fed only {self.fed}")
        if not self.n:
            return 0.0
        sums = iter(self._sums)

        def combine(n: int) -> float:
            if n <= self.leaf:
                return next(sums)
            n2 = _half(n)
            left = combine(n2)
            return left + combine(n - n2)

        return combine(self.n)

    def _check(self) -> None:
        assert sum(self._plan) == self.n and all(0 < s <= self.leaf for s in self._plan)
        assert len(self._sums) == self._next and self._have == sum(p.size for p in self._parts)
        assert self.fed == sum(self._plan[: self._next]) + self._have


class _Target:
    """One middle rank being selected: the bits known so far and its rank among the values sharing them."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.bits = 0  # leading bits fixed
        self.prefix = 0
        self.count = 0  # values with that prefix
        self.value: float | None = None
        self.collected: list[Float64Array] = []

    @property
    def group(self) -> tuple[int, int]:
        """The bits known: two targets with the same ones share one histogram."""
        return self.bits, self.prefix

    def matches(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        if not self.bits:
            return np.ones(keys.size, np.bool_)
        return np.asarray((keys >> np.uint64(64 - self.bits)) == np.uint64(self.prefix), np.bool_)


class _Guess:
    """The first pass's guess at the middle: every value between two quantiles of the first ``sample``
    values is kept, the values below it counted. When the middle ranks fall among the kept values (the
    stream is about stationary), the median is theirs and no further pass is needed; else (or when more
    than ``limit`` values fall in the interval, as ties at 0 or 1 do) the radix selection goes on."""

    def __init__(self, n: int, limit: int, sample: int) -> None:
        self.n, self.limit, self.sample = n, limit, sample
        self._first: list[Float64Array] = []
        self._have = 0
        self.bounds: tuple[float, float] | None = None
        self.below = 0
        self.kept: list[Float64Array] = []
        self._kept = 0
        self.failed = False

    def feed(self, values: Float64Array) -> None:
        if self.failed:
            return
        if self.bounds is None:
            self._first.append(values.copy())
            self._have += int(values.size)
            if self._have < min(self.sample, self.n):
                return
            first = np.concatenate(self._first)
            self._first = []
            q = 0.01 + 4.0 / float(np.sqrt(first.size))
            lo, hi = np.quantile(first, [max(0.0, 0.5 - q), min(1.0, 0.5 + q)])
            self.bounds = (float(lo), float(hi))
            values = first
        lo, hi = self.bounds
        self.below += int(np.count_nonzero(values < lo))
        kept = values[(values >= lo) & (values <= hi)]
        self._kept += int(kept.size)
        if self._kept > self.limit:
            self.failed, self.kept = True, []
            return
        self.kept.append(kept.copy() if kept.base is not None else kept)

    def resolve(self, ranks: list[int]) -> list[float] | None:
        """The values at ``ranks`` (of all ``n``) when the kept values hold them; else ``None``."""
        if self.failed:
            return None
        if self.bounds is None:  # fewer values than the sample: they are all here
            self.kept, self.below = self._first, 0
        vals = np.concatenate(self.kept) if self.kept else np.zeros(0)
        local = [r - self.below for r in ranks]
        if not all(0 <= r < vals.size for r in local):
            return None
        vals = np.partition(vals, local)
        return [float(vals[r]) for r in local]


class MedianSelect:
    """The exact median of ``n`` non-negative float64 values streamed in passes (module doc).

    ``limit``: the most values collected from one bucket (:data:`COLLECT_LIMIT`);
    ``direct``: up to this many values are simply kept in the first pass
    (:data:`DIRECT_LIMIT`); above it the first pass also keeps the values near
    the median of its first ``sample`` values, which usually settles the median
    in that pass. Feed every value once per pass (:meth:`feed`, then
    :meth:`end_pass`) while :meth:`needs_pass`; then :attr:`median` is
    ``numpy.median`` of them.
    """

    def __init__(self, n: int, limit: int = COLLECT_LIMIT, direct: int = DIRECT_LIMIT,
                 sample: int = 1 << 16) -> None:
        self.n = check_int("n", n, 0)
        self.limit = check_int("limit", limit, 0)
        ranks = sorted({(n - 1) // 2, n // 2}) if n else []
        self._targets = [_Target(r) for r in ranks]
        self._all: list[Float64Array] | None = [] if n <= check_int("direct", direct, 0) else None
        self._guess = (None if self._all is not None  # its middle: at most DIRECT_LIMIT values (16 MiB)
                       else _Guess(n, min(self.limit, DIRECT_LIMIT), check_int("sample", sample, 1)))
        self.passes = 0
        self._start()

    def needs_pass(self) -> bool:
        """Whether a value is still unknown (another pass over the values is needed)."""
        return any(t.value is None for t in self._targets)

    def _start(self) -> None:
        self._fed = 0
        if self._all is not None:
            self._hist, self._low, self._high = {}, {}, {}
            return
        groups = {t.group for t in self._targets if t.value is None}  # targets sharing bits share the work
        self._hist = {g: np.zeros(_BUCKETS, np.int64) for g in groups}
        self._low = {g: np.full(_BUCKETS, np.inf) for g in groups}
        self._high = {g: np.full(_BUCKETS, -np.inf) for g in groups}

    def _collecting(self, t: _Target) -> bool:
        return t.bits > 0 and t.count <= self.limit

    def feed(self, values: Float64Array) -> None:
        """The next values of this pass (in any order within the pass)."""
        if not values.size:
            return
        self._fed += int(values.size)
        if self._all is not None:
            self._all.append(values.copy())
            return
        if self._guess is not None:
            self._guess.feed(values)
        keys = values.view(np.uint64)
        done: set[tuple[int, int]] = set()
        for t in self._targets:
            if t.value is not None or (not self._collecting(t) and t.group in done):
                continue
            sel = t.matches(keys)
            if self._collecting(t):
                t.collected.append(values[sel].copy())
                continue
            done.add(t.group)
            v = values[sel] if t.bits else values
            k = keys[sel] if t.bits else keys
            bucket = ((k >> np.uint64(48 - t.bits)) & np.uint64(_BUCKETS - 1)).astype(np.intp)
            self._hist[t.group] += np.bincount(bucket, minlength=_BUCKETS)
            np.minimum.at(self._low[t.group], bucket, v)
            np.maximum.at(self._high[t.group], bucket, v)

    def end_pass(self) -> None:
        """Close a pass: resolve what it determined, and prepare the next one."""
        if self._fed != self.n:
            raise InputError(f"MedianSelect of {self.n} values fed {self._fed} in a pass")
        self.passes += 1
        if self._all is not None:
            vals = np.concatenate(self._all) if self._all else np.zeros(0)
            self._all = None
            if vals.size != self.n:
                raise InputError(f"MedianSelect of {self.n} values fed {vals.size} in a pass")
            if self._targets:
                ranks = [t.rank for t in self._targets]
                vals = np.partition(vals, ranks)
                for t in self._targets:
                    t.value = float(vals[t.rank])
        if self._guess is not None:  # the first pass's guess at the middle held them: done
            guessed = self._guess.resolve([t.rank for t in self._targets])
            self._guess = None
            if guessed is not None:
                for t, v in zip(self._targets, guessed, strict=True):
                    t.value = v
        for t in self._targets:
            if t.value is not None:
                continue
            if self._collecting(t):
                vals = np.concatenate(t.collected) if t.collected else np.zeros(0)
                t.collected = []
                if vals.size != t.count:
                    raise InputError("MedianSelect: a pass fed other values than the first")
                t.value = float(np.partition(vals, t.rank)[t.rank])
                continue
            group = t.group
            hist = self._hist[group]
            if int(hist.sum()) != (t.count if t.bits else self.n):
                raise InputError(f"MedianSelect of {self.n} values fed {int(hist.sum())} in a pass")
            cum = np.cumsum(hist)
            b = int(np.searchsorted(cum, t.rank, side="right"))
            t.rank -= int(cum[b - 1]) if b else 0
            t.count = int(hist[b])
            t.prefix = (t.prefix << 16) | b
            t.bits += 16
            low, high = float(self._low[group][b]), float(self._high[group][b])
            if low == high or t.bits == 64:
                t.value = low
        self._start()

    @property
    def median(self) -> float | None:
        """``numpy.median`` of the values (``None`` for none); after the last pass."""
        if not self.n:
            return None
        if self.needs_pass():
            raise InputError("MedianSelect.median needs another pass over the values")
        middle = np.asarray([t.value for t in self._targets], np.float64)
        return float(np.mean(middle))

    def _check(self) -> None:
        assert len(self._targets) in ((0,) if not self.n else (1, 2))
        for t in self._targets:
            assert 0 <= t.bits <= 64 and t.bits % 16 == 0
            assert t.value is not None or t.bits == 0 or 0 <= t.rank < t.count


class CoverageSummary:
    """``(count, mean, median, zero, full)`` of one stratum's coverage values, as
    :func:`~packing_theory.audit.table.summarise_coverage` computes them from the whole array.

    Feed the values in occurrence order once (:meth:`feed`), then, while
    :meth:`needs_pass`, again in further passes (:meth:`feed_pass` then
    :meth:`end_pass`); then :meth:`result`.
    """

    def __init__(self, count: int) -> None:
        self.count = check_int("count", count, 0)
        self.zero = self.full = 0
        self._sum = PairwiseSum(self.count)
        self._median = MedianSelect(self.count)
        self._first = True

    def feed(self, values: Float64Array) -> None:
        """The next values of the first pass, in order."""
        self._sum.feed(values)
        self.zero += int(np.count_nonzero(values == 0))
        self.full += int(np.count_nonzero(values == 1))
        self._median.feed(values)

    def needs_pass(self) -> bool:
        """Whether the median needs another pass over the values (closes the first pass)."""
        if self._first:
            self._first = False
            self._median.end_pass()
        return self._median.needs_pass()

    def feed_pass(self, values: Float64Array) -> None:
        """The next values of a further pass."""
        self._median.feed(values)

    def end_pass(self) -> None:
        """Close a further pass."""
        self._median.end_pass()

    def result(self) -> tuple[int, float | None, float | None, int, int]:
        """``(sources, mean, median, zero, full)``."""
        if not self.count:
            return 0, None, None, 0, 0
        if self.needs_pass():
            raise InputError("CoverageSummary.result() needs another pass over the values")
        mean = float(np.float64(self._sum.result()) / np.float64(self.count))
        return self.count, mean, self._median.median, self.zero, self.full

    def _check(self) -> None:
        self._sum._check()
        self._median._check()
        assert 0 <= self.zero + self.full <= self._sum.fed
