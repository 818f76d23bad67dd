"""Composable policies of the streaming packer family and the replay configuration.

The family (``../shared/design.md`` §2, seed 000 §3–§4) is one selection rule
— the largest buffered span that fits the remaining row, ties to the earliest
in buffer order; otherwise the shortest span, ties to the earliest, cropped to
fill the row — combined with:

===================  ==========================================================
policy               what happens
===================  ==========================================================
``discard``          a crop's suffix is dropped (autoresearch 228791f,
                     nanochat master)
``continue``         the suffix stays at the same buffer position as one active
                     span without a BOS (autoresearch PR #372)
``requeue-bos``      ``[BOS] + suffix`` is appended at the end of the buffer
                     when the suffix has more than one token, else dropped
                     (nanochat PR #544)
``segment-first``    arrival transform: a document longer than ``R`` is split
                     into BOS-prefixed chunks of at most ``R - 1`` text tokens
                     before buffering; then ``discard`` (seed 000 §4)
``random-span``      like ``discard``, but a crop emits BOS plus a uniformly
                     chosen contiguous text span of the same length, drawn from
                     an independent RNG (seed 000 §4)
``bounded-wait``     ``continue``, plus a forced start: at a row start, when the
                     oldest unstarted buffered span has waited more than
                     ``max_wait`` rows, it is placed first (cropped with
                     continuation if longer than ``R``); every occurrence starts
                     within :func:`start_delay_bound` rows of its arrival
                     (``proofs/coq/BoundedWait.v``)
``bestfit-pad``      when nothing fits, the rest of the row is padding instead
                     of a crop (nanochat's SFT loader); a span longer than
                     ``R`` never leaves the buffer (:mod:`~packing_theory.invariant.starvation`)
===================  ==========================================================

Each policy is declared once, in :data:`STREAMING_POLICIES`: its crop rule, its
arrival transform, whether it forces starts, its family status and the one
sentence that explains it, and its options (:class:`~packing_theory.engine.knobs.Knob`);
whether the compiled kernel implements it is read from the kernel's own table
(:mod:`~packing_theory.engine.kernel_codes`). The engines read the declaration,
never the name; :mod:`packing_theory.registry` merges it with the peers'.

The functions here are shared by the fast engine (:mod:`packing_theory.engine.packer`)
and the reference engine (:mod:`packing_theory.engine.reference`): the refill model,
the arrival transform, the crop outcome, and for ``bounded-wait`` the meaning
of "waited" (:func:`overdue`) and the proved bound (:func:`start_delay_bound`).
The selection rule itself is *not* shared: each engine implements it (and the
forced start) independently so that the differential tests compare two
implementations.

The ``bounded-wait`` rule, exactly
----------------------------------
* The *arrival row* of an occurrence is the index of the row being filled when
  the refill that brought it ran (refills run before a selection, so this is
  also the row of the next placement). Its *wait* at row ``r`` is
  ``r - arrival_row``: the number of row boundaries crossed since it arrived.
* The check runs once per row, at the row start (``offset == 0``), after the
  refill and before any other selection of that row. It looks at one span:
  the *oldest unstarted* buffered span (the earliest in buffer order whose
  first token has not been emitted; buffer order is arrival order). If its
  wait exceeds ``A = max_wait`` (:func:`overdue`), that span is placed first in
  the row: whole when it fits (``L <= R``), otherwise its first ``R`` tokens
  fill the row and the suffix stays in place as under ``continue``.
* Several overdue spans: one forced start per row, oldest first (the oldest
  unstarted is overdue whenever any unstarted span is, since arrival rows grow
  with arrival order). The rest of the row is filled by the ordinary rule.
* Refill is unchanged (while fewer than ``B`` spans are buffered, append the
  next batch); spans that arrive in a row's refill have waited 0 rows there.

Why this rule: the proof (``proofs/coq/BoundedWait.v``) counts, for an
unstarted occurrence ``i`` with arrival row ``a``, the unstarted spans at or
before it in buffer order (at most ``B - 1 + b`` when it arrives, ``b`` the
largest refill batch, because a batch is only appended below ``B`` spans; at
most ``B + b - 2`` once a row boundary has passed) plus the forced row starts
since row ``a + A``. Each forced row start serves one of those spans, so the
sum never grows and ``i`` starts by row ``a + A + B + b - 2``. Checking only at
row starts keeps the rule a "first in the row" rule (no row holds two forced
spans, best fit fills the rest); checking only the oldest keeps it O(1).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeVar, Union

import numpy as np

from .._checks import check_int, is_int
from ..errors import InputError, InputTypeError
from .events import BosAdded, Discard, Event, Placement
from .kernel_codes import POLICY_CODES
from .knobs import Knob, RowWidth

__all__ = [
    "COMMON_KNOBS", "CONTINUING_POLICIES", "DEFAULT_MAX_WAIT", "EXHAUSTED_MODES", "MAX_SEGMENTS", "POLICIES",
    "RANDOM_SPAN_SEED", "STREAMING_POLICIES", "STREAMING_ROW_WIDTH", "STREAMING_TRAINER_VIEW", "CropOutcome",
    "CropRule", "ExhaustedMode", "PackerConfig", "Policy", "StreamingPolicy", "apply_crop", "crop_outcome",
    "overdue", "resolve_config", "segment", "start_delay_bound",
]

Policy = Literal["discard", "continue", "requeue-bos", "segment-first", "random-span", "bounded-wait",
                 "bestfit-pad"]

DEFAULT_MAX_WAIT = 16
"""Default wait threshold ``A`` (rows) of ``bounded-wait``.

