"""packing_theory: audit which documents a language-model packer trains on.

The library replays streaming packers exactly (:class:`Packer`, with the naive
:class:`ReferencePacker` as its oracle), turns every packer into one stream of
placement events (:mod:`packing_theory.spans`), and summarises, checks and
audits that stream.

>>> import packing_theory as pt
>>> rep = pt.replay([5, 3, 9, 4], capacity=8, min_buffer=2, refill=2)
>>> s = rep.summary()
>>> s.sources_started, s.rows, s.stop_reason, s.buffered_tokens
(3, 1, 'exhausted', 9)
"""

from .audit import Ledger, audit_events, audit_lengths, run_audit
from .bounds import earliest_pass, mass_lower_bound, repeated_corpus_table, startup_bound
from .buffer import FastBuffer
from .invariant import InvariantMonitor, InvariantViolation, MonitoredBuffer, ProtectedSet
from .packer import Engine, Packer, Replay, make_packer, replay
from .policies import POLICIES, PackerConfig, Policy
from .reference import ReferencePacker
from .spans import (
    Arrival,
    BosAdded,
    BufferedSpan,
    Discard,
    Event,
    EventSource,
    Exhausted,
    Filtered,
    Horizon,
    Padding,
    Placement,
    Repeat,
)
from .summary import ReplaySummary, SummaryAccumulator, summarize

__version__ = "0.1.0"

__all__ = [
    "POLICIES",
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "Discard",
    "Engine",
    "Event",
    "EventSource",
    "Exhausted",
    "FastBuffer",
    "Filtered",
    "Horizon",
    "InvariantMonitor",
    "InvariantViolation",
    "Ledger",
    "MonitoredBuffer",
    "Packer",
    "PackerConfig",
    "Padding",
    "Placement",
    "Policy",
    "ProtectedSet",
    "ReferencePacker",
    "Repeat",
    "Replay",
    "ReplaySummary",
    "SummaryAccumulator",
    "__version__",
    "audit_events",
    "audit_lengths",
    "earliest_pass",
    "make_packer",
    "mass_lower_bound",
    "repeated_corpus_table",
    "replay",
    "run_audit",
    "startup_bound",
    "summarize",
]
