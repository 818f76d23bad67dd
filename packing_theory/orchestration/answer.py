"""The answer every report gives first: what happened to your tokens, which documents, what differs.

One vocabulary for ``audit`` and ``compare`` (``docs/never_trained.rst``):

* :func:`decomposition` — a packer's offered tokens split into the parts that
  are the answer: *trained* (in rows the trainer receives), *never started*
  (whole documents), *cut off* (tails of started documents), *still buffered*,
  *in the unfinished row*, *never reached* (beyond the horizon); they sum to
  the tokens offered, exactly;
* :func:`packer_answer` — that decomposition in one sentence, each share
  beside its own quantity;
* :data:`RANKED` — the quantities that differ between packers at a common
  horizon (documents with no token trained, tokens cut off, start delays,
  prefix bias, distance from the declared mixture, unused row positions) and
  :func:`ranking`, which ranks by the first of them that is not equal for
  every packer, then breaks ties by the next that differs among the tied
  packers (:func:`leaders` says how first place was decided); the untrained
  *total* is equal by construction at a common
  token horizon and is stated once, never ranked (:func:`equal_figures`);
* :func:`never_started_documents` — the largest documents a packer never
  started, by raw index, name and data source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..audit.untrained import NeverTrained
from ..reporting.model import Bars, Column, Table

if TYPE_CHECKING:
    from .corpus import Corpus
    from .measure import Measurement, PackerRun

__all__ = [
    "PARTS",
    "PART_TERMS",
    "RANKED",
    "Ranked",
    "Ranking",
    "decomposition",
    "decomposition_bars",
    "documents_not_trained",
    "equal_figures",
    "fills_rows",
    "leaders",
    "never_started_documents",
    "packer_answer",
    "prefix_bias",
    "ranking",
    "stop_phrase",
]

PARTS: tuple[str, ...] = (
    "trained",
    "never started",
    "cut off",
    "still buffered",
    "in the unfinished row",
    "never reached",
)
"""The parts of a packer's offered tokens, in the order of :func:`decomposition`."""

PART_TERMS: tuple[str, ...] = (
    "trained",
    "never started",
    "cut off",
    "still buffered",
    "unfinished row",
    "never reached",
)
"""The glossary term of each part."""


def decomposition(nt: NeverTrained) -> tuple[int, ...]:
    """The tokens of each part of :data:`PARTS`; they sum to ``nt.offered_tokens`` (checked)."""
    parts = (
        nt.trained_tokens,
        nt.never_started.tokens,
        nt.dropped.tokens,
        nt.still_buffered.tokens,
        nt.partial_row.tokens,
        nt.never_reached.tokens,
    )
    assert sum(parts) == nt.offered_tokens, "the parts do not reconcile with the tokens offered"
    return parts


def decomposition_bars(runs: Sequence[PackerRun], caption: str) -> Bars:
    """One stacked bar per packer: its offered tokens by part."""
    return Bars(
        caption,
        "tokens",
        PARTS,
        tuple((r.packer, decomposition(r.never_trained)) for r in runs),
        terms=PART_TERMS,
    )



def packer_answer(run: PackerRun) -> str:
    """One packer's answer: where it stopped, then each part of its tokens with its own share.

    Parts that hold no token are left out; ``trained`` is always said.
    """
    return f"{run.packer} {stop_phrase(run)}: " + run.never_trained.parts_sentence()


def stop_phrase(run: PackerRun) -> str:
    """Where a packer's run stopped, in words (the unfinished row is a part of its own, not said here):
    ``reached the horizon of 500 rows``, ``reached the horizon of 64,000 tokens at row 500``,
    ``stopped at row 118 because the stream ran dry``."""
    h = run.horizon
    if h.reason == "budget reached":
        if h.asked is not None and h.asked.unit == "rows" and h.asked.value == h.stopped_at_row:
            return f"reached the horizon of {h.asked.describe()}"  # the row it stopped at says nothing more
        asked = f" of {h.asked.describe()}" if h.asked is not None else ""
        return f"reached the horizon{asked} at row {h.stopped_at_row:,}"
    return replace(h, partial_row_tokens=0).sentence()


