"""What a comparison says: its headline, its JSON document, its sections and its plots.

The answer card states the horizon and, once, what every packer shares there
(the tokens trained, hence the untrained total), then ranks the packers by the
first quantity that differs between them, ties by the next that differs among
the tied packers, with every ranked quantity beside it, and shows each
packer's tokens by part as a stacked bar. The JSON is
``schema`` ``packing-theory/compare`` version :data:`SCHEMA_VERSION`: the
measurement's entries (the same per-packer documents as ``audit.json``'s),
``ranking`` and ``equal``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..audit.costs import PackerCosts
from ..reporting.model import Block, Column, Plot, PlotFile, Section, Table, Text, distinct_digits, percent
from ..reporting.plotting import color, pyplot, save_figure
from .answer import (
    RANKED,
    decomposition_bars,
    documents_not_trained,
    leaders,
    never_started_documents,
    packer_answer,
)
from .audit_report import plain
from .measure import HORIZON_RULES, PackerRun
from .sources_report import sources_section

if TYPE_CHECKING:
    from .compare import Comparison

__all__ = [
    "COMPARE_FILES",
    "PLOT_FILES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "compare_document",
    "compare_headline",
    "compare_plot_files",
    "compare_sections",
    "ranked_runs",
]

SCHEMA = "packing-theory/compare"
SCHEMA_VERSION = 6
"""Version 5: ``ranking.by`` is ``untrained_documents`` first (it was ``never_started_documents``), and
``ranking`` has ``ranks`` and ``then``; ``equal`` has ``padded_trained``."""

PLOT_FILES: tuple[str, ...] = (
    "compare_retention.png",
    "compare_never_started.png",
    "compare_start_delay.png",
    "source_mixture.png",
)
"""The PNG files a comparison may draw."""

COMPARE_FILES: tuple[str, ...] = ("compare.html", "compare.json", "compare.md", *PLOT_FILES)
"""Every file a comparison report directory may hold."""


_LOW_REACH = 0.5
"""A common horizon below this share of the tokens offered is said to be set by an early stop."""


def _horizon_words(cmp: Comparison) -> str:
    m = cmp.measurement
    told = m.horizon.describe() if m.horizon is not None else ""
    if m.horizon_rule == "common":
        by = f", set by {', '.join(m.horizon_set_by)}" if m.horizon_set_by else ""
        words = f"at the common horizon of {told.replace('tokens', 'placed tokens')}{by}"
        reach = m.horizon.value / m.corpus.tokens if m.horizon is not None and m.corpus.tokens else 1.0
        if m.horizon_set_by and m.horizon is not None and m.horizon.unit == "tokens" and reach < _LOW_REACH:
            who = ", ".join(m.horizon_set_by)
            stops = "stops" if len(m.horizon_set_by) == 1 else "stop"
            words += f" ({percent(reach)} of the tokens offered: {who} {stops} early here; see --natural-end)"
        return words
    if m.horizon_rule == "asked":
        return f"at the horizon of {told}"
    return "each at its own natural end (not like for like)"


def _equal_words(cmp: Comparison) -> str:
    eq = cmp.equal
    if not eq:
        return ""
    if cmp.measurement.horizon_rule == "natural":
        return _natural_trained_words(cmp)
    lo, hi = eq["trained_tokens_min"], eq["trained_tokens_max"]
    trained = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
    low, high = percent(eq["untrained_share_min"]), percent(eq["untrained_share_max"])
    share = low if low == high else f"{low}–{high}"
    apart = eq["padded"] or eq.get("short")
    who = "every packer" if not apart else "every packer that fills its rows and reaches the horizon"
    words = (f"{who} trains {trained} of the {eq['offered_tokens']:,} tokens offered ({share} untrained: "
             "equal by construction, up to the row that crosses the horizon, so not ranked)")
    if eq["padded"]:
        words += "; " + _padded_words(eq["padded_trained"], lo, hi)
    if eq.get("short"):
        names = eq["short"]
        words += (f"; {', '.join(names)} {'stops' if len(names) == 1 else 'stop'} before the horizon and "
                  f"{_train_words(eq['short_trained'], names)}")
        if eq.get("short_never_selected"):
            words += (" (a corpus smaller than the buffer's B: give --drain, or a smaller --min-buffer, "
                      "to replay it)")
    return words


def _train_words(trained: Mapping[str, int], names: Sequence[str]) -> str:
    """``trains 1,234`` or ``train 1,200–1,300``: the tokens ``names`` train."""
    values = [trained[n] for n in names]
    verb = "trains" if len(names) == 1 else "train"
    amount = f"{min(values):,}" if min(values) == max(values) else f"{min(values):,}–{max(values):,}"
    return f"{verb} {amount}"


def _padded_words(trained: Mapping[str, int], lo: int, hi: int) -> str:
    """The packers that pad or repeat in their rows, each set against the trained tokens of the packers
    that fill their rows (``lo``–``hi``): fewer, within that range, or more, from their own figures.
    Those within it are counted, not named, when others differ: they train no differently."""
    names = list(trained)
    fewer = [n for n in names if trained[n] < lo]
    within = [n for n in names if lo <= trained[n] <= hi]
    more = [n for n in names if trained[n] > hi]
    groups = [(g, word) for g, word in ((fewer, "fewer"), (within, "within that range"), (more, "more")) if g]
    if len(groups) == 1:  # one verdict for all of them: said once
        verb = "pads or repeats in its rows" if len(names) == 1 else "pad or repeat in their rows"
        train = _train_words(trained, names)
        return f"{', '.join(names)} {verb} and {train} ({groups[0][1]})"
    said = [f"{', '.join(g)} {_train_words(trained, g)} ({word})" for g, word in groups if g is not within]
    if within:
        said.append(f"{len(within)} more {'trains' if len(within) == 1 else 'train'} "
                    f"{_train_words(trained, within).split(' ', 1)[1]} (within that range)")
    return "of the packers that pad or repeat in their rows, " + ", ".join(said)


def _natural_trained_words(cmp: Comparison) -> str:
    """At their natural ends the packers train different amounts: the fewest and the most, each share
    beside its own tokens."""
    runs = cmp.measurement.runs
    offered = runs[0].never_trained.offered_tokens
    if not offered:
        return ""
    trained = {r.packer: r.never_trained.trained_tokens for r in runs}
    lo, hi = min(trained.values()), max(trained.values())
    fewest = ", ".join(n for n, v in trained.items() if v == lo)
    most = ", ".join(n for n, v in trained.items() if v == hi)
    if lo == hi:
        return f"every packer trains {lo:,} of the {offered:,} tokens offered ({percent(lo / offered)})"
    return (f"tokens trained: {fewest} fewest with {lo:,} ({percent(lo / offered)} of the {offered:,} "
            f"offered), {most} most with {hi:,} ({percent(hi / offered)})")


def _value_words(q: Any, v: Any, run: PackerRun, digits: int = 4) -> str:
    """``v`` of quantity ``q`` in words; a number with ``digits`` significant digits."""
    if v is None:
        return "—"
    nt = run.never_trained
    if q.key == "untrained_documents":
        share = percent(v / nt.offered_documents) if nt.offered_documents else "—"
        return f"{v:,} ({share} of the documents offered)"
    if q.kind == "tokens":
        share = percent(v / nt.offered_tokens) if nt.offered_tokens else "—"
        return f"{v:,} ({share} of the tokens offered)"
    if q.kind == "number":
        return f"{v:+.{digits}g}" if q.key == "prefix_bias" else f"{v:.{digits}g}"
    return f"{v:,}"


def _fewest_most(
    q: Any, values: Mapping[str, Any], order: Sequence[str], runs: Mapping[str, PackerRun]
) -> str:
    """``label: A, B fewest with v, C most with w`` over the packers of ``order`` (ranked fewest first)."""
    lo, hi = values[order[0]], values[order[-1]]
    best = [n for n in order if values[n] == lo]
    worst = [n for n in order if values[n] == hi]
    digits = distinct_digits(values[n] for n in order)  # as many as tell the ranked values apart
    return (f"{q.label}: {', '.join(best)} fewest with {_value_words(q, lo, runs[best[0]], digits)}, "
            f"{', '.join(worst)} most with {_value_words(q, hi, runs[worst[0]], digits)}")


def _ranking_words(cmp: Comparison, runs: Mapping[str, PackerRun]) -> str:
    """The quantity that ranks the packers with the best and the worst, then how first place was decided
    among the packers tied on it (each quantity that separated them, with the values), or that they tie."""
    rk = cmp.ranking
    if rk.by is None:
        return ("no ranked quantity differs between them (documents with no token trained, tokens cut "
                "off, start delays, prefix bias, mixture distance, unused positions)")
    words = [_fewest_most(rk.by, rk.values, rk.order, runs)]
    steps = leaders(list(runs.values()), rk)
    group = [n for n in rk.order if rk.values[n] == rk.values[rk.order[0]]]
    for q, names, values in steps:
        in_order = sorted(names, key=lambda n: (values[n], rk.order.index(n)))
        words.append(f"among {', '.join(in_order)}, " + _fewest_most(q, values, in_order, runs))
        group = [n for n in in_order if values[n] == values[in_order[0]]]
    if len(group) > 1:
        words.append(f"{', '.join(group)} tie on every ranked quantity")
    return "; ".join(words)


def compare_headline(cmp: Comparison) -> str:
    """The horizon and what is equal there (once), then the packers that do best and worst on the
    quantity that ranks them, with their numbers, and how first place was decided among packers tied
    on it.

    >>> from packing_theory.orchestration import Settings, compare_corpus
    >>> cmp = compare_corpus([3, 9, 2, 4, 10, 1] * 4, ["discard", "trl-bfd"],
    ...                      Settings(capacity=8, min_buffer=2, refill=2))
    >>> import textwrap
    >>> print(textwrap.fill(compare_headline(cmp), 100))
    at the common horizon of 64 placed tokens, set by discard; every packer trains 64 of the 116 tokens
    offered (44.8% untrained: equal by construction, up to the row that crosses the horizon, so not
    ranked); documents with no token trained: discard fewest with 1 (4.2% of the documents offered),
    trl-bfd most with 16 (66.7% of the documents offered); 2 packers compared
    """
    m = cmp.measurement
    runs = {r.packer: r for r in m.runs}
    if not runs:
        return "no packer could be compared: " + "; ".join(f"{n}: {w}" for n, w in m.refused)
    parts = [_horizon_words(cmp)]
    if len(runs) == 1:  # nothing to compare it with: its own answer
        (run,) = runs.values()
        parts.append(packer_answer(run))
    else:
        equal = _equal_words(cmp)
        if equal:
            parts.append(equal)
        parts.append(_ranking_words(cmp, runs))
    note = m.horizon_note()
    if note:
        parts.append(note)
    refused = ", ".join(n for n, _ in m.refused) if len(m.refused) <= 2 else f"{len(m.refused)} packers"
    parts.append(
        f"{len(m.runs)} {'packer' if len(m.runs) == 1 else 'packers'} compared"
        + (", so nothing is ranked" if len(m.runs) == 1 else "")
        + (f"; {refused} refused the corpus (the report says why)" if m.refused else "")
    )
    return "; ".join(parts)


def compare_document(cmp: Comparison, run: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``compare.json`` document."""
    m = cmp.measurement.to_dict()
    doc = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generator": {"name": "packing_theory", "version": __version__},
        "run": dict(run) if run is not None else None,
        "headline": cmp.headline(),
        **{k: m[k] for k in ("corpus", "settings", "horizon", "packers", "refused")},
        "ranking": cmp.ranking.to_dict(),
        "equal": cmp.equal,
        "sources": None if cmp.sources is None else cmp.sources.to_dict(),
        "seconds": round(cmp.measurement.seconds, 3),
    }
    out: dict[str, Any] = plain(doc)
    return out


