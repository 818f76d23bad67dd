"""Hypothesis strategies for arrival streams: fuzz your own loader against the invariant.

Every function returns a :class:`hypothesis.strategies.SearchStrategy`, takes
keyword-only bounds and validates them immediately (raising
:class:`hypothesis.errors.InvalidArgument` that names the parameter). Each
docstring says what failing examples shrink towards: in general *fewer, shorter
documents, one refill size, one pass*, with lengths moving towards
``min_value`` and the special values near ``R`` kept reachable.

Typical use, with the :class:`~packing_theory.invariant.InvariantMonitor`::

    from hypothesis import given
    from packing_theory.invariant import strategies as pst

    @given(pst.replay_cases(policies=("discard", "continue")))
    def test_my_loader(case):
        lengths, config = case
        ...  # run your loader on `lengths` with `config`, monitor on every selection

Requires the ``test`` extra (``hypothesis``).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .._checks import check_bool, check_int
from ..engine.policies import EXHAUSTED_MODES, POLICIES, STREAMING_POLICIES, PackerConfig, Policy

__all__ = [
    "arrival_streams",
    "lengths",
    "packer_configs",
    "passes",
    "refill_batches",
    "replay_cases",
]



def _fraction(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
        raise InvalidArgument(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _choice(weight_last: float) -> st.SearchStrategy[bool]:
    """``True`` with probability about ``weight_last``; shrinks towards ``False``."""
    cut = round(1000 * (1 - weight_last))
    return st.integers(0, 999).map(lambda u: u >= cut)


def lengths(
    *,
    capacity: int,
    min_value: int = 1,
    max_value: int | None = None,
    tail: float = 0.3,
    near_capacity: bool = True,
    tie_pool: Sequence[int] | None = None,
) -> st.SearchStrategy[int]:
    """BOS-inclusive document lengths with a controllable long tail.

    Args:
        capacity: the row capacity ``R`` (``>= 2``); long means ``> R``.
        min_value: smallest length (``>= 1``).
        max_value: largest length (default ``4 * R``).
        tail: roughly the probability of a long length (``> R``), in ``[0, 1]``.
        near_capacity: favour the boundary values ``1, 2, R - 1, R, R + 1,
            R + 2, 2R`` (those inside the bounds).
        tie_pool: values to repeat often (heavy ties); drawn about half the time.

    Shrinks towards ``min_value`` (a short document); among long draws towards
    ``R + 1``; among tie-pool draws towards the pool's first value.
    """
    capacity = check_int("capacity", capacity, 2, error=InvalidArgument)
    min_value = check_int("min_value", min_value, 1, error=InvalidArgument)
    if max_value is None:
        max_value = 4 * capacity
    max_value = check_int("max_value", max_value, 1, error=InvalidArgument)
    if max_value < min_value:
        raise InvalidArgument(f"max_value={max_value} must be >= min_value={min_value}")
    tail = _fraction("tail", tail)
    if tail > 0 and max_value <= capacity:
        raise InvalidArgument(f"tail={tail} > 0 needs max_value > capacity, got max_value={max_value}")
    if tail < 1 and min_value > capacity:
        raise InvalidArgument(f"tail={tail} < 1 needs min_value <= capacity, got min_value={min_value}")
    pool: list[int] = []
    if tie_pool is not None:
        pool = [check_int(f"tie_pool[{i}]", v, 1, error=InvalidArgument) for i, v in enumerate(tie_pool)]
        if not pool:
            raise InvalidArgument("tie_pool must be non-empty when given")
        bad = [v for v in pool if not min_value <= v <= max_value]
        if bad:
            raise InvalidArgument(f"tie_pool values {bad} lie outside [{min_value}, {max_value}]")

    R = capacity
    special = [v for v in (1, 2, R - 1, R, R + 1, R + 2, 2 * R) if min_value <= v <= max_value]
    short_special = [v for v in special if v <= R]
    long_special = [v for v in special if v > R]

    def region(long: bool) -> st.SearchStrategy[int]:
        lo, hi = (max(min_value, R + 1), max_value) if long else (min_value, min(max_value, R))
        plain = st.integers(lo, hi)
        extra = long_special if long else short_special
        if near_capacity and extra:
            return st.one_of(plain, st.sampled_from(extra))
        return plain

    if tail == 0:
        base = region(False)
    elif tail == 1:
        base = region(True)
    else:
        base = _choice(tail).flatmap(region)
    if pool:
        return st.one_of(base, st.sampled_from(pool))
    return base


def arrival_streams(
    *,
    capacity: int,
    min_size: int = 1,
    max_size: int = 60,
    min_value: int = 1,
    max_value: int | None = None,
    tail: float = 0.3,
    ties: bool = True,
) -> st.SearchStrategy[list[int]]:
    """Lists of document lengths in arrival order (one corpus pass).

    Args:
        capacity: ``R``.
        min_size, max_size: number of documents.
        min_value, max_value, tail: as in :func:`lengths`.
        ties: draw a small pool of values first and repeat them (heavy ties).

    Shrinks towards ``min_size`` documents of length ``min_value``.
    """
    min_size = check_int("min_size", min_size, 0, error=InvalidArgument)
    max_size = check_int("max_size", max_size, 0, error=InvalidArgument)
    if max_size < min_size:
        raise InvalidArgument(f"max_size={max_size} must be >= min_size={min_size}")
    check_bool("ties", ties, error=InvalidArgument)
    element = lengths(capacity=capacity, min_value=min_value, max_value=max_value, tail=tail)
    if not ties:
        return st.lists(element, min_size=min_size, max_size=max_size)

    def with_pool(pool: list[int]) -> st.SearchStrategy[list[int]]:
        each = lengths(capacity=capacity, min_value=min_value, max_value=max_value, tail=tail,
                       tie_pool=pool)
        return st.lists(each, min_size=min_size, max_size=max_size)

    return st.lists(element, min_size=1, max_size=3).flatmap(with_pool)


def refill_batches(
    *, min_batch: int = 1, max_batch: int = 8, max_sizes: int = 4
) -> st.SearchStrategy[int | tuple[int, ...]]:
    """A refill model: one batch size, or a cycled sequence of sizes (short row-group batches).

    Shrinks towards the constant ``min_batch``.
    """
    min_batch = check_int("min_batch", min_batch, 1, error=InvalidArgument)
    max_batch = check_int("max_batch", max_batch, 1, error=InvalidArgument)
    max_sizes = check_int("max_sizes", max_sizes, 1, error=InvalidArgument)
    if max_batch < min_batch:
        raise InvalidArgument(f"max_batch={max_batch} must be >= min_batch={min_batch}")
    size = st.integers(min_batch, max_batch)
    if max_sizes == 1:
        return size
    seq = st.lists(size, min_size=2, max_size=max_sizes).map(tuple)
    return st.one_of(size, seq)


def passes(*, max_passes: int = 3) -> st.SearchStrategy[int]:
    """Number of corpus passes (the buffer persists across them). Shrinks towards 1."""
    max_passes = check_int("max_passes", max_passes, 1, error=InvalidArgument)
    return st.integers(1, max_passes)


def _policies_arg(policies: Sequence[str]) -> tuple[Policy, ...]:
    if isinstance(policies, str) or not isinstance(policies, Sequence) or not policies:
        raise InvalidArgument(f"policies must be a non-empty sequence of policy names, got {policies!r}")
    bad = [p for p in policies if p not in POLICIES]
    if bad:
        raise InvalidArgument(f"policies {bad} are not among {POLICIES}")
    return tuple(p for p in POLICIES if p in policies)


def packer_configs(
    *,
    capacity: int | None = None,
    max_capacity: int = 12,
    max_min_buffer: int = 6,
    policies: Sequence[str] = POLICIES,
    max_passes: int = 3,
    exhausted: Sequence[str] = EXHAUSTED_MODES,
    budgets: bool = True,
) -> st.SearchStrategy[PackerConfig]:
    """Valid :class:`~packing_theory.engine.policies.PackerConfig` values.

    Args:
        capacity: a fixed ``R``; otherwise drawn from ``2 .. max_capacity``.
        max_min_buffer: ``B`` is drawn from ``1 .. max_min_buffer``.
        policies: policies to draw from (order of :data:`POLICIES`).
        max_passes: passes are drawn from ``1 .. max_passes``.
        exhausted: end-of-stream modes to draw from.
        budgets: also draw ``rows`` / ``targets`` budgets (else run to the end).

    Configurations of a policy that forces starts (``bounded-wait``) get a wait threshold ``A`` in ``0 .. 8``
    so that forced starts happen on short streams.

    Shrinks towards ``R = 2`` (or the fixed capacity), ``B = 1``, refill 1, the
    first listed policy, one pass, ``"stop"``, no budget and ``A = 0``.
    """
    if capacity is not None:
        capacity = check_int("capacity", capacity, 2, error=InvalidArgument)
    max_capacity = check_int("max_capacity", max_capacity, 2, error=InvalidArgument)
    max_min_buffer = check_int("max_min_buffer", max_min_buffer, 1, error=InvalidArgument)
    pols = _policies_arg(policies)
    max_passes = check_int("max_passes", max_passes, 1, error=InvalidArgument)
    modes = [m for m in EXHAUSTED_MODES if m in exhausted]
    if isinstance(exhausted, str) or not modes or len(modes) != len(set(exhausted)):
        raise InvalidArgument(f"exhausted must be a non-empty subset of {EXHAUSTED_MODES}, got {exhausted!r}")
    check_bool("budgets", budgets, error=InvalidArgument)

    @st.composite
    def build(draw: st.DrawFn) -> PackerConfig:
        R = capacity if capacity is not None else draw(st.integers(2, max_capacity))
        kind = draw(st.sampled_from(["none", "rows", "targets"])) if budgets else "none"
        rows = draw(st.integers(0, 30)) if kind == "rows" else None
        targets = draw(st.integers(0, 30 * R)) if kind == "targets" else None
        policy = draw(st.sampled_from(pols))
        return PackerConfig(
            capacity=R,
            min_buffer=draw(st.integers(1, max_min_buffer)),
            refill=draw(refill_batches(max_batch=4)),
            policy=policy,
            seed=draw(st.integers(0, 2**32)),
            passes=draw(passes(max_passes=max_passes)),
            rows=rows,
            targets=targets,
            exhausted=draw(st.sampled_from(modes)),
            max_wait=draw(st.integers(0, 8)) if STREAMING_POLICIES[policy].forced_start else None,
        )

    return build()


def replay_cases(
    *,
    max_capacity: int = 12,
    max_min_buffer: int = 6,
    max_docs: int = 60,
    policies: Sequence[str] = POLICIES,
    max_passes: int = 3,
    exhausted: Sequence[str] = EXHAUSTED_MODES,
    budgets: bool = True,
    tail: float = 0.3,
) -> st.SearchStrategy[tuple[list[int], PackerConfig]]:
    """``(lengths, config)`` pairs whose lengths are drawn relative to the config's ``R``.

    Lengths follow :func:`arrival_streams` (ties, boundary values around ``R``,
    long documents up to ``3R``); the config follows :func:`packer_configs`.

    Shrinks towards one document of length 1 under the smallest config.
    """
    max_docs = check_int("max_docs", max_docs, 1, error=InvalidArgument)
    configs = packer_configs(max_capacity=max_capacity, max_min_buffer=max_min_buffer, policies=policies,
                             max_passes=max_passes, exhausted=exhausted, budgets=budgets)
    _fraction("tail", tail)

    def with_lengths(config: PackerConfig) -> st.SearchStrategy[tuple[list[int], PackerConfig]]:
        docs = arrival_streams(capacity=config.capacity, min_size=1, max_size=max_docs,
                               max_value=3 * config.capacity, tail=tail)
        return st.tuples(docs, st.just(config))

    return configs.flatmap(with_lengths)