Chosen by ``benchmarks/bench_bounded_wait.py`` (``benchmarks/results/bounded_wait.md``):
among the thresholds whose proved bound ``A + B + b - 2`` is at most 1% of
autoresearch's budget at R = 2049, B = 1000, refill 128, the one with the
smallest share of targets without their document's preceding context on the
default corpus; the bound is then 1,142 rows."""

ExhaustedMode = Literal["stop", "drain"]
EXHAUSTED_MODES: tuple[ExhaustedMode, ...] = ("stop", "drain")

RANDOM_SPAN_SEED = 314159265
"""Default seed of the ``random-span`` RNG (the seed named in seed 000 §4)."""

LengthsInput = Union[Sequence[int], "np.ndarray[tuple[int], np.dtype[np.integer]]", Iterable[int]]

# --------------------------------------------------------------------------- the declarations

CropRule = Literal["discard", "continue", "requeue-bos", "random-span"]
"""What a crop does with the cropped span's leftover (:func:`crop_outcome`)."""


@dataclass(frozen=True, slots=True)
class StreamingPolicy:
    """A streaming policy's declaration: its rules for both engines and what the registry says about it.

    Attributes:
        name: the policy name (``--policy``).
        crop: the crop rule (:data:`CropRule`).
        in_family: whether seed 000 §3's proposition applies.
        family: the one sentence explaining the family status (``policies``,
            ``compare``, the monitor's not-applicable reason, the reports).
        reference: where the policy comes from.
        knobs: options beyond :data:`COMMON_KNOBS` (``seed``, ``max_wait``).
        segments: the arrival transform :func:`segment` splits long documents first.
        forced_start: ``bounded-wait``'s forced start of the oldest overdue span.
        protected_set: the protected-set monitor checks the policy (``False``: not
            applicable by design; the policy has its own theorem).
        pads: when nothing fits, the rest of the row is padding and no span is
            cropped (``crop`` is then never applied).
    """

    name: Policy
    crop: CropRule
    in_family: bool
    family: str
    reference: str
    knobs: tuple[Knob, ...] = ()
    segments: bool = False
    forced_start: bool = False
    protected_set: bool = True
    pads: bool = False

    @property
    def compiled(self) -> bool:
        """Whether the compiled kernel implements it: its name has a code in
        :data:`~packing_theory.engine.kernel_codes.POLICY_CODES` (derived, never declared, so a new policy
        is refused by the compiled engine until the kernel has its branch)."""
        return self.name in POLICY_CODES

    @property
    def random(self) -> bool:
        """Whether crops draw from the policy's independent RNG (``random-span``)."""
        return self.crop == "random-span"

    @property
    def keeps_remainder(self) -> bool:
        """Whether a crop's leftover stays buffered (in place, or requeued at the end)."""
        return self.crop in ("continue", "requeue-bos")

    @property
    def requeues(self) -> bool:
        """A crop's leftover goes to the end of the buffer (buffer order is then not arrival order)."""
        return self.crop == "requeue-bos"

    @property
    def keeps_every_token(self) -> bool:
        """No token is ever dropped and rows are full: arrived mass = placed mass + buffered mass."""
        return self.crop == "continue"

    def buffers(self, start: int, length: int, bos: bool, size: int, capacity: int) -> bool:
        """Whether the buffer can hold span ``(start, length, bos)`` of a document of ``size`` tokens: a
        whole one, the suffix a crop kept (``[BOS] +`` it if requeued), or a :func:`segment` chunk."""
        end = start + length - bos
        if self.segments:
            return (start, length, bos) in segment(size, capacity)
        if self.crop == "continue":
            return end == size and not bos
        if self.crop == "requeue-bos":
            return end == size and bos == (start > 0)
        return start == 0 and end == size and not bos


