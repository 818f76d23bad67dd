"""The audited record stream: any packer over a document store, batch by batch, resumable (numpy only).

:class:`PackedStream` runs a packer (a streaming policy, a peer, or a packer
object; :func:`~packing_theory.adapters.policy.make_policy`) over a
:class:`~packing_theory.corpus.documents.DocumentStore` and yields
:class:`~packing_theory.adapters.records.PackedBatch` es of complete rows.
Every event the packer emits goes, in order, to the optional embedded
:class:`~packing_theory.invariant.InvariantMonitor` (``"record"`` or
``"raise"``) and :class:`~packing_theory.audit.Ledger`, so the audit covers
exactly the rows the trainer consumed (no prefetch): :meth:`PackedStream.finish`
closes the ledger at the current row boundary.

Exact resume: :meth:`PackedStream.state` returns a
:class:`~packing_theory.adapters.state.LoaderState` at the current row
boundary; ``PackedStream(..., resume=state)`` continues with exactly the rows
the uninterrupted stream yields (see :mod:`packing_theory.adapters.state` for
how the ledger and the monitor are rebuilt).

>>> from packing_theory.corpus.documents import TokenDocuments
>>> lengths = [5, 3, 9, 4, 6]
>>> docs = TokenDocuments.from_lists([[0] + [s * 10 + j for j in range(1, n)] for s, n in enumerate(lengths)])
>>> stream = PackedStream(docs, capacity=8, min_buffer=2, refill=1, batch_rows=1, ledger=True)
>>> first = next(stream).input_ids.tolist()
>>> saved = stream.state().to_json()
>>> rest = [b.input_ids.tolist() for b in stream]
>>> again = PackedStream(docs, capacity=8, min_buffer=2, refill=1, batch_rows=1, ledger=True,
...                      resume=LoaderState.from_json(saved))
>>> [b.input_ids.tolist() for b in again] == rest
True
>>> again.finish().mass.identity_holds
True
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np

from .._checks import check_bool, check_int
from ..audit.ledger import Ledger
from ..audit.results import Aggregates
from ..corpus.documents import DocumentStore, lengths_fingerprint
from ..engine.events import (
    Arrival,
    Event,
    Horizon,
    Padding,
    Placement,
    Repeat,
)
from ..engine.policies import RANDOM_SPAN_SEED
from ..engine.state import EngineState, check_state
from ..errors import InputError, InputTypeError
from ..invariant.monitor import InvariantMonitor
from ..invariant.report import MonitorReport
from .order import OrderSpec, RowOrder, check_closable, resume_state
from .policy import PolicySpec, make_policy
from .records import PackedBatch, RecordOptions, pieces_from_events
from .remainder import RemainderTracker
from .state import LoaderState

__all__ = ["MonitorSpec", "PackedStream", "RemainderTracker"]

MonitorSpec = InvariantMonitor | Literal["record", "raise"] | None
"""An embedded monitor: an :class:`InvariantMonitor`, ``"record"``, ``"raise"`` or ``None``."""


def _monitor_settings(monitor: MonitorSpec) -> dict[str, Any] | None:
    if monitor is None:
        return None
    if isinstance(monitor, InvariantMonitor):
        return {
            "mode": "replay",
            "on_violation": "raise" if monitor._raise else "record",
            "capacity": monitor.capacity,
            "min_buffer": monitor.min_buffer,
            "segmented": monitor.segmented,
        }
    return {"mode": "replay", "on_violation": monitor}


class PackedStream:
    """Batches of packed records from any packer, with an embedded monitor and ledger; resumable.

    Args:
        documents: the document store (``documents.lengths()`` are replayed;
            placements read their tokens by source id).
        policy: a streaming policy name, a peer name, or a packer object
            (:func:`~packing_theory.adapters.policy.make_policy`).
        capacity: row capacity ``R`` (for a policy name).
        batch_rows: rows per batch.
        min_buffer, refill, passes, seed, exhausted, peer_options: the
            packer's configuration; ``refill`` defaults to the store's own
            batch-size sequence, else 128.
        rows: stop after this many rows (``None``: until the stream ends).
        options: how rows become records (:class:`RecordOptions`).
        monitor: an embedded :class:`InvariantMonitor`, ``"record"``, ``"raise"`` or ``None``.
        ledger: ``True`` (a fresh :class:`Ledger`), a ledger, or ``None`` / ``False``.
        drop_last: drop a final batch with fewer than ``batch_rows`` rows.
        resume: a :class:`LoaderState` from :meth:`state` of the same configuration.
        order: the row order, a name or an :class:`~packing_theory.adapters.order.OrderSpec` (seed 000 §5.8).

    Iterating yields :class:`PackedBatch` es. Complexity: the packer's own cost
    per event plus O(1) Python work per row event and O(R) numpy work per row.

    Raises:
        ValueError: bad arguments, or a resume state that does not match the
            documents, the policy or the replay.
    """

    def __init__(
        self,
        documents: DocumentStore,
        *,
        policy: str | Any = "discard",
        capacity: int | None = None,
        batch_rows: int = 1,
        min_buffer: int = 1000,
        refill: int | tuple[int, ...] | None = None,
        passes: int = 1,
        seed: int = RANDOM_SPAN_SEED,
        exhausted: Literal["stop", "drain"] = "stop",
        peer_options: Mapping[str, Any] | None = None,
        rows: int | None = None,
        options: RecordOptions | None = None,
        monitor: MonitorSpec = None,
        ledger: bool | Ledger | None = None,
        drop_last: bool = False,
        resume: LoaderState | None = None,
        order: str | OrderSpec = "identity",
    ) -> None:
        if not isinstance(documents, DocumentStore):
            raise InputTypeError(
                f"documents must be a DocumentStore (e.g. TokenDocuments, ShardDocuments), got "
                f"{type(documents).__name__}"
            )
        self.documents = documents
        self.lengths = np.asarray(documents.lengths(), dtype=np.int64)
        if self.lengths.size == 0:
            raise InputError("documents is empty: a packer needs at least one document")
        self.batch_rows = check_int("batch_rows", batch_rows, 1)
        self.max_rows = None if rows is None else check_int("rows", rows, 0)
        self.options = options if options is not None else RecordOptions()
        if not isinstance(self.options, RecordOptions):
            raise InputTypeError(f"options must be a RecordOptions, got {type(options).__name__}")
        self.drop_last = check_bool("drop_last", drop_last)
        if refill is None:
            refill = documents.refill if documents.refill is not None else 128
        self.spec: PolicySpec = make_policy(
            policy,
            capacity=capacity,
            min_buffer=min_buffer,
            refill=refill,
            passes=passes,
            seed=seed,
            exhausted=exhausted,
            peer_options=peer_options,
        )
        self.capacity = self.spec.capacity
        self.fingerprint = lengths_fingerprint(self.lengths)
        if resume is not None:
            monitor = monitor if monitor is not None else _rebuild_monitor(resume.monitor)
            if ledger is None and resume.ledger is not None:
                ledger = True
        self.monitor = self._make_monitor(monitor, min_buffer)
        self._monitor_settings = _monitor_settings(monitor)
        self.ledger: Ledger | None = self._make_ledger(ledger, min_buffer)
        self._tracker = RemainderTracker() if self.ledger is not None and self.spec.kind == "peer" else None
        self.rows = 0
        self.batches = 0
        self.epoch = 1
        self.last_source = -1
        self.horizon: Horizon | None = None
        self.finished = False
        self._pending: Event | None = None
        self._pulled = self._run_base = 0  # _run_base: events consumed before the engine run started
        self._filled = 0
        self._engine_state: EngineState | None = None
        self._state_rows = -1
        self._run: Any = None
        self._boundary_events = 0
        # checked before the order layer takes its part of the state out
        self._edited = resume.edited_field() if isinstance(resume, LoaderState) else None
        (spec, resume, saved), self.order = resume_state(order, self.batch_rows, resume), None
        if resume is None:
            self._it: Iterator[Event] = self._start(None)
        else:
            self._resume(resume)
        self.order = RowOrder.attach(spec, saved, lambda n: self._rows(n, False), self._identity_state)

    # ------------------------------------------------------------------ construction helpers

    def _make_monitor(self, monitor: MonitorSpec, min_buffer: int) -> InvariantMonitor | None:
        if monitor is None or isinstance(monitor, InvariantMonitor):
            if isinstance(monitor, InvariantMonitor) and monitor.selections:
                raise InputError("monitor must be fresh (it has already seen selections)")
            return monitor
        if monitor not in ("record", "raise"):
            raise InputError(
                f"monitor must be an InvariantMonitor, 'record', 'raise' or None, got {monitor!r}"
            )
        config = self.spec.config
        if config is not None:
            return InvariantMonitor.for_packer(config, on_violation=monitor)
        return InvariantMonitor(self.capacity, min_buffer, on_violation=monitor)

    def _make_ledger(self, ledger: bool | Ledger | None, min_buffer: int) -> Ledger | None:
        if ledger is None or ledger is False:
            return None
        if ledger is True:
            config = self.spec.config
            if config is not None:
                return Ledger.for_packer(config)
            return Ledger(self.capacity, min_buffer, policy=str(self.spec.descriptor.get("name", "peer")))
        if isinstance(ledger, Ledger):
            if ledger.finished:
                raise InputError("ledger must be fresh (it has already seen a Horizon)")
            return ledger
        raise InputTypeError(f"ledger must be a bool, a Ledger or None, got {type(ledger).__name__}")

    def _start(self, engine_state: EngineState | None) -> Iterator[Event]:
        packer = self.spec.packer
        if self.spec.kind == "engine":
            self._run = packer.run(self.lengths, resume=engine_state)
            return self._run  # type: ignore[no-any-return]
        self._run = None
        return iter(packer.events(self.lengths))

    # ------------------------------------------------------------------ the event loop

    def _take(self, n: int, collect: bool) -> tuple[list[Any], int, bool]:
        """Consume events until ``n`` more rows are complete (or the stream ends).

        Returns the row events of the complete rows (when ``collect``), the
        number of rows, and whether any event was a Padding or a Repeat. The
        hot loop of the adapter: one type test and one append per event.
        """
        evs: list[Any] = []
        add = evs.append
        R = self.capacity
        feeds = [f.feed for f in (self.ledger, self.monitor, self._tracker) if f is not None]
        filled = self._filled
        got = 0
        kept = 0
        mixed = False
        last_arrival: Any = None
        pending = self._pending
        self._pending = None
        base = self._pulled - (1 if pending is not None else 0)
        k = 0
        it: Iterator[Any] = self._it if pending is None else itertools.chain((pending,), self._it)
        for ev in it:
            k += 1
            for feed in feeds:
                feed(ev)
            t = type(ev)
            if t is Placement:
                if collect:
                    add(ev)
                filled += ev.length
            elif t is Arrival:
                last_arrival = ev
                continue
            elif t is Padding or t is Repeat:
                if collect:
                    add(ev)
                mixed = True
                filled += ev.length
            elif t is Horizon:
                self.horizon = ev
                break
            else:
                continue
            if filled >= R:
                if filled > R:
                    raise InputError(f"the packer overfilled a row ({filled} > capacity {R}) at {ev!r}")
                filled = 0
                got += 1
                kept = len(evs)
                self._boundary_events = base + k
                if got == n:
                    break
        self._pulled = base + k
        self._filled = filled
        self.rows += got
        if last_arrival is not None:
            self.epoch = last_arrival.pass_index + 1
            self.last_source = last_arrival.source
        if len(evs) > kept:  # an incomplete last row is never a training row
            del evs[kept:]
        return evs, got, mixed

    @property
    def ended(self) -> bool:
        """The packer's stream has ended (its Horizon was consumed)."""
        return self.horizon is not None

    def __iter__(self) -> Iterator[PackedBatch]:
        return self

    def __next__(self) -> PackedBatch:
        batch = self.next_batch(self.batch_rows)
        if batch is None:
            raise StopIteration
        return batch

    def next_batch(self, n: int | None = None) -> PackedBatch | None:
        """The next batch of ``n`` rows (default ``batch_rows``); ``None`` when the stream is over.

        A final batch with fewer rows is returned unless ``drop_last``.
        """
        n = self.batch_rows if n is None else check_int("n", n, 1)
        if self.finished:
            raise InputError("the stream was finished (finish() closed the ledger); start a new one")
        batch = self.order.next_batch(n, self.drop_last) if self.order else self._rows(n, self.drop_last)
        self.batches += batch is not None
        return batch

    def _rows(self, n: int, drop_last: bool) -> PackedBatch | None:
        if self.max_rows is not None:
            n = min(n, self.max_rows - self.rows)
        if n <= 0 or self.ended:
            return None
        evs, got, mixed = self._take(n, True)
        if got == 0 or (got < n and drop_last):
            return None
        table = pieces_from_events(evs, self.capacity, mixed=mixed)
        return PackedBatch.build(table, got, self.documents, self.capacity, self.options)

    def skip_rows(self, n: int) -> int:
        """Consume ``n`` rows without building records (the monitor and ledger see them); return the count."""
        n = check_int("n", n, 0)
        return self._take(n, False)[1] if self.order is None else self.order.skip(n)

    # ------------------------------------------------------------------ state

    def _capture(self) -> EngineState | None:
        """Ask the engine for its state at the current row boundary (pulls one event ahead)."""
        if self.spec.kind != "engine" or self.ended:
            return None
        if self._state_rows == self.rows and self._engine_state is not None:
            return self._engine_state
        if self._filled:
            raise InputError("the stream stands inside a row: a state exists only at a row boundary")
        assert self._pending is None and self._run is not None
        self._run.request_state()
        ledger = self.ledger.feed if self.ledger is not None else None
        monitor = self.monitor.feed if self.monitor is not None else None
        while True:
            before = self._pulled
            ev = next(self._it, None)
            if ev is None:
                raise AssertionError("the engine ended without a Horizon")
            self._pulled += 1
            if self._run.captured_at == before - self._run_base:  # the run counts its own events
                self._pending = ev
                break
            # the crop's trailing Discard / BosAdded events belong before the boundary
            if type(ev) in (Placement, Padding, Repeat, Horizon):
                raise AssertionError(f"row event {ev!r} before the engine reached the row boundary")
            if ledger is not None:
                ledger(ev)
            if monitor is not None:
                monitor(ev)
        self._engine_state = self._run.state
        self._state_rows = self.rows
        assert self._engine_state is not None and self._engine_state.row == self.rows
        return self._engine_state

    def state(self, *, light: bool = False) -> LoaderState:
        """The :class:`LoaderState` at the current row boundary (JSON-serialisable).

        For a streaming engine this pulls the engine up to the boundary
        (a crop's trailing events) and copies its buffer, O(B); the rows that
        follow are unchanged. ``light=True`` records only the counters, O(1):
        resuming from it replays the packer up to the saved row (O(rows)), and
        checks the replay against the event count only (ordered streams: see ``adapters.order``).
        """
        return self._identity_state(light) if self.order is None else self.order.state(light, self.batches)

    def _identity_state(self, light: bool) -> LoaderState:
        light = light and self._boundary_events >= 0  # unknown right after a direct resume: take a full state
        engine = None if light else self._capture()
        cursor = None
        if engine is not None:
            position = engine.cursor.position
            shard, offset = self.documents.locate(min(position, len(self.documents)))
            cursor = {
                "pass_index": engine.cursor.pass_index,
                "position": position,
                "shard_index": shard,
                "token_offset": offset,
            }
        events = self._boundary_events if light else self._pulled - (1 if self._pending is not None else 0)
        return LoaderState(
            policy=self.spec.descriptor,
            rows=self.rows,
            batches=self.batches,
            events=events,
            epoch=self.epoch,
            last_source=self.last_source,
            engine=engine,
            cursor=cursor,
            documents=self.fingerprint,
            ledger=None
            if self.ledger is None
            else {"mode": "replay", "policy": self.ledger.policy, "detail": self.ledger.detail},
            monitor=None
            if self.monitor is None
            else {**(self._monitor_settings or {}), "report": _jsonable(self.monitor.result().to_dict())},
            ended=self.ended,
            extra={"light": True} if light else {},
        )

    def _resume(self, state: LoaderState) -> None:
        if not isinstance(state, LoaderState):
            raise InputTypeError(f"resume must be a LoaderState, got {type(state).__name__}")
        if state.documents != self.fingerprint:
            raise InputError(
                f"cannot resume: the state was saved over documents {state.documents}, these are "
                f"{self.fingerprint}"
            )
        if state.policy != self.spec.descriptor:
            raise InputError(
                f"cannot resume: the state was saved with policy {state.policy}, this stream has "
                f"{self.spec.descriptor}"
            )
        if state.cursor is not None:
            where = self.documents.locate(min(state.cursor["position"], len(self.documents)))
            if where != (state.cursor["shard_index"], state.cursor["token_offset"]):
                raise InputError(
                    f"cannot resume: cursor position {state.cursor['position']} is at {where} in "
                    f"these documents, the state says ({state.cursor['shard_index']}, "
                    f"{state.cursor['token_offset']})"
                )
        light = bool(state.extra.get("light"))
        direct = self.spec.kind == "engine" and self.ledger is None and self.monitor is None
        if direct and state.engine is not None and not state.ended and not light and state.checksums != {}:
            # a state parsed from a document without checksums takes the replay path below
            self._check_direct(state, state.engine)
            self._it = self._start(state.engine)
            self.rows, self.batches, self.epoch = state.rows, state.batches, state.epoch
            self.last_source = state.last_source
            self._pulled = self._run_base = state.events  # event counts stay absolute across resumes
            self._boundary_events = -1
            return
        # replay from the start to the saved boundary, feeding the ledger and the monitor
        self._it = self._start(None)
        while self.rows < state.rows:
            if self.skip_rows(state.rows - self.rows) == 0:
                break
        if state.ended and self.rows == state.rows:
            self.skip_rows(1)  # consume the stream's end, as the saved run did
        if self.rows != state.rows:
            raise InputError(
                f"cannot resume: the replay ends after {self.rows} rows, the state is at row {state.rows}"
            )
        if light:
            if self._boundary_events != state.events and not state.ended:
                raise InputError(
                    f"cannot resume: the replay consumed {self._boundary_events} events up to row "
                    f"{state.rows}, the state says {state.events}"
                )
            self.batches = state.batches
            return
        replayed = self._capture()
        if self.spec.kind == "engine" and replayed != state.engine:
            raise InputError(
                "cannot resume: replaying this configuration does not reach the saved engine state "
                "(another corpus order, configuration or library version)"
            )
        events = self._pulled - (1 if self._pending is not None else 0)
        if events != state.events:
            raise InputError(
                f"cannot resume: the replay consumed {events} events up to row {state.rows}, the "
                f"state says {state.events}"
            )
        self.batches = state.batches
        report = None if self.monitor is None else _jsonable(self.monitor.result().to_dict())
        if report is not None and state.monitor is not None and report != state.monitor.get("report", report):
            raise InputError("cannot resume: the replayed monitor disagrees with the saved report")

    def _check_direct(self, state: LoaderState, engine: EngineState) -> None:
        """Refuse a state the direct resume cannot trust: an edited field, or counters that disagree.

        The replay path compares the replayed engine state with the saved
        one; the direct path has no replay, so it checks each field's checksum
        (:func:`~packing_theory.adapters.state.field_checksums`), the engine
        state against the documents (:func:`~packing_theory.engine.state.check_state`)
        and the loader's counters against the engine's. O(B).
        """
        if self._edited is not None:
            raise InputError(f"cannot resume: the state's field {self._edited!r} does not match its recorded "
                             "checksum (edited or corrupted)")
        config = self.spec.config
        assert config is not None
        check_state(engine, self.lengths, config)
        if state.rows != engine.row:
            raise InputError(f"cannot resume: rows is {state.rows}, engine.row is {engine.row}")
        cursor = state.cursor
        if cursor is not None and (cursor["pass_index"], cursor["position"]) != engine.cursor[:2]:
            raise InputError(f"cannot resume: cursor (pass {cursor['pass_index']}, position "
                             f"{cursor['position']}) differs from engine.cursor {tuple(engine.cursor[:2])}")
        n = int(self.lengths.size)
        arrived = engine.next_occurrence
        epoch, last_source = ((arrived - 1) // n + 1, (arrived - 1) % n) if arrived else (1, -1)
        if (state.epoch, state.last_source) != (epoch, last_source):
            raise InputError(f"cannot resume: epoch {state.epoch} and last_source {state.last_source} are "
                             f"not those of arrival {arrived - 1} (epoch {epoch}, source {last_source})")
        if state.events < arrived + state.rows:  # one Arrival per occurrence, a Placement per row at least
            raise InputError(f"cannot resume: events is {state.events}, fewer than the {arrived} arrivals "
                             f"and {state.rows} rows it covers")

    # ------------------------------------------------------------------ the audit

    def monitor_report(self) -> MonitorReport | None:
        """The embedded monitor's report so far (``None`` without a monitor)."""
        return None if self.monitor is None else self.monitor.result()

    def finish(self) -> Aggregates:
        """Close the ledger at the current row boundary and return its :class:`Aggregates`.

        The audit covers exactly the rows yielded so far. The stream cannot be
        iterated afterwards.

        Raises:
            ValueError: no embedded ledger, or the stream stands inside a row.
        """
        if self.ledger is None:
            raise InputError("finish() needs an embedded ledger (PackedStream(..., ledger=True))")
        check_closable(self.order, self.finished)
        if not self.finished:
            if not self.ended:
                if self.spec.kind == "engine":
                    engine = self._capture()
                    assert engine is not None
                    buffered = engine.buffer
                else:
                    assert self._tracker is not None
                    buffered = self._tracker.result()
                horizon = Horizon(self.rows, 0, "rows", buffered)
                self.ledger.feed(horizon)
                if self.monitor is not None:
                    self.monitor.feed(horizon)
                self.horizon = horizon
            self.finished = True
        return self.ledger.result()

    def audit(self) -> dict[str, Any]:
        """A JSON-ready audit of what was yielded: ledger aggregates, monitor report, counters."""
        out: dict[str, Any] = {
            "policy": self.spec.descriptor,
            "rows": self.rows,
            "batches": self.batches,
            "capacity": self.capacity,
            "documents": self.fingerprint,
            "epoch": self.epoch,
            "order": None if self.order is None else self.order.audit(),
        }
        if self.ledger is not None:
            out["ledger"] = self.finish().to_dict()
        if self.monitor is not None:
            out["monitor"] = self.monitor.result().to_dict()
        return out


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def _rebuild_monitor(settings: dict[str, Any] | None) -> MonitorSpec:
    if settings is None:
        return None
    mode = settings.get("on_violation", "record")
    if mode not in ("record", "raise"):
        raise InputError(f"malformed monitor settings in the state: {settings!r}")
    if "capacity" in settings:
        return InvariantMonitor(
            settings["capacity"],
            settings["min_buffer"],
            on_violation=mode,
            segmented=bool(settings.get("segmented", False)),
        )
    return mode  # type: ignore[no-any-return]
