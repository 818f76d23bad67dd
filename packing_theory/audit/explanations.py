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
over-capacity documents", with the longer ones and the ones as long, which the
set's key (length, arrival) ranks above it when they arrived later), by the
filter that removed it, by the horizon when it was still buffered, by a stream
that ran dry before any selection, or by the horizon when it never arrived.

>>> e = explain([3, 40, 5, 50, 2, 60, 4, 70] * 2, 7, policy="discard", capacity=8, min_buffer=4, refill=2)
>>> e.fate, e.protected, e.larger_arrived, e.longer_arrived, e.as_long_arrived
('never started', True, 1, 0, 1)
>>> parts = e.sentence.split("; ")
>>> parts[0]
'document 7 (length 70) under discard: never started'
>>> parts[1][:78]
'at every selection it was among the B − 1 = 3 largest over-capacity documents '
>>> print(*parts[2:], sep=chr(10))  # doctest: +ELLIPSIS
0 longer over-capacity documents had arrived by the horizon (row 6), and 1 as long that arrived after it ...
it arrived in row 1

Document 15, as long, arrived after it and ranks above it in ``K``. With
several passes the sentence names the pass it explains and says the others:

>>> e = explain([3, 40, 5, 50, 2, 60, 4, 70], 5, policy="discard", capacity=8, min_buffer=4, refill=2,
...             passes=2)
>>> print(*e.sentence.split("; "), sep=chr(10))
document 5 (length 60) under discard, pass 0 of 2: partly trained
started in row 5 and emitted 4 of its 60 tokens in row 5
56 discarded
in pass 1 it never started (--pass 1 explains that pass)
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
    """Over-capacity documents arrived by the horizon that the protected set's key ranks above it
    (longer, or as long and arrived later; 0 if not long)."""
    horizon: HorizonStatement
    sentence: str
    longer_arrived: int = 0
    """Of them, the longer ones (the rest of :attr:`larger_arrived` are as long and arrived later)."""
    as_long_arrived: int = 0
    """Other over-capacity occurrences of exactly its length arrived by the horizon, before or after it."""
    source: str = ""
    """Its data source (empty without source labels)."""
    passes: int = 1
    """The passes of the run; the sentence names :attr:`pass_index` when there are several."""
    other_passes: tuple[tuple[int, str], ...] = ()
    """``(pass, fate)`` of the document in each other pass of the run."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "horizon"}
        out["rows"] = list(self.rows)
        out["other_passes"] = [{"pass": q, "fate": f} for q, f in self.other_passes]
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
        pass_index: which pass of a multi-pass run; with several passes the sentence names it
            (``pass 1 of 2``) and says the document's fate in the others.
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
    found = [table.row(i) for i in table.find(document)]
    offered = [r for r in found if int(r["pass"]) >= 0]
    hits = [r for r in offered if int(r["pass"]) == pass_index]
    if not hits:
        raise InputError(f"document {document!r} has no pass {pass_index} in this run")
    row = hits[0]
    others = tuple((int(r["pass"]), str(r["fate"])) for r in offered if int(r["pass"]) != pass_index)
    h = horizon_statement(agg, horizon, streaming=e.kind == "streaming")
    occ = int(row["occurrence"])
    held_rows: tuple[int, ...] = ()
    arrival_row = -1
    rivals = _Rivals(0, 0, 0, 0)
    if occ >= 0:
        held_rows = tuple(sorted({iv.row for iv in ledger.record(occ).intervals} - {agg.rows}))
        arrival_row = int(facts.arrival_rows(occ, occ + 1)[0])
        if row["length"] > packer.capacity:
            rivals = _rivals(ledger.arrays(), occ, packer.capacity)
    reason = facts.filtered_reason.get(occ) if occ >= 0 else None
    passes_run = max(len(offered), 1)
    which = f", pass {pass_index} of {passes_run}" if passes_run > 1 else ""
    sentence = _sentence(row, e, h, packer.capacity, min_buffer, held_rows, arrival_row, rivals, reason,
                         which)
    if others:
        sentence += f"; {_others_text(others)}"
    return Explanation(policy, int(row["document"]), int(row["pass"]), str(row["name"]), int(row["length"]),
                       str(row["fate"]), bool(row["protected"]), int(row["first_row"]), arrival_row,
                       held_rows,
                       int(row["emitted"]), int(row["partial_row"]), int(row["discarded"]),
                       int(row["filtered"]), int(row["buffered"]),
                       int(row["never_reached"]), rivals.longer + rivals.after, h, sentence,
                       longer_arrived=rivals.longer, as_long_arrived=rivals.after + rivals.before,
                       source=str(row["source"]), passes=passes_run, other_passes=others)


@dataclass(frozen=True)
class _Rivals:
    """The other over-capacity occurrences arrived by the horizon, against one of them: ``longer``; as long
    and arrived ``after`` it (ranked above it: the protected set's key is (length, arrival), so a length
    tie goes to the later arrival) or ``before`` it (ranked below); ``own``: of the as long, its own
    occurrences in other passes."""

    longer: int
    after: int
    before: int
    own: int


def _rivals(a: Mapping[str, npt.NDArray[Any]], occ: int, capacity: int) -> _Rivals:
    """The :class:`_Rivals` of occurrence ``occ`` among the ledger's columns ``a``. O(occurrences)."""
    idx = np.flatnonzero(a["arrived"] & (a["length"] > capacity))
    lengths, mine = a["length"][idx], int(a["length"][occ])
    tied = idx[(lengths == mine) & (idx != occ)]
    own = int(np.count_nonzero(a["source"][tied] == a["source"][occ]))
    return _Rivals(int(np.count_nonzero(lengths > mine)), int(np.count_nonzero(tied > occ)),
                   int(np.count_nonzero(tied < occ)), own)


