"""Out-of-family packers: the proposition's hypotheses, one knob at a time.

Seed 000 §3 names the hypotheses the proof uses: shortest fallback with
earliest-arrival ties, one active span per occurrence, no pre-segmentation, no
flush, no age-based eviction. :class:`VariantPacker` is a naive list-based
packer (the shape of :class:`~packing_theory.engine.reference.ReferencePacker`) with
one knob per hypothesis. It emits the same event stream types, so the
:class:`~packing_theory.invariant.InvariantMonitor` consumes it unchanged; with
all knobs at their defaults it emits exactly the reference engine's events
(tested).

=====================  =================================================================
knob                   values (default first)
=====================  =================================================================
``continuation``       ``discard``, ``continue``, ``requeue-bos`` (as the engine);
                       ``continue-at-end`` (the suffix moves to the end of the buffer,
                       no BOS); ``split`` (the suffix stays in place as *two* active
                       spans when it has at least two tokens)
``fallback``           ``shortest``; ``oldest`` (nothing fits: crop the earliest span in
                       buffer order)
``tie_break``          ``earliest``; ``latest`` (equal lengths: the latest in buffer
                       order, for both the fitting rule and the fallback)
``flush``              ``none``; ``discard`` (at each pass boundary drop every buffered
                       span, announced by :class:`~packing_theory.engine.events.Discard`
                       events); ``drain`` (at each pass boundary keep selecting until
                       the buffer is empty, announced by an
                       :class:`~packing_theory.engine.events.Exhausted` event: those selections
                       have fewer than ``B`` spans)
=====================  =================================================================

:data:`VARIANTS` names the single-knob variants studied in ``docs/invariant.rst``
and ``tests/engine/test_variants.py``.

Complexity: O(B) per selection (linear scans, ``list.pop``), like the reference.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..errors import InputError, InputTypeError
from .events import Arrival, BufferedSpan, Discard, Event, Exhausted, Horizon, Placement
from .policies import (
    EXHAUSTED_MODES,
    ExhaustedMode,
    LengthsInput,
    PackerConfig,
    apply_crop,
    resolve_config,
)
from .refill import refill_batches

__all__ = [
    "CONTINUATIONS",
    "FALLBACKS",
    "FLUSHES",
    "TIE_BREAKS",
    "VARIANTS",
    "Continuation",
    "Fallback",
    "Flush",
    "TieBreak",
    "VariantConfig",
    "VariantPacker",
    "variant",
]

Continuation = Literal["discard", "continue", "requeue-bos", "continue-at-end", "split"]
Fallback = Literal["shortest", "oldest"]
TieBreak = Literal["earliest", "latest"]
Flush = Literal["none", "discard", "drain"]
CONTINUATIONS: tuple[Continuation, ...] = ("discard", "continue", "requeue-bos", "continue-at-end", "split")
FALLBACKS: tuple[Fallback, ...] = ("shortest", "oldest")
TIE_BREAKS: tuple[TieBreak, ...] = ("earliest", "latest")
FLUSHES: tuple[Flush, ...] = ("none", "discard", "drain")


@dataclass(frozen=True, slots=True)
class VariantConfig:
    """A replay configuration plus the out-of-family knobs (see the module table).

    The stream fields (``capacity``, ``min_buffer``, ``refill``, ``passes``,
    ``rows``, ``exhausted``) mean what they mean in
    :class:`~packing_theory.engine.policies.PackerConfig` and are validated by it.
    """

    capacity: int = 2049
    min_buffer: int = 1000
    refill: int | tuple[int, ...] = 128
    passes: int = 1
    rows: int | None = None
    exhausted: ExhaustedMode = "stop"
    continuation: Continuation = "discard"
    fallback: Fallback = "shortest"
    tie_break: TieBreak = "earliest"
    flush: Flush = "none"

    def __post_init__(self) -> None:
        cfg = self.stream_config()
        object.__setattr__(self, "refill", cfg.refill)
        for name, allowed in (("continuation", CONTINUATIONS), ("fallback", FALLBACKS),
                              ("tie_break", TIE_BREAKS), ("flush", FLUSHES), ("exhausted", EXHAUSTED_MODES)):
            value = getattr(self, name)
            if value not in allowed:
                raise InputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")

    def stream_config(self) -> PackerConfig:
        """The :class:`PackerConfig` of the stream fields (policy ``discard``)."""
        return PackerConfig(capacity=self.capacity, min_buffer=self.min_buffer, refill=self.refill,
                            passes=self.passes, rows=self.rows, exhausted=self.exhausted)

    @property
    def in_family(self) -> bool:
        """All knobs inside the proposition's hypotheses (``discard``/``continue``, defaults)."""
        return (self.continuation in ("discard", "continue") and self.fallback == "shortest"
                and self.tie_break == "earliest" and self.flush == "none")


VARIANTS: dict[str, dict[str, str]] = {
    "requeue-bos": {"continuation": "requeue-bos"},
    "oldest-first": {"fallback": "oldest"},
    "latest-tie": {"tie_break": "latest"},
    "epoch-flush": {"flush": "discard"},
    "epoch-drain": {"flush": "drain"},
    "split-suffix": {"continuation": "split"},
    "continue-at-end": {"continuation": "continue-at-end"},
}
"""Single-knob out-of-family variants: name -> the knob values that differ from the defaults."""


