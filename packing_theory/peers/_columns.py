"""The peers' columnar path: a peer's event stream built as numpy columns (:class:`EventBatch`).

A peer that declares ``columnar = True`` implements
:meth:`~packing_theory.peers.PeerPacker.batches` with these helpers, and its
batches hold exactly the events of its pure Python
:meth:`~packing_theory.peers.PeerPacker.events`, in the same order
(``tests/peers/test_columns.py`` compares them event for event on generated
inputs and on every golden fixture's inputs). Pure Python stays the oracle.

* :class:`Section` — a run of events of one *job* (the arrivals of a window,
  its filtered documents, its discards, its rows), each tagged with its
  window; :func:`assemble` interleaves the sections of every window in
  window-major, section-minor order into one batch (the order in which a peer's
  ``events`` yields them), computing each event's position arithmetically
  (no sort).
* :func:`row_section` — the one row emitter's columns: a row's pieces in
  order, padded to the row width on the right or the left (what
  :func:`~packing_theory.peers._common.row_events` does event by event).
* :func:`best_fit_fifo` — best fit with first-to-reach ties over windows:
  the numba kernel of the ``fast`` extra when numba is present, else the pure
  Python :func:`~packing_theory.peers._common.best_fit` (same bins).
* :func:`first_fit_bins` — first fit in a given order (the kernel, else
  the pure Python :func:`~packing_theory.peers._common.first_fit`; same bins).
* :func:`peer_array` — :func:`~packing_theory.peers._common.peer_lengths`
  vectorised (the same checks and messages) for an integer array.

Complexity: O(events) numpy work per batch, plus the packing algorithm
(O(items log R) for best fit, compiled).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .._arrays import INT32, index_dtype
from .._unique import distinct
from ..engine.batches import ARRIVAL, DISCARD, FILTERED, HORIZON, PADDING, PLACEMENT, REPEAT, EventBatch
from ..engine.compiled import compiled_available, load_numba_module
from ..engine.events import Horizon
from ..errors import InputError
from ._common import best_fit, check_short_lengths, first_fit, peer_lengths

__all__ = ["PieceRule", "Section", "arrival_batches", "arrival_sections", "assemble", "best_fit_fifo",
           "chunk_bounds", "concat_no_wrap_takes", "discard_section", "first_fit_bins", "fragments",
           "horizon_batch", "int64_lengths", "kernel_width", "narrow", "packed_rows", "peer_array",
           "row_chunks", "row_section", "wrapped_rows"]

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

PieceRule = Callable[[Int64Array, Int64Array], tuple[Int64Array, BoolArray]]
"""A piece's length and crop from its occurrence and start (:func:`row_chunks`)."""

_GROUP_OF = {ARRIVAL: "arrival", PLACEMENT: "placement", DISCARD: "discard", FILTERED: "filtered",
             PADDING: "padding", REPEAT: "repeat"}


class Section(NamedTuple):
    """A run of events: the window of each (non-decreasing), its kind code, and its column groups.

    ``groups`` maps a group name of :class:`EventBatch` (``"placement"``, ...)
    to the columns of the section's events of that kind, in section order.
    """

    window: Int64Array
    kinds: npt.NDArray[np.uint8]
    groups: dict[str, tuple[npt.NDArray[Any], ...]]


def narrow(cols: tuple[npt.NDArray[Any], ...]) -> list[npt.NDArray[Any]]:
    """``cols`` with every integer column ``int32`` when all of its values fit (else as it is): a peer's
    pieces and discards are held until its last batch, and are made ``int64`` again batch by batch.

    >>> [c.dtype.name for c in narrow((np.array([1, 2]), np.array([2**31]), np.array([True])))]
    ['int32', 'int64', 'bool']
    """
    out = []
    for c in cols:
        if c.dtype == np.int64 and (not c.size or INT32.min <= int(c.min()) <= int(c.max()) <= INT32.max):
            c = c.astype(np.int32)
        out.append(c)
    return out


