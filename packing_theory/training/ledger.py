"""The training ledger: per optimizer step and rank, the document spans every consumed row held.

:class:`TrainingLedger` watches the batches a model consumes — call
:meth:`~TrainingLedger.observe` with each micro-batch as the model receives
it, then :meth:`~TrainingLedger.end_step` after the optimizer step — and
streams what it saw to a ledger file (:mod:`~packing_theory.training.format`):
for every row its padding, masked and trained positions, and for every
document span in it the raw corpus index, the offset in the document, the
positions and those that reached the loss. Document identity comes from our
own records when the batch is a :class:`~packing_theory.adapters.PackedBatch`
(:meth:`~TrainingLedger.observe_packed`: its pieces name the documents), and
otherwise from the tokens themselves through a
:class:`~packing_theory.training.index.DocumentIndex` over the corpus, so a
batch built by any library is read (:mod:`~packing_theory.training.batch`).

Every step also extends a chain of digests (one per rank):
``digest[s] = BLAKE2b-256(digest[s-1] || spans of step s)`` where a step's
spans are encoded as little-endian int64 quadruples ``(doc, start, length,
masked)`` in consumption order (``masked`` = positions of the span that did
not reach the loss) — 32 bytes per step and rank that certify the whole
sequence of what was consumed (:mod:`~packing_theory.training.certificates`).

Memory is bounded: one step's rows plus at most ``chunk_spans`` spans are
held before they are written. :meth:`~TrainingLedger.state_dict` /
:meth:`~TrainingLedger.load_state_dict` carry the chain and the index's
continuation hints across a checkpoint, so a resumed run continues the same
chain.

>>> import io
>>> from packing_theory.corpus.documents import TokenDocuments
>>> docs = TokenDocuments.from_lists([[0, 1, 2, 3], [0, 4, 5], [0, 6, 7, 8, 9]])
>>> buf = io.BytesIO()
>>> ledger = TrainingLedger(buf, docs, k=2, stride=2)
>>> ledger.observe({"input_ids": [[0, 1, 2, 3, 0, 4]], "labels": [[-100, 1, 2, 3, -100, 4]],
...                 "position_ids": [[0, 1, 2, 3, 0, 1]]})
>>> len(ledger.end_step())
32
>>> ledger.close()
>>> from packing_theory.training.format import read_ledger
>>> _, chunks = read_ledger(io.BytesIO(buf.getvalue()))
>>> chunks[0].spans[["doc", "start", "length", "targets"]].tolist()
[(0, 0, 4, 3), (1, 0, 2, 1)]
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..adapters.records import PIECE_FIELDS, PackedBatch
from ..corpus.documents import DocumentStore
from ..errors import InputError
from .batch import RowView, batch_rows
from .format import FLAG_BOS_INSERTED, ROW_DTYPE, ROW_FIELDS, SPAN_DTYPE, SPAN_FIELDS, LedgerWriter
from .index import DocumentIndex

__all__ = ["CHAIN_SEED", "LEDGER_STATE_FORMAT", "TrainingLedger", "step_digest"]

CHAIN_SEED = bytes(32)
"""The digest before the first step (32 zero bytes)."""
LEDGER_STATE_FORMAT = "packing-theory/training-ledger-state"

_ROW, _OFF, _KIND, _OCC, _SRC, _START, _LEN, _BOS = range(len(PIECE_FIELDS))


def step_digest(previous: bytes, spans: npt.NDArray[Any]) -> bytes:
    """``BLAKE2b-256(previous || (doc, start, length, masked) as <i8 per span)``: one link of the chain.

    >>> s = np.zeros(1, dtype=SPAN_DTYPE); s["length"] = 3; s["targets"] = 2
    >>> import struct
    >>> step_digest(CHAIN_SEED, s) == hashlib.blake2b(bytes(32) + struct.pack("<4q", 0, 0, 3, 1),
    ...                                               digest_size=32).digest()
    True
    """
    table = np.empty((spans.size, 4), dtype="<i8")
    table[:, 0] = spans["doc"]
    table[:, 1] = spans["start"]
    table[:, 2] = spans["length"]
    table[:, 3] = spans["length"] - spans["targets"]
    return hashlib.blake2b(previous + table.tobytes(), digest_size=32).digest()


class TrainingLedger:
    """Record what a model consumed, step by step, for one rank (see the module doc).

    Args:
        path: the ledger file (created or truncated) or a binary file object.
        documents: the corpus as the trainer sees it (BOS-inclusive token ids), or a
            :class:`~packing_theory.training.index.DocumentIndex` built on it.
        rank, world_size: this process's rank and the number of ranks.
        ignore_index: the label that excludes a position from the loss.
        pad_id: a run of this id with ignored labels at the end of a row is padding.
        chunk_spans: spans written per chunk (the bound on buffered spans).
        level: zlib level of the chunks (0: none).
        k, stride: the index's prefix length and anchor stride (when ``documents`` is a corpus).
        meta: extra JSON fields for the file header (the run's name, the packer, ...).

    Complexity: O(positions) numpy work per batch plus the index lookups of the
    segments that are not whole document starts (see
    :class:`~packing_theory.training.index.DocumentIndex`).
    """

    def __init__(self, path: str | os.PathLike[str] | IO[bytes],
                 documents: DocumentStore | Sequence[Sequence[int]] | DocumentIndex, *, rank: int = 0,
                 world_size: int = 1, ignore_index: int = -100, pad_id: int | None = None,
                 chunk_spans: int = 65536, level: int = 1, k: int = 8, stride: int = 16,
                 meta: dict[str, Any] | None = None) -> None:
        self.world_size = check_int("world_size", world_size, 1)
        self.rank = check_int("rank", rank, 0, maximum=self.world_size - 1)
        self.ignore_index = int(ignore_index)
        self.pad_id = None if pad_id is None else check_int("pad_id", pad_id, 0)
        self.chunk_spans = check_int("chunk_spans", chunk_spans, 1)
        self.index = documents if isinstance(documents, DocumentIndex) else DocumentIndex(
            documents, k=k, stride=stride)
        header = {"format": "packing-theory/training-ledger", "rank": self.rank,
                  "world_size": self.world_size, "corpus": self.index.fingerprint,
                  "ignore_index": self.ignore_index, "pad_id": self.pad_id, **(meta or {})}
        self._writer = LedgerWriter(path, header, level=level)
        self.next_step = 0
        self.digest = CHAIN_SEED
        self._micro = 0
        self._step_rows: list[tuple[int, ...]] = []
        self._step_spans: list[tuple[int, int, int, int, int]] = []
        self._rows: list[npt.NDArray[Any]] = []
        self._spans: list[npt.NDArray[Any]] = []
        self._buffered = 0
        self.steps = 0
        self.rows = 0
        self.spans = 0

    # ------------------------------------------------------------------ observing

    def observe(self, batch: Any) -> None:
        """Record one micro-batch of the current step, as the model receives it (see
        :func:`~packing_theory.training.batch.batch_rows` for the shapes read).
        ``PackedBatch`` objects go through :meth:`observe_packed`."""
        if isinstance(batch, PackedBatch):
            self.observe_packed(batch)
            return
        for r, view in enumerate(batch_rows(batch, ignore_index=self.ignore_index, pad_id=self.pad_id)):
            self._add_row(r, view, self._spans_of(view))
        self._micro += 1

    def _spans_of(self, view: RowView) -> list[tuple[int, int, int, int, int]]:
        """The spans of one row, in order: ``(doc, start, length, targets, flags)``."""
        valid = ~view.pad
        brk = view.starts.copy()
        brk[1:] |= view.pad[:-1]
        seg_start = np.flatnonzero(valid & brk)
        stops = np.flatnonzero(np.r_[brk[1:] | view.pad[1:], True])  # last position of each run
        seg_end = stops[np.searchsorted(stops, seg_start)] + 1
        seg_len = seg_end - seg_start
        docs, ok = self.index.whole_documents(view.tokens, seg_start, seg_len)
        cum = np.r_[0, np.cumsum(view.target, dtype=np.int64)]
        out: list[tuple[int, int, int, int, int]] = []
        for i in range(seg_start.size):
            s, e = int(seg_start[i]), int(seg_end[i])
            if ok[i]:
                d = int(docs[i])
                out.append((d, 0, e - s, int(cum[e] - cum[s]), 0))
                self.index.note(d, e - s)
                continue
            p = s
            for doc, start, length, flags in self.index.match(view.tokens[s:e]):
                out.append((doc, start, length, int(cum[p + length] - cum[p]), flags))
                p += length
        return out

    def observe_packed(self, batch: PackedBatch, layout: str = "row") -> None:
        """Record a micro-batch of our own records: the pieces name the documents (no index lookup).

        ``layout="shifted"`` when the trainer received ``batch.shifted()``
        (targets are the row's positions ``>= 1`` either way). Consecutive
        pieces of one occurrence at consecutive offsets form one span, as the
        records' segments do.
        """
        if layout not in ("row", "shifted"):
            raise InputError(f"layout must be 'row' or 'shifted', got {layout!r}")
        p = batch.pieces
        mask = batch.mask.astype(bool)
        R = batch.capacity
        for r in range(batch.n_rows):
            rows_p = p[p[:, _ROW] == r]
            target = mask[r].copy()
            pad = np.zeros(R, dtype=bool)
            spans: list[tuple[int, int, int, int, int]] = []
            prev_end = -1
            for q in rows_p:
                off, length = int(q[_OFF]), int(q[_LEN])
                if q[_KIND] == 2:
                    pad[off : off + length] = True
                    continue
                t = int(target[off : off + length].sum())
                src, start, bos = int(q[_SRC]), int(q[_START]), int(q[_BOS])
                if bos and start == 1:  # BOS + offset 1 onwards holds the document's own start
                    start, bos = 0, 0
                last = spans[-1] if spans else None
                if (last is not None and not bos and last[0] == src and off == prev_end
                        and last[1] + last[2] - (1 if last[4] & FLAG_BOS_INSERTED else 0) == start):
                    spans[-1] = (src, last[1], last[2] + length, last[3] + t, last[4])
                else:
                    spans.append((src, start, length, t, FLAG_BOS_INSERTED if bos else 0))
                prev_end = off + length
            masked = ~target & ~pad
            masked[0] = False
            view = RowView(batch.input_ids[r].astype(np.int64), target, masked, pad, np.zeros(R, bool))
            self._add_row(r, view, spans)
        self._micro += 1

    def _add_row(self, r: int, view: RowView, spans: list[tuple[int, int, int, int, int]]) -> None:
        self._step_rows.append((self.rank, self._micro, r, len(spans), int(view.tokens.size),
                                int(view.pad.sum()), int(view.masked.sum()), int(view.target.sum())))
        self._step_spans.extend(spans)

    def end_step(self, step: int | None = None) -> bytes:
        """Close the current optimizer step (``step``: its number, default the next one); return its digest.

        A step with no micro-batch is recorded as consumed nothing (its digest
        still extends the chain).

        Raises:
            InputError: ``step`` is not after the previous step.
        """
        step = self.next_step if step is None else check_int("step", step, self.next_step)
        rows = np.zeros(len(self._step_rows), ROW_DTYPE)
        if self._step_rows:
            table = np.asarray(self._step_rows, dtype=np.int64)
            for i, name in enumerate(ROW_FIELDS[1:]):
                rows[name] = table[:, i]
        rows["step"] = step
        spans = np.zeros(len(self._step_spans), SPAN_DTYPE)
        if self._step_spans:
            table = np.asarray(self._step_spans, dtype=np.int64)
            for i, name in enumerate(SPAN_FIELDS):
                spans[name] = table[:, i]
        self.digest = step_digest(self.digest, spans)
        if not rows.size:  # an empty step still holds its place: one row of zero positions
            rows = np.zeros(1, ROW_DTYPE)
            rows["step"], rows["rank"], rows["micro"] = step, self.rank, -1
        self._rows.append(rows)
        self._spans.append(spans)
        self._buffered += spans.size
        self.steps += 1
        self.rows += int((rows["micro"] >= 0).sum())
        self.spans += spans.size
        self.next_step = step + 1
        self._micro = 0
        self._step_rows, self._step_spans = [], []
        if self._buffered >= self.chunk_spans:
            self.flush()
        return self.digest

    def flush(self) -> None:
        """Write the buffered steps as one chunk."""
        if self._rows:
            self._writer.append(np.concatenate(self._rows), np.concatenate(self._spans))
            self._rows, self._spans, self._buffered = [], [], 0
        self._writer.flush()

    def close(self) -> None:
        """Write what is buffered and close the file (a pending, unfinished step is dropped)."""
        self.flush()
        self._writer.close()

    @property
    def bytes_written(self) -> int:
        """Bytes written to the file so far."""
        return self._writer.bytes_written

    # ------------------------------------------------------------------ resume

    def state_dict(self) -> dict[str, Any]:
        """The chain and the index's hints at a step boundary (JSON-ready)."""
        return {"format": LEDGER_STATE_FORMAT, "version": 1, "rank": self.rank, "next_step": self.next_step,
                "digest": self.digest.hex(), "hints": [[d, e] for d, e in self.index.hints.items()],
                "corpus": self.index.fingerprint}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the chain of a checkpointed ledger (the rank and the corpus must match).

        Raises:
            InputError: not a ledger state, another rank or corpus, or a step already recorded here.
        """
        if not isinstance(state, dict) or state.get("format") != LEDGER_STATE_FORMAT:
            raise InputError(f"not a {LEDGER_STATE_FORMAT} document")
        if state.get("rank") != self.rank:
            raise InputError(f"ledger state of rank {state.get('rank')!r} loaded into rank {self.rank}")
        if state.get("corpus") != self.index.fingerprint:
            raise InputError("ledger state was written against another corpus (its fingerprint differs)")
        if self.steps:
            raise InputError(f"load_state_dict after {self.steps} recorded steps; load it before the first")
        self.next_step = check_int("next_step", state["next_step"], 0)
        digest = bytes.fromhex(str(state["digest"]))
        if len(digest) != 32:
            raise InputError(f"ledger state digest must be 32 bytes, got {len(digest)}")
        self.digest = digest
        self.index.hints.clear()
        self.index.uncertain.clear()
        for doc, end in state.get("hints", []):
            self.index.note(check_int("hint doc", doc, 0, maximum=len(self.index) - 1), int(end))

    def _check(self) -> None:
        """Assert the ledger's invariants: buffered spans match their rows, counters agree, chain length."""
        assert len(self.digest) == 32
        assert self._buffered == sum(s.size for s in self._spans) <= self.chunk_spans + max(
            (s.size for s in self._spans), default=0)
        for rows, spans in zip(self._rows, self._spans, strict=True):
            assert int(rows["spans"].sum()) == spans.size
            assert (spans["length"] >= 1).all() and (spans["targets"] <= spans["length"]).all()
            assert (spans["targets"] >= 0).all()
        assert sum(r[3] for r in self._step_rows) == len(self._step_spans)
        assert self._writer.spans_written + self._buffered == self.spans
        self.index._check()
