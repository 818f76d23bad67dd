"""Peer packers: the frameworks' packers replayed exactly as event streams.

One module per framework; each module exposes ``PEERS``, a dict from the
command-line policy name (``FRAMEWORK-STRATEGY``) to a
:class:`~packing_theory.peers._base.PeerPacker` subclass.
:func:`peer_policies` collects them; modules not present are skipped.

This subpackage may import the engine's events and the foundation
(``_checks``, ``lengths``); nothing above it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import InputError
from ._base import PeerPacker, Piece, RowEmitter

__all__ = ["PEER_MODULES", "PeerPacker", "Piece", "RowEmitter", "make_peer", "peer_policies"]

PEER_MODULES: tuple[str, ...] = (
    "trl", "olmo", "megatron", "foundry", "torchtune", "axolotl", "nemo", "paper",
)
"""Modules of :mod:`packing_theory.peers` searched for ``PEERS`` tables."""


def peer_policies() -> dict[str, type[PeerPacker]]:
    """Every available peer policy name -> its packer class, in module order."""
    out: dict[str, type[PeerPacker]] = {}
    for mod in PEER_MODULES:
        name = f"{__name__}.{mod}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        out.update(module.PEERS)
    return out


def make_peer(name: str, capacity: int, **options: Any) -> PeerPacker:
    """Build the peer packer called ``name`` with the framework's options.

    Raises:
        ValueError: an unknown policy name.
    """
    table = peer_policies()
    if name not in table:
        raise InputError(f"policy must be one of {', '.join(table) or '(no peers installed)'}; got {name!r}")
    return table[name](capacity, **options)
