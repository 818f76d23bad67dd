"""The columnar path of the paper peers (``fewer-truncations``, ``seamless``): their events as numpy columns.

:class:`~packing_theory.peers.paper.FewerTruncations` and
:class:`~packing_theory.peers.paper.Seamless` pack a finite table offline, so
their event stream is one window: every Arrival, then the Filtered of the
empty documents, then the rows, then the Discards, then the Horizon. These
functions build the same events, in the same order, with numpy (the packing
loop compiled with numba when asked) — the pure Python ``events`` of both
classes stay the oracle (``tests/peers/test_paper_columns.py``).

* :func:`first_opened_bins` — best fit with first-opened ties: the numba
  kernel of :mod:`packing_theory.peers._best_fit_kernel`, else the pure
  :func:`~packing_theory.peers._common.best_fit` (same bins);
* :func:`window_columns` — :func:`~packing_theory.peers.paper.seamless_windows`
  for every long text at once;
* :func:`fewer_truncations_batches`, :func:`seamless_batches` — the batches.

Complexity: O(events) numpy work plus the packing (O(items log R) best fit,
O(items log items) first fit, compiled).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .._arrays import INT32
from ..engine.batches import EventBatch
from ..engine.compiled import compiled_available, load_numba_module
from ._columns import (
    arrival_sections,
    assemble,
    discard_section,
    first_fit_bins,
    fragments,
    horizon_batch,
    narrow,
    row_section,
)
from ._common import best_fit, check_split_budget

__all__ = ["KERNEL_SPACES", "PLAN_CHUNK", "Block", "Drops", "Pieces", "Windows", "fewer_truncations_batches",
           "first_opened_bins", "longest_first", "seamless_batches", "window_columns"]

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

PLAN_CHUNK = 1 << 17
"""Documents (or stage-2 items) whose temporary columns the planners hold at once: the planners' peak
is their narrow plan plus one chunk's temporaries, not a dozen ``int64`` columns of every document."""

KERNEL_SPACES = 1 << 22
"""The largest capacity the first-opened kernel packs: it holds O(capacity) arrays (about 40 MB here).

Above it :func:`first_opened_bins` answers with the pure Python best fit (the same bins)."""


class Pieces(NamedTuple):
    """Row pieces in row order (``row`` non-decreasing), each its own document's tokens."""

    row: Int64Array
    occurrence: Int64Array
    start: Int64Array
    length: Int64Array
    crop: BoolArray
    repeat: BoolArray


class Drops(NamedTuple):
    """Discarded token ranges in stream order."""

    occurrence: Int64Array
    start: Int64Array
    length: Int64Array


class Block(NamedTuple):
    """The pieces of rows ``r0 <= row < r1`` (a row may hold none): a part of a plan, released once its
    rows' batches are out.

    Held compact: ``pieces.row`` counts from ``r0`` (``uint16`` when the block has fewer than 65,535
    rows), ``pieces.length`` is ``uint16`` when every piece's length fits (a piece lies in one row).
    """

    r0: int
    r1: int
    pieces: Pieces


_SHORT = int(np.iinfo(np.uint16).max)


def _zeros(n: int = 0) -> Int64Array:
    return np.zeros(n, np.int64)


def _compact(i: int, col: npt.NDArray[Any], r0: int, r1: int, copy: bool) -> npt.NDArray[Any]:
    """Column ``i`` of :class:`Pieces` (rows ``r0..r1-1``, rows counted from ``r0`` in the block) as a
    :class:`Block` holds it (a copy when ``copy``, so that the column it is a slice of can be released)."""
    if i == 0:
        if r1 - r0 < _SHORT:
            return (col - r0).astype(np.uint16)
        (rel,) = narrow((col.astype(np.int64) - r0,))
        return rel
    if i == 3 and col.size and 0 <= int(col.min()) <= int(col.max()) <= _SHORT:
        return col.astype(np.uint16)
    return col.copy() if copy else col


