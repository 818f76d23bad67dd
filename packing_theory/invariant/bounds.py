"""The corollaries of the protected-set proposition (seed 000 §3) as functions.

All three are *necessary* bounds for the ``discard`` / ``continue`` family
(minimum-count refill, largest-fit-else-shortest selection, earliest-arrival
ties, one active span per occurrence, no segmentation, no flush): they say
when a source *cannot* have started, never when it will.

* **Startup** — no long occurrence (``L > R``) starts before the ``B``-th long
  arrival (:func:`startup_bound`); with i.i.d. lengths and long probability
  ``q`` that arrival's position has expectation ``B / q``
  (:func:`expected_startup_index`).
* **Mass** — the buffer holds at least the sum of the ``min(B - 1, N_L)``
  largest observed long lengths (:func:`mass_lower_bound`).
* **Repeated corpus** — a corpus with ``r`` sources of length ``>= l > R`` per
  pass, repeated without a buffer reset: none of them starts while
  ``E * r < B`` after ``E`` passes, so the earliest possible pass is
  ``ceil(B / r)`` (:func:`earliest_pass`, :func:`repeated_corpus_table`).

The paper's §5.2 table, from its per-threshold counts at ``B = 1000``:

>>> print(format_pass_table(repeated_corpus_table(counts=PAPER_COUNTS, min_buffer=1000)))
|Original length at least|Sources per pass|Earliest possible pass|
|---|---:|---:|
|16,384|789|2|
|32,768|196|6|
|65,536|39|26|
|131,072|9|112|
|290,219|1|1000|
"""

from __future__ import annotations

import heapq
import itertools
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from .._checks import check_int
from ..errors import InputError, InputTypeError
from ..lengths import validate_lengths

__all__ = [
    "PAPER_CAPACITY",
    "PAPER_COUNTS",
    "PAPER_SOURCES",
    "PAPER_THRESHOLDS",
    "PAPER_TOKENS",
    "HistogramCheck",
    "PassBound",
    "check_histogram",
    "counts_from_lengths",
    "default_thresholds",
    "earliest_pass",
    "expected_startup_index",
    "format_pass_table",
    "mass_lower_bound",
    "parse_counts",
    "repeated_corpus_table",
    "startup_bound",
]

PAPER_CAPACITY = 2049
"""Row capacity ``R`` of the paper's recipe (``T + 1``)."""
PAPER_THRESHOLDS: tuple[int, ...] = (16384, 32768, 65536, 131072, 290219)
"""The §5.2 length thresholds (the last is the corpus maximum)."""
PAPER_COUNTS: dict[int, int] = {16384: 789, 32768: 196, 65536: 39, 131072: 9, 290219: 1}
"""Sources per pass with original length at least each threshold (seed 000 §5.2)."""
PAPER_SOURCES = 846_848
"""Eligible sources in the paper's length census."""
PAPER_TOKENS = 631_241_817
"""Their BOS-inclusive tokens."""




# --------------------------------------------------------------------------- startup


def startup_bound(lengths: Iterable[int], capacity: int, min_buffer: int) -> int | None:
    """Arrival position (1-based) of the ``B``-th long occurrence, or ``None`` if fewer arrived.

    Startup corollary: no long occurrence starts before this arrival has
    entered the buffer, i.e. before the first ``n`` arrivals are buffered.
    ``lengths`` are in arrival order. O(N).

    >>> startup_bound([5, 1, 9, 2, 8, 7], capacity=4, min_buffer=3)
    5
    >>> startup_bound([5, 1], capacity=4, min_buffer=3) is None
    True
    """
    capacity = check_int("capacity", capacity, 1)
    min_buffer = check_int("min_buffer", min_buffer, 1)
    arr = validate_lengths(lengths, allow_empty=True)
    positions = np.flatnonzero(arr > capacity)
    if positions.size < min_buffer:
        return None
    return int(positions[min_buffer - 1]) + 1


def expected_startup_index(min_buffer: int, q: float) -> float:
    """Expected arrival position of the ``B``-th long occurrence: ``B / q``.

    With i.i.d. lengths, each long with probability ``q``, the position of the
    ``B``-th long arrival is negative-binomial with mean ``B / q``. This bounds
    source-arrival time, not an emitted-token delay. O(1).

    >>> expected_startup_index(1000, 0.0125)
    80000.0

    Raises:
        ValueError: ``q`` outside ``(0, 1]``.
    """
    min_buffer = check_int("min_buffer", min_buffer, 1)
    if isinstance(q, bool) or not isinstance(q, numbers.Real):
        raise InputTypeError(f"q must be a real number, got {type(q).__name__} {q!r}")
    if not 0 < q <= 1:
        raise InputError(f"q must be in (0, 1], got {q}")
    return min_buffer / float(q)


