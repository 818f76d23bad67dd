"""Parcae's ``BestFitPackingCollator``: nanochat's best fit per collate call, with a buffer size never read.

Transcribed (our own code) from sandyresearch/parcae@dee8363b7c0e
``recpre/data_loading_utils.py`` (``BestFitPackingCollator.__call__``) and
``scripts/train.py`` (the collator is the ``DataLoader``'s ``collate_fn``,
``batch_size=micro_batch_size``, ``block_size = loader_block_size = block_size + 1``).

What the collator does, per call (one ``DataLoader`` batch of ``batch_size``
documents, in dataset order):

1. append the call's documents (their tokens; an empty one is skipped) to
   the buffer it keeps between calls;
2. fill ``batch_size`` rows of ``R`` tokens: while the row has room, if the
   buffer is empty the rest of the row is padding (the pad id); otherwise
   the largest buffered document that fits the rest of the row (the earliest
   of equal lengths) is placed whole, or, when none fits, the shortest
   (earliest) is cut to fill the row and its rest is dropped.

The constructor's ``buffer_size`` (``pack_buffer_size``, default 1,000) is
stored and never read: the buffer is never refilled to a minimum occupancy.
A call brings ``batch_size`` documents for ``batch_size`` rows, so with
documents shorter than a row the buffer empties within a call and the
remaining rows of the call are padding: in the steady state about one
document per row, and a padding share near ``1 - mean length / R``
(sandyresearch/parcae#8: 66 % of training tokens were padding). Setting
``buffer_size`` changes nothing here: it is not a knob of this packer.

A data set that ends part-way through a call gives a shorter last call
(``drop_last`` is ``False`` in ``scripts/train.py``): that call fills as many
rows as it has documents. Documents still buffered when the data ends are the
Horizon's buffered spans.

Outside seed 000's family: no minimum-occupancy refill (documents arrive a
batch per batch of rows), so the proposition's hypotheses fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from .._checks import check_int
from ..engine.events import BufferedSpan, Discard, Event, Horizon
from ..engine.knobs import Knob, RowWidth
from ._base import PeerPacker
from ._common import Piece, RowEmitter, arrivals, peer_lengths
from ._figures import TrainerRule

__all__ = ["PEERS", "ParcaeBestFit"]


class ParcaeBestFit(PeerPacker):
    """``parcae-bestfit``: best fit with a crop per collate call of ``batch_size`` documents and rows.

    Args:
        capacity: the row width ``R`` (``loader_block_size = block_size + 1``).
        batch_size: documents per collate call, and rows it returns (``micro_batch_size``).

    >>> evs = list(ParcaeBestFit(8, batch_size=2).events([3, 4, 9, 2]))
    >>> [(type(e).__name__, e.row, e.offset, e.length) for e in evs if hasattr(e, "row")]
    [('Placement', 0, 0, 4), ('Placement', 0, 4, 3), ('Padding', 0, 7, 1), ('Padding', 1, 0, 8), \
('Placement', 2, 0, 2), ('Placement', 2, 2, 6), ('Padding', 3, 0, 8)]
    """

    name: ClassVar[str] = "parcae-bestfit"
    framework: ClassVar[str] = "Parcae"
    reference: ClassVar[str] = (
        "sandyresearch/parcae@dee8363b7c0e recpre/data_loading_utils.py (BestFitPackingCollator.__call__) "
        "and scripts/train.py (DataLoader batch_size=micro_batch_size, block_size + 1 tokens per row); "
        "sandyresearch/parcae#8")
    family_note: ClassVar[str] = (
        "best fit with a shortest-span crop over a buffer that is refilled one collate batch per batch of "
        "rows, never to a minimum occupancy (its buffer_size is not read): the proposition's refill "
        "hypothesis fails, and rows are padded whenever the buffer runs empty")
    trainer_view: ClassVar[str] = (
        "rows of block_size + 1 tokens, inputs = row[:-1], labels = row[1:]; padding positions hold the pad "
        "id (0 without one) and are not masked by the collator")
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", True,
        "sandyresearch/parcae recpre/data_loading_utils.py BestFitPackingCollator.__call__ (input_ids = "
        "row[:-1], label_ids = row[1:]; the padded tail is stored as the pad id)",
        "rows are stored whole, padding included; every position but the first of a row is a label "
        "(targets = R - 1 per row, pad labels included)")
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("batch_size", "int", 4, "documents per collate call and rows it returns (micro_batch_size; "
             "parcae's default 4)"),
    )
    row_width: ClassVar[RowWidth] = RowWidth(
        "R = block_size + 1: a row holds block_size inputs and the shifted labels (loader_block_size)",
        offset=1)
    offline: ClassVar[bool] = False

    def __init__(self, capacity: int, *, batch_size: int = 4) -> None:
        super().__init__(check_int("capacity", capacity, 2))
        self.batch_size = check_int("batch_size", batch_size, 1)

    def events(self, lengths: Any) -> Iterator[Event]:
        """Collate calls of ``batch_size`` documents in order; the still-buffered documents at the end.

        Complexity: O(B) per selection for a buffer of ``B`` documents (the
        collator's linear scan), as the framework.
        """
        sizes = peer_lengths(lengths)
        R = self.capacity
        em = RowEmitter(R)
        buffer: list[int] = []  # occurrences in buffer order
        for lo in range(0, len(sizes), self.batch_size):
            call = range(lo, min(lo + self.batch_size, len(sizes)))
            yield from arrivals([sizes[i] for i in call], lo)  # an empty document is Filtered
            buffer.extend(i for i in call if sizes[i] > 0)
            for _ in call:
                yield from self._row(em, buffer, sizes)
        yield Horizon(em.rows, 0, "drained",
                      tuple(BufferedSpan(i, i, 0, sizes[i], False) for i in buffer))

    def _row(self, em: RowEmitter, buffer: list[int], sizes: list[int]) -> list[Event]:
        R = self.capacity
        pieces: list[Piece] = []
        discards: list[Event] = []
        pos = 0
        while pos < R and buffer:
            remaining = R - pos
            best, best_len = -1, 0
            for k, i in enumerate(buffer):  # the largest that fits, the earliest of equals
                n = sizes[i]
                if best_len < n <= remaining:
                    best, best_len = k, n
            if best >= 0:
                i = buffer.pop(best)
                pieces.append(Piece(i, i, 0, sizes[i]))
                pos += sizes[i]
                continue
            k = min(range(len(buffer)), key=lambda j: sizes[buffer[j]])  # the shortest, the earliest
            i = buffer.pop(k)
            pieces.append(Piece(i, i, 0, remaining, crop=True))
            discards.append(Discard(i, i, remaining, sizes[i] - remaining))
            pos = R
        return em.row(pieces) + discards


PEERS: dict[str, type[PeerPacker]] = {ParcaeBestFit.name: ParcaeBestFit}
