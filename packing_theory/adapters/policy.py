"""One factory for every packer a loader can run: a streaming policy name, a peer name, or an object.

``make_policy("discard", ...)`` builds the fast streaming
:class:`~packing_theory.engine.packer.Packer`; any other name is looked up
among the installed peers (:func:`packing_theory.peers.make_peer`); a packer
object is used as given (a :class:`~packing_theory.Packer` or
:class:`~packing_theory.ReferencePacker`, or any
:class:`~packing_theory.engine.events.EventSource`).

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
from ..engine.policies import POLICIES, PackerConfig
from ..engine.reference import ReferencePacker
from ..engine.state import config_fingerprint
from ..errors import InputError, InputTypeError

__all__ = ["PeerPasses", "PolicySpec", "make_policy", "policy_names"]


def policy_names() -> tuple[str, ...]:
    """The streaming policy names, then the names of every installed peer."""
    from ..peers import peer_policies

    return (*POLICIES, *peer_policies())


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
        policy: a streaming policy name (:data:`~packing_theory.engine.policies.POLICIES`),
            an installed peer's name, or a packer object.
        capacity: row capacity ``R`` (required for a name).
        min_buffer, refill, passes, seed, exhausted: the streaming
            configuration (:class:`~packing_theory.PackerConfig`); ``passes``
            also applies to peers.
        peer_options: keyword options of the peer's constructor.

    A peer is built so that its rows hold ``capacity`` tokens even when its
    constructor takes the framework's own length (Megatron's
    ``sequence_length`` is ``R - 1``).

    Raises:
        ValueError: an unknown name (listing the known ones), a missing
            capacity, or options for the wrong kind of packer.
        TypeError: an object that is not a packer.
    """
    passes = check_int("passes", passes, 1)
    if isinstance(policy, (Packer, ReferencePacker)):
        if capacity is not None and capacity != policy.capacity:
            raise InputError(f"capacity={capacity} differs from the packer's capacity {policy.capacity}")
        return PolicySpec(policy, "engine", {"kind": "engine", **config_fingerprint(policy.config)})
    if isinstance(policy, str):
        if capacity is None:
            raise InputError(f"policy {policy!r} needs a capacity (the row length R)")
        if policy in POLICIES:
            if peer_options:
                raise InputError(
                    f"peer_options apply to peer policies, not to the streaming policy {policy!r}"
                )
            kwargs: dict[str, Any] = {} if seed is None else {"seed": seed}
            config = PackerConfig(
                capacity=capacity,
                min_buffer=min_buffer,
                refill=refill,
                policy=policy,
                passes=passes,
                exhausted=exhausted,  # type: ignore[arg-type]
                **kwargs,
            )
            return PolicySpec(Packer(config), "engine", {"kind": "engine", **config_fingerprint(config)})
        from ..peers import make_peer, peer_policies

        if policy not in peer_policies():
            known = ", ".join(policy_names())
            raise InputError(
                f"policy must be one of {known}; got {policy!r} (peers are installed by "
                "packing_theory.peers modules)"
            )
        options = dict(peer_options or {})
        peer = make_peer(policy, capacity, **options)
        if peer.capacity != capacity:  # the constructor takes the framework's own number (Megatron: R - 1)
            peer = make_peer(policy, 2 * capacity - peer.capacity, **options)
            if peer.capacity != capacity:
                raise InputError(f"peer {policy!r} cannot build rows of capacity {capacity} "
                                 f"(its rows hold {peer.capacity} tokens)")
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
