"""torchtune ``PackedDataset``: greedy next-fit packing of a map-style dataset.

Transcribed (in our own code) from ``torchtune/datasets/_packed.py`` of
torchtune 0.6.1 (pytorch/torchtune@bd2a0fc7c314 has the same file).

What the framework does, sample by sample in dataset order:

* ``split_across_pack=False`` (``torchtune-next_fit``): a sample longer than
  ``max_seq_len`` raises ``ValueError``; otherwise it is appended to the
  current pack, and when the pack exceeds ``max_seq_len`` the pack *without*
  that sample is emitted and the sample starts the next pack (next-fit).
* ``split_across_pack=True`` (``torchtune-split``): the pack is cut at
  exactly ``max_seq_len`` tokens; the rest of the straddling sample starts the
  next pack, repeatedly for a sample of several ``max_seq_len``.
* ``max_packs``: packing stops as soon as that many packs exist; the current
  pack and every unread sample are silently dropped. Here the current pack's
  tokens are :class:`~packing_theory.engine.events.Discard` events and the unread
  samples are :class:`~packing_theory.engine.events.Filtered` with reason
  ``"max-packs"``.
* The final partial pack is kept and padded.

What the trainer sees per pack (:meth:`TorchtunePacker.trainer_rows`):
``tokens`` padded with ``padding_idx``; ``labels`` padded with -100;
``input_pos`` = each token's original offset in its sample modulo
``max_seq_len`` (a continuation in split mode does *not* restart at 0), the
padding continuing ``last + 1, last + 2, ...`` clamped to ``max_seq_len - 1``;
``seq_lens`` = one entry per sample piece in the pack (an empty sample gives a
0 entry) plus the padding length as an extra entry, so the block-causal mask
treats the padding as one more "sample".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .._checks import check_int
from ..engine.batches import EventBatch, batched
from ..engine.events import Event
from ..engine.knobs import Knob
from ..errors import InputError
from ._base import PeerPacker
from ._columns import arrival_batches, assemble, horizon_batch, peer_array, wrapped_rows
from ._common import (
    SPLIT_BUDGET,
    EventLog,
    Piece,
    arrivals,
    check_choice,
    check_optional_int,
    check_split_budget,
    peer_lengths,
)
from ._figures import TrainerRule

__all__ = ["PEERS", "TorchtuneNextFit", "TorchtunePacker", "TorchtuneSplit"]

VERSIONS = ("0.6.1", "0.5.0", "0.4.0", "0.3.1")
"""Supported releases: ``torchtune/datasets/_packed.py`` is byte-identical in all four."""


class _Entry(NamedTuple):
    occurrence: int
    start: int
    length: int


class _Plan(NamedTuple):
    packs: list[list[_Entry]]
    read: int  # samples read before packing stopped
    dropped: list[_Entry]  # the current pack at a max_packs stop
    stopped: bool


class TorchtunePacker(PeerPacker):
    """torchtune ``PackedDataset`` (base of the two strategies; ``split_across_pack`` is the strategy).

    Args:
        capacity: the row width ``R`` = ``max_seq_len``.
        padding_idx, max_packs, framework_version: see :attr:`knobs`.

    Complexity: O(N + rows) time and memory for N samples (offline: the
    whole length stream is read first).

    >>> p = TorchtuneNextFit(6)
    >>> [e.length for e in p.events([4, 3, 2]) if type(e).__name__ == "Placement"]
    [4, 3, 2]
    >>> [r["seq_lens"] for r in p.trainer_rows([[1] * 4, [2] * 3, [3] * 2])]
    [[4, 2], [3, 2, 1]]
    """

    name: ClassVar[str] = "torchtune"
    framework: ClassVar[str] = "torchtune"
    reference: ClassVar[str] = "pytorch/torchtune 0.6.1 (= @bd2a0fc7c314) torchtune/datasets/_packed.py"
    family_note: ClassVar[str] = (
        "finite-table next-fit in dataset order with no buffer of B spans and no "
        "whole-fit-else-shortest selection; over-long samples raise (next_fit) or are "
        "cut at the pack boundary (split); max_packs drops the rest"
    )
    default_split: ClassVar[bool] = False
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", True,
        "pytorch/torchtune torchtune/datasets/_packed.py PackedDataset._pad_pack (tokens padding_idx, labels "
        "-100) and recipes/full_finetune_single_device.py (labels shifted by one: labels[..., 1:] then "
        "ignore_index)",
        "packs are stored padded to max_seq_len with labels -100 on the padding; the recipe shifts labels by "
        "one over the whole pack: targets = placed tokens - packs (labels as the dataset gives them; a "
        "dataset's prompt masking is not modelled)",
        "the recipes' shift (labels = hstack(labels[..., 1:], ignore_index column)) read in torchtune's "
        "recipes; the padding from the transcribed _packed.py; not run here")
    trainer_view: ClassVar[str] = (
        "packs padded to max_seq_len (tokens padding_idx, labels -100); input_pos = offset in the sample "
        "mod max_seq_len (a split continuation does not restart at 0), continuing over the padding clamped "
        "to max_seq_len-1; seq_lens per sample piece plus the padding length as one more entry"
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("padding_idx", "int", 0, "the token id of padding"),
        Knob("max_packs", "int", None, "stop after this many packs (None: pack everything)", optional=True),
        Knob("framework_version", "str", "0.6.1", "torchtune release transcribed (one behaviour)",
             choices=VERSIONS),
    )

    def __init__(
        self,
        capacity: int,
        *,
        padding_idx: int = 0,
        max_packs: int | None = None,
        framework_version: str = "0.6.1",
    ) -> None:
        super().__init__(capacity)
        self.padding_idx = check_int("padding_idx", padding_idx, -(2**62))
        self.max_packs = check_optional_int("max_packs", max_packs, 0)
        self.split_across_pack = self.default_split
        self.version = check_choice("framework_version", framework_version, VERSIONS)

    # -- the framework's loop ---------------------------------------------------------

    @property
    def framework_version(self) -> str:
        """The release whose behaviour is replayed (the ``framework_version`` knob)."""
        return self.version

    def _plan(self, lengths: Sequence[int]) -> _Plan:
        L = self.capacity
        packs: list[list[_Entry]] = []
        cur: list[_Entry] = []
        cur_len = 0
        read = 0
        max_packs = self.max_packs
        if self.split_across_pack and (max_packs is None or max_packs > SPLIT_BUDGET):
            check_split_budget(lengths, L, self.name)  # max_packs bounds the packs cut otherwise

        def stop() -> bool:
            return max_packs is not None and len(packs) == max_packs

        for i, n in enumerate(lengths):
            if n > L and not self.split_across_pack:
                raise InputError(
                    f"lengths[{i}] = {n} > capacity (max_seq_len) {L}: torchtune PackedDataset with "
                    "split_across_pack=False rejects a sample longer than max_seq_len; "
                    "set split_across_pack=True or increase capacity"
                )
            cur.append(_Entry(i, 0, n))
            cur_len += n
            while cur_len > L and not stop():
                last = cur[-1]
                if self.split_across_pack:
                    head = L - (cur_len - last.length)
                    pack = cur[:-1] + ([_Entry(last.occurrence, last.start, head)] if head > 0 else [])
                    cur = [_Entry(last.occurrence, last.start + head, last.length - head)]
                else:
                    pack = cur[:-1]
                    cur = [last]
                packs.append(pack)
                cur_len = cur[0].length
            read = i + 1
            if stop():
                break
        stopped = stop()
        if cur_len > 0 and not stopped:
            packs.append(cur)
            cur = []
        return _Plan(packs, read, cur if stopped else [], stopped)

    def events(self, lengths: Any) -> Iterator[Event]:
        """Pack ``lengths`` (sample lengths, 0 allowed) and yield the events."""
        ls = peer_lengths(lengths)
        plan = self._plan(ls)
        log = EventLog(self.capacity)
        log.extend(arrivals(ls, 0, empty=False))  # empty samples are dropped only among those read
        for i in range(plan.read):
            if ls[i] == 0:
                log.filtered(i, i, 0, "empty")
        for pack in plan.packs:
            log.row([Piece(e.occurrence, e.occurrence, e.start, e.length) for e in pack if e.length])
        for e in plan.dropped:
            log.discard(e.occurrence, e.occurrence, e.start, e.length)
        for i in range(plan.read, len(ls)):
            log.filtered(i, i, ls[i], "max-packs")
        yield from log.finish("rows" if plan.stopped else "drained")

    def trainer_rows(self, documents: Sequence[Sequence[int]]) -> list[dict[str, list[int]]]:
        """What ``PackedDataset[i]`` returns for each pack, as lists.

        ``labels`` are the sample tokens (a dataset whose labels equal its
        tokens) with -100 on padding.
        """
        L = self.capacity
        plan = self._plan([len(d) for d in documents])
        out = []
        for pack in plan.packs:
            tokens: list[int] = []
            pos: list[int] = []
            for e in pack:
                tokens.extend(documents[e.occurrence][e.start : e.start + e.length])
                pos.extend((e.start + j) % L for j in range(e.length))
            pad = L - len(tokens)
            seq_lens = [e.length for e in pack] + ([pad] if pad > 0 else [])
            last = pos[-1]
            out.append(
                {
                    "tokens": tokens + [self.padding_idx] * pad,
                    "labels": tokens + [-100] * pad,
                    "input_pos": pos + [min(last + 1 + j, L - 1) for j in range(pad)],
                    "seq_lens": seq_lens,
                }
            )
        return out


class TorchtuneNextFit(TorchtunePacker):
    """``torchtune-next_fit``: ``PackedDataset(split_across_pack=False)``."""

    name: ClassVar[str] = "torchtune-next_fit"
    default_split: ClassVar[bool] = False


class TorchtuneSplit(TorchtunePacker):
    """``torchtune-split``: ``PackedDataset(split_across_pack=True)``."""

    name: ClassVar[str] = "torchtune-split"
    default_split: ClassVar[bool] = True
    columnar: ClassVar[bool] = True

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns: with ``max_packs=None`` the samples are concatenated and cut every
        ``max_seq_len`` tokens (the last pack padded), as one window; with ``max_packs`` the events grouped.
        """
        if self.max_packs is not None:
            yield from batched(self.events(lengths), size)
            return
        ls = peer_array(lengths)
        check_split_budget(ls, self.capacity, self.name, columns=True)  # no max_packs bounds the cut
        if ls.size:  # one window: its arrivals and its rows a batch of about `size` events at a time
            rows_sections, rows = wrapped_rows(self.capacity, ls, np.arange(ls.size, dtype=np.int64),
                                               np.zeros(ls.size, np.int64), 1, 0, crop=False, size=size)
            yield from arrival_batches(ls, 0, size)  # (the rows hold their own narrow occurrences)
            for sec in rows_sections:
                yield assemble(1, [sec])
        else:
            rows = 0
        yield horizon_batch(rows)


PEERS: dict[str, type[PeerPacker]] = {
    TorchtuneNextFit.name: TorchtuneNextFit,
    TorchtuneSplit.name: TorchtuneSplit,
}