def _ranking_table(cmp: Comparison) -> Table:
    runs = {r.packer: r for r in cmp.measurement.runs}
    rk = cmp.ranking
    shown = [q for q in RANKED if any(q.value(r) is not None for r in runs.values())]
    cols = (
        Column("rank", "count"),
        Column("packer"),
        *(Column(q.label, "count" if q.kind in ("count", "tokens") else "number", q.term,
                 digits=distinct_digits(q.value(r) for r in runs.values())) for q in shown),
    )
    rows = tuple((rk.ranks[name], name, *(q.value(runs[name]) for q in shown)) for name in rk.order)
    if rk.by is None:
        by = "no ranked quantity differs"
    else:
        then = "".join(f", then {q.label}" for q in rk.then)
        by = (f"ranked by {rk.by.label}{then}, fewest first; a shared rank: equal on every quantity "
              "measured for both")
    return Table(
        f"What differs between the packers ({by})",
        cols,
        rows,
        key="ranking",
        note="Start delays are not reported (—) for a packer that reads its whole input, or a window, "
        "before it emits rows: they would be emission order, not waits.",
    )


def _answer(cmp: Comparison) -> Section:
    m = cmp.measurement
    c = m.corpus
    blocks: list[Block] = [
        Text(
            f"Your corpus{' (' + c.label + ')' if c.label else ''}: {c.documents:,} documents, "
            f"{c.tokens:,} tokens; {c.over_capacity_documents:,} longer than a streaming row of "
            f"{m.settings.streaming_capacity:,}. "
            f"Horizon: {HORIZON_RULES[m.horizon_rule]}."
        )
    ]
    equal = _equal_words(cmp)
    words = _horizon_words(cmp)
    blocks.append(Text(words[0].upper() + words[1:] + (f", {equal}." if equal else ".")))
    note = m.horizon_note()
    if note:
        blocks.append(Text(note[0].upper() + note[1:] + "."))
    if m.runs:
        blocks.append(_ranking_table(cmp))
        blocks.append(decomposition_bars(m.runs, "What happened to the tokens offered, per packer"))
    table, _ = never_started_documents(m.runs, cmp.corpus)
    if table is not None:
        blocks.append(table)
    if m.refused:
        blocks.append(
            Table(
                "Packers that refused this corpus by their framework's own rule",
                (Column("packer"), Column("why")),
                tuple((name, why) for name, why in m.refused),
                key="refused",
            )
        )
    return Section("answer", "The answer", tuple(blocks), answer=True)


