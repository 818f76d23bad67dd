"""Evaluation windows cut from tokenised sources (seed 000 §4, §5.5, §5.7, §5.8).

Job: turn one BOS-inclusive source (token ids, ``doc[0]`` is its BOS) into
the windows a model scores, and pad a batch of windows for a model call.
Imports: numpy only (no engine, corpus or audit module is needed here).

Coordinates
-----------
A window holds ``n`` tokens ``tokens[0 .. n-1]``. As in a packed row, position
0 is input only and *target* ``j`` (``0 <= j < n - 1``) is ``tokens[j + 1]``,
predicted from ``tokens[: j + 1]``. Only targets ``j >= first_target`` are
scored; the ones before are context. Scored targets are contiguous in the
source: target ``j`` is source position ``source_offset + j``.

=================  =====================================================  =======================
kind               tokens                                                 scored targets
=================  =====================================================  =======================
``beginning``      ``doc[: min(L, R)]``                                   all ``min(L, R) - 1``
``tail``           ``[BOS] + doc[L - (R - 1):]`` (``L > R`` only)         all ``R - 1``
``natural-tail``   ``doc[max(0, L - 1 - C): L]`` (``L > N`` only)         the last ``K``
``prefix-region``  ``doc[: C + 1]`` (``L > N`` only)                      the last ``K``
``census``         sliding, document-local, stride ``S``, context ``C``   each target once
=================  =====================================================  =======================

``R`` is the row capacity (2049 in seed 000, so a window has 2048 targets),
``C`` the input context (2048, or 1,024 for §5.7's shorter condition), ``K``
the natural-tail target count (512, seed 000 §5.7) and ``N`` the length above
which natural tails are cut (:attr:`WindowSpec.natural_above`, default
``2 (R - 1)`` = 4,096 at ``R = 2049``: §5.7 takes them only from the three
strata above 4,096 tokens, whose tail window does not overlap their
beginning window). The tail window's BOS is *synthetic*: the model sees an
artificial reset before the source's final ``R - 1`` text tokens. The
natural tail has no synthetic BOS: its first scored target has ``C - K + 1``
preceding real tokens (1,537 for ``C = 2048, K = 512``) and its last has ``C``.

The **prefix-region control** (§5.7: "prefix-region controls score a
corresponding fixed 512-target region") scores, from the same sources, the
``K`` targets at source positions ``C - K + 1 .. C`` after the source's own
beginning: the same ``K`` targets with the same ``C - K + 1 .. C`` preceding
tokens as the natural tail, at a fixed place near the start of the source
instead of at its end. The paper does not print the positions; this is our
reading of "corresponding", and the tail-minus-prefix interaction of the
natural-context assay subtracts this region's delta, never the full
beginning window's (whose signs §5.7 says must not be copied).

Census windows (:func:`census_windows`): window 0 holds ``doc[: min(L, C + 1)]``
and scores all its targets; window ``k >= 1`` scores source positions
``[C + 1 + (k - 1) S, min(C + 1 + k S, L))`` with the ``C + 1`` tokens that
end at the last one, so every scored target sees at least ``C + 1 - S``
preceding tokens of its own source (1,537 at ``C = 2048, S = 512``) and every
target ``1 .. L - 1`` of the source is scored exactly once
(:func:`check_census`).

>>> doc = np.arange(10)                       # BOS 0, text tokens 1..9
>>> w = beginning_window(doc, capacity=4)
>>> w.tokens.tolist(), w.scored_positions
([0, 1, 2, 3], range(1, 4))
>>> tail_window(doc, capacity=4).tokens.tolist()
[0, 7, 8, 9]
>>> for c in census_windows(doc, context=4, stride=2):
...     print(c.tokens.tolist(), c.scored_positions)
[0, 1, 2, 3, 4] range(1, 5)
[2, 3, 4, 5, 6] range(5, 7)
[4, 5, 6, 7, 8] range(7, 9)
[5, 6, 7, 8, 9] range(9, 10)
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError

__all__ = [
    "KINDS",
    "NATURAL_KINDS",
    "TAIL_KINDS",
    "Int64Array",
    "Window",
    "WindowKind",
    "WindowSpec",
    "as_document",
    "beginning_window",
    "census_windows",
    "check_census",
    "natural_tail_window",
    "pad_batch",
    "prefix_region_window",
    "scored_range",
    "source_windows",
    "tail_window",
]

Int64Array = npt.NDArray[np.int64]

WindowKind = Literal["beginning", "tail", "natural-tail", "census", "prefix-region"]
"""The five window kinds."""

KINDS: tuple[str, ...] = ("beginning", "tail", "natural-tail", "census", "prefix-region")
"""Every window kind (the fingerprint frames a window with its index in this tuple)."""

TAIL_KINDS: tuple[str, ...] = ("tail", "natural-tail")
"""Kinds cut only from over-context sources (``L > R``)."""

NATURAL_KINDS: tuple[str, ...] = ("natural-tail", "prefix-region")
"""The natural-context assay's kinds, cut only from sources longer than :attr:`WindowSpec.natural_above`."""