# --------------------------------------------------------------------------- what differs


def prefix_bias(run: PackerRun) -> float | None:
    """How much more of the start than of the end of long documents was trained.

    Over the documents longer than the row (the strata whose shortest length
    exceeds the row width): of their trained tokens, the share from their
    first tenth of positions minus the share from their last tenth (0: no
    prefix bias, +1: only first tenths trained; ``discard``'s crops keep
    prefixes, so it is positive). Only trained tokens enter it, so two packers
    that train the same tokens have the same prefix bias, whatever they read
    before emitting. ``None`` when no token of such documents was trained.
    """
    exp = run.aggregates.exposure
    strata = run.aggregates.strata
    emitted = np.zeros(exp.bins, np.int64)
    for s, row in enumerate(strata):
        if row.lo > run.row_width:
            emitted += np.asarray(exp.emitted[s], np.int64)
    total = int(emitted.sum())
    if total == 0:
        return None
    return float((emitted[0] - emitted[-1]) / total)


def _mixture_distance(run: PackerRun) -> float | None:
    """Total variation of the realised mixture from the declared one: the trained-token shares against
    the token targets when declared, else the shares of documents started against α."""
    shares = getattr(run.sources, "shares", None)
    if shares is None:
        return None
    reading = shares.tokens if shares.tokens.declared else shares.documents
    return reading.distance  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Ranked:
    """A quantity packers are ranked by: its key, its words, its unit and how to read it off a run."""

    key: str
    label: str
    kind: str
    value: Callable[[PackerRun], float | int | None]
    term: str | None = None


def documents_not_trained(run: PackerRun) -> int:
    """Documents offered of which no token was trained at the horizon: never started, never reached, or
    placed only in the unfinished row. Which of these labels a document gets depends on whether the
    packer had read it (an offline packer reads its whole input first; an online one reads as it goes);
    this count does not, so packers that train the same documents tie on it
    (:attr:`~packing_theory.audit.untrained.NeverTrained.no_token_trained`, which also holds their tokens)."""
    return run.never_trained.no_token_trained.documents


RANKED: tuple[Ranked, ...] = (
    Ranked(
        "untrained_documents",
        "documents with no token trained",
        "count",
        documents_not_trained,
        "never trained",
    ),
    Ranked("cut_off_tokens", "tokens cut off", "tokens", lambda r: r.never_trained.dropped.tokens, "cut off"),
    Ranked(
        "start_delay_max",
        "longest start delay (rows)",
        "count",
        lambda r: r.costs.start_delay_max,
        "start delay",
    ),
    Ranked(
        "start_delay_p50",
        "median start delay (rows)",
        "count",
        lambda r: r.costs.start_delay_p50,
        "start delay",
    ),
    Ranked("prefix_bias", "prefix bias of long documents", "number", prefix_bias, "prefix bias"),
    Ranked(
        "mixture_distance",
        "distance from the declared mixture",
        "number",
        _mixture_distance,
        "mixture distance",
    ),
    Ranked(
        "unused_positions",
        "row positions without a token",
        "tokens",
        lambda r: r.row_positions - r.aggregates.mass.emitted_tokens - r.aggregates.mass.repeated_tokens,
        "unused capacity",
    ),
)
"""What differs between packers at a common horizon, in the order the ranking considers them (fewer,
shorter, smaller is better for each)."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """Packers ranked by the quantities of :data:`RANKED`, lexicographically.

    ``by`` is the first quantity that differs between all packers (``None``: nothing differs) and
    ``values`` its value per packer; packers equal on it are ordered by the next quantity that differs
    among *them*, and so on (``then`` lists every quantity that broke a tie). ``ranks`` gives each packer
    its rank: packers equal on every quantity measured for all of them share one (1, 1, 3, ...).
    """

    by: Ranked | None
    order: tuple[str, ...]
    values: dict[str, float | int | None]
    ranks: dict[str, int] = field(default_factory=dict)
    then: tuple[Ranked, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``{"by", "label", "order", "values", "ranks", "then"}``."""
        return {
            "by": None if self.by is None else self.by.key,
            "label": None if self.by is None else self.by.label,
            "order": list(self.order),
            "values": dict(self.values),
            "ranks": dict(self.ranks),
            "then": [q.key for q in self.then],
        }


