"""The :class:`PeerPacker` base: what every peer packer is and declares.

A peer is a packer from a training framework (TRL, OLMo-core, Megatron, ...)
or a method described in a paper, transcribed from its source in our own
words. It turns a length stream into the library's event stream
(:mod:`packing_theory.engine.events`) so that the audit, the monitor, the reports and
the trainer adapter consume it unchanged.

Row model: every emitted row has ``capacity`` positions — ``capacity`` is the
row width ``R``, for every peer — and positions a peer leaves empty are
:class:`~packing_theory.engine.events.Padding` (whether the framework
materialises pad tokens or a collator pads later is documented per peer).
How ``R`` follows from the framework's own sequence length is the peer's
:attr:`PeerPacker.row_width`.

A peer declares itself to the registry (:mod:`packing_theory.registry`) with
class attributes: its name, framework, reference, the sentence that explains
why seed 000's proposition does not apply, its knobs
(:class:`~packing_theory.engine.knobs.Knob`, one per keyword argument of its
constructor) and its row width. The helpers the peer modules share live in
:mod:`packing_theory.peers._common`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any, ClassVar

from .._checks import check_int
from ..engine.batches import DEFAULT_BATCH_EVENTS, EventBatch, batched
from ..engine.events import Event
from ..engine.knobs import Knob, RowWidth
from ._figures import SEED_RULE, FigureAccumulator, TrainerRule

__all__ = ["OFFLINE_START_DELAYS", "SAME_WIDTH", "PeerPacker"]

SAME_WIDTH = RowWidth("R = seq_length: a row holds the framework's sequence length")
"""The usual relation: the framework's sequence length is the row width."""

OFFLINE_START_DELAYS = (
    "not reported: the framework reads the whole dataset (or one window of it) before it emits the "
    "window's first row, so a document's start delay would only be its row's position in the "
    "framework's emission order, not a wait")
"""What :attr:`PeerPacker.start_delays` says for an offline packer."""


class PeerPacker(abc.ABC):
    """Base of every peer packer (an :class:`~packing_theory.engine.events.EventSource`).

    Subclasses set the class attributes and implement :meth:`events`; the
    constructor takes ``capacity`` (the row width ``R``) and the declared
    knobs as keyword arguments.

    Attributes:
        name: the command-line policy name, ``FRAMEWORK-STRATEGY`` (``"trl-bfd"``).
        framework: the framework's name as its users say it.
        reference: the transcribed source: repository, commit and file(s).
        in_family: whether seed 000 §3's proposition applies (never for peers).
        family_note: the one sentence explaining why the proposition does not apply.
        trainer_view: what a trainer gets from the rows (masks, position ids, padding).
        repeats_tokens: the peer emits :class:`~packing_theory.engine.events.Repeat` events.
        knobs: the constructor's keyword options, with types, defaults and help.
        row_width: how the row width follows from the framework's sequence length.
        trainer_rule: what the framework stores and which positions its training
            collator predicts (:class:`~packing_theory.peers.TrainerRule`).
        columnar: :meth:`batches` builds the event batches as numpy columns
            (:mod:`packing_theory.peers._columns`, a compiled kernel where the
            algorithm is a loop) instead of grouping :meth:`events`.
        offline: the framework reads the whole dataset, or a window of it, before
            emitting that window's rows (start delays are then not reported:
            :attr:`start_delays`); ``False`` for a packer that emits rows as it reads.
    """

    name: ClassVar[str]
    framework: ClassVar[str]
    reference: ClassVar[str]
    in_family: ClassVar[bool] = False
    family_note: ClassVar[str] = ""
    trainer_view: ClassVar[str] = "not documented by this peer"
    repeats_tokens: ClassVar[bool] = False
    knobs: ClassVar[tuple[Knob, ...]] = ()
    row_width: ClassVar[RowWidth] = SAME_WIDTH
    trainer_rule: ClassVar[TrainerRule] = SEED_RULE
    offline: ClassVar[bool] = True
    columnar: ClassVar[bool] = False

    def __init__(self, capacity: int) -> None:
        self._capacity = check_int("capacity", capacity, 1)

    @property
    def capacity(self) -> int:
        """Row width ``R``: the tokens of every emitted row."""
        return self._capacity

    def options(self) -> dict[str, Any]:
        """Every knob with the value this packer runs with (defaults included), in :attr:`knobs` order.

        >>> from packing_theory.peers.trl import TrlBfd
        >>> TrlBfd(8, window=4).options()
        {'window': 4, 'framework_version': '1.16.0'}
        """
        return {k.name: getattr(self, k.name) for k in self.knobs}

    def rule(self) -> TrainerRule:
        """The :class:`~packing_theory.peers.TrainerRule` of this packer (its options may choose it)."""
        return self.trainer_rule

    @property
    def start_delays(self) -> str:
        """``"measured"`` (rows are emitted as the input is read) or why start delays are not reported."""
        return OFFLINE_START_DELAYS if self.offline else "measured"

    def horizon_figures(self, lengths: Any) -> dict[str, Any]:
        """The framework's own horizon figures for ``lengths`` (none by default; Megatron's samples drawn)."""
        return {}

    def figures(self, lengths: Any = None) -> FigureAccumulator:
        """A consumer of this packer's framework-true figures (:class:`~packing_theory.peers.PeerFigures`).

        ``lengths`` (the replayed input) lets the figures include :meth:`horizon_figures`.
        """
        return FigureAccumulator(self.rule(), self.capacity, options=self.options(),
                                 start_delays=self.start_delays,
                                 horizon=None if lengths is None else self.horizon_figures(lengths))

    @abc.abstractmethod
    def events(self, lengths: Any) -> Iterator[Event]:
        """Pack ``lengths`` and yield the event stream, ending with a Horizon."""

    def batches(self, lengths: Any, size: int = DEFAULT_BATCH_EVENTS, *,
                compiled: bool | None = None) -> Iterator[EventBatch]:
        """The event stream of :meth:`events` as :class:`~packing_theory.engine.batches.EventBatch` values.

        A :attr:`columnar` peer builds the columns with numpy (about ``size``
        documents per batch, a window never split; its loop compiled with numba
        when ``compiled`` is ``True``, or ``None`` and numba is installed);
        any other peer groups :meth:`events` into batches of ``size`` events.
        The events are the same either way (batch boundaries carry no meaning).

        >>> from packing_theory.peers.trl import TrlBfd
        >>> b = list(TrlBfd(4, window=2).batches([5, 2, 3, 1], compiled=False))
        >>> [e for x in b for e in x.events()] == list(TrlBfd(4, window=2).events([5, 2, 3, 1]))
        True
        """
        if not self.columnar:
            return batched(self.events(lengths), size)
        return self._columns(lengths, check_int("size", size, 1), compiled)

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """The columnar path of a :attr:`columnar` peer (see :meth:`batches`)."""
        raise NotImplementedError(f"{type(self).__name__} declares no columnar path")

    def stream(self, lengths: Any) -> Iterator[Event]:
        """The event stream in this packer's own form (as the engines' ``stream``): its events.

        Feed it to consumers (:func:`~packing_theory.engine.consumers.feed_all`).
        """
        return self.events(lengths)
