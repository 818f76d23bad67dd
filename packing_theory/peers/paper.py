"""Seed 000's related work as documented methods: Fewer Truncations and Seamless Packing.

Both are implemented from the papers' method descriptions (our own code);
where a paper is silent the choice is stated in the class docstring.

* ``fewer-truncations`` — Ding et al., *Fewer Truncations Improve Language
  Modeling*, arXiv:2404.10830 (seed 000 ref. [4]), "Best-fit Packing":
  segment every document into chunks of at most ``L`` tokens, then pack the
  chunks offline with best-fit-decreasing; a chunk is never split again.
* ``seamless`` — Yin et al., *Improving Continual Pre-training Through
  Seamless Data Packing*, arXiv:2505.22018 (seed 000 ref. [6]): long texts
  become overlapping windows of exactly ``L`` tokens (the overlap bounded by
  a maximum repetition ratio), the rest is packed first-fit-decreasing into
  bins slightly larger than ``L`` and the excess is dropped. Parameters the
  paper leaves open follow the authors' released code
  (Infernus-WIND/Seamless-Packing@f81d0bb7ea0d,
  ``src/continual_pretraining_utils.py``), cited per parameter below.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple

from .._checks import check_int
from ..engine.batches import EventBatch
from ..engine.events import Event
from ..engine.knobs import Knob
from ..errors import InputError, InputTypeError
from ._base import PeerPacker
from ._columns import peer_array
from ._common import (
    EventLog,
    Piece,
    arrivals,
    best_fit_decreasing,
    check_split_budget,
    first_fit,
    peer_lengths,
)
from ._figures import TrainerRule
from ._paper_columns import fewer_truncations_batches, seamless_batches

__all__ = ["PEERS", "FewerTruncations", "Seamless", "seamless_windows"]


class _Item(NamedTuple):
    source: int
    start: int
    length: int


class FewerTruncations(PeerPacker):
    """``fewer-truncations``: segment into chunks of at most ``L``, then best-fit-decreasing.

    Choices where arXiv:2404.10830 is silent:

    * chunks are consecutive token ranges ``[kL, (k+1)L)``, the last one
      shorter; no BOS/EOS is inserted into later chunks;
    * the decreasing order is stable (equal lengths keep document order, then
      chunk order) and best-fit ties go to the earliest-opened bin;
    * rows are the bins in opening order, chunks in insertion order, right
      padded to ``L``; an empty document is :class:`~packing_theory.engine.events.Filtered`
      (``"empty"``). Nothing is dropped.

    >>> p = FewerTruncations(8)
    >>> [[(e.source, e.start, e.length) for e in row] for row in p.rows_of([14, 7, 5, 2, 3])]
    [[(0, 0, 8)], [(1, 0, 7)], [(0, 8, 6), (3, 0, 2)], [(2, 0, 5), (4, 0, 3)]]
    """

    name: ClassVar[str] = "fewer-truncations"
    framework: ClassVar[str] = "Fewer Truncations (Ding et al. 2024)"
    reference: ClassVar[str] = "arXiv:2404.10830v2 §3 (Best-fit Packing); seed 000 ref. [4]"
    family_note: ClassVar[str] = (
        "segments long documents before packing and packs a finite table offline "
        "(best-fit-decreasing); no buffer of B spans, no crop at selection time"
    )

    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", True, "Ding et al., arXiv:2404.10830 §3 (Best-fit Packing); the method fixes no collator",
        "rows are right-padded to L; with no collator of its own, targets follow seed 000's convention: "
        "every non-padding position but the first of a row (targets = placed tokens - rows)")
    columnar: ClassVar[bool] = True
    trainer_view: ClassVar[str] = (
        "rows of L tokens right-padded, each holding whole chunks; attention masking and position ids "
        "are the trainer's choice (the method does not fix them)"
    )

    def rows_of(self, lengths: Any) -> list[list[Piece]]:
        """The rows as pieces."""
        ls = peer_lengths(lengths)
        L = self.capacity
        check_split_budget(ls, L, self.name)
        items = [_Item(d, k, min(L, n - k)) for d, n in enumerate(ls) for k in range(0, n, L)]
        bins = best_fit_decreasing([it.length for it in items], L, ties="first-opened")
        return [
            [Piece(items[i].source, items[i].source, items[i].start, items[i].length) for i in b]
            for b in bins
        ]

    def events(self, lengths: Any) -> Iterator[Event]:
        """Segment and pack ``lengths``; yield the events."""
        ls = peer_lengths(lengths)
        log = EventLog(self.capacity)
        log.extend(arrivals(ls, 0))
        for row in self.rows_of(ls):
            log.row(row)
        yield from log.finish("drained")

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns, best fit compiled (:meth:`batches`; one window: the whole input)."""
        yield from fewer_truncations_batches(peer_array(lengths), self.capacity, self.name, size, compiled)


