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

from .buffer import FastBuffer
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
    Horizon,
    Placement,
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
    "Horizon",
    "Packer",
    "PackerConfig",
    "Placement",
    "Policy",
    "ReferencePacker",
    "Replay",
    "ReplaySummary",
    "SummaryAccumulator",
    "__version__",
    "make_packer",
    "replay",
    "summarize",
]