def _details(cmp: Comparison) -> Section:
    runs = cmp.measurement.runs
    cols = (
        Column("packer"),
        Column("row width", "count", "row width R"),
        Column("rows", "count"),
        Column("stopped because", term="horizon"),
        Column("utilization", "share", "utilization"),
        Column("padding", "tokens"),
        Column("unused positions", "tokens", "unused capacity"),
        Column("targets", "count", "targets"),
        Column("buffered", "tokens", "buffered tokens"),
        Column("family", term="family"),
    )
    rows = tuple(
        (
            r.packer,
            r.row_width,
            r.aggregates.rows,
            r.horizon.reason,
            r.utilization,
            r.aggregates.mass.padding_tokens,
            r.aggregates.mass.unused_capacity_tokens,
            r.aggregates.targets,
            r.aggregates.mass.buffered_tokens,
            "member" if r.in_family else "outside",
        )
        for r in runs
    )
    return Section(
        "packers",
        "Per packer",
        (
            Table(
                "Rows, padding and targets",
                cols,
                rows,
                key="packers",
                note="Padding = pad tokens the framework stores or its collator adds; unused positions = row "
                "positions holding no document token (a bin's free space is unused, not padding); targets = "
                "positions the trainer predicts.",
            ),
            Plot("compare_retention.png", "Share of each length stratum's tokens trained on, per packer"),
            Plot(
                "compare_never_started.png",
                "Documents with no token trained, per packer: never started or never reached",
            ),
            Plot("compare_start_delay.png", "Start delay, per packer"),
        ),
    )


