"""Reconcile a training ledger with the library's replay: every step equal, or the first divergence named.

:func:`reconcile` replays the packer the run used (a registered name and its
options, :func:`~packing_theory.registry.build_packer`) over the corpus,
deals the rows to steps and ranks by a :class:`~packing_theory.training.Schedule`,
and walks the ledger in ``(step, rank)`` order comparing, for each record,
the sequence of document spans ``(doc, start, length)`` the model consumed
with the one the replay prescribes (consecutive spans of one document at
consecutive offsets merged on both sides; spans that differ in name but hold
the same tokens — identical documents — are equal). The first difference is
classified:

=============  ==================================================================
class          meaning
=============  ==================================================================
fully masked   a span of >= 2 positions none of which reached the loss (every
               label ignored, e.g. a prompt whose completion truncation removed)
foreign        tokens of no corpus document, or of a document the replay never
               places
truncated      the replay's document and offset, fewer positions
duplicated     tokens the run had already consumed earlier
skipped        the replay's span is consumed nowhere in the ledger
reordered      both are consumed, elsewhere
=============  ==================================================================

The whole ledger is read in any case (memory: one chunk per ledger, the
replay's spans of the scheduled rows, O(documents) totals, and the consumed
offsets of the documents seen before the first divergence) for the
per-document and per-source figures:
positions and trained targets per document against the replay's (targets by
the packer's trainer rule), documents that were consumed but never trained,
and the realised share of each data source against the declared mixture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.declared import DeclaredMixture
from ..corpus.documents import DocumentStore, lengths_fingerprint
from ..corpus.labels import SourceLabels
from ..errors import InputError, NotMeasured
from ..registry import build_packer
from .format import FLAG_AMBIGUOUS, FLAG_BOS_INSERTED, FOREIGN
from .index import as_token_documents
from .merge import LedgerSource, StepRecord, as_sources, iter_steps, ledger_metas
from .result import Divergence, Reconciliation
from .schedule import ExpectedRows, Schedule, target_unit

__all__ = ["reconcile"]

_Obs = tuple[int, int, int, int, int, int, int]  # doc, start, length, targets, flags, micro, row


def _merge(spans: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Merge consecutive spans of one document at consecutive offsets (targets and lengths add)."""
    out: list[tuple[Any, ...]] = []
    for s in spans:
        if out:
            p = out[-1]
            end = p[1] + p[2] - (1 if p[4] & FLAG_BOS_INSERTED else 0)
            if s[0] == p[0] and s[0] != FOREIGN and not s[4] & FLAG_BOS_INSERTED and s[1] == end:
                out[-1] = (p[0], p[1], p[2] + s[2], p[3] + s[3], p[4], *p[5:])
                continue
        out.append(tuple(s))
    return out


def _observed(rec: StepRecord, corpus: _Corpus) -> list[_Obs]:
    """A record's spans, ambiguous ones resolved by their successor, merged."""
    rows, spans = rec.rows, rec.spans
    which = np.repeat(np.arange(rows.size), rows["spans"])
    out = [(int(s["doc"]), int(s["start"]), int(s["length"]), int(s["targets"]), int(s["flags"]),
            int(rows["micro"][w]), int(rows["row"][w])) for s, w in zip(spans, which, strict=True)]
    for i in range(len(out) - 2, -1, -1):  # a run several documents hold, before the continuation of one
        a, b = out[i], out[i + 1]
        if a[4] & FLAG_AMBIGUOUS and not a[4] & FLAG_BOS_INSERTED and b[0] >= 0 and b[1] >= a[2] \
                and not b[4] & FLAG_BOS_INSERTED:
            cand = (b[0], b[1] - a[2], a[2], a[3], 0, a[5], a[6])
            if corpus.same(a, cand):
                out[i] = cand
    return _merge(out)


class _Coverage:
    """Per document the merged intervals of its consumed source offsets (bounded by spans consumed)."""

    def __init__(self) -> None:
        self.iv: dict[int, list[tuple[int, int]]] = {}

    @staticmethod
    def _interval(s: tuple[Any, ...]) -> tuple[int, int]:
        bos = 1 if s[4] & FLAG_BOS_INSERTED else 0
        return s[1], s[1] + s[2] - bos

    def add(self, s: tuple[Any, ...]) -> None:
        if s[0] < 0:
            return
        a, b = self._interval(s)
        if a >= b:  # a lone inserted BOS holds no source offset
            return
        cur = self.iv.setdefault(s[0], [])
        cur.append((a, b))
        if len(cur) > 1:
            cur.sort()
            merged = [cur[0]]
            for x, y in cur[1:]:
                if x <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], y))
                else:
                    merged.append((x, y))
            self.iv[s[0]] = merged

    def _check(self) -> None:
        """Assert: every document's intervals are non-empty, sorted and disjoint."""
        for cur in self.iv.values():
            assert all(a < b for a, b in cur)
            assert all(cur[i][1] < cur[i + 1][0] for i in range(len(cur) - 1))

    def overlaps(self, s: tuple[Any, ...]) -> bool:
        a, b = self._interval(s)
        return any(x < b and a < y for x, y in self.iv.get(s[0], ()))


