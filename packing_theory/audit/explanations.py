"""What happened to one document under one packer, and why, in plain words.

:func:`explain` replays a corpus with one packer (streaming or peer) to a
horizon, keeps the placements (a detail-mode :class:`~packing_theory.audit.Ledger`)
and the arrival rows (:class:`~packing_theory.audit.documents.DocumentRows`),
and answers for one document — by id or by name — with an
:class:`Explanation`: its row of the per-document table
(:func:`~packing_theory.audit.documents.document_table`, the same figures
``documents.csv`` holds), the rows holding its tokens, and a sentence saying
why. A document that never started is explained by the protected set when
the theorem applies ("at every selection it was among the B − 1 = 63 largest
over-capacity documents"), by the filter that removed it, by the horizon when
it was still buffered, or by the horizon when it never arrived.

>>> e = explain([3, 40, 5, 50, 2, 60, 4, 70] * 2, 7, policy="discard", capacity=8, min_buffer=4, refill=2)
>>> e.fate, e.protected, e.larger_arrived
('never started', True, 1)
>>> parts = e.sentence.split("; ")
>>> parts[0]
'document 7 (length 70) under discard: never started'
>>> parts[1][:78]
'at every selection it was among the B − 1 = 3 largest over-capacity documents '
>>> parts[2:]
['1 larger over-capacity document had arrived by the horizon (row 6)', 'it arrived in row 1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..engine.consumers import feed_all
from ..engine.horizon import Budget, cut_at_horizon
from ..errors import InputError
from ..lengths import validate_lengths
from ..registry import entry
from .documents import DocumentRows, document_table
from .identity import DocumentIdentity, NameSource
from .ledger import Ledger
from .untrained import HorizonStatement, horizon_statement

__all__ = ["Explanation", "explain"]


@dataclass(frozen=True)
class Explanation:
    """One document under one packer: the table row, the rows holding its tokens, the reason in words."""

    packer: str
    document: int
    pass_index: int
    name: str
    length: int
    fate: str
    protected: bool
    first_row: int
    arrival_row: int
    rows: tuple[int, ...]
    """Complete rows holding its tokens (each once, increasing); the partial row is not among them."""
    emitted: int
    partial_row: int
    """Its tokens in the incomplete last row of a stream that ran dry (never trained)."""
    discarded: int
    filtered: int
    buffered: int
    never_reached: int
    larger_arrived: int
    """Over-capacity documents with a larger key (length, arrival) arrived by the horizon (0 if not long)."""
    horizon: HorizonStatement
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "horizon"}
        out["rows"] = list(self.rows)
        out["horizon"] = self.horizon.to_dict()
        return out


def explain(lengths: npt.ArrayLike, document: str | int, *, policy: str = "discard", capacity: int = 2049,
            min_buffer: int = 1000, horizon: Budget | None = None,
            names: Sequence[str] | NameSource | None = None,
            pass_index: int = 0, options: Mapping[str, Any] | None = None,
            identity: DocumentIdentity | None = None, **knobs: Any) -> Explanation:
    """Explain what ``policy`` did to ``document`` (an id, or a name of ``names``) at ``horizon``.

    Args:
        lengths: BOS-inclusive document lengths (the corpus).
        document: an ``int`` is a document id (``0 .. N - 1``); a string is a
            name from ``names`` (exact, else a unique whole-component path
            suffix), and a string of ASCII digits is the document named
            exactly so when there is one, else an id
            (:func:`~packing_theory.audit.documents.lookup_document`).
        policy: a streaming policy or a peer (``packing-theory policies``).
        capacity: the row width ``R``; ``min_buffer`` is ``B`` (for a peer,
            only the protected-set columns use it).
        horizon: where to cut the run (``None``: the packer's natural end).
        pass_index: which pass of a multi-pass run.
        identity: who each document of ``lengths`` is in the raw corpus
            (:class:`~packing_theory.audit.identity.DocumentIdentity`: its raw index when a cleaning
            funnel kept only some documents, names and sources over the raw corpus); a numeric
            ``document`` is then a raw index, and the explanation names it so. Overrides ``names``.
        options, knobs: the packer's options (``refill=``, ``passes=``,
            ``exhausted=``, a peer's knobs).

    Raises:
        InputError: an unknown packer or document, bad lengths or options.

    Complexity: one replay with a detail-mode ledger: O(events) time and
    O(placements) memory.
    """
    arr = validate_lengths(np.asarray(lengths))
    e = entry(policy)
    given = {**dict(options or {}), **knobs}
    if e.kind == "streaming":
        given["min_buffer"] = min_buffer
    packer = e.build(capacity, **given)
    passes = int(getattr(getattr(packer, "config", None), "passes", 1)) if e.kind == "streaming" else None
    ledger = Ledger(packer.capacity, min_buffer, policy=policy, detail=True)
    rows = DocumentRows(packer.capacity)
    agg, facts = feed_all(cut_at_horizon(packer.events(arr), horizon, capacity=packer.capacity), ledger, rows)
    table = document_table(ledger, facts, arr, passes=passes, names=names, identity=identity)
    hits = [i for i in table.find(document) if int(table.row(i)["pass"]) == pass_index]
    if not hits:
        raise InputError(f"document {document!r} has no pass {pass_index} in this run")
    row = table.row(hits[0])
    h = horizon_statement(agg, horizon, streaming=e.kind == "streaming")
    occ = int(row["occurrence"])
    held_rows: tuple[int, ...] = ()
    arrival_row = -1
    larger = 0
    if occ >= 0:
        held_rows = tuple(sorted({iv.row for iv in ledger.record(occ).intervals} - {agg.rows}))
        arrival_row = int(facts.arrival_rows(occ, occ + 1)[0])
        a = ledger.arrays()
        long_arrived = a["arrived"] & (a["length"] > packer.capacity)
        if row["length"] > packer.capacity:
            idx = np.flatnonzero(long_arrived)
            L, mine = a["length"][idx], int(row["length"])
            larger = int((np.greater(L, mine) | (np.equal(L, mine) & (idx > occ))).sum())
    reason = facts.filtered_reason.get(occ) if occ >= 0 else None
    sentence = _sentence(row, e, h, packer.capacity, min_buffer, held_rows, arrival_row, larger, reason)
    return Explanation(policy, int(row["document"]), int(row["pass"]), str(row["name"]), int(row["length"]),
                       str(row["fate"]), bool(row["protected"]), int(row["first_row"]), arrival_row,
                       held_rows,
                       int(row["emitted"]), int(row["partial_row"]), int(row["discarded"]),
                       int(row["filtered"]), int(row["buffered"]),
                       int(row["never_reached"]), larger, h, sentence)


def _rows_text(rows: tuple[int, ...]) -> str:
    shown = ", ".join(f"{r:,}" for r in rows[:12])
    return shown + (f", … ({len(rows):,} rows)" if len(rows) > 12 else "")


def _sentence(row: dict[str, Any], e: Any, h: HorizonStatement, R: int, B: int, rows: tuple[int, ...],
              arrival_row: int, larger: int, reason: str | None) -> str:
    who = f"document {row['document']}" + (f" ({row['name']}, length {row['length']:,})" if row["name"]
                                            else f" (length {row['length']:,})")
    head = f"{who} under {e.name}: {row['fate']}"
    stop = f"the run stopped at row {h.stopped_at_row:,} ({h.reason})"
    if row["fate"] == "never reached":
        return f"{head}; {stop} before it arrived"
    if reason is not None:
        return f"{head}; the packer filtered it before packing ({reason})"
    if row["fate"] == "never started":
        arrived = f"it arrived in row {arrival_row:,}"
        if h.reason == "stream exhausted" and h.stopped_at_row == 0:  # no selection was ever made
            return (f"{head}; nothing was selected: {h.sentence()}")
        if row["protected"] and e.in_family and e.protected_set and h.reason != "drained":
            others = f"{larger:,} larger over-capacity document{'s' if larger != 1 else ''}"
            return (f"{head}; at every selection it was among the B − 1 = {B - 1:,} largest over-capacity "
                    f"documents (the protected set K), which seed 000 §3 keeps buffered and unstarted; "
                    f"{others} had arrived by the horizon (row {h.stopped_at_row:,}); {arrived}")
        if row["protected"]:
            return (f"{head}; it is in the protected set K at the horizon, but the theorem does not cover "
                    f"this run ({'--drain' if h.reason == 'drained' else e.status}); still buffered when "
                    f"{stop}; {arrived}")
        return (f"{head}; still buffered when {stop}: no selection took it before the horizon (it is not in "
                f"K, so the theorem does not force this); {arrived}")
    lost = []
    if row["discarded"]:
        lost.append(f"{row['discarded']:,} discarded")
    if row["filtered"]:
        lost.append(f"{row['filtered']:,} filtered")
    if row["buffered"]:
        lost.append(f"{row['buffered']:,} still buffered at the horizon")
    if row["partial_row"]:
        lost.append(f"{row['partial_row']:,} in the partial row {h.stopped_at_row:,}, which is never trained")
    rest = f"; {', '.join(lost)}" if lost else ""
    where = f" in row{'s' if len(rows) != 1 else ''} {_rows_text(rows)}" if rows else ""
    return (f"{head}; started in row {row['first_row']:,} and emitted {row['emitted']:,} of its "
            f"{row['length']:,} tokens{where}{rest}")
