"""OLMo-core packed FSL dataset: optimized best-fit decreasing (OBFD) per source file.

Transcribed (our own code) from ``src/olmo_core/data/utils.py``
(``iter_document_indices_with_max_sequence_length``, ``SegmentTree``,
``InstancePacker``, ``pack_documents_into_instances``) and
``src/olmo_core/data/numpy_dataset.py`` (``NumpyPackedFSLDataset``) at
allenai/OLMo-core@fa6c5014c9f6 (v2.5.0); the 3.0.0 wheel's packer is the same.

What the framework does, for each group of ``source_group_size`` consecutive
source files (default 1: every ``.npy`` file on its own):

1. find the documents (EOS-terminated runs of tokens, so every document has at
   least one token); a document longer than ``sequence_length`` is cut to its
   first ``sequence_length`` tokens (``olmo-truncate``: the rest is
   discarded) or into fragments of ``sequence_length`` tokens, the last one
   shorter (``olmo-fragment``);
2. order the documents by ``np.argsort(-length)`` — numpy's default
   (introsort, *not* stable) argsort of an ``int64`` array: the tie order is
   whatever numpy returns, and this peer calls the same function on the same
   array to get the same order (it may differ between numpy versions and CPUs);
3. place each into the instance with the smallest remaining capacity that
   holds it (a segment tree over capacities ``1..sequence_length``, which
   asserts that ``sequence_length`` is a power of two), instances with equal
   capacity first-in first-out; a new instance when none fits;
4. emit the group's instances in creation order, documents in insertion
   order, right-padded with ``pad_token_id`` to ``sequence_length``
   (``label_mask`` is False on the padding). The data loader then shuffles
   instances globally; rows here are in dataset order.

Options: ``documents_per_file`` (how the length stream is cut into source
files; ``None`` = one file) and ``source_group_size``.

Outside seed 000's family: an offline best-fit-decreasing packer over a whole
source file — no minimum-occupancy streaming buffer, no shortest-span crop,
truncation before placement — so the proposition does not apply.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._arrays import index_dtype
from .._checks import check_int
from .._unique import distinct
from ..engine.batches import DISCARD, EventBatch
from ..engine.events import Discard, Event, Horizon
from ..engine.knobs import Knob, RowWidth
from ..errors import InputError
from ._base import PeerPacker
from ._columns import (
    PieceRule,
    arrival_batches,
    arrival_sections,
    assemble,
    best_fit_fifo,
    chunk_bounds,
    discard_section,
    fragments,
    horizon_batch,
    narrow,
    packed_rows,
    peer_array,
    row_section,
)
from ._common import Piece, arrivals, best_fit, check_split_budget, peer_lengths, row_events
from ._figures import TrainerRule

__all__ = ["PEERS", "OlmoFragment", "OlmoPacker", "OlmoTruncate", "olmo_order"]


def olmo_order(lengths: list[int]) -> list[int]:
    """``InstancePacker.pack_documents``'s order: ``np.argsort(-1 * lengths.astype(int64))``.

    >>> olmo_order([2, 5, 3])
    [1, 2, 0]
    """
    arr = np.asarray(lengths, dtype=np.uint64).astype(np.int64)
    return [int(i) for i in np.argsort(-1 * arr).tolist()]


class OlmoPacker(PeerPacker):
    """Base of the two OLMo-core policies (``long_doc_strategy`` is a class attribute).

    Args:
        capacity: the row width ``R`` = ``sequence_length``, a power of two.
        documents_per_file, source_group_size: see :attr:`knobs`.

    Raises:
        ValueError: ``capacity`` is not a power of two (OLMo-core's segment
            tree asserts it), or a bad option.
    """

    framework: ClassVar[str] = "OLMo-core"
    reference: ClassVar[str] = (
        "allenai/OLMo-core src/olmo_core/data/utils.py (InstancePacker, SegmentTree, "
        "iter_document_indices_with_max_sequence_length) and numpy_dataset.py (NumpyPackedFSLDataset) "
        "at fa6c5014c9f6 (v2.5.0); same packer in the 3.0.0 wheel")
    family_note: ClassVar[str] = (
        "offline best-fit decreasing over a whole source file (OLMo-core OBFD): no minimum-occupancy "
        "streaming buffer and no shortest-span crop, documents truncated or fragmented before placement, "
        "so seed 000's proposition does not apply")
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", True,
        "allenai/OLMo-core src/olmo_core/data/numpy_dataset.py NumpyPackedFSLDataset (instances right-padded "
        "with pad_token_id, label_mask False on padding) and src/olmo_core/data/utils.py get_labels (labels "
        "masked by label_mask, then shifted by one over the instance)",
        "instances are stored right-padded to sequence_length; labels are masked on the padding and shifted "
        "by one over the whole instance (document boundaries inside an instance are predicted): "
        "targets = placed tokens - instances",
        "get_labels read at allenai/OLMo-core src/olmo_core/data/utils.py (label_mask, attention_mask and "
        "instance_mask fill -100, then labels[..., 1:] padded with -100); not run here (needs the package)")
    trainer_view: ClassVar[str] = (
        "instances right-padded to sequence_length with pad_token_id; label_mask False on padding; "
        "doc_lens (with generate_doc_lengths) give the document boundaries for intra-document masking "
        "and cu_seqlens; position ids restart per document only when doc_lens are used")
    long_doc_strategy: ClassVar[str]
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("documents_per_file", "int", None, "documents per source .npy file (None: the whole stream is "
             "one file)", optional=True),
        Knob("source_group_size", "int", 1, "consecutive source files packed together"),
    )
    row_width: ClassVar[RowWidth] = RowWidth(
        "R = sequence_length, a power of two (InstancePacker's segment tree asserts it)", power_of_two=True)

    def __init__(self, capacity: int, *, documents_per_file: int | None = None,
                 source_group_size: int = 1) -> None:
        super().__init__(capacity)
        if capacity & (capacity - 1):
            raise InputError(f"capacity (OLMo-core sequence_length) must be a power of two: its "
                             f"InstancePacker segment tree asserts it; got {capacity}")
        self.documents_per_file = (None if documents_per_file is None
                                   else check_int("documents_per_file", documents_per_file, 1))
        self.source_group_size = check_int("source_group_size", source_group_size, 1)

    def events(self, lengths: Any) -> Iterator[Event]:
        """Pack ``lengths`` (documents of >= 1 token) group by group."""
        values = peer_lengths(lengths, allow_empty=False, who="OLMo-core")
        L = self.capacity
        if self.long_doc_strategy == "fragment":
            check_split_budget(values, L, self.name)
        per_group = (len(values) if self.documents_per_file is None
                     else self.documents_per_file * self.source_group_size)
        row = 0
        for lo in range(0, len(values), max(per_group, 1)):
            group = values[lo : lo + per_group]
            yield from arrivals(group, lo)
            docs: list[Piece] = []
            for k, n in enumerate(group):
                occ = lo + k
                if n <= L:
                    docs.append(Piece(occ, occ, 0, n))
                elif self.long_doc_strategy == "truncate":
                    docs.append(Piece(occ, occ, 0, L, crop=True))
                    yield Discard(occ, occ, L, n - L)
                else:
                    docs.extend(Piece(occ, occ, s, min(L, n - s), crop=True) for s in range(0, n, L))
            sizes = [p.length for p in docs]
            for b in best_fit(sizes, olmo_order(sizes), L, ties="first-to-reach"):
                yield from row_events(row, [docs[i] for i in b], L)
                row += 1
        yield Horizon(row, 0, "drained", ())

    def _piece(self, values: npt.NDArray[np.int64]) -> PieceRule:
        """A piece's length and crop from its document and start: the document's tokens from the start, at
        most a row (truncate: the start is 0), cropped when the document is longer than a row."""
        L = self.capacity

        def rule(occ: npt.NDArray[np.int64], start: npt.NDArray[np.int64]
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
            whole = values[occ]
            return np.minimum(L, whole - start), whole > L

        return rule

    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns: whole source groups at a time, best fit compiled (:meth:`batches`)."""
        values = peer_array(lengths, allow_empty=False, who="OLMo-core")
        L = self.capacity
        if self.long_doc_strategy == "fragment":  # as events()
            check_split_budget(values, L, self.name, columns=True)
        per_group = (values.size if self.documents_per_file is None
                     else self.documents_per_file * self.source_group_size)
        row = 0
        for lo, hi in chunk_bounds(values.size, per_group, size):
            if hi - lo <= per_group:  # one source group (the default: one file): narrow columns, in chunks
                row += yield from self._group_batches(values, lo, hi, row, size, compiled)
                continue
            # several whole source groups of at most `size` documents: one batch, int64 columns
            ls = values[lo:hi]
            occ = lo + np.arange(ls.size, dtype=np.int64)
            window = (occ - lo) // max(per_group, 1)
            windows = int(window[-1]) + 1
            sections = list(arrival_sections(occ, ls, window))
            long = ls > L
            if self.long_doc_strategy == "truncate":
                sections.append(discard_section(occ[long], np.full(int(long.sum()), L, np.int64),
                                                ls[long] - L, window[long]))
                p_occ, p_start, p_len = occ, np.zeros(ls.size, np.int64), np.minimum(ls, L)
            else:
                p_occ, p_start, p_len = fragments(occ, ls, L)
            p_window = (p_occ - lo) // max(per_group, 1)  # several windows, each a source group
            bounds = np.searchsorted(p_window, np.arange(windows + 1))
            order = np.concatenate([a + np.argsort(-1 * p_len[a:b]) for a, b in
                                    itertools.pairwise(bounds.tolist())]).astype(np.int64, copy=False)
            del bounds
            items, item_row, row_window, rows = packed_rows(p_len, p_window, order, L, compiled)
            del p_window, order
            p_occ, p_start, p_len = p_occ[items], p_start[items], p_len[items]
            del items
            sections.append(row_section(L, rows, row, row_window, item_row.astype(np.int64), p_occ, p_occ,
                                        p_start, p_len, long[p_occ - lo]))
            yield assemble(windows, sections, ("empty",))
            row += rows
        yield horizon_batch(row)

    def _group_batches(self, values: npt.NDArray[np.int64], lo: int, hi: int, row: int, size: int,
                       compiled: bool | None) -> Generator[EventBatch, None, int]:
        """One source group's batches (documents ``lo..hi-1``, rows from ``row``); returns its rows.

        The events of the group's window as :meth:`_columns`' other path gives
        them (arrivals, discards, rows), in batches of about ``size`` events.
        Planning holds, per piece, OLMo-core's ``int64`` sort key (the same
        array it argsorts, so the same ties) and then ``int32`` columns where
        they fit: the order, the sizes and bins of :func:`best_fit_fifo`, the
        rows, the occurrences and starts (at most 16 bytes per piece at once,
        plus the sort's and the stable sort's own). Nothing is built for the
        arrivals until the plan is made. O(pieces log pieces).
        """
        L = self.capacity
        ls = values[lo:hi]
        n = int(ls.size)
        fragment = self.long_doc_strategy == "fragment"
        # pieces per document (truncate: one) and where a document's pieces end, int32 where they fit
        per = narrow((-(-ls // L),))[0] if fragment else None
        ends = narrow((np.cumsum(per, dtype=np.int64),))[0] if per is not None else None
        pieces = n if ends is None else int(ends[-1])
        key = _piece_lengths(ls, L, per, ends, pieces)
        np.negative(key, out=key)  # = -1 * lengths: OLMo-core's argsort key
        order = np.argsort(key)
        del key
        (order,) = narrow((order,))
        (sizes,) = narrow((_piece_lengths(ls, L, per, ends, pieces),))
        bins = best_fit_fifo(sizes, order, np.zeros(1, np.int64), L, compiled=compiled)
        del sizes
        rows = int(bins.max()) + 1
        (row_end,) = narrow((np.cumsum(np.bincount(bins, minlength=rows)),))  # a row's pieces end here
        by_row = np.argsort(bins, kind="stable")  # the pieces row by row, each row's in insertion order
        del bins
        items = order[by_row]  # the pieces (indices in document order) row by row
        del order, by_row
        index = index_dtype(hi)
        if per is None or ends is None:  # truncate: a piece is its document, from its start
            p_occ: npt.NDArray[Any] = items.astype(index, copy=False)
            cont = cont_start = np.zeros(0, np.int32)
        else:
            doc = np.repeat(np.arange(n, dtype=index), per)  # each piece's document, in document order
            p_occ = doc[items]
            del doc
            (first,) = narrow((ends - per,))  # a document's first piece
            items -= first[p_occ]  # now each piece's rank in its document
            del first
            # a piece's start: 0 but for a long document's later fragments (their positions, row by row)
            (cont,) = narrow((np.flatnonzero(items),))
            (cont_start,) = narrow((items[cont].astype(np.int64) * L,))
        np.add(p_occ, np.asarray(lo, index), out=p_occ)
        del per, ends, items
        yield from arrival_batches(ls, lo, size, empty=False)  # OLMo-core takes no empty document
        if not fragment:
            yield from _discard_batches(ls, lo, L, size)
        # held until the last row: each row's end, each piece's occurrence, the later fragments' starts
        rule = self._piece(values)
        step = max(size, 1)
        cut_at = np.searchsorted(row_end, np.arange(step, pieces, step), "right")  # each step-th piece's row
        cuts = distinct(np.concatenate(([0], cut_at, [rows]))).tolist()
        for r0, r1 in itertools.pairwise(cuts):  # whole rows, about `size` pieces each
            a, b = (int(row_end[r0 - 1]) if r0 else 0), int(row_end[r1 - 1])
            per_row = np.diff(row_end[r0:r1], prepend=a).astype(np.int64)
            occ = p_occ[a:b].astype(np.int64)
            start = np.zeros(b - a, np.int64)
            j0, j1 = np.searchsorted(cont, (a, b)).tolist()
            start[cont[j0:j1] - a] = cont_start[j0:j1]
            length, crop = rule(occ, start)
            yield assemble(1, [row_section(L, r1 - r0, row + r0, np.zeros(r1 - r0, np.int64),
                                           np.repeat(np.arange(r1 - r0, dtype=np.int64), per_row),
                                           occ, occ, start, length, crop)])
        return rows


def _piece_lengths(ls: npt.NDArray[np.int64], L: int, per: npt.NDArray[Any] | None,
                   ends: npt.NDArray[Any] | None, pieces: int) -> npt.NDArray[np.int64]:
    """Each piece's length (``int64``), pieces in document order: a document's first ``L`` tokens
    (``per`` ``None``: truncate), or ``per`` fragments of ``L`` tokens, the last one shorter."""
    if per is None or ends is None:
        return np.minimum(ls, L)
    out = np.full(pieces, L, np.int64)
    out[ends - 1] = ls - (per.astype(np.int64) - 1) * L  # int64: a document's tokens
    return out


def _discard_batches(ls: npt.NDArray[np.int64], lo: int, L: int, size: int) -> Iterator[EventBatch]:
    """The Discard of the tokens past ``L`` of each longer document of ``ls``, ``size`` at a time."""
    long = np.flatnonzero(ls > L)
    step = max(size, 1)
    for a in range(0, long.size, step):
        docs = long[a : a + step]
        occ = docs + lo
        yield EventBatch.from_columns(np.full(docs.size, DISCARD, np.uint8), None, (),
                                      discard=(occ, occ, np.full(docs.size, L, np.int64), ls[docs] - L))


class OlmoTruncate(OlmoPacker):
    """``long_doc_strategy="truncate"``: keep the first ``sequence_length`` tokens of a long document.

    >>> [(p.row, p.occurrence, p.start, p.length) for p in OlmoTruncate(4).events([5, 2, 3, 1])
    ...  if type(p).__name__ == "Placement"]
    [(0, 0, 0, 4), (1, 2, 0, 3), (1, 3, 0, 1), (2, 1, 0, 2)]
    """

    name: ClassVar[str] = "olmo-truncate"
    columnar: ClassVar[bool] = True
    long_doc_strategy: ClassVar[str] = "truncate"


class OlmoFragment(OlmoPacker):
    """``long_doc_strategy="fragment"``: cut a long document into ``sequence_length`` fragments."""

    name: ClassVar[str] = "olmo-fragment"
    columnar: ClassVar[bool] = True
    long_doc_strategy: ClassVar[str] = "fragment"


PEERS: dict[str, type[PeerPacker]] = {cls.name: cls for cls in (OlmoTruncate, OlmoFragment)}
"""Policy name -> packer class."""
