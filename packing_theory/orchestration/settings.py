"""How every packer of one measurement is built: one row width or one sequence length, one set of knobs.

:class:`Settings` is the one place the command line's ``--capacity``,
``--seq-length``, ``--min-buffer``, ``--refill``, ``--passes``, ``--drain``,
``--seed``, ``--max-wait``, ``--peer-option`` and ``--engine`` land: every
packer of a measurement is built from it (:meth:`Settings.width`,
:meth:`Settings.knobs`), streaming policies and framework peers alike.

>>> from packing_theory.registry import entry
>>> s = Settings(seq_length=2048)
>>> s.width(entry("discard")), s.width(entry("trl-bfd")), s.width(entry("megatron-gpt"))
(2049, 2048, 2049)
>>> Settings(capacity=9).width(entry("olmo-fragment"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
packing_theory.InputError: capacity 9: olmo-fragment packs rows whose width is a power of two ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_int
from ..audit.strata import STRATA_BOUNDARIES, check_boundaries
from ..engine.policies import EXHAUSTED_MODES, RANDOM_SPAN_SEED, PackerConfig
from ..engine.replay import ENGINES, Engine
from ..errors import InputError
from ..registry import PackerEntry

__all__ = ["DEFAULT_SEQ_LENGTH", "Settings"]

DEFAULT_SEQ_LENGTH = 2048
"""The trained positions of a row when neither a row width nor a sequence length is given (autoresearch's
``T``: streaming rows of ``R = 2049``)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """How every packer of one measurement is built (see the module doc for row widths).

    Args:
        capacity: the row width ``R`` of every packer (exclusive with ``seq_length``).
        seq_length: the trained positions ``L`` of a row; each packer's row
            width follows from its framework's rule.
        min_buffer, refill, passes, exhausted, seed, max_wait: the streaming
            family's knobs (``B``, refill batch, corpus passes, ``stop`` /
            ``drain``, the ``random-span`` seed, ``bounded-wait``'s ``A``); a
            packer that does not take one ignores it.
        peer_options: per peer, its knobs (``{"trl-bfd": {"window": 500}}``).
        engine: ``fast`` (pure Python), ``compiled`` (numba: the streaming
            policies' compiled engine and the peers' numpy columns) or
            ``reference`` (the naive streaming loader); the figures are the same.
        boundaries: the length strata's upper bounds.
    """

    capacity: int | None = None
    seq_length: int | None = None
    min_buffer: int = 1000
    refill: int | tuple[int, ...] = 128
    passes: int = 1
    exhausted: str = "stop"
    seed: int = RANDOM_SPAN_SEED
    max_wait: int | None = None
    peer_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    engine: Engine = "fast"
    boundaries: tuple[int, ...] = STRATA_BOUNDARIES

    def __post_init__(self) -> None:
        if self.capacity is not None and self.seq_length is not None:
            raise InputError(
                f"give one of capacity (the row width of every packer) and seq_length (the "
                f"trained positions); got capacity={self.capacity} seq_length={self.seq_length}"
            )
        if self.capacity is not None:
            object.__setattr__(self, "capacity", check_int("capacity", self.capacity, 2))
        if self.seq_length is not None:
            object.__setattr__(self, "seq_length", check_int("seq_length", self.seq_length, 1))
        if self.exhausted not in EXHAUSTED_MODES:
            raise InputError(f"exhausted must be one of {', '.join(EXHAUSTED_MODES)}; got {self.exhausted!r}")
        if self.engine not in ENGINES:
            raise InputError(f"engine must be one of {', '.join(ENGINES)}; got {self.engine!r}")
        object.__setattr__(self, "boundaries", check_boundaries(self.boundaries))
        object.__setattr__(self, "peer_options", {k: dict(v) for k, v in dict(self.peer_options).items()})
        # the streaming knobs are checked by the config they build
        PackerConfig(
            capacity=max(2, self.capacity or 2),
            min_buffer=self.min_buffer,
            refill=self.refill,
            passes=self.passes,
            seed=self.seed,
            exhausted=self.exhausted,
            max_wait=self.max_wait,
        )

    @property
    def streaming_capacity(self) -> int:
        """The streaming family's row width."""
        if self.capacity is not None:
            return self.capacity
        return (self.seq_length or DEFAULT_SEQ_LENGTH) + 1

    def width(self, e: PackerEntry) -> int:
        """The row width of packer ``e`` (see the module doc).

        Raises:
            InputError: a row width the packer's framework does not accept (the
                message names ``capacity`` and the packer, and suggests ``seq_length``).
        """
        options = self.peer_options.get(e.name, {}) if e.kind == "peer" else {}
        if self.capacity is not None:
            if e.row_width.power_of_two and self.capacity & (self.capacity - 1):
                raise InputError(
                    f"capacity {self.capacity}: {e.name} packs rows whose width is a power of "
                    f"two ({e.row_width.rule}); give seq_length instead, and every packer "
                    "takes its framework's row width"
                )
            return self.capacity
        L = self.seq_length or DEFAULT_SEQ_LENGTH
        return e.capacity_for(e.row_width.admissible(L), options)

    def knobs(self, e: PackerEntry) -> dict[str, Any]:
        """The knobs packer ``e`` is built with (those it takes)."""
        if e.kind == "peer":
            return dict(self.peer_options.get(e.name, {}))
        given = {
            "min_buffer": self.min_buffer,
            "refill": self.refill,
            "passes": self.passes,
            "exhausted": self.exhausted,
            "seed": self.seed,
            "max_wait": self.max_wait,
        }
        return {k: v for k, v in given.items() if e.takes(k) and v is not None}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the report's ``settings``)."""
        refill = list(self.refill) if isinstance(self.refill, tuple) else [self.refill]
        return {
            "capacity": self.capacity,
            "seq_length": self.seq_length,
            "streaming_capacity": self.streaming_capacity,
            "min_buffer": self.min_buffer,
            "refill": refill,
            "passes": self.passes,
            "exhausted": self.exhausted,
            "seed": self.seed,
            "max_wait": self.max_wait,
            "peer_options": {k: dict(v) for k, v in self.peer_options.items()},
            "engine": self.engine,
            "boundaries": list(self.boundaries),
        }