class _Corpus:
    def __init__(self, documents: DocumentStore | Sequence[Sequence[int]]) -> None:
        store = as_token_documents(documents)
        self.tokens, self.offsets = store.tokens, store.offsets
        self.n = int(self.offsets.size - 1)

    def content(self, s: tuple[Any, ...]) -> npt.NDArray[np.int64]:
        doc, start, length, flags = s[0], s[1], s[2], s[4]
        base = int(self.offsets[doc])
        if flags & FLAG_BOS_INSERTED:
            head = self.tokens[base : base + 1]
            return np.concatenate([head, self.tokens[base + start : base + start + length - 1]])
        return self.tokens[base + start : base + start + length]

    def same(self, o: tuple[Any, ...], e: tuple[Any, ...]) -> bool:
        if (o[0], o[1], o[2], o[4] & FLAG_BOS_INSERTED) == (e[0], e[1], e[2], e[4] & FLAG_BOS_INSERTED):
            return True
        if o[0] < 0 or e[0] < 0 or o[2] != e[2]:
            return False
        return bool(np.array_equal(self.content(o), self.content(e)))


def _bounds(sources: list[LedgerSource]) -> dict[int, int]:
    """Per rank, its last recorded step."""
    last: dict[int, int] = {}
    for rec in iter_steps(sources):
        last[rec.rank] = rec.step
    return last


def reconcile(ledger: LedgerSource | Sequence[LedgerSource],
              documents: DocumentStore | Sequence[Sequence[int]], policy: str, *,
              capacity: int | None = None, seq_length: int | None = None,
              options: dict[str, Any] | None = None, schedule: Schedule | None = None,
              labels: SourceLabels | None = None, mixture: DeclaredMixture | None = None,
              unit: str | None = None) -> Reconciliation:
    """Compare a ledger (one file, or one per rank) with the replay of ``policy`` over ``documents``.

    Args:
        ledger: the ledger file(s).
        documents: the corpus the run read (token ids, BOS-inclusive), in raw corpus order.
        policy, capacity, seq_length, options: the packer, as
            :func:`~packing_theory.registry.build_packer` takes it.
        schedule: how rows reach steps and ranks (default: one rank, one row per step).
        labels: each document's data source, for the per-source figures.
        mixture: the declared mixture the realised shares are compared with.
        unit: override the trainer rule's unit (``"row"``, ``"sequence"``, ``"position"``).

    Raises:
        InputError: a ledger of another corpus, ranks beyond the schedule, bad packer options.
        NotMeasured: the ledger records no step.
    """
    sources = as_sources(ledger)
    corpus = _Corpus(documents)
    metas = ledger_metas(sources)
    lengths = np.diff(corpus.offsets)
    if metas[0].get("corpus") != lengths_fingerprint(lengths):
        raise InputError("the ledger was written against another corpus than the documents given "
                         f"(ledger {metas[0].get('corpus')}, documents {lengths_fingerprint(lengths)})")
    sched = schedule or Schedule()
    if labels is not None:
        labels.check_documents(corpus.n)
    finals = _bounds(sources)
    if not finals:
        raise NotMeasured("the ledger records no step: nothing to reconcile")
    if max(finals) >= sched.world_size:
        raise InputError(f"the ledger records rank {max(finals)}, the schedule has world_size "
                         f"{sched.world_size}")
    packer = build_packer(policy, capacity, seq_length=seq_length, **(options or {}))
    rule = unit or target_unit(packer)
    limit = sched.max_row(max(finals.values()))
    expected = ExpectedRows(packer.events(lengths), packer.capacity, rule, limit, corpus.n)
    return _walk(sources, corpus, sched, expected, labels, mixture, policy, finals)


