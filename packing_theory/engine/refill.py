"""The refill model: the arrival stream in refill batches, resumable at any batch boundary.

Before every selection the engines refill the buffer while it holds fewer
than ``B`` spans, one batch at a time (:class:`RefillCursor`); a batch never
crosses a corpus pass. :class:`CursorState` is where the cursor stands, part
of an engine's state for exact resume (:mod:`packing_theory.engine.state`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .._checks import check_int, is_int
from ..errors import InputError, InputTypeError
from ..lengths import INT64_MAX, reject_unordered, validate_lengths
from .policies import PackerConfig

__all__ = ["CursorState", "RefillCursor", "as_length_list", "refill_batches"]


def _validated(values: Iterable[int], offset: int = 0) -> Iterator[int]:
    """Yield lengths as Python ints, raising on the first invalid one."""
    for i, value in enumerate(values, offset):
        if not is_int(value):
            raise InputTypeError(f"lengths[{i}] must be an int, got {type(value).__name__} {value!r}")
        if value < 1:
            raise InputError(f"lengths[{i}] must be a positive BOS-inclusive length, got {value}")
        if value > INT64_MAX:
            raise InputError(f"lengths[{i}] must be a length that fits a signed 64-bit int, got {value}")
        yield int(value)


def as_length_list(lengths: object) -> list[int] | None:
    """Validate an in-memory length collection and return it as a list.

    Returns ``None`` for a one-shot iterator (validated lazily while streaming).
    :func:`refill_batches` does not call this for a numpy array (it slices the
    array batch by batch instead of converting it whole).

    Raises:
        TypeError: wrong dtype (float, bool, object) or type; a mapping or a
            set (no arrival order).
        ValueError: wrong shape, empty, or a non-positive length.
    """
    arr = _as_length_array(lengths)
    return None if arr is None else [int(v) for v in arr.tolist()]


def _as_length_array(lengths: object) -> npt.NDArray[np.int64] | None:
    """An in-memory length collection as a validated ``int64`` array; ``None`` for a one-shot iterator."""
    if isinstance(lengths, np.ndarray):
        return validate_lengths(lengths)
    reject_unordered("lengths", lengths)
    if isinstance(lengths, (str, bytes)):
        raise InputTypeError(f"lengths must be a sequence of ints, got {type(lengths).__name__}")
    if isinstance(lengths, Sequence):
        out = np.fromiter(_validated(lengths), np.int64, len(lengths))
        if not out.size:
            raise InputError("lengths is empty: a replay needs at least one document")
        return out
    if isinstance(lengths, Iterable):
        return None
    raise InputTypeError(f"lengths must be a sequence, array or iterable of ints, got "
                         f"{type(lengths).__name__}")


class CursorState(NamedTuple):
    """Where a :class:`RefillCursor` stands: enough to continue the arrival stream exactly.

    Attributes:
        pass_index: the corpus pass the next arrival belongs to.
        position: documents of that pass already taken (for a streamed
            iterator: documents taken in total, which is also the next source id).
        batch_index: refill batches already taken in that pass (it selects the
            next batch size of a batch-size sequence).
        done: the stream is exhausted.
    """

    pass_index: int
    position: int
    batch_index: int
    done: bool


class RefillCursor:
    """The refill model: refill batches of ``(source, pass_index, length)`` arrivals, resumable.

    Batch sizes follow ``config.refill`` from the start of each pass, cycling,
    and are truncated at the end of a pass (the loaders restart their document
    batches at every epoch). An in-memory sequence or array is held once as an
    ``int64`` array (8 bytes per document) and may be read for several passes;
    a one-shot iterator is streamed lazily (memory O(batch)) and allows only
    ``passes == 1``.

    ``state`` continues from a :class:`CursorState`. A streamed iterator cannot
    be rewound: resuming one means passing an iterator that starts at
    ``state.position``.

    >>> cur = RefillCursor([5, 3, 9, 4, 7], PackerConfig(refill=(2, 1), passes=2))
    >>> [len(cur.next_batch() or []) for _ in range(4)], cur.state()
    ([2, 1, 2, 2], CursorState(pass_index=1, position=2, batch_index=1, done=False))

    Raises:
        ValueError: an empty stream, a non-positive length, or ``passes > 1``
            with a one-shot iterator.
        TypeError: a non-integer length or a wrong container type.
    """

    __slots__ = ("_array", "_iter", "_passes", "_sizes", "batch_index", "done", "pass_index", "position")

    def __init__(self, lengths: object, config: PackerConfig, state: CursorState | None = None) -> None:
        self._sizes = config.batch_sizes
        self._passes = config.passes
        self._array = _as_length_array(lengths)
        self._iter: Iterator[int] | None = None
        if self._array is None:
            if config.passes != 1:
                raise InputError(
                    f"passes={config.passes} needs a re-iterable lengths sequence, got a one-shot iterator"
                )
            start = 0 if state is None else state.position
            self._iter = _validated(lengths, start)  # type: ignore[arg-type]
        self.pass_index, self.position, self.batch_index, self.done = state or (0, 0, 0, False)
        if state is not None:
            check_int("state.position", state.position, 0)
            if not 0 <= state.pass_index <= self._passes:
                raise InputError(f"state.pass_index must be in 0..{self._passes}, got {state.pass_index}")
            if self._array is not None and state.position > self._array.size:
                raise InputError(f"state.position {state.position} is past the {self._array.size} documents")

    @property
    def array(self) -> npt.NDArray[np.int64] | None:
        """The in-memory lengths the cursor reads (``None`` for a streamed iterator)."""
        return self._array

    def state(self) -> CursorState:
        """The cursor's position (O(1))."""
        return CursorState(self.pass_index, self.position, self.batch_index, self.done)

    def next_batch(self) -> list[tuple[int, int, int]] | None:
        """The next refill batch as ``(source, pass_index, length)`` arrivals, or ``None`` when the
        stream is exhausted. O(batch)."""
        block = self.next_block()
        if block is None:
            return None
        first, p, lengths = block
        return [(s, p, n) for s, n in enumerate(lengths, first)]

    def next_block(self) -> tuple[int, int, list[int]] | None:
        """The next refill batch as ``(first source, pass_index, lengths)``, or ``None`` when the stream
        is exhausted: the batch's sources are ``first, first + 1, ...`` (a batch never crosses a pass).
        O(batch).

        >>> cur = RefillCursor([5, 3, 9], PackerConfig(refill=2))
        >>> cur.next_block(), cur.next_block(), cur.next_block()
        ((0, 0, [5, 3]), (2, 0, [9]), None)
        """
        if self.done:
            return None
        size = self._sizes[self.batch_index % len(self._sizes)]
        first = self.position
        p = self.pass_index
        if self._array is not None:
            arr = self._array
            j = min(arr.size, first + size)
            lengths: list[int] = arr[first:j].tolist()
            self.position = j
            self.batch_index += 1
            if j == arr.size:  # the pass ends: the next batch starts the next pass afresh
                self.pass_index += 1
                self.position = 0
                self.batch_index = 0
                self.done = self.pass_index >= self._passes
            return first, p, lengths
        assert self._iter is not None
        lengths = list(itertools.islice(self._iter, size))
        if not lengths:
            self.done = True
            if first == 0:
                raise InputError("lengths is empty: a replay needs at least one document")
            return None
        self.position += len(lengths)
        self.batch_index += 1
        return first, p, lengths


def refill_batches(lengths: object, config: PackerConfig) -> Iterator[list[tuple[int, int, int]]]:
    """Yield refill batches of ``(source, pass_index, length)`` arrivals (a :class:`RefillCursor` run).

    Raises:
        ValueError: empty stream, a non-positive length, or ``passes > 1`` with
            a one-shot iterator.
        TypeError: a non-integer length or a wrong container type (a mapping
            or a set has no arrival order).
    """
    cursor = RefillCursor(lengths, config)
    return iter(cursor.next_batch, None)
