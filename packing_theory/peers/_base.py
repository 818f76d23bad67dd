"""What every peer packer shares: the :class:`PeerPacker` base and row emission.

A peer is a packer from a training framework (TRL, OLMo-core, Megatron, ...)
or a method described in a paper, transcribed from its source in our own
words. It turns a length stream into the library's event stream
(:mod:`packing_theory.engine.events`) so that the audit, the monitor, the reports and
the trainer adapter consume it unchanged.

Row model: every emitted row has ``capacity`` positions; positions a peer
leaves empty are :class:`~packing_theory.engine.events.Padding` (whether the
framework materialises pad tokens or a collator pads later is documented per
peer). :class:`RowEmitter` numbers rows and pads them.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, NamedTuple

from .._checks import check_int
from ..engine.events import Event, Padding, Placement, Repeat
from ..errors import InputError

__all__ = ["PeerPacker", "Piece", "RowEmitter"]


class Piece(NamedTuple):
    """A contiguous run of source tokens placed in a row.

    ``repeat=True`` marks tokens already emitted by an earlier piece (shown
    again, e.g. Megatron's one-token sample overlap).
    """

    occurrence: int
    source: int
    start: int
    length: int
    crop: bool = False
    repeat: bool = False


class RowEmitter:
    """Numbers rows and turns a row's pieces into Placement / Repeat / Padding events.

    >>> em = RowEmitter(capacity=6)
    >>> [type(e).__name__ for e in em.row([Piece(0, 0, 0, 3), Piece(1, 1, 0, 2)])]
    ['Placement', 'Placement', 'Padding']
    >>> em.rows
    1
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self.rows = 0

    def row(self, pieces: Sequence[Piece], *, row: int | None = None) -> list[Event]:
        """Events of one row: its pieces in order, then padding to ``capacity``.

        ``row`` overrides the row index (shuffled outputs); by default rows are
        numbered in emission order.

        Raises:
            ValueError: the pieces overflow the row or a piece is empty.
        """
        index = self.rows if row is None else row
        out: list[Event] = []
        pos = 0
        for p in pieces:
            if p.length < 1:
                raise InputError(f"piece {p!r} is empty")
            if p.repeat:
                out.append(Repeat(index, pos, p.occurrence, p.source, p.start, p.length))
            else:
                out.append(Placement(index, pos, p.occurrence, p.source, p.start, p.length, False, p.crop))
            pos += p.length
        if pos > self.capacity:
            raise InputError(f"row {index} holds {pos} tokens > capacity {self.capacity}")
        if pos < self.capacity:
            out.append(Padding(index, pos, self.capacity - pos))
        self.rows += 1
        return out


class PeerPacker(abc.ABC):
    """Base of every peer packer (an :class:`~packing_theory.engine.events.EventSource`).

    Subclasses set the class attributes and implement :meth:`events`.

    Attributes:
        name: the command-line policy name, ``FRAMEWORK-STRATEGY`` (``"trl-bfd"``).
        framework: the framework's name as its users say it.
        reference: the transcribed source: repository, commit and file(s).
        in_family: whether seed 000 §3's proposition applies (never for peers).
        family_note: why the proposition does not apply (seed 000 §5.10 style).
        repeats_tokens: the peer emits :class:`~packing_theory.engine.events.Repeat` events.
    """

    name: ClassVar[str]
    framework: ClassVar[str]
    reference: ClassVar[str]
    in_family: ClassVar[bool] = False
    family_note: ClassVar[str] = ""
    repeats_tokens: ClassVar[bool] = False

    def __init__(self, capacity: int) -> None:
        self._capacity = check_int("capacity", capacity, 1)

    @property
    def capacity(self) -> int:
        """Row capacity (the framework's sequence length)."""
        return self._capacity

    @abc.abstractmethod
    def events(self, lengths: Any) -> Iterator[Event]:
        """Pack ``lengths`` and yield the event stream, ending with a Horizon."""