def as_document(doc: npt.ArrayLike, name: str = "document") -> Int64Array:
    """``doc`` as a read-only 1-D ``int64`` array of token ids ``>= 0`` with at least one token.

    >>> as_document([0, 5, 6]).tolist()
    [0, 5, 6]
    >>> as_document([0, -1])
    Traceback (most recent call last):
    packing_theory.InputError: document[1] must be a token id >= 0, got -1
    """
    arr = np.asarray(doc)
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{name} is empty: a source holds at least its BOS token")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and (arr > np.iinfo(np.int64).max).any():
        raise InputError(f"{name} holds a token id that does not fit int64")
    out = arr.astype(np.int64, copy=True)
    bad = out < 0
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{name}[{i}] must be a token id >= 0, got {out[i]}")
    out.flags.writeable = False
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Window:
    """One scored window (see the module doc for coordinates).

    Attributes:
        source: the source's index in its population.
        kind: one of :data:`KINDS`.
        tokens: ``n >= 2`` token ids (read-only ``int64``).
        first_target: index of the first scored target (``0 <= first_target < n - 1``).
        source_offset: source position of target 0 (``tokens[1]``).
        synthetic_bos: ``tokens[0]`` is a BOS that does not precede ``tokens[1]`` in the source.
    """

    source: int
    kind: str
    tokens: Int64Array
    first_target: int
    source_offset: int
    synthetic_bos: bool = False

    @property
    def n_tokens(self) -> int:
        """Tokens in the window (inputs and targets)."""
        return int(self.tokens.size)

    @property
    def n_targets(self) -> int:
        """Scored targets."""
        return int(self.tokens.size) - 1 - self.first_target

    @property
    def scored_positions(self) -> range:
        """Source positions of the scored targets."""
        start = self.source_offset + self.first_target
        return range(start, start + self.n_targets)

    def targets(self) -> Int64Array:
        """Token ids of the scored targets."""
        out: Int64Array = self.tokens[1 + self.first_target :]
        return out

    def _check(self) -> None:
        """Assert the window's internal invariants."""
        assert self.kind in KINDS, self.kind
        assert self.tokens.ndim == 1 and self.tokens.dtype == np.int64 and self.tokens.size >= 2
        assert 0 <= self.first_target < self.tokens.size - 1
        assert self.source_offset >= 1 and self.source >= 0
        assert not self.tokens.flags.writeable
        assert self.synthetic_bos == (self.kind == "tail")


def _window(source: int, kind: str, tokens: Int64Array, first_target: int, offset: int,
            synthetic: bool = False) -> Window:
    t = np.ascontiguousarray(tokens, dtype=np.int64)
    if t.flags.writeable:
        t = t.copy()
        t.flags.writeable = False
    return Window(int(source), kind, t, int(first_target), int(offset), synthetic)


def beginning_window(doc: npt.ArrayLike, capacity: int = 2049, *, source: int = 0) -> Window:
    """The source's first ``min(L, R)`` tokens; every target scored.

    Raises:
        ValueError: a source of one token (no target), or ``capacity < 2``.
    """
    R = check_int("capacity", capacity, 2)
    d = as_document(doc)
    if d.size < 2:
        raise InputError("a beginning window needs a source of at least 2 tokens (BOS and one target)")
    return _window(source, "beginning", d[:R], 0, 1)