def _separating(qs: Sequence[Ranked], runs: Sequence[PackerRun]) -> tuple[int, list[Any]] | None:
    """The index in ``qs`` of the first quantity measured for every run of ``runs`` and not equal for all
    of them, with its values; ``None`` when there is none (or fewer than two runs)."""
    if len(runs) < 2:
        return None
    for k, q in enumerate(qs):
        values = [q.value(r) for r in runs]
        if not any(v is None for v in values) and len(set(values)) > 1:
            return k, values
    return None


def _tie_groups(
    qs: Sequence[Ranked], runs: Sequence[PackerRun], used: list[Ranked]
) -> list[list[PackerRun]]:
    """``runs`` in lexicographic order of ``qs`` (fewest first), as groups equal on every quantity that
    separates them; each quantity that split a group is appended to ``used``."""
    found = _separating(qs, runs)
    if found is None:
        return [list(runs)]
    k, values = found
    if qs[k] not in used:
        used.append(qs[k])
    out: list[list[PackerRun]] = []
    for v in sorted(set(values)):
        out += _tie_groups(qs[k + 1:], [r for r, x in zip(runs, values, strict=True) if x == v], used)
    return out


def ranking(runs: Sequence[PackerRun]) -> Ranking:
    """Rank ``runs`` by the quantities of :data:`RANKED`, fewest first, lexicographically: by the first
    quantity measured for every run that is not equal for all of them, then, among runs equal on it, by
    the next quantity that differs among those runs, and so on. Runs equal on every quantity share a rank
    (and keep their order).

    A quantity equal for every packer never ranks them; when every quantity is, every run has rank 1
    and ``by`` is ``None``. O(``len(RANKED)`` × runs) quantity reads per tie group.
    """
    used: list[Ranked] = []
    groups = _tie_groups(RANKED, runs, used)
    ranks: dict[str, int] = {}
    order: list[str] = []
    for group in groups:
        ranks.update((r.packer, len(order) + 1) for r in group)
        order += [r.packer for r in group]
    if not used:
        return Ranking(None, tuple(order), {}, ranks)
    by = used[0]
    return Ranking(by, tuple(order), {r.packer: by.value(r) for r in runs}, ranks, tuple(used[1:]))


def leaders(runs: Sequence[PackerRun], rk: Ranking) -> list[tuple[Ranked, list[str], dict[str, Any]]]:
    """How the first place was decided among the packers tied on ``rk.by``: each step is a quantity that
    separated the packers still tied, those packers and their values; the last step's fewest are the
    leaders (several when they are equal on every later quantity). Empty when one packer leads on
    ``rk.by`` alone."""
    if rk.by is None:
        return []
    by_name = {r.packer: r for r in runs}
    best = rk.values[rk.order[0]]
    group = [by_name[n] for n in rk.order if rk.values[n] == best]
    qs: Sequence[Ranked] = RANKED[RANKED.index(rk.by) + 1:]
    steps: list[tuple[Ranked, list[str], dict[str, Any]]] = []
    while True:
        found = _separating(qs, group)
        if found is None:
            return steps
        k, values = found
        named = {r.packer: v for r, v in zip(group, values, strict=True)}
        steps.append((qs[k], list(named), named))
        low = min(values)
        group = [r for r, v in zip(group, values, strict=True) if v == low]
        qs = qs[k + 1:]


def fills_rows(run: PackerRun) -> bool:
    """Whether every position of the packer's rows holds a document token placed for the first time (no
    padding, no free space, no repeated tokens)."""
    return run.row_positions == run.aggregates.mass.emitted_tokens


