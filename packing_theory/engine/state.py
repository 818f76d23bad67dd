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

from .._checks import check_int
from ..errors import InputError
from .events import BufferedSpan, Event
from .policies import PackerConfig
from .refill import CursorState

__all__ = ["STATE_FORMAT", "EngineState", "PackerRun", "config_fingerprint"]

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
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"engine state is not valid JSON: {exc}") from exc
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
