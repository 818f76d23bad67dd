"""A loader's checkpoint: everything needed to continue its row stream exactly, as JSON.

:class:`LoaderState` holds, at a row boundary:

* the packer's identity (streaming config fingerprint, or peer name and options);
* the engine state (:class:`~packing_theory.engine.state.EngineState`: buffer,
  refill cursor, row counter, next occurrence, the ``random-span`` RNG state)
  for the streaming engines; ``None`` for peers;
* the source cursor: the refill cursor's pass and ``position`` (documents
  taken in that pass) and the same point as seed 002's
  ``(shard_index, token_offset)`` pair;
* the row, batch and event counters, the epoch the last refill came from;
* how to rebuild the embedded ledger and monitor, and the document
  collection's fingerprint (a resumed run must read the same corpus).

**Ledger and monitor state are rebuilt by replay, not serialised.** On
resume the loader replays the packer from the start to the saved row,
feeding the events to a fresh ledger and monitor, then checks that the
replayed engine state equals the saved one. Why replay rather than a pickle:
the state stays plain JSON (no code runs when a checkpoint is loaded); it
does not depend on the ledger's or the monitor's internals (the ledger's
storage is being rewritten, and the monitor holds a read-only mapping view
that cannot be pickled); and the check turns a checkpoint written against
another corpus or configuration into an error instead of a silently wrong
audit. The price is O(rows so far) engine time at resume. Without an
embedded ledger or monitor a streaming engine resumes from the engine state
directly, in O(B).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_int
from .._files import check_tree, load_json
from ..engine.state import EngineState
from ..errors import InputError

__all__ = ["LOADER_STATE_FORMAT", "LoaderState", "field_checksums"]

LOADER_STATE_FORMAT = "packing-theory/loader-state"
_VERSION = 1
_UNCHECKED = ("format", "version", "checksums")


def field_checksums(doc: Mapping[str, Any]) -> dict[str, str]:
    """A short SHA-256 of every field of a loader-state document (``engine.<field>`` for the engine's).

    Written beside the fields by :meth:`LoaderState.to_json`, so that a field
    edited by hand or corrupted on disk is found and named when the state is
    resumed. It is a checksum, not a signature: whoever edits a field and
    recomputes its checksum is stopped only by the consistency checks. O(size
    of the document).

    >>> field_checksums({"rows": 3, "engine": None})
    {'engine': '74234e98afe7498f', 'rows': '4e07408562bedb8b'}
    """

    def digest(value: Any) -> str:
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    out: dict[str, str] = {}
    for key, value in doc.items():
        if key in _UNCHECKED:
            continue
        if key == "engine" and isinstance(value, dict):
            out.update((f"engine.{k}", digest(v)) for k, v in value.items() if k not in _UNCHECKED)
        else:
            out[key] = digest(value)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class LoaderState:
    """A loader's state at a row boundary (after :attr:`rows` complete rows).

    Attributes:
        policy: the packer's descriptor (:class:`~packing_theory.adapters.policy.PolicySpec`).
        rows: complete rows yielded.
        batches: batches yielded.
        events: events the loader consumed before the boundary.
        epoch: 1-based corpus pass of the last refill (autoresearch's ``epoch``).
        last_source: source id of the last arrival (``-1`` before any).
        engine: the streaming engine's state, ``None`` for a peer.
        cursor: ``{"pass_index", "position", "shard_index", "token_offset"}``
            of the refill cursor (``None`` for a peer).
        documents: the document collection's fingerprint.
        ledger, monitor: how to rebuild them (``None`` when not embedded).
        ended: the packer's stream has ended.
        extra: loader-specific fields (JSON-ready).
        checksums: the :func:`field_checksums` a parsed document carried
            (``{}`` for a document without them; ``None`` for a state built in
            memory); not part of equality.
    """

    policy: dict[str, Any]
    rows: int
    batches: int
    events: int
    epoch: int
    last_source: int
    engine: EngineState | None
    cursor: dict[str, int] | None
    documents: dict[str, Any]
    ledger: dict[str, Any] | None = None
    monitor: dict[str, Any] | None = None
    ended: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    checksums: dict[str, str] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> str:
        """The state as one JSON document."""
        doc = {
            "format": LOADER_STATE_FORMAT,
            "version": _VERSION,
            "policy": self.policy,
            "rows": self.rows,
            "batches": self.batches,
            "events": self.events,
            "epoch": self.epoch,
            "last_source": self.last_source,
            "engine": None if self.engine is None else json.loads(self.engine.to_json()),
            "cursor": self.cursor,
            "documents": self.documents,
            "ledger": self.ledger,
            "monitor": self.monitor,
            "ended": self.ended,
            "extra": self.extra,
        }
        doc["checksums"] = field_checksums(doc)
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)

    def to_bytes(self) -> bytes:
        """:meth:`to_json` as UTF-8 bytes."""
        return self.to_json().encode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> LoaderState:
        """Parse :meth:`to_json` output.

        Raises:
            ValueError: not a loader state, another version, or malformed fields.
        """
        doc = load_json(text, "loader state")
        check_tree(doc, "loader state")  # a state is a few levels deep; a deep one would overflow dumps
        if not isinstance(doc, dict) or doc.get("format") != LOADER_STATE_FORMAT:
            raise InputError(f"not a {LOADER_STATE_FORMAT} document")
        if doc.get("version") != _VERSION:
            raise InputError(
                f"loader state version {doc.get('version')!r} is not supported (this library "
                f"reads version {_VERSION})"
            )
        try:
            engine = None if doc["engine"] is None else EngineState.from_json(json.dumps(doc["engine"]))
            cursor = doc["cursor"]
            if cursor is not None:
                cursor = {
                    k: check_int(f"cursor.{k}", cursor[k], 0)
                    for k in ("pass_index", "position", "shard_index", "token_offset")
                }
            return cls(
                policy=dict(doc["policy"]),
                rows=check_int("rows", doc["rows"], 0),
                batches=check_int("batches", doc["batches"], 0),
                events=check_int("events", doc["events"], 0),
                epoch=check_int("epoch", doc["epoch"], 1),
                last_source=check_int("last_source", doc["last_source"], -1),
                engine=engine,
                cursor=cursor,
                documents=dict(doc["documents"]),
                ledger=None if doc["ledger"] is None else dict(doc["ledger"]),
                monitor=None if doc["monitor"] is None else dict(doc["monitor"]),
                ended=bool(doc["ended"]),
                extra=dict(doc.get("extra") or {}),
                checksums={str(k): str(v) for k, v in dict(doc.get("checksums") or {}).items()},
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"malformed loader state: {exc!r}") from exc

    @classmethod
    def from_bytes(cls, data: bytes) -> LoaderState:
        """Parse :meth:`to_bytes` output."""
        return cls.from_json(data)

    def edited_field(self) -> str | None:
        """The first field whose recorded checksum differs from its value (``None``: all agree).

        A state built in memory, or parsed from a document without checksums,
        has nothing to compare (``None``). O(size of the state).
        """
        if not self.checksums:
            return None
        now = field_checksums(json.loads(self.to_json()))
        for name in sorted(set(now) | set(self.checksums)):
            if now.get(name) != self.checksums.get(name):
                return name
        return None