def tail_window(doc: npt.ArrayLike, capacity: int = 2049, *, source: int = 0,
                bos: int | None = None) -> Window:
    """A synthetic BOS followed by the source's final ``R - 1`` text tokens (``L > R`` only).

    ``bos`` defaults to the source's own BOS id ``doc[0]``.

    Raises:
        ValueError: ``L <= R`` (the beginning window already holds the whole source).
    """
    R = check_int("capacity", capacity, 2)
    d = as_document(doc)
    L = int(d.size)
    if L <= R:
        raise InputError(f"a tail window needs an over-context source (L > capacity={R}), got L={L}")
    b = int(d[0]) if bos is None else check_int("bos", bos, 0)
    tokens = np.concatenate([np.asarray([b], dtype=np.int64), d[L - (R - 1) :]])
    return _window(source, "tail", tokens, 0, L - (R - 1), synthetic=True)


def natural_tail_window(doc: npt.ArrayLike, targets: int = 512, context: int = 2048, *,
                        source: int = 0) -> Window:
    """The last ``targets`` targets with up to ``context`` preceding real tokens, no synthetic BOS.

    The window is ``doc[max(0, L - 1 - context): L]``; its last ``targets``
    targets are scored.

    Raises:
        ValueError: ``targets > context``, or the source has fewer than ``targets`` targets.
    """
    K = check_int("targets", targets, 1)
    C = check_int("context", context, 1)
    if K > C:
        raise InputError(f"targets must be <= context, got targets={K}, context={C}")
    d = as_document(doc)
    L = int(d.size)
    if L - 1 < K:
        raise InputError(f"a natural tail of {K} targets needs a source of at least {K + 1} tokens, "
                         f"got L={L}")
    start = max(0, L - 1 - C)
    n = L - start
    return _window(source, "natural-tail", d[start:], n - 1 - K, start + 1)


def prefix_region_window(doc: npt.ArrayLike, targets: int = 512, context: int = 2048, *,
                         source: int = 0) -> Window:
    """The prefix-region control: ``doc[: C + 1]`` scoring its last ``K`` targets (positions ``C-K+1 .. C``).

    Each scored target has the same number of preceding real tokens as the
    matching target of :func:`natural_tail_window` (``C - K + 1`` for the
    first, ``C`` for the last), so the two windows differ only in *where* in
    the source the region lies.

    >>> w = prefix_region_window(np.arange(20), targets=3, context=8)
    >>> w.tokens.tolist(), w.scored_positions
    ([0, 1, 2, 3, 4, 5, 6, 7, 8], range(6, 9))

    Raises:
        ValueError: ``targets > context``, or a source shorter than ``C + 1`` tokens.
    """
    K = check_int("targets", targets, 1)
    C = check_int("context", context, 1)
    if K > C:
        raise InputError(f"targets must be <= context, got targets={K}, context={C}")
    d = as_document(doc)
    if d.size < C + 1:
        raise InputError(f"a prefix region of context {C} needs a source of at least {C + 1} tokens, "
                         f"got L={int(d.size)}")
    return _window(source, "prefix-region", d[: C + 1], C - K, 1)


def census_windows(doc: npt.ArrayLike, context: int = 2048, stride: int = 512, *,
                   source: int = 0) -> list[Window]:
    """Document-local sliding windows that score every target ``1 .. L - 1`` exactly once.

    A one-token source has no target and yields no window. Complexity:
    O(L / stride) windows of at most ``context + 1`` tokens (views of one copy).

    Raises:
        ValueError: ``stride > context`` or a value below 1.
    """
    C = check_int("context", context, 1)
    S = check_int("stride", stride, 1)
    if S > C:
        raise InputError(f"stride must be <= context, got stride={S}, context={C}")
    d = as_document(doc)
    L = int(d.size)
    if L < 2:
        return []
    out = [_window(source, "census", d[: C + 1], 0, 1)]
    a = C + 1
    while a < L:
        b = min(a + S, L)
        lo = b - C - 1
        out.append(_window(source, "census", d[lo:b], a - lo - 1, lo + 1))
        a = b
    return out