# --------------------------------------------------------------------------- mass


def mass_lower_bound(long_lengths: Iterable[int], min_buffer: int, *, capacity: int | None = None) -> int:
    """Sum of the ``min(B - 1, N_L)`` largest long lengths: a lower bound on buffered mass.

    Args:
        long_lengths: original lengths of the long occurrences arrived so far
            (any order). With ``capacity`` given, any lengths may be passed and
            those ``<= capacity`` are ignored.
        min_buffer: ``B``.
        capacity: ``R``, optional filter.

    Shuffling the arrivals cannot change this bound. O(N log B).

    >>> mass_lower_bound([9, 7, 8, 9], min_buffer=3)
    18
    >>> mass_lower_bound([9, 2, 3], min_buffer=3, capacity=4)
    9
    """
    min_buffer = check_int("min_buffer", min_buffer, 1)
    arr = validate_lengths(long_lengths, "long_lengths", allow_empty=True)
    if capacity is not None:
        capacity = check_int("capacity", capacity, 1)
        arr = arr[arr > capacity]
    k = min(min_buffer - 1, int(arr.size))
    if k <= 0:
        return 0
    return int(sum(heapq.nlargest(k, arr.tolist())))


# --------------------------------------------------------------------------- repeated corpus


def earliest_pass(sources_per_pass: int, min_buffer: int) -> int:
    """Earliest 1-based corpus pass in which a source of the class can start: ``ceil(B / r)``.

    With ``r`` sources of length ``>= l > R`` per pass, an occurrence of the
    class can leave ``K`` only once ``B - 1`` larger keys — all in the class —
    have arrived, i.e. after ``B`` class arrivals; pass ``E`` holds ``E * r``
    of them. O(1).

    >>> [earliest_pass(r, 1000) for r in (789, 196, 39, 9, 1)]
    [2, 6, 26, 112, 1000]

    Raises:
        ValueError: ``sources_per_pass < 1`` or ``min_buffer < 1``.
    """
    r = check_int("sources_per_pass", sources_per_pass, 1)
    b = check_int("min_buffer", min_buffer, 1)
    return -(-b // r)


class PassBound(NamedTuple):
    """One row of the repeated-corpus table.

    Attributes:
        threshold: the class is the sources of original length ``>= threshold``.
        sources_per_pass: ``r``, their number per pass.
        earliest_pass: ``ceil(B / r)`` (1-based), or ``None`` when ``r == 0``.
    """

    threshold: int
    sources_per_pass: int
    earliest_pass: int | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return self._asdict()


def default_thresholds(lengths: Iterable[int], capacity: int) -> list[int]:
    """Powers of two above ``capacity`` up to the maximum length, then the maximum itself.

    >>> default_thresholds([3000, 70000, 290219], capacity=2049)
    [4096, 8192, 16384, 32768, 65536, 131072, 262144, 290219]
    """
    capacity = check_int("capacity", capacity, 1)
    arr = validate_lengths(lengths, allow_empty=True)
    top = int(arr.max()) if arr.size else 0
    out: list[int] = []
    t = 1 << capacity.bit_length()
    while t <= top:
        out.append(t)
        t <<= 1
    if top > capacity and (not out or out[-1] != top):
        out.append(top)
    return out


def counts_from_lengths(lengths: Iterable[int], thresholds: Iterable[int]) -> dict[int, int]:
    """Number of lengths ``>= t`` for each threshold ``t``. O(N log N + T log N).

    >>> counts_from_lengths([5, 9, 9, 20], [6, 9, 21])
    {6: 3, 9: 3, 21: 0}
    """
    arr = np.sort(validate_lengths(lengths, allow_empty=True))
    ts = [check_int(f"thresholds[{i}]", t, 1) for i, t in enumerate(thresholds)]
    return {t: int(arr.size - np.searchsorted(arr, t, side="left")) for t in ts}


def repeated_corpus_table(
    *,
    counts: Mapping[int, int] | None = None,
    lengths: Iterable[int] | None = None,
    thresholds: Iterable[int] | None = None,
    min_buffer: int = 1000,
    capacity: int = PAPER_CAPACITY,
) -> list[PassBound]:
    """The repeated-corpus pass bounds, from per-threshold counts or from one pass's lengths.

    Args:
        counts: ``threshold -> sources per pass`` (exclusive with ``lengths``).
        lengths: the BOS-inclusive lengths of one corpus pass.
        thresholds: which thresholds to report; defaults to the keys of
            ``counts``, or :func:`default_thresholds` of ``lengths``.
        min_buffer: ``B``.
        capacity: ``R``; every threshold must exceed it (the corollary is
            about long sources).

    Rows come in increasing threshold order. O(N log N) from lengths, O(T log T) from counts.

    >>> repeated_corpus_table(lengths=[3000, 5000, 5000], thresholds=[4096], min_buffer=10)
    [PassBound(threshold=4096, sources_per_pass=2, earliest_pass=5)]

    Raises:
        ValueError: neither or both sources given, a threshold ``<= capacity``,
            a negative count, or a count that grows with the threshold.
    """
    min_buffer = check_int("min_buffer", min_buffer, 1)
    capacity = check_int("capacity", capacity, 1)
    if (counts is None) == (lengths is None):
        raise InputError("give exactly one of counts= or lengths=")
    if counts is not None:
        if not isinstance(counts, Mapping):
            raise InputTypeError(f"counts must be a mapping threshold -> count, got {type(counts).__name__}")
        table = {
            check_int("counts threshold", t, 1): check_int(f"counts[{t}]", r, 0) for t, r in counts.items()
        }
        ts = sorted(table) if thresholds is None else sorted(
            check_int(f"thresholds[{i}]", t, 1) for i, t in enumerate(thresholds))
        missing = [t for t in ts if t not in table]
        if missing:
            raise InputError(f"thresholds {missing} have no count in counts")
    else:
        assert lengths is not None
        arr = validate_lengths(lengths, allow_empty=True)
        ts = default_thresholds(arr, capacity) if thresholds is None else sorted(
            check_int(f"thresholds[{i}]", t, 1) for i, t in enumerate(thresholds))
        table = counts_from_lengths(arr, ts)
    low = [t for t in ts if t <= capacity]
    if low:
        raise InputError(f"thresholds must exceed capacity {capacity} (long sources only), got {low}")
    rows = [PassBound(t, table[t], earliest_pass(table[t], min_buffer) if table[t] else None) for t in ts]
    for a, b in itertools.pairwise(rows):
        if b.sources_per_pass > a.sources_per_pass:
            raise InputError(
                f"counts must not grow with the threshold: {a.threshold}={a.sources_per_pass} "
                f"< {b.threshold}={b.sources_per_pass}"
            )
    return rows


def format_pass_table(rows: Sequence[PassBound], *, style: Literal["markdown", "rst"] = "markdown") -> str:
    """Format the table as in seed 000 §5.2 (markdown) or as an RST simple table.

    >>> print(format_pass_table([PassBound(16384, 789, 2)], style="rst"))
    ========================  ================  ======================
    Original length at least  Sources per pass  Earliest possible pass
    ========================  ================  ======================
                      16,384               789                       2
    ========================  ================  ======================
    """
    head = ("Original length at least", "Sources per pass", "Earliest possible pass")
    cells = [(f"{r.threshold:,}", str(r.sources_per_pass),
              "-" if r.earliest_pass is None else str(r.earliest_pass)) for r in rows]
    if style == "markdown":
        lines = ["|" + "|".join(head) + "|", "|---|---:|---:|"]
        lines += ["|" + "|".join(c) + "|" for c in cells]
        return "\n".join(lines)
    if style == "rst":
        widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(head)]
        rule = "  ".join("=" * w for w in widths)
        out = [rule, "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip(), rule]
        out += ["  ".join(v.rjust(w) for v, w in zip(c, widths, strict=True)) for c in cells]
        out.append(rule)
        return "\n".join(out)
    raise InputError(f"style must be 'markdown' or 'rst', got {style!r}")


def parse_counts(text: str) -> dict[int, int]:
    """Parse ``"16384=789,32768=196"`` into ``{16384: 789, 32768: 196}``.

    >>> parse_counts("16384=789, 290219=1")
    {16384: 789, 290219: 1}

    Raises:
        ValueError: a malformed item, or a repeated threshold.
    """
    out: dict[int, int] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        t, sep, r = item.partition("=")
        try:
            if not sep:
                raise InputError
            threshold, count = int(t.replace("_", "")), int(r.replace("_", ""))
        except ValueError:
            raise InputError(f"counts item {item!r} is not THRESHOLD=COUNT") from None
        if threshold in out:
            raise InputError(f"counts repeats threshold {threshold}")
        out[threshold] = count
    if not out:
        raise InputError(f"counts {text!r} holds no THRESHOLD=COUNT item")
    return out


# --------------------------------------------------------------------------- histogram check


@dataclass(frozen=True)
class HistogramCheck:
    """Result of :func:`check_histogram`.

    Attributes:
        sources: the sources counted from the histogram.
        tokens: the tokens counted from the histogram.
        expected_sources: the stated sources (``None`` = not checked).
        expected_tokens: the stated tokens (``None`` = not checked).
        table: the repeated-corpus pass bounds.
        min_buffer: ``B``.
        capacity: ``R``.
    """

    sources: int
    tokens: int
    expected_sources: int | None
    expected_tokens: int | None
    table: tuple[PassBound, ...]
    min_buffer: int
    capacity: int

    @property
    def ok(self) -> bool:
        """Both stated totals (when given) match."""
        sources_ok = self.expected_sources in (None, self.sources)
        return sources_ok and self.expected_tokens in (None, self.tokens)

    def format(self) -> str:
        """Totals, their check, and the markdown pass-bound table."""
        def mark(got: int, want: int | None) -> str:
            return "" if want is None else (" (matches)" if got == want else f" (MISMATCH: stated {want:,})")
        lines = [f"sources: {self.sources:,}{mark(self.sources, self.expected_sources)}",
                 f"tokens:  {self.tokens:,}{mark(self.tokens, self.expected_tokens)}",
                 f"B = {self.min_buffer}, R = {self.capacity}", "", format_pass_table(self.table)]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``table`` as a list of row dicts, plus ``ok``)."""
        out = asdict(self)
        out["table"] = [r.to_dict() for r in self.table]
        out["ok"] = self.ok
        return out


def check_histogram(
    histogram: Mapping[int, int] | Iterable[tuple[int, int]],
    *,
    total_sources: int | None = None,
    total_tokens: int | None = None,
    thresholds: Iterable[int] | None = None,
    min_buffer: int = 1000,
    capacity: int = PAPER_CAPACITY,
) -> HistogramCheck:
    """Verify a length histogram's totals and compute its pass-bound table.

    Args:
        histogram: ``length -> number of sources`` (or ``(length, count)`` pairs).
        total_sources, total_tokens: stated totals to verify (e.g.
            :data:`PAPER_SOURCES`, :data:`PAPER_TOKENS`).
        thresholds: table thresholds (default: :func:`default_thresholds`).
        min_buffer, capacity: ``B`` and ``R``.

    O(H log H) for ``H`` distinct lengths.

    >>> chk = check_histogram({100: 3, 5000: 2}, total_sources=5, total_tokens=10300, min_buffer=4)
    >>> chk.ok, [tuple(r) for r in chk.table]
    (True, [(4096, 2, 2), (5000, 2, 2)])

    Raises:
        ValueError: a length < 1, a negative count, a repeated length.
        TypeError: non-integer entries.
    """
    pairs = list(histogram.items()) if isinstance(histogram, Mapping) else list(histogram)
    hist: dict[int, int] = {}
    for i, pair in enumerate(pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InputTypeError(f"histogram[{i}] must be a (length, count) pair, got {pair!r}")
        length = check_int(f"histogram length at {i}", pair[0], 1)
        count = check_int(f"histogram[{length}]", pair[1], 0)
        if length in hist:
            raise InputError(f"histogram repeats length {length}")
        hist[length] = count
    if total_sources is not None:
        total_sources = check_int("total_sources", total_sources, 0)
    if total_tokens is not None:
        total_tokens = check_int("total_tokens", total_tokens, 0)
    min_buffer = check_int("min_buffer", min_buffer, 1)
    capacity = check_int("capacity", capacity, 1)
    present = sorted(n for n, c in hist.items() if c)
    ts = default_thresholds(present, capacity) if thresholds is None else sorted(
        check_int(f"thresholds[{i}]", t, 1) for i, t in enumerate(thresholds))
    counts = {t: sum(c for n, c in hist.items() if n >= t) for t in ts}
    table = repeated_corpus_table(counts=counts, min_buffer=min_buffer, capacity=capacity) if ts else []
    return HistogramCheck(
        sources=sum(hist.values()),
        tokens=sum(n * c for n, c in hist.items()),
        expected_sources=total_sources,
        expected_tokens=total_tokens,
        table=tuple(table),
        min_buffer=min_buffer,
        capacity=capacity,
    )
