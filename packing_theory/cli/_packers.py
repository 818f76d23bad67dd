"""Peer policies on the command line: one ``--policy FRAMEWORK-STRATEGY`` scheme and the peers' knobs.

``--window``, ``--seed``, ``--epochs`` and ``--framework-version`` map onto
the peer constructor's keyword arguments of the same name (``window``,
``seed``, ``epochs``, ``framework_version``); ``--peer-option KEY=VALUE``
(repeatable) maps any other keyword argument by name. The constructor's
signature is inspected: an option the chosen peer does not take is an error
naming the option and the peer. Values are parsed as ``None``/``none``,
``true``/``false``, an int, a float, else kept as a string.
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from ..engine.policies import POLICIES
from ..errors import InputError
from ..peers import PeerPacker, peer_policies

__all__ = [
    "add_peer_options",
    "all_policy_names",
    "is_peer",
    "parse_value",
    "peer_from_args",
    "peer_knobs",
    "peer_options",
    "policy_name",
]


def is_peer(name: str) -> bool:
    """Whether ``name`` is a registered peer policy."""
    return name in peer_policies()


def all_policy_names() -> list[str]:
    """Streaming policies, then every registered peer policy."""
    return [*POLICIES, *peer_policies()]


def policy_name(text: str) -> str:
    """An argparse ``type``: a streaming or peer policy name, else "invalid choice" (usage error)."""
    names = all_policy_names()
    if text not in names:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(names)})")
    return text


def parse_value(text: str) -> Any:
    """``"none"`` -> None, ``"true"`` -> True, ``"12"`` -> 12, ``"1.5"`` -> 1.5, else the string.

    >>> [parse_value(v) for v in ("None", "false", "12", "1.5", "left")]
    [None, False, 12, 1.5, 'left']
    """
    low = text.strip().lower()
    if low == "none":
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text.replace("_", ""))
        except ValueError:
            pass
    return text


def peer_knobs(cls: type[PeerPacker]) -> dict[str, Any]:
    """The peer's keyword-only constructor options and their defaults."""
    sig = inspect.signature(cls.__init__)
    return {p.name: p.default for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def add_peer_options(parser: argparse.ArgumentParser) -> None:
    """``--window --epochs --framework-version --peer-option`` (``--seed`` is a stream option)."""
    group = parser.add_argument_group("peer policies (FRAMEWORK-STRATEGY; see `packing-theory policies`)")
    group.add_argument("--window", type=int, default=None,
                       help="TRL: the datasets.map batch size packed together (default 1000)")
    group.add_argument("--epochs", type=int, default=None, help="peers with an epochs option")
    group.add_argument("--framework-version", default=None, metavar="VERSION",
                       help="framework version whose behaviour is replayed (default: newest supported)")
    group.add_argument("--peer-option", action="append", default=[], metavar="KEY=VALUE",
                       help="any other constructor option of the peer, by name (repeatable)")


def peer_options(args: argparse.Namespace, name: str, *, seed: int | None = None) -> dict[str, Any]:
    """The constructor options given on the command line for peer ``name``, checked against its signature.

    Raises:
        ValueError: a malformed ``--peer-option``, or an option the peer does not take.
    """
    cls = peer_policies()[name]
    accepted = peer_knobs(cls)
    given: dict[str, tuple[str, Any]] = {}
    for flag, key in (("--window", "window"), ("--epochs", "epochs"),
                      ("--framework-version", "framework_version")):
        value = getattr(args, key, None)
        if value is not None:
            given[key] = (flag, value)
    if seed is not None:
        given["seed"] = ("--seed", seed)
    for item in getattr(args, "peer_option", None) or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"--peer-option must be KEY=VALUE, got {item!r}")
        given[key] = (f"--peer-option {key}", parse_value(value))
    for key, (flag, _) in given.items():
        if key not in accepted:
            takes = ", ".join(accepted) or "no options"
            raise InputError(f"{flag}: policy {name!r} takes no option {key!r} (it takes: {takes})")
    return {key: value for key, (_, value) in given.items()}


def peer_from_args(args: argparse.Namespace, name: str, capacity: int) -> PeerPacker:
    """Build peer ``name`` with ``capacity`` (its framework's sequence length) and the options given."""
    seed = getattr(args, "seed", None)
    return peer_policies()[name](capacity, **peer_options(args, name, seed=seed))