def check_census(windows: Iterable[Window], lengths: npt.ArrayLike) -> None:
    """Check that ``windows`` score every target of every source exactly once.

    ``lengths[s]`` is the BOS-inclusive length of source ``s``. O(windows log windows).

    Raises:
        ValueError: naming the first source with a target scored twice or never.

    >>> check_census(census_windows(np.arange(7), context=3, stride=2), [7])
    >>> check_census(census_windows(np.arange(7), context=3, stride=2)[:-1], [7])
    Traceback (most recent call last):
    packing_theory.InputError: census: source 0 has targets 6..6 never scored
    """
    L = np.asarray(lengths, dtype=np.int64)
    spans: dict[int, list[tuple[int, int]]] = {}
    for w in windows:
        r = w.scored_positions
        if not 0 <= w.source < L.size:
            raise InputError(f"census: window of source {w.source} outside the {L.size} sources")
        spans.setdefault(w.source, []).append((r.start, r.stop))
    for s in range(L.size):
        nxt = 1
        for a, b in sorted(spans.get(s, [])):
            if a < nxt:
                raise InputError(f"census: source {s} has targets {a}..{min(b, nxt) - 1} scored twice")
            if a > nxt:
                raise InputError(f"census: source {s} has targets {nxt}..{a - 1} never scored")
            nxt = b
        if nxt < L[s]:
            raise InputError(f"census: source {s} has targets {nxt}..{int(L[s]) - 1} never scored")
        if nxt > L[s]:
            raise InputError(f"census: source {s} has targets past its length {int(L[s])}")


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """Which windows to cut from each source, and their sizes.

    Attributes:
        kinds: window kinds (a subset of :data:`KINDS`, in this order in the result).
        capacity: ``R`` of beginning and tail windows (2049).
        natural_targets: ``K`` of natural tails and prefix regions (512).
        context: ``C`` of natural tails, prefix regions and census windows (2048).
        stride: ``S`` of census windows (512).
        natural_above: natural tails and prefix regions come from sources
            longer than this (``None``: ``2 (R - 1)``, 4,096 at ``R = 2049``,
            seed 000 §5.7's three strata above 4,096); see :meth:`natural_threshold`.

    >>> WindowSpec(kinds=("beginning", "tail")).describe()
    'beginning, tail windows; R=2049'
    >>> WindowSpec(kinds=("natural-tail", "prefix-region"), context=1024).describe()
    'natural-tail, prefix-region windows; R=2049, K=512, C=1024, L>4096'
    """

    kinds: tuple[str, ...] = ("beginning", "tail")
    capacity: int = 2049
    natural_targets: int = 512
    context: int = 2048
    stride: int = 512
    natural_above: int | None = None

    def __post_init__(self) -> None:
        kinds = tuple(self.kinds)
        if isinstance(self.kinds, str) or not kinds:
            raise InputError(f"kinds must be a non-empty sequence of {', '.join(KINDS)}; got {self.kinds!r}")
        for k in kinds:
            if k not in KINDS:
                raise InputError(f"kinds must name window kinds among {', '.join(KINDS)}; got {k!r}")
        if len(set(kinds)) != len(kinds):
            raise InputError(f"kinds must not repeat, got {kinds}")
        object.__setattr__(self, "kinds", kinds)
        check_int("capacity", self.capacity, 2)
        check_int("natural_targets", self.natural_targets, 1)
        check_int("context", self.context, 1)
        check_int("stride", self.stride, 1)
        if self.natural_above is not None:
            check_int("natural_above", self.natural_above, 1)
        if set(NATURAL_KINDS) & set(kinds) and self.natural_targets > self.context:
            raise InputError(f"natural_targets must be <= context, "
                             f"got {self.natural_targets} > {self.context}")
        if "prefix-region" in kinds and self.natural_threshold() < self.context:
            raise InputError(f"natural_above must be >= context for prefix-region windows (a source must "
                             f"hold the C + 1 tokens of its prefix region), got natural_above="
                             f"{self.natural_threshold()} < context={self.context}")
        if "census" in kinds and self.stride > self.context:
            raise InputError(f"stride must be <= context, got {self.stride} > {self.context}")

    def natural_threshold(self) -> int:
        """Natural tails and prefix regions come from sources with ``L > max(R, this)``.

        >>> WindowSpec().natural_threshold(), WindowSpec(capacity=129).natural_threshold()
        (4096, 256)
        """
        return 2 * (self.capacity - 1) if self.natural_above is None else int(self.natural_above)

    def describe(self) -> str:
        """One line naming the kinds and the sizes that matter for them."""
        natural = bool(set(NATURAL_KINDS) & set(self.kinds))
        parts = [f"R={self.capacity}"] if {"beginning", "tail"} & set(self.kinds) or natural else []
        if natural:
            parts.append(f"K={self.natural_targets}")
        if natural or "census" in self.kinds:
            parts.append(f"C={self.context}")
        if "census" in self.kinds:
            parts.append(f"S={self.stride}")
        if natural:
            parts.append(f"L>{max(self.capacity, self.natural_threshold())}")
        return f"{', '.join(self.kinds)} windows; {', '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"kinds": list(self.kinds), "capacity": self.capacity, "natural_targets": self.natural_targets,
                "context": self.context, "stride": self.stride, "natural_above": self.natural_threshold()}


