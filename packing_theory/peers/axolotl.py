"""Axolotl sample packing: the long-sequence filter, then ``MultipackBatchSampler``.

Transcribed (in our own code) from axolotl 0.19.0 (the newest release served
here; its ``multipack.py`` matches axolotl-ai-cloud/axolotl@067b021c8b87 up
to efficiency statistics): ``src/axolotl/utils/data/utils.py``
(``handle_long_seq_in_dataset``), ``src/axolotl/utils/trainer.py``
(``filter_sequences_by_length``), ``src/axolotl/utils/samplers/multipack.py``
(``pack_group``, ``pack_parallel``, ``allocate_sequentially``,
``MultipackBatchSampler``) and ``src/axolotl/core/trainers/base.py``
(``_create_multipack_sampler``: ``drop_last=True``, the bin capacity).

1. **Filter** (``excess_length_strategy``): ``"drop"`` (default) keeps a row iff
   ``min_sample_len <= length <= sequence_len`` (``min_sample_len`` unset
   means 2, so single-token rows go too); every other row is
   :class:`~packing_theory.engine.events.Filtered` (reason ``"over-capacity"``,
   ``"too-short"`` or ``"empty"``). ``"truncate"`` filters rows shorter than
   ``min_sample_len`` and cuts longer ones to ``sequence_len`` (the tail is a
   :class:`~packing_theory.engine.events.Discard`). ``"raise"`` raises on a long row.
   In 0.12.2 and 0.13.x ``truncate`` ran inside ``datasets.filter`` and kept the
   row whole (:data:`FILTER_TRUNCATE_VERSIONS`): refused, see there.
2. **Sampler order**: each time the sampler is iterated it yields an order of
   the kept rows (a *draw*). ``seed=None`` is a ``SequentialSampler``
   (identity order); an int seed draws ``numpy.random.Generator(PCG64([seed,
   d]))`` permutations — our own reproducible stand-in for torch's
   ``RandomSampler`` (torch's permutation stream is not reproduced); pass
   ``orders`` to replay recorded draws.
3. **Bins**: first-fit *in sampler order* (no sort, despite the function's
   docstring) within groups of ``group_size`` rows, a bin holding at most
   ``bin_size`` rows; ``sequential=True`` is next-fit with no row cap.
4. **Batches** of ``batch_size`` bins; ``drop_last`` drops an incomplete final
   batch; every epoch is truncated to the minimum batch count over
   ``len()``'s estimate draws (4 of them, or 1 when ``world_size >= 4`` from
   0.13.0 on) and over ranks. The sampler is iterated once when the trainer
   builds it (``len()``: draw 0, then the estimate draws), then once per epoch
   after ``set_epoch``. Rows of dropped batches are Discards.

Row model: one event row per bin. With ``multipack_real_batches=False`` (the
default) axolotl uses ``batch_size = 1`` and bins of ``micro_batch_size *
sequence_len`` tokens that the collator flattens into one row; with ``True``
a batch holds ``micro_batch_size`` bins of ``sequence_len``. Rows are padded
to the bin capacity here; the collator pads a batch only to its longest row
(rounded up to ``pad_to_multiple_of``), so Padding events overstate the pad
tokens the model sees but equal the unused bin capacity. Position ids restart
at 0 for every row of a bin (``V2BatchSamplerDataCollatorForSeq2Seq``).

Columnar (:meth:`~packing_theory.peers.PeerPacker.batches`): the same plan with
numpy and the shared first-fit kernel (:mod:`packing_theory.peers._first_fit_columns`);
:meth:`AxolotlMultipack.events` is the oracle it is tested against.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.batches import EventBatch
from ..engine.events import Event
from ..engine.knobs import Knob, RowWidth
from ..errors import InputError, InputTypeError
from ._base import PeerPacker
from ._columns import narrow, peer_array
from ._common import EventLog, Piece, arrivals, check_choice, check_optional_int, first_fit, peer_lengths
from ._figures import TrainerRule
from ._first_fit_columns import DrawBins, draw_bins, filter_rows, multipack_batches

__all__ = ["PEERS", "AxolotlMultipack"]

VERSIONS = ("0.19.0", "0.13.1", "0.13.0", "0.12.2", "f5dec2b5eb66")
"""Supported releases. ``0.12.2`` estimates the batch count with 4 draws at any
world size and its ``truncate`` did not truncate (rejected here); 0.13.x's
``truncate`` did not truncate either (a row longer than ``sequence_len`` is
refused); 0.12.2 and 0.13.x raise ``IndexError`` where ``drop_last`` meets no
batch; ``f5dec2b5eb66`` (seed 000 §5.10's pin) is replayed as 0.19.0 — see the docs."""

FILTER_TRUNCATE_VERSIONS = ("0.13.1", "0.13.0")
"""Releases whose ``truncate`` ran inside ``datasets.filter`` (its change to the row is thrown away).

In ``src/axolotl/utils/data/utils.py`` ``handle_long_seq_in_dataset`` passes
``truncate_long_seq`` to ``dataset.filter``; the filter keeps the over-long row
(the function returns True) and discards the slice, so the row stays whole and
``pack_group`` opens a bin of its own for it, longer than the bin capacity. The
fix (axolotl #3401, ``_truncate_long_sequences`` through ``dataset.map``) is in
0.15.0. A bin longer than the row width cannot be replayed, so such a row is
refused; rows within ``sequence_len`` are kept as ``drop`` keeps them."""

NO_BATCH_INDEX_ERROR_VERSIONS = ("0.13.1", "0.13.0", "0.12.2")
"""Releases whose ``generate_batches`` reads ``batches[-1]`` unguarded (``IndexError``).

``if self.drop_last and len(batches[-1]) < self.batch_size`` fails when no bin
was formed at all, and (outside sequential packing) when dropping the one
incomplete batch leaves none (``len(batches[-1])`` again, for the slot
statistics). 0.19.0 guards it (``drop_last and batches and ...``) and yields
no batch."""

STRATEGIES = ("drop", "truncate", "raise")


class BinWidth(RowWidth):
    """Axolotl's row is one bin: ``micro_batch_size * sequence_len`` tokens (real batches: ``sequence_len``).

    >>> w = AxolotlMultipack.row_width
    >>> w.capacity(16, {"micro_batch_size": 2, "multipack_real_batches": False}), w.seq_length(32, {
    ...     "micro_batch_size": 2, "multipack_real_batches": False})
    (32, 16)
    """

    __slots__ = ()

    @staticmethod
    def _bins_per_row(knobs: Mapping[str, object]) -> int:
        if knobs.get("multipack_real_batches", False):
            return 1
        return check_int("micro_batch_size", knobs.get("micro_batch_size", 1), 1)

    def capacity(self, seq_length: int, knobs: Mapping[str, object]) -> int:
        """``seq_length`` times the rows per bin."""
        return check_int("seq_length", seq_length, 1) * self._bins_per_row(knobs)

    def seq_length(self, capacity: int, knobs: Mapping[str, object]) -> int:
        """``capacity`` divided by the rows per bin.

        Raises:
            InputError: ``capacity`` is not a multiple of ``micro_batch_size`` (without real batches).
        """
        R = check_int("capacity", capacity, 1)
        m = self._bins_per_row(knobs)
        if R % m:
            raise InputError(f"capacity (the bin's row width) must be a multiple of micro_batch_size {m} "
                             f"(a bin holds micro_batch_size * sequence_len tokens); got {R}")
        return R // m


class _Bin(NamedTuple):
    rows: list[int]  # kept-row indices, in bin order


def first_fit_groups(
    lengths: Sequence[int], capacity: int, group_size: int, bin_size: int
) -> list[list[int]]:
    """``pack_parallel``: first fit in the given order per group of ``group_size`` rows.

    Returns bins of positions into ``lengths``. A row longer than the capacity
    opens a bin of its own (negative remaining space), as the framework does.

    >>> first_fit_groups([5, 3, 4, 2, 2], 8, 100, 200)
    [[0, 1], [2, 3, 4]]
    >>> first_fit_groups([1, 1, 1], 8, 100, 2)
    [[0, 1], [2]]

    Complexity: O(N log N) (the framework scans all bins, O(N * bins), in numba).
    """
    out: list[list[int]] = []
    for g in range(0, len(lengths), group_size):
        group = lengths[g : g + group_size]
        out.extend([[g + k for k in bin_] for bin_ in first_fit(group, capacity, bin_size)])
    return out


def next_fit(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """``allocate_sequentially``: next fit, no row cap.

    >>> next_fit([5, 3, 4, 2, 2], 8)
    [[0, 1], [2, 3, 4]]
    """
    bins: list[list[int]] = []
    cur: list[int] = []
    free = capacity
    for k, size in enumerate(lengths):
        if size <= free:
            cur.append(k)
            free -= size
        else:
            if cur:
                bins.append(cur)
            cur = [k]
            free = capacity - size
    if cur:
        bins.append(cur)
    return bins


class AxolotlMultipack(PeerPacker):
    """``axolotl-multipack``: Axolotl's long-row filter and multipack sampler.

    Args:
        capacity: the row width ``R``: one bin, ``micro_batch_size * sequence_len``
            tokens (``sequence_len`` with ``multipack_real_batches``); so
            ``sequence_len`` is ``R // micro_batch_size`` (:attr:`row_width`).
        excess_length_strategy: ``"drop"`` | ``"truncate"`` | ``"raise"``.
        min_sample_len: rows shorter than this are filtered (``None`` = 2).
        micro_batch_size: rows per device step.
        multipack_real_batches: bins of ``sequence_len`` and ``micro_batch_size``
            bins per batch, instead of one bin of ``micro_batch_size * sequence_len``.
        bin_size: at most this many rows per bin (``sample_packing_bin_size``).
        group_size: rows per packing group (``sample_packing_group_size``).
        sequential: next-fit instead of first-fit (``sample_packing_sequentially``).
        drop_last: drop an incomplete final batch (the trainer always passes True).
        epochs: passes over the dataset (each a new draw, after ``set_epoch``).
        seed: ``None`` = sequential order; an int = our permutation stream.
        orders: explicit draws (each an order of the kept rows), replacing ``seed``.
        world_size: ranks (sets the number of estimate draws).
        num_count_samples: the sampler's estimate draws (default 4).
        framework_version: one of :data:`VERSIONS`.

    >>> p = AxolotlMultipack(8)
    >>> [(type(e).__name__, e.occurrence) for e in p.events([9, 5, 1, 3]) if hasattr(e, "reason")]
    [('Filtered', 0), ('Filtered', 2)]
    >>> [[e.source for e in row] for row in p.bins([9, 5, 1, 3])]
    [[1, 3]]
    """

    name: ClassVar[str] = "axolotl-multipack"
    columnar: ClassVar[bool] = True
    framework: ClassVar[str] = "Axolotl"
    reference: ClassVar[str] = (
        "axolotl-ai-cloud/axolotl 0.19.0 (@067b021c8b87) src/axolotl/utils/samplers/multipack.py, "
        "src/axolotl/utils/data/utils.py, src/axolotl/utils/trainer.py, src/axolotl/core/trainers/base.py"
    )
    family_note: ClassVar[str] = (
        "packs a finite sampler index list per epoch (first fit in sampler order, no B-span "
        "buffer); over-capacity rows are filtered before packing by default; drop_last and the "
        "cross-rank minimum drop whole bins"
    )

    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", False,
        "axolotl src/axolotl/utils/collators/batching.py V2BatchSamplerDataCollatorForSeq2Seq (a bin's rows "
        "concatenated, padded to the batch's longest row with labels -100) and the causal-LM loss shift of "
        "transformers (ForCausalLMLoss)",
        "a bin is padded only up to the longest row of its batch (rounded to pad_to_multiple_of), which "
        "depends on the batch and is not counted; labels shift by one over the concatenated bin: "
        "targets = placed tokens - rows")
    trainer_view: ClassVar[str] = (
        "one row per bin (micro_batch_size*sequence_len tokens unless multipack_real_batches); the V2 "
        "collator concatenates the bin's rows, position_ids restart at 0 per row, attention_mask numbers "
        "the rows 1, 2, ...; padding only to the batch's longest row"
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("excess_length_strategy", "str", "drop", "what to do with a row longer than sequence_len",
             choices=STRATEGIES),
        Knob("min_sample_len", "int", None, "rows shorter than this are filtered (None: 2)", optional=True),
        Knob("micro_batch_size", "int", 1, "rows per device step"),
        Knob("multipack_real_batches", "bool", False, "bins of sequence_len, micro_batch_size bins per "
             "batch, instead of one bin of micro_batch_size * sequence_len"),
        Knob("bin_size", "int", 200, "at most this many rows per bin (sample_packing_bin_size)"),
        Knob("group_size", "int", 100_000, "rows per packing group (sample_packing_group_size)"),
        Knob("sequential", "bool", False, "next fit instead of first fit (sample_packing_sequentially)"),
        Knob("drop_last", "bool", True, "drop an incomplete final batch (the trainer always passes True)"),
        Knob("epochs", "int", 1, "passes over the dataset (each a new sampler draw, after set_epoch)"),
        Knob("seed", "int", None, "None: sequential sampler order; an int: our permutation stream",
             optional=True),
        Knob("orders", "int-lists", None, "explicit sampler draws (each an order of the kept rows), "
             "replacing seed", optional=True),
        Knob("world_size", "int", 1, "ranks (sets the number of estimate draws)"),
        Knob("num_count_samples", "int", 4, "the sampler's estimate draws"),
        Knob("framework_version", "str", "0.19.0", "axolotl release whose behaviour is replayed",
             choices=VERSIONS),
    )
    row_width: ClassVar[RowWidth] = BinWidth(
        "R = micro_batch_size * sequence_len (one bin per row; R = sequence_len with multipack_real_batches)")

    def __init__(
        self,
        capacity: int,
        *,
        excess_length_strategy: str = "drop",
        min_sample_len: int | None = None,
        micro_batch_size: int = 1,
        multipack_real_batches: bool = False,
        bin_size: int = 200,
        group_size: int = 100_000,
        sequential: bool = False,
        drop_last: bool = True,
        epochs: int = 1,
        seed: int | None = None,
        orders: Sequence[Sequence[int]] | None = None,
        world_size: int = 1,
        num_count_samples: int = 4,
        framework_version: str = "0.19.0",
    ) -> None:
        super().__init__(capacity)
        self.excess_length_strategy = check_choice(
            "excess_length_strategy", excess_length_strategy, STRATEGIES
        )
        self.version = check_choice("framework_version", framework_version, VERSIONS)
        if self.version == "0.12.2" and self.excess_length_strategy != "drop":
            raise InputError(
                f"excess_length_strategy={excess_length_strategy!r} is not replayable for "
                "framework_version='0.12.2': its 'truncate' ran the truncation inside datasets.filter, "
                "which discards the change, so over-long rows stayed whole (rows longer than "
                "sequence_len); and it had no 'raise'"
            )
        self.min_sample_len = check_optional_int("min_sample_len", min_sample_len, 0)
        self.micro_batch_size = check_int("micro_batch_size", micro_batch_size, 1)
        for flag, value in (
            ("multipack_real_batches", multipack_real_batches),
            ("sequential", sequential),
            ("drop_last", drop_last),
        ):
            if not isinstance(value, bool):
                raise InputTypeError(f"{flag} must be a bool, got {type(value).__name__} {value!r}")
        self.multipack_real_batches = multipack_real_batches
        self.sequence_len = self.row_width.seq_length(
            self._capacity, {"micro_batch_size": self.micro_batch_size,
                             "multipack_real_batches": multipack_real_batches})
        self.bin_size = check_int("bin_size", bin_size, 1)
        self.group_size = check_int("group_size", group_size, 1)
        self.sequential = sequential
        self.drop_last = drop_last
        self.epochs = check_int("epochs", epochs, 1)
        self.seed = check_optional_int("seed", seed, 0)
        self.world_size = check_int("world_size", world_size, 1)
        self.num_count_samples = check_int("num_count_samples", num_count_samples, 1)
        self.orders = None if orders is None else [list(o) for o in orders]
        if self.orders is not None and len(self.orders) < self.draws_needed:
            raise InputError(
                f"orders must hold at least {self.draws_needed} draws (1 + {self.estimate_draws} estimates "
                f"+ {self.epochs} epochs), got {len(self.orders)}"
            )
        self.batch_size = self.micro_batch_size if multipack_real_batches else 1
        self.bin_capacity = self._capacity


    @property
    def framework_version(self) -> str:
        """The release whose behaviour is replayed (the ``framework_version`` knob)."""
        return self.version
    @property
    def estimate_draws(self) -> int:
        """Draws ``len()`` takes the minimum over."""
        if self.version != "0.12.2" and self.world_size >= self.num_count_samples:
            return 1
        return self.num_count_samples

    @property
    def draws_needed(self) -> int:
        """Sampler iterations the trainer makes: draw 0, the estimates, one per epoch."""
        return 1 + self.estimate_draws + self.epochs

    # -- stages -------------------------------------------------------------------------
    def keep(self, lengths: Sequence[int]) -> tuple[list[int], list[tuple[int, str]]]:
        """The filter: (kept row ids, [(filtered row id, reason)]).

        Raises:
            InputError: a row over ``sequence_len`` with ``"raise"``, or with 0.13.x's
                ``"truncate"`` (:data:`FILTER_TRUNCATE_VERSIONS`: it stays whole).
        """
        L = self.sequence_len
        low = self.min_sample_len or 2
        kept: list[int] = []
        gone: list[tuple[int, str]] = []
        for i, n in enumerate(lengths):
            if n > L and self.excess_length_strategy == "raise":
                raise InputError(
                    f"lengths[{i}] = {n} > capacity (sequence_len) {L} with excess_length_strategy='raise'"
                )
            if (n > L and n >= low and self.excess_length_strategy == "truncate"
                    and self.version in FILTER_TRUNCATE_VERSIONS):
                raise InputError(
                    f"lengths[{i}] = {n} > sequence_len {L} is not replayable for framework_version="
                    f"{self.version!r} with excess_length_strategy='truncate': that release truncates inside "
                    "datasets.filter, which keeps the row whole, so its bin would hold more than the row "
                    "width; the truncation works from 0.15.0 (axolotl #3401): use framework_version='0.19.0'"
                )
            if n < low:
                gone.append((i, "empty" if n == 0 else "too-short"))
            elif n > L and self.excess_length_strategy == "drop":
                gone.append((i, "over-capacity"))
            else:
                kept.append(i)
        return kept, gone

    def draw(self, d: int, k: int) -> list[int]:
        """The ``d``-th sampler order over ``k`` kept rows."""
        if self.orders is not None:
            order = self.orders[d]
            if sorted(order) != list(range(k)):
                raise InputError(f"orders[{d}] must be a permutation of range({k}), got {order[:10]}...")
            return list(order)
        if self.seed is None:
            return list(range(k))
        return [int(x) for x in self._permutation(d, k)]

    def _permutation(self, d: int, k: int) -> npt.NDArray[np.int64]:
        """The ``d``-th draw of our permutation stream (``seed`` set, no ``orders``)."""
        seed = check_int("seed", self.seed, 0)
        return np.random.Generator(np.random.PCG64([seed, d])).permutation(k).astype(np.int64)

    def _batches(self, sizes: Sequence[int], order: Sequence[int]) -> list[list[list[int]]]:
        lens = [sizes[i] for i in order]
        if self.sequential:
            bins = next_fit(lens, self.bin_capacity)
        else:
            bins = first_fit_groups(lens, self.bin_capacity, self.group_size, self.bin_size)
        mapped = [[order[b] for b in bin_] for bin_ in bins]
        batches = [mapped[i : i + self.batch_size] for i in range(0, len(mapped), self.batch_size)]
        unguarded = self.drop_last and self.version in NO_BATCH_INDEX_ERROR_VERSIONS
        if unguarded and not batches:
            raise self._no_bin_error(len(order))
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
            if not batches and not self.sequential and unguarded:
                raise self._no_batch_error(len(mapped))
        return batches

    def _no_bin_error(self, kept: int) -> InputError:
        return InputError(
            f"axolotl {self.version}'s MultipackBatchSampler.generate_batches fails with "
            f"'IndexError: list index out of range' when no bin is formed ({kept} rows kept by the "
            "filter) and drop_last=True; use framework_version='0.19.0' or more data")

    def _no_batch_error(self, bins: int) -> InputError:
        return InputError(
            f"axolotl {self.version}'s MultipackBatchSampler.generate_batches fails with "
            f"'IndexError: list index out of range' when drop_last leaves no batch: {bins} "
            f"bins < batch_size {self.batch_size}; use framework_version='0.19.0' or more data")

    def _batch_count(self, bins: int) -> int:
        """``generate_batches``' batch count for ``bins`` bins (after ``drop_last``), or its refusal."""
        unguarded = self.drop_last and self.version in NO_BATCH_INDEX_ERROR_VERSIONS
        if unguarded and not bins:
            raise self._no_bin_error(0)
        count = -(-bins // self.batch_size)
        if self.drop_last and count and bins % self.batch_size:
            count -= 1
            if not count and not self.sequential and unguarded:
                raise self._no_batch_error(bins)
        return count

    def plan(
        self, lengths: Sequence[int]
    ) -> tuple[list[int], list[tuple[int, str]], list[list[list[list[int]]]], int]:
        """(kept, filtered, per-epoch full batch lists of bins of kept positions, batches kept per epoch)."""
        kept, gone = self.keep(lengths)
        sizes = [min(lengths[i], self.sequence_len) for i in kept]
        k = len(kept)
        same = self.orders is None and self.seed is None  # every draw is the identity order
        first = self._batches(sizes, self.draw(1, k)) if same else None

        def batches(d: int) -> list[list[list[int]]]:
            return first if first is not None else self._batches(sizes, self.draw(d, k))

        # draw 0: len() builds the batches once; then the estimate draws give the minimum
        limit = min(len(batches(d)) for d in range(1, 1 + self.estimate_draws))
        epochs = [batches(1 + self.estimate_draws + e) for e in range(self.epochs)]
        return kept, gone, epochs, limit

    def schedule(self, lengths: Any, _plan: Any = None) -> list[list[list[list[Piece]]]]:
        """The emitted rows, per epoch, per batch, per bin (after ``drop_last`` and the cross-rank limit).

        Complexity: O(N log N) per sampler draw (one draw when ``seed`` and
        ``orders`` are unset, else ``estimate_draws + epochs``; draw 0 is never packed).
        """
        ls = peer_lengths(lengths)
        kept, _, epochs, limit = self.plan(ls) if _plan is None else _plan
        n = len(ls)
        L = self.sequence_len
        return [
            [
                [
                    [
                        Piece(e * n + kept[j], kept[j], 0, min(ls[kept[j]], L), crop=ls[kept[j]] > L)
                        for j in bin_
                    ]
                    for bin_ in batch
                ]
                for b, batch in enumerate(batches)
                if not limit or b < limit  # the framework: `if limit:`
            ]
            for e, batches in enumerate(epochs)
        ]

    def bins(self, lengths: Any) -> list[list[Piece]]:
        """The emitted rows as pieces (every epoch, batch by batch)."""
        return [bin_ for epoch in self.schedule(lengths) for batch in epoch for bin_ in batch]

    def _rows(
        self, ls: list[int]
    ) -> tuple[list[list[Piece]], list[tuple[int, int, int]], list[tuple[int, str]]]:
        plan = self.plan(ls)
        kept, gone = plan[0], plan[1]
        rows = [bin_ for epoch in self.schedule(ls, plan) for batch in epoch for bin_ in batch]
        n = len(ls)
        L = self.sequence_len
        shown = {p.occurrence for row in rows for p in row}
        dropped = [
            (e * n + i, i, min(ls[i], L)) for e in range(self.epochs) for i in kept if e * n + i not in shown
        ]
        return rows, dropped, gone

    def events(self, lengths: Any) -> Iterator[Event]:
        """Filter, pack and batch ``lengths`` for every epoch; yield the events."""
        ls = peer_lengths(lengths)
        n = len(ls)
        rows, dropped, gone = self._rows(ls)
        log = EventLog(self.bin_capacity)
        for e in range(self.epochs):
            log.extend(arrivals(ls, e * n, pass_index=e, sources=range(n), empty=False))
            for i, reason in gone:
                log.filtered(e * n + i, i, ls[i], reason)
        for pieces in rows:
            log.row(pieces)
        for e in range(self.epochs):
            for i in range(n):
                if (
                    ls[i] > self.sequence_len
                    and self.excess_length_strategy == "truncate"
                    and ls[i] >= (self.min_sample_len or 2)
                ):
                    log.discard(e * n + i, i, self.sequence_len, ls[i] - self.sequence_len)
        for occ, src, length in dropped:
            log.discard(occ, src, 0, length)
        yield from log.finish("drained")

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns (:mod:`~packing_theory.peers._first_fit_columns`): the plan vectorised.

        The filter's refusals are the pure filter's own, raised on the rows up
        to the first refused one; every draw is packed (and refused) in the order :meth:`plan` packs them.
        """
        ls = peer_array(lengths)
        L = self.sequence_len
        low = self.min_sample_len or 2
        strategy = self.excess_length_strategy
        refused = (ls > L) & (strategy == "raise" or (
            strategy == "truncate" and self.version in FILTER_TRUNCATE_VERSIONS and ls >= low))
        if refused.any():
            self.keep(ls[: int(np.argmax(refused)) + 1].tolist())
        kept, gone, reason = filter_rows(ls, L, low, strategy == "drop")
        sizes = np.minimum(ls[kept], L)
        k = kept.size
        cache: dict[int, tuple[DrawBins, int]] = {}

        def packed(d: int) -> tuple[DrawBins, int]:
            key = 0 if self.orders is None and self.seed is None else d  # every draw is the identity order
            if key not in cache:
                bins = draw_bins(sizes, self._order(d, k), self.bin_capacity, sequential=self.sequential,
                                 group_size=self.group_size, bin_size=self.bin_size, compiled=compiled)
                cache.clear()
                cache[key] = (bins, self._batch_count(bins.bins))
            return cache[key]

        limit = min(packed(d)[1] for d in range(1, 1 + self.estimate_draws))
        emitted, bounds = [], []
        kept, gone, reason = narrow((kept, gone, reason))  # held to the last batch: int32 where they fit
        for e in range(self.epochs):
            bins, count = packed(1 + self.estimate_draws + e)
            shown = min(bins.bins, self.batch_size * (min(count, limit) if limit else count))
            (docs,) = narrow((kept[bins.items[: bins.bounds[shown]]],))  # the emitted documents, bin by bin
            emitted.append(docs)
            bounds.append(narrow((bins.bounds[: shown + 1],))[0].copy())
            del bins, docs
        cache.clear()  # the draws' columns and sizes are not held while the batches are emitted
        sizes = np.zeros(0, np.int64)  # not a view: that would hold the whole column
        del packed, refused
        yield from multipack_batches(ls, kept, gone, reason, emitted, bounds, sequence_len=L,
                                     capacity=self.bin_capacity,
                                     truncate_low=low if strategy == "truncate" else None, size=size)

    def _order(self, d: int, k: int) -> npt.NDArray[np.int64]:
        """:meth:`draw` as an array (recorded ``orders`` checked as :meth:`draw` checks them)."""
        if self.orders is None:
            return np.arange(k, dtype=np.int64) if self.seed is None else self._permutation(d, k)
        order = self.draw(d, k)
        arr = np.asarray(order)
        if k and arr.dtype.kind not in "biu":  # the pure path indexes a list with each entry
            bad = next(x for x in order if not isinstance(x, (int, np.integer)))
            raise TypeError(f"list indices must be integers or slices, not {type(bad).__name__}")
        return arr.astype(np.int64)

    def trainer_rows(self, documents: Sequence[Sequence[int]]) -> list[dict[str, list[int]]]:
        """Per emitted bin: its rows' ``tokens`` concatenated and ``position_ids`` restarting per row."""
        out = []
        for pieces in self.bins([len(d) for d in documents]):
            tokens: list[int] = []
            pos: list[int] = []
            for p in pieces:
                tokens.extend(documents[p.source][: p.length])
                pos.extend(range(p.length))
            out.append({"tokens": tokens, "position_ids": pos, "sources": [p.source for p in pieces]})
        return out


PEERS: dict[str, type[PeerPacker]] = {AxolotlMultipack.name: AxolotlMultipack}
