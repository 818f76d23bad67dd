"""What the drop-in loaders need besides torch: their document sources, state dicts and resume input.

Kept out of :mod:`packing_theory.adapters.torch` so that everything torch-free
is importable and testable without torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..corpus.documents import DocumentStore, TokenDocuments
from ..errors import InputError
from .state import LoaderState
from .stream import PackedStream

__all__ = ["Documents", "encoder", "loader_state", "nanochat_state", "resolve_documents"]

Documents = DocumentStore | Sequence[Sequence[int]] | Mapping[str, Any] | None
"""A drop-in loader's ``documents``: a store, token lists, a mapping ``split -> either``, or ``None``."""


def resolve_documents(
    documents: Documents, split: str, default: Callable[[], DocumentStore]
) -> DocumentStore:
    if documents is None:
        return default()
    if isinstance(documents, Mapping):
        if split not in documents:
            raise InputError(f"documents has no entry for split {split!r} (keys {sorted(documents)})")
        return resolve_documents(documents[split], split, default)
    if isinstance(documents, DocumentStore):
        return documents
    return TokenDocuments.from_lists(documents)


def encoder(tokenizer: Any, **kwargs: Any) -> Callable[[list[str]], Sequence[Sequence[int]]]:
    bos = tokenizer.get_bos_token_id()
    return lambda texts: tokenizer.encode(texts, prepend=bos, **kwargs)


def nanochat_state(stream: PackedStream) -> dict[str, Any]:
    """nanochat's ``{"pq_idx", "rg_idx", "epoch"}`` of the last refill plus our light state (exact resume).

    ``pq_idx`` / ``rg_idx`` come from the documents' row groups when they know
    them (parquet), else ``pq_idx`` is the shard of the last document read.
    """
    pq_idx = rg_idx = 0
    docs = stream.documents
    if stream.last_source >= 0:
        if getattr(docs, "row_groups", None) is not None:
            pq_idx, rg_idx = docs.row_group_of(stream.last_source)  # type: ignore[attr-defined]
        else:
            pq_idx = docs.locate(stream.last_source)[0]
    return {
        "pq_idx": pq_idx,
        "rg_idx": rg_idx,
        "epoch": stream.epoch,
        "packing_theory": stream.state(light=True).to_json(),
    }


def loader_state(resume: Mapping[str, Any] | LoaderState | None) -> LoaderState | None:
    if resume is None or isinstance(resume, LoaderState):
        return resume
    if isinstance(resume, Mapping) and "packing_theory" in resume:
        return LoaderState.from_json(resume["packing_theory"])
    raise InputError(f"resume must be a LoaderState or a state dict this loader produced, got {resume!r}")