def _walk(sources: list[LedgerSource], corpus: _Corpus, sched: Schedule, expected: ExpectedRows,
          labels: SourceLabels | None, mixture: DeclaredMixture | None, policy: str,
          finals: dict[int, int]) -> Reconciliation:
    n = corpus.n
    placed = np.zeros(n, dtype=np.int64)
    expected_pos = np.zeros(n, dtype=np.int64)
    expected_tgt = np.zeros(n, dtype=np.int64)
    trained = np.zeros(n, dtype=np.int64)
    totals = {"rows": 0, "positions": 0, "padding": 0, "masked": 0, "targets": 0, "foreign": 0, "spans": 0}
    seen, later = _Coverage(), _Coverage()
    found: _Found | None = None
    differing = records = 0
    last_step: dict[int, int] = {}
    for rec in iter_steps(sources):
        records += 1
        rows = rec.rows[rec.rows["micro"] >= 0]
        for key in ("positions", "padding", "masked", "targets"):
            totals[key] += int(rows[key].sum())
        totals["rows"] += int(rows.size)
        want = sched.rows(rec.step, rec.rank)
        exp = _merge([(*s, r) for r in want for s in expected.row(r)])
        obs = _observed(rec, corpus)
        if finals[rec.rank] == rec.step and not _equal(obs, exp, corpus):  # a final step that ended early?
            for n in range(len(want)):
                head = _merge([(*s, r) for r in want[:n] for s in expected.row(r)])
                if _equal(obs, head, corpus):
                    exp = head
                    break
        for i, s in enumerate(obs):
            totals["spans"] += 1
            # a span that several documents hold is the replay's document where the contents agree
            doc = exp[i][0] if s[4] & FLAG_AMBIGUOUS and i < len(exp) and corpus.same(s, exp[i]) else s[0]
            if doc >= 0:
                placed[doc] += s[2]
                trained[doc] += s[3]
            else:
                totals["foreign"] += s[2]
        for s in exp:
            expected_pos[s[0]] += s[2]
            expected_tgt[s[0]] += s[3]
        if found is None:
            previous = last_step.get(rec.rank)
            if previous is not None and rec.step > previous + 1:  # a step this rank never recorded
                gone = previous + 1
                missing = _merge([(*s, r) for r in sched.rows(gone, rec.rank) for s in expected.row(r)])
                found = _Found("gap", gone, rec.rank, -1, -1, None, missing[0] if missing else None, False)
            else:
                found = _first_difference(rec, obs, exp, corpus, seen)
            if found is None:
                for s in obs:
                    seen.add(s)
            else:
                differing += 1
                for s in obs[max(found.index, 0):]:
                    later.add(s)
        else:
            differing += 0 if _equal(obs, exp, corpus) else 1
            for s in obs:
                later.add(s)
        last_step[rec.rank] = rec.step
    divergence = None if found is None else _classify(found, seen, later, expected.replayed)
    return Reconciliation.build(policy=policy, schedule=sched, records=records, differing=differing,
                                divergence=divergence, totals=totals, placed=placed, trained=trained,
                                expected_positions=expected_pos, expected_targets=expected_tgt,
                                unit=expected.unit, labels=labels, mixture=mixture)


class _Found:
    """The first difference, before it is classified (the rest of the ledger decides ``skipped``)."""

    def __init__(self, kind: str | None, step: int, rank: int, micro: int, row: int, obs: _Obs | None,
                 exp: tuple[Any, ...] | None, duplicated: bool, index: int = -1) -> None:
        self.kind, self.step, self.rank, self.micro, self.row = kind, step, rank, micro, row
        self.obs, self.exp, self.duplicated, self.index = obs, exp, duplicated, index


def _equal(obs: list[_Obs], exp: list[tuple[Any, ...]], corpus: _Corpus) -> bool:
    return len(obs) == len(exp) and all(corpus.same(o, e) for o, e in zip(obs, exp, strict=True))


def _first_difference(rec: StepRecord, obs: list[_Obs], exp: list[tuple[Any, ...]], corpus: _Corpus,
                      seen: _Coverage) -> _Found | None:
    """The first span of a record that differs from the replay or is fully masked (``None``: none)."""
    for i in range(max(len(obs), len(exp))):
        o = obs[i] if i < len(obs) else None
        e = exp[i] if i < len(exp) else None
        equal = o is not None and e is not None and corpus.same(o, e)
        if o is not None and o[0] >= 0 and o[2] >= 2 and o[3] == 0 and (equal or e is None):
            return _Found("fully masked", rec.step, rec.rank, o[5], o[6], o, e, False, i)
        if not equal:
            return _Found(None, rec.step, rec.rank, o[5] if o else -1, o[6] if o else -1, o, e,
                          o is not None and seen.overlaps(o), i)
        seen.add(o)  # type: ignore[arg-type]
    return None


def _classify(f: _Found, seen: _Coverage, later: _Coverage, replayed: npt.NDArray[np.bool_]) -> Divergence:
    o, e = f.obs, f.exp
    if f.kind == "gap":
        cls = "skipped"
    elif f.kind == "fully masked":
        cls = "fully masked"
    elif o is not None and (o[0] == FOREIGN or not replayed[o[0]]):
        cls = "foreign"
    elif o is not None and e is not None and (o[0], o[1]) == (e[0], e[1]) and o[2] < e[2]:
        cls = "truncated"
    elif f.duplicated:
        cls = "duplicated"
    elif e is not None and not seen.overlaps(e) and not later.overlaps(e):
        cls = "skipped"
    else:
        cls = "reordered"
    return Divergence(cls, f.step, f.rank, f.micro, f.row,
                      None if o is None else (o[0], o[1], o[2]), None if e is None else (e[0], e[1], e[2]),
                      None if e is None else int(e[5]))
