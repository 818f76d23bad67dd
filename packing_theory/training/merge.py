"""Ledgers of several ranks as one sequence of ``(step, rank)`` records, and their merge into one file.

Each rank writes its own ledger (:class:`~packing_theory.training.TrainingLedger`,
one file per process: no communication during training). :func:`iter_steps`
reads one or several ledgers as one stream ordered by ``(step, rank)`` with
a k-way merge (memory: one chunk per file), and :func:`merge_ledgers` writes
that stream to one file, after checking that every ledger was written
against the same corpus and that no rank appears twice.
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, cast

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from .format import LedgerWriter, iter_chunks, read_meta

__all__ = ["LedgerSource", "StepRecord", "as_sources", "iter_steps", "ledger_metas", "merge_ledgers"]

LedgerSource = str | os.PathLike[str] | IO[bytes]


def as_sources(sources: LedgerSource | Sequence[LedgerSource]) -> list[LedgerSource]:
    """One ledger (a path or a binary file) or several, as a list."""
    if isinstance(sources, (str, os.PathLike)) or hasattr(sources, "read"):
        return [cast(LedgerSource, sources)]
    return list(sources)


@dataclass(frozen=True)
class StepRecord:
    """What one rank consumed in one optimizer step: its rows and their spans (structured arrays)."""

    step: int
    rank: int
    rows: npt.NDArray[Any]
    spans: npt.NDArray[Any]

    @property
    def consumed(self) -> bool:
        """Whether the step held at least one row (an empty step is a placeholder row with ``micro = -1``)."""
        return bool((self.rows["micro"] >= 0).any())


def _file_steps(source: LedgerSource) -> Iterator[StepRecord]:
    """The records of one ledger in file order."""
    for chunk in iter_chunks(source):
        rows, spans = chunk.rows, chunk.spans
        if rows.size == 0:
            continue
        first_span = np.r_[0, np.cumsum(rows["spans"])]
        key = rows["step"] * (1 << 20) + rows["rank"]
        cut = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
        for a, b in itertools.pairwise(cut.tolist()):
            yield StepRecord(int(rows["step"][a]), int(rows["rank"][a]), rows[a:b],
                             spans[first_span[a] : first_span[b]])


def ledger_metas(sources: Sequence[LedgerSource]) -> list[dict[str, Any]]:
    """The headers of ``sources``, checked to share one corpus.

    Raises:
        InputError: no source, or two ledgers written against different corpora (naming both).
    """
    if not sources:
        raise InputError("no ledger given")
    metas = [read_meta(s) for s in sources]
    for i, m in enumerate(metas[1:], 1):
        if m.get("corpus") != metas[0].get("corpus"):
            raise InputError(f"ledger {i} was written against another corpus than ledger 0 "
                             f"({m.get('corpus')} != {metas[0].get('corpus')})")
    return metas


def iter_steps(sources: LedgerSource | Sequence[LedgerSource]) -> Iterator[StepRecord]:
    """Every ``(step, rank)`` record of one or several ledgers, ordered by step then rank.

    Each file must hold its records in increasing ``(step, rank)`` order (a
    :class:`~packing_theory.training.TrainingLedger` writes them so).
    Memory: one chunk per file.

    Raises:
        InputError: a file out of order, or a ``(step, rank)`` recorded twice (naming it).
    """
    streams = [_ordered(_file_steps(s), i) for i, s in enumerate(as_sources(sources))]
    last: tuple[int, int] | None = None
    for rec in heapq.merge(*streams, key=lambda r: (r.step, r.rank)):
        if last == (rec.step, rec.rank):
            raise InputError(f"step {rec.step} of rank {rec.rank} is recorded twice")
        last = (rec.step, rec.rank)
        yield rec


def _ordered(records: Iterator[StepRecord], which: int) -> Iterator[StepRecord]:
    last: tuple[int, int] | None = None
    for rec in records:
        if last is not None and (rec.step, rec.rank) <= last:
            raise InputError(f"ledger {which}: step {rec.step} of rank {rec.rank} follows step {last[0]} of "
                             f"rank {last[1]} (records must increase)")
        last = (rec.step, rec.rank)
        yield rec


def merge_ledgers(sources: Sequence[LedgerSource], target: LedgerSource, *, chunk_spans: int = 65536,
                  level: int = 1) -> dict[str, Any]:
    """Merge per-rank ledgers into one file ordered by ``(step, rank)``; return the merged header.

    Raises:
        InputError: different corpora, or one rank in two ledgers.
    """
    metas = ledger_metas(sources)
    ranks = [m.get("rank") for m in metas]
    if len(set(ranks)) != len(ranks):
        raise InputError(f"a rank appears in two ledgers: ranks {ranks}")
    meta = {k: v for k, v in metas[0].items() if k != "rank"}
    meta["ranks"] = sorted(int(r) for r in ranks if r is not None)
    writer = LedgerWriter(target, meta, level=level)
    rows: list[npt.NDArray[Any]] = []
    spans: list[npt.NDArray[Any]] = []
    held = 0
    for rec in iter_steps(list(sources)):
        rows.append(rec.rows)
        spans.append(rec.spans)
        held += rec.spans.size
        if held >= chunk_spans:
            writer.append(np.concatenate(rows), np.concatenate(spans))
            rows, spans, held = [], [], 0
    if rows:
        writer.append(np.concatenate(rows), np.concatenate(spans))
    writer.close()
    return meta
