"""Startup delay over permutations: when does the first over-capacity source start (seed 000 §5.1)?

The startup corollary bounds when a long occurrence can begin; the delay
actually realised depends on arrival order. :func:`startup_delays` replays
random permutations of one length multiset, each only up to its first long
placement, and reports the spread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import EventBatch
from ..engine.events import Placement, first_target
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.replay import Engine, make_packer

__all__ = ["StartupSpread", "permutation_states", "startup_delay", "startup_delay_all", "startup_delays",
           "startup_delays_many"]

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class StartupSpread:
    """Startup delay (first over-capacity target) over random permutations of one length multiset.

    ``delays[i]`` is ``None`` when permutation ``i`` emitted no long source
    within the budget. Computed by replaying each permutation only up to its
    first long placement.
    """

    policy: str
    permutations: int
    seed: int
    delays: tuple[int | None, ...]

    def _known(self) -> list[int]:
        return sorted(d for d in self.delays if d is not None)

    @property
    def minimum(self) -> int | None:
        """Smallest delay (``None`` if no permutation started a long source)."""
        k = self._known()
        return k[0] if k else None

    @property
    def maximum(self) -> int | None:
        """Largest delay among permutations that started a long source."""
        k = self._known()
        return k[-1] if k else None

    @property
    def median(self) -> float | None:
        """Median delay among permutations that started a long source."""
        k = self._known()
        return float(np.median(k)) if k else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"policy": self.policy, "permutations": self.permutations, "seed": self.seed,
                "delays": list(self.delays), "min": self.minimum, "median": self.median,
                "max": self.maximum}


def startup_delays(
    lengths: LengthsInput,
    config: PackerConfig | None = None,
    *,
    permutations: int = 20,
    seed: int = 0,
    engine: Engine = "fast",
    executor: Executor | None = None,
    **kwargs: Any,
) -> StartupSpread:
    """Startup delay over ``permutations`` random orders of the same lengths (seed 000 §5.1 used 20).

    Each replay stops at its first placement of a long occurrence (original
    length ``> R``), so the cost is that of the replay prefix, not the budget.
    Permutation ``i`` is the ``i``-th ``permutation`` draw of
    ``numpy.random.default_rng(seed)``; with an ``executor`` (any
    :class:`concurrent.futures.Executor`) the replays run there, each from the
    generator state saved before its draw, so the delays do not depend on the
    executor or on the completion order.

    >>> s = startup_delays([3, 9, 2, 4, 10, 1] * 5, capacity=8, min_buffer=3, refill=2, permutations=4)
    >>> s.permutations, len(s.delays), s.minimum is not None
    (4, 4, True)
    """
    config = resolve_config(config, kwargs, PackerConfig)
    check_int("permutations", permutations, 1)
    from ..lengths import validate_lengths

    base = validate_lengths(np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths))
    if executor is None:
        delays = [d[0] for d in startup_delays_many(base, [config], permutations, seed, engine)]
    else:
        futures = [executor.submit(startup_delay, base, config, state, engine)
                   for state in permutation_states(base.size, permutations, seed)]
        delays = [f.result() for f in futures]
    return StartupSpread(config.policy, int(permutations), int(seed), tuple(delays))


def startup_delays_many(base: Int64Array, configs: Sequence[PackerConfig], permutations: int, seed: int,
                        engine: Engine = "fast", progress: Callable[[int], None] | None = None
                        ) -> list[list[int | None]]:
    """Per permutation, the startup delay under each of ``configs`` (each permutation drawn once).

    ``progress`` is called with the number of permutations done after each one.
    """
    rng = np.random.default_rng(seed)
    out = []
    for k in range(permutations):
        perm = rng.permutation(base)
        out.append([_delay(perm, cfg, engine) for cfg in configs])
        if progress is not None:
            progress(k + 1)
    return out


def permutation_states(n: int, permutations: int, seed: int) -> list[Mapping[str, Any]]:
    """The generator state before each of ``permutations`` draws of ``default_rng(seed).permutation(n)``.

    O(permutations * n): each draw is made (and dropped) to reach the next state.
    """
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(permutations):
        states.append(rng.bit_generator.state)
        rng.permutation(n)  # a permutation of n consumes what a permutation of an n-array does
    return states


def startup_delay(base: Int64Array, config: PackerConfig, state: Mapping[str, Any], engine: Engine = "fast"
                  ) -> int | None:
    """First over-capacity target of one permutation (``state``: a saved ``PCG64`` state), or ``None``."""
    return startup_delay_all(base, [config], state, engine)[0]


def startup_delay_all(base: Int64Array, configs: Sequence[PackerConfig], state: Mapping[str, Any],
                      engine: Engine = "fast") -> list[int | None]:
    """:func:`startup_delay` under each of ``configs``, drawing the permutation once (an executor task)."""
    gen = np.random.Generator(np.random.PCG64())
    gen.bit_generator.state = state
    perm = gen.permutation(base)
    return [_delay(perm, cfg, engine) for cfg in configs]


def _delay(perm: Int64Array, config: PackerConfig, engine: Engine) -> int | None:
    R = config.capacity
    # the search stops at the first long placement, a short prefix of the stream (the engines read
    # an array a refill batch or an input chunk at a time: the rest is never converted)
    items = make_packer(engine, config).stream(perm)
    try:
        for item in items:
            if type(item) is Placement:
                if perm[item.source] > R:
                    return item.first_target(R)
            elif type(item) is EventBatch:
                p = item.placement
                hit = np.flatnonzero(perm[p.source] > R)
                if hit.size:
                    i = int(hit[0])
                    return int(first_target(int(p.row[i]), int(p.offset[i]), R))
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
    return None