def _costs(costs: Sequence[PackerCosts]) -> Table:
    cols = (
        Column("packer"),
        Column("never started", "count", "never started"),
        Column("long never started", "count"),
        Column("max start delay (rows)", "count", "start delay"),
        Column("p99 start delay", "count"),
        Column("longest wait unstarted", "count"),
        Column("fragments per long document", "number"),
        Column("targets without their context", "share"),
    )
    rows = tuple(
        (
            c.label,
            c.never_started_sources,
            c.long_never_started,
            c.start_delay_max,
            c.start_delay_p99,
            c.unstarted_wait_max,
            c.fragments_per_long_mean,
            c.share_without_context,
        )
        for c in costs
    )
    return Table("Costs (start delays in rows)", cols, rows, key="costs")


def compare_sections(cmp: Comparison) -> list[Section]:
    """Every section of the comparison, the answer first."""
    runs = cmp.measurement.runs
    out = [_answer(cmp)]
    if runs:
        out.append(_details(cmp))
        out.append(Section("costs", "Costs", (_costs([r.costs for r in runs]),)))
    if cmp.sources is not None:
        out.append(sources_section(cmp.sources, plot="source_mixture.png"))
    out.append(
        Section(
            "verdicts",
            "Invariant verdicts",
            tuple(Text(f"{r.packer}: {r.verdict}") for r in runs),
            collapsed=True,
        )
    )
    out.append(
        Section(
            "trainer",
            "What the trainer gets",
            tuple(Text(f"{r.packer}: {r.trainer_view}") for r in runs),
            collapsed=True,
        )
    )
    return out


