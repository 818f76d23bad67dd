"""What an :class:`~packing_theory.invariant.monitor.InvariantMonitor` reports, and where it checks nothing.

* :class:`MonitorReport` — the monitor's result (``packing-theory check --json``
  prints it).
* :data:`OUTSIDE_FAMILY` — the streaming policies the proposition does not
  cover by design, each with the sentence that says why.
* :data:`ViolationHandler` — the type of an ``on_violation`` callback.

>>> sorted(OUTSIDE_FAMILY), OUTSIDE_FAMILY["bounded-wait"].startswith("not applicable: ")
(['bounded-wait'], True)
>>> MonitorReport(4, 3, 1, 4, 3, 2, 16, 0).to_dict()["selections_checked"]
3
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..engine.policies import STREAMING_POLICIES
from .protected import Violation

__all__ = ["OUTSIDE_FAMILY", "MonitorReport", "ViolationHandler"]

OUTSIDE_FAMILY: dict[str, str] = {
    name: f"not applicable: {p.family}" for name, p in STREAMING_POLICIES.items() if not p.protected_set
}
"""Policies to which the protected-set proposition does not apply by design, with the reason: the
policy's declared family sentence (:data:`~packing_theory.engine.policies.STREAMING_POLICIES`).

:meth:`InvariantMonitor.for_packer` builds a monitor that checks nothing for
them and says why (``result().applicable`` is ``False``)."""

ViolationHandler = Callable[[Violation], None]
"""A callback receiving each :class:`~packing_theory.invariant.protected.Violation`."""



@dataclass
class MonitorReport:
    """What a monitor saw (``packing-theory check --json`` prints this)."""

    selections: int
    selections_checked: int
    selections_outside: int
    arrivals: int
    long_arrivals: int
    protected_size: int
    protected_mass: int
    violations: int
    first_violation: dict[str, Any] | None = field(default=None)
    applicable: bool = True
    not_applicable: str | None = None
    misuses: int = 0
    first_misuse: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)
