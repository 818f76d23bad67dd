"""The packer registry: every packer, streaming policies and peers alike, and one way to build any of them.

Each packer declares itself where it is implemented — a streaming policy in
:data:`~packing_theory.engine.policies.STREAMING_POLICIES`, a peer in the class
attributes of its :class:`~packing_theory.peers.PeerPacker` subclass — and this
module merges the declarations into :class:`PackerEntry` values: name, kind,
framework, family status and the one sentence that explains it, knobs
(:class:`~packing_theory.engine.knobs.Knob`), engines, how the row width follows
from the framework's sequence length (:class:`~packing_theory.engine.knobs.RowWidth`),
reference and constructor. Every command and report asks here; nothing else
compares packer names.

:func:`build_packer` builds any packer from its name: ``capacity`` is the row
width ``R`` (tokens per emitted row) for every packer, or give the framework's
``seq_length`` instead and the entry's row width rule maps it (Megatron:
``R = seq_length + 1``). Knobs are checked against the entry's declaration.

>>> packer = build_packer("megatron-gpt", seq_length=2048)
>>> packer.capacity, packer.sequence_length
(2049, 2048)
>>> build_packer("trl-bfd", capacity=8, windows=3)
Traceback (most recent call last):
packing_theory.InputError: policy 'trl-bfd' takes no option 'windows' (it takes: window, framework_version)
>>> entry("discard").status, entry("trl-bfd").status
('family member', 'outside the family: not applicable')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .engine.knobs import Knob, RowWidth
from .engine.policies import (
    COMMON_KNOBS,
    STREAMING_POLICIES,
    STREAMING_ROW_WIDTH,
    STREAMING_TRAINER_VIEW,
    PackerConfig,
    StreamingPolicy,
)
from .engine.replay import ENGINES, make_packer
from .errors import InputError
from .peers import PeerPacker, peer_policies

__all__ = ["Kind", "PackerEntry", "build_packer", "entries", "entry", "names"]

Kind = Literal["streaming", "peer"]

STREAMING_FRAMEWORK = "seed 000 family"
"""The ``framework`` of every streaming policy."""


@dataclass(frozen=True, slots=True)
class PackerEntry:
    """What the registry knows about one packer (see the module doc).

    Attributes:
        name: the ``--policy`` name.
        kind: ``"streaming"`` (seed 000's family and its variants) or ``"peer"``.
        framework: the framework's name (``"seed 000 family"`` for streaming policies).
        in_family: whether seed 000 §3's proposition applies.
        family: the one sentence explaining the family status.
        protected_set: whether the protected-set monitor checks the packer
            (``False``: not applicable — every peer, and ``bounded-wait`` by design).
        knobs: the options the constructor takes, with types, defaults and help.
        engines: the engines that implement it (streaming: a subset of
            :data:`~packing_theory.engine.replay.ENGINES`; a peer runs its own
            implementation: ``()``).
        row_width: how the row width ``R`` follows from the framework's sequence length.
        reference: where it comes from (repository, commit, file; or paper).
        trainer_view: what a trainer gets from the rows.
        repeats_tokens: the packer emits :class:`~packing_theory.engine.events.Repeat` events.
        constructor: the callable :meth:`build` calls (a peer's class; the
            streaming engines' :func:`~packing_theory.engine.replay.make_packer`).
        columnar: a peer whose ``batches`` builds its event batches as numpy
            columns (:attr:`~packing_theory.peers.PeerPacker.columnar`), so
            ``compare --engine compiled`` reads it without per-event objects.
    """

    name: str
    kind: Kind
    framework: str
    in_family: bool
    family: str
    protected_set: bool
    knobs: tuple[Knob, ...]
    engines: tuple[str, ...]
    row_width: RowWidth
    reference: str
    trainer_view: str
    repeats_tokens: bool
    constructor: Callable[..., Any]
    columnar: bool = False

    @property
    def status(self) -> str:
        """``"family member"``, ``"outside the family"`` or ``"outside the family: not applicable"``."""
        if self.in_family:
            return "family member"
        return "outside the family" if self.protected_set else "outside the family: not applicable"

    @property
    def knob_names(self) -> tuple[str, ...]:
        """The names of :attr:`knobs`, in declaration order."""
        return tuple(k.name for k in self.knobs)

    def knob(self, name: str) -> Knob:
        """The declared knob ``name``.

        Raises:
            InputError: the packer takes no such knob (the message lists those it takes).
        """
        for k in self.knobs:
            if k.name == name:
                return k
        takes = ", ".join(self.knob_names) or "no options"
        raise InputError(f"policy {self.name!r} takes no option {name!r} (it takes: {takes})")

    def takes(self, name: str) -> bool:
        """Whether the packer declares a knob ``name``."""
        return name in self.knob_names

    def options(self, knobs: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every knob with the value a build with ``knobs`` runs with (defaults filled in), checked."""
        given = dict(knobs or {})
        for name in given:
            self.knob(name)
        return {k.name: given.get(k.name, k.default) for k in self.knobs}

    def capacity_for(self, seq_length: int, knobs: Mapping[str, Any] | None = None) -> int:
        """The row width ``R`` for the framework's sequence length ``seq_length`` (:attr:`row_width`)."""
        return self.row_width.capacity(seq_length, self.options(knobs))

    def build(self, capacity: int, *, engine: str | None = None, **knobs: Any) -> Any:
        """The packer with row width ``capacity`` and ``knobs`` (checked; see :func:`build_packer`)."""
        self.options(knobs)
        if engine is not None and engine not in self.engines:
            if engine not in ENGINES:
                raise InputError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
            runs = (f"the engines {', '.join(self.engines)}" if self.engines
                    else "its own implementation (engine applies to the streaming policies)")
            raise InputError(f"{self.kind} policy {self.name!r} runs on {runs}; got engine={engine!r}")
        if self.kind == "streaming":
            config = PackerConfig(capacity=capacity, policy=self.name, **knobs)  # type: ignore[arg-type]
            return self.constructor(engine or "fast", config)
        return self.constructor(capacity, **knobs)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (``packing-theory policies --json``)."""
        return {"policy": self.name, "kind": self.kind, "framework": self.framework, "status": self.status,
                "in_family": self.in_family, "family": self.family, "protected_set": self.protected_set,
                "knobs": {k.name: k.to_dict() for k in self.knobs}, "engines": list(self.engines),
                "row_width": self.row_width.rule, "reference": self.reference,
                "trainer_view": self.trainer_view}


def _streaming_entry(p: StreamingPolicy) -> PackerEntry:
    engines = tuple(e for e in ENGINES if e != "compiled" or p.compiled)
    return PackerEntry(p.name, "streaming", STREAMING_FRAMEWORK, p.in_family, p.family, p.protected_set,
                       COMMON_KNOBS + p.knobs, engines, STREAMING_ROW_WIDTH, p.reference,
                       STREAMING_TRAINER_VIEW, False, make_packer)


def _peer_entry(cls: type[PeerPacker]) -> PackerEntry:
    return PackerEntry(cls.name, "peer", cls.framework, cls.in_family, cls.family_note, False, cls.knobs, (),
                       cls.row_width, cls.reference, cls.trainer_view, cls.repeats_tokens, cls, cls.columnar)


def entries() -> dict[str, PackerEntry]:
    """Every packer by name: the streaming policies, then the peers (in ``PEER_MODULES`` order).

    Read afresh on every call (the peer modules are imported once), so a peer
    module added to ``PEER_MODULES`` is seen without any other change.

    Raises:
        ImportError: a peer module is missing (:func:`~packing_theory.peers.peer_policies`)
            or a peer reuses a streaming policy's name.
    """
    out = {name: _streaming_entry(p) for name, p in STREAMING_POLICIES.items()}
    for name, cls in peer_policies().items():
        if name in out:
            raise ImportError(f"peer {cls.__module__}.{cls.__name__} reuses the streaming policy name "
                              f"{name!r}")
        out[name] = _peer_entry(cls)
    return out


def names(kind: Kind | None = None) -> tuple[str, ...]:
    """Every packer name (or those of one ``kind``), streaming policies first."""
    return tuple(n for n, e in entries().items() if kind is None or e.kind == kind)


def entry(name: str) -> PackerEntry:
    """The entry of packer ``name``.

    >>> entry("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputError: policy must be one of discard, continue, ...; got 'nope'

    A streaming policy's entry is built from its declaration alone (no peer
    module is imported for it); any other name is looked up in :func:`entries`.

    Raises:
        InputError: an unknown name (the message lists every name).
    """
    policy = STREAMING_POLICIES.get(name) if isinstance(name, str) else None
    if policy is not None:
        return _streaming_entry(policy)
    table = entries()
    if not isinstance(name, str) or name not in table:
        raise InputError(f"policy must be one of {', '.join(table)}; got {name!r}")
    return table[name]


def build_packer(name: str, capacity: int | None = None, *, seq_length: int | None = None,
                 engine: str | None = None, **knobs: Any) -> Any:
    """Build the packer called ``name`` with rows of ``capacity`` tokens (or for ``seq_length``).

    Args:
        name: a streaming policy or a peer (:func:`names`).
        capacity: the row width ``R``, for every packer.
        seq_length: instead of ``capacity``: the framework's sequence length,
            mapped by the entry's :attr:`~PackerEntry.row_width` (streaming:
            ``R = seq_length + 1``; Megatron: ``R = seq_length + 1``; TRL ``R = seq_length``).
        engine: for a streaming policy, one of its :attr:`~PackerEntry.engines`
            (default ``"fast"``); a peer takes none.
        knobs: the packer's options (:attr:`~PackerEntry.knobs`), e.g. ``min_buffer=``,
            ``refill=`` for a streaming policy, ``window=`` for TRL.

    Returns:
        an :class:`~packing_theory.engine.events.EventSource` (``.capacity``, ``.events(lengths)``).

    Raises:
        InputError: an unknown name, an unknown knob (naming it and the packer and
            listing what it takes), neither or both of ``capacity`` and
            ``seq_length``, an engine the packer does not run on, or a knob
            value its constructor refuses.

    >>> build_packer("discard", capacity=8, min_buffer=2, refill=1).config.min_buffer
    2
    >>> build_packer("trl-bfd", capacity=8, engine="compiled")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputError: peer policy 'trl-bfd' runs on its own implementation (...); got engine=...
    """
    e = entry(name)
    if (capacity is None) == (seq_length is None):
        raise InputError(f"give exactly one of capacity (the row width) and seq_length for policy {name!r}; "
                         f"got capacity={capacity!r} seq_length={seq_length!r}")
    if capacity is None:
        assert seq_length is not None
        capacity = e.capacity_for(seq_length, knobs)
    return e.build(capacity, engine=engine, **knobs)
