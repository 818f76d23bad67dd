"""Exact resume: the engine's state at a row boundary, serialisable, and a run that captures it.

A replay stopped after row ``k`` and resumed from its :class:`EngineState`
yields exactly the events the uninterrupted replay yields after row ``k``
(tests/engine/test_state.py checks it for every policy and both engines). The state
at the boundary before row ``k`` is everything the selection loop carries:

* the buffered spans, in buffer order (a ``continue`` suffix, a requeued
  ``[BOS] + leftover``, a ``segment-first`` chunk are spans like any other);
* the refill cursor (:class:`~packing_theory.engine.refill.CursorState`):
  pass, position in the pass, refill batches taken;
* the row counter, the next occurrence id, whether the stream ran dry
  (and whether that was announced);
* the ``random-span`` RNG state.

A :class:`PackerRun` captures it at the next row boundary on request,
without slowing the selection loop (one flag test per row).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._files import check_tree, load_json
from ..errors import InputError
from .events import BufferedSpan, Event
from .policies import PackerConfig
from .refill import CursorState

__all__ = ["STATE_FORMAT", "EngineState", "PackerRun", "check_state", "config_fingerprint"]

STATE_FORMAT = "packing-theory/engine-state"
_STATE_VERSION = 1

_BUDGET_FIELDS = ("rows", "targets")


def config_fingerprint(config: PackerConfig) -> dict[str, Any]:
    """The configuration fields a resumed run must share with the run it continues: all but the budget.

    The budget (``rows`` / ``targets``) may differ: a resumed run can go further.

    >>> config_fingerprint(PackerConfig(refill=(2, 1)))["refill"]
    [2, 1]
    """
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        if f.name not in _BUDGET_FIELDS:
            value = getattr(config, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


@dataclass(frozen=True, slots=True)
class EngineState:
    """A streaming engine's state at a row boundary (before row :attr:`row` starts).

    Attributes:
        config: :func:`config_fingerprint` of the run's configuration.
        row: complete rows emitted so far.
        next_occurrence: the next arrival's occurrence id.
        cursor: the refill cursor.
        buffer: the buffered spans, in buffer order.
        rng_state: the ``random-span`` RNG's ``getstate()`` (``None`` for other policies).
        announced: an :class:`~packing_theory.engine.events.Exhausted` event was emitted.
        arrival_rows: ``bounded-wait`` only: per buffered span (aligned with
            :attr:`buffer`), the row in which its occurrence arrived, ``-1`` for a
            started span (a continuation); ``None`` for other policies.
    """

    config: dict[str, Any]
    row: int
    next_occurrence: int
    cursor: CursorState
    buffer: tuple[BufferedSpan, ...]
    rng_state: tuple[Any, ...] | None
    announced: bool
    arrival_rows: tuple[int, ...] | None = None

    def check_config(self, config: PackerConfig) -> None:
        """Raise ``ValueError`` naming the first field where ``config`` differs from the saved run's."""
        mine = config_fingerprint(config)
        for name, value in self.config.items():
            if mine.get(name) != value:
                raise InputError(f"cannot resume: the state was saved with {name}={value!r}, "
                                 f"the packer has {name}={mine.get(name)!r}")
        for name in mine:
            if name not in self.config:
                raise InputError(f"cannot resume: the state does not record {name!r}")

    def to_json(self) -> str:
        """The state as a JSON document (exact: ints stay ints, the RNG state included)."""
        rng = None
        if self.rng_state is not None:
            version, internal, gauss = self.rng_state
            rng = [version, list(internal), gauss]
        return json.dumps({
            "format": STATE_FORMAT, "version": _STATE_VERSION, "config": self.config, "row": self.row,
            "next_occurrence": self.next_occurrence, "cursor": list(self.cursor),
            "buffer": [list(s) for s in self.buffer], "rng_state": rng, "announced": self.announced,
            "arrival_rows": None if self.arrival_rows is None else list(self.arrival_rows),
        }, separators=(",", ":"))

    def to_bytes(self) -> bytes:
        """:meth:`to_json` as UTF-8 bytes (for a trainer's checkpoint file)."""
        return self.to_json().encode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> EngineState:
        """Parse :meth:`to_json` output.

        Raises:
            ValueError: not an engine state document, another version, or malformed fields.
        """
        doc = load_json(text, "engine state")
        check_tree(doc, "engine state")
        if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
            raise InputError(f"not a {STATE_FORMAT} document")
        if doc.get("version") != _STATE_VERSION:
            raise InputError(f"engine state version {doc.get('version')!r} is not supported "
                             f"(this library reads version {_STATE_VERSION})")
        try:
            rng = doc["rng_state"]
            cursor = doc["cursor"]
            state = cls(
                config=dict(doc["config"]),
                row=check_int("row", doc["row"], 0),
                next_occurrence=check_int("next_occurrence", doc["next_occurrence"], 0),
                cursor=CursorState(check_int("cursor.pass_index", cursor[0], 0),
                                   check_int("cursor.position", cursor[1], 0),
                                   check_int("cursor.batch_index", cursor[2], 0), bool(cursor[3])),
                buffer=tuple(_span(*span) for span in doc["buffer"]),
                rng_state=None if rng is None else (rng[0], tuple(rng[1]), rng[2]),
                announced=bool(doc["announced"]),
                arrival_rows=(None if doc.get("arrival_rows") is None
                              else tuple(check_int("arrival_rows", r, -1) for r in doc["arrival_rows"])),
            )
            if state.arrival_rows is not None and len(state.arrival_rows) != len(state.buffer):
                raise InputError(f"arrival_rows has {len(state.arrival_rows)} entries for "
                                 f"{len(state.buffer)} buffered spans")
        except (KeyError, IndexError, TypeError) as exc:
            raise InputError(f"malformed engine state: {exc!r}") from exc
        return state

    @classmethod
    def from_bytes(cls, data: bytes) -> EngineState:
        """Parse :meth:`to_bytes` output."""
        return cls.from_json(data)


