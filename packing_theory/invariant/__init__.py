"""The protected-set invariant (seed 000 §3) as executable predicates, a monitor and bounds.

=================  ===========================================================
module             job
=================  ===========================================================
``protected``      the protected set ``K`` (incremental and naive), violation
                   reports, the full-state predicate over a buffer snapshot
``tracker``        :class:`BufferTracker`: a streaming engine's buffer rebuilt
                   from its events
``monitor``        :class:`InvariantMonitor`: the invariant checked on every
                   selection, from events or from a loader's callbacks
``report``         :class:`MonitorReport` (the monitor's result) and
                   :data:`OUTSIDE_FAMILY` (the policies it checks nothing for)
``embedding``      :class:`MonitoredBuffer`: a list buffer another loader embeds
``wait_bound``     :class:`StartDelayMonitor`: the bounded-wait theorem as an
                   executable predicate (the policy outside the family by design)
``misuse``         :class:`Misuse`, :class:`MonitorMisuse`: refused calls of the
                   embedding API (recorded apart from violations)
``bounds``         the startup, mass and repeated-corpus corollaries
``strategies``     public hypothesis strategies (needs hypothesis; not imported here)
=================  ===========================================================

**Proposition.** For the ``discard`` and ``continue`` loaders, at every
selection boundary with at least ``B`` buffered spans, every member of ``K``
(the ``min(B - 1, N_L)`` largest long keys ``(L, i)`` arrived so far) is
buffered, unchanged and unstarted. ``K`` means this set and nothing else
throughout the library.

Imports: the engine and the foundation only.

>>> from packing_theory import replay
>>> mon = InvariantMonitor(capacity=4, min_buffer=3)
>>> rep = replay([9, 2, 7, 8, 1, 3, 5], capacity=4, min_buffer=3, refill=1, on_event=mon.feed)
>>> sorted(mon.protected), mon.selections_checked, mon.violation_count
([0, 3], 5, 0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .embedding import MonitoredBuffer
    from .misuse import Misuse, MonitorMisuse, MonitorTypeError
    from .monitor import InvariantMonitor
    from .protected import (
        VIOLATION_KINDS,
        BufferSummary,
        InvariantViolation,
        ProtectedSet,
        Violation,
        ViolationKind,
        protected_invariant_holds,
        protected_keys,
        protected_set,
        protected_violations,
        summarize_buffer,
    )
    from .report import OUTSIDE_FAMILY, MonitorReport
    from .tracker import BufferTracker

__all__ = [
    "OUTSIDE_FAMILY",
    "VIOLATION_KINDS",
    "BufferSummary",
    "BufferTracker",
    "InvariantMonitor",
    "InvariantViolation",
    "Misuse",
    "MonitorMisuse",
    "MonitorReport",
    "MonitorTypeError",
    "MonitoredBuffer",
    "ProtectedSet",
    "Violation",
    "ViolationKind",
    "protected_invariant_holds",
    "protected_keys",
    "protected_set",
    "protected_violations",
    "summarize_buffer",
]

lazy_package(__name__, {
    ".embedding": ("MonitoredBuffer",),
    ".misuse": ("Misuse", "MonitorMisuse", "MonitorTypeError"),
    ".monitor": ("InvariantMonitor",),
    ".protected": ("VIOLATION_KINDS", "BufferSummary", "InvariantViolation", "ProtectedSet", "Violation",
                   "ViolationKind", "protected_invariant_holds", "protected_keys", "protected_set",
                   "protected_violations", "summarize_buffer"),
    ".report": ("OUTSIDE_FAMILY", "MonitorReport"),
    ".tracker": ("BufferTracker",),
})