def scored_range(length: int, kind: str, spec: WindowSpec) -> range | None:
    """Source positions a window of ``kind`` scores for a source of ``length`` tokens (``None``: no window).

    Written from the definitions, independently of the window builders, so
    that accounting can compare the two. Census returns all targets ``1 .. L - 1``.

    >>> spec = WindowSpec(kinds=KINDS, capacity=5, natural_targets=2, context=3, stride=1)
    >>> [scored_range(9, k, spec) for k in KINDS]
    [range(1, 5), range(5, 9), range(7, 9), range(1, 9), range(2, 4)]
    >>> scored_range(5, "tail", spec) is None, scored_range(8, "natural-tail", spec) is None
    (True, True)
    """
    R = spec.capacity
    if length < 2:
        return None
    if kind == "beginning":
        return range(1, min(length, R))
    if kind == "census":
        return range(1, length)
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if length <= R:
        return None
    if kind == "tail":
        return range(length - (R - 1), length)
    if length <= spec.natural_threshold():
        return None
    if kind == "natural-tail":
        return range(length - spec.natural_targets, length)
    return range(spec.context - spec.natural_targets + 1, spec.context + 1)


def source_windows(doc: npt.ArrayLike, spec: WindowSpec, *, source: int = 0) -> list[Window]:
    """Every window ``spec`` asks for from one source, kinds in ``spec.kinds`` order.

    Tail kinds apply to over-context sources (``L > R``) only, natural kinds
    to sources with ``L > max(R, spec.natural_threshold())``; a source of one
    token yields no window.
    """
    d = as_document(doc)
    L = int(d.size)
    out: list[Window] = []
    if L < 2:
        return out
    for kind in spec.kinds:
        if kind == "beginning":
            out.append(beginning_window(d, spec.capacity, source=source))
        elif kind == "census":
            out.extend(census_windows(d, spec.context, spec.stride, source=source))
        elif kind == "tail":
            if spec.capacity < L:
                out.append(tail_window(d, spec.capacity, source=source))
        elif max(spec.capacity, spec.natural_threshold()) < L:
            make = natural_tail_window if kind == "natural-tail" else prefix_region_window
            out.append(make(d, spec.natural_targets, spec.context, source=source))
    return out


def pad_batch(windows: Sequence[Window], *, pad_id: int = 0,
              width: int | None = None) -> tuple[Int64Array, npt.NDArray[np.int32]]:
    """Right-pad windows into ``input_ids`` (``int64``, ``(b, W)``) and ``segment_ids`` (``int32``).

    ``segment_ids`` is 1 on each window's tokens and 0 on padding (seed 004's
    segment identifiers, one document per row). ``W`` is ``width`` or the
    longest window.

    >>> ids, seg = pad_batch([beginning_window([0, 5, 6]), beginning_window([0, 7])], pad_id=9)
    >>> ids.tolist(), seg.tolist()
    ([[0, 5, 6], [0, 7, 9]], [[1, 1, 1], [1, 1, 0]])
    """
    if not windows:
        raise InputError("pad_batch needs at least one window")
    if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral) or pad_id < 0:
        raise InputError(f"pad_id must be a token id >= 0, got {pad_id!r}")
    longest = max(w.n_tokens for w in windows)
    W = longest if width is None else check_int("width", width, 2)
    if longest > W:
        raise InputError(f"width={W} is shorter than the longest window ({longest} tokens)")
    ids = np.full((len(windows), W), int(pad_id), dtype=np.int64)
    seg = np.zeros((len(windows), W), dtype=np.int32)
    for i, w in enumerate(windows):
        ids[i, : w.n_tokens] = w.tokens
        seg[i, : w.n_tokens] = 1
    return ids, seg