def _span(occurrence: object, source: object, start: object, length: object, bos: object) -> BufferedSpan:
    return BufferedSpan(check_int("buffer.occurrence", occurrence, 0), check_int("buffer.source", source, 0),
                        check_int("buffer.start", start, 0), check_int("buffer.length", length, 1),
                        bool(bos))


class PackerRun:
    """One replay as an iterable of events that can hand out its state at a row boundary.

    Built by ``Packer.run`` / ``ReferencePacker.run``. Call
    :meth:`request_state` at any time; the engine captures its state at the
    next row boundary (or at the end of the stream) and :attr:`state` holds it
    from then on. The event returned by the ``next()`` call during which the
    capture happened is the first event *after* the boundary
    (:attr:`captured_at` counts the events yielded before it), so a consumer
    that saves its own state (a ledger, a monitor) saves it before feeding
    that event.

    >>> from packing_theory import Packer
    >>> run = Packer(capacity=8, min_buffer=2, refill=1, rows=3).run([5, 3, 9, 4, 6, 2, 7])
    >>> run.request_state()
    >>> events = list(run)
    >>> run.state.row, run.captured_at
    (0, 0)
    """

    def __init__(self, body: Callable[[PackerRun], Iterator[Event]]) -> None:
        self._want = False
        self._yielded = 0
        self.state: EngineState | None = None
        self.captured_at: int | None = None
        self._events = body(self)

    def request_state(self) -> None:
        """Capture the engine state at the next row boundary (replacing an earlier capture)."""
        self._want = True

    def _wants(self) -> bool:
        return self._want

    def _capture(self, state: EngineState) -> None:
        """Called by the engine at a row boundary when a capture was requested."""
        self.state = state
        self.captured_at = self._yielded
        self._want = False

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        ev = next(self._events)
        self._yielded += 1
        return ev