def _blocks(r0: int, r1: int, cols: list[npt.NDArray[Any]]) -> list[Block]:
    """The pieces ``cols`` (:class:`Pieces`' columns, rows ``r0..r1-1`` numbered from 0) as blocks of
    about :data:`PLAN_CHUNK` pieces (whole rows), held compact (:class:`Block`), built column by column
    (``cols`` is emptied: at most one column is held twice)."""
    row, n = cols[0], cols[0].size
    cuts = [c for c in np.unique(np.searchsorted(row, row[PLAN_CHUNK::PLAN_CHUNK])).tolist() if c > 0]
    at = [0, *cuts, n]
    bounds = [0, *(int(row[c]) for c in cuts), r1 - r0]
    del row
    split: list[list[npt.NDArray[Any]]] = []
    for i in range(len(cols)):
        split.append([_compact(i, cols[i][at[k]:at[k + 1]], bounds[k], bounds[k + 1], len(at) > 2)
                      for k in range(len(at) - 1)])
        cols[i] = cols[i][:0]
    return [Block(r0 + bounds[k], r0 + bounds[k + 1], Pieces(*(c[k] for c in split)))
            for k in range(len(at) - 1)]


def _cat(parts: list[list[npt.NDArray[Any]]]) -> list[npt.NDArray[Any]]:
    """The columns of ``parts`` concatenated, column by column, each part's column released once copied
    (``parts`` is emptied): at most one column is held twice."""
    out = []
    for i in range(len(parts[0])):
        out.append(np.concatenate([p[i] for p in parts]))
        for p in parts:
            p[i] = p[i][:0]
    parts.clear()
    return out


