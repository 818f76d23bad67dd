"""TRL ``pack_dataset``: best-fit decreasing per ``datasets.map`` batch, or wrapped chunks.

Transcribed (our own code) from ``trl/data_utils.py`` — ``_SegmentTree``,
``_pack_bfd``, ``_pack_wrapped``, ``pack_dataset`` — read at
huggingface/trl@f2cd57710ae3 and in the 1.16.0 wheel.

What the framework does, per ``datasets.map`` batch (the *window*, default
1,000 rows; ``window=None`` is one batch holding the whole dataset):

``trl-bfd`` (``strategy="bfd"``, truncate)
    drop empty rows; keep the first ``seq_length`` tokens of every row (the
    tail is discarded: :class:`~packing_theory.engine.events.Discard`); sort by length,
    longest first, stable (ties keep row order); place each sequence into the
    bin with the *smallest* remaining space that holds it, bins with equal
    space taken first-in first-out (by the time they reached that space); a
    new bin when none fits. Output rows are the bins in creation order,
    sequences in insertion order, plus a ``seq_lengths`` column.
``trl-bfd_split`` (``strategy="bfd_split"``)
    the same, but a row longer than ``seq_length`` is first cut into fragments
    of ``seq_length`` tokens (the last one shorter), each packed like a row.
``trl-wrapped``
    concatenate every token of the batch and cut every ``seq_length`` tokens,
    across document boundaries; the last row of each batch is short.

A map batch holding only empty rows makes ``_pack_bfd`` fail (pyarrow cannot
``take`` an empty, untyped index list); the bfd peers raise ``ValueError``
there too. ``wrapped`` emits no row for such a batch. An empty dataset (no
row at all) makes ``pack_dataset`` fail for ``bfd`` and ``bfd_split``
(``ValueError: Columns ['seq_lengths'] not in the dataset``, run on the 1.16.0
wheel): the bfd peers raise that message; ``wrapped`` returns no row.

Rows are not padded in the dataset: a bin's unused space is
:class:`~packing_theory.engine.events.Padding` here; TRL's collator either pads a
batch to its longest row or (``padding_free``, on by default for ``bfd``)
concatenates rows and derives ``position_ids`` (restarting at 0 at every
``seq_lengths`` boundary) and flash-attention ``cu_seq_lens`` from them.

Versions (``framework_version``): ``"1.16.0"`` (default, the newest wheel
installable here) and ``"ed8cc2f"``, the commit pinned by seed 000 §5.10.
That commit was TRL ``main`` on 2026-10-08 (public notes citing it); it
postdates the last change to these helpers (PR #6670, August 2026, which fixed
``wrapped`` reading the wrong buffer for every map batch after the first), and
1.16.0's helpers are byte-identical to the commit-f2cd577 ones apart from that
fix, so both names select the same behaviour. The commit itself is not in the
stored mirror; the differential tests run the 1.16.0 wheel. Older releases
(``bfd`` requeueing by default in 0.27, ``bfd-requeue`` in 0.28, the sliced
``wrapped`` bug from PR #5189 to #6670) are not modelled and are rejected.

Outside seed 000's family: a finite-table best-fit-decreasing packer with
truncation or splitting before placement — no minimum-occupancy refill, no
shortest-span crop, rows in bin order (seed 000 §5.10).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import EventBatch
from ..engine.events import Discard, Event, Horizon
from ..engine.knobs import Knob
from ..errors import InputError
from ._base import PeerPacker
from ._columns import (
    arrival_sections,
    assemble,
    chunk_bounds,
    discard_section,
    fragments,
    horizon_batch,
    packed_rows,
    peer_array,
    row_section,
    wrapped_rows,
)
from ._common import (
    Piece,
    arrivals,
    best_fit_decreasing,
    check_choice,
    check_split_budget,
    peer_lengths,
    row_events,
)
from ._figures import TrainerRule

__all__ = ["PEERS", "TRL_VERSIONS", "TrlBfd", "TrlBfdSplit", "TrlPacker", "TrlWrapped"]

TRL_VERSIONS: tuple[str, ...] = ("1.16.0", "ed8cc2f")
"""Supported ``framework_version`` values (same packing behaviour; see the module doc)."""

_REFERENCE = ("huggingface/trl trl/data_utils.py (_SegmentTree, _pack_bfd, _pack_wrapped, pack_dataset) "
              "at f2cd57710ae3 and in the 1.16.0 wheel; seed 000 §5.10 pins ed8cc2f4337f")
_CHECKED = ("differential test against trl 1.16.0 (pack_dataset, then DataCollatorForLanguageModeling as "
            "SFTTrainer builds it): tests/peers/test_figures.py")
_FAMILY = ("finite-window best-fit-decreasing (TRL pack_dataset): no minimum-occupancy refill and no "
           "shortest-span crop; long rows are truncated or split before placement and rows come out in bin "
           "order, so seed 000's proposition does not apply (§5.10)")


class TrlPacker(PeerPacker):
    """Base of the three TRL policies (the strategy is a class attribute).

    Args:
        capacity: the row width ``R`` = ``seq_length`` (tokens per packed row).
        window, framework_version: see :attr:`knobs`.
    """

    framework: ClassVar[str] = "TRL"
    reference: ClassVar[str] = _REFERENCE
    family_note: ClassVar[str] = _FAMILY
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("window", "int", 1000, "the datasets.map batch size packed together (datasets' default 1000; "
             "None: the whole dataset as one batch)", optional=True),
        Knob("framework_version", "str", "1.16.0", "TRL version whose behaviour is replayed",
             choices=TRL_VERSIONS),
    )
    strategy: ClassVar[str]
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "sequence", False,
        "huggingface/trl trl/trainer/sft_trainer.py: SFTTrainer.__init__ (padding_free is on for bfd and "
        "bfd_split) and DataCollatorForLanguageModeling.torch_call (padding_free: rows concatenated, "
        "position_ids from seq_lengths, labels[position_ids == 0] = -100), 1.16.0 wheel",
        "pack_dataset stores rows of variable length and no pad token, and the padding-free collator "
        "concatenates a batch's rows, so no padding is added; the label of every sequence start (one per "
        "seq_lengths entry) is masked and the model shifts labels by one: "
        "targets = placed tokens - sequences",
        _CHECKED)
    trainer_view: ClassVar[str] = (
        "rows of variable length (no pad tokens in the dataset) with seq_lengths; with padding_free the "
        "collator concatenates rows, position_ids restart at 0 per sequence and cu_seq_lens follow them; "
        "otherwise rows are right-padded per batch and attention is not masked between sequences")

    def __init__(self, capacity: int, *, window: int | None = 1000,
                 framework_version: str = "1.16.0") -> None:
        super().__init__(capacity)
        self.window = None if window is None else check_int("window", window, 1)
        self.framework_version = check_choice("framework_version", framework_version, TRL_VERSIONS)

    def _windows(self, n: int) -> Iterator[tuple[int, int]]:
        step = n if self.window is None else self.window
        for lo in range(0, n, max(step, 1)):
            yield lo, min(n, lo + step)

    def events(self, lengths: Any) -> Iterator[Event]:
        """Pack ``lengths`` (token counts; 0 = an empty row, dropped) window by window."""
        values = peer_lengths(lengths)
        L = self.capacity
        self._refuse_an_empty_dataset(len(values))
        if self.strategy != "bfd":  # bfd truncates: one piece per document
            check_split_budget(values, L, self.name)
        row = 0
        for lo, hi in self._windows(len(values)):
            batch = values[lo:hi]
            yield from arrivals(batch, lo)
            if self.strategy == "wrapped":
                rows = self._wrapped(batch, lo)
            else:
                pieces: list[Piece] = []
                for k, n in enumerate(batch):
                    if n == 0:
                        continue
                    occ = lo + k
                    if self.strategy == "bfd":
                        pieces.append(Piece(occ, occ, 0, min(n, L), crop=n > L))
                        if n > L:
                            yield Discard(occ, occ, L, n - L)
                    else:
                        pieces.extend(Piece(occ, occ, s, min(L, n - s), crop=n > L) for s in range(0, n, L))
                if not pieces:
                    raise InputError(
                        f"lengths[{lo}:{hi}] (one map batch, window={self.window}) holds only empty rows: "
                        f"TRL's _pack_bfd fails on such a batch (pyarrow 'take' of an empty index list)")
                bins = best_fit_decreasing([p.length for p in pieces], L, ties="first-to-reach")
                rows = [[pieces[i] for i in b] for b in bins]
            for r in rows:
                yield from row_events(row, r, L)
                row += 1
        yield Horizon(row, 0, "drained", ())

    def _refuse_an_empty_dataset(self, n: int) -> None:
        if n == 0 and self.strategy != "wrapped":
            raise InputError(
                f"lengths is empty: TRL's pack_dataset(strategy={self.strategy!r}) fails on an empty dataset "
                "(ValueError: Columns ['seq_lengths'] not in the dataset. Current columns in the dataset: "
                "['input_ids'], from the 1.16.0 wheel); 'wrapped' returns no row")

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns: whole map batches at a time, best fit compiled (:meth:`batches`)."""
        values = peer_array(lengths)
        self._refuse_an_empty_dataset(int(values.size))
        if self.strategy != "bfd":  # as events(): bfd truncates, one piece per document
            check_split_budget(values, self.capacity, self.name, columns=True)
        step = values.size if self.window is None else self.window
        row = 0
        for lo, hi in chunk_bounds(values.size, step, size):
            batch, rows = self._chunk(values[lo:hi], lo, step, row, compiled)
            row += rows
            yield batch
        yield horizon_batch(row)

    def _chunk(self, ls: npt.NDArray[np.int64], lo: int, step: int, row: int, compiled: bool | None
               ) -> tuple[EventBatch, int]:
        """The events of the map batches of documents ``lo, lo + 1, ...`` (``ls``), rows from ``row``."""
        L = self.capacity
        occ = lo + np.arange(ls.size, dtype=np.int64)
        window = (occ - lo) // max(step, 1)
        windows = int(window[-1]) + 1
        sections = list(arrival_sections(occ, ls, window))
        if self.strategy == "wrapped":
            rows_sections, rows = wrapped_rows(L, ls, occ, window, windows, row)
            return assemble(windows, [*sections, *rows_sections], ("empty",)), rows
        if self.strategy == "bfd":
            long = ls > L
            sections.append(discard_section(occ[long], np.full(int(long.sum()), L, np.int64), ls[long] - L,
                                            window[long]))
            keep = ls > 0
            p_occ, p_start, p_len = occ[keep], np.zeros(int(keep.sum()), np.int64), np.minimum(ls[keep], L)
        else:
            p_occ, p_start, p_len = fragments(occ, ls, L)
        p_window = (p_occ - lo) // max(step, 1)
        p_crop = ls[p_occ - lo] > L
        filled = np.bincount(p_window, minlength=windows)
        if (filled == 0).any():
            w = int(np.argmin(filled))
            a, b = lo + w * step, min(lo + (w + 1) * step, lo + ls.size)
            raise InputError(
                f"lengths[{a}:{b}] (one map batch, window={self.window}) holds only empty rows: "
                f"TRL's _pack_bfd fails on such a batch (pyarrow 'take' of an empty index list)")
        order = np.lexsort((np.arange(p_len.size), -p_len, p_window)).astype(np.int64)
        items, item_row, row_window, rows = packed_rows(p_len, p_window, order, L, compiled)
        sections.append(row_section(L, rows, row, row_window, item_row.astype(np.int64), p_occ[items],
                                    p_occ[items], p_start[items], p_len[items], p_crop[items]))
        return assemble(windows, sections, ("empty",)), rows

    def _wrapped(self, batch: list[int], lo: int) -> list[list[Piece]]:
        L = self.capacity
        rows: list[list[Piece]] = []
        cur: list[Piece] = []
        used = 0
        for k, n in enumerate(batch):
            occ = lo + k
            start = 0
            while start < n:
                take = min(n - start, L - used)
                cur.append(Piece(occ, occ, start, take, crop=take < n))
                start += take
                used += take
                if used == L:
                    rows.append(cur)
                    cur, used = [], 0
        if cur:
            rows.append(cur)
        return rows