def check_state(state: EngineState, lengths: npt.NDArray[np.int64], config: PackerConfig) -> None:
    """Refuse an engine state no replay of ``lengths`` under ``config`` can reach (a tampered checkpoint).

    The checks are consequences of the engine's rules, so a state the engine
    wrote always passes:

    * the refill cursor: ``batch_index`` batches of the refill sequence end at
      ``position`` (a batch is cut short only at the end of a pass, which resets
      the cursor); ``done`` exactly when every pass is taken; the next
      occurrence is the number of arrivals the cursor has taken;
    * every buffered span belongs to an arrived occurrence whose source is its
      arrival's document, lies inside that document, and has the shape the
      policy leaves in its buffer (a whole document; a suffix ending at the
      document's end for ``continue`` / ``requeue-bos``; one of
      :func:`~packing_theory.engine.policies.segment`'s chunks for
      ``segment-first``); buffer order is arrival order except where
      ``requeue-bos`` appends; one span per occurrence (per chunk);
    * ``continue`` drops no token: the arrived mass equals the placed mass
      ``row * R`` plus the buffered mass;
    * ``bounded-wait``: an unstarted span's arrival row is at most ``row``.

    Complexity: O(B + |refill sequence|) Python work and one O(N) numpy sum
    (``continue`` only), N = ``lengths.size``.

    Raises:
        ValueError: naming the first field that is inconsistent.

    >>> from packing_theory import Packer
    >>> config = PackerConfig(capacity=8, min_buffer=2, refill=1, rows=2)
    >>> lengths = np.array([5, 3, 9, 4, 6, 2, 7])
    >>> run = Packer(config).run(lengths)
    >>> for event in run:
    ...     if event.__class__.__name__ == "Placement" and event.row == 1:
    ...         run.request_state()
    >>> check_state(run.state, lengths, config)
    >>> check_state(dataclasses.replace(run.state, next_occurrence=6), lengths, config)
    Traceback (most recent call last):
    ...
    packing_theory.InputError: cannot resume: engine.next_occurrence is 6, but the refill cursor ...
    """
    n = int(lengths.size)
    spec = config.spec

    def refuse(what: str) -> None:
        raise InputError(f"cannot resume: {what}")

    cur = state.cursor
    if not 0 <= cur.pass_index <= config.passes:
        refuse(f"engine.cursor.pass_index is {cur.pass_index}, outside 0..{config.passes}")
    if cur.done != (cur.pass_index >= config.passes):
        refuse(f"engine.cursor.done is {cur.done} at pass {cur.pass_index} of {config.passes}")
    if cur.position >= n or (cur.done and cur.position):
        refuse(f"engine.cursor.position is {cur.position} in a pass of {n} documents")
    sizes = config.batch_sizes
    full, part = divmod(cur.batch_index, len(sizes))
    if full * sum(sizes) + sum(sizes[:part]) != cur.position:
        refuse(f"engine.cursor.batch_index is {cur.batch_index}, but refill batches {list(sizes)} taken "
               f"that often do not end at engine.cursor.position {cur.position}")
    arrived = cur.pass_index * n + cur.position
    if state.next_occurrence != arrived:
        refuse(f"engine.next_occurrence is {state.next_occurrence}, but the refill cursor (pass "
               f"{cur.pass_index}, position {cur.position}) has taken {arrived} arrivals")
    seen: set[tuple[int, int]] = set()
    last = -1
    buffered = 0
    for i, span in enumerate(state.buffer):
        where = f"engine.buffer[{i}]"
        if span.occurrence >= arrived:
            refuse(f"{where} is occurrence {span.occurrence}, which has not arrived ({arrived} arrivals)")
        if span.source != span.occurrence % n:
            refuse(f"{where} says source {span.source}, but occurrence {span.occurrence} is document "
                   f"{span.occurrence % n}")
        key = (span.occurrence, span.start if spec.segments else 0)
        if key in seen:
            refuse(f"{where} repeats occurrence {span.occurrence}")
        seen.add(key)
        size = int(lengths[span.source])
        text = span.length - (1 if span.bos_inserted else 0)
        if span.start + text > size:
            refuse(f"{where} covers tokens {span.start}..{span.start + text} of document {span.source}, "
                   f"which has {size}")
        shape = spec.buffers(span.start, span.length, span.bos_inserted, size, config.capacity)
        if not shape:
            refuse(f"{where} ({span.start}, {span.length}, bos={span.bos_inserted}) is not a span the "
                   f"{config.policy!r} policy buffers for document {span.source} of length {size}")
        if not spec.requeues:
            if span.occurrence < last:
                refuse(f"{where} (occurrence {span.occurrence}) is out of arrival order")
            last = span.occurrence
        buffered += span.length
    if spec.keeps_every_token:
        mass = cur.pass_index * int(lengths.sum()) + int(lengths[: cur.position].sum())
        if mass != state.row * config.capacity + buffered:
            refuse(f"engine.buffer holds {buffered} tokens and engine.row {state.row} rows of "
                   f"{config.capacity} were placed, but {mass} tokens arrived and 'continue' drops none")
    if state.arrival_rows is not None:
        for i, (span, r) in enumerate(zip(state.buffer, state.arrival_rows, strict=True)):
            if r > state.row or (r < 0) != (span.start > 0):
                refuse(f"engine.arrival_rows[{i}] is {r} for a span at start {span.start} before row "
                       f"{state.row}")
