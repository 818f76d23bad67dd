"""Packers on the command line: ``--policy`` names, the options of each packer, and its row width.

Every packer — streaming policy or peer — is built by
:func:`packing_theory.registry.build_packer` from its registry entry. The
command line spells the entry's knobs as flags: ``--min-buffer --refill
--passes --rows --targets --drain --seed --max-wait`` for the streaming
policies, ``--window --seed --epochs --framework-version`` for the peers that
take them, and ``--peer-option KEY=VALUE`` (repeatable) for any other knob by
name, parsed by the knob's declared type. An option the chosen packer does not
take is an error naming the option and the packer.

Row width: ``--capacity R`` is the row width of every packer; ``--seq-length L``
gives the framework's sequence length instead, and :func:`capacity_from_args` —
the one place the command line maps it — asks the packer's entry
(``R = L + 1`` for the streaming family and Megatron, ``R = L`` for TRL, ...;
see ``packing-theory policies``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..engine.knobs import Knob
from ..errors import InputError
from ..registry import PackerEntry, entries, entry, names

__all__ = [
    "add_packer_options",
    "capacity_from_args",
    "check_max_wait",
    "is_peer",
    "knobs_from_args",
    "packer_from_args",
    "parse_options",
    "policy_name",
    "streaming_capacity",
]

_PEER_FLAGS = (("--window", "window"), ("--epochs", "epochs"), ("--framework-version", "framework_version"))
_STREAMING_ONLY = ("--rows", "--targets", "--passes", "--drain")


def is_peer(name: str) -> bool:
    """Whether ``name`` is a registered peer policy."""
    return name in names("peer")


def policy_name(text: str) -> str:
    """An argparse ``type``: a streaming or peer policy name, else "invalid choice" (usage error)."""
    known = names()
    if text not in known:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(known)})")
    return text


def add_packer_options(parser: argparse.ArgumentParser) -> None:
    """``--window --epochs --framework-version --peer-option`` (``--seed`` is a stream option)."""
    group = parser.add_argument_group("peer policies (FRAMEWORK-STRATEGY; see `packing-theory policies`)")
    group.add_argument("--window", type=int, default=None,
                       help="TRL: the datasets.map batch size packed together (default 1000)")
    group.add_argument("--epochs", type=int, default=None, help="peers with an epochs option")
    group.add_argument("--framework-version", default=None, metavar="VERSION",
                       help="framework version whose behaviour is replayed (default: newest supported)")
    group.add_argument("--peer-option", action="append", default=[], metavar="KEY=VALUE",
                       help="any other option of the packer, by name (repeatable; see `packing-theory "
                            "policies`)")


def check_max_wait(max_wait: int | None, policies: list[str] | tuple[str, ...] | str | None) -> None:
    """Refuse ``--max-wait`` unless a policy that takes ``max_wait`` is among the policies.

    >>> check_max_wait(3, ["continue"])
    Traceback (most recent call last):
    packing_theory.InputError: --max-wait 3 only applies to --policy bounded-wait, got continue
    """
    if max_wait is None:
        return
    if max_wait < 0:
        raise InputError(f"--max-wait must be >= 0 (rows), got {max_wait}")
    chosen = [policies] if isinstance(policies, str) else list(policies or ["discard"])
    takers = [n for n, e in entries().items() if e.takes("max_wait")]
    if not set(chosen) & set(takers):
        raise InputError(
            f"--max-wait {max_wait} only applies to --policy {', '.join(takers)}, got {', '.join(chosen)}"
        )


def knobs_from_args(args: argparse.Namespace, name: str, *, alongside: Sequence[str] = (),
                    common_horizon: bool = False) -> dict[str, Any]:
    """The knobs given on the command line for packer ``name``, checked against its entry.

    ``alongside``: the other packers of the same invocation (``audit --policy
    discard,trl-bfd``); an option one of them takes is not an error for this one,
    it is simply not passed to it. ``common_horizon``: the command cuts every
    packer at ``--rows`` / ``--targets`` / ``--tokens`` itself (``audit``), so
    they are no error for a peer.

    Raises:
        InputError: a malformed ``--peer-option``, an option the packer (and no
            packer alongside it) takes, or a streaming-only option (``--rows`` ...)
            for a peer with no streaming policy alongside.
    """
    e = entry(name)
    others = [entry(n) for n in alongside if n != name]
    given: dict[str, tuple[str, Any]] = {}
    if e.kind == "streaming":
        given.update(min_buffer=("--min-buffer", args.min_buffer), refill=("--refill", args.refill),
                     passes=("--passes", args.passes), rows=("--rows", args.rows),
                     targets=("--targets", args.targets),
                     exhausted=("--drain", "drain" if args.drain else "stop"))
    elif not any(o.kind == "streaming" for o in others) and (
            (not common_horizon and (args.rows is not None or args.targets is not None))
            or args.passes != 1 or args.drain):
        raise InputError(f"{'/'.join(_STREAMING_ONLY)} apply to streaming policies; the peer {name!r} packs "
                         "the whole input once (see its options)")
    if getattr(args, "max_wait", None) is not None:
        check_max_wait(args.max_wait, [name, *alongside])
        given["max_wait"] = ("--max-wait", args.max_wait)
    if getattr(args, "seed", None) is not None:
        given["seed"] = ("--seed", args.seed)
    for flag, key in _PEER_FLAGS:
        value = getattr(args, key, None)
        if value is not None:
            given[key] = (flag, value)
    for key, text in _items(getattr(args, "peer_option", None) or []):
        if e.takes(key):
            given[key] = (f"--peer-option {key}", e.knob(key).parse(text))
        elif not any(o.takes(key) for o in others):
            _knob(e, key, f"--peer-option {key}")
    out: dict[str, Any] = {}
    for key, (flag, value) in given.items():
        if e.takes(key) or not any(o.takes(key) for o in others):
            _knob(e, key, flag)  # an option nobody here takes names itself and this packer
            out[key] = value
    return out


def parse_options(name: str, items: list[str]) -> dict[str, Any]:
    """``["window=none", "framework-version=1.16.0"]`` -> packer ``name``'s knobs, parsed by their type.

    Raises:
        InputError: an item that is not ``KEY=VALUE``, a knob the packer does not take, a bad value.
    """
    e = entry(name)
    return {key: _knob(e, key, f"--peer-option {key}").parse(text) for key, text in _items(items)}


def _items(items: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"--peer-option must be KEY=VALUE, got {item!r}")
        out.append((key, value))
    return out


def _knob(e: PackerEntry, key: str, flag: str) -> Knob:
    try:
        return e.knob(key)
    except InputError as exc:
        raise InputError(f"{flag}: {exc}") from None


def capacity_from_args(args: argparse.Namespace, name: str, knobs: dict[str, Any] | None = None) -> int:
    """The row width of packer ``name``: ``--capacity R``, or the entry's rule applied to ``--seq-length L``.

    The one place the command line maps a framework's sequence length onto a row width.
    """
    seq_length = getattr(args, "seq_length", None)
    if seq_length is None:
        return int(args.capacity)
    if seq_length < 1:
        raise InputError(f"--seq-length must be >= 1, got {seq_length}")
    return entry(name).capacity_for(seq_length, knobs)


def streaming_capacity(args: argparse.Namespace) -> int:
    """The row width of the streaming policies (one rule for the whole family) from the command line."""
    return capacity_from_args(args, names("streaming")[0])


def packer_from_args(args: argparse.Namespace, name: str, *, alongside: Sequence[str] = (),
                     common_horizon: bool = False) -> Any:
    """Build packer ``name`` from the command line (row width, knobs and, for streaming, ``--engine``).

    ``alongside`` and ``common_horizon``: see :func:`knobs_from_args` (a command that cuts a peer at
    ``--rows`` / ``--targets`` itself passes ``common_horizon=True``).
    """
    e = entry(name)
    knobs = knobs_from_args(args, name, alongside=alongside, common_horizon=common_horizon)
    engine = getattr(args, "engine", None) if e.kind == "streaming" else None  # a peer has its own
    return e.build(capacity_from_args(args, name, knobs), engine=engine, **knobs)
