"""The streaming engine: an arrival stream in, the placement event stream out.

:class:`Packer` replays the packer family of :mod:`packing_theory.policies`
with the :class:`~packing_theory.buffer.FastBuffer`. It yields exactly the
events of the naive :class:`~packing_theory.reference.ReferencePacker` (the
differential tests assert it) at O(log B) per selection instead of O(B).

One engine serves a trainer and an audit: :meth:`Packer.events` yields the
event stream, :meth:`Packer.placement_rows` groups placements by row, and
:meth:`Packer.token_rows` turns documents given as token lists into rows of
token ids.
"""

from __future__ import annotations

import collections
import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .buffer import FastBuffer
from .policies import LengthsInput, PackerConfig, crop_outcome, overdue, refill_batches, segment
from .spans import (
    Arrival,
    BosAdded,
    Discard,
    Event,
    Exhausted,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
    fill_length,
)

if TYPE_CHECKING:
    from .reference import ReferencePacker

__all__ = ["Engine", "Packer", "Replay", "make_packer", "replay"]

Engine = Literal["fast", "reference"]


class Packer:
    """The fast streaming engine.

    Args:
        config: a :class:`~packing_theory.policies.PackerConfig`; keyword
            arguments build one when ``config`` is omitted.

    >>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
    >>> [(p.row, p.offset, p.occurrence, p.length, p.crop) for p in packer.placements([5, 3, 9, 4])]
    [(0, 0, 0, 5, False), (0, 5, 1, 3, False), (1, 0, 3, 4, False), (1, 4, 2, 4, True)]

    Complexity: O(log B) per selection and O(1) per arrival (amortised); memory
    O(B + R + refill batch) for a streamed input, plus O(corpus) when the
    lengths are an in-memory sequence (they are held anyway).
    """

    def __init__(self, config: PackerConfig | None = None, **kwargs: Any) -> None:
        if config is None:
            config = PackerConfig(**kwargs)
        elif kwargs:
            raise TypeError(f"pass either config or keyword arguments, not both (got {sorted(kwargs)})")
        self.config = config

    @property
    def capacity(self) -> int:
        """Row capacity ``R`` (the :class:`~packing_theory.spans.EventSource` protocol)."""
        return self.config.capacity

    def events(self, lengths: LengthsInput) -> Iterator[Event]:
        """Replay ``lengths`` (BOS-inclusive source lengths) and yield the event stream.

        The stream ends with one :class:`~packing_theory.spans.Horizon`.
        """
        cfg = self.config
        R = cfg.capacity
        B = cfg.min_buffer
        policy = cfg.policy
        budget = cfg.row_budget
        drain = cfg.exhausted == "drain"
        splitting = policy == "segment-first"
        rng = random.Random(cfg.seed) if policy == "random-span" else None
        batches = refill_batches(lengths, cfg)
        buf = FastBuffer(R)
        # bounded-wait (issue 13): arrival-ordered queue of (arrival row, seq); see below
        waiting: collections.deque[tuple[int, int]] | None = (
            collections.deque() if cfg.wait_threshold is not None else None
        )
        max_wait = cfg.wait_threshold or 0
        synced = 0
        take = buf.take
        spans = buf._spans  # len(spans) is the buffer size, read without a method call
        new = tuple.__new__
        occurrence = 0
        row = 0
        pos = 0
        stream_done = False
        announced = False
        stop_reason = "rows"
        while budget is None or row < budget:
            if len(spans) < B:
                while not stream_done and len(spans) < B:
                    batch = next(batches, None)
                    if batch is None:
                        stream_done = True
                        break
                    records = []
                    for source, pass_index, length in batch:
                        yield new(Arrival, (occurrence, source, pass_index, length))
                        if splitting and length > R:
                            chunks = segment(length, R)
                            yield BosAdded(occurrence, source, len(chunks) - 1)
                            records += [(occurrence, source, start, n, bos) for start, n, bos in chunks]
                        else:
                            records.append((occurrence, source, 0, length, False))
                        occurrence += 1
                    buf.extend(records)
                if len(spans) < B:
                    if not drain:
                        stop_reason = "exhausted"
                        break
                    if not announced:
                        announced = True
                        yield Exhausted(row, pos, len(spans))
                    if not spans:
                        stop_reason = "drained"
                        break
            remaining = R - pos
            # ---- bounded-wait (issue 13): forced start at a row start ------------------
            # waiting: (arrival row, seq) of every arrival, in arrival order; entries whose
            # span has started (removed, or a continuation with start > 0) are dropped lazily.
            if waiting is not None:
                if synced < buf._next:  # the spans appended since the last selection arrived now
                    waiting.extend((row, s) for s in range(synced, buf._next))
                    synced = buf._next
                if pos == 0:
                    while waiting and (waiting[0][1] not in spans or spans[waiting[0][1]][2] != 0):
                        waiting.popleft()
                    if waiting and overdue(row, waiting[0][0], max_wait):
                        seq = waiting.popleft()[1]
                        occ, src, start, n, bos = buf.remove(seq)
                        crop = n > remaining
                    else:
                        seq, (occ, src, start, n, bos), crop = take(remaining)
                else:
                    seq, (occ, src, start, n, bos), crop = take(remaining)
            else:
                seq, (occ, src, start, n, bos), crop = take(remaining)
            # ---- end bounded-wait --------------------------------------------------------
            if not crop:
                yield new(Placement, (row, pos, occ, src, start, n, bos, False))
                pos += n
                if pos == R:
                    row += 1
                    pos = 0
                continue
            out = crop_outcome(policy, start, n, bos, remaining, rng)
            yield Placement(row, pos, occ, src, out.start, remaining, out.bos_inserted, True)
            for d_start, d_len in out.discards:
                yield Discard(occ, src, d_start, d_len)
            if out.keep is not None:
                buf.replace(seq, (occ, src, *out.keep))
            elif out.requeue is not None:
                yield BosAdded(occ, src, 1)
                buf.append((occ, src, *out.requeue))
            row += 1
            pos = 0
        yield Horizon(row, pos, stop_reason, buf.snapshot())

    def placements(self, lengths: LengthsInput) -> Iterator[Placement]:
        """Only the :class:`~packing_theory.spans.Placement` events of :meth:`events`."""
        for ev in self.events(lengths):
            if isinstance(ev, Placement):
                yield ev

    def rows(
        self, data: Iterable[int] | Iterable[Sequence[int]]
    ) -> Iterator[list[int]] | Iterator[list[Placement]]:
        """Rows of token ids when ``data`` holds token lists, rows of placements when it holds lengths.

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
            raise ValueError("data is empty: a replay needs at least one document")
        rest = itertools.chain([first], it)
        if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
            return self.placement_rows(rest)  # type: ignore[arg-type]
        return self.token_rows(rest)  # type: ignore[arg-type]

    def placement_rows(self, lengths: LengthsInput) -> Iterator[list[Placement]]:
        """Yield each complete row as its list of placements (an audit's view)."""
        return _group_rows(self.events(lengths), self.config.capacity)

    def token_rows(self, documents: Iterable[Sequence[int]]) -> Iterator[list[int]]:
        """Yield each complete row as ``R`` token ids (a trainer's view).

        ``documents`` are BOS-inclusive token lists (``doc[0]`` is the BOS);
        an added BOS marker repeats the document's own ``doc[0]``. Only the
        buffered documents are held in memory.

        >>> docs = [[0, 11, 12], [0, 21], [0, 31, 32, 33]]
        >>> list(Packer(capacity=4, min_buffer=1, refill=1).token_rows(docs))
        [[0, 11, 12, 0], [0, 31, 32, 33]]
        """
        return _token_rows(self, documents)


RowEvent = Placement | Padding | Repeat
"""The events that fill row positions."""


def _group_rows(events: Iterable[Event], capacity: int) -> Iterator[list[Placement]]:
    """Group the row-filling events into complete rows.

    The events of one row must be contiguous in the stream (every packer
    completes a row before it starts the next, whatever the row's index).
    Rows of the streaming family hold only placements; peers' rows may also
    hold :class:`~packing_theory.spans.Padding` and
    :class:`~packing_theory.spans.Repeat` events.
    """
    current: list[Any] = []
    filled = 0
    for ev in events:
        n = fill_length(ev)
        if n:
            current.append(ev)
            filled += n
            if filled == capacity:
                yield current
                current = []
                filled = 0


def _token_rows(
    packer: Any, documents: Iterable[Sequence[int]], pad_id: int = 0
) -> Iterator[list[int]]:
    """Rows of token ids from any event source (``packer.events`` and ``packer.capacity``).

    Documents are held while they still have unemitted tokens; a packer that
    emits :class:`~packing_theory.spans.Repeat` events (``repeats_tokens =
    True``) has its documents held to the end. Padding positions get ``pad_id``.
    """
    keep_all = bool(getattr(packer, "repeats_tokens", False))
    held: dict[int, Sequence[int]] = {}
    left: dict[int, int] = {}
    docs_iter = iter(documents)

    def lengths() -> Iterator[int]:
        for occurrence, doc in enumerate(docs_iter):
            held[occurrence] = doc
            left[occurrence] = len(doc)
            yield len(doc)

    row: list[int] = []
    capacity: int = packer.capacity
    release = (lambda *_: None) if keep_all else _release
    for ev in packer.events(lengths()):
        t = type(ev)
        if t is Placement:
            doc = held[ev.occurrence]
            if ev.bos_inserted:
                row.append(doc[0])
                row.extend(doc[ev.start : ev.start + ev.length - 1])
            else:
                row.extend(doc[ev.start : ev.start + ev.length])
            release(held, left, ev.occurrence, ev.length)
        elif t is Discard:
            release(held, left, ev.occurrence, ev.length)
        elif t is BosAdded:
            left[ev.occurrence] += ev.markers
        elif t is Padding:
            row.extend([pad_id] * ev.length)
        elif t is Repeat:
            row.extend(held[ev.occurrence][ev.start : ev.start + ev.length])
        elif t is Filtered:
            release(held, left, ev.occurrence, ev.length)
        else:
            continue
        if len(row) == capacity:
            yield row
            row = []


def _release(held: dict[int, Sequence[int]], left: dict[int, int], occurrence: int, n: int) -> None:
    rest = left[occurrence] - n
    if rest:
        left[occurrence] = rest
    else:
        del left[occurrence]
        del held[occurrence]


def make_packer(
    engine: Engine = "fast", config: PackerConfig | None = None, **kwargs: Any
) -> Packer | ReferencePacker:
    """Build the ``"fast"`` :class:`Packer` or the ``"reference"`` packer with the same config."""
    if engine == "fast":
        return Packer(config, **kwargs)
    if engine == "reference":
        from .reference import ReferencePacker

        return ReferencePacker(config, **kwargs)
    raise ValueError(f"engine must be 'fast' or 'reference', got {engine!r}")


@dataclass
class Replay:
    """A materialised replay: the whole event stream in memory (notebooks, tests).

    For corpus-sized streams prefer :meth:`Packer.events` and a streaming
    consumer such as :class:`~packing_theory.summary.SummaryAccumulator`.
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
        """The final :class:`~packing_theory.spans.Horizon` event."""
        last = self.events[-1]
        if not isinstance(last, Horizon):
            raise ValueError("the event stream does not end with a Horizon event")
        return last

    def rows(self) -> list[list[Placement]]:
        """Complete rows as lists of placements."""
        return list(_group_rows(self.events, self.config.capacity))

    def summary(self) -> Any:
        """The :class:`~packing_theory.summary.ReplaySummary` of this replay."""
        from .summary import summarize

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

    Keyword arguments are :class:`~packing_theory.policies.PackerConfig` fields.

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