def variant(name: str, **kwargs: Any) -> VariantConfig:
    """The :class:`VariantConfig` of a named variant, with stream fields from ``kwargs``.

    >>> variant("oldest-first", capacity=4, min_buffer=2).fallback
    'oldest'

    Raises:
        ValueError: an unknown name.
    """
    if name not in VARIANTS:
        raise InputError(f"variant must be one of {', '.join(VARIANTS)}; got {name!r}")
    known = {f.name for f in fields(VariantConfig)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise InputTypeError(f"unknown VariantConfig fields {unknown}")
    return VariantConfig(**{**kwargs, **VARIANTS[name]})


class VariantPacker:
    """The naive list packer with out-of-family knobs; same event stream as the engines.

    Args:
        config: a :class:`VariantConfig`; keyword arguments build one when omitted.

    While :meth:`events` runs, :meth:`snapshot` returns the current buffer
    (after the selection whose event was just yielded).

    >>> vp = VariantPacker(capacity=2, min_buffer=2, refill=1, fallback="oldest")
    >>> [(p.occurrence, p.crop) for p in vp.events([4, 3]) if type(p) is Placement]
    [(0, True)]
    """

    def __init__(self, config: VariantConfig | None = None, **kwargs: Any) -> None:
        config = resolve_config(config, kwargs, VariantConfig)
        self.config = config
        self._buffer: list[list[Any]] = []

    def snapshot(self) -> tuple[BufferedSpan, ...]:
        """The buffered spans in buffer order. O(n)."""
        return tuple(BufferedSpan(*s) for s in self._buffer)

    def _check(self) -> None:
        """Assert the internal invariants of the current buffer."""
        for occ, src, start, n, bos in self._buffer:
            assert n >= 1 and start >= 0 and occ >= 0 and src >= 0, (occ, src, start, n)
            assert start > 0 or not bos or self.config.continuation == "requeue-bos", "BOS on an original"

    def _pick(self, remaining: int) -> tuple[int, bool]:
        """Index of the selected span and whether it is a crop."""
        buf = self._buffer
        latest = self.config.tie_break == "latest"
        best_idx = -1
        best_len = 0
        for i, span in enumerate(buf):
            n = span[3]
            if n <= remaining and (n > best_len or (latest and n == best_len)):
                best_idx = i
                best_len = n
        if best_idx >= 0:
            return best_idx, False
        if self.config.fallback == "oldest":
            return 0, True
        idx = 0
        for i in range(1, len(buf)):
            n = buf[i][3]
            if n < buf[idx][3] or (latest and n == buf[idx][3]):
                idx = i
        return idx, True

    def events(self, lengths: LengthsInput) -> Iterator[Event]:
        """Replay ``lengths`` and yield the event stream (ends with a Horizon)."""
        cfg = self.config
        R = cfg.capacity
        B = cfg.min_buffer
        budget = cfg.rows
        batches = refill_batches(lengths, cfg.stream_config())
        buf: list[list[Any]] = []
        self._buffer = buf
        occurrence = 0
        pending: list[tuple[int, int, int]] | None = None
        stream_done = False
        current_pass = 0
        draining = False
        announced = False
        stop_reason = "rows"
        row = 0
        pos = 0
        while budget is None or row < budget:
            # refill to B; at a pass boundary, flush first
            while len(buf) < B and not stream_done:
                if pending is None:
                    pending = next(batches, None)
                    if pending is None:
                        stream_done = True
                        break
                if pending[0][1] != current_pass and buf and cfg.flush != "none":
                    if cfg.flush == "drain":
                        draining = True
                        break
                    for occ, src, start, n, bos in buf:
                        yield Discard(occ, src, start, n - (1 if bos else 0))
                    buf.clear()
                current_pass = pending[0][1]
                draining = False
                for source, pass_index, length in pending:
                    yield Arrival(occurrence, source, pass_index, length)
                    buf.append([occurrence, source, 0, length, False])
                    occurrence += 1
                announced = False
                pending = None
            if len(buf) < B:
                if not draining and cfg.exhausted == "stop":
                    stop_reason = "exhausted"
                    break
                if not announced:
                    announced = True
                    yield Exhausted(row, pos, len(buf))
                if not buf:
                    stop_reason = "drained"
                    break
            remaining = R - pos
            idx, crop = self._pick(remaining)
            occ, src, start, n, bos = buf.pop(idx)
            if not crop:
                yield Placement(row, pos, occ, src, start, n, bos, False)
                pos += n
                if pos == R:
                    row += 1
                    pos = 0
                continue
            yield from self._crop(buf, idx, row, pos, occ, src, start, n, bos, remaining)
            row += 1
            pos = 0
        yield Horizon(row, pos if stop_reason != "rows" else 0, stop_reason, self.snapshot())

    def _crop(self, buf: list[list[Any]], idx: int, row: int, pos: int, occ: int, src: int, start: int,
              n: int, bos: bool, m: int) -> Iterator[Event]:
        mode = self.config.continuation
        if mode in ("discard", "continue", "requeue-bos"):
            crop_events, keep, requeue = apply_crop(mode, row, pos, occ, src, (start, n, bos), m, None)
            yield from crop_events
            if keep is not None:
                buf.insert(idx, [occ, src, *keep])
            elif requeue is not None:
                buf.append([occ, src, *requeue])
            return
        yield Placement(row, pos, occ, src, start, m, bos, True)
        rest = start + m - (1 if bos else 0)
        left = n - m
        if mode == "continue-at-end":
            buf.append([occ, src, rest, left, False])
        elif left >= 2:  # split: two active spans of one occurrence, in place
            a = (left + 1) // 2
            buf[idx:idx] = [[occ, src, rest, a, False], [occ, src, rest + a, left - a, False]]
        else:
            buf.insert(idx, [occ, src, rest, left, False])
