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
  horizon (documents never started, tokens cut off, start delays, prefix bias,
  distance from the declared mixture, unused row positions) and
  :func:`ranking`, which ranks by the first of them that is not equal for
  every packer; the untrained *total* is equal by construction at a common
  token horizon and is stated once, never ranked (:func:`equal_figures`);
* :func:`never_started_documents` — the largest documents a packer never
  started, by raw index, name and data source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
    "equal_figures",
    "fills_rows",
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
    exceeds the row width): the trained share of their first tenth of
    positions minus that of their last tenth (0: no prefix bias; ``discard``'s
    crops keep prefixes, so it is positive). ``None`` without such documents.
    """
    exp = run.aggregates.exposure
    strata = run.aggregates.strata
    emitted = np.zeros(exp.bins, np.int64)
    positions = np.zeros(exp.bins, np.int64)
    for s, row in enumerate(strata):
        if row.lo > run.row_width:
            emitted += np.asarray(exp.emitted[s], np.int64)
            positions += np.asarray(exp.positions[s], np.int64)
    if positions[0] == 0 or positions[-1] == 0:
        return None
    return float(emitted[0] / positions[0] - emitted[-1] / positions[-1])


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


RANKED: tuple[Ranked, ...] = (
    Ranked(
        "never_started_documents",
        "documents never started",
        "count",
        lambda r: r.never_trained.never_started.documents,
        "never started",
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
    """Packers ranked by one quantity that differs between them (``None`` key: nothing differs)."""

    by: Ranked | None
    order: tuple[str, ...]
    values: dict[str, float | int | None]

    def to_dict(self) -> dict[str, Any]:
        """``{"by", "label", "order", "values"}``."""
        return {
            "by": None if self.by is None else self.by.key,
            "label": None if self.by is None else self.by.label,
            "order": list(self.order),
            "values": dict(self.values),
        }


def ranking(runs: Sequence[PackerRun]) -> Ranking:
    """Rank ``runs`` by the first quantity of :data:`RANKED` measured for every run that is not equal for
    all of them (fewest first; ties keep the runs' order).

    A quantity equal for every packer never ranks them; when every quantity is, the order is the runs'
    and ``by`` is ``None``.
    """
    for q in RANKED:
        values = [q.value(r) for r in runs]
        if len(runs) < 2 or any(v is None for v in values) or len(set(values)) < 2:
            continue
        order = sorted(range(len(runs)), key=lambda i: (values[i], i))
        return Ranking(
            q, tuple(runs[i].packer for i in order), {r.packer: v for r, v in zip(runs, values, strict=True)}
        )
    return Ranking(None, tuple(r.packer for r in runs), {})


def fills_rows(run: PackerRun) -> bool:
    """Whether every position of the packer's rows holds a document token (no padding, no free space)."""
    m = run.aggregates.mass
    return run.row_positions == m.emitted_tokens + m.repeated_tokens


def equal_figures(m: Measurement) -> dict[str, Any]:
    """What every packer that fills its rows shares at the horizon, stated once: the tokens trained (equal
    by construction at a common token horizon, up to the row that crosses it) and so the share of the
    corpus left untrained. Packers that pad or leave room in their rows train fewer; they are named
    (``padded``), and their unused positions are ranked, not this total."""
    if not m.runs:
        return {}
    full = [r for r in m.runs if fills_rows(r)] or list(m.runs)
    trained = [r.never_trained.trained_tokens for r in full]
    offered = m.runs[0].never_trained.offered_tokens
    untrained = [r.never_trained.tokens for r in full]
    return {"trained_tokens_min": min(trained), "trained_tokens_max": max(trained),
            "untrained_share_min": min(untrained) / offered if offered else None,
            "untrained_share_max": max(untrained) / offered if offered else None,
            "offered_tokens": offered, "packers": [r.packer for r in full],
            "padded": [r.packer for r in m.runs if not fills_rows(r)]}


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


