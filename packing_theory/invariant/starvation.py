"""When ``bestfit-pad`` starves: the row from which every row is padding, bounded from the lengths alone.

``bestfit-pad`` (nanochat's SFT loader) places a buffered document that fits
the rest of the row and otherwise pads the row; it never crops, so a document
longer than the row (``L > R``) never leaves the buffer. The refill appends
batches while fewer than ``B`` spans are buffered, so the stream is read up to
the end of the refill batch that brings the ``B``-th long occurrence — and no
further: from then on the buffer holds at least ``B`` spans, the long ones
never leave, and once the short ones are placed nothing fits even an empty
row. From that row ``s`` on, every row is padding (nanochat PR #811: every
target masked, a NaN loss, an epoch that never ends).

**Theorem** (``proofs/coq/BestFitPad.v``: ``bfp_starvation``,
``bfp_placed_count``, ``bfp_placed_tokens``, ``bfp_starved_absorbing``). Let
``N`` be the arrivals up to the end of that batch, and ``P`` and ``M`` the
number and the tokens of the short occurrences among them. Then exactly those
``P`` occurrences are placed, and the first all-padding row ``s`` satisfies::

    ceil(M / R) <= s <= min(P, floor((2M - 1) / (R + 1)) + 1)      (s = 0 when M = 0)

— every row before ``s`` holds a placement, a row holds at most ``R`` tokens,
and two consecutive rows before ``s`` hold more than ``R`` together (the first
document of a row did not fit the end of the row before it). The bound needs
the stream to last until that batch (``exhausted="stop"``; a stream with fewer
than ``B`` long occurrences runs dry first and never starves there).

:func:`starvation_bound` computes ``N``, ``P``, ``M`` and the two bounds in
one pass over the refill batches (O(N), no replay); the replay's
``Horizon`` (``stop_reason == "starved"`` at row ``s``) confirms them
(``tests/invariant/test_starvation.py``).

>>> b = starvation_bound([3, 9, 4, 10, 2, 2, 5], capacity=8, min_buffer=2, refill=1)
>>> b.arrivals, b.long_arrivals, b.placed_documents, b.placed_tokens, (b.first_row_low, b.first_row_high)
(4, 2, 2, 7, (1, 2))
>>> starvation_bound([3, 9, 4], capacity=8, min_buffer=2, refill=1) is None  # one long: runs dry first
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .._checks import check_int
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.refill import refill_batches
from ..errors import InputError

__all__ = ["StarvationBound", "first_row_bounds", "starvation_bound"]


@dataclass(frozen=True, slots=True)
class StarvationBound:
    """Where ``bestfit-pad`` starves, from the lengths and the refill schedule alone.

    Attributes:
        capacity: the row width ``R``.
        min_buffer: ``B``.
        arrivals: ``N``, the occurrences read: up to the end of the refill batch
            bringing the ``B``-th long occurrence.
        long_arrivals: the long occurrences among them (``>= B``; they are the
            buffer once it starves).
        placed_documents: ``P``, the short occurrences among them (all placed).
        placed_tokens: ``M``, their tokens.
        first_row_low, first_row_high: the proved bounds on the first all-padding row.
    """

    capacity: int
    min_buffer: int
    arrivals: int
    long_arrivals: int
    placed_documents: int
    placed_tokens: int
    first_row_low: int
    first_row_high: int

    def contains(self, row: int) -> bool:
        """Whether ``row`` lies within the proved bounds."""
        return self.first_row_low <= check_int("row", row, 0) <= self.first_row_high

    def sentence(self) -> str:
        """The prediction in one sentence.

        >>> starvation_bound([3, 9, 4, 10], capacity=8, min_buffer=2, refill=1).sentence().split(": ")[1]
        'the first all-padding row is one of rows 1..2 (the proved bounds), and every row after it is padding'
        """
        at = (f"row {self.first_row_low:,}" if self.first_row_low == self.first_row_high
              else f"one of rows {self.first_row_low:,}..{self.first_row_high:,}")
        return (f"after {self.arrivals:,} arrivals the buffer holds {self.long_arrivals:,} documents longer "
                f"than R = {self.capacity:,} and nothing else: the first all-padding row is {at} (the "
                "proved bounds), and every row after it is padding")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def first_row_bounds(placed_tokens: int, placed_documents: int, capacity: int) -> tuple[int, int]:
    """``(ceil(M / R), min(P, (2M - 1) // (R + 1) + 1))``, and ``(0, 0)`` when ``M = 0``.

    >>> first_row_bounds(7, 2, 8), first_row_bounds(0, 0, 8), first_row_bounds(20, 10, 4)
    ((1, 2), (0, 0), (5, 8))
    """
    M = check_int("placed_tokens", placed_tokens, 0)
    P = check_int("placed_documents", placed_documents, 0)
    R = check_int("capacity", capacity, 1)
    if M == 0:
        return 0, 0
    return -(-M // R), min(P, (2 * M - 1) // (R + 1) + 1)


def starvation_bound(lengths: LengthsInput, config: PackerConfig | None = None, **kwargs: Any
                     ) -> StarvationBound | None:
    """The proved bounds on the row at which ``bestfit-pad`` starves (see the module doc).

    Args:
        lengths: the BOS-inclusive lengths, as for a replay.
        config: a :class:`~packing_theory.engine.policies.PackerConfig` (or its
            fields as keyword arguments; ``policy`` defaults to ``bestfit-pad``):
            its capacity, ``B``, refill schedule and passes.

    Returns:
        ``None`` when the stream holds fewer than ``B`` long occurrences over
        its passes (it runs dry before the buffer can starve).

    Raises:
        InputError: a policy that crops (the bound is for a padding policy).

    Complexity: O(N) for the ``N`` arrivals read, memory O(refill batch).
    """
    if config is None:
        kwargs.setdefault("policy", "bestfit-pad")
    cfg = resolve_config(config, kwargs, PackerConfig)
    if not cfg.spec.pads:
        raise InputError(f"policy {cfg.policy!r} crops when nothing fits: the starvation bound is for a "
                         "policy that pads instead (bestfit-pad)")
    R, B = cfg.capacity, cfg.min_buffer
    arrivals = longs = placed = tokens = 0
    for batch in refill_batches(lengths, cfg):
        for _source, _pass, length in batch:
            arrivals += 1
            if length > R:
                longs += 1
            else:
                placed += 1
                tokens += length
        if longs >= B:
            low, high = first_row_bounds(tokens, placed, R)
            return StarvationBound(R, B, arrivals, longs, placed, tokens, low, high)
    return None