COMMON_KNOBS: tuple[Knob, ...] = (
    Knob("min_buffer", "int", 1000, "minimum occupancy B: before every selection the buffer is refilled "
         "while it holds fewer than B spans"),
    Knob("refill", "ints", 128, "refill batch size, or sizes used in order from the start of every pass"),
    Knob("passes", "int", 1, "corpus passes; the buffer persists across passes"),
    Knob("rows", "int", None, "stop after this many complete rows (None: until the stream ends)",
         optional=True),
    Knob("targets", "int", None, "stop after the row holding target targets - 1 (exclusive with rows)",
         optional=True),
    Knob("exhausted", "str", "stop", "when the stream cannot refill to B: stop, or drain the buffer "
         "(outside the proposition)", choices=("stop", "drain")),
)
"""The options every streaming policy takes (:class:`PackerConfig` fields)."""

STREAMING_ROW_WIDTH = RowWidth("R = seq_length + 1: a row holds T + 1 tokens, the T inputs and the shifted "
                               "targets (autoresearch T = 2048, R = 2049)", offset=1)
"""How the streaming family's row width follows from the trainer's sequence length ``T``."""

STREAMING_TRAINER_VIEW = (
    "rows of R tokens starting with a BOS; autoresearch/nanochat train with plain causal attention "
    "across documents: no document mask, position ids 0..R-2 per row, no cu_seqlens; no padding")
"""What a trainer gets from the streaming family's rows."""

_THEOREM = ("seed 000 §3 — at every selection the min(B-1, N_L) largest long occurrences are buffered, "
            "unchanged and unstarted")

STREAMING_POLICIES: dict[str, StreamingPolicy] = {p.name: p for p in (
    StreamingPolicy("discard", "discard", True, _THEOREM, "autoresearch 228791f, nanochat master"),
    StreamingPolicy("continue", "continue", True, _THEOREM, "autoresearch PR #372"),
    StreamingPolicy(
        "requeue-bos", "requeue-bos", False,
        "a crop's remainder moves to the end of the buffer with an added BOS, so a long occurrence can start "
        "while it is protected (outside the proposition's hypotheses)", "nanochat PR #544"),
    StreamingPolicy(
        "segment-first", "discard", False,
        "a document longer than R is split into BOS-prefixed chunks before buffering: the original "
        "occurrences are outside the proposition's hypotheses, and on the segmented spans it holds "
        "vacuously (none is long)", "seed 000 §4", segments=True),
    StreamingPolicy(
        "random-span", "random-span", False,
        "a crop emits a random span instead of the prefix, but every start decision equals discard's "
        "(seed 000 §4), so the protected set never starts either", "seed 000 §4",
        knobs=(Knob("seed", "int", RANDOM_SPAN_SEED, "seed of the independent random-span RNG"),)),
    StreamingPolicy(
        "bounded-wait", "continue", False,
        "bounded-wait forces the oldest overdue unstarted span to start at a row start (age-based "
        "service), outside the hypotheses of seed 000 §3 by design; its own theorem (start delay "
        "<= A + B + b - 2 rows, full rows, no discard) is checked by "
        "packing_theory.invariant.wait_bound.StartDelayMonitor instead", "proofs/coq/BoundedWait.v",
        knobs=(Knob("max_wait", "int", DEFAULT_MAX_WAIT, "A: force the oldest unstarted span at a row start "
                    "once it has waited more than A rows"),),
        forced_start=True, protected_set=False),
    StreamingPolicy(
        "bestfit-pad", "discard", False,
        "when nothing fits the row is padded instead of cropped, so a document longer than R never starts "
        "(every long occurrence, not only the B - 1 largest, stays buffered); once the buffer holds only "
        "such documents every row is padding", "nanochat scripts/chat_sft.py sft_data_generator_bos_bestfit "
        "at 92d63d4 (the buffer clog of nanochat PR #811)", pads=True),
)}
"""Every streaming policy's declaration, by name; the registry (:mod:`packing_theory.registry`) reads it."""

