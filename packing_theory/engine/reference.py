"""The naive reference packer: the loaders' loop, transcribed.

This is the oracle the fast engine is tested against. It follows the shape of
autoresearch's ``make_dataloader`` (commit 228791f) and nanochat's BOS
best-fit loader line for line — a Python list as the document buffer, a
``while len(buffer) < B`` refill before every selection, a linear scan for
the largest span that fits with a strict ``>`` (so the earliest of equal
lengths wins), ``min`` over indices for the shortest span (``min`` returns
the first minimum) and ``list.pop`` — written here in our own words over
span records instead of token lists. The continuation semantics follow PR
#372 (the suffix replaces the span at the same index) and PR #544 (``[BOS] +
leftover`` appended when the leftover has more than one token).

It shares with the fast engine only the refill model, the arrival transform
and the crop outcome (:func:`~packing_theory.engine.policies.apply_crop`) —
never the selection.

Complexity: O(B) per selection (the scan) plus O(B) per ``pop``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .base import PackingEngine
from .events import Arrival, BosAdded, BufferedSpan, Event, Exhausted, Horizon, Padding, Placement
from .policies import LengthsInput, apply_crop, overdue, segment
from .refill import RefillCursor
from .state import EngineState, PackerRun, check_state, config_fingerprint

__all__ = ["ReferencePacker"]


class ReferencePacker(PackingEngine):
    """Naive linear-scan packer with the same event stream as :class:`~packing_theory.engine.packer.Packer`.

    >>> ref = ReferencePacker(capacity=8, min_buffer=2, refill=2, exhausted="drain")
    >>> [(p.occurrence, p.length, p.crop) for p in ref.events([5, 3, 9, 4]) if type(p) is Placement]
    [(0, 5, False), (1, 3, False), (3, 4, False), (2, 4, True)]
    """

    engine = "reference"

    def events(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> Iterator[Event]:
        """Replay ``lengths``: the event stream, ending with a Horizon (``resume`` as in ``Packer``)."""
        return self._events(lengths, resume, None)

    def run(self, lengths: LengthsInput, *, resume: EngineState | None = None) -> PackerRun:
        """:meth:`events` as a :class:`~packing_theory.engine.state.PackerRun` that can capture its state."""
        return PackerRun(lambda run: self._events(lengths, resume, run))

    def _events(self, lengths: LengthsInput, resume: EngineState | None, run: PackerRun | None
                ) -> Iterator[Event]:
        cfg = self.config
        row_capacity = cfg.capacity
        buffer_size = cfg.min_buffer
        rng = random.Random(cfg.seed) if cfg.spec.random else None
        max_wait = cfg.wait_threshold or 0  # bounded-wait's A
        # doc_buffer entries: [occurrence, source, start, length, bos_inserted]
        doc_buffer: list[list[Any]] = []
        next_occurrence = 0
        row_idx = 0
        announced = False
        arrival_row: dict[int, int] = {}  # bounded-wait: occurrence -> row of its refill
        if resume is not None:
            resume.check_config(cfg)
            doc_buffer = [list(span) for span in resume.buffer]
            if resume.arrival_rows is not None:
                arrival_row.update((span.occurrence, r) for span, r in zip(resume.buffer, resume.arrival_rows,
                                                                           strict=True) if r >= 0)
            next_occurrence, row_idx, announced = resume.next_occurrence, resume.row, resume.announced
            if rng is not None and resume.rng_state is not None:
                rng.setstate(resume.rng_state)
        cursor = RefillCursor(lengths, cfg, None if resume is None else resume.cursor)
        if resume is not None and cursor.array is not None:
            check_state(resume, cursor.array, cfg)  # a tampered state is refused, O(B)
        pending: list[Event] = []

        def capture() -> None:
            if run is not None and run._wants():
                run._capture(EngineState(
                    config_fingerprint(cfg), row_idx, next_occurrence, cursor.state(),
                    tuple(BufferedSpan(*d) for d in doc_buffer), None if rng is None else rng.getstate(),
                    announced,
                    None if cfg.wait_threshold is None
                    else tuple(arrival_row[d[0]] if d[2] == 0 else -1 for d in doc_buffer)))

        def refill_buffer() -> bool:
            nonlocal next_occurrence
            batch = cursor.next_batch()
            if batch is None:
                return False
            for source, pass_index, length in batch:
                occ = next_occurrence
                next_occurrence += 1
                pending.append(Arrival(occ, source, pass_index, length))
                arrival_row[occ] = row_idx
                if cfg.spec.segments and length > row_capacity:
                    chunks = segment(length, row_capacity)
                    pending.append(BosAdded(occ, source, len(chunks) - 1))
                    for start, n, bos in chunks:
                        doc_buffer.append([occ, source, start, n, bos])
                else:
                    doc_buffer.append([occ, source, 0, length, False])
            return True

        stop_reason = "rows"
        pos = 0
        exhausted = cursor.done
        budget = cfg.row_budget
        while budget is None or row_idx < budget:
            capture()
            pos = 0
            while pos < row_capacity:
                # Ensure the buffer has documents.
                while len(doc_buffer) < buffer_size and not exhausted:
                    if not refill_buffer():
                        exhausted = True
                yield from pending
                pending.clear()
                if len(doc_buffer) < buffer_size:
                    if cfg.exhausted == "stop":
                        stop_reason = "exhausted"
                        break
                    if not announced:
                        announced = True
                        yield Exhausted(row_idx, pos, len(doc_buffer))
                    if not doc_buffer:
                        stop_reason = "drained"
                        break

                remaining = row_capacity - pos
                best_idx = _largest_fit(doc_buffer, remaining)

                # ---- bounded-wait: forced start at a row start ---------------------------
                # At a row start, scan for the oldest unstarted span (buffer order is arrival
                # order; a started span is a continuation with start > 0); if it is overdue it
                # replaces the choice: taken whole if it fits, else cropped to fill the row.
                forced_idx = -1
                if cfg.wait_threshold is not None and pos == 0:
                    for i, doc in enumerate(doc_buffer):
                        if doc[2] == 0:
                            if overdue(row_idx, arrival_row[doc[0]], max_wait):
                                forced_idx = i
                                best_idx = i if doc[3] <= remaining else -1
                            break
                # ---- end bounded-wait ----------------------------------------------------

                if best_idx < 0 and cfg.spec.pads:
                    # Nothing fits: pad the rest of the row instead of cropping (nanochat's SFT loader).
                    if pos == 0:
                        stop_reason = "starved"  # no span fits an empty row: every row would be padding
                        break
                    yield Padding(row_idx, pos, remaining)
                    pos = row_capacity
                elif best_idx >= 0:
                    occ, source, start, n, bos = doc_buffer.pop(best_idx)
                    yield Placement(row_idx, pos, occ, source, start, n, bos, False)
                    pos += n
                else:
                    # Nothing fits: crop the shortest span to fill the row.
                    shortest_idx = _shortest(doc_buffer)
                    if forced_idx >= 0:  # bounded-wait: the overdue span is cropped instead
                        shortest_idx = forced_idx
                    occ, source, start, n, bos = doc_buffer.pop(shortest_idx)
                    crop_events, keep, requeue = apply_crop(cfg.policy, row_idx, pos, occ, source,
                                                            (start, n, bos), remaining, rng)
                    yield from crop_events
                    if keep is not None:
                        doc_buffer.insert(shortest_idx, [occ, source, *keep])
                    elif requeue is not None:
                        doc_buffer.append([occ, source, *requeue])
                    pos += remaining
            else:
                row_idx += 1
                continue
            break
        partial = pos if stop_reason != "rows" else 0
        if stop_reason == "rows":
            capture()
        yield Horizon(row_idx, partial, stop_reason, tuple(BufferedSpan(*d) for d in doc_buffer))


def _largest_fit(doc_buffer: list[list[Any]], remaining: int) -> int:
    """Index of the largest span with length <= ``remaining`` (the first of equals), or -1.

    The loaders' scan: a strict ``>`` keeps the earliest of equal lengths.
    """
    best_idx = -1
    best_len = 0
    for i, doc in enumerate(doc_buffer):
        doc_len = doc[3]
        if doc_len <= remaining and doc_len > best_len:
            best_idx = i
            best_len = doc_len
    return best_idx


def _shortest(doc_buffer: list[list[Any]]) -> int:
    """Index of the shortest span; ``min`` returns the first of equal lengths."""
    return min(range(len(doc_buffer)), key=lambda i: doc_buffer[i][3])

