"""Packed training records ζ = (x, m, c, M^doc) from the row events of any packer (numpy only).

Seed 004 defines a packed record as token ids ``x``, a prediction mask ``m``,
segment ids ``c`` (``0`` = padding) and the block-causal document mask
``M^doc[t, s] = 0`` when ``c_t == c_s != 0`` and ``s <= t``, ``-inf``
otherwise; the loss is the masked NLL summed over predicted positions divided
by their number. This module builds those fields, vectorised over a batch of
rows, from the row-filling events every packer emits
(:class:`~packing_theory.engine.events.Placement`,
:class:`~packing_theory.engine.events.Repeat`,
:class:`~packing_theory.engine.events.Padding`; a
:class:`~packing_theory.engine.events.Filtered` document never reaches a row).

Conventions (the defaults are seed 004's; the options are named)
----------------------------------------------------------------
* **The record is the whole row of ``R`` tokens.** Seed 004's window length
  ``T`` is the row capacity ``R``. For autoresearch / nanochat rows
  (``R = T + 1``) the trainer's ``inputs = x[:-1]`` and ``targets = x[1:]``:
  row position ``p >= 1`` is the target predicted at input position ``p - 1``,
  and position 0 is input only (``m[0] = 0`` always), so ``sum(m)`` is the
  number of predicted targets of the row. :meth:`PackedBatch.shifted` gives
  that view; :attr:`PackedBatch.labels` keeps the Hugging Face alignment
  (``labels`` as long as ``input_ids``; the model shifts).
* **A segment** is a maximal run of consecutive row events of one occurrence
  holding consecutive source offsets (a :class:`Repeat` followed by the
  :class:`Placement` that continues it is one segment). Segment ids are
  ``1, 2, ...`` in row order; padding is ``0``.
* **Prediction mask** ``m``: 0 at padding; 0 at a segment's first token, which
  has no predecessor *present in the record* (a document's BOS, an inserted
  BOS, or the first token of a continuation whose predecessor sits in an
  earlier row and cannot be attended to); 0 at ids listed in
  ``exclude_ids`` (control tokens); 1 elsewhere. Option
  ``predict_continuation_start=True`` sets 1 at the first token of a
  continuation (not at row position 0): the public loaders' view, where every
  position ``>= 1`` is a target, predicted across the document boundary.
* **Position ids** restart at 0 for every segment (and every padding run).
  Option ``continue_positions=True``: a continuation segment (no inserted BOS,
  source start ``s > 0``) counts from ``s``, its position in the document.
* **Varlen attention**: ``cu_seqlens`` (``int32``) are the cumulative lengths of
  the batch's sequences flattened row-major, every padding run counted as a
  sequence of its own (so ``cu_seqlens[-1]`` is the number of positions);
  ``max_seqlen`` the longest; ``seq_lengths`` per row, summing to the row
  length — what TRL's padding-free collator reads.
* Labels use ``ignore_index`` (default -100) where ``m == 0``; padding
  positions hold ``pad_id`` (default 0).

>>> from packing_theory import Packer
>>> from packing_theory.corpus.documents import TokenDocuments
>>> from packing_theory.engine.rows import group_rows
>>> docs = TokenDocuments.from_lists([[0, 11, 12], [0, 21], [0, 31, 32, 33]])
>>> packer = Packer(capacity=4, min_buffer=1, refill=1, policy="continue")
>>> batch = pack_rows(list(group_rows(packer.events(docs.lengths()), 4)), docs, 4)
>>> batch.input_ids.tolist()
[[0, 11, 12, 0], [21, 0, 31, 32]]
>>> batch.segment_ids.tolist(), batch.mask.tolist()
([[1, 1, 1, 2], [1, 2, 2, 2]], [[0, 1, 1, 0], [0, 0, 1, 1]])
>>> batch.labels[1].tolist(), batch.position_ids[1].tolist(), batch.cu_seqlens.tolist()
([-100, -100, 31, 32], [0, 0, 1, 2], [0, 3, 4, 5, 8])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_bool, check_int, is_int
from ..corpus.documents import DocumentStore, run_index
from ..engine.events import Padding, Placement, Repeat
from ..errors import InputError, InputTypeError
from .segments import _expand, _ramps, _seq_lengths, cu_seqlens_from_segments, doc_mask_from_segments

__all__ = [
    "KIND_PADDING",
    "KIND_PLACEMENT",
    "KIND_REPEAT",
    "PIECE_FIELDS",
    "Layout",
    "PackedBatch",
    "PackedRecord",
    "RecordOptions",
    "cu_seqlens_from_segments",
    "doc_mask_from_segments",
    "pack_rows",
    "pieces_from_events",
    "pieces_from_rows",
]

Int64Array = npt.NDArray[np.int64]
Layout = Literal["row", "shifted"]

PIECE_FIELDS = ("row", "offset", "kind", "occurrence", "source", "start", "length", "bos")
"""Columns of a piece table: one row per row-filling event, in row order."""
KIND_PLACEMENT, KIND_REPEAT, KIND_PADDING = 0, 1, 2
_ROW, _OFF, _KIND, _OCC, _SRC, _START, _LEN, _BOS = range(8)


@dataclass(frozen=True, slots=True)
class RecordOptions:
    """How rows become records (see the module docstring; defaults are seed 004's convention).

    Args:
        ignore_index: label value where the prediction mask is 0 (PyTorch's -100).
        pad_id: token id written at padding positions.
        predict_continuation_start: predict the first token of a continuation
            segment (default ``False``: it has no predecessor in the record).
        continue_positions: a continuation's position ids continue from its
            source offset (default ``False``: every segment restarts at 0).
        exclude_ids: ids never predicted (``m = 0``), e.g. control tokens.
    """

    ignore_index: int = -100
    pad_id: int = 0
    predict_continuation_start: bool = False
    continue_positions: bool = False
    exclude_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("ignore_index", "pad_id"):
            value = getattr(self, name)
            if not is_int(value):
                raise InputTypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
        check_int("pad_id", self.pad_id, 0)
        check_bool("predict_continuation_start", self.predict_continuation_start)
        check_bool("continue_positions", self.continue_positions)
        if isinstance(self.exclude_ids, (str, bytes)) or not isinstance(self.exclude_ids, (tuple, list)):
            raise InputTypeError(f"exclude_ids must be a tuple of ints, got {self.exclude_ids!r}")
        object.__setattr__(
            self,
            "exclude_ids",
            tuple(check_int(f"exclude_ids[{i}]", v, 0) for i, v in enumerate(self.exclude_ids)),
        )


def pieces_from_rows(rows: Sequence[Sequence[Any]]) -> Int64Array:
    """The piece table (:data:`PIECE_FIELDS`) of complete rows of row events. O(events).

    Raises:
        TypeError: an event that does not fill row positions.
    """
    out: list[tuple[int, ...]] = []
    for i, row in enumerate(rows):
        for ev in row:
            t = type(ev)
            if t is Placement:
                out.append(
                    (i, ev.offset, 0, ev.occurrence, ev.source, ev.start, ev.length, int(ev.bos_inserted))
                )
            elif t is Repeat:
                out.append((i, ev.offset, 1, ev.occurrence, ev.source, ev.start, ev.length, 0))
            elif t is Padding:
                out.append((i, ev.offset, 2, -1, -1, 0, ev.length, 0))
            else:
                raise InputTypeError(f"rows must hold Placement, Repeat or Padding events, got {ev!r}")
    return np.array(out, dtype=np.int64).reshape(-1, 8)


def pieces_from_events(events: Sequence[Any], capacity: int, *, mixed: bool = True) -> Int64Array:
    """The piece table of consecutive row events filling complete rows (row numbers from the fill). O(events).

    ``mixed=False`` promises that every event is a
    :class:`~packing_theory.engine.events.Placement` (the streaming family), which
    converts them in one numpy call.
    """
    if not mixed:
        a = np.array(events, dtype=np.int64).reshape(-1, 8)  # Placement fields, bos and crop as 0/1
        out = np.empty((a.shape[0], 8), dtype=np.int64)
        length = a[:, 5]
        out[:, _ROW] = (np.cumsum(length) - length) // capacity
        out[:, _OFF] = a[:, 1]
        out[:, _KIND] = KIND_PLACEMENT
        out[:, _OCC : _BOS + 1] = a[:, 2:7]
        return out
    rows: list[list[Any]] = [[]]
    filled = 0
    for ev in events:
        rows[-1].append(ev)
        filled += ev.length
        if filled >= capacity:
            rows.append([])
            filled = 0
    if not rows[-1]:
        rows.pop()
    return pieces_from_rows(rows)


def pack_rows(
    rows: Sequence[Sequence[Any]],
    documents: DocumentStore,
    capacity: int,
    options: RecordOptions | None = None,
) -> PackedBatch:
    """A :class:`PackedBatch` from complete rows of row events and the documents they place.

    Raises:
        ValueError: rows that do not tile ``capacity`` positions.
    """
    return PackedBatch.build(pieces_from_rows(rows), len(rows), documents, capacity, options)


class PackedBatch:
    """Records of ``n_rows`` complete rows, as ``(n_rows, R)`` numpy arrays (seed 004's ζ, batched).

    :attr:`input_ids` is built eagerly (one vectorised gather); the other
    fields on first access (cached). Complexity: O(n_rows * R) numpy work per
    field, O(pieces) Python-free bookkeeping.

    Attributes:
        pieces: the piece table (:data:`PIECE_FIELDS`), the events' content.
        capacity: row length ``R``.
        options: the :class:`RecordOptions` used.
        input_ids: ``(n_rows, R)`` ``int64`` token ids ``x``.
    """

    __slots__ = ("_cache", "capacity", "input_ids", "options", "pieces")

    def __init__(
        self, pieces: Int64Array, input_ids: Int64Array, capacity: int, options: RecordOptions
    ) -> None:
        self.pieces = pieces
        self.input_ids = input_ids
        self.capacity = capacity
        self.options = options
        self._cache: dict[str, Any] = {}

    @classmethod
    def build(
        cls,
        pieces: Int64Array,
        n_rows: int,
        documents: DocumentStore,
        capacity: int,
        options: RecordOptions | None = None,
    ) -> PackedBatch:
        """Gather the token ids of a piece table (rows ``0 .. n_rows - 1``, in row order).

        Raises:
            ValueError: pieces that do not tile the rows exactly (naming the first bad piece).
        """
        R = check_int("capacity", capacity, 2)
        options = options if options is not None else RecordOptions()
        n_rows = check_int("n_rows", n_rows, 0)
        p = np.asarray(pieces, dtype=np.int64).reshape(-1, 8)
        length = p[:, _LEN]
        flat = p[:, _ROW] * R + p[:, _OFF]
        expected = np.cumsum(length) - length
        if (flat != expected).any() or int(length.sum()) != n_rows * R or (length < 1).any():
            bad = np.flatnonzero((flat != expected) | (length < 1))
            where = f"piece {int(bad[0])} {p[bad[0]].tolist()}" if bad.size else "the last row"
            raise InputError(
                f"row events must tile {n_rows} rows of capacity {R} in order; {where} does not "
                f"(fields {PIECE_FIELDS})"
            )
        kind, bos = p[:, _KIND], p[:, _BOS]
        real = kind != KIND_PADDING
        if real.all() and not bos.any():  # streaming discard/continue: the runs tile the batch exactly
            ids = documents.gather_runs(p[:, _SRC], p[:, _START], length)
        else:
            ids = np.full(n_rows * R, options.pad_id, dtype=np.int64)
            r = real.nonzero()[0]
            run_len = length[r] - bos[r]
            keep = run_len > 0
            r, run_len = r[keep], run_len[keep]
            if r.size:
                dest = run_index(flat[r] + bos[r], run_len)
                ids[dest] = documents.gather_runs(p[r, _SRC], p[r, _START], run_len)
            b = np.flatnonzero(bos.astype(bool) & real)
            if b.size:  # an inserted BOS repeats the document's own first token
                ids[flat[b]] = documents.gather_runs(
                    p[b, _SRC], np.zeros(b.size, np.int64), np.ones(b.size, np.int64)
                )
        return cls(p, ids.reshape(n_rows, R), R, options)

    # ------------------------------------------------------------------ shape

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.input_ids.shape[0])

    def __len__(self) -> int:
        return self.n_rows

    # ------------------------------------------------------------------ per-piece bookkeeping

    def _segments(self) -> tuple[Int64Array, Int64Array, Int64Array]:
        """Per piece: starts-a-new-sequence flag, segment id (0 = padding), first position of its sequence."""
        got = self._cache.get("segments")
        if got is not None:
            return got  # type: ignore[no-any-return]
        p = self.pieces
        R = self.capacity
        row, kind, occ = p[:, _ROW], p[:, _KIND], p[:, _OCC]
        start, length, bos = p[:, _START], p[:, _LEN], p[:, _BOS]
        pad = kind == KIND_PADDING
        new = np.ones(p.shape[0], dtype=bool)
        if p.shape[0] > 1:
            same_row = row[1:] == row[:-1]
            joined_real = (
                ~pad[1:]
                & ~pad[:-1]
                & (occ[1:] == occ[:-1])
                & (bos[1:] == 0)
                & (start[1:] == start[:-1] + length[:-1] - bos[:-1])
            )
            joined_pad = pad[1:] & pad[:-1]
            new[1:] = ~(same_row & (joined_real | joined_pad))
        counts = np.cumsum(new & ~pad)
        row_first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]] if p.shape[0] else np.zeros(0, bool))
        before = np.zeros(p.shape[0], dtype=np.int64)
        if row_first.size:
            base = counts[row_first] - (new & ~pad)[row_first]
            before = np.repeat(base, np.diff(np.r_[row_first, p.shape[0]]))
        seg = np.where(pad, 0, counts - before)
        flat = row * R + p[:, _OFF]
        seq_start = np.maximum.accumulate(np.where(new, flat, -1)) if p.shape[0] else flat
        out = (new, seg, seq_start)
        self._cache["segments"] = out
        return out

    # ------------------------------------------------------------------ fields (row layout)

    @property
    def segment_ids(self) -> npt.NDArray[np.int32]:
        """``(n_rows, R)`` segment ids ``c`` (``int32``; 0 = padding, then 1, 2, ... per row)."""
        got = self._cache.get("segment_ids")
        if got is None:
            _, seg, _ = self._segments()
            got = _expand(seg, self.pieces[:, _LEN], np.int32).reshape(self.input_ids.shape)
            self._cache["segment_ids"] = got
        return got

    @property
    def position_ids(self) -> Int64Array:
        """``(n_rows, R)`` position ids: restart per segment (``continue_positions``: see the module doc)."""
        got = self._cache.get("position_ids")
        if got is None:
            new, _, seq_start = self._segments()
            p = self.pieces
            # the position of each piece's first token
            first_pos = p[:, _ROW] * self.capacity + p[:, _OFF] - seq_start
            if self.options.continue_positions:
                real = p[:, _KIND] != KIND_PADDING
                cont = (real & (p[:, _BOS] == 0) & (p[:, _START] > 0)).astype(np.int64)
                first = np.maximum.accumulate(np.where(new, np.arange(p.shape[0]), -1))
                first_pos = first_pos + p[first, _START] * cont[first]
            got = _ramps(first_pos, p[:, _LEN]).reshape(self.input_ids.shape)
            self._cache["position_ids"] = got
        return got

    def _unpredicted_index(self) -> Int64Array:
        """Flat positions whose prediction mask is 0, except excluded ids (cached; O(pieces + padding))."""
        got = self._cache.get("unpredicted")
        if got is None:
            new, _, _ = self._segments()
            p = self.pieces
            R = self.capacity
            pad = p[:, _KIND] == KIND_PADDING
            starts = new & ~pad
            if self.options.predict_continuation_start:
                starts &= ~((p[:, _BOS] == 0) & (p[:, _START] > 0))
            parts = [p[starts, _ROW] * R + p[starts, _OFF], np.arange(self.n_rows, dtype=np.int64) * R]
            if pad.any():
                parts.append(run_index(p[pad, _ROW] * R + p[pad, _OFF], p[pad, _LEN]))
            got = np.concatenate(parts)
            self._cache["unpredicted"] = got
        return got

    def _unpredicted(self, flat: npt.NDArray[Any], value: int) -> None:
        """Write ``value`` at every position whose prediction mask is 0 (``flat`` is row-major).

        Those are: padding, a segment's first token (unless it is a predicted
        continuation start), row position 0, and ``exclude_ids``.
        """
        flat[self._unpredicted_index()] = value
        if self.options.exclude_ids:
            flat[np.isin(self.input_ids.ravel(), self.options.exclude_ids)] = value

    @property
    def mask(self) -> npt.NDArray[np.int8]:
        """``(n_rows, R)`` prediction mask ``m`` (``int8`` 0/1); ``m[:, 0] == 0``."""
        got = self._cache.get("mask")
        if got is None:
            got = np.ones(self.input_ids.size, dtype=np.int8)
            self._unpredicted(got, 0)
            got = got.reshape(self.input_ids.shape)
            self._cache["mask"] = got
        return got

    @property
    def labels(self) -> Int64Array:
        """``(n_rows, R)`` Hugging Face labels: ``input_ids`` where ``m == 1``, else ``ignore_index``."""
        got = self._cache.get("labels")
        if got is None:
            got = self.input_ids.ravel().copy()
            self._unpredicted(got, self.options.ignore_index)
            got = got.reshape(self.input_ids.shape)
            self._cache["labels"] = got
        return got

    @property
    def cu_seqlens(self) -> npt.NDArray[np.int32]:
        """Cumulative sequence lengths over the flattened batch (padding runs are sequences), ``int32``."""
        got = self._cache.get("cu_seqlens")
        if got is None:
            new, _, _ = self._segments()
            p = self.pieces
            starts = p[new, _ROW] * self.capacity + p[new, _OFF]
            got = np.r_[starts, self.input_ids.size].astype(np.int32)
            self._cache["cu_seqlens"] = got
        return got  # type: ignore[no-any-return]

    @property
    def max_seqlen(self) -> int:
        """The longest sequence of :attr:`cu_seqlens`."""
        cu = self.cu_seqlens
        return int(np.diff(cu).max()) if cu.size > 1 else 0

    @property
    def seq_lengths(self) -> list[list[int]]:
        """Per row, the lengths of its sequences (segments and padding runs), summing to ``R``."""
        return _seq_lengths(self.cu_seqlens, self.n_rows, self.capacity)

    @property
    def n_predicted(self) -> int:
        """Number of predicted targets, ``sum(m)`` (the denominator of seed 004's objective)."""
        return int(self.mask.sum(dtype=np.int64))

    def doc_mask(self, row: int, layout: Layout = "row") -> npt.NDArray[np.float64]:
        """The dense ``M^doc`` of one row (0 / ``-inf``), ``(R, R)`` or ``(R-1, R-1)`` shifted. O(R²)."""
        row = check_int("row", row, 0, maximum=self.n_rows - 1)
        seg = self.segment_ids[row]
        return doc_mask_from_segments(seg[:-1] if layout == "shifted" else seg)

    # ------------------------------------------------------------------ views

    def fields(self, layout: Layout = "row") -> dict[str, Any]:
        """The record fields as a dict of arrays, in the ``"row"`` or ``"shifted"`` layout.

        ``"row"``: ``input_ids, labels, mask, segment_ids, position_ids`` of shape
        ``(n, R)`` (labels aligned with ``input_ids``; the model shifts).
        ``"shifted"`` (autoresearch / nanochat): ``input_ids = x[:, :-1]``,
        ``targets = x[:, 1:]`` (unmasked, exactly the loaders' targets),
        ``labels`` = ``targets`` with ``ignore_index`` where ``m[:, 1:] == 0``,
        ``mask = m[:, 1:]``, ``segment_ids`` and ``position_ids`` of the inputs;
        all ``(n, R - 1)``. Both add ``cu_seqlens``, ``max_seqlen`` and
        ``seq_lengths`` computed for that layout.
        """
        if layout == "row":
            return {
                "input_ids": self.input_ids,
                "labels": self.labels,
                "mask": self.mask,
                "segment_ids": self.segment_ids,
                "position_ids": self.position_ids,
                "cu_seqlens": self.cu_seqlens,
                "max_seqlen": self.max_seqlen,
                "seq_lengths": self.seq_lengths,
            }
        if layout != "shifted":
            raise InputError(f"layout must be 'row' or 'shifted', got {layout!r}")
        seg = self.segment_ids[:, :-1]
        cu = cu_seqlens_from_segments(seg)
        mask = self.mask[:, 1:]
        targets = self.input_ids[:, 1:]
        return {
            "input_ids": self.input_ids[:, :-1],
            "targets": targets,
            "labels": np.where(mask.astype(bool), targets, self.options.ignore_index),
            "mask": mask,
            "segment_ids": seg,
            "position_ids": self.position_ids[:, :-1],
            "cu_seqlens": cu,
            "max_seqlen": int(np.diff(cu).max()) if cu.size > 1 else 0,
            "seq_lengths": _seq_lengths(cu, self.n_rows, self.capacity - 1),
        }

    def shifted(self) -> dict[str, Any]:
        """``fields("shifted")``: the autoresearch / nanochat view of the rows."""
        return self.fields("shifted")

    def record(self, row: int) -> PackedRecord:
        """Row ``row`` as a :class:`PackedRecord` (views into this batch)."""
        row = check_int("row", row, 0, maximum=self.n_rows - 1)
        cu = self.cu_seqlens
        R = self.capacity
        lo, hi = np.searchsorted(cu, [row * R, (row + 1) * R])
        return PackedRecord(
            self.input_ids[row],
            self.mask[row],
            self.segment_ids[row],
            self.position_ids[row],
            self.labels[row],
            cu[lo : hi + 1] - row * R,
        )

    def __iter__(self) -> Iterator[PackedRecord]:
        for i in range(self.n_rows):
            yield self.record(i)

    def _check(self) -> None:
        """Assert the record invariants (tests call it on every batch they build)."""
        seg, m, pos = self.segment_ids, self.mask, self.position_ids
        assert seg.shape == m.shape == pos.shape == self.input_ids.shape
        assert (m[:, 0] == 0).all() and not (m.astype(bool) & (seg == 0)).any()
        assert (pos >= 0).all()
        cu = self.cu_seqlens
        assert cu[0] == 0 and cu[-1] == self.input_ids.size and (np.diff(cu) > 0).all()
        assert all(sum(s) == self.capacity for s in self.seq_lengths)
        for r in range(self.n_rows):  # segment ids are 0 or 1..r, in row order
            ids = seg[r][seg[r] > 0]
            assert ids.size == 0 or (ids[0] == 1 and (np.diff(ids) >= 0).all() and (np.diff(ids) <= 1).all())


@dataclass(frozen=True, slots=True)
class PackedRecord:
    """One row's record ζ = (x, m, c, M^doc) and its trainer fields (1-D arrays of length ``R``).

    ``cu_seqlens`` are row-local (start at 0, end at ``R``).
    """

    input_ids: Int64Array
    mask: npt.NDArray[np.int8]
    segment_ids: npt.NDArray[np.int32]
    position_ids: Int64Array
    labels: Int64Array
    cu_seqlens: npt.NDArray[np.int32]

    @property
    def seq_lengths(self) -> list[int]:
        """Lengths of the row's sequences (segments and padding runs)."""
        return [int(v) for v in np.diff(self.cu_seqlens)]

    @property
    def max_seqlen(self) -> int:
        """The longest sequence of the row."""
        return max(self.seq_lengths)

    def doc_mask(self) -> npt.NDArray[np.float64]:
        """The dense ``(R, R)`` ``M^doc`` (seed 004): 0 within a segment at or before ``t``, else ``-inf``."""
        return doc_mask_from_segments(self.segment_ids)
