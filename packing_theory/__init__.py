"""packing_theory: audit which documents a language-model packer trains on.

The library replays streaming packers exactly (:class:`Packer`, with the naive
:class:`ReferencePacker` as its oracle), turns every packer into one stream of
placement events (:mod:`packing_theory.engine.events`), and summarises, checks and
audits that stream.

Layout (arrows point down; see the architecture page of the docs)::

    cli/                     the packing-theory command
    distributed/             census and per-rank audits on local processes or Dask
    rendering/               JSON, Markdown and PNG documents of an audit or a comparison
    orchestration/           one corpus under several packers (run_audit, compare_packers)
    audit/ evaluation/ adapters/     consumers of the event stream
    invariant/               the protected set, the monitor, bounds, strategies
    peers/ corpus/           other packers; arrival streams
    engine/                  events, policies, buffer, Packer, ReferencePacker
    reporting/               report files: writer, lock, manifest, plot loader, progress
    _checks, lengths         foundation

Every name below is re-exported here, so notebooks need only
``import packing_theory as pt``.

>>> import packing_theory as pt
>>> rep = pt.replay([5, 3, 9, 4], capacity=8, min_buffer=2, refill=2)
>>> s = rep.summary()
>>> s.sources_started, s.rows, s.stop_reason, s.buffered_tokens
(3, 1, 'exhausted', 9)
"""

from . import _aliases
from ._version import __version__
from .audit import Ledger, StreamLedger, audit_events, audit_lengths
from .engine import (
    POLICIES,
    Arrival,
    BosAdded,
    BufferedSpan,
    CompiledPacker,
    Consumer,
    Discard,
    Engine,
    Event,
    EventBatch,
    EventSource,
    Exhausted,
    FastBuffer,
    Filtered,
    Horizon,
    LengthChunks,
    Packer,
    PackerConfig,
    PackingEngine,
    Padding,
    Placement,
    Policy,
    ReferencePacker,
    Repeat,
    Replay,
    ReplaySummary,
    SummaryAccumulator,
    feed_all,
    make_packer,
    replay,
    summarize,
)
from .errors import Finding, InputError, InputTypeError, MissingDependency, NotMeasured, PackingTheoryError
from .invariant import InvariantMonitor, InvariantViolation, MonitoredBuffer, ProtectedSet
from .invariant.bounds import earliest_pass, mass_lower_bound, repeated_corpus_table, startup_bound
from .orchestration import run_audit
from .registry import build_packer

_aliases.install()


__all__ = [
    "POLICIES",
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "CompiledPacker",
    "Consumer",
    "Discard",
    "Engine",
    "Event",
    "EventBatch",
    "EventSource",
    "Exhausted",
    "FastBuffer",
    "Filtered",
    "Finding",
    "Horizon",
    "InputError",
    "InputTypeError",
    "InvariantMonitor",
    "InvariantViolation",
    "Ledger",
    "LengthChunks",
    "MissingDependency",
    "MonitoredBuffer",
    "NotMeasured",
    "Packer",
    "PackerConfig",
    "PackingEngine",
    "PackingTheoryError",
    "Padding",
    "Placement",
    "Policy",
    "ProtectedSet",
    "ReferencePacker",
    "Repeat",
    "Replay",
    "ReplaySummary",
    "StreamLedger",
    "SummaryAccumulator",
    "__version__",
    "audit_events",
    "audit_lengths",
    "build_packer",
    "earliest_pass",
    "feed_all",
    "make_packer",
    "mass_lower_bound",
    "repeated_corpus_table",
    "replay",
    "run_audit",
    "startup_bound",
    "summarize",
]
