"""Choosing an engine and keeping a whole replay in memory (notebooks, tests).

:func:`make_packer` builds the fast :class:`~packing_theory.engine.packer.Packer`,
the naive :class:`~packing_theory.engine.reference.ReferencePacker` or the
numba :class:`~packing_theory.engine.compiled.CompiledPacker` (the ``fast``
extra) from one configuration; :func:`replay` runs it and keeps every event in
a :class:`Replay`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InputError
from .events import Arrival, Event, Horizon, Placement
from .policies import LengthsInput, PackerConfig
from .summary import ReplaySummary, summarize

if TYPE_CHECKING:  # each engine is imported when it is built (a replay loads one of them)
    from .compiled import CompiledPacker
    from .packer import Packer
    from .reference import ReferencePacker

__all__ = ["ENGINES", "Engine", "Replay", "make_packer", "replay"]

Engine = Literal["fast", "compiled", "reference"]
ENGINES: tuple[Engine, ...] = ("fast", "compiled", "reference")
"""``fast`` (pure Python, the default), ``compiled`` (numba, emits batches), ``reference`` (the oracle)."""


def make_packer(
    engine: Engine = "fast", config: PackerConfig | None = None, **kwargs: Any
) -> Packer | ReferencePacker | CompiledPacker:
    """Build the ``"fast"`` :class:`Packer`, the ``"compiled"`` or the ``"reference"`` packer.

    >>> make_packer("nope")
    Traceback (most recent call last):
    packing_theory.InputError: engine must be one of fast, compiled, reference; got 'nope'
    """
    if engine == "fast":
        from .packer import Packer

        return Packer(config, **kwargs)
    if engine == "reference":
        from .reference import ReferencePacker

        return ReferencePacker(config, **kwargs)
    if engine == "compiled":
        from .compiled import CompiledPacker

        return CompiledPacker(config, **kwargs)
    raise InputError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")


@dataclass
class Replay:
    """A materialised replay: the whole event stream in memory (notebooks, tests).

    For corpus-sized streams prefer :meth:`Packer.events` and a streaming
    consumer such as :class:`~packing_theory.engine.summary.SummaryAccumulator`.
    """

    config: PackerConfig
    events: list[Event] = field(repr=False)

    @property
    def placements(self) -> list[Placement]:
        """All placements, in selection order."""
        return [ev for ev in self.events if isinstance(ev, Placement)]

    @property
    def arrivals(self) -> list[Arrival]:
        """All arrivals, in arrival order."""
        return [ev for ev in self.events if isinstance(ev, Arrival)]

    @property
    def horizon(self) -> Horizon:
        """The final :class:`~packing_theory.engine.events.Horizon` event."""
        last = self.events[-1]
        if not isinstance(last, Horizon):
            raise InputError("the event stream does not end with a Horizon event")
        return last

    def rows(self) -> list[list[Placement]]:
        """Complete rows as lists of placements."""
        from .rows import group_rows

        return list(group_rows(self.events, self.config.capacity))

    def summary(self) -> ReplaySummary:
        """The :class:`~packing_theory.engine.summary.ReplaySummary` of this replay."""
        return summarize(self.events, self.config)


def replay(
    lengths: LengthsInput,
    *,
    engine: Engine = "fast",
    config: PackerConfig | None = None,
    on_event: Callable[[Event], None] | None = None,
    **kwargs: Any,
) -> Replay:
    """Replay ``lengths`` and keep the whole event stream.

    Keyword arguments are :class:`~packing_theory.engine.policies.PackerConfig` fields.

    >>> rep = replay([3, 9, 2, 4], capacity=4, min_buffer=2, refill=1, policy="continue", exhausted="drain")
    >>> [(p.occurrence, p.start, p.length, p.crop) for p in rep.placements]
    ... # doctest: +NORMALIZE_WHITESPACE
    [(0, 0, 3, False), (2, 0, 1, True), (2, 1, 1, False), (3, 0, 3, True),
     (3, 3, 1, False), (1, 0, 3, True), (1, 3, 4, True), (1, 7, 2, False)]
    >>> rep.horizon.stop_reason, rep.horizon.rows, rep.horizon.partial_row_tokens
    ('drained', 4, 2)
    """
    packer = make_packer(engine, config, **kwargs)
    events: list[Event] = []
    for ev in packer.events(lengths):
        if on_event is not None:
            on_event(ev)
        events.append(ev)
    return Replay(packer.config, events)
