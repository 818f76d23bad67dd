"""What every packing engine offers: one façade for the fast, the reference and the compiled engine.

:class:`PackingEngine` is the base class of
:class:`~packing_theory.engine.packer.Packer` (``"fast"``),
:class:`~packing_theory.engine.reference.ReferencePacker` (``"reference"``) and
:class:`~packing_theory.engine.compiled.CompiledPacker` (``"compiled"``), so a
caller holding any of them (from :func:`~packing_theory.engine.replay.make_packer`)
never branches on which one it holds:

==========================  ==========================================================
member                      what it gives
==========================  ==========================================================
``config``, ``capacity``    the :class:`~packing_theory.engine.policies.PackerConfig`
                            and its row capacity ``R``
``events(lengths)``         the single-event stream (the reference semantics)
``batches(lengths)``        the same stream as :class:`~packing_theory.engine.batches.EventBatch` es
``stream(lengths)``         the stream in the engine's own form — single events
                            for the Python engines, batches for the compiled one;
                            every consumer (:class:`~packing_theory.engine.consumers.Consumer`)
                            accepts both, so this is what to feed them
``run(lengths)``            a :class:`~packing_theory.engine.state.PackerRun` that
                            can capture an :class:`~packing_theory.engine.state.EngineState`
                            at a row boundary (``resumable`` engines)
``resume=state``            ``events``, ``batches``, ``stream`` and ``run`` continue
                            from a captured state (``resumable`` engines)
``placements``,             the placements only; complete rows of placements;
``placement_rows``,         rows of token ids; either, by what ``data`` holds
``token_rows``, ``rows``
==========================  ==========================================================

The compiled engine is not ``resumable``: given ``resume`` it refuses with an
:class:`~packing_theory.errors.InputError` naming the engine that can.

>>> from packing_theory import CompiledPacker, Packer, ReferencePacker
>>> [(cls.engine, cls.resumable, cls.native_batches, cls.columnar)
...  for cls in (Packer, ReferencePacker, CompiledPacker)]
[('fast', True, False, True), ('reference', True, False, False), ('compiled', False, True, True)]
>>> packer = Packer(capacity=8, min_buffer=2, refill=2)
>>> [len(b) for b in packer.batches([5, 3, 9, 4], size=4)]
[4, 4]
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from .._checks import is_int
from ..errors import InputError
from .batches import DEFAULT_BATCH_EVENTS, EventBatch, EventItem, batched
from .events import Event, Placement
from .policies import LengthsInput, PackerConfig, resolve_config
from .state import EngineState, PackerRun

__all__ = ["PackingEngine"]


class PackingEngine(ABC):
    """The common façade of the three engines (see the module doc).

    Args:
        config: a :class:`~packing_theory.engine.policies.PackerConfig`; keyword
            arguments build one when ``config`` is omitted.

    Class attributes: ``engine`` (its name for
    :func:`~packing_theory.engine.replay.make_packer`), ``resumable`` (it can
    capture and resume an :class:`~packing_theory.engine.state.EngineState`),
    ``native_batches`` (:meth:`stream` yields batches), ``columnar`` (:meth:`batches` writes its
    columns directly, without building the single events first: cheaper than :meth:`events` for a
    consumer that accounts batches with numpy).
    """

    engine: ClassVar[str]
    resumable: ClassVar[bool] = True
    native_batches: ClassVar[bool] = False
    columnar: ClassVar[bool] = False

    def __init__(self, config: PackerConfig | None = None, **kwargs: Any) -> None:
        self.config: PackerConfig = resolve_config(config, kwargs, PackerConfig)

    @property
    def capacity(self) -> int:
        """Row capacity ``R`` (the :class:`~packing_theory.engine.events.EventSource` protocol)."""
        return self.config.capacity

    @abstractmethod
    def events(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> Iterator[Event]:
        """Replay BOS-inclusive ``lengths``; the event stream, ending with one Horizon.

        With ``resume`` (a state captured by :meth:`run`), the replay continues
        from that row boundary: exactly the events the uninterrupted replay
        yields after it.
        """

    def batches(self, lengths: LengthsInput, *, size: int = DEFAULT_BATCH_EVENTS,
                resume: EngineState | None = None) -> Iterator[EventBatch]:
        """:meth:`events` in batches of at most ``size`` events (as :func:`~.batches.batched` groups them)."""
        return batched(self.events(lengths, resume=resume), size)

    def stream(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> Iterator[EventItem]:
        """The event stream in this engine's own form: single events, or batches when ``native_batches``.

        Feed it to consumers (:func:`~packing_theory.engine.consumers.feed_all`):
        they accept both forms with the same result.
        """
        return self.events(lengths, resume=resume)

    def run(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> PackerRun:
        """:meth:`events` as a :class:`~packing_theory.engine.state.PackerRun` that can capture its state.

        Raises:
            InputError: the engine is not ``resumable``.
        """
        raise self._not_resumable()

    def placements(self, lengths: LengthsInput) -> Iterator[Placement]:
        """Only the :class:`~packing_theory.engine.events.Placement` events of :meth:`events`."""
        for ev in self.events(lengths):
            if type(ev) is Placement:
                yield ev

    def placement_rows(self, lengths: LengthsInput) -> Iterator[list[Placement]]:
        """Each complete row as its list of placements (an audit's view)."""
        from .rows import group_rows

        return group_rows(self.events(lengths), self.config.capacity)

    def token_rows(self, documents: Iterable[Sequence[int]]) -> Iterator[list[int]]:
        """Each complete row as ``R`` token ids (a trainer's view; see :func:`.rows.token_rows`).

        ``documents`` are BOS-inclusive token lists (``doc[0]`` is the BOS); an
        added BOS marker repeats the document's own ``doc[0]``. Only the
        buffered documents are held in memory.

        >>> from packing_theory import Packer
        >>> docs = [[0, 11, 12], [0, 21], [0, 31, 32, 33]]
        >>> list(Packer(capacity=4, min_buffer=1, refill=1).token_rows(docs))
        [[0, 11, 12, 0], [0, 31, 32, 33]]
        """
        from .rows import token_rows

        return token_rows(self, documents)

    def rows(
        self, data: Iterable[int] | Iterable[Sequence[int]]
    ) -> Iterator[list[int]] | Iterator[list[Placement]]:
        """Rows of token ids when ``data`` holds token lists, rows of placements when it holds lengths.

        >>> from packing_theory import Packer
        >>> packer = Packer(capacity=4, min_buffer=1, refill=1)
        >>> next(packer.rows([[0, 11, 12], [0, 21], [0, 31, 32, 33]]))
        [0, 11, 12, 0]
        >>> [p.length for p in next(packer.rows([3, 2, 4]))]
        [3, 1]
        """
        if isinstance(data, np.ndarray):
            return self.placement_rows(data)
        it = iter(data)
        first = next(it, None)
        if first is None:
            raise InputError("data is empty: a replay needs at least one document")
        rest = itertools.chain([first], it)
        if is_int(first):
            return self.placement_rows(rest)  # type: ignore[arg-type]
        return self.token_rows(rest)  # type: ignore[arg-type]

    def _not_resumable(self) -> InputError:
        return InputError(f"resume: the {self.engine} engine cannot capture or resume an engine state; "
                          "use engine='fast' (or 'reference')")
