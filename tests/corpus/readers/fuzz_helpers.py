"""What every reader fuzz test shares: the damaged copies of a fixture, and the one verdict on a read.

A damaged input may be refused or read; the verdict (:func:`read_or_refuse`)
fails the test when reading it raises anything the command line would report
as status 3 (an internal error, "could not measure") or as more than one line,
or when it does not finish (a hang). A length table that is read must equal
what an independent reading of the same bytes says (each test's oracle): a
damaged file is never *silently* read as something else.

By default a test tries the structural offsets of its fixture (where a header,
an index or a batch starts and ends, and their neighbours) and a seeded sample
of the others; ``PACKING_THEORY_SLOW=1`` or ``-m slow`` (the tests marked
``slow``) try every offset and every bit of the headers and indexes.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

from packing_theory.cli._exit import ExitCode, classify

__all__ = ["Hung", "bit_flips", "cuts", "every", "flipped", "read_or_refuse"]

T = TypeVar("T")
SAMPLE = 24
"""Random offsets (and random bits) tried besides the structural ones in the default run."""


def every() -> bool:
    """Whether to try every offset: ``PACKING_THEORY_SLOW=1``."""
    return os.environ.get("PACKING_THEORY_SLOW") == "1"


def cuts(size: int, structural: Iterable[int], *, all_offsets: bool = False, seed: int = 0) -> list[int]:
    """Offsets to truncate a file of ``size`` bytes at: every one in ``0 .. size - 1`` (``all_offsets``), else
    the structural ones and their neighbours plus :data:`SAMPLE` seeded random ones."""
    if all_offsets:
        return list(range(size))
    picked = {o + d for o in structural for d in (-1, 0, 1) if 0 <= o + d < size}
    rng = np.random.default_rng(seed)
    picked.update(int(x) for x in rng.choice(size, size=min(SAMPLE, size), replace=False))
    return sorted(picked)


def bit_flips(region: range, *, all_bits: bool = False, seed: int = 0,
              every_bit_of: Iterable[int] = ()) -> list[tuple[int, int]]:
    """``(byte, bit)`` pairs to flip inside ``region``: all of them, or :data:`SAMPLE` seeded ones, bit 0 /
    bit 7 of the region's first and last bytes, and every bit of the bytes ``every_bit_of`` (a field
    known to matter: a length, an escape)."""
    pairs = [(b, k) for b in region for k in range(8)]
    if all_bits or len(pairs) <= SAMPLE:
        return pairs
    rng = np.random.default_rng(seed)
    picked = {pairs[int(i)] for i in rng.choice(len(pairs), size=SAMPLE, replace=False)}
    picked.update({(region.start, 0), (region.start, 7), (region.stop - 1, 0), (region.stop - 1, 7)})
    picked.update((b, k) for b in every_bit_of if b in region for k in range(8))
    return sorted(picked)


def flipped(data: bytes, byte: int, bit: int) -> bytes:
    """``data`` with one bit inverted."""
    out = bytearray(data)
    out[byte] ^= 1 << bit
    return bytes(out)


class Hung(BaseException):
    """A read that did not finish within its bound (a hang)."""


@contextlib.contextmanager
def _bounded(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise Hung(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_or_refuse(read: Callable[[], T], what: str, *, bound: float = 120.0) -> T | None:
    """``read()``, or ``None`` when it refuses the input as bad input (status 2, one line).

    Fails the test (naming ``what``, the damage) on any other exception — the command line's status 3, an
    internal error — and on a read still running after ``bound`` seconds (only a hang: a read takes
    milliseconds).
    """
    with _bounded(bound):
        try:
            return read()
        except Hung:
            raise AssertionError(f"{what}: the read hung") from None
        except Exception as exc:  # the verdict below: only bad input may come out
            code, line = classify(exc)
            assert code == ExitCode.USAGE, f"{what}: status {int(code)}: {line}"
            assert "\n" not in line, f"{what}: a message of several lines: {line!r}"
            return None
