"""What a packer's choices cost, read off its event stream.

:class:`CostAccumulator` consumes the event stream of *any* packer — the
streaming family, ``bounded-wait``, or an offline peer with padding, filtered
documents and repeated tokens — and :meth:`~CostAccumulator.result` returns a
:class:`PackerCosts`: the quantities a comparison of packers needs, each with
a precise definition below. :func:`packer_costs` is the one-call form, and
:func:`costs_table` renders several results as a Markdown table (the
``compare`` report calls both for every packer).

Definitions
-----------
*Row positions* are ``rows * R + partial_row_tokens`` (complete rows plus an
incomplete last row). *Rows so far* at an event is the number of rows the
stream has completed before it (rows fill in stream order; for the streaming
engines this is the index of the row being filled).

* ``utilization`` — placed positions (placements, inserted BOS included) over
  row positions; padding and repeated tokens are the rest.
* ``discarded_tokens`` / ``filtered_tokens`` — totals of
  :class:`~packing_theory.engine.events.Discard` / :class:`~packing_theory.engine.events.Filtered`.
* ``never_started_occurrences`` — arrived occurrences with no placement by the
  horizon; ``never_started_sources`` — distinct source ids none of whose
  arrived occurrences has a placement.
* *start delay* of a started occurrence — rows so far at its first placement
  minus rows so far at its arrival (the ``bounded-wait`` theorem's quantity);
  ``start_delay_max`` / ``_p50`` / ``_p99`` over started occurrences
  (nearest-rank quantiles). ``unstarted_wait_max`` — rows so far at the horizon
  minus the arrival row of the oldest never-started occurrence: a censored
  delay (it has not started yet), reported separately, never mixed in.
* *fragments* of a long occurrence (original length ``> R``) — its number of
  placements; ``fragments_per_long_mean`` / ``_max`` over long occurrences
  with at least one placement (``segment-first`` chunks count, a
  ``discard`` crop is one fragment).
* *targets* — placed positions that are prediction targets, i.e. not position
  0 of a row (seed 000: position 0 is input only). A target is *without its
  document's preceding context* when its placement does not begin at the
  document's first token (``start > 0``: a continuation, a ``requeue-bos``
  remainder, a ``segment-first`` chunk after the first, a ``random-span``
  window): the tokens of the document before the placement are not in the
  row. ``share_without_context`` is their share of all targets.

>>> from packing_theory import Packer
>>> c = packer_costs(Packer(capacity=4, min_buffer=2, refill=1, policy="continue",
...                         exhausted="drain").events([9, 1, 2, 3, 3]), 4, label="continue")
>>> c.utilization, c.discarded_tokens, c.fragments_per_long_max, c.start_delay_max
(1.0, 0, 3, 2)
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from .._arrays import INT32, as_numpy, search_sorted, widened
from .._checks import check_int
from .._unique import distinct, distinct_counts
from ..engine.batches import ARRIVAL, PADDING, PLACEMENT, REPEAT, EventBatch, EventItem
from ..engine.compiled import load_starts_kernels
from ..engine.consumers import consumer_settings, feed_all
from ..engine.events import Arrival, Discard, Filtered, Horizon, Padding, Placement, Repeat
from ..engine.starts import StartTracker
from ..errors import InputError, InputTypeError
from .histograms import nearest_rank

__all__ = [
    "COST_COLUMNS",
    "CostAccumulator",
    "PackerCosts",
    "costs_table",
    "nearest_rank",
    "packer_costs",
]


@dataclass(frozen=True, slots=True)
class PackerCosts:
    """The costs of one replay (see the module doc for every definition)."""

    label: str
    capacity: int
    rows: int
    partial_row_tokens: int
    utilization: float | None
    padding_tokens: int
    repeated_tokens: int
    discarded_tokens: int
    filtered_tokens: int
    arrived_occurrences: int
    started_occurrences: int
    never_started_occurrences: int
    arrived_sources: int
    never_started_sources: int
    start_delay_max: int | None
    start_delay_p50: int | None
    start_delay_p99: int | None
    unstarted_wait_max: int | None
    long_occurrences: int
    long_started: int
    long_never_started: int
    fragments_per_long_mean: float | None
    fragments_per_long_max: int | None
    targets: int
    targets_without_context: int
    share_without_context: float | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


COST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("utilization", "utilization"),
    ("discarded_tokens", "discarded tokens"),
    ("never_started_sources", "sources never started"),
    ("long_never_started", "long occurrences never started"),
    ("start_delay_max", "max start delay (rows)"),
    ("start_delay_p99", "p99 start delay (rows)"),
    ("unstarted_wait_max", "oldest unstarted wait (rows, censored)"),
    ("fragments_per_long_mean", "fragments per long source (mean)"),
    ("share_without_context", "targets without preceding context"),
)
"""The default columns of :func:`costs_table`: (field, header)."""




class CostAccumulator:
    """Consume an event stream, one event or batch at a time, and compute :class:`PackerCosts`.

    Args:
        capacity: row capacity ``R`` (long = original length ``> R``).
        label: a name for the result (policy or packer).
        compiled: take a batch's rows and first starts with the numba kernels of
            ``engine/_starts_kernel.py`` (the ``fast`` extra), one loop each instead of a dozen numpy
            temporaries; the same results (the numpy path is the oracle).

    Build it from a packer with :meth:`for_packer`. Occurrence ids must be
    ``0, 1, 2, ...`` in arrival order. Start delays are kept by a
    :class:`~packing_theory.engine.starts.StartTracker` (:attr:`starts`), the
    one the bounded-wait monitor uses: an occurrence's arrival row and start
    row are the rows the stream has completed at its arrival and at its first
    placement.

    Complexity: O(1) per event; a batch in bulk with numpy (the rows so far at
    each event from the running sum of the positions filled before it); memory
    the :class:`~packing_theory.engine.starts.StartTracker`'s (``rows=False``: 1 byte per occurrence,
    8-16 per run of arrivals in one row that holds an unstarted occurrence or is recent, and 8 per
    occurrence of the last batch), 8 per long
    occurrence (its id and its fragment count), and 4 per occurrence for the sources only once one
    differs from its occurrence id (a second pass, a funnel): while every source is its occurrence id
    (one pass) they are not stored. Columns are ``int32``, widened to ``int64`` before a value that
    would not fit is written (a fragment count is at most the placements so far).
    """

    def __init__(self, capacity: int, label: str = "", *, compiled: bool = False) -> None:
        self.capacity = check_int("capacity", capacity, 1)
        self.label = str(label)
        if not isinstance(compiled, bool):
            raise InputTypeError(f"compiled must be a bool, got {type(compiled).__name__} {compiled!r}")
        self.starts = StartTracker(rows=False, compiled=compiled)  # the delays, not each start row
        self.compiled = compiled
        self._long_ids: array[int] = array("i")  # the long occurrences (length > R), in arrival order ...
        self._frag: array[int] = array("i")  # ... and each one's placements (at most self._placements)
        self._source: array[int] | None = None  # None while every source is its occurrence id
        self._placements = 0
        self.rows = 0
        self.fill = 0
        self.placed = 0
        self.padding = 0
        self.repeated = 0
        self.discarded = 0
        self.filtered = 0
        self.targets = 0
        self.targets_without_context = 0
        self.horizon: Horizon | None = None

    @classmethod
    def for_packer(cls, packer: object, label: str | None = None, *,
                   compiled: bool = False) -> CostAccumulator:
        """An accumulator for the stream of ``packer``: its ``R``, labelled with its policy or name.

        ``packer``: an engine, a peer or a :class:`~packing_theory.engine.policies.PackerConfig`.
        """
        settings = consumer_settings(packer)
        return cls(settings.capacity, settings.label if label is None else label, compiled=compiled)

    def feed(self, ev: EventItem) -> None:
        """Consume one event, or each event of a batch in stream order. O(1) per event.

        Raises:
            InputError: an arrival whose occurrence id is not the next one, or
                a placement of an occurrence that has not arrived.
        """
        if type(ev) is Placement:
            occ = ev.occurrence
            n = ev.length
            self.starts.start(occ, self.rows)
            self._count_placements(1)
            i = bisect.bisect_left(self._long_ids, occ)
            if i < len(self._long_ids) and self._long_ids[i] == occ:
                self._frag[i] += 1
            targets = n - 1 if ev.offset == 0 else n
            self.targets += targets
            if ev.start > 0:
                self.targets_without_context += targets
            self.placed += n
            self._advance(n)
        elif type(ev) is Arrival:
            self.starts.arrive(ev.occurrence, self.rows)
            if ev.length > self.capacity:
                self._fit_ids(ev.occurrence)
                self._long_ids.append(ev.occurrence)
                self._frag.append(0)
            self._add_sources(ev.occurrence, np.asarray([ev.source], np.int64))
        elif type(ev) is Discard:
            self.discarded += ev.length
        elif type(ev) is Padding:
            self.padding += ev.length
            self._advance(ev.length)
        elif type(ev) is Repeat:
            self.repeated += ev.length
            self._advance(ev.length)
        elif type(ev) is Filtered:
            self.filtered += ev.length
        elif type(ev) is Horizon:
            self.horizon = ev
        elif type(ev) is EventBatch:
            self._batch(ev)

    def _batch(self, b: EventBatch) -> None:
        """A batch in bulk: the rows completed at each event from the running sum of the positions
        filled before it (placements, padding, repeats, in stream order). O(n log n) numpy.

        A batch the per-event rules would refuse (an arrival out of order, a placement
        before its arrival) is walked event by event, so it raises at the same event
        with the same message.
        """
        ar, pl = b.arrival, b.placement
        before = self.starts.arrivals
        found = self._rows_compiled(b, before) if self.compiled else self._rows_numpy(b, before)
        if found is None:
            for e in b.events():
                self.feed(e)
            return
        a_rows, p_rows, rows, fill, sums = found
        R = self.capacity
        self.starts.arrive_all(ar.occurrence, a_rows)
        long_ids = ar.occurrence[ar.length > R]
        if long_ids.size:
            self._fit_ids(int(long_ids[-1]))
            self._long_ids.frombytes(np.ascontiguousarray(long_ids, as_numpy(self._long_ids).dtype).tobytes())
            self._frag.frombytes(bytes(long_ids.size * self._frag.itemsize))
        if ar.source.size:
            self._add_sources(before, ar.source)
        occ = pl.occurrence
        if occ.size:
            self.starts.start_all(occ, p_rows)
            self._count_placements(int(occ.size))
            if self._long_ids:  # the placements of long occurrences, by their rank among the long ones
                ids = as_numpy(self._long_ids)
                at = _ranks(ids, occ, before - _RECENT)
                hit = at < ids.size
                frag = as_numpy(self._frag)
                ranks, times = distinct_counts(at[hit])  # recent ranks lie close: a table of their span
                frag[ranks] += times.astype(frag.dtype, copy=False)
                del ids, frag
            if sums is None:
                targets = pl.length - (pl.offset == 0)
                sums = (int(pl.length.sum()), int(targets.sum()), int(targets[pl.start > 0].sum()))
            self.placed += sums[0]
            self.targets += sums[1]
            self.targets_without_context += sums[2]
        self.padding += int(b.padding.length.sum())
        self.repeated += int(b.repeat.length.sum())
        self.discarded += int(b.discard.length.sum())
        self.filtered += int(b.filtered.length.sum())
        self.rows, self.fill = rows, fill
        if b.horizon is not None:
            self.horizon = b.horizon

    def _rows_numpy(self, b: EventBatch, before: int) -> _Rows | None:
        """The rows completed before each arrival and each placement of ``b``, and ``(rows, fill)``
        after it, from the running sum of the positions filled (placements, padding, repeats); ``None``
        for a batch the per-event rules refuse (an arrival out of order, a placement before its
        arrival)."""
        kinds, ar, occ = b.kinds, b.arrival, b.placement.occurrence
        a_pos = np.flatnonzero(kinds == ARRIVAL)
        p_pos = np.flatnonzero(kinds == PLACEMENT)
        fresh = occ >= before  # placements of occurrences arriving in this batch: after their arrival?
        if (not np.array_equal(ar.occurrence, np.arange(before, before + a_pos.size))
                or (occ < 0).any() or (occ >= before + a_pos.size).any()
                or (a_pos[occ[fresh] - before] > p_pos[fresh]).any()):
            return None
        R = self.capacity
        advance = np.zeros(kinds.size, dtype=np.int64)
        advance[p_pos] = b.placement.length
        if b.padding.length.size:
            advance[kinds == PADDING] = b.padding.length
        if b.repeat.length.size:
            advance[kinds == REPEAT] = b.repeat.length
        filled = np.cumsum(advance, dtype=np.int64)
        done = self.fill + filled - advance  # positions of the current row filled before each event
        total = self.fill + (int(filled[-1]) if filled.size else 0)
        return (self.rows + done[a_pos] // R, self.rows + done[p_pos] // R, self.rows + total // R, total % R,
                None)

    def _rows_compiled(self, b: EventBatch, before: int) -> _Rows | None:
        """:meth:`_rows_numpy` in one numba loop, which checks the same rules as it goes and sums the
        placed positions and the targets (with and without their preceding context) as well."""
        a_rows = np.empty(b.arrival.occurrence.size, np.int64)
        p_rows = np.empty(b.placement.occurrence.size, np.int64)
        pl = b.placement
        sums = np.zeros(3, np.int64)
        rows, fill, ok = load_starts_kernels().event_rows(
            b.kinds, b.arrival.occurrence, pl.occurrence, pl.length, pl.offset, pl.start, b.padding.length,
            b.repeat.length, self.capacity, self.rows, self.fill, before, ARRIVAL, PLACEMENT, PADDING, REPEAT,
            a_rows, p_rows, sums)
        if not ok:
            return None
        placed, targets, without = (int(v) for v in sums)
        return a_rows, p_rows, int(rows), int(fill), (placed, targets, without)

    def _count_placements(self, k: int) -> None:
        """``k`` more placements: the fragment counts are widened to ``int64`` first if one could pass
        ``int32`` (every count is at most the placements so far)."""
        self._placements += k
        if self._frag.typecode == "i" and self._placements >= INT32.max:
            self._frag = widened(self._frag)

    def _fit_ids(self, top: int) -> None:
        """Widen the long occurrences' ids to ``int64`` first if ``top`` (the largest) passes ``int32``."""
        if self._long_ids.typecode == "i" and top > INT32.max:
            self._long_ids = widened(self._long_ids)

    def _add_sources(self, first: int, sources: npt.NDArray[np.int64]) -> None:
        """The sources of occurrences ``first, first + 1, ...`` (arrived in order). Not stored while each
        is its occurrence id; the first that is not makes the column (``int32``, widened to ``int64``
        first if a source does not fit)."""
        if self._source is None:
            if np.array_equal(sources, np.arange(first, first + sources.size, dtype=np.int64)):
                return
            self._source = array("i" if first + sources.size <= INT32.max else "q")
            self._source.frombytes(np.arange(first, dtype=as_numpy(self._source).dtype).tobytes())
        lo, hi = int(sources.min()), int(sources.max())
        if self._source.typecode == "i" and not (INT32.min <= lo and hi <= INT32.max):
            self._source = widened(self._source)
        self._source.frombytes(np.ascontiguousarray(sources, dtype=as_numpy(self._source).dtype).tobytes())

    def _advance(self, n: int) -> None:
        self.fill += n
        while self.fill >= self.capacity:
            self.fill -= self.capacity
            self.rows += 1

    def result(self) -> PackerCosts:
        """The costs of the events consumed so far. O(occurrences) numpy work (a sort of the sources)."""
        starts = self.starts
        arrived = starts.arrivals
        if self._source is None:  # each source its own occurrence id: as many sources as occurrences
            n_sources, n_started_sources = arrived, starts.started
        else:
            source = as_numpy(self._source)
            n_sources = int(distinct(source).size)
            n_started_sources = int(distinct(source[starts.started_mask()]).size)
            del source  # a view of the growing buffer: released before any append
        frag = as_numpy(self._frag) if self._frag else np.zeros(0, np.int64)
        long_frag = frag[frag > 0]
        long_n, long_started = len(self._frag), int(long_frag.size)
        frag_sum = int(long_frag.sum(dtype=np.int64)) if long_started else 0
        frag_max = int(long_frag.max()) if long_started else 0
        del frag  # a view of the growing buffer: released before any append
        positions = self.rows * self.capacity + self.fill
        delays = starts.delay_counts
        return PackerCosts(
            label=self.label,
            capacity=self.capacity,
            rows=self.rows,
            partial_row_tokens=self.fill,
            utilization=self.placed / positions if positions else None,
            padding_tokens=self.padding,
            repeated_tokens=self.repeated,
            discarded_tokens=self.discarded,
            filtered_tokens=self.filtered,
            arrived_occurrences=arrived,
            started_occurrences=starts.started,
            never_started_occurrences=arrived - starts.started,
            arrived_sources=n_sources,
            never_started_sources=n_sources - n_started_sources,
            start_delay_max=starts.max_delay,
            start_delay_p50=nearest_rank(delays, 0.5),
            start_delay_p99=nearest_rank(delays, 0.99),
            unstarted_wait_max=starts.unstarted_wait(self.rows),
            long_occurrences=long_n,
            long_started=long_started,
            long_never_started=long_n - long_started,
            fragments_per_long_mean=frag_sum / long_started if long_started else None,
            fragments_per_long_max=frag_max if long_started else None,
            targets=self.targets,
            targets_without_context=self.targets_without_context,
            share_without_context=self.targets_without_context / self.targets if self.targets else None,
        )

    def _check(self) -> None:
        """Assert the internal invariants (used by tests)."""
        starts = self.starts
        starts._check()
        n = starts.arrivals
        assert len(self._frag) == len(self._long_ids) <= n
        assert self._source is None or len(self._source) == n
        assert {self._frag.typecode, self._long_ids.typecode} <= {"i", "q"}
        assert self._source is None or self._source.typecode in ("i", "q")
        assert self._frag.typecode == "q" or self._placements < INT32.max
        assert sum(self._frag) <= self._placements
        ids = list(self._long_ids)
        assert ids == sorted(set(ids)) and all(0 <= o < n for o in ids), "long ids not distinct arrivals"
        assert all(bool(f) == starts.is_started(o) for o, f in zip(ids, self._frag, strict=True))
        assert self._source is None or any(s != o for o, s in enumerate(self._source)), \
            "a source column kept while every source is its occurrence id"
        assert 0 <= self.fill < self.capacity
        assert self.targets_without_context <= self.targets <= self.placed
        assert all(starts.arrival_row(o) <= self.rows for o in range(n) if not starts.is_started(o))


_Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int, int, tuple[int, int, int] | None]
"""The rows before each arrival and each placement of a batch, ``(rows, fill)`` after it, and the placed
positions, targets and targets without context when the compiled loop summed them."""

_RECENT = 4096
"""Placements of the occurrences that arrived at most this many before a batch, or in it, are looked up
by a table over their span (the rest, long waiters, by a binary search)."""


def _ranks(ids: npt.NDArray[Any], occ: npt.NDArray[np.int64], recent: int) -> npt.NDArray[np.int64]:
    """The rank of each of ``occ`` among the sorted distinct ``ids``, ``ids.size`` where it is not one.

    A batch's placements are mostly of recent occurrences: those from ``recent`` on are looked up in a
    table of their span (O(k + span)), the few older ones by a binary search over the ids."""
    out = np.full(occ.size, ids.size, np.int64)
    late = occ >= recent
    cut = int(search_sorted(ids, recent))
    if late.any():
        top = int(occ.max()) + 1
        tail = ids[cut:]
        tail = tail[: int(search_sorted(tail, top))]
        table = np.full(top - recent, ids.size, np.int64)
        table[tail.astype(np.int64) - recent] = np.arange(cut, cut + tail.size)
        out[late] = table[occ[late] - recent]
    if not late.all():
        early = np.flatnonzero(~late)
        at = search_sorted(ids[:cut], occ[early])
        found = at < cut
        found[found] = ids[at[found]] == occ[early][found]
        out[early[found]] = at[found]
    return out


def packer_costs(events: Iterable[EventItem], capacity: int, *, label: str = "") -> PackerCosts:
    """Consume a whole stream of events and/or batches and return its :class:`PackerCosts`."""
    (costs,) = feed_all(events, CostAccumulator(capacity, label))
    return costs


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}" if value < 1 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def costs_table(costs: Sequence[PackerCosts], columns: Sequence[tuple[str, str]] = COST_COLUMNS) -> str:
    """A Markdown table, one row per result, one column per ``(field, header)``.

    >>> from packing_theory import Packer
    >>> c = packer_costs(Packer(capacity=4, min_buffer=2, refill=1).events([9, 1, 2]), 4, label="discard")
    >>> print(costs_table([c], [("discarded_tokens", "discarded")]))
    | packer | discarded |
    |---|---:|
    | discard | 0 |
    """
    names = {f.name for f in fields(PackerCosts)}
    bad = [name for name, _ in columns if name not in names]
    if bad:
        raise InputError(f"columns name unknown PackerCosts fields: {bad}")
    lines = ["| packer | " + " | ".join(h for _, h in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for c in costs:
        lines.append(f"| {c.label} | " + " | ".join(_cell(getattr(c, name)) for name, _ in columns) + " |")
    return "\n".join(lines)
