"""LLM Foundry: ``ConcatTokensDataset`` (wrap / no_wrap) and ``BinPackCollator``.

Transcribed (our own code) from mosaicml/llm-foundry@8c8dd48f7216 (= the
0.22.0 release): ``llmfoundry/data/data.py`` (``ConcatTokensDataset.__iter__``)
and ``llmfoundry/data/packing.py`` (``BinPackCollator``,
``_first_fit_bin_packing``); the base finetuning collator's truncation to
``max_seq_len`` is in ``llmfoundry/data/finetuning/collator.py``.

``foundry-concat-wrap`` / ``foundry-concat-no_wrap``
    stream order; append each document's tokens to a buffer (a document's
    length here includes any ``bos_text`` / ``eos_text`` tokens); while the
    buffer holds ``max_length`` tokens, emit its first ``max_length``; with
    ``wrap`` keep the rest, with ``no_wrap`` empty the buffer (the rest of
    the straddling document is discarded). The final partial buffer is never
    emitted, in both modes: its tokens are discarded at the end.
``foundry-binpack``
    the dataloader hands the collator ``int(batch_size * packing_ratio)``
    examples at a time (the last batch shorter unless ``drop_last``); the
    base collator truncates an example to ``max_seq_len`` (the tail is
    discarded); the examples are sorted longest first (stable); each goes
    into the first bin — leftover bins of earlier batches first — whose size
    stays ``<= max_seq_len`` (a bin that receives an example moves to the end
    of the bin list), or into a new bin, except that once the remaining
    examples are just enough to reach ``batch_size`` bins each gets its own
    bin; the ``batch_size`` largest bins (stable) are emitted, padded to
    ``max_seq_len`` on ``padding_side``; the other bins are kept as leftovers
    for the next batch, at most ``max_leftover_bins_to_keep`` of them (the
    largest): the rest are silently discarded. Leftovers still held when the
    data ends are reported as buffered at the horizon.

Outside seed 000's family: concatenate-and-chunk has no buffer of whole
documents and no best fit; the collator's first-fit-decreasing works on one
collate batch plus leftovers, with no minimum-occupancy refill and no
shortest-span crop, so the proposition does not apply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import FILTERED, HORIZON, EventBatch
from ..engine.compiled import compiled_available, load_numba_module
from ..engine.events import BufferedSpan, BufferedSpans, Discard, Event, Filtered, Horizon
from ..engine.knobs import Knob
from ..errors import InputError, InputTypeError
from ._base import PeerPacker
from ._columns import (
    Section,
    arrival_sections,
    assemble,
    chunk_bounds,
    concat_no_wrap_takes,
    discard_section,
    horizon_batch,
    peer_array,
    row_section,
)
from ._common import Piece, arrivals, check_choice, peer_lengths, row_events
from ._figures import TrainerRule

__all__ = ["PEERS", "FoundryBinPack", "FoundryConcat", "FoundryConcatNoWrap", "FoundryConcatWrap",
           "first_fit_bin_packing"]

_REF_CONCAT = ("mosaicml/llm-foundry llmfoundry/data/data.py ConcatTokensDataset.__iter__ "
               "at 8c8dd48f7216 (0.22.0)")
_REF_BINPACK = ("mosaicml/llm-foundry llmfoundry/data/packing.py BinPackCollator._first_fit_bin_packing and "
                "finetuning/collator.py (truncation to max_seq_len) at 8c8dd48f7216 (0.22.0)")


class FoundryConcat(PeerPacker):
    """``ConcatTokensDataset`` with ``max_length = capacity`` (``no_wrap`` is a class attribute)."""

    framework: ClassVar[str] = "LLM Foundry"
    reference: ClassVar[str] = _REF_CONCAT
    family_note: ClassVar[str] = (
        "concatenate-and-chunk (LLM Foundry ConcatTokensDataset): no buffer of whole documents, no best "
        "fit and no shortest-span crop, so seed 000's proposition does not apply")
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", False,
        "mosaicml/llm-foundry llmfoundry/data/text_data.py build_text_dataloader (transformers "
        "DataCollatorForLanguageModeling with mlm=False) and llmfoundry/models/mpt/modeling_mpt.py "
        "compute_loss (labels rolled by one, the last one -100)",
        "rows of exactly max_length tokens, no padding; labels are the inputs shifted by one within the row: "
        "targets = placed tokens - rows; the collator also masks every label equal to pad_token_id (every "
        "EOS label when the pad token is EOS), which lengths alone cannot show")
    offline: ClassVar[bool] = False
    trainer_view: ClassVar[str] = (
        "rows of exactly max_length tokens cut across documents; no document mask, position ids 0..L-1 "
        "per row (documents are separated only by the bos_text/eos_text tokens); no padding")
    no_wrap: ClassVar[bool]

    def events(self, lengths: Any) -> Iterator[Event]:
        """Stream the documents into rows; the final partial buffer is discarded."""
        values = peer_lengths(lengths)
        L = self.capacity
        row = 0
        buf: list[Piece] = []
        used = 0
        for occ, n in enumerate(values):
            yield from arrivals([n], occ)
            start = 0
            while start < n:
                take = min(n - start, L - used)
                buf.append(Piece(occ, occ, start, take, crop=take < n))
                start += take
                used += take
                if used == L:
                    yield from row_events(row, buf, L)
                    row += 1
                    buf, used = [], 0
                    if self.no_wrap and start < n:
                        yield Discard(occ, occ, start, n - start)
                        break
        for p in buf:
            yield Discard(p.occurrence, p.source, p.start, p.length)
        yield Horizon(row, 0, "drained", ())

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns: the kept tokens cut every ``L`` (:meth:`batches`).

        Each document is its own window (its arrival, its Filtered, the rows it
        completes, the discard of its rest); one more window after the last
        document holds the discarded partial row.
        """
        values = peer_array(lengths)
        L = self.capacity
        row = used = 0
        nothing = np.zeros(0, np.int64)
        carry = (nothing, nothing, nothing, np.zeros(0, np.bool_))  # the pieces of the current row
        for lo, hi in chunk_bounds(values.size, 1, size):
            ls = values[lo:hi]
            m = ls.size
            occ = lo + np.arange(m, dtype=np.int64)
            sections = list(arrival_sections(occ, ls, np.arange(m, dtype=np.int64)))
            take = concat_no_wrap_takes(ls, L, used, compiled=compiled)[0] if self.no_wrap else ls
            t0 = used + np.cumsum(take) - take  # the first kept token's position, row 0 = the current row
            per = np.where(take > 0, (t0 + take - 1) // L - t0 // L + 1, 0)
            doc = np.repeat(np.arange(m, dtype=np.int64), per)
            r = t0[doc] // L + np.arange(doc.size, dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
            g0 = np.maximum(t0[doc], r * L)
            plen = np.minimum(t0[doc] + take[doc], (r + 1) * L) - g0
            p_row = np.concatenate((np.zeros(carry[0].size, np.int64), r))
            p_occ = np.concatenate((carry[0], occ[doc]))
            p_start = np.concatenate((carry[1], g0 - t0[doc]))
            p_len = np.concatenate((carry[2], plen))
            p_crop = np.concatenate((carry[3], plen < ls[doc]))
            total = used + int(take.sum())
            rows = total // L
            ends = t0 + take
            row_window = np.searchsorted(ends, (np.arange(rows, dtype=np.int64) + 1) * L - 1, side="right")
            out = p_row < rows
            sections.append(row_section(L, rows, row, row_window.astype(np.int64), p_row[out], p_occ[out],
                                        p_occ[out], p_start[out], p_len[out], p_crop[out]))
            cut = (take < ls) & (ls > 0)
            left = ~out
            carry = (p_occ[left], p_start[left], p_len[left], p_crop[left])
            used = total - rows * L
            if hi == values.size:  # the partial row is discarded after the last document
                d_occ = np.concatenate((occ[cut], carry[0]))
                d_start = np.concatenate((take[cut], carry[1]))
                d_len = np.concatenate(((ls - take)[cut], carry[2]))
                d_win = np.concatenate((np.flatnonzero(cut), np.full(carry[0].size, m, np.int64)))
            else:
                d_occ, d_start, d_len, d_win = occ[cut], take[cut], (ls - take)[cut], np.flatnonzero(cut)
            sections.append(discard_section(d_occ, d_start, d_len, d_win.astype(np.int64)))
            row += rows
            yield assemble(m + 1, sections, ("empty",))
        yield horizon_batch(row)


class FoundryConcatWrap(FoundryConcat):
    """``no_wrap=False``: the rest of a cut document starts the next row.

    >>> [(e.row, e.occurrence, e.start, e.length) for e in FoundryConcatWrap(4).events([3, 3, 3])
    ...  if type(e).__name__ == "Placement"]
    [(0, 0, 0, 3), (0, 1, 0, 1), (1, 1, 1, 2), (1, 2, 0, 2)]
    """

    name: ClassVar[str] = "foundry-concat-wrap"
    columnar: ClassVar[bool] = True
    no_wrap: ClassVar[bool] = False


class FoundryConcatNoWrap(FoundryConcat):
    """``no_wrap=True``: the rest of a cut document is discarded.

    >>> [(type(e).__name__, e.occurrence, e.start, e.length) for e in FoundryConcatNoWrap(4).events([3, 3])
    ...  if type(e).__name__ in ("Placement", "Discard")]
    [('Placement', 0, 0, 3), ('Placement', 1, 0, 1), ('Discard', 1, 1, 2)]
    """

    name: ClassVar[str] = "foundry-concat-no_wrap"
    columnar: ClassVar[bool] = True
    no_wrap: ClassVar[bool] = True


Bin = tuple[int, list[Piece]]


def first_fit_bin_packing(sizes: list[int], items: list[Piece], num_bins: int, max_bin_size: int,
                          existing: list[Bin]) -> tuple[list[Bin], list[Bin]]:
    """``BinPackCollator._first_fit_bin_packing``: (the ``num_bins`` largest bins, the other bins).

    ``existing`` (leftover bins, largest first) is consumed. Both results are
    sorted by size, largest first, stable.

    >>> pieces = [Piece(i, i, 0, n) for i, n in enumerate([3, 1, 2, 2])]
    >>> out, rest = first_fit_bin_packing([3, 1, 2, 2], pieces, 2, 4, [])
    >>> [[p.occurrence for p in b] for _, b in out], [[p.occurrence for p in b] for _, b in rest]
    ([[2, 3], [0, 1]], [])

    Complexity: O(n * bins) per call (a linear first-fit scan, as the framework).
    """
    bins = existing
    order = sorted(range(len(sizes)), key=sizes.__getitem__, reverse=True)
    n = len(sizes)
    if n < max(0, num_bins - len(bins)):
        for i in order:
            bins.append((sizes[i], [items[i]]))
    else:
        for k, i in enumerate(order):
            size = sizes[i]
            if n - k == max(0, num_bins - len(bins)):
                bins.append((size, [items[i]]))
                continue
            for b in range(len(bins)):
                if bins[b][0] + size <= max_bin_size:
                    total, content = bins.pop(b)
                    bins.append((total + size, [*content, items[i]]))
                    break
            else:
                bins.append((size, [items[i]]))
    ranked = sorted(bins, key=lambda x: x[0], reverse=True)
    return ranked[:num_bins], ranked[num_bins:]


Int64Array = npt.NDArray[np.int64]
_Calls = tuple[int, Int64Array, Int64Array, Int64Array, Int64Array, Int64Array]
"""``_CollateCalls.pack``: rows, row call, piece row, piece and discard occurrence, discard call."""

_KERNEL_MAX_CAPACITY = 1 << 20
"""The widest row the compiled collate replay takes (its tables hold one entry per bin size ``0..L``).

A wider ``foundry-binpack`` runs the pure Python replay on the columnar path (the same events).
"""


class _CollateCalls:
    """The collate calls of ``BinPackCollator`` over a stream, in flat arrays, call after call.

    :meth:`pack` replays the calls of documents ``lo .. hi - 1`` (whole calls
    of ``per_call`` documents, the last maybe fewer) and :meth:`held` gives the
    leftover bins' pieces at the end. ``compiled``: the numba kernel of
    :mod:`packing_theory.peers._binpack_kernel` (O(log) per example), else
    :func:`first_fit_bin_packing` call by call (O(examples * bins), as the
    framework); the same arrays either way.

    >>> calls = _CollateCalls(np.array([3, 2, 2, 1]), 4, 2, 1, None, compiled=False)
    >>> rows, row_call, piece_row, piece_occ, dropped, dropped_call = calls.pack(0, 4)
    >>> rows, row_call.tolist(), piece_row.tolist(), piece_occ.tolist(), calls.held().tolist()
    (2, [0, 1], [0, 1, 1], [0, 1, 2], [3])
    """

    def __init__(self, values: Int64Array, capacity: int, per_call: int, num_bins: int, keep: int | None, *,
                 compiled: bool) -> None:
        self.values, self.capacity, self.per_call, self.num_bins, self.keep = (
            values, capacity, per_call, num_bins, keep)
        self._kernel = (load_numba_module("packing_theory.peers._binpack_kernel",
                                          "the compiled foundry-binpack replay")
                        if compiled and capacity <= _KERNEL_MAX_CAPACITY else None)
        self._state: tuple[Int64Array, ...] | None = None
        self._leftovers: list[Bin] = []
        self._lengths: list[int] | None = None

    def pack(self, lo: int, hi: int) -> _Calls:
        """The calls of documents ``lo .. hi - 1`` (``lo`` at a call boundary).

        Returns the rows emitted, each row's call (counted from 0 at ``lo``),
        the row of each piece and its occurrence (row by row, in bin order),
        and the occurrence and call of each discarded leftover piece, in the
        framework's order.
        """
        if self._kernel is None:
            return self._pack_pure(lo, hi)
        k = self._kernel
        if self._state is None:
            self._state = k.new_state(self.capacity, min(self.per_call, int(self.values.size)), 1024, 1024)
        meta, bins, pieces, *rest = self._state
        if bins.shape[1] < int(meta[k.FRESH_BINS]) + hi - lo:
            bins = _grown(bins, int(meta[k.FRESH_BINS]) + hi - lo)
        if pieces.shape[1] < int(meta[k.FRESH_PIECES]) + hi - lo:
            pieces = _grown(pieces, int(meta[k.FRESH_PIECES]) + hi - lo)
        self._state = (meta, bins, pieces, *rest)
        tree, q_head, q_tail, tail_tree, tail_bin = rest
        rows, *arrays = k.pack_calls(self.values, lo, hi, self.per_call, self.capacity, self.num_bins,
                                     -1 if self.keep is None else self.keep, meta, bins, pieces, tree,
                                     q_head, q_tail, tail_tree, tail_bin)
        return (int(rows), *arrays)

    def held(self) -> Int64Array:
        """The occurrences of the leftover bins' pieces, in the leftover list's order."""
        if self._kernel is None:
            return np.asarray([p.occurrence for _, content in self._leftovers for p in content], np.int64)
        if self._state is None:
            return np.zeros(0, np.int64)
        meta, bins, pieces, tree, q_head = self._state[:5]
        out: Int64Array = self._kernel.held_pieces(meta, bins, pieces, tree, q_head)
        return out

    def _pack_pure(self, lo: int, hi: int) -> _Calls:
        if self._lengths is None:
            self._lengths = self.values.tolist()
        L, keep = self.capacity, self.keep
        row_call: list[int] = []
        piece_row: list[int] = []
        piece_occ: list[int] = []
        dropped: list[int] = []
        dropped_call: list[int] = []
        for call, c0 in enumerate(range(lo, hi, self.per_call)):
            batch = self._lengths[c0 : min(hi, c0 + self.per_call)]
            items = [Piece(c0 + j, c0 + j, 0, min(n, L), crop=n > L) for j, n in enumerate(batch)]
            out, rest = first_fit_bin_packing([p.length for p in items], items, self.num_bins, L,
                                              self._leftovers)
            for _, content in out:
                piece_row.extend([len(row_call)] * len(content))
                piece_occ.extend(p.occurrence for p in content)
                row_call.append(call)
            self._leftovers = rest if keep is None else rest[:keep]
            for _, content in ([] if keep is None else rest[keep:]):
                dropped.extend(p.occurrence for p in content)
                dropped_call.extend([call] * len(content))
        a, b, c, d, e = (np.asarray(x, np.int64) for x in (row_call, piece_row, piece_occ, dropped,
                                                              dropped_call))
        return len(row_call), a, b, c, d, e


def _grown(table: Int64Array, need: int) -> Int64Array:
    """``table`` with at least ``need`` columns (doubling), its columns kept."""
    out = np.zeros((table.shape[0], max(need, 2 * table.shape[1])), np.int64)
    out[:, : table.shape[1]] = table
    return out


class FoundryBinPack(PeerPacker):
    """``BinPackCollator`` over finetuning examples, ``max_seq_len = capacity``.

    Args:
        capacity: the row width ``R`` = ``max_seq_len``.
        batch_size, packing_ratio, max_leftover_bins_to_keep, padding_side, drop_last:
            see :attr:`knobs` (LLM Foundry has no default ``packing_ratio``:
            ``None`` disables packing, ``"auto"`` profiles; 2.0 here).

    >>> evs = list(FoundryBinPack(4, batch_size=1, packing_ratio=2.0).events([3, 2, 2, 1]))
    >>> [(e.row, e.occurrence, e.length) for e in evs if type(e).__name__ == "Placement"]
    [(0, 0, 3), (1, 1, 2), (1, 2, 2)]
    >>> evs[-1].buffered  # the leftover bin of the last call is still held by the collator
    (BufferedSpan(occurrence=3, source=3, start=0, length=1, bos_inserted=False),)
    """

    name: ClassVar[str] = "foundry-binpack"
    columnar: ClassVar[bool] = True
    framework: ClassVar[str] = "LLM Foundry"
    reference: ClassVar[str] = _REF_BINPACK
    family_note: ClassVar[str] = (
        "per-collate-batch first-fit decreasing into leftover bins (LLM Foundry BinPackCollator): no "
        "minimum-occupancy refill and no shortest-span crop, leftover bins beyond "
        "max_leftover_bins_to_keep are discarded, so seed 000's proposition does not apply")
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "sequence", True,
        "mosaicml/llm-foundry llmfoundry/data/packing.py BinPackCollator (bins padded to max_seq_len, labels "
        "-100 on padding, the first label of every appended example masked) and "
        "llmfoundry/models/mpt/modeling_mpt.py compute_loss (labels rolled by one)",
        "the collator pads every bin to max_seq_len (pad tokens, labels -100) and masks the label at every "
        "example start; labels shift by one: targets = placed tokens - examples (every example token is "
        "counted as a response token; the finetuning collator's prompt masking is not modelled)")
    trainer_view: ClassVar[str] = (
        "rows padded to max_seq_len (input_ids pad_token_id, labels -100, attention_mask 0) with a "
        "sequence_id per example (-1 on padding) for document masking; position ids follow the model "
        "config; the first label of every appended example is masked")
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("batch_size", "int", 8, "device_batch_size: the bins emitted per collate call"),
        Knob("packing_ratio", "float", 2.0, "examples per collate call = int(batch_size * packing_ratio)"),
        Knob("max_leftover_bins_to_keep", "int", None, "leftover bins kept between calls (None: all)",
             optional=True),
        Knob("padding_side", "str", "right", "the tokenizer's padding side", choices=("right", "left")),
        Knob("drop_last", "bool", False, "the dataloader drops the final incomplete collate batch (its "
             "examples are filtered, reason drop_last)"),
    )

    def __init__(self, capacity: int, *, batch_size: int = 8, packing_ratio: float = 2.0,
                 max_leftover_bins_to_keep: int | None = None, padding_side: str = "right",
                 drop_last: bool = False) -> None:
        super().__init__(capacity)
        self.batch_size = check_int("batch_size", batch_size, 1)
        if (isinstance(packing_ratio, bool) or not isinstance(packing_ratio, (int, float))
                or not packing_ratio >= 1):  # nan fails too
            raise InputError(f"packing_ratio must be a number >= 1, got {packing_ratio!r}")
        if not batch_size * packing_ratio < 2**31:  # inf too: int(batch_size * packing_ratio) examples a call
            raise InputError(f"batch_size * packing_ratio must be < 2**31 (examples per collate call), got "
                             f"{batch_size!r} * {packing_ratio!r}")
        self.packing_ratio = float(packing_ratio)
        keep = max_leftover_bins_to_keep
        self.max_leftover_bins_to_keep = (None if keep is None
                                          else check_int("max_leftover_bins_to_keep", keep, 0))
        self.padding_side = check_choice("padding_side", padding_side, ("right", "left"))
        if not isinstance(drop_last, bool):
            raise InputTypeError(f"drop_last must be a bool, got {type(drop_last).__name__} {drop_last!r}")
        self.drop_last = drop_last

    @property
    def examples_per_call(self) -> int:
        """``int(batch_size * packing_ratio)``, the dataloader's batch size."""
        return int(self.batch_size * self.packing_ratio)

    def events(self, lengths: Any) -> Iterator[Event]:
        """Collate batches in stream order; the final leftovers are buffered at the horizon.

        Complexity: O(examples * bins), the framework's linear first-fit scan.
        The leftover list is unbounded with ``max_leftover_bins_to_keep=None``:
        when most examples are longer than half a row, each call keeps about
        ``examples_per_call - batch_size`` more bins (all of them held at the
        horizon), and this loop is then quadratic; :meth:`batches` replays the
        same calls in O(log) per example when compiled.
        """
        values = peer_lengths(lengths, allow_empty=False, who="foundry-binpack")
        L = self.capacity
        per = self.examples_per_call
        left = self.padding_side == "left"
        leftovers: list[Bin] = []
        row = 0
        for lo in range(0, len(values), per):
            batch = values[lo : lo + per]
            yield from arrivals(batch, lo)
            if self.drop_last and len(batch) < per:
                for k, n in enumerate(batch):
                    yield Filtered(lo + k, lo + k, n, "drop_last")
                break
            items: list[Piece] = []
            for k, n in enumerate(batch):
                occ = lo + k
                items.append(Piece(occ, occ, 0, min(n, L), crop=n > L))
                if n > L:
                    yield Discard(occ, occ, L, n - L)
            out, rest = first_fit_bin_packing([p.length for p in items], items, self.batch_size, L, leftovers)
            for _, content in out:
                yield from row_events(row, content, L, left_pad=left)
                row += 1
            keep = self.max_leftover_bins_to_keep
            leftovers = rest if keep is None else rest[:keep]
            for _, content in ([] if keep is None else rest[keep:]):
                for p in content:
                    yield Discard(p.occurrence, p.source, p.start, p.length)
        held = tuple(BufferedSpan(p.occurrence, p.source, p.start, p.length, False)
                     for _, content in leftovers for p in content)
        yield Horizon(row, 0, "exhausted" if held else "drained", held)

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns: whole collate calls at a time (``_CollateCalls``, :meth:`batches`).

        Each collate call is a window: its arrivals, its ``drop_last``
        filtered documents, the discarded tails of its cropped examples, its
        rows, its discarded leftover bins. The last batch is the Horizon with
        the leftover bins still held.
        """
        values = peer_array(lengths, allow_empty=False, who="foundry-binpack")
        per, n = self.examples_per_call, int(values.size)
        packed = n - n % per if self.drop_last else n  # the documents of the calls that run
        calls = _CollateCalls(values, self.capacity, per, self.batch_size, self.max_leftover_bins_to_keep,
                              compiled=compiled_available() if compiled is None else compiled)
        row = 0
        for lo, hi in chunk_bounds(n, per, size):
            batch, rows = self._chunk(values, lo, hi, packed, calls, row)
            row += rows
            yield batch
        held = calls.held()
        yield _held_horizon(row, held, np.minimum(values[held], self.capacity))

    def _chunk(self, values: Int64Array, lo: int, hi: int, packed: int, calls: _CollateCalls, row: int
               ) -> tuple[EventBatch, int]:
        """The events of the collate calls of documents ``lo .. hi - 1``, rows from ``row``.

        Documents from ``packed`` on are the final call that ``drop_last`` drops.
        """
        L = self.capacity
        ls = values[lo:hi]
        local = np.arange(hi - lo, dtype=np.int64)
        occ, window = lo + local, local // self.examples_per_call
        sections = list(arrival_sections(occ, ls, window, empty=False))
        gone = occ >= packed
        dropped = occ[gone]
        sections.append(Section(window[gone], np.full(dropped.size, FILTERED, np.uint8),
                                {"filtered": (dropped, dropped, ls[gone], np.ones(dropped.size, np.int64))}))
        long = (ls > L) & ~gone
        sections.append(discard_section(occ[long], np.full(int(long.sum()), L, np.int64), ls[long] - L,
                                        window[long]))
        rows, row_call, piece_row, p_occ, d_occ, d_call = calls.pack(lo, max(lo, min(hi, packed)))
        p_len = values[p_occ]
        sections.append(row_section(L, rows, row, row_call, piece_row, p_occ, p_occ, np.zeros_like(p_occ),
                                    np.minimum(p_len, L), p_len > L, left_pad=self.padding_side == "left"))
        sections.append(discard_section(d_occ, np.zeros_like(d_occ), np.minimum(values[d_occ], L), d_call))
        return assemble(int(window[-1]) + 1, sections, ("empty", "drop_last")), rows


def _held_horizon(rows: int, occurrence: Int64Array, length: Int64Array) -> EventBatch:
    """The Horizon batch of a peer that still holds whole-document pieces (``start`` 0) at the end.

    ``"exhausted"`` when it holds any, else ``"drained"``.
    """
    zeros = np.zeros(occurrence.size, np.int64)
    held = BufferedSpans(occurrence, occurrence, zeros, length, zeros.astype(np.bool_))
    return EventBatch.from_columns(np.array([HORIZON], np.uint8),
                                   Horizon(rows, 0, "exhausted" if len(held) else "drained", held))


PEERS: dict[str, type[PeerPacker]] = {
    cls.name: cls for cls in (FoundryConcatWrap, FoundryConcatNoWrap, FoundryBinPack)
}
"""Policy name -> packer class."""