def _zeros(n: int = 0) -> Int64Array:
    return np.zeros(n, np.int64)


def assemble(windows: int, sections: Sequence[Section], reasons: Sequence[str] = ()) -> EventBatch:
    """One batch: window by window, each window's events of ``sections[0]``, then ``sections[1]``, ...

    O(events) numpy work: an event's position is its window's offset plus its
    section's offset in that window plus its rank there.
    """
    S = len(sections)
    counts = np.zeros((max(windows, 1), S), np.int64)
    for s, sec in enumerate(sections):
        counts[:, s] = np.bincount(sec.window, minlength=max(windows, 1))
    flat = counts.ravel()
    offsets = (np.cumsum(flat) - flat).reshape(counts.shape)
    kinds = np.empty(int(flat.sum()), np.uint8)
    found: dict[str, list[tuple[Int64Array, tuple[npt.NDArray[Any], ...]]]] = {}
    for s, sec in enumerate(sections):
        n = sec.window.size
        if not n:
            continue
        first = np.cumsum(counts[:, s]) - counts[:, s]
        pos = offsets[sec.window, s] + np.arange(n, dtype=np.int64) - first[sec.window]
        kinds[pos] = sec.kinds
        for name, cols in sec.groups.items():
            code = next(c for c, g in _GROUP_OF.items() if g == name)
            found.setdefault(name, []).append((pos[sec.kinds == code], cols))
    groups: dict[str, Any] = {}
    for name, parts in found.items():
        if len(parts) == 1:
            groups[name] = parts[0][1]
            continue
        order = np.argsort(np.concatenate([p for p, _ in parts]), kind="stable")
        groups[name] = tuple(np.concatenate(cs)[order] for cs in zip(*(c for _, c in parts), strict=True))
    return EventBatch.from_columns(kinds, None, tuple(reasons), **groups)


def arrival_sections(occurrence: Int64Array, lengths: Int64Array, window: Int64Array, *,
                     empty: bool = True) -> tuple[Section, Section]:
    """The Arrival section and the Filtered (``"empty"``, reason code 0) section of documents.

    What :func:`~packing_theory.peers._common.arrivals` yields per window:
    every arrival, then a Filtered for each empty document (none with ``empty=False``).
    """
    n = occurrence.size
    arr = Section(window, np.full(n, ARRIVAL, np.uint8),
                  {"arrival": (occurrence, occurrence, _zeros(n), lengths)})
    gone = (lengths == 0) if empty else np.zeros(n, np.bool_)
    occ = occurrence[gone]
    filt = Section(window[gone], np.full(occ.size, FILTERED, np.uint8),
                   {"filtered": (occ, occ, _zeros(occ.size), _zeros(occ.size))})
    return arr, filt


def arrival_batches(lengths: Int64Array, lo: int, size: int, *, empty: bool = True) -> Iterator[EventBatch]:
    """One window's :func:`arrival_sections` as batches of about ``size`` events (occurrences from ``lo``).

    The same events in the same order as :func:`assemble` of the two sections
    (every Arrival, then a Filtered ``"empty"`` for each empty document; none
    with ``empty=False``), but never a column of every document at once:
    O(``size``) memory besides the lengths.
    """
    step = max(size, 1)
    for a in range(0, lengths.size, step):
        part = lengths[a : a + step]
        occ = np.arange(lo + a, lo + a + part.size, dtype=np.int64)
        yield EventBatch.from_columns(np.full(part.size, ARRIVAL, np.uint8), None, ("empty",),
                                      arrival=(occ, occ, _zeros(part.size), part))
    gone = np.flatnonzero(lengths == 0) if empty else _zeros()
    for a in range(0, gone.size, step):
        occ = gone[a : a + step] + lo
        yield EventBatch.from_columns(np.full(occ.size, FILTERED, np.uint8), None, ("empty",),
                                      filtered=(occ, occ, _zeros(occ.size), _zeros(occ.size)))