# --------------------------------------------------------------------------- plots


def _long(label: str, width: int) -> bool:
    return label.startswith(">") or int(label.split("–")[0]) > width


def _retention(plt: Any, cmp: Comparison) -> Any:
    runs = list(cmp.measurement.runs)

    def long_retention(r: PackerRun) -> float:
        vals = [
            s.retention
            for s in r.aggregates.strata
            if s.retention is not None and _long(s.label, r.row_width)
        ]
        return sum(vals) / len(vals) if vals else 1.0

    runs.sort(key=lambda r: (-long_retention(r), r.packer))
    labels = [s.label for s in runs[0].aggregates.strata]
    ncol = min(5, len(runs))
    nrow = -(-len(runs) // ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(2.6 * ncol + 0.6, 2.1 * nrow + 1.0), squeeze=False, sharex=True, sharey=True
    )
    x = list(range(len(labels)))
    for k, ax in enumerate(axes.ravel()):
        if k >= len(runs):
            ax.axis("off")
            continue
        r = runs[k]
        ax.bar(
            x,
            [s.retention if s.retention is not None else 0.0 for s in r.aggregates.strata],
            color=color(0 if r.in_family else 1),
            width=0.8,
        )
        ax.set_title(r.packer, fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xticks(x, labels, rotation=90, fontsize=6)
    for row in axes:
        row[0].set_ylabel("trained share", fontsize=8)
    fig.suptitle(
        "Share of each length stratum's tokens trained on, one panel per packer "
        "(ranked by long documents; blue: family member, orange: outside)",
        fontsize=10,
    )
    return fig


def ranked_runs(cmp: Comparison) -> list[PackerRun]:
    """The runs in the ranking's order (a packer the ranking leaves out last, fewest untrained first), as
    the table lists them: the plots draw them in that order."""
    order = {name: i for i, name in enumerate(cmp.ranking.order)}
    return sorted(cmp.measurement.runs,
                  key=lambda r: (order.get(r.packer, len(order)), documents_not_trained(r), r.packer))


def _never_started(plt: Any, cmp: Comparison) -> Any:
    """Documents with no token trained per packer (the ranked count), split into never started (the
    packer had read them), never reached (it had not) and placed only in the unfinished row."""
    runs = ranked_runs(cmp)
    fig, ax = plt.subplots(figsize=(10.5, 0.32 * len(runs) + 1.6))
    names = [r.packer for r in runs]
    parts = (
        ("never started", [r.never_trained.never_started.documents for r in runs], 0),
        ("never reached", [r.never_trained.never_reached.documents for r in runs], 2),
        ("only in the unfinished row", [r.never_trained.partial_row_only_documents for r in runs], 4),
    )
    left = [0] * len(runs)
    for label, vals, c in parts:
        if not any(vals):  # a part no packer has is not in the legend
            continue
        ax.barh(names, vals, left=left, color=color(c), label=label)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    for y, v in enumerate(left):
        ax.text(v, y, f" {v:,}", va="center", fontsize=7)
    ax.set_xlim(0, max([*left, 1]) * 1.15)
    ax.set_xlabel("documents with no token trained")
    ax.invert_yaxis()
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title(
        "Documents with no token trained, by packer in rank order; never started or never reached\n"
        "depends on whether the packer had read the document, not on what it trained",
        fontsize=10,
    )
    return fig


def _start_delay(plt: Any, cmp: Comparison) -> Any:
    runs = sorted(
        (r for r in cmp.measurement.runs if r.costs.start_delay_max is not None),
        key=lambda r: (r.costs.start_delay_max or 0, r.packer),
    )
    fig, ax = plt.subplots(figsize=(9, 0.36 * len(runs) + 1.4))
    y = list(range(len(runs)))
    ax.barh(
        [v - 0.2 for v in y], [r.costs.start_delay_max or 0 for r in runs], 0.4, label="max", color=color(3)
    )
    ax.barh(
        [v + 0.2 for v in y],
        [r.costs.start_delay_p99 or 0 for r in runs],
        0.4,
        label="99th percentile",
        color=color(5),
    )
    ax.set_yticks(y, [r.packer for r in runs])
    ax.set_xscale("symlog")
    ax.set_xlabel("rows from a document's arrival to its first trained token (log scale)")
    ax.invert_yaxis()
    ax.set_title("Start delay by packer (shortest first)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig


def _drawer(
    fn: Callable[[Any, Comparison], Any], cmp: Comparison
) -> Callable[[Path, Mapping[str, str]], None]:
    def draw(path: Path, metadata: Mapping[str, str]) -> None:
        save_figure(fn(pyplot(), cmp), path, metadata=metadata, dpi=100)

    return draw


def compare_plot_files(cmp: Comparison) -> list[PlotFile]:
    """Every plot of the comparison, drawn, or with the sentence saying why there is nothing to draw."""
    runs = cmp.measurement.runs
    out = []
    if not any(s.retention is not None for r in runs for s in r.aggregates.strata):
        out.append(
            PlotFile(PLOT_FILES[0], note="no document arrived, so no stratum has a retention to plot.")
        )
    else:
        out.append(PlotFile(PLOT_FILES[0], draw=_drawer(_retention, cmp)))
    if not runs:
        out.append(PlotFile(PLOT_FILES[1], note="no packer was compared."))
    else:
        out.append(PlotFile(PLOT_FILES[1], draw=_drawer(_never_started, cmp)))
    if not any(r.costs.start_delay_max is not None for r in runs):
        out.append(
            PlotFile(
                PLOT_FILES[2],
                note="no packer recorded a start delay (no document was placed, or "
                "every packer reads its input before emitting rows).",
            )
        )
    else:
        out.append(PlotFile(PLOT_FILES[2], draw=_drawer(_start_delay, cmp)))
    if cmp.sources is not None and cmp.sources.packers:
        from .audit_plots import _sources_plot

        def draw_sources(path: Path, metadata: Mapping[str, str]) -> None:
            save_figure(_sources_plot(pyplot(), cmp), path, metadata=metadata, dpi=100)  # type: ignore[arg-type]

        out.append(PlotFile(PLOT_FILES[3], draw=draw_sources))
    return out
