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
    audit/ evaluation/ adapters/ testing   consumers of the event stream; test helpers
    invariant/               the protected set, the monitor, bounds, strategies
    registry                 one entry per packer (streaming policies and peers), build_packer
    peers/ corpus/ contamination/   other packers; arrival streams and readers; overlap scans
    engine/                  events, policies, buffer, Packer, ReferencePacker, compiled engine
    reporting/               report files: writer, lock, manifest, plot loader, progress
    _checks, lengths, errors foundation

The package root re-exports the entry points only: the packers and
:func:`replay`, :func:`build_packer`, the event types a consumer reads,
:func:`feed_all` and the :class:`Consumer` protocol, the audits, the monitor,
the corollary bounds and the exception hierarchy, so notebooks need only
``import packing_theory as pt``. Everything else is imported from its
subpackage (``packing_theory.engine.FastBuffer``, ...); strategies and test
helpers live in :mod:`packing_theory.testing`. The public surface is frozen in
``tests/data/public_api.json`` (``tests/test_api.py``).

>>> import packing_theory as pt
>>> rep = pt.replay([5, 3, 9, 4], capacity=8, min_buffer=2, refill=2)
>>> s = rep.summary()
>>> s.sources_started, s.rows, s.stop_reason, s.buffered_tokens
(3, 1, 'exhausted', 9)
"""

from . import _startup  # noqa: F401  (first: Ctrl-C while the command starts is one line; see its docstring)
from ._version import __version__
from .audit import Ledger, StreamLedger, audit_events, audit_lengths
from .engine import (
    Arrival,
    BosAdded,
    BufferedSpan,
    CompiledPacker,
    Consumer,
    Discard,
    Event,
    EventBatch,
    Exhausted,
    Filtered,
    Horizon,
    Packer,
    PackerConfig,
    Padding,
    Placement,
    ReferencePacker,
    Repeat,
    feed_all,
    replay,
)
from .errors import Finding, InputError, InputTypeError, MissingDependency, NotMeasured, PackingTheoryError
from .invariant import InvariantMonitor, InvariantViolation
from .invariant.bounds import earliest_pass, mass_lower_bound, repeated_corpus_table, startup_bound
from .orchestration import run_audit
from .registry import build_packer

__all__ = [
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "CompiledPacker",
    "Consumer",
    "Discard",
    "Event",
    "EventBatch",
    "Exhausted",
    "Filtered",
    "Finding",
    "Horizon",
    "InputError",
    "InputTypeError",
    "InvariantMonitor",
    "InvariantViolation",
    "Ledger",
    "MissingDependency",
    "NotMeasured",
    "Packer",
    "PackerConfig",
    "PackingTheoryError",
    "Padding",
    "Placement",
    "ReferencePacker",
    "Repeat",
    "StreamLedger",
    "__version__",
    "audit_events",
    "audit_lengths",
    "build_packer",
    "earliest_pass",
    "feed_all",
    "mass_lower_bound",
    "repeated_corpus_table",
    "replay",
    "run_audit",
    "startup_bound",
]
