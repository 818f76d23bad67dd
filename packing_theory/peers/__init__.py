"""Peer packers: the frameworks' packers replayed exactly as event streams.

One module per framework; each module ends with ``PEERS``, a dict from the
command-line policy name (``FRAMEWORK-STRATEGY``) to a
:class:`~packing_theory.peers.PeerPacker` subclass that declares itself
(name, framework, reference, family sentence, knobs, row width) in class
attributes. :func:`peer_policies` collects the tables of the modules named in
:data:`PEER_MODULES`; the registry (:mod:`packing_theory.registry`) turns them
into entries next to the streaming policies, and every command reads them there.

A module named in :data:`PEER_MODULES` that does not exist, or that defines no
``PEERS`` table, is an error naming it (never a silent skip). A peer module
imports only the library and numpy at its top: an optional dependency is
imported inside the method that needs it (:func:`packing_theory.errors.import_optional`),
so the peer is always listed and raises
:class:`~packing_theory.MissingDependency` only when it runs without its extra.

This subpackage may import the engine's events and the foundation
(``_checks``, ``lengths``); nothing above it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._lazy import lazy_package
from ._base import PeerPacker

if TYPE_CHECKING:
    from ._common import SPLIT_BUDGET, Piece, RowEmitter, column_split_budget
    from ._figures import TARGET_UNITS, FigureAccumulator, PeerFigures, TrainerRule

__all__ = [
    "PEER_MODULES",
    "SPLIT_BUDGET",
    "TARGET_UNITS",
    "FigureAccumulator",
    "PeerFigures",
    "PeerPacker",
    "Piece",
    "RowEmitter",
    "TrainerRule",
    "column_split_budget",
    "peer_policies",
]

PEER_MODULES: tuple[str, ...] = (
    "trl", "olmo", "megatron", "foundry", "torchtune", "axolotl", "nemo", "paper", "parcae",
)
"""Modules of :mod:`packing_theory.peers` holding a ``PEERS`` table, in listing order."""


def peer_policies() -> dict[str, type[PeerPacker]]:
    """Every peer policy name -> its packer class, in :data:`PEER_MODULES` order.

    Raises:
        ImportError: a module named in :data:`PEER_MODULES` does not exist or has
            no ``PEERS`` table, a table maps a name to a class of another name, or
            two modules declare the same name (a fault of the package, never input).
    """
    out: dict[str, type[PeerPacker]] = {}
    for mod in PEER_MODULES:
        name = f"{__name__}.{mod}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                raise ImportError(f"packing_theory.peers.PEER_MODULES names {mod!r}, but there is no module "
                                  f"{name}") from exc
            raise
        table = getattr(module, "PEERS", None)
        if not isinstance(table, dict):
            raise ImportError(f"{name} (named in PEER_MODULES) defines no PEERS table")
        for key, cls in table.items():
            if not (isinstance(cls, type) and issubclass(cls, PeerPacker)) or cls.name != key:
                raise ImportError(f"{name}.PEERS maps {key!r} to {cls!r}, not to a PeerPacker named {key!r}")
            if key in out:
                raise ImportError(f"{name}.PEERS declares {key!r}, already declared by {out[key].__module__}")
            out[key] = cls
    return out


lazy_package(__name__, {
    "._common": ("SPLIT_BUDGET", "Piece", "RowEmitter", "column_split_budget"),
    "._figures": ("TARGET_UNITS", "FigureAccumulator", "PeerFigures", "TrainerRule"),
})