class TrlBfd(TrlPacker):
    """``pack_dataset(strategy="bfd")``: truncate to ``seq_length``, then best-fit decreasing.

    >>> [(p.row, p.occurrence, p.start, p.length) for p in TrlBfd(4).events([5, 2, 3, 1])
    ...  if type(p).__name__ == "Placement"]
    [(0, 0, 0, 4), (1, 2, 0, 3), (1, 3, 0, 1), (2, 1, 0, 2)]
    """

    name: ClassVar[str] = "trl-bfd"
    columnar: ClassVar[bool] = True
    strategy: ClassVar[str] = "bfd"


class TrlBfdSplit(TrlPacker):
    """``pack_dataset(strategy="bfd_split")``: split rows over ``seq_length``, then best-fit decreasing.

    >>> [(p.row, p.occurrence, p.start, p.length) for p in TrlBfdSplit(4).events([5, 2, 3, 1])
    ...  if type(p).__name__ == "Placement"]
    [(0, 0, 0, 4), (1, 2, 0, 3), (1, 0, 4, 1), (2, 1, 0, 2), (2, 3, 0, 1)]
    """

    name: ClassVar[str] = "trl-bfd_split"
    columnar: ClassVar[bool] = True
    strategy: ClassVar[str] = "bfd_split"


