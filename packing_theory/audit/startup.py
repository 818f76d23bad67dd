"""Startup delay over permutations: when does the first over-capacity source start (seed 000 §5.1)?

The startup corollary bounds when a long occurrence can begin; the delay
actually realised depends on arrival order. :func:`startup_delays` replays
random permutations of one length multiset, each only up to its first long
placement, and reports the spread.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.events import Placement
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.replay import Engine, make_packer

__all__ = ["StartupSpread", "startup_delays"]

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
    **kwargs: Any,
) -> StartupSpread:
    """Startup delay over ``permutations`` random orders of the same lengths (seed 000 §5.1 used 20).

    Each replay stops at its first placement of a long occurrence (original
    length ``> R``), so the cost is that of the replay prefix, not the budget.

    >>> s = startup_delays([3, 9, 2, 4, 10, 1] * 5, capacity=8, min_buffer=3, refill=2, permutations=4)
    >>> s.permutations, len(s.delays), s.minimum is not None
    (4, 4, True)
    """
    config = resolve_config(config, kwargs, PackerConfig)
    check_int("permutations", permutations, 1)
    from ..lengths import validate_lengths

    base = validate_lengths(np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths))
    rng = np.random.default_rng(seed)
    R = config.capacity
    packer = make_packer(engine, config)
    delays: list[int | None] = []
    for _ in range(permutations):
        perm = rng.permutation(base)
        delay: int | None = None
        # one pass: stream the permutation lazily, so only the replayed prefix is converted
        gen = packer.events(_lazy_ints(perm) if config.passes == 1 else perm)
        try:
            for ev in gen:
                if type(ev) is Placement and perm[ev.source] > R:
                    delay = ev.first_target(R)
                    break
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()
        delays.append(delay)
    return StartupSpread(config.policy, int(permutations), int(seed), tuple(delays))


def _lazy_ints(arr: Int64Array, chunk: int = 16384) -> Iterator[int]:
    for i in range(0, arr.size, chunk):
        yield from arr[i : i + chunk].tolist()