def reached_horizon(run: PackerRun) -> bool:
    """Whether the run went on to the horizon (it did not stop first because its stream ran dry, its buffer
    starved or its framework's packing ended)."""
    return run.horizon.reason == "budget reached"


def equal_figures(m: Measurement) -> dict[str, Any]:
    """What every packer that fills its rows with first-time document tokens and reaches the horizon
    shares, stated once: the tokens trained (equal by construction at a common token horizon, up to the row
    that crosses it) and so the share of the corpus left untrained. Packers whose rows also hold padding,
    free space or repeated tokens are named apart (``padded``, with ``padded_trained``): at a horizon in
    placed tokens they use more rows, so they may train fewer, as many or more. Packers that stopped before
    the horizon are named apart too (``short``, with ``short_trained``, and ``short_never_selected`` when one
    of them never made a selection: :attr:`~packing_theory.audit.HorizonStatement.never_selected`)."""
    if not m.runs:
        return {}
    short = [r for r in m.runs if not reached_horizon(r)] if m.horizon is not None else []
    rest = [r for r in m.runs if r not in short] or list(m.runs)
    full = [r for r in rest if fills_rows(r)] or rest
    padded = [r for r in rest if r not in full]
    trained = [r.never_trained.trained_tokens for r in full]
    offered = m.runs[0].never_trained.offered_tokens
    untrained = [r.never_trained.tokens for r in full]
    return {"trained_tokens_min": min(trained), "trained_tokens_max": max(trained),
            "untrained_share_min": min(untrained) / offered if offered else None,
            "untrained_share_max": max(untrained) / offered if offered else None,
            "offered_tokens": offered, "packers": [r.packer for r in full],
            "padded": [r.packer for r in padded],
            "padded_trained": {r.packer: r.never_trained.trained_tokens for r in padded},
            "short": [r.packer for r in short],
            "short_trained": {r.packer: r.never_trained.trained_tokens for r in short},
            "short_never_selected": any(r.horizon.never_selected for r in short)}


# --------------------------------------------------------------------------- which documents


DOCUMENT_COLUMNS_SHOWN: tuple[Column, ...] = (
    Column("document", "count"),
    Column("name"),
    Column("source"),
    Column("tokens", "tokens"),
    Column("never started by"),
)


def never_started_documents(
    runs: Sequence[PackerRun], corpus: Corpus | None = None, *, limit: int = 10
) -> tuple[Table | None, int]:
    """The ``limit`` largest documents some packer never started (raw index, name, source, length, by
    which packers), and how many (document, packer) pairs there are. ``(None, 0)`` without per-document
    tables. O(``limit``) rows per packer, whatever the corpus size
    (:meth:`~packing_theory.audit.documents.DocumentTable.largest_untrained`); ``corpus`` is not read
    (the tables name their rows) and stays for callers that pass it.
    """
    del corpus
    tables = [r.documents for r in runs if r.documents is not None]
    if not tables:
        return None, 0
    by_doc: dict[int, tuple[int, str, str, list[str]]] = {}
    pairs = 0
    counts: list[str] = []
    for t in tables:
        listed, count = t.largest_untrained(limit, ("never started",))
        pairs += count
        counts.append(f"{t.packer} {count:,}")
        for row in listed:  # the union's `limit` largest are among each packer's `limit` largest
            entry = by_doc.setdefault(
                int(row["document"]),
                (int(row["length"]), row["name"] or "—", row["source"] or "—", []),
            )
            entry[3].append(t.packer)
    ranked = sorted(by_doc.items(), key=lambda kv: (-kv[1][0], kv[0]))
    rows = [(d, name, source, n, ", ".join(packers)) for d, (n, name, source, packers) in ranked[:limit]]
    more = (
        f"documents never started: {', '.join(counts)}; every one is in the per-document table"
        if pairs > len(rows)
        else ""
    )
    return Table(
        "The largest documents never started",
        DOCUMENT_COLUMNS_SHOWN,
        tuple(rows),
        more=more,
        key="never-started",
    ), pairs


