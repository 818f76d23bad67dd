"""Misuse of the monitor's embedding API: what is refused, and how it is reported.

:class:`~packing_theory.invariant.InvariantMonitor` refuses calls that cannot
describe a real loader without changing any state: in ``on_violation="raise"``
mode it raises :class:`MonitorMisuse` (:class:`MonitorTypeError` for wrong
types), otherwise it records a :class:`Misuse`, counted separately from
invariant violations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import InputError, InputTypeError

__all__ = ["MISUSE_KINDS", "Misuse", "MisuseKind", "MonitorMisuse", "MonitorTypeError"]

MisuseKind = Literal["wrong-type", "bad-value", "out-of-order", "unknown-occurrence", "changed-protected",
                     "not-an-event", "after-horizon"]
MISUSE_KINDS: tuple[MisuseKind, ...] = ("wrong-type", "bad-value", "out-of-order", "unknown-occurrence",
                                        "changed-protected", "not-an-event", "after-horizon")
"""``wrong-type``: a non-integer (e.g. ``None``) where an int is needed; ``bad-value``: an int out of
range; ``out-of-order``: an arrival id not above every earlier one; ``unknown-occurrence``: an
occurrence that never arrived; ``changed-protected``: a protected span changed outside a
selection; ``not-an-event``: :meth:`InvariantMonitor.feed` got something else;
``after-horizon``: an event after the Horizon."""


@dataclass(frozen=True, slots=True)
class Misuse:
    """One refused call of the monitor's API (recorded instead of raised outside ``"raise"`` mode).

    Attributes:
        kind: one of :data:`MISUSE_KINDS`.
        call: the method that refused it (``"on_select"``, ``"feed"``...).
        detail: one line in words, naming the argument and its value.
    """

    kind: MisuseKind
    call: str
    detail: str

    def describe(self) -> str:
        """``"call: detail (kind)"``."""
        return f"{self.call}: {self.detail} ({self.kind})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class MonitorMisuse(InputError):
    """A refused call of the monitor's API (``on_violation="raise"``); ``.misuse`` holds the record."""

    def __init__(self, misuse: Misuse) -> None:
        super().__init__(misuse.describe())
        self.misuse = misuse


class MonitorTypeError(MonitorMisuse, InputTypeError):
    """A :class:`MonitorMisuse` for an argument of the wrong type (also a ``TypeError``)."""
