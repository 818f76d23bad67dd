"""What a loader runs: a packer built from a name by the registry, or a packer object, with its identity.

``make_policy("discard", capacity=R, ...)`` and ``make_policy("trl-bfd",
capacity=R, peer_options=...)`` build the packer with
:func:`packing_theory.registry.build_packer` (``capacity`` is the row width
``R`` for every packer); a packer object is used as given (a
:class:`~packing_theory.Packer` or :class:`~packing_theory.ReferencePacker`,
or any :class:`~packing_theory.engine.events.EventSource`).

Peers are offline packers: they pack the whole length list they are given.
Several passes over a corpus run the peer once per pass (each epoch is packed
on its own, as the frameworks do when they re-iterate a packed dataset) and
renumber occurrences and rows so that the event stream stays one stream
(:class:`PeerPasses`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import check_int
from ..engine.events import (
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
from ..engine.packer import Packer
from ..engine.policies import PackerConfig
from ..engine.reference import ReferencePacker
from ..engine.state import config_fingerprint
from ..errors import InputError, InputTypeError
from ..registry import entry, names

__all__ = ["PeerPasses", "PolicySpec", "make_policy", "policy_names"]


def policy_names() -> tuple[str, ...]:
    """The streaming policy names, then every installed peer's (:func:`packing_theory.registry.names`)."""
    return names()


@dataclass(frozen=True)
class PolicySpec:
    """A loader's packer and what identifies it in a checkpoint.

    Attributes:
        packer: the event source.
        kind: ``"engine"`` (a streaming engine with exact state capture) or ``"peer"``.
        descriptor: JSON-ready identity: the streaming config fingerprint, or
            the peer's name, capacity and options.
    """

    packer: Any
    kind: str
    descriptor: dict[str, Any]

    @property
    def capacity(self) -> int:
        """Row capacity ``R``."""
        return int(self.packer.capacity)

    @property
    def config(self) -> PackerConfig | None:
        """The streaming configuration (``None`` for a peer)."""
        config: PackerConfig | None = self.packer.config if self.kind == "engine" else None
        return config


def make_policy(
    policy: str | Any,
    *,
    capacity: int | None = None,
    min_buffer: int = 1000,
    refill: int | tuple[int, ...] = 128,
    passes: int = 1,
    seed: int | None = None,
    exhausted: str = "stop",
    peer_options: Mapping[str, Any] | None = None,
) -> PolicySpec:
    """Build the packer for ``policy`` (a name or a packer object).

    Args:
        policy: a packer name (:func:`packing_theory.registry.names`) or a packer object.
        capacity: the row width ``R`` (required for a name), for every packer:
            Megatron's rows of ``R`` tokens replay ``sequence_length = R - 1``.
        min_buffer, refill, passes, seed, exhausted: the streaming
            configuration (:class:`~packing_theory.PackerConfig`; ``seed`` reaches
            only a policy that takes one, ``random-span``); ``passes`` also applies
            to peers.
        peer_options: the peer's knobs (checked against its registry entry).

    Raises:
        InputError: an unknown name (listing the known ones), a missing
            capacity, a knob the packer does not take, or options for the wrong
            kind of packer.
        InputTypeError: an object that is not a packer.
    """
    passes = check_int("passes", passes, 1)
    if isinstance(policy, (Packer, ReferencePacker)):
        if capacity is not None and capacity != policy.capacity:
            raise InputError(f"capacity={capacity} differs from the packer's capacity {policy.capacity}")
        return PolicySpec(policy, "engine", {"kind": "engine", **config_fingerprint(policy.config)})
    if isinstance(policy, str):
        if capacity is None:
            raise InputError(f"policy {policy!r} needs a capacity (the row length R)")
        e = entry(policy)
        if e.kind == "streaming":
            if peer_options:
                raise InputError(
                    f"peer_options apply to peer policies, not to the streaming policy {policy!r}"
                )
            knobs: dict[str, Any] = {"min_buffer": min_buffer, "refill": refill, "passes": passes,
                                     "exhausted": exhausted}
            if seed is not None and e.takes("seed"):  # the random-span seed; the other policies draw nothing
                knobs["seed"] = seed
            packer = e.build(capacity, engine="fast", **knobs)
            return PolicySpec(packer, "engine", {"kind": "engine", **config_fingerprint(packer.config)})
        options = dict(peer_options or {})
        peer = e.build(capacity, **options)
        descriptor = {
            "kind": "peer",
            "name": policy,
            "capacity": capacity,
            "passes": passes,
            "options": {k: repr(v) for k, v in sorted(options.items())},
        }
        return PolicySpec(PeerPasses(peer, passes) if passes > 1 else peer, "peer", descriptor)
    if isinstance(policy, EventSource):
        if capacity is not None and capacity != policy.capacity:
            raise InputError(f"capacity={capacity} differs from the packer's capacity {policy.capacity}")
        name = str(getattr(policy, "name", type(policy).__name__))
        descriptor = {
            "kind": "peer",
            "name": name,
            "capacity": policy.capacity,
            "passes": passes,
            "options": {},
        }
        return PolicySpec(PeerPasses(policy, passes) if passes > 1 else policy, "peer", descriptor)
    raise InputTypeError(
        f"policy must be a policy name or a packer (an object with capacity and events), "
        f"got {type(policy).__name__} {policy!r}"
    )


