"""What a packer declares about itself: its knobs and how its row width follows from a sequence length.

Every packer — a streaming policy (:data:`~packing_theory.engine.policies.STREAMING_POLICIES`)
or a peer (:class:`~packing_theory.peers.PeerPacker`) — declares its options as
:class:`Knob` values and its row width as a :class:`RowWidth`. The registry
(:mod:`packing_theory.registry`) collects the declarations; the command line,
``packing-theory policies``, ``compare`` and the trainer adapter read them there.

``capacity`` is always the row width ``R`` (tokens per emitted row). A
framework's own number, its *sequence length* ``L``, maps onto it through the
packer's :class:`RowWidth`: ``R = L`` for most frameworks, ``R = L + 1`` where a
row also holds the last target (the streaming family's ``T + 1``, Megatron's
overlapping samples).

>>> Knob("window", "int", 1000, "the map batch size", optional=True).parse("none") is None
True
>>> RowWidth("R = L + 1", offset=1).capacity(2048, {})
2049
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._checks import check_int
from ..errors import InputError

__all__ = ["KNOB_TYPES", "Knob", "KnobType", "RowWidth"]

KnobType = Literal["int", "float", "bool", "str", "ints", "int-lists"]
KNOB_TYPES: tuple[KnobType, ...] = ("int", "float", "bool", "str", "ints", "int-lists")
"""Knob value types: ``ints`` is an int or a comma-separated sequence of ints (a refill schedule),
``int-lists`` a JSON list of int lists (recorded sampler orders)."""


@dataclass(frozen=True, slots=True)
class Knob:
    """One option of a packer: its name, value type, default and a one-line help.

    Attributes:
        name: the constructor's keyword (``framework_version``); the command line
            spells it ``--peer-option framework_version=...`` or with its own flag.
        type: one of :data:`KNOB_TYPES`.
        default: the value used when the option is not given (what the packer runs with).
        help: one line: what the option means, in the framework's words.
        optional: ``None`` is a valid value (spelled ``none`` on the command line).
        choices: the accepted values, when they are a closed list.
    """

    name: str
    type: KnobType
    default: Any
    help: str
    optional: bool = False
    choices: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in KNOB_TYPES:
            raise InputError(f"knob {self.name!r}: type must be one of {', '.join(KNOB_TYPES)}; "
                             f"got {self.type!r}")

    def parse(self, text: str) -> Any:
        """The value that a command-line string spells (``none``, ``true``, ``12``, ``1.5``, ``a,b``).

        >>> Knob("padding", "bool", False, "pad").parse("true"), Knob("n", "int", 1, "n").parse("1_000")
        (True, 1000)
        >>> Knob("n", "int", 1, "a count").parse("x")
        Traceback (most recent call last):
        packing_theory.InputError: option 'n' must be an int, got 'x'

        Raises:
            InputError: the text does not spell a value of the knob's type.
        """
        raw = text.strip()
        if self.optional and raw.lower() == "none":
            return None
        try:
            if self.type == "int":
                return int(raw.replace("_", ""))
            if self.type == "float":
                return float(raw.replace("_", ""))
            if self.type == "ints":
                parts = [int(p.replace("_", "")) for p in raw.split(",")]
                return parts[0] if len(parts) == 1 else tuple(parts)
            if self.type == "int-lists":
                value = json.loads(raw)
                if not isinstance(value, list) or not all(isinstance(v, list) for v in value):
                    raise ValueError(raw)
                return value
        except (ValueError, RecursionError):  # a JSON value nested past the recursion limit too
            what = {"int": "an int", "float": "a number", "ints": "an int or comma-separated ints",
                    "int-lists": "a JSON list of int lists"}[self.type]
            raise InputError(f"option {self.name!r} must be {what}, got {text!r}") from None
        if self.type == "bool":
            if raw.lower() not in ("true", "false"):
                raise InputError(f"option {self.name!r} must be true or false, got {text!r}")
            return raw.lower() == "true"
        return raw

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (``packing-theory policies --json``)."""
        out: dict[str, Any] = {"type": self.type + (" | None" if self.optional else ""),
                               "default": _jsonable(self.default), "help": self.help}
        if self.choices:
            out["choices"] = list(self.choices)
        return out


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


class RowWidth:
    """How a packer's row width ``R`` follows from its framework's sequence length ``L``.

    ``R = L + offset``; with ``power_of_two`` the framework accepts only powers of
    two for ``L``. Packers whose width also depends on a knob (Axolotl's bins)
    subclass this and override :meth:`capacity` and :meth:`seq_length`.

    Args:
        rule: the sentence that states the relation (shown by ``packing-theory policies``).
        offset: ``R - L``.
        power_of_two: ``L`` must be a power of two.

    >>> w = RowWidth("R = L, a power of two", power_of_two=True)
    >>> w.capacity(16, {}), w.seq_length(16, {}), w.admissible(2048), w.admissible(2000)
    (16, 16, 2048, 1024)
    """

    __slots__ = ("offset", "power_of_two", "rule")

    def __init__(self, rule: str, *, offset: int = 0, power_of_two: bool = False) -> None:
        self.rule = rule
        self.offset = offset
        self.power_of_two = power_of_two

    def __repr__(self) -> str:
        return f"RowWidth({self.rule!r})"

    def capacity(self, seq_length: int, knobs: Mapping[str, Any]) -> int:
        """The row width ``R`` for sequence length ``seq_length`` under the given knobs (defaults filled)."""
        return check_int("seq_length", seq_length, 1) + self.offset

    def seq_length(self, capacity: int, knobs: Mapping[str, Any]) -> int:
        """The framework's sequence length for row width ``capacity`` (the inverse of :meth:`capacity`)."""
        return check_int("capacity", capacity, 1) - self.offset

    def admissible(self, seq_length: int) -> int:
        """The largest sequence length ``<= seq_length`` the framework accepts (a power of two if need be)."""
        L = check_int("seq_length", seq_length, 1)
        return 1 << (L.bit_length() - 1) if self.power_of_two else L