def discard_section(occurrence: Int64Array, start: Int64Array, length: Int64Array,
                    window: Int64Array) -> Section:
    """A Discard section (each occurrence is its own source)."""
    return Section(window, np.full(occurrence.size, DISCARD, np.uint8),
                   {"discard": (occurrence, occurrence, start, length)})


def row_section(capacity: int, rows: int, row_base: int, row_window: Int64Array, piece_row: Int64Array,
                occurrence: Int64Array, source: Int64Array, start: Int64Array, length: Int64Array,
                crop: BoolArray, repeat: BoolArray | None = None, *, left_pad: bool = False) -> Section:
    """The events of ``rows`` rows numbered from ``row_base``: each row's pieces, padded to ``capacity``.

    Pieces are given row by row (``piece_row``: the row of each, ``0..rows-1``,
    non-decreasing); ``row_window``: the window of each row. A row's pad goes
    on the right (``left_pad``: on the left), nothing for a full row.

    Raises:
        InputError: an empty piece, or pieces that overflow their row.
    """
    n = piece_row.size
    if n and int(length.min()) < 1:
        raise InputError(f"a piece is empty (length {int(length.min())})")
    per_row = np.bincount(piece_row, minlength=rows).astype(np.int64)
    first = np.cumsum(per_row) - per_row
    c0 = np.concatenate((_zeros(1), np.cumsum(length)))
    used = c0[first + per_row] - c0[first]
    pad = capacity - used
    if rows and int(pad.min()) < 0:
        r = int(np.argmin(pad))
        raise InputError(f"row {row_base + r} holds {int(used[r])} tokens > capacity {capacity}")
    has_pad = pad > 0
    per_event = per_row + has_pad
    row_ev = np.cumsum(per_event) - per_event
    lead = has_pad if left_pad else np.zeros(rows, np.bool_)
    rank = np.arange(n, dtype=np.int64) - first[piece_row]
    piece_pos = row_ev[piece_row] + rank + lead[piece_row]
    offset = c0[:-1] - c0[first][piece_row] + np.where(lead, pad, 0)[piece_row]
    pad_rows = np.flatnonzero(has_pad)
    pad_pos = row_ev[pad_rows] + (0 if left_pad else per_row[pad_rows])
    pad_offset = _zeros(pad_rows.size) if left_pad else used[pad_rows]
    total = int(per_event.sum())
    kinds = np.empty(total, np.uint8)
    is_rep = np.zeros(n, np.bool_) if repeat is None else repeat
    kinds[piece_pos] = np.where(is_rep, REPEAT, PLACEMENT).astype(np.uint8)
    kinds[pad_pos] = PADDING
    row_id = piece_row + row_base
    pl = ~is_rep
    groups: dict[str, tuple[npt.NDArray[Any], ...]] = {
        "placement": (row_id[pl], offset[pl], occurrence[pl], source[pl], start[pl], length[pl],
                      np.zeros(int(pl.sum()), np.bool_), crop[pl]),
        "padding": (pad_rows + row_base, pad_offset, pad[pad_rows]),
    }
    if repeat is not None:
        groups["repeat"] = (row_id[is_rep], offset[is_rep], occurrence[is_rep], source[is_rep], start[is_rep],
                            length[is_rep])
    return Section(np.repeat(row_window, per_event), kinds, groups)