class PeerPasses:
    """An offline packer run once per corpus pass, as one event stream.

    Occurrence ids continue across passes (``Arrival.pass_index`` is the
    pass), rows are renumbered after the previous passes' rows, and only the
    last pass's :class:`~packing_theory.engine.events.Horizon` is kept.

    Raises (while iterating):
        ValueError: a pass that ends with buffered tokens or a partial row
            (its Horizon cannot be chained).
    """

    def __init__(self, peer: Any, passes: int) -> None:
        self.peer = peer
        self.passes = check_int("passes", passes, 1)
        self.repeats_tokens = bool(getattr(peer, "repeats_tokens", False))

    @property
    def capacity(self) -> int:
        """The peer's row capacity."""
        return int(self.peer.capacity)

    def events(self, lengths: Any) -> Iterator[Event]:
        """The peer's events for every pass, renumbered."""
        occ_base = 0
        row_base = 0
        for p in range(self.passes):
            arrivals = 0
            for ev in self.peer.events(lengths):
                t = type(ev)
                if t is Horizon:
                    assert isinstance(ev, Horizon)
                    if p + 1 < self.passes and (ev.partial_row_tokens or ev.buffered):
                        raise InputError(
                            f"pass {p} of {self.passes} ends with a partial row or buffered tokens; "
                            "an offline packer's passes cannot be chained"
                        )
                    if p + 1 == self.passes:
                        yield Horizon(
                            row_base + ev.rows,
                            ev.partial_row_tokens,
                            ev.stop_reason,
                            tuple(BufferedSpan(s.occurrence + occ_base, *s[1:]) for s in ev.buffered),
                        )
                    row_base += ev.rows
                    break
                if t is Arrival:
                    arrivals += 1
                yield _renumber(ev, occ_base, row_base, p) if p else ev
            occ_base += arrivals


def _renumber(ev: Event, occ: int, row: int, pass_index: int) -> Event:
    if isinstance(ev, (Placement, Repeat)):
        return ev._replace(row=ev.row + row, occurrence=ev.occurrence + occ)
    if isinstance(ev, (Padding, Exhausted)):
        return ev._replace(row=ev.row + row)
    if isinstance(ev, Arrival):
        return ev._replace(occurrence=ev.occurrence + occ, pass_index=pass_index)
    if isinstance(ev, (Discard, Filtered, BosAdded)):
        return ev._replace(occurrence=ev.occurrence + occ)
    return ev
