"""The streaming engine: an arrival stream in, the placement event stream out.

:class:`Packer` replays the packer family of :mod:`packing_theory.engine.policies`
with the :class:`~packing_theory.engine.buffer.FastBuffer`. It yields exactly the
events of the naive :class:`~packing_theory.engine.reference.ReferencePacker` (the
differential tests assert it) at O(log B) per selection instead of O(B).

One engine serves a trainer and an audit: :meth:`Packer.events` yields the
event stream, :meth:`Packer.placement_rows` groups placements by row, and
:meth:`Packer.token_rows` turns documents given as token lists into rows of
token ids.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Iterator
from itertools import repeat

from .base import PackingEngine
from .batches import DEFAULT_BATCH_EVENTS, DISCARD, PLACEMENT, EventBatch
from .buffer import FastBuffer
from .columns import ColumnBuilder
from .events import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Event,
    Exhausted,
    Horizon,
    Padding,
    Placement,
)
from .policies import LengthsInput, PackerConfig, apply_crop, crop_outcome, overdue, segment
from .refill import RefillCursor
from .state import EngineState, PackerRun, check_state, config_fingerprint

__all__ = ["Packer"]


class Packer(PackingEngine):
    """The fast streaming engine (a :class:`~packing_theory.engine.base.PackingEngine`).

    Args:
        config: a :class:`~packing_theory.engine.policies.PackerConfig`; keyword
            arguments build one when ``config`` is omitted.

    >>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
    >>> [(p.row, p.offset, p.occurrence, p.length, p.crop) for p in packer.placements([5, 3, 9, 4])]
    [(0, 0, 0, 5, False), (0, 5, 1, 3, False), (1, 0, 3, 4, False), (1, 4, 2, 4, True)]

    Complexity: O(log B) per selection and O(1) per arrival (amortised); memory
    O(B + refill batch) for a streamed input, whatever ``R`` (the buffer
    indexes only the lengths it holds), plus O(corpus) when the lengths are an
    in-memory sequence (they are held anyway; a numpy array is sliced per
    batch, never converted to a list).
    """

    engine = "fast"
    columnar = True

    def events(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> Iterator[Event]:
        """Replay ``lengths`` (BOS-inclusive source lengths) and yield the event stream.

        The stream ends with one :class:`~packing_theory.engine.events.Horizon`.
        With ``resume`` (an :class:`~packing_theory.engine.state.EngineState`
        captured by :meth:`run`), the replay continues from that row boundary:
        the events are exactly those the uninterrupted replay yields after it.
        A streamed iterator must then start at ``resume.cursor.position``.
        """
        return self._events(lengths, resume, None, None)  # type: ignore[return-value]

    def batches(self, lengths: LengthsInput, *, size: int = DEFAULT_BATCH_EVENTS,
                resume: EngineState | None = None) -> Iterator[EventBatch]:
        """:meth:`events` as :class:`~packing_theory.engine.batches.EventBatch` es of ``size`` events.

        The same replay loop writes the events' fields straight into columns
        (:class:`~packing_theory.engine.columns.ColumnBuilder`) instead of
        building one object per event; the batches are exactly
        ``batched(self.events(lengths), size)`` (every batch holds ``size``
        events but the last). What a consumer that accounts batches with numpy
        (:class:`~packing_theory.engine.summary.SummaryAccumulator`, the ledger)
        should be fed: ``packing-theory replay`` is.

        >>> [len(b) for b in Packer(capacity=8, min_buffer=2, refill=2).batches([5, 3, 9, 4], size=3)]
        [3, 3, 2]

        Raises:
            TypeError: ``size`` is not an int.
            ValueError: ``size < 1``.
        """
        return self._events(lengths, resume, None, ColumnBuilder(size))  # type: ignore[return-value]

    def run(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> PackerRun:
        """:meth:`events` as a :class:`~packing_theory.engine.state.PackerRun` that can capture its state."""
        return PackerRun(lambda run: self._events(lengths, resume, run, None))  # type: ignore[arg-type,return-value]

    def _events(self, lengths: LengthsInput, resume: EngineState | None, run: PackerRun | None,
                cols: ColumnBuilder | None) -> Iterator[Event | EventBatch]:
        """The replay loop: single events, or (``cols`` given) batches of them built in columns.

        Both forms go through every line below; they differ only where an
        event is emitted (``cols is None``: yield it; else: append its fields).
        """
        cfg = self.config
        R = cfg.capacity
        B = cfg.min_buffer
        policy = cfg.policy
        budget = cfg.row_budget
        drain = cfg.exhausted == "drain"
        splitting = cfg.spec.segments
        pads = cfg.spec.pads
        rng = random.Random(cfg.seed) if cfg.spec.random else None
        buf = FastBuffer(R)
        take = buf.take
        size = 0  # spans in buf, counted here so that the hot loop needs no method call
        new = tuple.__new__
        occurrence = 0
        row = 0
        pos = 0
        announced = False
        # bounded-wait: (arrival row, seq) of every appended span in arrival order;
        # entries whose span has started (taken, or kept as a continuation with start > 0)
        # are dropped lazily when they reach the front
        waiting: collections.deque[tuple[int, int]] | None = (
            collections.deque() if cfg.wait_threshold is not None else None
        )
        max_wait = cfg.wait_threshold or 0
        synced = 0  # sequence numbers below this are in `waiting` already
        if resume is not None:
            resume.check_config(cfg)
            buf.extend([tuple(s) for s in resume.buffer])  # type: ignore[misc]
            size = len(resume.buffer)
            if waiting is not None:
                waiting.extend(zip(resume.arrival_rows or (), range(size), strict=True))
                synced = size
            occurrence, row, announced = resume.next_occurrence, resume.row, resume.announced
            if rng is not None and resume.rng_state is not None:
                rng.setstate(resume.rng_state)
        cursor = RefillCursor(lengths, cfg, None if resume is None else resume.cursor)
        if resume is not None and cursor.array is not None:
            check_state(resume, cursor.array, cfg)  # a tampered state is refused, O(B)
        next_block = cursor.next_block
        stream_done = cursor.done
        stop_reason = "rows"
        if cols is not None:
            kinds = cols.kinds
            kinds_append = kinds.append
            placement_code = PLACEMENT
            placements_extend = cols.flat[PLACEMENT].extend
            pack_placement = cols.pack[PLACEMENT].pack
            discard_code = DISCARD
            discards_extend = cols.flat[DISCARD].extend
            pack_discard = cols.pack[DISCARD].pack
        while budget is None or row < budget:
            if pos == 0:
                if run is not None and run._wants():
                    run._capture(_state(cfg, row, occurrence, cursor, buf, rng, announced, waiting, synced))
                if cols is not None and len(kinds) >= cols.size:
                    yield from cols.ready()
            if size < B:
                while not stream_done and size < B:
                    block = next_block()
                    if block is None:
                        stream_done = True
                        break
                    first, pass_index, batch = block  # sources first, first + 1, ...; their lengths
                    k = len(batch)
                    if splitting:
                        records = []
                        for occ, source, length in zip(range(occurrence, occurrence + k),
                                                       range(first, first + k), batch, strict=True):
                            arrival = new(Arrival, (occ, source, pass_index, length))
                            if cols is None:
                                yield arrival
                            else:
                                cols.add(arrival)
                            if length > R:
                                chunks = segment(length, R)
                                added = BosAdded(occ, source, len(chunks) - 1)
                                if cols is None:
                                    yield added
                                else:
                                    cols.add(added)
                                records += [(occ, source, start, n, bos) for start, n, bos in chunks]
                            else:
                                records.append((occ, source, 0, length, False))
                    else:
                        occs, sources = range(occurrence, occurrence + k), range(first, first + k)
                        records = list(zip(occs, sources, repeat(0), batch, repeat(False)))
                        if cols is None:
                            for fields in zip(occs, sources, repeat(pass_index), batch):
                                yield new(Arrival, fields)
                        else:
                            cols.arrivals(occurrence, first, pass_index, batch)
                    occurrence += k
                    buf.extend(records)
                    size += len(records)
                if size < B:
                    if not drain:
                        stop_reason = "exhausted"
                        break
                    if not announced:
                        announced = True
                        exhausted = Exhausted(row, pos, size)
                        if cols is None:
                            yield exhausted
                        else:
                            cols.add(exhausted)
                    if not size:
                        stop_reason = "drained"
                        break
            remaining = R - pos
            if pads and not buf.fits(remaining):
                # ---- bestfit-pad: nothing fits, the rest of the row is padding -------------
                if pos == 0:  # every span is longer than R: every further row is padding
                    stop_reason = "starved"
                    break
                padding = Padding(row, pos, remaining)
                if cols is None:
                    yield padding
                else:
                    cols.add(padding)
                row += 1
                pos = 0
                continue
            # ---- bounded-wait: forced start at a row start ----------------------------
            if waiting is not None:
                if synced < buf.issued:  # the spans appended since the last selection arrived now
                    waiting.extend((row, q) for q in range(synced, buf.issued))
                    synced = buf.issued
                forced = None
                if pos == 0:
                    while waiting and not buf.unstarted(waiting[0][1]):
                        waiting.popleft()
                    if waiting and overdue(row, waiting[0][0], max_wait):
                        forced = waiting.popleft()[1]
                if forced is not None:
                    seq = forced
                    occ, src, start, n, bos = buf.remove(seq)
                    crop = n > remaining
                else:
                    seq, (occ, src, start, n, bos), crop = take(remaining)
            else:
                seq, (occ, src, start, n, bos), crop = take(remaining)
            # ---- end bounded-wait --------------------------------------------------------
            size -= 1
            if not crop:
                if cols is None:
                    yield new(Placement, (row, pos, occ, src, start, n, bos, False))
                else:
                    kinds_append(placement_code)
                    placements_extend(pack_placement(row, pos, occ, src, start, n, bos, False))
                pos += n
                if pos == R:
                    row += 1
                    pos = 0
                continue
            if cols is None:
                crop_events, keep, requeue = apply_crop(policy, row, pos, occ, src, (start, n, bos),
                                                        remaining, rng)
                yield from crop_events
            else:  # apply_crop's events in its order, their fields written straight into the columns:
                # the crop's Placement, its Discards, the requeued BOS (tests: batches == batched(events))
                first, bos_inserted, discards, keep, requeue = crop_outcome(policy, start, n, bos, remaining,
                                                                            rng)
                kinds_append(placement_code)
                placements_extend(pack_placement(row, pos, occ, src, first, remaining, bos_inserted, True))
                for a, k in discards:
                    kinds_append(discard_code)
                    discards_extend(pack_discard(occ, src, a, k))
                if requeue is not None:
                    cols.add(BosAdded(occ, src, 1))
            if keep is not None:
                buf.replace(seq, (occ, src, *keep))
                size += 1
            elif requeue is not None:
                buf.append((occ, src, *requeue))
                size += 1
            row += 1
            pos = 0
        if run is not None and pos == 0 and run._wants():
            run._capture(_state(cfg, row, occurrence, cursor, buf, rng, announced, waiting, synced))
        horizon = Horizon(row, pos, stop_reason, buf.snapshot())
        if cols is None:
            yield horizon
        else:
            yield from cols.finish(horizon)


def _state(cfg: PackerConfig, row: int, occurrence: int, cursor: RefillCursor, buf: FastBuffer,
           rng: random.Random | None, announced: bool, waiting: collections.deque[tuple[int, int]] | None,
           synced: int) -> EngineState:
    """The fast engine's state at a row boundary (see :class:`~packing_theory.engine.state.EngineState`)."""
    ordered = buf.ordered()
    arrival_rows = None
    if waiting is not None:  # bounded-wait: the arrival row of every unstarted buffered span
        rows = dict((q, r) for r, q in waiting)
        rows.update((q, row) for q in range(synced, buf.issued))
        arrival_rows = tuple(rows.get(q, -1) if rec[2] == 0 else -1 for q, rec in ordered)
    return EngineState(config_fingerprint(cfg), row, occurrence, cursor.state(),
                       tuple(BufferedSpan(*rec) for _, rec in ordered),
                       None if rng is None else rng.getstate(), announced, arrival_rows)