def row_chunks(capacity: int, rows: int, row_base: int, piece_row: npt.NDArray[Any],
               occurrence: npt.NDArray[Any], source: npt.NDArray[Any], start: npt.NDArray[Any],
               length: npt.NDArray[Any] | PieceRule,
               crop: BoolArray | None, size: int) -> Iterator[Section]:
    """:func:`row_section` of one window's rows, about ``size`` pieces at a time (whole rows).

    The same events in the same order as one section of all the rows; a large
    window's batch is never built whole. The columns may be held ``int32``
    (:func:`narrow`); ``length`` may instead be a :data:`PieceRule` giving a
    chunk's lengths and crops from its occurrences and starts (``crop``
    ``None``), so that neither is held.
    """
    n = piece_row.size
    starts = np.searchsorted(piece_row, piece_row[np.arange(0, n, max(size, 1))])  # cuts at row starts
    bounds = [*distinct(np.concatenate((starts, [0]))).tolist(), n] if n else [0, 0]
    r0 = 0
    for a, b in itertools.pairwise(bounds):
        r1 = rows if b == n else int(piece_row[b])
        occ, st = occurrence[a:b].astype(np.int64, copy=False), start[a:b].astype(np.int64, copy=False)
        if callable(length):
            ln, cr = length(occ, st)
        else:
            assert crop is not None
            ln, cr = length[a:b].astype(np.int64, copy=False), crop[a:b]
        yield row_section(capacity, r1 - r0, row_base + r0, np.zeros(r1 - r0, np.int64),
                          piece_row[a:b].astype(np.int64) - r0, occ, source[a:b].astype(np.int64, copy=False),
                          st, ln, cr)
        r0 = r1


def int64_lengths(lengths: Any) -> bool:
    """Whether ``lengths`` is a 1-D integer array whose values all fit ``int64`` (not ``uint64``, not
    masked): :func:`peer_array` takes it as it is, anything else goes through ``peer_lengths``."""
    return (isinstance(lengths, np.ndarray) and not isinstance(lengths, np.ma.MaskedArray)
            and lengths.ndim == 1 and lengths.dtype != np.bool_ and np.issubdtype(lengths.dtype, np.integer)
            and not (lengths.dtype.kind == "u" and lengths.dtype.itemsize == 8))


def peer_array(lengths: Any, *, allow_empty: bool = True, who: str = "this packer") -> Int64Array:
    """``lengths`` as an ``int64`` array of lengths ``>= 0`` (``>= 1`` without ``allow_empty``).

    The checks and messages of :func:`~packing_theory.peers._common.peer_lengths`,
    vectorised for an integer array (anything else goes through it).

    >>> peer_array(np.array([3, 0, 2])).tolist()
    [3, 0, 2]
    >>> peer_array(np.array([3, -1]))
    Traceback (most recent call last):
    packing_theory.InputError: lengths[1] must be a length >= 0, got -1
    """
    if not int64_lengths(lengths):
        values = peer_lengths(lengths, allow_empty=allow_empty, who=who)
        top = np.iinfo(np.int64).max
        over = next((i for i, n in enumerate(values) if n > top), None)
        if over is not None:  # the columns are int64; the pure events take any Python int
            raise InputError(f"lengths[{over}] = {values[over]} exceeds the columnar path's int64 columns "
                             f"(at most {top}); replay it with events()")
        return np.asarray(values, dtype=np.int64)
    check_short_lengths(lengths, allow_empty=allow_empty, who=who)
    out: Int64Array = lengths.astype(np.int64, copy=False)
    return out


