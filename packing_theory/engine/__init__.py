"""The engine: an arrival stream in, the placement event stream out.

=================  ===========================================================
module             job
=================  ===========================================================
``events``         the event types every packer emits (the one interface)
``batches``        :class:`EventBatch`: the same stream in numpy columns
``consumers``      :class:`Consumer`, the protocol of every event consumer, and
                   :func:`feed_all`, several consumers fed in one pass
``base``           :class:`PackingEngine`, what every engine offers (the façade)
``policies``       :class:`PackerConfig`, the policies and the rules both
                   engines share (refill batches, segmentation, crop outcomes)
``buffer``         :class:`FastBuffer`, O(log n) largest-fit / shortest queries
``packer``         :class:`Packer`, the fast engine
``reference``      :class:`ReferencePacker`, the loaders' loop transcribed (the oracle)
``compiled``       :class:`CompiledPacker`, the numba engine (optional ``fast`` extra)
``rows``           rows of placements (an audit's view) and of token ids (a trainer's)
``replay``         :func:`make_packer`, :func:`replay` and the in-memory :class:`Replay`
``summary``        :class:`SummaryAccumulator`, the replay's mass and source summary
``starts``         :class:`StartTracker`, arrival and first-start rows (start delays)
``delays``         :class:`~packing_theory.engine.delays.DelayCounts`, the start delays' histogram
``variants``       out-of-family variants for the invariant's counterexamples
=================  ===========================================================

Imports: the foundation (``packing_theory._checks``, ``packing_theory.lengths``)
only. Nothing in the engine imports a consumer (invariant, audit, evaluation,
adapters, cli).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .base import PackingEngine
    from .batches import EventBatch, EventItem, LengthChunks, batched, unbatched
    from .buffer import FastBuffer
    from .compiled import CompiledPacker
    from .consumers import Consumer, ConsumerSettings, consumer_settings, feed_all
    from .events import (
        STOP_REASONS,
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
        fill_length,
    )
    from .packer import Packer
    from .policies import EXHAUSTED_MODES, POLICIES, RANDOM_SPAN_SEED, ExhaustedMode, PackerConfig, Policy
    from .reference import ReferencePacker
    from .replay import ENGINES, Engine, Replay, make_packer, replay
    from .rows import RowEvent, group_rows, token_rows
    from .starts import StartTracker
    from .summary import ReplaySummary, SummaryAccumulator, summarize

__all__ = [
    "ENGINES",
    "EXHAUSTED_MODES",
    "POLICIES",
    "RANDOM_SPAN_SEED",
    "STOP_REASONS",
    "Arrival",
    "BosAdded",
    "BufferedSpan",
    "CompiledPacker",
    "Consumer",
    "ConsumerSettings",
    "Discard",
    "Engine",
    "Event",
    "EventBatch",
    "EventItem",
    "EventSource",
    "Exhausted",
    "ExhaustedMode",
    "FastBuffer",
    "Filtered",
    "Horizon",
    "LengthChunks",
    "Packer",
    "PackerConfig",
    "PackingEngine",
    "Padding",
    "Placement",
    "Policy",
    "ReferencePacker",
    "Repeat",
    "Replay",
    "ReplaySummary",
    "RowEvent",
    "StartTracker",
    "SummaryAccumulator",
    "batched",
    "consumer_settings",
    "feed_all",
    "fill_length",
    "group_rows",
    "make_packer",
    "replay",
    "summarize",
    "token_rows",
    "unbatched",
]

lazy_package(__name__, {
    ".base": ("PackingEngine",),
    ".batches": ("EventBatch", "EventItem", "LengthChunks", "batched", "unbatched"),
    ".buffer": ("FastBuffer",),
    ".compiled": ("CompiledPacker",),
    ".consumers": ("Consumer", "ConsumerSettings", "consumer_settings", "feed_all"),
    ".events": ("STOP_REASONS", "Arrival", "BosAdded", "BufferedSpan", "Discard", "Event", "EventSource",
                "Exhausted", "Filtered", "Horizon", "Padding", "Placement", "Repeat", "fill_length"),
    ".packer": ("Packer",),
    ".policies": ("EXHAUSTED_MODES", "POLICIES", "RANDOM_SPAN_SEED", "ExhaustedMode", "PackerConfig",
                  "Policy"),
    ".reference": ("ReferencePacker",),
    ".replay": ("ENGINES", "Engine", "Replay", "make_packer", "replay"),
    ".rows": ("RowEvent", "group_rows", "token_rows"),
    ".starts": ("StartTracker",),
    ".summary": ("ReplaySummary", "SummaryAccumulator", "summarize"),
})
