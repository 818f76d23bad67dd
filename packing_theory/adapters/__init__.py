"""The trainer side: packed records, loss helpers, audited loaders with exact resume (numpy only).

Nothing here imports torch; :mod:`packing_theory.adapters.torch` is the one
module that does (import it explicitly).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .loss import TokenLoss, bits_per_byte, masked_nll_sum, objective, token_byte_lengths
    from .order import ORDERS, OrderSpec
    from .order_audit import OrderAudit, order_audit
    from .policy import PeerPasses, PolicySpec, make_policy, policy_names
    from .records import (
        KIND_PADDING,
        KIND_PLACEMENT,
        KIND_REPEAT,
        PIECE_FIELDS,
        Layout,
        PackedBatch,
        PackedRecord,
        RecordOptions,
        cu_seqlens_from_segments,
        doc_mask_from_segments,
        pack_rows,
        pieces_from_events,
        pieces_from_rows,
    )
    from .state import LOADER_STATE_FORMAT, LoaderState
    from .stream import MonitorSpec, PackedStream, RemainderTracker

__all__ = [
    "KIND_PADDING",
    "KIND_PLACEMENT",
    "KIND_REPEAT",
    "LOADER_STATE_FORMAT",
    "ORDERS",
    "PIECE_FIELDS",
    "Layout",
    "LoaderState",
    "MonitorSpec",
    "OrderAudit",
    "OrderSpec",
    "PackedBatch",
    "PackedRecord",
    "PackedStream",
    "PeerPasses",
    "PolicySpec",
    "RecordOptions",
    "RemainderTracker",
    "TokenLoss",
    "bits_per_byte",
    "cu_seqlens_from_segments",
    "doc_mask_from_segments",
    "make_policy",
    "masked_nll_sum",
    "objective",
    "order_audit",
    "pack_rows",
    "pieces_from_events",
    "pieces_from_rows",
    "policy_names",
    "token_byte_lengths",
]

lazy_package(__name__, {
    ".loss": ("TokenLoss", "bits_per_byte", "masked_nll_sum", "objective", "token_byte_lengths"),
    ".order": ("ORDERS", "OrderSpec"),
    ".order_audit": ("OrderAudit", "order_audit"),
    ".policy": ("PeerPasses", "PolicySpec", "make_policy", "policy_names"),
    ".records": ("KIND_PADDING", "KIND_PLACEMENT", "KIND_REPEAT", "PIECE_FIELDS", "Layout", "PackedBatch",
                 "PackedRecord", "RecordOptions", "cu_seqlens_from_segments", "doc_mask_from_segments",
                 "pack_rows", "pieces_from_events", "pieces_from_rows"),
    ".state": ("LOADER_STATE_FORMAT", "LoaderState"),
    ".stream": ("MonitorSpec", "PackedStream", "RemainderTracker"),
})