def best_fit_fifo(sizes: Int64Array, order: Int64Array, window_starts: Int64Array, capacity: int, *,
                  compiled: bool | None = None) -> Int64Array:
    """The bin of each item of ``order`` (processing order) under best fit with first-to-reach ties.

    Window ``w`` is ``order[window_starts[w]:window_starts[w + 1]]``; each
    window starts with no open bin; bins are numbered in creation order
    across windows. ``compiled``: ``True`` the numba kernel
    (:class:`~packing_theory.MissingDependency` without numba), ``False`` the
    pure Python :func:`~packing_theory.peers._common.best_fit`, ``None`` the
    kernel when numba is installed. ``sizes`` and ``order`` may be ``int32``
    (taken as they are); the kernel's bins and work arrays are ``int32`` where
    the items and ``capacity`` fit (:func:`narrow`'s bound), so its transient
    is 12 bytes per item, not 24 (the pure Python path returns ``int64``).

    >>> best_fit_fifo(np.array([2, 4, 2, 1, 1]), np.arange(5), np.array([0]), 5, compiled=False).tolist()
    [0, 1, 0, 1, 0]
    """
    use = compiled_available() if compiled is None else compiled
    if use:
        kernel = load_numba_module("packing_theory.peers._kernels", "the peers' compiled bin packing")
        n = int(order.size)
        width = kernel_width(n, capacity)
        bins: Int64Array = kernel.best_fit_fifo(_as_index(sizes), _as_index(order),
                                                np.ascontiguousarray(window_starts, np.int64), int(capacity),
                                                np.full(n + 1, -1, width), np.zeros(n + 1, width),
                                                np.empty(n, width))
        return bins
    out = np.empty(order.size, np.int64)
    size_list = sizes.tolist()
    bounds = [*window_starts.tolist(), order.size]
    base = 0
    for lo, hi in itertools.pairwise(bounds):
        seq = order[lo:hi].tolist()
        where = {item: j for j, item in enumerate(seq)}
        packed = best_fit(size_list, seq, capacity, ties="first-to-reach")
        for b, items in enumerate(packed):
            for item in items:
                out[lo + where[item]] = base + b
        base += len(packed)
    return out


def kernel_width(items: int, capacity: int) -> type[np.signedinteger[Any]]:
    """The width of :func:`best_fit_fifo`'s bins and work arrays: ``int32`` where ``items + 1`` bins and
    the spaces ``0..capacity`` fit it, else ``int64``.

    >>> kernel_width(2**31 - 2, 2**31 - 1).__name__, kernel_width(2**31 - 1, 8).__name__
    ('int32', 'int64')
    """
    return index_dtype(max(items + 1, capacity))


