"""Every document by its real name: raw corpus index, name and data source, before and after a funnel.

A packer replays the documents a cleaning funnel kept
(:mod:`packing_theory.corpus.funnel`), numbered ``0 .. n - 1`` in the order it
was given them. A user names a document by its index in the *raw* corpus, by
its file, or by its dataset's name column, and asks about the ones the
funnel removed too. :class:`DocumentIdentity` carries the mapping that the
per-document table (:func:`~packing_theory.audit.documents.document_table`)
uses to label every row:

* ``raw_index`` — per replayed document, its raw corpus index (``int64``;
  default: the positions themselves);
* ``names`` — a :class:`NameSource` over the raw corpus (a record's own
  name, its ``id`` / ``name``: :mod:`packing_theory.corpus.readers.names`;
  else a file path, ``file#k`` for the k-th of several), or ``None``;
* ``source_labels`` / ``source_codes`` — the data source of each raw document;
* ``removed_by`` / ``stages`` — per raw document the index of the funnel
  stage that removed it (``-1``: kept), with ``raw_lengths`` for their
  lengths.

Names are read lazily (:meth:`NameSource.take` of the rows asked for), so
the table never holds a billion Python strings.

>>> ident = DocumentIdentity.from_funnel_masks([5, 7, 9], {"dedup": [False, True, False]},
...                                          names=["a.txt", "b.txt", "c.txt"])
>>> ident.raw_index.tolist(), ident.removed_ids().tolist(), ident.name_of(np.array([1]))
([0, 2], [1], ['b.txt'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..corpus.readers.names import FileNames
from ..errors import InputError, InputTypeError
from ..lengths import validate_lengths

if TYPE_CHECKING:
    from ..corpus.funnel import FunnelResult
    from ..corpus.labels import SourceLabels

__all__ = ["DocumentIdentity", "FileNames", "ListNames", "NameSource", "as_names", "document_identity"]

Int64Array = npt.NDArray[np.int64]


@runtime_checkable
class NameSource(Protocol):
    """A lazily indexable sequence of document names over the raw corpus."""

    def __len__(self) -> int: ...

    def take(self, ids: Int64Array) -> list[str]:
        """The names of raw documents ``ids`` (any order)."""
        ...


class ListNames:
    """A :class:`NameSource` over names held in a sequence (a list, a tuple, an object array)."""

    def __init__(self, names: Sequence[str] | npt.NDArray[Any]) -> None:
        self._names = names

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, i: int) -> str:
        """The name of document ``i``."""
        return str(self._names[i])

    def take(self, ids: Int64Array) -> list[str]:
        names = self._names
        return [str(names[i]) for i in ids.tolist()]


class _KeptNames:
    """Names of the documents a funnel kept, by replayed position (a view of the raw corpus's names)."""

    def __init__(self, names: NameSource, raw_index: Int64Array) -> None:
        self._names, self._raw = names, raw_index

    def __len__(self) -> int:
        return int(self._raw.size)

    def take(self, ids: Int64Array) -> list[str]:
        return self._names.take(self._raw[np.asarray(ids, np.int64)])


def as_names(names: NameSource | Sequence[str] | npt.NDArray[Any] | None) -> NameSource | None:
    """``names`` as a :class:`NameSource` (a sequence is wrapped in :class:`ListNames`)."""
    if names is None or isinstance(names, NameSource):
        return names
    if isinstance(names, (str, bytes)):
        raise InputTypeError(f"names must be a sequence of names or a NameSource, got {type(names).__name__}")
    return ListNames(names)


@dataclass(frozen=True, eq=False)
class DocumentIdentity:
    """Who each replayed document is in the raw corpus (see the module doc).

    Raises:
        InputError: arrays of the wrong size, a raw index outside the raw
            corpus, or ``removed_by`` without ``raw_lengths``.
    """

    raw_index: Int64Array | None = None
    """Per replayed document, its raw corpus index (``None``: the positions)."""
    names: NameSource | None = None
    """Names over the raw corpus, or ``None`` (the ``name`` column is then empty)."""
    source_labels: tuple[str, ...] | None = None
    """The data sources' names (``source_codes`` index them)."""
    source_codes: npt.NDArray[np.integer[Any]] | None = None
    """Per raw document, its data source (an index into ``source_labels``)."""
    removed_by: npt.NDArray[np.int16] | None = None
    """Per raw document, the index of the funnel stage that removed it in ``stages``; -1 kept."""
    stages: tuple[str, ...] = ()
    """The funnel's stage names."""
    raw_lengths: Int64Array | None = None
    """The raw corpus's lengths (the removed documents' rows need them)."""
    raw_documents: int = field(default=-1)
    """Documents in the raw corpus (default: from the arrays given)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", as_names(self.names))
        sizes = [len(x) for x in (self.names, self.source_codes, self.removed_by, self.raw_lengths)
                 if x is not None]
        raw = self.raw_documents if self.raw_documents >= 0 else (sizes[0] if sizes else -1)
        if any(s != raw for s in sizes):
            raise InputError(f"document identity: names, source codes, removed_by and raw lengths must "
                             f"cover the same raw corpus, got sizes {sizes}")
        object.__setattr__(self, "raw_documents", raw)
        if self.raw_index is not None:
            idx = np.asarray(self.raw_index, np.int64)
            if idx.ndim != 1 or (idx.size and (idx.min() < 0 or (raw >= 0 and idx.max() >= raw))):
                raise InputError(f"document identity: raw_index must be 1-D in [0, {raw}), "
                                 f"got {idx.min(initial=0)}..{idx.max(initial=-1)}")
            object.__setattr__(self, "raw_index", idx)
        if (self.source_codes is None) != (self.source_labels is None):
            raise InputError("document identity: give source_labels and source_codes together")
        if self.removed_by is not None:
            if self.raw_lengths is None:
                raise InputError("document identity: removed_by needs raw_lengths (the removed rows' "
                                 "lengths)")
            rb = np.asarray(self.removed_by)
            if rb.size and (rb.min() < -1 or rb.max() >= len(self.stages)):
                raise InputError(f"document identity: removed_by must index the {len(self.stages)} stages")

    @classmethod
    def from_funnel(cls, funnel: FunnelResult, raw_lengths: npt.ArrayLike, *,
                    names: NameSource | Sequence[str] | None = None,
                    labels: SourceLabels | None = None) -> DocumentIdentity:
        """The identity of the documents a funnel kept, with the ones it removed and their stage."""
        return cls.from_funnel_masks(raw_lengths, {st.stage.name: st.removed for st in funnel.stages},
                                     names=names, labels=labels)

    @classmethod
    def from_funnel_masks(cls, raw_lengths: npt.ArrayLike, removed: Mapping[str, npt.ArrayLike], *,
                          names: NameSource | Sequence[str] | None = None,
                          labels: SourceLabels | None = None) -> DocumentIdentity:
        """From the raw lengths and, per stage in order, its mask of removed raw documents."""
        arr = validate_lengths(raw_lengths if isinstance(raw_lengths, np.ndarray)
                               else np.asarray(raw_lengths))
        by = np.full(arr.size, -1, np.int16)
        for k, mask in enumerate(removed.values()):
            m = np.asarray(mask, np.bool_)
            if m.shape != by.shape:
                raise InputError(f"document identity: stage {k} removes {m.size} documents' worth of flags "
                                 f"for {arr.size} raw documents")
            by[m & (by < 0)] = k
        return cls(np.flatnonzero(by < 0).astype(np.int64), as_names(names),
                   None if labels is None else labels.names, None if labels is None else labels.codes,
                   by if (by >= 0).any() else None, tuple(removed), arr)

    @classmethod
    def of(cls, documents: int, *, names: NameSource | Sequence[str] | None = None,
           labels: SourceLabels | None = None) -> DocumentIdentity:
        """The identity of a corpus replayed whole (raw index = position)."""
        return cls(None, as_names(names), None if labels is None else labels.names,
                   None if labels is None else labels.codes, raw_documents=documents)

    def check(self, replayed: int) -> DocumentIdentity:
        """``self`` when it names a corpus of ``replayed`` documents; else refuse."""
        n = replayed if self.raw_index is None else int(self.raw_index.size)
        if n != replayed or (self.raw_index is None and self.raw_documents not in (-1, replayed)):
            named = n if self.raw_index is not None else self.raw_documents
            raise InputError(f"document identity names {named:,} replayed documents, the packer was "
                             f"offered {replayed:,}")
        return self

    def raw(self, positions: Int64Array) -> Int64Array:
        """The raw corpus index of replayed documents at ``positions``."""
        return positions.astype(np.int64) if self.raw_index is None else self.raw_index[positions]

    def name_of(self, raw: Int64Array) -> list[str]:
        """The names of raw documents ``raw`` (``""`` each without names)."""
        return [""] * int(raw.size) if self.names is None else self.names.take(raw)

    def replayed_names(self) -> NameSource | None:
        """The names of the replayed documents, by replayed position (the raw corpus's names without a
        funnel, else those of the documents it kept); ``None`` without names.

        >>> DocumentIdentity.from_funnel_masks([5, 7, 9], {"dedup": [False, True, False]},
        ...     names=["a", "b", "c"]).replayed_names().take(np.array([1]))
        ['c']
        """
        if self.names is None or self.raw_index is None:
            return self.names
        return _KeptNames(self.names, self.raw_index)

    def source_of(self, raw: Int64Array) -> npt.NDArray[np.int64]:
        """The data source code of raw documents ``raw`` (-1 without labels)."""
        if self.source_codes is None:
            return np.full(raw.size, -1, np.int64)
        return np.asarray(self.source_codes)[raw].astype(np.int64)

    def removed_ids(self) -> Int64Array:
        """The raw indices of the documents the funnel removed, in raw order."""
        return np.zeros(0, np.int64) if self.removed_by is None else np.flatnonzero(self.removed_by >= 0)

    def positions_of(self, raw: int) -> Int64Array:
        """The replayed position(s) of raw document ``raw`` (empty when it was not replayed). O(log n)."""
        if self.raw_index is None:
            return np.asarray([raw] if raw >= 0 and (self.raw_documents < 0 or raw < self.raw_documents)
                              else [], np.int64)
        idx = self.raw_index
        if idx.size and bool((np.diff(idx) > 0).all()):
            at = int(np.searchsorted(idx, raw))
            return np.asarray([at] if at < idx.size and idx[at] == raw else [], np.int64)
        return np.flatnonzero(idx == raw).astype(np.int64)


def document_identity(raw_lengths: npt.ArrayLike, *, names: NameSource | Sequence[str] | None = None,
                      labels: SourceLabels | None = None, funnel: FunnelResult | None = None
                      ) -> DocumentIdentity:
    """The identity of a raw corpus's documents as a packer replays them: all of them, or, with a
    cleaning ``funnel``, the ones it kept (the removed ones listed with their stage). ``names`` and
    ``labels`` cover the raw corpus.

    >>> document_identity([4, 5], names=["a", "b"]).name_of(np.array([1]))
    ['b']
    """
    if funnel is not None:
        return DocumentIdentity.from_funnel(funnel, raw_lengths, names=names, labels=labels)
    size = int(raw_lengths.size) if isinstance(raw_lengths, np.ndarray) else int(np.asarray(raw_lengths).size)
    return DocumentIdentity.of(size, names=names, labels=labels)
