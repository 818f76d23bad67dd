"""Helpers shared by the peer modules of part A (TRL, OLMo-core, Megatron, LLM Foundry).

Private: the lengths check that admits empty documents, the Arrival /
Filtered prologue, and row emission with left padding.
"""

from __future__ import annotations

import bisect
import numbers
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..engine.events import Arrival, Event, Filtered, Padding, Placement, Repeat
from ..errors import InputError, InputTypeError
from ._base import Piece

__all__ = ["arrivals", "as_length_list", "best_fit", "check_choice", "emit_row"]


def as_length_list(lengths: Any, *, allow_empty: bool, who: str) -> list[int]:
    """``lengths`` as a list of ints ``>= 0`` (``>= 1`` unless ``allow_empty``).

    Raises:
        TypeError: not a sequence of ints / an integer array.
        ValueError: a negative length, or an empty document where ``who`` takes none.
    """
    if isinstance(lengths, np.ndarray):
        if lengths.dtype == np.bool_ or not np.issubdtype(lengths.dtype, np.integer):
            raise InputTypeError(f"lengths must have an integer dtype, got {lengths.dtype}")
        if lengths.ndim != 1:
            raise InputError(f"lengths must be 1-D, got shape {lengths.shape}")
        values = [int(v) for v in lengths.tolist()]
    else:
        if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
            raise InputTypeError(f"lengths must be a sequence of ints or a numpy array, "
                                 f"got {type(lengths).__name__}")
        values = []
        for i, v in enumerate(lengths):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise InputTypeError(f"lengths[{i}] must be an int, got {type(v).__name__} {v!r}")
            values.append(int(v))
    lo = 0 if allow_empty else 1
    for i, v in enumerate(values):
        if v < lo:
            what = "a length >= 0" if allow_empty else f"a length >= 1 ({who} takes no empty documents)"
            raise InputError(f"lengths[{i}] must be {what}, got {v}")
    return values


def check_choice(name: str, value: object, allowed: Sequence[object]) -> Any:
    """``value`` if it is one of ``allowed``, else a ValueError naming ``name``."""
    if value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def arrivals(lengths: Sequence[int], first: int, *, pass_index: Sequence[int] | None = None,
             sources: Sequence[int] | None = None) -> list[Event]:
    """Arrival events of occurrences ``first, first + 1, ...`` plus Filtered for the empty ones."""
    out: list[Event] = []
    empty: list[Event] = []
    for k, n in enumerate(lengths):
        occ = first + k
        src = occ if sources is None else sources[k]
        out.append(Arrival(occ, src, 0 if pass_index is None else pass_index[k], n))
        if n == 0:
            empty.append(Filtered(occ, src, 0, "empty"))
    return out + empty


def emit_row(row: int, pieces: Iterable[Piece], capacity: int, *, left_pad: bool = False) -> list[Event]:
    """The events of one row: pieces, padded to ``capacity`` on the right (or the left)."""
    body: list[Event] = []
    pos = 0
    items = list(pieces)
    used = sum(p.length for p in items)
    if used > capacity:
        raise AssertionError(f"row {row} holds {used} tokens > capacity {capacity}")
    pad = capacity - used
    out: list[Event] = []
    if left_pad and pad:
        out.append(Padding(row, 0, pad))
        pos = pad
    for p in items:
        if p.repeat:
            body.append(Repeat(row, pos, p.occurrence, p.source, p.start, p.length))
        else:
            body.append(Placement(row, pos, p.occurrence, p.source, p.start, p.length, False, p.crop))
        pos += p.length
    out.extend(body)
    if pad and not left_pad:
        out.append(Padding(row, pos, pad))
    return out


def best_fit(sizes: Sequence[int], order: Iterable[int], capacity: int) -> list[list[int]]:
    """Best fit in the given ``order``: bins (lists of indices into ``sizes``) in creation order.

    Each size (``1..capacity``) goes to the bin with the smallest remaining
    space that holds it; among bins with that space, the one that reached it
    first (FIFO, as TRL's and OLMo-core's ``space -> deque`` tables); a new
    bin when none fits. Both frameworks search a segment tree over the present
    space values for the leftmost (smallest) one ``>= size``; a sorted list of
    the present values gives the same answer.

    >>> best_fit([3, 3, 1, 1], [0, 1, 2, 3], 4)
    [[0, 2], [1, 3]]

    Complexity: O(log S + S) per item, ``S <= capacity`` distinct spaces
    (a C-level ``list`` insert/delete).
    """
    bins: list[list[int]] = []
    spaces: list[int] = []  # sorted distinct remaining spaces in 1..capacity-1 held by some bin
    by_space: dict[int, deque[int]] = {}
    for idx in order:
        n = sizes[idx]
        k = bisect.bisect_left(spaces, n)
        if k < len(spaces):
            space = spaces[k]
            queue = by_space[space]
            b = queue.popleft()
            if not queue:
                del spaces[k]
        else:
            space = capacity
            b = len(bins)
            bins.append([])
        bins[b].append(idx)
        left = space - n
        if left > 0:
            queue = by_space.setdefault(left, deque())
            if not queue:
                bisect.insort(spaces, left)
            queue.append(b)
    return bins