class TrlWrapped(TrlPacker):
    """``pack_dataset(strategy="wrapped")``: concatenate each map batch and cut every ``seq_length`` tokens.

    >>> [(p.row, p.occurrence, p.start, p.length) for p in TrlWrapped(4).events([5, 2, 3, 1])
    ...  if type(p).__name__ == "Placement"]
    [(0, 0, 0, 4), (1, 0, 4, 1), (1, 1, 0, 2), (1, 2, 0, 1), (2, 2, 1, 2), (2, 3, 0, 1)]
    """

    name: ClassVar[str] = "trl-wrapped"
    columnar: ClassVar[bool] = True
    strategy: ClassVar[str] = "wrapped"
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", False,
        "huggingface/trl trl/trainer/sft_trainer.py: SFTTrainer.__init__ (padding_free stays off for "
        "wrapped) and DataCollatorForLanguageModeling.torch_call (rows right-padded to the batch's longest "
        "row, labels -100 on padding), 1.16.0 wheel",
        "pack_dataset stores rows without padding; the collator pads a short row (the last of each map "
        "batch) only up to the longest row of its batch, which depends on the batch and is not counted; the "
        "model shifts labels by one within a row: targets = placed tokens - rows",
        _CHECKED)
    trainer_view: ClassVar[str] = (
        "rows of seq_length tokens cut across document boundaries (the last row of every map batch is "
        "short); no seq_lengths, so no document mask: attention crosses documents and position ids run "
        "0..len-1 per row")


PEERS: dict[str, type[PeerPacker]] = {cls.name: cls for cls in (TrlBfd, TrlBfdSplit, TrlWrapped)}
"""Policy name -> packer class."""
