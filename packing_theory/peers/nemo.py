"""NeMo sequence packing: ``create_hist``, ``create_packing_strategy``, ``fill_packing_strategy``.

Transcribed (in our own code) from ``nemo/utils/sequence_packing_utils.py`` of
nemo-toolkit 3.0.0 (NVIDIA/NeMo@8cfedd720346 has the same packing functions).

* ``create_hist`` files every example under ``seq_len = len(input_ids) - 1``
  (inputs and labels are one token shorter than the example). An empty
  example gets ``seq_len = -1``: it lands in a histogram slot that is never
  read, so it is silently dropped (:class:`~packing_theory.engine.events.Filtered`,
  reason ``"empty"``).
* ``create_packing_strategy`` packs the *histogram*, i.e. the ``seq_len``
  values in ascending order, with first fit (``sum(bin) + s <= pack_size``):
  ``first_fit`` packs that ascending list, ``first_fit_decreasing`` the list
  sorted descending, ``first_fit_shuffle`` the list shuffled by numpy's global
  RNG (``np.random.shuffle``).
* ``fill_packing_strategy`` permutes the examples of each ``seq_len``
  (``np.random.permutation``, ascending ``seq_len``, same global RNG) and
  fills each bin's slots by popping from the *end* of its length's list.
  ``seed`` is the state of numpy's global RNG before the strategy is built
  (``np.random.seed(seed)``; NeMo's data module passes ``seed=0``).
* An example with ``seq_len > pack_size`` makes the framework crash
  (``KeyError``/``IndexError``); here it is a ``ValueError``.

Row model (the trainer's input row): a pack holds ``sum(seq_len) <=
pack_size`` input positions; example ``d`` of ``n`` tokens fills ``n - 1``
of them with its tokens ``[0, n-1)``. Its last token is only ever a *label*
(the target of the previous position), never an input position; the event
stream records it as a :class:`~packing_theory.engine.events.Discard` of one token
per example, and an example of one token (``seq_len = 0``) is packed with no
input position at all (one Discard). :meth:`NemoPacker.trainer_rows` gives
the stored pack (``input_ids`` with whole examples, ``seq_start_id``) and the
trainer's ``cu_seqlens`` / ``position_ids``.

Columnar (:meth:`~packing_theory.peers.PeerPacker.batches`): the same packs
from numpy, the shared first-fit kernel and the same global RNG stream
(:mod:`packing_theory.peers._first_fit_columns`); ``events`` is the oracle.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from .._checks import check_int
from ..engine.batches import EventBatch
from ..engine.events import Event
from ..engine.knobs import Knob
from ..errors import InputError
from ._base import PeerPacker
from ._columns import peer_array
from ._common import EventLog, Piece, arrivals, check_choice, check_optional_int, first_fit, peer_lengths
from ._figures import TrainerRule
from ._first_fit_columns import nemo_batches, nemo_packs

__all__ = [
    "PEERS",
    "NemoFirstFit",
    "NemoFirstFitDecreasing",
    "NemoFirstFitShuffle",
    "NemoPacker",
    "nemo_first_fit",
]

VERSIONS = ("3.0.0", "2.0.0")
"""Supported releases: in 2.0.0 the histogram has ``truncate_seq_len`` slots (3.0.0: one more), so
an example filling exactly ``pack_size`` input positions makes 2.0.0 fail (``IndexError``)."""


def nemo_first_fit(seqlens: Sequence[int], pack_size: int) -> list[list[int]]:
    """NeMo's ``first_fit``: bins of ``seq_len`` values, first bin with room.

    >>> nemo_first_fit([5, 3, 4, 2, 2], 8)
    [[5, 3], [4, 2, 2]]

    Complexity: O(N log N) (NeMo's own loop re-sums every bin: O(N * bins * items)).
    """
    return [[seqlens[k] for k in bin_] for bin_ in first_fit(seqlens, pack_size)]


class NemoPacker(PeerPacker):
    """NeMo offline packing (base of the three algorithms).

    Args:
        capacity: the row width ``R`` = ``pack_size`` (``packed_sequence_size``), in input positions.
        seed, pad_id, max_seq_length, framework_version: see :attr:`knobs`; without
            ``max_seq_length`` an example with ``len - 1 > pack_size`` raises.

    >>> p = NemoFirstFitDecreasing(8)
    >>> [[(e.source, e.length) for e in row] for row in p.assignment([6, 3, 5, 3])]
    [[(0, 5), (1, 2)], [(2, 4), (3, 2)]]
    """

    name: ClassVar[str] = "nemo"
    framework: ClassVar[str] = "NeMo"
    reference: ClassVar[str] = (
        "NVIDIA/NeMo nemo-toolkit 3.0.0 (= @8cfedd720346) nemo/utils/sequence_packing_utils.py"
    )
    family_note: ClassVar[str] = (
        "offline first-fit over a length histogram of the whole dataset (no B-span buffer, "
        "no crop); examples are assigned to bins by length only and drawn at random per length"
    )
    algorithm: ClassVar[str] = "first_fit"
    columnar: ClassVar[bool] = True
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "position", False,
        "NVIDIA/NeMo nemo/collections/nlp/data/language_modeling/megatron/gpt_sft_dataset.py "
        "GPTSFTPackedDataset.collate_fn (inputs = each example minus its last token, labels = minus its "
        "first, padded to the batch's longest pack)",
        "the rows here are the trainer's input positions and every one predicts the next token of its own "
        "example: targets = placed tokens (loss_mask on answer tokens only is not modelled); the collate "
        "function pads a pack only to the batch's longest, which depends on the batch and is not counted")
    trainer_view: ClassVar[str] = (
        "packs of whole examples (input_ids, seq_start_id); the trainer's inputs are each example minus "
        "its last token (sum <= pack_size), labels minus its first, cu_seqlens per example, "
        "position_ids restarting at 0 per example"
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("seed", "int", 0, "numpy global RNG seed before packing (NeMo's data module passes 0)"),
        Knob("pad_id", "int", 0, "the padding token of the trainer's rows (trainer_rows only)"),
        Knob("max_seq_length", "int", None, "cut longer examples to their first max_seq_length tokens before "
             "packing, as NeMo's SFT dataset does upstream (None: no cut)", optional=True),
        Knob("framework_version", "str", "3.0.0", "nemo-toolkit release transcribed", choices=VERSIONS),
    )

    def __init__(
        self,
        capacity: int,
        *,
        seed: int = 0,
        pad_id: int = 0,
        max_seq_length: int | None = None,
        framework_version: str = "3.0.0",
    ) -> None:
        super().__init__(capacity)
        self.max_seq_length = check_optional_int("max_seq_length", max_seq_length, 1)
        self.seed = check_int("seed", seed, 0)
        if self.seed >= 2**32:
            raise InputError(f"seed must be < 2**32 (numpy's legacy seeding), got {self.seed}")
        self.pad_id = check_int("pad_id", pad_id, -(2**62))
        self.version = check_choice("framework_version", framework_version, VERSIONS)


    @property
    def framework_version(self) -> str:
        """The release whose behaviour is replayed (the ``framework_version`` knob)."""
        return self.version
    def assignment(self, lengths: Any) -> list[list[Piece]]:
        """The packs: per bin, one Piece ``(d, d, 0, n_d - 1)`` per example (length may be 0)."""
        ls = self._cut(peer_lengths(lengths))
        P = self.capacity
        by_len: dict[int, list[int]] = {}
        hist = (self.max_seq_length if self.max_seq_length is not None else P) + (
            1 if self.version != "2.0.0" else 0
        )  # create_hist's slots: seq_len < hist
        for d, n in enumerate(ls):
            if n - 1 > P:
                raise InputError(
                    f"lengths[{d}] = {n}: seq_len {n - 1} > capacity (pack_size) {P}; NeMo's "
                    "fill_packing_strategy has no slot for it (the framework fails with KeyError)"
                )
            if n - 1 >= hist:
                raise InputError(
                    f"lengths[{d}] = {n}: seq_len {n - 1} has no slot in NeMo {self.version}'s histogram "
                    f"of {hist} lengths (the framework fails with IndexError)"
                )
            if n > 0:
                by_len.setdefault(n - 1, []).append(d)
        if not by_len:
            raise InputError("lengths holds no non-empty example: NeMo create_packing_strategy needs one")
        rs = np.random.RandomState(self.seed)
        all_lens = [s for s in sorted(by_len) for _ in by_len[s]]
        if self.algorithm == "first_fit_decreasing":
            all_lens = sorted(all_lens, reverse=True)
        elif self.algorithm == "first_fit_shuffle":
            all_lens = all_lens[:]
            rs.shuffle(all_lens)
        bins = nemo_first_fit(all_lens, P)
        pools: dict[int, list[int]] = {}
        for s in range(P + 1):
            docs = by_len.get(s)
            if docs:
                perm = rs.permutation(len(docs))
                pools[s] = [docs[int(k)] for k in perm]
        return [[Piece(d, d, 0, s) for s in bin_ for d in (pools[s].pop(),)] for bin_ in bins]

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns (:func:`~packing_theory.peers._first_fit_columns.nemo_packs`).

        A refused example is refused by :meth:`assignment` itself, on the
        examples up to it (the same message).
        """
        ls = peer_array(lengths)
        kept = ls if self.max_seq_length is None else np.minimum(ls, self.max_seq_length)
        hist = (self.max_seq_length if self.max_seq_length is not None else self.capacity) + (
            1 if self.version != "2.0.0" else 0)
        refused = (kept - 1 > self.capacity) | (kept - 1 >= hist)
        if refused.any() or not (ls > 0).any():
            self.assignment(ls[: int(np.argmax(refused)) + 1].tolist() if refused.any() else [])
        chosen, sizes, pack = nemo_packs(kept - 1, self.capacity, self.algorithm, self.seed, compiled)
        yield from nemo_batches(ls, kept, chosen, sizes, pack, self.capacity, size)

    def _cut(self, ls: list[int]) -> list[int]:
        m = self.max_seq_length
        return ls if m is None else [min(n, m) for n in ls]

    def events(self, lengths: Any) -> Iterator[Event]:
        """Pack ``lengths`` (example lengths, 0 allowed) and yield the events (input-row view)."""
        ls = peer_lengths(lengths)
        packs = self.assignment(ls)
        log = EventLog(self.capacity)
        log.extend(arrivals(ls, 0, empty=False))  # the empty examples are filtered after the cuts
        for d, (n, kept) in enumerate(zip(ls, self._cut(ls), strict=True)):
            log.discard(d, d, kept, n - kept)
        for d, n in enumerate(ls):
            if n == 0:
                log.filtered(d, d, 0, "empty")
        for pack in packs:
            log.row([p for p in pack if p.length])
            for p in pack:
                log.discard(p.occurrence, p.source, p.length, 1)  # the label-only last token
        yield from log.finish("drained")

    def trainer_rows(self, documents: Sequence[Sequence[int]]) -> list[dict[str, list[int]]]:
        """Per pack: the stored ``input_ids`` / ``seq_start_id`` and the trainer's inputs.

        ``inputs`` are the input positions (tokens ``[0, n-1)`` of each example)
        padded with ``pad_id`` to ``pack_size``; ``cu_seqlens`` their boundaries;
        ``position_ids`` restart at 0 per example.
        """
        out = []
        m = self.max_seq_length
        documents = [d if m is None else d[:m] for d in documents]
        for pack in self.assignment([len(d) for d in documents]):
            ids: list[int] = []
            starts: list[int] = []
            inputs: list[int] = []
            cu = [0]
            pos: list[int] = []
            for p in pack:
                doc = documents[p.source]
                starts.append(len(ids))
                ids.extend(doc)
                inputs.extend(doc[:-1])
                cu.append(cu[-1] + len(doc) - 1)
                pos.extend(range(len(doc) - 1))
            out.append(
                {
                    "input_ids": ids,
                    "seq_start_id": starts,
                    "cu_seqlens": cu,
                    "position_ids": pos,
                    "inputs": inputs + [self.pad_id] * (self.capacity - len(inputs)),
                }
            )
        return out


class NemoFirstFit(NemoPacker):
    """``nemo-first_fit``: first fit over the ascending length histogram."""

    name: ClassVar[str] = "nemo-first_fit"
    algorithm: ClassVar[str] = "first_fit"


class NemoFirstFitDecreasing(NemoPacker):
    """``nemo-first_fit_decreasing``: first fit over lengths sorted descending."""

    name: ClassVar[str] = "nemo-first_fit_decreasing"
    algorithm: ClassVar[str] = "first_fit_decreasing"


class NemoFirstFitShuffle(NemoPacker):
    """``nemo-first_fit_shuffle``: first fit over lengths shuffled by numpy's global RNG (NeMo's default)."""

    name: ClassVar[str] = "nemo-first_fit_shuffle"
    algorithm: ClassVar[str] = "first_fit_shuffle"


PEERS: dict[str, type[PeerPacker]] = {
    cls.name: cls for cls in (NemoFirstFit, NemoFirstFitDecreasing, NemoFirstFitShuffle)
}