def _wide(c: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An integer column as ``int64`` (a bool column as it is)."""
    return c if c.dtype == np.bool_ else c.astype(np.int64, copy=False)


def _sort_order(keys: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``np.argsort(keys, kind="stable")``, ``int32`` where it fits (``_columns.narrow``)."""
    (order,) = narrow((np.argsort(keys, kind="stable"),))
    return order


def longest_first(length: npt.NDArray[Any], top: int) -> npt.NDArray[Any]:
    """``np.argsort(-length, kind="stable")`` for lengths in ``0..top``: ``int32`` where it fits.

    With ``top < 2**16`` a counting sort, :data:`PLAN_CHUNK` items at a time,
    writes the order straight into its ``int32`` column (no ``int64`` order of
    every item); else the argsort, narrowed (``narrow``). O(n + top * chunks).

    >>> longest_first(np.array([3, 5, 3, 0, 5]), 5).tolist()
    [1, 4, 0, 2, 3]
    """
    n = length.size
    if top >= 1 << 16 or n > INT32.max:
        return _sort_order(-length)
    count = np.bincount(length, minlength=top + 1)
    offset = np.cumsum(count[::-1])[::-1] - count  # items longer than each length
    del count
    order = np.empty(n, np.int32)
    for lo in range(0, n, PLAN_CHUNK):
        part = length[lo:lo + PLAN_CHUNK]
        local = np.argsort(-part, kind="stable")
        key = -part[local]
        rank = np.arange(local.size) - np.searchsorted(key, key, side="left")
        order[offset[-key] + rank] = local + lo
        offset += np.bincount(part, minlength=top + 1)
        del part, local, key, rank
    return order


def _kernel_ints(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a`` contiguous for a kernel: ``int32`` kept (no ``int64`` copy of a narrow column), else int64."""
    return np.ascontiguousarray(a) if a.dtype == np.int32 else np.ascontiguousarray(a, np.int64)


def first_opened_bins(sizes: Int64Array, order: Int64Array, capacity: int, *,
                      compiled: bool | None = None) -> Int64Array:
    """The bin of each item of ``order`` (processing order) under best fit with first-opened ties.

    Sizes lie in ``1..capacity``; bins are numbered in opening order (``int32``
    from the kernel when ``order`` is ``int32``, else ``int64``).
    ``compiled``: ``True`` the numba kernel (:class:`~packing_theory.MissingDependency`
    without numba), ``False`` the pure Python
    :func:`~packing_theory.peers._common.best_fit`, ``None`` the kernel when
    numba is installed; a capacity over :data:`KERNEL_SPACES` is packed by
    the pure best fit either way.

    >>> first_opened_bins(np.array([2, 4, 2, 1, 1]), np.arange(5), 5, compiled=False).tolist()
    [0, 1, 0, 0, 1]
    """
    use = compiled_available() if compiled is None else compiled
    if use:
        kernel = load_numba_module("packing_theory.peers._best_fit_kernel",
                                   "the peers' compiled best fit (first-opened ties)")
        if capacity <= KERNEL_SPACES:
            bins: Int64Array = kernel.best_fit_first_opened(_kernel_ints(sizes), _kernel_ints(order),
                                                            int(capacity))
            return bins
    out = np.empty(order.size, np.int64)
    seq = order.tolist()
    where = {item: j for j, item in enumerate(seq)}
    for b, items in enumerate(best_fit(sizes.tolist(), seq, capacity, ties="first-opened")):
        for item in items:
            out[where[item]] = b
    return out


def _batches(values: Int64Array, capacity: int, rows: int, blocks: list[Block], drops: Drops, size: int,
             repeats: bool) -> Iterator[EventBatch]:
    """One offline window's events in batches of about ``size`` documents, pieces (whole rows) or discards.

    Every Arrival, the Filtered (``"empty"``) of each empty document, the rows
    (``blocks``, padded on the right; each block taken off the list once its rows are out, so that
    the plan held shrinks as the stream goes), the discards, the Horizon.
    """
    n = values.size
    reasons = ("empty",)
    for lo in range(0, n, size):
        hi = min(n, lo + size)
        arr, _ = arrival_sections(np.arange(lo, hi, dtype=np.int64), values[lo:hi], _zeros(hi - lo),
                                  empty=False)
        yield assemble(1, [arr], reasons)
    empty = np.flatnonzero(values == 0).astype(np.int64)
    for lo in range(0, empty.size, size):
        part = empty[lo:lo + size]
        _, filt = arrival_sections(part, _zeros(part.size), _zeros(part.size))
        yield assemble(1, [filt], reasons)
    while blocks:
        base, end, pieces = blocks.pop(0)
        a, r0 = 0, base
        while r0 < end:  # about size pieces (whole rows, at most size) a batch: a row holds many short pieces
            r1 = min(end, r0 + size)
            if a + size < pieces.row.size:
                r1 = min(r1, max(r0 + 1, base + int(pieces.row[a + size])))
            b = int(np.searchsorted(pieces.row, r1 - base))
            # the pieces and discards are held narrow (Block, narrow): int64 per batch
            p_occ, p_rep = _wide(pieces.occurrence[a:b]), pieces.repeat[a:b] if repeats else None
            p_row = _wide(pieces.row[a:b]) - (r0 - base)
            yield assemble(1, [row_section(capacity, r1 - r0, r0, _zeros(r1 - r0), p_row, p_occ, p_occ,
                                           _wide(pieces.start[a:b]), _wide(pieces.length[a:b]),
                                           pieces.crop[a:b], p_rep)], reasons)
            del p_occ, p_rep, p_row
            a, r0 = b, r1
        del pieces
    for lo in range(0, drops.occurrence.size, size):
        d_occ = _wide(drops.occurrence[lo:lo + size])
        yield assemble(1, [discard_section(d_occ, _wide(drops.start[lo:lo + size]),
                                           _wide(drops.length[lo:lo + size]), _zeros(d_occ.size))], reasons)
    yield horizon_batch(rows)


def fewer_truncations_batches(values: Int64Array, capacity: int, name: str, size: int,
                              compiled: bool | None) -> Iterator[EventBatch]:
    """:meth:`~packing_theory.peers.paper.FewerTruncations.events` in columns.

    Chunks of at most ``capacity`` tokens (:func:`~packing_theory.peers._columns.fragments`),
    ordered longest first stably, best fit with first-opened ties; rows are
    the bins in opening order, chunks in insertion order. ``values`` is
    checked (:func:`~packing_theory.peers._columns.peer_array`); the split
    budget is asked here, before any batch.
    """
    check_split_budget(values, capacity, name, columns=True)
    rows, blocks = _fewer_truncations_rows(values, capacity, compiled)
    yield from _batches(values, capacity, rows, blocks, Drops(_zeros(), _zeros(), _zeros()), size, False)


def _fewer_truncations_rows(values: Int64Array, L: int, compiled: bool | None) -> tuple[int, list[Block]]:
    """The rows and pieces of :func:`fewer_truncations_batches` (a function of its own: its intermediate
    columns are released before the first batch, not held by the generator while it yields).

    The chunks are cut :data:`PLAN_CHUNK` documents at a time and held narrow
    (:func:`~packing_theory.peers._columns.narrow`); the sort orders are
    ``int32`` where they fit, and the two permutations (longest first, then
    row by row) are composed before the chunks' columns are gathered once.
    """
    parts = [narrow(fragments(np.arange(lo, min(values.size, lo + PLAN_CHUNK), dtype=np.int64),
                              values[lo:lo + PLAN_CHUNK], L)) for lo in range(0, values.size, PLAN_CHUNK)]
    c_occ, c_start, c_len = _cat(parts) if parts else [_zeros(), _zeros(), _zeros()]
    del parts
    order = longest_first(c_len, L)
    bins = first_opened_bins(c_len, order, L, compiled=compiled)
    rows = int(bins.max()) + 1 if bins.size else 0
    (bins,) = narrow((bins,))
    by_row = np.argsort(bins, kind="stable")
    items = order[by_row]
    del order
    (row,) = narrow((bins[by_row],))
    del bins, by_row
    none = np.zeros(items.size, np.bool_)
    occ = c_occ[items]
    del c_occ
    start = c_start[items]
    del c_start
    length = c_len[items]
    del c_len, items
    return rows, _blocks(0, rows, [row, occ, start, length, none, none])


class Windows(NamedTuple):
    """Stage 1 of Seamless Packing for every text of ``n >= L`` tokens, in text order."""

    text: Int64Array  # the text of each window (non-decreasing)
    start: Int64Array  # each window's first token; windows are [start, start + L)
    rest: Int64Array  # per text given: start of the short remainder deferred to stage 2, or -1


def window_columns(lengths: Int64Array, capacity: int, repetition: float) -> Windows:
    """:func:`~packing_theory.peers.paper.seamless_windows` of each length (all ``>= capacity``) at once.

    With ``q = n // L`` and ``r = n % L`` the pure rule's tests are rewritten
    without a product that could pass ``2**63``: ``n < (L - m)(q + 1) + m``
    is ``r + m q < L`` and ``o = (L(q + 1) - n) // (q + 1) + 1`` is
    ``(L - r) // (q + 1) + 1``.

    >>> w = window_columns(np.array([20, 22, 25]), 10, 0.3)
    >>> w.text.tolist(), w.start.tolist(), w.rest.tolist()
    ([0, 0, 1, 1, 2, 2, 2], [0, 10, 0, 10, 0, 8, 15], [-1, 20, -1])
    """
    L = capacity
    m = int(L * repetition)
    q = lengths // L
    r = lengths - q * L
    exact = r == 0
    defer = ~exact & (r + m * q < L)
    overlap = ~exact & ~defer
    step = np.where(overlap, L - ((L - r) // (q + 1) + 1), L)
    count = q + overlap
    text = np.repeat(np.arange(lengths.size, dtype=np.int64), count)
    k = np.arange(text.size, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    start = np.where(k < q[text], k * step[text], lengths[text] - L)
    return Windows(text, start, np.where(defer, q * L, -1))


def _window_rows(windows: Windows, L: int) -> tuple[Pieces, Drops]:
    """Each window a row: the tokens the previous window of its text showed (Repeat), then the new ones
    (a text's occurrence is its document).

    Tokens skipped between two windows of a text are discarded.
    """
    s = windows.start
    w = s.size
    first = np.ones(w, np.bool_)
    first[1:] = windows.text[1:] != windows.text[:-1]
    frontier = np.where(first, 0, np.concatenate((_zeros(1), s[:-1] + L)))
    gap = s > frontier
    rep = s < frontier
    per = 1 + rep
    row = np.repeat(np.arange(w, dtype=np.int64), per)
    second = np.arange(row.size, dtype=np.int64) - np.repeat(np.cumsum(per) - per, per) == 1
    is_rep = rep[row] & ~second  # a row with a Repeat shows it first
    new = np.maximum(s, frontier)[row]
    p_start = np.where(is_rep, s[row], new)
    p_len = np.where(is_rep, frontier[row] - s[row], s[row] + L - new)
    o = windows.text
    pieces = Pieces(row, o[row], p_start, p_len, np.zeros(row.size, np.bool_), is_rep)
    return pieces, Drops(o[gap], frontier[gap], (s - frontier)[gap])


def _short_items(values: Int64Array, L: int, long: Int64Array, rest: Int64Array) -> list[npt.NDArray[Any]]:
    """Stage 2's items in text order: each text under ``L`` (an empty one too), each deferred remainder.

    Held narrow (``int32`` where they fit), found :data:`PLAN_CHUNK` texts at a time (no ``int64``
    column of every item): the document, its first token, its length.
    """
    keep = values < L
    deferred = rest >= 0
    keep[long[deferred]] = True
    count = int(np.count_nonzero(keep))
    n = values.size
    fits = n <= INT32.max and (not n or int(values.max()) <= INT32.max)
    doc = np.empty(count, np.int32 if fits else np.int64)
    length = np.empty(count, doc.dtype)
    at = 0
    for lo in range(0, n, PLAN_CHUNK):
        part = np.flatnonzero(keep[lo:lo + PLAN_CHUNK])
        part += lo
        doc[at:at + part.size] = part
        length[at:at + part.size] = values[part]
        at += part.size
        del part
    del keep
    where = np.searchsorted(doc, long[deferred])
    (first,) = narrow((rest[deferred],))
    start = np.zeros(count, first.dtype)
    start[where] = first
    length[where] -= first
    return [doc, start, length]


def _cut_rows(doc: Int64Array, start: Int64Array, length: Int64Array, within: Int64Array, row: Int64Array,
              L: int) -> tuple[Pieces, Drops]:
    """Bins cut to their first ``L`` tokens: each item's kept tokens (row ``row``), the rest discarded.

    Items are bin by bin, non-empty; ``within``: an item's first token in its bin.
    """
    take = np.clip(L - within, 0, length)
    kept = take > 0
    cut = take < length
    pieces = Pieces(*narrow((row[kept], doc[kept], start[kept], take[kept], cut[kept],
                             np.zeros(int(kept.sum()), np.bool_))))
    del kept
    return pieces, Drops(*narrow((doc[cut], (start + take)[cut], (length - take)[cut])))


def _stream_rows(doc: Int64Array, start: Int64Array, length: Int64Array, L: int, row: int
                 ) -> tuple[Pieces, Drops, int]:
    """The items concatenated and cut into rows of ``L`` (numbered from ``row``), the partial last dropped.

    A piece that stops before its item's (or its remainder's) end is a crop.
    """
    c = np.cumsum(length, dtype=np.int64) - length
    end = c + length
    rows = int(end[-1]) // L if end.size else 0
    tail = end > rows * L
    t0 = np.maximum(c[tail], rows * L)
    drops = Drops(*narrow((doc[tail], start[tail] + t0 - c[tail], end[tail] - t0)))
    del tail, t0
    r0 = c // L
    per = np.maximum(np.minimum((end - 1) // L, rows - 1) - r0 + 1, 0)
    item = np.repeat(np.arange(length.size, dtype=np.int64), per)
    r = r0[item] + np.arange(item.size, dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
    del r0, per
    ci, ei = c[item], end[item]
    del c, end
    g0 = np.maximum(ci, r * L)
    g1 = np.minimum(ei, (r + 1) * L)
    (p_row,) = narrow((row + r,))
    del r
    (p_start,) = narrow((start[item] + g0 - ci,))
    del ci
    (p_len,) = narrow((g1 - g0,))
    crop = g1 < ei
    del g0, g1, ei
    (p_doc,) = narrow((doc[item],))
    pieces = Pieces(p_row, p_doc, p_start, p_len, crop, np.zeros(item.size, np.bool_))
    return pieces, drops, rows


def _bin_rows(doc: npt.NDArray[Any], start: npt.NDArray[Any], length: npt.NDArray[Any],
              item: npt.NDArray[Any], item_bin: npt.NDArray[Any], L: int, padding: bool, row: int,
              blocks: list[Block], drops: list[list[npt.NDArray[Any]]],
              streamed: list[list[npt.NDArray[Any]]]) -> int:
    """Stage 2's bins, :data:`PLAN_CHUNK` items of whole bins at a time: a bin over ``L`` tokens (every
    bin with ``padding``) is cut to a row (:func:`_cut_rows`: a block appended to ``blocks``, its
    discards to ``drops``, rows numbered from ``row``), the other bins' non-empty items go to
    ``streamed`` (text columns held narrow). ``item``: the items (indices into the text-order
    columns) bin by bin; ``item_bin``: their bins. Returns the next row.
    """
    n = item.size
    if not n:
        return row
    first = np.flatnonzero(np.concatenate(([True], item_bin[1:] != item_bin[:-1])))
    bounds = np.unique(np.searchsorted(first, np.arange(0, n, PLAN_CHUNK), side="right") - 1).tolist()
    bounds.append(first.size)
    for b0, b1 in itertools.pairwise(bounds):
        lo = int(first[b0])
        hi = int(first[b1]) if b1 < first.size else n
        it = item[lo:hi]
        d, s, ln = doc[it], start[it], length[it].astype(np.int64)
        del it
        f = first[b0:b1] - lo
        ib = np.repeat(np.arange(f.size), np.diff(f, append=hi - lo))
        c = np.cumsum(ln)
        c -= ln
        within = c - c[f][ib]  # int64: L - within is taken below
        del c
        cut = (np.add.reduceat(ln, f) > L) | padding
        cut_row = row + np.cumsum(cut) - cut
        on = cut[ib] & (ln > 0)
        c_pieces, c_drops = _cut_rows(d[on], s[on], ln[on], within[on], cut_row[ib[on]], L)
        del within, cut_row
        c_rows = int(cut.sum())
        c_pieces = c_pieces._replace(row=c_pieces.row - row)
        blocks += _blocks(row, row + c_rows, list(c_pieces))
        row += c_rows
        drops.append(list(c_drops))
        del c_pieces, c_drops
        on = ~cut[ib] & (ln > 0)
        if on.any():
            streamed.append(narrow((d[on], s[on], ln[on])))
    return row


def seamless_batches(values: Int64Array, capacity: int, name: str, repetition: float, extra: int,
                     padding: bool, size: int, compiled: bool | None) -> Iterator[EventBatch]:
    """:meth:`~packing_theory.peers.paper.Seamless.events` in columns.

    Rows: the windows of the long texts (text order), then the bins cut to
    ``L`` (every bin with ``padding``; bin order), then the other bins'
    tokens concatenated and cut every ``L``. Discards: the gaps between
    windows, the bins' overflow, the unfinished last row. First fit is
    :func:`~packing_theory.peers._columns.first_fit_bins` (compiled when asked).
    """
    check_split_budget(values, capacity, name, columns=True)
    rows, blocks, drops = _seamless_rows(values, capacity, repetition, extra, padding, compiled)
    yield from _batches(values, capacity, rows, blocks, drops, size, True)


def _seamless_rows(values: Int64Array, L: int, repetition: float, extra: int, padding: bool,
                   compiled: bool | None) -> tuple[int, list[Block], Drops]:
    """The rows, pieces and discards of :func:`seamless_batches` (a function of its own: its intermediate
    columns are released before the first batch, not held by the generator while it yields)."""
    long = np.flatnonzero(values >= L)
    blocks: list[Block] = []
    drops: list[list[npt.NDArray[Any]]] = []
    rests = []
    row = 0
    for lo in range(0, long.size, PLAN_CHUNK):  # stage 1, PLAN_CHUNK long texts at a time (their windows)
        texts = long[lo:lo + PLAN_CHUNK]
        windows = window_columns(values[texts], L, repetition)
        rests.append(windows.rest)
        w_pieces, w_drops = _window_rows(Windows(texts[windows.text], windows.start, windows.rest), L)
        w = windows.start.size
        del windows
        blocks += _blocks(row, row + w, narrow(w_pieces))
        drops.append(narrow(w_drops))
        del w_pieces, w_drops
        row += w
    rest = np.concatenate(rests) if rests else _zeros()
    del rests
    doc, start, length = _short_items(values, L, long, rest)
    del long, rest
    order = longest_first(length, L)
    # a bin of at least every short token holds them all, as L + extra would: the same bins, no int64 overflow
    room = L if padding else min(L + extra, max(L, int(length.sum(dtype=np.int64))))
    (bins,) = narrow((first_fit_bins(length[order], room, compiled=compiled),))
    by_bin = np.argsort(bins, kind="stable")
    item = order[by_bin]  # the items bin by bin (bins in opening order, items in processing order)
    del order
    item_bin = bins[by_bin]
    del bins, by_bin
    streamed: list[list[npt.NDArray[Any]]] = []
    row = _bin_rows(doc, start, length, item, item_bin, L, padding, row, blocks, drops, streamed)
    del doc, start, length, item, item_bin
    s_doc, s_start, s_len = _cat(streamed) if streamed else [_zeros(), _zeros(), _zeros()]
    del streamed
    s_pieces, s_drops, s_rows = _stream_rows(s_doc, s_start, s_len, L, row)
    del s_doc, s_start, s_len
    blocks += _blocks(row, row + s_rows, [s_pieces.row - row, *s_pieces[1:]])
    drops.append(list(s_drops))
    del s_pieces, s_drops
    return row + s_rows, blocks, Drops(*_cat(drops))