POLICIES: tuple[Policy, ...] = tuple(p.name for p in STREAMING_POLICIES.values())
"""The streaming policy names, in declaration order."""

CONTINUING_POLICIES: tuple[Policy, ...] = tuple(p.name for p in STREAMING_POLICIES.values()
                                                if p.crop == "continue")
"""Policies whose crop keeps the suffix in place as one active span (no BOS)."""


@dataclass(frozen=True, slots=True)
class PackerConfig:
    """Everything that determines a replay, validated on construction.

    Args:
        capacity: row capacity ``R`` (tokens per row, BOS-inclusive; ``R >= 2``).
            autoresearch uses ``T + 1 = 2049``.
        min_buffer: minimum occupancy ``B >= 1``: before every selection the
            buffer is refilled while it holds fewer than ``B`` spans.
        refill: refill batch size, or a sequence of batch sizes used in order
            from the start of every corpus pass and cycled within a pass. A batch
            never crosses a pass boundary (the loaders restart their document
            batches at every epoch), so the last batch of a pass may be shorter.
        policy: one of :data:`POLICIES`.
        seed: seed of the independent ``random-span`` RNG (ignored otherwise).
        passes: number of corpus passes; the buffer persists across passes.
        rows: stop after this many complete rows.
        targets: stop after the row holding target ``targets - 1``
            (``ceil(targets / (R - 1))`` rows); exclusive with ``rows``.
        exhausted: what to do when the stream cannot refill the buffer to ``B``:
            ``"stop"`` ends the replay at that selection boundary (an incomplete
            row is reported as ``partial_row_tokens``); ``"drain"`` announces an
            :class:`~packing_theory.engine.events.Exhausted` event and keeps selecting
            with fewer than ``B`` spans until the buffer is empty — outside the
            proposition's hypotheses, and flagged as such.
    """

    capacity: int = 2049
    min_buffer: int = 1000
    refill: int | tuple[int, ...] = 128
    policy: Policy = "discard"
    seed: int = RANDOM_SPAN_SEED
    passes: int = 1
    rows: int | None = None
    targets: int | None = None
    exhausted: ExhaustedMode = "stop"
    max_wait: int | None = None

    def __post_init__(self) -> None:
        # numpy integers are accepted and stored as Python ints
        object.__setattr__(self, "capacity", check_int("capacity", self.capacity, 2))
        object.__setattr__(self, "min_buffer", check_int("min_buffer", self.min_buffer, 1))
        object.__setattr__(self, "passes", check_int("passes", self.passes, 1))
        if not is_int(self.seed):
            raise InputTypeError(f"seed must be an int, got {type(self.seed).__name__} {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))
        refill = self.refill
        if is_int(refill):
            object.__setattr__(self, "refill", check_int("refill", refill, 1))
        elif isinstance(refill, (list, tuple, np.ndarray)):
            sizes = tuple(check_int(f"refill[{i}]", v, 1) for i, v in enumerate(refill))
            if not sizes:
                raise InputError("refill must be a positive int or a non-empty sequence, got []")
            object.__setattr__(self, "refill", sizes)
        else:
            raise InputTypeError(
                f"refill must be an int or a sequence of ints, got {type(refill).__name__} {refill!r}"
            )
        if self.policy not in POLICIES:
            raise InputError(f"policy must be one of {', '.join(POLICIES)}; got {self.policy!r}")
        if self.exhausted not in EXHAUSTED_MODES:
            raise InputError(f"exhausted must be 'stop' or 'drain', got {self.exhausted!r}")
        if self.max_wait is not None:
            object.__setattr__(self, "max_wait", check_int("max_wait", self.max_wait, 0))
        if self.rows is not None:
            object.__setattr__(self, "rows", check_int("rows", self.rows, 0))
        if self.targets is not None:
            object.__setattr__(self, "targets", check_int("targets", self.targets, 0))
            if self.rows is not None:
                raise InputError(
                    f"rows and targets are exclusive budgets, got rows={self.rows} targets={self.targets}"
                )

    @property
    def row_budget(self) -> int | None:
        """Rows to emit, from ``rows`` or ``targets``; ``None`` = until the stream ends."""
        if self.rows is not None:
            return self.rows
        if self.targets is not None:
            return -(-self.targets // (self.capacity - 1))
        return None

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        """The refill batch sizes as a tuple (a constant refill gives a 1-tuple)."""
        return self.refill if isinstance(self.refill, tuple) else (int(self.refill),)

    @property
    def spec(self) -> StreamingPolicy:
        """The policy's declaration (:data:`STREAMING_POLICIES`)."""
        return STREAMING_POLICIES[self.policy]

    @property
    def wait_threshold(self) -> int | None:
        """``A`` for ``bounded-wait`` (``max_wait``, or :data:`DEFAULT_MAX_WAIT`); ``None`` otherwise.

        >>> PackerConfig(policy="bounded-wait").wait_threshold == DEFAULT_MAX_WAIT
        True
        >>> PackerConfig(policy="continue", max_wait=5).wait_threshold is None
        True
        """
        if not STREAMING_POLICIES[self.policy].forced_start:
            return None
        return DEFAULT_MAX_WAIT if self.max_wait is None else self.max_wait

    @property
    def start_delay_bound(self) -> int | None:
        """The proved start-delay bound in rows for ``bounded-wait``; ``None`` for other policies.

        See :func:`start_delay_bound`.

        >>> PackerConfig(policy="bounded-wait").start_delay_bound  # 16 + 1000 + 128 - 2
        1142
        """
        A = self.wait_threshold
        if A is None:
            return None
        return start_delay_bound(A, self.min_buffer, self.batch_sizes)


def start_delay_bound(max_wait: int, min_buffer: int, refill: int | Sequence[int]) -> int:
    """The proved bound ``A + B + b - 2`` on a ``bounded-wait`` start delay, in rows.

    ``b`` is the largest refill batch size. Every occurrence that arrives in
    row ``a`` has its first token placed in a row ``<= a + A + B + b - 2``
    while the replay lasts (``BoundedWait.v``: ``bw_start_bound``,
    ``bw_unstarted_bound``; ``BoundedWaitExec.v``: ``bw_run_start_bound``).
    The bound is attained whenever ``B + b >= 3``
    (``tests/invariant/test_wait_bound.py::test_bound_is_attained``); for ``B = b = 1``
    every occurrence starts in its arrival row.

    >>> start_delay_bound(0, 1, 1), start_delay_bound(16, 1000, 128), start_delay_bound(3, 4, (2, 5))
    (0, 1142, 10)

    Raises:
        ValueError, TypeError: a negative ``max_wait``, ``min_buffer < 1`` or a
            refill size ``< 1`` (naming the parameter).
    """
    A = check_int("max_wait", max_wait, 0)
    B = check_int("min_buffer", min_buffer, 1)
    if isinstance(refill, Sequence):
        sizes = [check_int(f"refill[{i}]", v, 1) for i, v in enumerate(refill)]
        if not sizes:
            raise InputError("refill must be a positive int or a non-empty sequence, got []")
        b = max(sizes)
    else:
        b = check_int("refill", refill, 1)
    return A + B + b - 2


def overdue(row: int, arrival_row: int, max_wait: int) -> bool:
    """Whether a span that arrived in ``arrival_row`` has waited more than ``max_wait`` rows at ``row``.

    The wait is ``row - arrival_row``, the row boundaries crossed since the
    arrival; ``bounded-wait`` forces the oldest unstarted span at a row start
    when it is overdue.

    >>> overdue(10, 5, 5), overdue(11, 5, 5)
    (False, True)
    """
    return row - arrival_row > max_wait


C = TypeVar("C")


def resolve_config(config: C | None, kwargs: dict[str, Any], factory: Callable[..., C]) -> C:
    """``config`` itself, or ``factory(**kwargs)`` when it is ``None``: one way to take either.

    Every engine and audit entry point accepts a config object *or* its fields
    as keyword arguments, never both.

    >>> resolve_config(None, {"capacity": 8}, PackerConfig).capacity
    8
    >>> resolve_config(PackerConfig(), {"capacity": 8}, PackerConfig)
    Traceback (most recent call last):
    packing_theory.InputTypeError: pass either config or keyword arguments, not both (got ['capacity'])
    """
    if config is None:
        return factory(**kwargs)
    if kwargs:
        raise InputTypeError(f"pass either config or keyword arguments, not both (got {sorted(kwargs)})")
    return config


MAX_SEGMENTS = 1 << 20
"""The most chunks ``segment-first`` splits one document into (a longer document is refused:
its chunks would all be buffered at once)."""


def segment(length: int, capacity: int) -> list[tuple[int, int, bool]]:
    """Split a document for ``segment-first``: ``(start, length, bos_inserted)`` chunks.

    A document of ``L <= R`` is one chunk. Longer documents become chunks of one
    BOS plus at most ``R - 1`` text tokens; the first keeps the source's own BOS,
    the others get an added one. Text is neither overlapped nor duplicated.

    >>> segment(5, 4)
    [(0, 4, False), (4, 2, True)]
    >>> segment(4, 4)
    [(0, 4, False)]

    Raises:
        ValueError: more than :data:`MAX_SEGMENTS` chunks.
    """
    if length <= capacity:
        return [(0, length, False)]
    text = capacity - 1
    pieces = 1 + -(-(length - capacity) // text)
    if pieces > MAX_SEGMENTS:
        raise InputError(f"segment-first would split a document of length {length} into {pieces:,} chunks "
                         f"of at most R - 1 = {text} text tokens (more than {MAX_SEGMENTS:,}); raise the "
                         "capacity or choose another policy")
    chunks = [(0, capacity, False)]
    s = capacity
    while s < length:
        n = min(text, length - s)
        chunks.append((s, n + 1, True))
        s += n
    return chunks


# --------------------------------------------------------------------------- crops

_new = tuple.__new__  # a named tuple without its Python-level __new__: crops are one selection in five


class CropOutcome(NamedTuple):
    """What a crop of ``m`` tokens from a span produces.

    Attributes:
        start, bos_inserted: the placement's source start and BOS flag.
        discards: ``(start, length)`` source intervals dropped.
        keep: for ``continue``: the suffix span ``(start, length, bos)`` that stays in place.
        requeue: for ``requeue-bos``: the span ``(start, length, bos)`` appended at the end.
    """

    start: int
    bos_inserted: bool
    discards: tuple[tuple[int, int], ...]
    keep: tuple[int, int, bool] | None
    requeue: tuple[int, int, bool] | None


def crop_outcome(
    policy: Policy,
    start: int,
    length: int,
    bos_inserted: bool,
    m: int,
    rng: random.Random | None,
) -> CropOutcome:
    """The result of cropping ``m`` tokens (``1 <= m < length``) from a buffered span.

    The span holds ``length`` tokens: an optional BOS marker then source offsets
    from ``start``. The first ``m`` tokens fill the row; the leftover starts at
    source offset ``start + m - bos_inserted``. What happens to it is the
    policy's declared :attr:`StreamingPolicy.crop` rule.

    ``random-span`` applies only to whole original spans (its buffer holds no
    others): with ``m >= 2`` it draws ``a = 1 + rng.randrange(L - m + 1)`` and
    emits BOS plus source offsets ``[a, a + m - 1)``; ``a == 1`` is the prefix.
    A BOS-only crop (``m == 1``) draws nothing.

    >>> crop_outcome("discard", 0, 10, False, 4, None)
    CropOutcome(start=0, bos_inserted=False, discards=((4, 6),), keep=None, requeue=None)
    >>> crop_outcome("requeue-bos", 0, 10, False, 8, None).requeue
    (8, 3, True)
    >>> crop_outcome("requeue-bos", 0, 10, False, 9, None).discards
    ((9, 1),)
    """
    rest = start + m - (1 if bos_inserted else 0)
    left = length - m
    rule = STREAMING_POLICIES[policy].crop
    if rule == "continue":
        return _new(CropOutcome, (start, bos_inserted, (), (rest, left, False), None))
    if rule == "requeue-bos":
        if left > 1:
            return _new(CropOutcome, (start, bos_inserted, (), None, (rest, left + 1, True)))
        return _new(CropOutcome, (start, bos_inserted, ((rest, left),), None, None))
    if rule == "random-span" and m >= 2:
        if rng is None:
            raise InputError("random-span crops need an rng, got None")
        a = 1 + rng.randrange(length - m + 1)
        if a > 1:
            tail = a + m - 1
            discards = ((1, a - 1),) if tail == length else ((1, a - 1), (tail, length - tail))
            return _new(CropOutcome, (a, True, discards, None, None))
    return _new(CropOutcome, (start, bos_inserted, ((rest, left),), None, None))


Span = tuple[int, int, bool]
"""A buffered span's ``(start, length, bos_inserted)``."""


def apply_crop(
    policy: Policy,
    row: int,
    offset: int,
    occurrence: int,
    source: int,
    span: Span,
    m: int,
    rng: random.Random | None,
) -> tuple[tuple[Event, ...], Span | None, Span | None]:
    """Crop ``m`` tokens of a buffered span into ``row`` at ``offset``: the events and the leftover.

    The one place where a crop becomes event objects, shared by both engines and the variants (the
    fast engine's batches write these events' fields, in this order, from :func:`crop_outcome`): the
    crop :class:`~packing_theory.engine.events.Placement`, its
    :class:`~packing_theory.engine.events.Discard` events, and for ``requeue-bos`` the
    :class:`~packing_theory.engine.events.BosAdded` of the requeued marker. Returns ``(events,
    keep, requeue)``: the span a ``continue`` crop keeps in place, or the span ``requeue-bos``
    appends at the end of the buffer (each engine applies them to its own buffer).

    >>> events, keep, requeue = apply_crop("continue", 3, 2, 7, 7, (0, 9, False), 2, None)
    >>> [type(e).__name__ for e in events], events[0].length, keep, requeue
    (['Placement'], 2, (2, 7, False), None)
    >>> events, keep, requeue = apply_crop("requeue-bos", 3, 2, 7, 7, (0, 9, False), 2, None)
    >>> [type(e).__name__ for e in events], keep, requeue
    (['Placement', 'BosAdded'], None, (2, 8, True))
    """
    start, n, bos = span
    first, bos_inserted, discards, keep, requeue = crop_outcome(policy, start, n, bos, m, rng)
    placed = _new(Placement, (row, offset, occurrence, source, first, m, bos_inserted, True))
    if len(discards) == 1 and requeue is None:  # discard's crop: the common case
        ((a, k),) = discards
        return (placed, _new(Discard, (occurrence, source, a, k))), keep, None
    events: tuple[Event, ...] = (placed, *[_new(Discard, (occurrence, source, a, k)) for a, k in discards])
    if requeue is not None:
        events += (_new(BosAdded, (occurrence, source, 1)),)
    return events, keep, requeue