def _as_index(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a`` contiguous, ``int32`` or ``int64`` as it is (any other integer type made ``int64``)."""
    return np.ascontiguousarray(a, a.dtype if a.dtype in (np.int32, np.int64) else np.int64)


def first_fit_bins(sizes: Int64Array, capacity: int, max_items: int | None = None, *,
                   compiled: bool | None = None) -> Int64Array:
    """The bin of each item under :func:`~packing_theory.peers._common.first_fit` (in the given order).

    Bins are numbered in opening order, and a bin's items are in processing
    order, so ``np.argsort(bins, kind="stable")`` lists the items bin by bin
    (``int32`` from the kernel where the items' count fits, else ``int64``).
    ``compiled``: ``True`` the numba kernel (:class:`~packing_theory.MissingDependency`
    without numba), ``False`` the pure Python ``first_fit``, ``None`` the
    kernel when numba is installed. Complexity: O(n log n).

    >>> first_fit_bins(np.array([5, 3, 4, 2, 2]), 8, compiled=False).tolist()
    [0, 0, 1, 1, 1]
    >>> first_fit_bins(np.array([1, 1, 1]), 8, max_items=2, compiled=False).tolist()
    [0, 0, 1]
    """
    if max_items is not None and max_items < 1:
        raise InputError(f"max_items must be >= 1 or None, got {max_items!r}")
    use = compiled_available() if compiled is None else compiled
    if use:
        kernel = load_numba_module("packing_theory.peers._kernels", "the peers' compiled first fit")
        kind = np.int32 if sizes.dtype == np.int32 else np.int64  # a narrow column is not copied to int64
        bins: Int64Array = np.empty(sizes.size, index_dtype(sizes.size))
        small = kind == np.int32 and capacity <= INT32.max  # every free space fits int32, above its min
        tree = np.full(2 * 1024, INT32.min if small else -(1 << 62), np.int32 if small else np.int64)
        kernel.first_fit(np.ascontiguousarray(sizes, kind), int(capacity),
                         0 if max_items is None else int(max_items), bins, tree)
        return bins
    out = np.empty(sizes.size, np.int64)
    for b, items in enumerate(first_fit(sizes.tolist(), capacity, max_items)):
        out[items] = b
    return out


def horizon_batch(rows: int, stop_reason: str = "drained") -> EventBatch:
    """The last batch of an offline peer's stream: its Horizon alone (nothing buffered)."""
    return EventBatch.from_columns(np.array([HORIZON], np.uint8), Horizon(rows, 0, stop_reason, ()))


def chunk_bounds(n: int, step: int, size: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` document ranges of whole windows of ``step`` documents, about ``size`` documents each."""
    per = max(step, (max(size, 1) // max(step, 1)) * step)
    return [(lo, min(n, lo + per)) for lo in range(0, n, max(per, 1))]


def fragments(occurrence: Int64Array, lengths: Int64Array, width: int) -> tuple[Int64Array, Int64Array,
                                                                                 Int64Array]:
    """Each document cut into pieces of ``width`` tokens (the last shorter): occurrence, start, length.

    Empty documents give no piece (``range(0, 0, width)`` is empty).
    """
    per = -(-lengths // width)
    occ = np.repeat(occurrence, per)
    first = np.cumsum(per) - per
    k = np.arange(occ.size, dtype=np.int64) - np.repeat(first, per)
    start = k * width
    return occ, start, np.minimum(width, np.repeat(lengths, per) - start)


def packed_rows(sizes: Int64Array, window: Int64Array | None, order: Int64Array, capacity: int,
                compiled: bool | None) -> tuple[Int64Array, npt.NDArray[Any], Int64Array, int]:
    """Best fit (first-to-reach ties) of items processed in ``order``, window by window.

    ``window``: each item's window (the items of a window contiguous in
    ``order``; ``None``: one window). Returns the items row by row (rows in
    creation order, items in insertion order), the row of each of them
    (``int32`` where the rows fit: :func:`narrow`), the window of each row and
    the number of rows.
    """
    if not order.size:
        return _zeros(), _zeros(), _zeros(), 0
    if window is None:
        starts = _zeros(1)
    else:
        wseq = window[order]
        starts = np.flatnonzero(np.concatenate(([True], wseq[1:] != wseq[:-1]))).astype(np.int64)
    bins = best_fit_fifo(sizes, order, starts, capacity, compiled=compiled)
    rows = int(bins.max()) + 1
    row_window = np.zeros(rows, np.int64)
    if window is not None:
        row_window[bins] = wseq
        del wseq
    by_row = np.argsort(bins, kind="stable")
    (item_row,) = narrow((bins[by_row],))
    del bins
    return order[by_row], item_row, row_window, rows


def concat_no_wrap_takes(lengths: Int64Array, capacity: int, used: int, *, compiled: bool | None = None
                         ) -> tuple[Int64Array, int]:
    """Tokens of each document kept by a concatenation that discards the rest of an overflowing document.

    ``used``: the current row's fill before the first document; returns the
    kept tokens per document and the fill after the last. The numba kernel
    when ``compiled`` (``None``: when numba is installed), else a Python loop.

    >>> concat_no_wrap_takes(np.array([3, 3, 0, 2]), 4, 0, compiled=False)[0].tolist()
    [3, 1, 0, 2]
    """
    use = compiled_available() if compiled is None else compiled
    if use:
        kernel = load_numba_module("packing_theory.peers._kernels", "the peers' compiled concatenation")
        take, after = kernel.concat_no_wrap_takes(np.ascontiguousarray(lengths, np.int64), int(capacity),
                                                  int(used))
        return take, int(after)
    out = []
    for n in lengths.tolist():
        if n == 0:
            out.append(0)
        elif used + n < capacity:
            out.append(n)
            used += n
        else:
            out.append(capacity - used)
            used = 0
    return np.asarray(out, dtype=np.int64), used


def wrapped_rows(L: int, ls: Int64Array, occ: Int64Array, window: Int64Array, windows: int, row: int, *,
                 crop: bool = True, size: int | None = None) -> tuple[Iterator[Section], int]:
    """Each window's tokens concatenated and cut every ``L`` (TRL's ``_pack_wrapped``), the last row padded.

    ``crop``: a piece shorter than its document is marked cropped (else no
    piece is). ``size``: the rows come as sections of about ``size`` pieces
    each (whole rows), so a large window's pieces are never built at once;
    ``None``: one section of every row. Returns the sections (numbered from
    ``row``) and the number of rows. O(documents) numpy work up front, then
    O(pieces) over the sections.
    """
    c = np.cumsum(ls) - ls
    wfirst = np.flatnonzero(np.concatenate(([True], window[1:] != window[:-1])))
    w_c = c[wfirst]  # each window's first token in the stream
    t0 = c - w_c[window] if windows > 1 else c  # a document's first token within its window (int64)
    del c
    rows_w = -(-np.add.reduceat(ls, wfirst) // L)
    base = np.cumsum(rows_w) - rows_w
    rows = int(rows_w.sum())
    (row_window,) = narrow((np.repeat(np.arange(windows, dtype=np.int64), rows_w),))
    n = int(ls.size)
    if size is None or not n:
        cuts = [0, n]
    else:  # document blocks of about `size` pieces
        cum = np.cumsum(_pieces_per(ls, t0, L))
        cuts = [*distinct(np.concatenate(([0], np.searchsorted(cum, np.arange(size, int(cum[-1]), size)) + 1,
                                          [n])).clip(0, n)).tolist()]
        del cum
    # held until the last section: the ids int32 where they fit (narrow) and each block's first start; a
    # block's starts, pieces per document and first rows are computed from them block by block
    block_t0 = t0[cuts[:-1]] if n else _zeros(len(cuts) - 1)
    del t0
    occ, window = narrow((occ, window if windows > 1 else window[:0]))  # one window: no column needed

    def sections() -> Iterator[Section]:
        done = 0  # rows given so far
        held: list[npt.NDArray[Any]] | None = None  # the pieces of a row the next block may continue
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            ls_b = ls[a:b]
            t0_b = np.cumsum(ls_b) - ls_b + block_t0[i]  # the block's starts within their windows
            if windows > 1:  # a window that begins inside the block starts its tokens at 0
                t0_b += w_c[int(window[a])] - w_c[window[a:b]]
            k_per = _pieces_per(ls_b, t0_b, L)
            d = np.repeat(np.arange(b - a, dtype=np.int64), k_per)
            k = np.arange(d.size, dtype=np.int64) - np.repeat(np.cumsum(k_per) - k_per, k_per)
            r = t0_b[d] // L + k
            td, ld = t0_b[d], ls_b[d]
            g0 = np.maximum(td, r * L)
            length = np.minimum(td + ld, (r + 1) * L) - g0
            cropped = (length < ld) if crop else np.zeros(length.size, np.bool_)
            doc = a + d
            first_row = base[window[doc]] if windows > 1 else base[0]
            cols: list[npt.NDArray[Any]] = [first_row + r, occ[doc].astype(np.int64), g0 - td, length,
                                            cropped]
            if held is not None:
                cols = [np.concatenate((h, x)) for h, x in zip(held, cols, strict=True)]
            piece_row = cols[0]
            last = b == n
            upto = rows if last else (int(piece_row[-1]) if piece_row.size else done)
            cut = piece_row.size if last else int(np.searchsorted(piece_row, upto))
            held = None if last else [x[cut:] for x in cols]
            if upto > done or (last and size is None):
                pr, o, st, ln, cr = (x[:cut] for x in cols)
                in_window = row_window[done:upto].astype(np.int64)
                yield row_section(L, upto - done, row + done, in_window, pr - done, o, o, st, ln, cr)
                done = upto

    return sections(), rows


def _pieces_per(ls: Int64Array, t0: Int64Array, L: int) -> Int64Array:
    """Pieces of each document of ``ls`` starting at token ``t0`` of its window cut every ``L``."""
    out: Int64Array = np.where(ls > 0, (t0 + ls - 1) // L - t0 // L + 1, 0)
    return out
