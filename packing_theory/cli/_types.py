"""The value types of the command line's options: each parses one string and checks its range.

Every range check of the command line lives here, in the option's type
(:mod:`packing_theory.cli._options` names one type per option), never again in
a command's ``run``: a bad value is a usage error naming the option and the
value (``argument --min-buffer: --min-buffer must be >= 1, got 0``), exit 2.
The types import nothing heavy at module level (``--help`` imports this
module); the two that need the registry or the bounds import it when called.

>>> int_range("--min-buffer", 1)("64")
64
>>> refill("128,60")
(128, 60)
>>> peer_option("trl-bfd:window=500")
PeerOption(policy='trl-bfd', key='window', value='500')
>>> peer_option("window=500")  # the spelling without a packer: every measured peer that takes it
PeerOption(policy=None, key='window', value='500')
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import NamedTuple

__all__ = [
    "PeerOption",
    "counts",
    "document_id",
    "existing_path",
    "float_range",
    "int_list",
    "int_range",
    "peer_option",
    "policy_list",
    "refill",
]


class int_range:
    """An int ``>= minimum`` (and ``<= maximum``), else a usage error naming ``option`` and the value.

    >>> int_range("--capacity", 2, 2**24)("1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --capacity must be >= 2, got 1
    >>> int_range("--capacity", 2, 2**24)(str(10**20))
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --capacity must be <= 16,777,216, got 100,000,000,000,000,000,000
    """

    __name__ = "int"  # argparse names the type in its own messages

    def __init__(self, option: str, minimum: int, maximum: int | None = None) -> None:
        self.option, self.minimum, self.maximum = option, minimum, maximum

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{self.option} must be an int, got {text!r}") from None
        if value < self.minimum:
            raise argparse.ArgumentTypeError(f"{self.option} must be >= {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise argparse.ArgumentTypeError(f"{self.option} must be <= {self.maximum:,}, got {value:,}")
        return value

    def __repr__(self) -> str:
        return f"int_range({self.option!r}, {self.minimum}, {self.maximum})"


class float_range:
    """A finite float in ``[low, high]`` (``(`` / ``)`` where open), else a usage error naming ``option``.

    >>> float_range("--level", 0, 1, open_low=True, open_high=True)("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --level must be a number in (0, 1), got 'nan'
    """

    __name__ = "float"

    def __init__(self, option: str, low: float, high: float, *, open_low: bool = False,
                 open_high: bool = False) -> None:
        self.option, self.low, self.high = option, low, high
        self.open_low, self.open_high = open_low, open_high

    def __call__(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        bad = (not math.isfinite(value) or value < self.low or value > self.high
               or (self.open_low and value == self.low) or (self.open_high and value == self.high))
        if bad:
            shown = (f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}"
                     f"{')' if self.open_high else ']'}")
            raise argparse.ArgumentTypeError(f"{self.option} must be a number in {shown}, got {text!r}")
        return value

    def __repr__(self) -> str:
        return f"float_range({self.option!r}, {self.low}, {self.high})"


def existing_path(option: str) -> Callable[[str], str]:
    """A path that exists, else a usage error naming the path (argparse names ``option``).

    >>> existing_path("--lengths")("/no/such/file.npy")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: no such file or directory '/no/such/file.npy'
    """
    def parse(text: str) -> str:
        if not os.path.lexists(text):
            raise argparse.ArgumentTypeError(f"no such file or directory {text!r}")
        return text

    parse.__name__ = "path"
    return parse


def refill(text: str) -> int | tuple[int, ...]:
    """``"128"`` -> 128; ``"128,128,60"`` -> a batch-size sequence (every size at least 1).

    >>> refill("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --refill must be >= 1, got 0
    """
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        message = f"--refill must be an int or comma-separated ints, got {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if min(parts) < 1:
        raise argparse.ArgumentTypeError(f"--refill must be >= 1, got {min(parts)}")
    return parts[0] if len(parts) == 1 else tuple(parts)


def int_list(option: str, minimum: int = 1) -> Callable[[str], tuple[int, ...]]:
    """``"2097152,10_485_760"`` -> ``(2097152, 10485760)``; every value ``>= minimum``.

    >>> int_list("--thresholds")("4096,8_192")
    (4096, 8192)
    >>> int_list("--thresholds")("x")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --thresholds must be comma-separated ints, got 'x'
    """
    def parse(text: str) -> tuple[int, ...]:
        try:
            values = tuple(int(p.replace("_", "")) for p in text.split(",") if p.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be comma-separated ints, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"{option} must name at least one int, got {text!r}")
        low = min(values)
        if low < minimum:
            raise argparse.ArgumentTypeError(f"{option} must be >= {minimum}, got {low}")
        return values

    parse.__name__ = "int list"
    return parse


def policy_list(text: str) -> list[str]:
    """``"discard,trl-bfd"`` -> ``["discard", "trl-bfd"]``, each a registered packer (else a usage error).

    ``--policy`` is repeatable (``action="extend"``): the lists of every
    occurrence are joined; :func:`packing_theory.cli._common.packers_from_args`
    refuses a repeated name and, where a command replays one packer, a second.
    """
    from ..registry import names

    known = names()
    out = [p.strip() for p in text.split(",")]
    if not any(out):
        raise argparse.ArgumentTypeError(f"--policy must name a packer, got {text!r}")
    if not all(out):  # 'discard,,continue' or a trailing comma: a name left out, or a typo
        raise argparse.ArgumentTypeError(f"--policy {text!r} has an empty name between its commas")
    for name in out:
        if name not in known:
            raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from {', '.join(known)}; see "
                                             "`packing-theory policies`)")
    return out


policy_list.__name__ = "packer list"


class PeerOption(NamedTuple):
    """One ``--peer-option``: a packer's knob by name (``policy`` ``None``: every measured packer that
    takes it)."""

    policy: str | None
    key: str
    value: str


def peer_option(text: str) -> PeerOption:
    """``POLICY:KEY=VALUE`` (or ``KEY=VALUE``, for every measured peer that takes ``KEY``).

    >>> peer_option("window")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --peer-option must be POLICY:KEY=VALUE, got 'window'
    """
    head, sep, value = text.partition("=")
    policy, colon, key = head.rpartition(":")
    key = key.strip().replace("-", "_")
    if not sep or not key or (colon and not policy.strip()):
        raise argparse.ArgumentTypeError(f"--peer-option must be POLICY:KEY=VALUE, got {text!r}")
    return PeerOption(policy.strip() or None, key, value)


peer_option.__name__ = "POLICY:KEY=VALUE"


def document_id(text: str) -> str:
    """A document: a raw index or a name (never empty).

    >>> document_id(" ")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: DOC must be a document's raw index or its name, got ' '
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(f"DOC must be a document's raw index or its name, got {text!r}")
    return text.strip()


document_id.__name__ = "document"


def counts(text: str) -> dict[int, int]:
    """``"16384=789,32768=196"`` -> documents per pass at each threshold
    (:func:`~packing_theory.invariant.bounds.parse_counts`)."""
    from ..invariant.bounds import parse_counts

    try:
        return parse_counts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--counts: {exc}") from None


counts.__name__ = "counts"