def seamless_windows(n: int, L: int, repetition: float) -> tuple[list[int], int]:
    """Stage 1 for one text of ``n >= L`` tokens: (window starts, start of the short remainder or -1).

    Windows are ``[s, s + L)``. A text of a multiple of ``L`` is cut exactly;
    one whose remainder is short enough keeps ``n // L`` full windows and
    defers the remainder to stage 2; any other gets ``n // L`` windows with
    overlap ``o = floor((L(q+1) - n)/(q+1)) + 1`` plus a last window ending at
    the text's end.

    >>> seamless_windows(20, 10, 0.3)
    ([0, 10], -1)
    >>> seamless_windows(22, 10, 0.3)       # 20 < 22 < 7*3 + 3: remainder deferred
    ([0, 10], 20)
    >>> seamless_windows(25, 10, 0.3)       # o = 2: windows overlap
    ([0, 8, 15], -1)
    """
    m = int(L * repetition)
    q = n // L
    if n % L == 0:
        return [k * L for k in range(q)], -1
    if q * L < n < (L - m) * (q + 1) + m:
        return [k * L for k in range(q)], q * L
    o = (L * (q + 1) - n) // (q + 1) + 1
    return [k * (L - o) for k in range(q)] + [n - L], -1


class Seamless(PeerPacker):
    """``seamless``: overlapping windows for long texts, FFD into oversized bins, controlled dropping.

    Parameters (arXiv:2505.22018 names them; defaults from the authors' code,
    ``tokenize_and_chunk_by_seamless_packing``):

    * ``repetition`` = 0.3 — the maximum repetition ratio; the maximum
      overlap is ``int(L * repetition)``;
    * ``extra`` = 50 — bins hold ``L + extra`` tokens (``bin_extra_capacity``);
    * ``padding`` = False — with True, bins hold ``L`` and every bin is a padded row.

    Behaviour fixed by the authors' code where the paper is silent: windows
    of a text are emitted in text order before all packed rows; a window's
    tokens already shown by the previous window are
    :class:`~packing_theory.engine.events.Repeat` events, tokens skipped between two
    windows (possible when ``n`` is just below a multiple of ``L``) are
    :class:`~packing_theory.engine.events.Discard`; FFD sorts stably (ties keep text
    order) and uses first fit; a bin holding more than ``L`` tokens keeps its
    first ``L`` (the rest is discarded); bins of at most ``L`` tokens are
    concatenated in bin order and cut into rows of ``L``, the final partial
    row being dropped. Empty texts are :class:`~packing_theory.engine.events.Filtered` (with
    ``padding=True`` a bin holding only empty texts is still an all-padding row).

    >>> p = Seamless(10, extra=2)
    >>> for row in p.rows_of([25, 6, 6]):
    ...     print([(e.source, e.start, e.length, e.repeat) for e in row])
    [(0, 0, 10, False)]
    [(0, 8, 2, True), (0, 10, 8, False)]
    [(0, 15, 3, True), (0, 18, 7, False)]
    [(1, 0, 6, False), (2, 0, 4, False)]
    >>> sum(e.length for e in p.events([25, 6, 6]) if type(e).__name__ == "Discard")  # the bin's 12 > 10
    2
    """

    name: ClassVar[str] = "seamless"
    framework: ClassVar[str] = "Seamless Packing (Yin et al. 2025)"
    reference: ClassVar[str] = (
        "arXiv:2505.22018v2 §3 (Sliding Window; Packing with Dropping); seed 000 ref. [6]; "
        "defaults from Infernus-WIND/Seamless-Packing@f81d0bb7ea0d src/continual_pretraining_utils.py"
    )
    family_note: ClassVar[str] = (
        "windows long texts before packing and packs a finite table offline (FFD into "
        "oversized bins, truncating overflow); no buffer of B spans"
    )
    repeats_tokens: ClassVar[bool] = True
    columnar: ClassVar[bool] = True
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", False,
        "Infernus-WIND/Seamless-Packing@f81d0bb7ea0d src/continual_pretraining_utils.py (labels = tokens, "
        "-100 on padding; plain causal loss over the row)",
        "labels = tokens shifted by one within the row, -100 on padding: targets = placed tokens - rows; pad "
        "tokens are stored only with padding=True")
    trainer_view: ClassVar[str] = (
        "rows of exactly L tokens (padding only with padding=True), labels = tokens with -100 on padding; "
        "the authors' code gives plain causal attention across the packed texts of a row"
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("repetition", "float", 0.3, "the maximum repetition ratio: windows of a long text overlap by at "
             "most int(L * repetition) tokens"),
        Knob("extra", "int", 50, "bins hold L + extra tokens (bin_extra_capacity)"),
        Knob("padding", "bool", False, "bins hold L tokens and every bin is a padded row"),
    )

    def __init__(
        self, capacity: int, *, repetition: float = 0.3, extra: int = 50, padding: bool = False
    ) -> None:
        super().__init__(capacity)
        if (
            isinstance(repetition, bool)
            or not isinstance(repetition, (int, float))
            or not 0 <= repetition < 1
        ):
            raise InputError(f"repetition must be a number in [0, 1), got {repetition!r}")
        self.repetition = float(repetition)
        self.extra = check_int("extra", extra, 0)
        if not isinstance(padding, bool):
            raise InputTypeError(f"padding must be a bool, got {type(padding).__name__} {padding!r}")
        self.padding = padding

    def rule(self) -> TrainerRule:
        """:attr:`trainer_rule`, storing pad tokens when ``padding=True``."""
        return replace(self.trainer_rule, stores_padding=self.padding)

    def _plan(self, ls: Sequence[int]) -> tuple[list[list[Piece]], list[tuple[int, int, int]]]:
        L = self.capacity
        check_split_budget(ls, L, self.name)
        rows: list[list[Piece]] = []
        dropped: list[tuple[int, int, int]] = []  # source, start, length
        short: list[_Item] = []
        for d, n in enumerate(ls):
            if n < L:  # an empty text too: it joins a bin (an all-empty bin is an all-padding row)
                short.append(_Item(d, 0, n))
                continue
            starts, rest = seamless_windows(n, L, self.repetition)
            frontier = 0
            for s in starts:
                pieces = []
                if s > frontier:
                    dropped.append((d, frontier, s - frontier))
                elif s < frontier:
                    pieces.append(Piece(d, d, s, min(frontier, s + L) - s, repeat=True))
                if s + L > frontier:
                    new = max(s, frontier)
                    pieces.append(Piece(d, d, new, s + L - new))
                    frontier = s + L
                rows.append(pieces)
            if rest >= 0:
                short.append(_Item(d, rest, n - rest))
        cap = L if self.padding else L + self.extra
        order = sorted(range(len(short)), key=lambda i: -short[i].length)
        bins = [[short[order[k]] for k in b] for b in first_fit([short[i].length for i in order], cap)]
        stream: list[_Item] = []
        for bin_ in bins:
            total = sum(it.length for it in bin_)
            tokens = [it for it in bin_ if it.length]
            if total > L or self.padding:
                row, left = self._cut(tokens, L)
                rows.append(row)
                dropped.extend((it.source, it.start, it.length) for it in left)
            else:
                stream.extend(tokens)
        pos = 0
        total = sum(it.length for it in stream)
        while total >= L:
            chunk = stream[pos : pos + L]
            row, left = self._cut(chunk, L)
            rows.append(row)
            pos += len(chunk) - len(left)
            if left:  # the item the row ended in (or its unplaced tail) heads the next row
                stream[pos] = left[0]
            total -= L
        dropped.extend((it.source, it.start, it.length) for it in stream[pos:])
        return rows, dropped

    @staticmethod
    def _cut(items: list[_Item], L: int) -> tuple[list[Piece], list[_Item]]:
        """The first ``L`` tokens of ``items`` as pieces, and the items left."""
        row: list[Piece] = []
        room = L
        for k, it in enumerate(items):
            if room == 0:
                return row, items[k:]
            take = min(room, it.length)
            row.append(Piece(it.source, it.source, it.start, take, crop=take < it.length))
            room -= take
            if take < it.length:
                return row, [_Item(it.source, it.start + take, it.length - take), *items[k + 1 :]]
        return row, []

    def rows_of(self, lengths: Any) -> list[list[Piece]]:
        """The rows as pieces."""
        return self._plan(peer_lengths(lengths))[0]

    def events(self, lengths: Any) -> Iterator[Event]:
        """Window, pack and cut ``lengths``; yield the events."""
        ls = peer_lengths(lengths)
        rows, dropped = self._plan(ls)
        log = EventLog(self.capacity)
        log.extend(arrivals(ls, 0))
        for row in rows:
            log.row(row)
        for d, start, length in dropped:
            log.discard(d, d, start, length)
        yield from log.finish("drained")

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns, first fit compiled (:meth:`batches`; one window: the whole input)."""
        yield from seamless_batches(peer_array(lengths), self.capacity, self.name, self.repetition,
                                    self.extra, self.padding, size, compiled)


PEERS: dict[str, type[PeerPacker]] = {FewerTruncations.name: FewerTruncations, Seamless.name: Seamless}