def _rows_text(rows: tuple[int, ...]) -> str:
    shown = ", ".join(f"{r:,}" for r in rows[:12])
    return shown + (f", … ({len(rows):,} rows)" if len(rows) > 12 else "")


def _who(row: Mapping[str, Any]) -> str:
    """``document 7 (book-7, source books, length 70)``: its index, name and source when known, length."""
    known = [str(row["name"])] if row["name"] else []
    if row["source"]:
        known.append(f"source {row['source']}")
    known.append(f"length {row['length']:,}")
    return f"document {row['document']} ({', '.join(known)})"


def _others_text(others: tuple[tuple[int, str], ...]) -> str:
    """The document's fate in the other passes of the run, and how to ask about one."""
    def fate_words(fate: str) -> str:
        return f"it {fate}" if fate == "never started" else f"it was {fate}"

    if len(others) == 1:
        q, fate = others[0]
        return f"in pass {q} {fate_words(fate)} (--pass {q} explains that pass)"
    by_fate: dict[str, list[int]] = {}
    for q, fate in others:
        by_fate.setdefault(fate, []).append(q)
    said = [f"pass{'es' if len(qs) > 1 else ''} {_rows_text(tuple(qs))} {fate}"
            for fate, qs in by_fate.items()]
    return f"in the other passes: {', '.join(said)} (--pass K explains pass K)"


def _rivals_text(r: _Rivals, stop_row: int) -> str:
    """The over-capacity documents that arrived by the horizon against this one, ties by arrival."""
    text = (f"{r.longer:,} longer over-capacity document{'s' if r.longer != 1 else ''} had arrived by the "
            f"horizon (row {stop_row:,})")
    if not (r.after or r.before):
        return text
    mine = ("its own occurrence in another pass" if r.own == 1
            else f"its own occurrences in {r.own:,} other passes")
    own = "" if not r.own else f" ({mine})" if r.own == r.after + r.before else f" ({r.own:,} of them {mine})"
    if r.after and r.before:
        text += (f", and {r.after + r.before:,} as long{own}: {r.after:,} arrived after it and rank"
                 f"{'s' if r.after == 1 else ''} above it, {r.before:,} before it and rank"
                 f"{'s' if r.before == 1 else ''} below it")
    else:
        n, when, rank = (r.after, "after", "above") if r.after else (r.before, "before", "below")
        verb = "ranks" if n == 1 else "rank"
        text += f", and {n:,} as long{own} that arrived {when} it and so {verb} {rank} it"
    return f"{text} (K breaks a length tie by arrival, the later first)"


def _sentence(row: dict[str, Any], e: Any, h: HorizonStatement, R: int, B: int, rows: tuple[int, ...],
              arrival_row: int, rivals: _Rivals, reason: str | None, which: str = "") -> str:
    head = f"{_who(row)} under {e.name}{which}: {row['fate']}"
    stop = f"the run stopped at row {h.stopped_at_row:,} ({h.reason})"
    if row["fate"] == "never reached":
        return f"{head}; {stop} before it arrived"
    if reason is not None:
        return f"{head}; the packer filtered it before packing ({reason})"
    if row["fate"] == "never started":
        arrived = f"it arrived in row {arrival_row:,}"
        if h.never_selected:
            return (f"{head}; nothing was selected: {h.sentence()}")
        if row["protected"] and e.in_family and e.protected_set and h.reason != "drained":
            return (f"{head}; at every selection it was among the B − 1 = {B - 1:,} largest over-capacity "
                    f"documents (the protected set K), which seed 000 §3 keeps buffered and unstarted; "
                    f"{_rivals_text(rivals, h.stopped_at_row)}; {arrived}")
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
    if row["fate"] == "never trained (unfinished row)":  # its partial-row tokens are the sentence itself
        others = f"; {', '.join(lost[:-1])}" if len(lost) > 1 else ""
        return (f"{head}; all {row['partial_row']:,} tokens it had placed are in the unfinished last row "
                f"{h.stopped_at_row:,}, which is never delivered, so none of its {row['length']:,} tokens "
                f"was trained{others}")
    where = f" in row{'s' if len(rows) != 1 else ''} {_rows_text(rows)}" if rows else ""
    return (f"{head}; started in row {row['first_row']:,} and emitted {row['emitted']:,} of its "
            f"{row['length']:,} tokens{where}{rest}")
