"""Every packer side by side on one corpus: ``packing-theory compare``.

:func:`compare_packers` replays one corpus once with each chosen packer —
streaming policies of seed 000's family and peer packers
(:mod:`packing_theory.peers`) alike — feeds each event stream to a
:class:`~packing_theory.audit.Ledger`, and reports per packer:

* utilization (emitted source tokens / row positions), padding (the pad
  tokens the framework stores or its collator adds: TRL's ``pack_dataset``
  stores none), unused capacity (row positions without a token), repeated
  positions, tokens truncated or dropped, tokens filtered, tokens still
  buffered at the end, and the targets the trainer predicts (streaming: every
  row position but the first; a peer: its framework's collator rule,
  :class:`~packing_theory.peers.TrainerRule`);
* sources filtered, sources never started (counted over arrived occurrences)
  and, per length stratum, never-started sources and the emitted share of
  the stratum's tokens (the exposure profile by stratum);
* what the trainer gets (document masks, position ids, ``cu_seqlens``), as
  each packer documents it;
* the invariant verdict: the packer's family status and the sentence that
  explains it (:mod:`packing_theory.registry`), plus, for an out-of-family
  streaming policy the monitor checks, a shrunk counterexample found now by a
  small exhaustive search;
* the costs of :mod:`packing_theory.audit.costs` (start delays, fragments per
  long source, targets without their document's preceding context), the
  table that places ``bounded-wait`` among the others. Start delays of an
  offline peer (one that reads the whole dataset, or a window, before it
  emits the window's rows) are not reported: they would be row positions in
  the framework's emission order, not waits (:attr:`PackerColumn.start_delays`).

Its documents (JSON, Markdown, PNG) are rendered by
:mod:`packing_theory.rendering.compare`.

A framework that refuses the corpus by its own rule (torchtune without
``split_across_pack`` on a document longer than the sequence length, NeMo on
an example longer than the pack) is listed under :attr:`PackerComparison.refused`
with the framework's message instead of a column.

**One horizon for every column.** By default (``horizon="common"``) every
packer is cut at the same *token* horizon: the largest number of placed
tokens that every packer reaches — the fewest tokens any of them places at
its natural end (a first, light pass finds it). ``horizon=Budget(...)`` asks
for rows, targets or tokens; ``horizon="natural"`` lets each packer run to its
own end (streaming policies in ``stop`` mode stop when they can no longer
refill to ``B``; ``exhausted="drain"`` and ``passes`` change that for the
streaming family). Every column then reports what the packer *never
trained* at that horizon (:class:`~packing_theory.audit.untrained.NeverTrained`):
``emitted + dropped + buffered + never reached == offered`` for every packer,
and :attr:`PackerComparison.ranking` orders the packers by never-trained tokens.
The packer set is :func:`default_packers`: every packer of the registry, so a
peer module added to :data:`~packing_theory.peers.PEER_MODULES` appears
without any change here.

Row widths: streaming rows hold ``capacity`` tokens (``T + 1``); a peer is
built for the sequence length ``seq_length`` (default ``capacity - 1``), its
row width given by its registry entry's rule (Megatron ``L + 1``, TRL ``L``),
at the largest sequence length its framework accepts (OLMo-core: the largest
power of two ``<= seq_length``); each column states its row width and the
options it ran with (defaults included).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.costs import CostAccumulator, PackerCosts
from ..audit.documents import DocumentRows
from ..audit.ledger import Ledger
from ..audit.strata import STRATA_BOUNDARIES
from ..audit.untrained import HorizonStatement, NeverTrained, horizon_statement, never_trained
from ..engine.batches import EventItem
from ..engine.compiled import compiled_available
from ..engine.consumers import feed_all
from ..engine.horizon import Budget, cut_at_horizon
from ..engine.horizon_batches import cut_batches_at_horizon
from ..engine.policies import PackerConfig
from ..engine.replay import ENGINES, make_packer
from ..errors import InputError, MissingDependency
from ..invariant import InvariantMonitor
from ..lengths import exact_sum, validate_lengths
from ..peers import PeerFigures, PeerPacker
from ..registry import PackerEntry, entries, names
from ._reach import placed_tokens

__all__ = [
    "HORIZON_RULES",
    "PackerColumn",
    "PackerComparison",
    "compare_packers",
    "default_packers",
    "packer_verdict",
    "shrunk_counterexample",
]


HORIZON_RULES: dict[str, str] = {
    "common": "the common token horizon: the most placed tokens every packer reaches (the fewest any "
              "packer places at its natural end)",
    "natural": "each packer to its own natural end (not like for like)",
    "asked": "the horizon asked, for every packer",
}
"""How a comparison's horizon was chosen, in words (:attr:`PackerComparison.horizon_rule`)."""


def default_packers() -> list[str]:
    """Every packer of the registry: the streaming policies, then every registered peer."""
    return list(names())


@dataclass(frozen=True, slots=True)
class PackerColumn:
    """One packer's numbers in a :class:`PackerComparison` (see the module doc)."""

    policy: str
    kind: str
    framework: str
    row_width: int
    options: dict[str, Any]
    rows: int
    row_positions: int
    emitted_tokens: int
    padding_tokens: int
    repeated_tokens: int
    discarded_tokens: int
    filtered_tokens: int
    buffered_tokens: int
    arrived_sources: int
    filtered_sources: int
    started_sources: int
    never_started_sources: int
    never_started_by_stratum: tuple[int, ...]
    retention_by_stratum: tuple[float | None, ...]
    identity_holds: bool
    trainer_view: str
    in_family: bool
    verdict: str
    seconds: float
    costs: PackerCosts | None = None
    unused_capacity_tokens: int = 0
    targets: int = 0
    start_delays: str = "measured"
    peer_figures: PeerFigures | None = None
    """A peer's framework-true figures (its rule, options and horizon); ``None`` for streaming policies."""
    horizon: HorizonStatement | None = None
    never_trained: NeverTrained | None = None

    @property
    def utilization(self) -> float | None:
        """Emitted source tokens per row position (padding and repeats lower it)."""
        return self.emitted_tokens / self.row_positions if self.row_positions else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with ``utilization``."""
        out = {**asdict(self), "utilization": self.utilization}  # costs: asdict recurses
        out["horizon"] = self.horizon.to_dict() if self.horizon is not None else None
        out["never_trained"] = self.never_trained.to_dict() if self.never_trained is not None else None
        return out


@dataclass(frozen=True, slots=True)
class PackerComparison:
    """The result of :func:`compare_packers`."""

    documents: int
    tokens: int
    capacity: int
    seq_length: int
    min_buffer: int
    corpus_label: str
    labels: tuple[str, ...]
    columns: tuple[PackerColumn, ...]
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    refused: tuple[tuple[str, str], ...] = field(default=())
    """``(packer, the framework's message)`` for packers that refused this corpus."""
    horizon: Budget | None = None
    """The horizon every column was cut at (``None``: each packer's natural end)."""
    horizon_rule: str = "natural"
    """A key of :data:`HORIZON_RULES`: how the horizon was chosen."""
    exhausted: str = "stop"
    passes: int = 1
    horizon_set_by: tuple[str, ...] = ()
    """The common horizon: the packers that place the fewest tokens at their natural end (so set it)."""

    @property
    def ranking(self) -> tuple[str, ...]:
        """The packers by never-trained tokens at the horizon, fewest first (ties: column order)."""
        def key(i: int) -> tuple[int, int]:
            nt = self.columns[i].never_trained
            return (nt.tokens if nt is not None else 0, i)

        ranked = sorted(range(len(self.columns)), key=key)
        return tuple(self.columns[i].policy for i in ranked)

    def headline(self) -> str:
        """The comparison in plain words: the horizon, the packer that never trains least and most.

        >>> cmp = compare_packers([3, 9, 2, 4, 10, 1] * 4, ["discard", "trl-bfd"], capacity=8, min_buffer=2,
        ...                       refill=2)
        >>> print(cmp.headline().replace("; ", chr(10)))
        at the common token horizon of 64 placed tokens (the most every packer reaches, set by discard)
        trl-bfd never trains the fewest of your tokens (39.7%)
        discard the most (44.8%)
        2 packers compared
        """
        if not self.columns:
            return "no packer could be compared"
        told = self.horizon.describe() if self.horizon else ""
        set_by = f", set by {', '.join(self.horizon_set_by)}" if self.horizon_set_by else ""
        where = {"common": f"at the common token horizon of {told.replace('tokens', 'placed tokens')} "
                           f"(the most every packer reaches{set_by})",
                 "asked": f"at the horizon of {told}",
                 "natural": "each at its own natural end (not like for like)"}[self.horizon_rule]
        share = {c.policy: c.never_trained.share for c in self.columns if c.never_trained is not None}
        tokens = {c.policy: c.never_trained.tokens if c.never_trained is not None else None
                  for c in self.columns}

        def pct(name: str) -> str:
            v = share.get(name)
            return "—" if v is None else f"{100 * v:.1f}%"

        first, last = self.ranking[0], self.ranking[-1]
        fewest = [n for n in self.ranking if tokens[n] == tokens[first]]
        most = [n for n in self.ranking if tokens[n] == tokens[last]]
        parts = [where]
        if len(fewest) == len(self.columns) > 1:
            parts.append(f"all {len(fewest)} packers tie at {pct(first)} never trained")
        else:
            parts.append(f"{first} never trains the fewest of your tokens ({pct(first)})" if len(fewest) == 1
                         else f"{', '.join(fewest)} tie at the fewest never-trained tokens ({pct(first)})")
            if last != first:
                parts.append(f"{last} the most ({pct(last)})" if len(most) == 1
                             else f"{', '.join(most)} tie at the most ({pct(last)})")
        short = self.short_horizon()
        if short:
            parts.append(f"{short}, so this ranking means little: try --natural-end or a larger --tokens")
        parts.append(f"{len(self.columns)} packers compared"
                     + (f", {len(self.refused)} refused the corpus" if self.refused else ""))
        return "; ".join(parts)

    def short_horizon(self) -> str:
        """Why the horizon is too short to rank by, in words, or ``""``.

        Short: the streaming packers stop before ``B`` rows (their buffer has
        barely filled), or a token horizon is under 1 % of the tokens offered.
        A packer that places few tokens (one that filters most documents) sets
        a short common horizon for every column.
        """
        if self.horizon is None:
            return ""
        why = []
        streaming = [c.rows for c in self.columns if c.kind != "peer"]
        if streaming and max(streaming) < self.min_buffer:
            why.append(f"{max(streaming):,} streaming rows, fewer than B = {self.min_buffer:,}")
        if self.horizon.unit == "tokens" and self.tokens and 100 * self.horizon.value < self.tokens:
            why.append(f"{100 * self.horizon.value / self.tokens:.2f}% of the {self.tokens:,} tokens offered")
        return "the horizon is short (" + "; ".join(why) + ")" if why else ""

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """A JSON-ready dict (``schema`` ``packing-theory/compare`` version 3); ``run`` names its run.

        Version 3 added ``headline``, ``horizon`` (the horizon, its rule, the
        streaming family's ``exhausted`` and ``passes``), ``ranking`` and, per
        packer, ``horizon`` and ``never_trained``.
        """
        return {"schema": "packing-theory/compare", "version": 3,
                "run": dict(run) if run is not None else None,
                "headline": self.headline(),
                "corpus": self.corpus_label,
                "documents": self.documents, "tokens": self.tokens, "capacity": self.capacity,
                "seq_length": self.seq_length, "min_buffer": self.min_buffer,
                "horizon": {**(self.horizon.to_dict() if self.horizon else {"unit": None, "value": None}),
                            "rule": self.horizon_rule, "explained": HORIZON_RULES[self.horizon_rule],
                            "set_by": list(self.horizon_set_by), "short": self.short_horizon() or None,
                            "exhausted": self.exhausted, "passes": self.passes},
                "ranking": list(self.ranking), "strata": list(self.labels),
                "packers": [c.to_dict() for c in self.columns], "notes": list(self.notes),
                "refused": [{"packer": n, "reason": r} for n, r in self.refused],
                "seconds": self.seconds}


# --------------------------------------------------------------------------- verdicts


def shrunk_counterexample(policy: str, *, max_documents: int = 3) -> dict[str, Any] | None:
    """The smallest stream on which ``policy`` violates the protected-set invariant, or ``None``.

    An exhaustive search in increasing size (so the first hit is shrunk by
    construction): ``R`` in 2..4, ``B`` in 1..2, refill 1, one or two passes,
    up to ``max_documents`` documents of lengths ``1..2R+1``, ordered by
    (documents, total length). The monitor checks the *original* occurrences
    (``segmented=False``). Complexity: a few thousand tiny replays (< 1 s).

    >>> cx = shrunk_counterexample("requeue-bos")
    >>> cx["capacity"], cx["min_buffer"], cx["passes"], cx["lengths"]
    (2, 2, 1, [1, 3, 3])
    >>> shrunk_counterexample("discard") is None
    True
    """
    cases = []
    for n in range(1, max_documents + 1):
        for R in (2, 3, 4):
            for lengths in itertools.product(range(1, 2 * R + 2), repeat=n):
                for B in (1, 2):
                    for passes in (1, 2):
                        cases.append((n * passes, sum(lengths) * passes, R, B, passes, list(lengths)))
    cases.sort(key=lambda c: (c[0], c[1], c[2], c[3]))
    for _, _, R, B, passes, stream in cases:
        config = PackerConfig(capacity=R, min_buffer=B, refill=1, passes=passes, policy=policy,  # type: ignore[arg-type]
                              exhausted="stop")
        monitor = InvariantMonitor.for_packer(config, segmented=False)
        feed_all(make_packer("fast", config).stream(stream), monitor)
        if not monitor.ok:
            v = monitor.first_violation
            return {"capacity": R, "min_buffer": B, "refill": 1, "passes": passes, "lengths": stream,
                    "violation": v.describe() if v is not None else ""}
    return None


def packer_verdict(e: PackerEntry) -> str:
    """The verdict sentence of a packer: its family status and the registry's sentence for it.

    An out-of-family packer that the protected-set monitor checks also gets the
    result of :func:`shrunk_counterexample`.

    >>> from packing_theory.registry import entry
    >>> packer_verdict(entry("requeue-bos")).split("; shrunk counterexample: ")[1][:38]
    'R=2, B=2, refill 1, 1 pass(es) of [1, '
    >>> packer_verdict(entry("discard"))[:31]
    'family member: seed 000 §3 — at'
    """
    if e.in_family:
        return f"{e.status}: {e.family}"
    if not e.protected_set:
        return f"{e.status} — {e.family}"
    cx = shrunk_counterexample(e.name)
    if cx is None:
        return f"{e.status}: {e.family}; no counterexample within the small exhaustive search"
    return (f"{e.status}: {e.family}; shrunk counterexample: R={cx['capacity']}, B={cx['min_buffer']}, "
            f"refill 1, {cx['passes']} pass(es) of {cx['lengths']}: {cx['violation']}")


# --------------------------------------------------------------------------- the comparison


def compare_packers(
    lengths: npt.ArrayLike,
    packers: Sequence[str] | None = None,
    *,
    capacity: int = 2049,
    seq_length: int | None = None,
    min_buffer: int = 1000,
    refill: int = 128,
    peer_options: Mapping[str, Mapping[str, Any]] | None = None,
    boundaries: Sequence[int] = STRATA_BOUNDARIES,
    corpus_label: str = "",
    progress: Callable[[int], None] | None = None,
    executor: Executor | None = None,
    horizon: Budget | str = "common",
    exhausted: str = "stop",
    passes: int = 1,
    engine: str = "fast",
) -> PackerComparison:
    """Replay ``lengths`` with each packer, cut at one horizon, and collect the columns (see the module doc).

    Args:
        lengths: BOS-inclusive document lengths.
        packers: policy names (default :func:`default_packers`).
        capacity: streaming row capacity ``R``.
        seq_length: the peers' sequence length (default ``capacity - 1``); each
            peer's row width follows from it by its registry entry's rule, at the
            largest sequence length its framework accepts.
        min_buffer, refill: the streaming family's ``B`` and refill batch.
        peer_options: per peer, its knobs (``{"trl-bfd": {"window": 500}}``).
        progress: called with the number of packers done after each one
            (e.g. a :func:`~packing_theory.reporting.progress_bar`).
        executor: where the packers run, one task per packer (``None``: one
            after the other in this process; any :class:`concurrent.futures.Executor`,
            e.g. from :func:`~packing_theory.distributed.executors.open_executor`).
            The columns come back in the order asked whatever the completion
            order, so the comparison is the same apart from the ``seconds``.
        horizon: ``"common"`` (default: the common token horizon, found by a
            first pass to every packer's natural end), ``"natural"`` (each to its
            own end) or a :class:`~packing_theory.engine.horizon.Budget`.
        exhausted, passes: the streaming family's ``stop`` / ``drain`` and corpus passes.
        engine: ``"fast"`` (default: every packer's pure Python events),
            ``"compiled"`` (streaming policies on the compiled engine where
            declared, every peer's :meth:`~packing_theory.peers.PeerPacker.batches`:
            numpy columns, compiled loops with the ``fast`` extra) or
            ``"reference"``; a streaming policy the engine does not implement
            runs on ``"fast"``. The comparison is the same apart from the
            ``seconds`` (``tests/orchestration/test_compare.py``).

    Raises:
        InputError: an unknown packer name, bad lengths, a peer's bad option, a bad horizon.

    >>> cmp = compare_packers([3, 9, 2, 4, 10, 1] * 4, ["discard", "trl-bfd"], capacity=8, min_buffer=2,
    ...                       refill=2, horizon="natural")
    >>> [(c.policy, c.never_started_sources, c.discarded_tokens) for c in cmp.columns]
    [('discard', 1, 42), ('trl-bfd', 0, 20)]
    >>> [(c.policy, c.never_trained.tokens) for c in cmp.columns], cmp.ranking
    ([('discard', 52), ('trl-bfd', 20)], ('trl-bfd', 'discard'))
    """
    arr = validate_lengths(np.asarray(lengths))
    table = entries()
    chosen = list(packers) if packers is not None else list(table)
    for n in chosen:
        if n not in table:
            raise InputError(f"packers must be among {', '.join(table)}; got {n!r}")
    for n, opts in (peer_options or {}).items():
        if n not in chosen or table[n].kind != "peer":
            raise InputError(f"peer_options names {n!r}, which is not a compared peer")
        table[n].options(opts)  # an unknown knob names itself and the packer
    if not isinstance(horizon, Budget) and horizon not in ("common", "natural"):
        raise InputError(f"horizon must be 'common', 'natural' or a Budget, got {horizon!r}")
    if exhausted not in ("stop", "drain"):
        raise InputError(f"exhausted must be 'stop' or 'drain', got {exhausted!r}")
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "compiled" and not compiled_available():
        raise MissingDependency("compare --engine compiled: numba is not installed "
                                "(pip install 'packing-theory[fast]')")
    L = capacity - 1 if seq_length is None else seq_length
    t_all = time.perf_counter()
    settings = (capacity, L, min_buffer, refill, exhausted, passes, engine)
    given_of = {name: dict((peer_options or {}).get(name, {})) for name in chosen}

    def run_all(fn: Callable[..., Any], args: list[tuple[Any, ...]], counted: bool) -> list[Any]:
        """``fn(*a)`` for each ``a``, here or on ``executor``, in the order asked (``counted``: progress)."""
        tick = progress if counted else None
        if executor is None:
            out = []
            for done, a in enumerate(args, 1):
                out.append(fn(*a))
                if tick is not None:
                    tick(done)
            return out
        futures = [executor.submit(fn, *a) for a in args]
        out = []
        for done, f in enumerate(futures, 1):  # the order asked, not the completion order
            out.append(f.result())
            if tick is not None:
                tick(done)
        return out

    if progress is not None:
        progress(0)
    refused: dict[str, str] = {}
    set_by: tuple[str, ...] = ()
    budget: Budget | None = horizon if isinstance(horizon, Budget) else None
    if horizon == "common":
        reaches = run_all(_reach_one, [(name, arr, given_of[name], settings) for name in chosen], False)
        reach: dict[str, int] = {}
        for name, (r, why) in zip(chosen, reaches, strict=True):
            if why is not None:
                refused[name] = why  # the framework's own rule refuses this corpus
            else:
                reach[name] = r
        budget = Budget("tokens", min(reach.values())) if reach else None
        set_by = tuple(n for n, r in reach.items() if budget is not None and r == budget.value)
    todo = [name for name in chosen if name not in refused]
    outcomes = run_all(_compare_one, [(name, arr, given_of[name], settings, tuple(boundaries), budget)
                                      for name in todo], True)
    cols = [c for c, _, _ in outcomes if c is not None]
    refused.update((name, r) for name, (_, r, _) in zip(todo, outcomes, strict=True) if r is not None)
    labels = next((lab for c, _, lab in reversed(outcomes) if c is not None), ())
    rule = "asked" if isinstance(horizon, Budget) else str(horizon)
    return PackerComparison(int(arr.size), exact_sum(arr), capacity, L, min_buffer, corpus_label, labels,
                            tuple(cols), time.perf_counter() - t_all,
                            refused=tuple((n, refused[n]) for n in chosen if n in refused),
                            horizon=budget, horizon_rule=rule, exhausted=exhausted, passes=passes,
                            horizon_set_by=set_by)


_Settings = tuple[int, int, int, int, str, int, str]
"""capacity, seq_length, min_buffer, refill, exhausted, passes, engine"""


def _build(name: str, given: dict[str, Any], settings: _Settings) -> tuple[Any, dict[str, Any]]:
    """The packer ``name`` of a comparison and every knob it runs with, defaults included."""
    capacity, seq_length, min_buffer, refill, exhausted, passes, engine = settings
    e = entries()[name]
    if e.kind == "peer":
        L = e.row_width.admissible(seq_length)
        width = e.capacity_for(L, given)
        if width < 2:  # the accounting needs a BOS and one more position per row
            raise InputError(f"{name} packs rows of {width} token(s) at sequence length {L} "
                             f"({e.row_width.rule}); rows of at least 2 tokens are needed")
        packer = e.build(width, **given)
        return packer, packer.options()
    knobs: dict[str, Any] = {"min_buffer": min_buffer, "refill": refill, "exhausted": exhausted,
                             "passes": passes}
    return e.build(capacity, engine=engine if engine in e.engines else "fast", **knobs), e.options(knobs)


def _stream(packer: Any, arr: npt.NDArray[np.int64], engine: str) -> Iterator[EventItem]:
    """The packer's stream: batches on the compiled engine (a columnar peer's columns), else single events.

    A peer without columns gives its events (grouping them into batches would
    cost more than its consumers save).
    """
    if engine != "compiled":
        return packer.events(arr)  # type: ignore[no-any-return]
    if isinstance(packer, PeerPacker):
        return packer.batches(arr) if packer.columnar else packer.events(arr)
    return packer.stream(arr)  # type: ignore[no-any-return]


def _reach_one(name: str, arr: npt.NDArray[np.int64], given: dict[str, Any], settings: _Settings
               ) -> tuple[int, str | None]:
    """The tokens packer ``name`` places in complete rows to its natural end, or its framework's refusal."""
    try:
        packer, _ = _build(name, given, settings)
        return placed_tokens(_stream(packer, arr, settings[6]), packer.capacity), None
    except ValueError as exc:
        if entries()[name].kind != "peer":
            raise
        return 0, str(exc)


def _compare_one(name: str, arr: npt.NDArray[np.int64], given: dict[str, Any], settings: _Settings,
                 boundaries: tuple[int, ...], budget: Budget | None
                 ) -> tuple[PackerColumn | None, str | None, tuple[str, ...]]:
    """One packer's column of :func:`compare_packers` (a top-level function: it runs in worker processes).

    Returns ``(column, None, stratum labels)``, or ``(None, refusal, ())`` when
    a peer's framework rule refuses the corpus.
    """
    t0 = time.perf_counter()
    e = entries()[name]
    min_buffer, passes = settings[2], settings[5]
    try:
        packer, opts = _build(name, given, settings)
    except ValueError as exc:
        if e.kind != "peer":
            raise
        return None, str(exc), ()  # this corpus's settings give the framework no rows it can pack
    width = packer.capacity
    compiled = settings[6] == "compiled"
    ledger = Ledger(width, min_buffer, policy=name, boundaries=boundaries, compiled=compiled)
    costs = CostAccumulator(width, name)
    rows = DocumentRows(width, per_occurrence=False)  # locates the partial row, never trained
    figures: PeerFigures | None = None
    counter = packer.figures(arr) if e.kind == "peer" else None
    cut = cut_batches_at_horizon if compiled else cut_at_horizon  # the same events; batches kept as batches
    events = cut(_stream(packer, arr, settings[6]), budget, capacity=width)
    try:
        if counter is not None:
            agg, packer_costs, facts, figures = feed_all(events, ledger, costs, rows, counter)
        else:
            agg, packer_costs, facts = feed_all(events, ledger, costs, rows)
    except ValueError as exc:
        if e.kind != "peer":
            raise
        return None, str(exc), ()  # the framework's own rule refuses this corpus
    if figures is not None and counter is not None:
        agg = agg.with_peer_figures(figures, counter.occurrence_targets())
        if figures.start_delays != "measured":  # row positions of an offline packer, not waits
            packer_costs = replace(packer_costs, start_delay_max=None, start_delay_p50=None,
                                   start_delay_p99=None, unstarted_wait_max=None)
    m = agg.mass
    column = PackerColumn(
        policy=name, kind=e.kind, framework=e.framework, row_width=width, options=opts, rows=agg.rows,
        row_positions=agg.rows * width + agg.partial_row_tokens, emitted_tokens=m.emitted_tokens,
        padding_tokens=m.padding_tokens, repeated_tokens=m.repeated_tokens,
        discarded_tokens=m.discarded_tokens, filtered_tokens=m.filtered_tokens,
        buffered_tokens=m.buffered_tokens, arrived_sources=agg.arrived_sources,
        filtered_sources=agg.filtered_sources, started_sources=agg.started_sources,
        never_started_sources=agg.never_started_sources,
        never_started_by_stratum=tuple(s.never_started_sources for s in agg.strata),
        retention_by_stratum=tuple(s.retention for s in agg.strata),
        identity_holds=m.identity_holds and agg.conservation_violations == 0,
        trainer_view=e.trainer_view, in_family=e.in_family, verdict=packer_verdict(e),
        seconds=time.perf_counter() - t0, costs=packer_costs,
        unused_capacity_tokens=m.unused_capacity_tokens, targets=agg.targets,
        start_delays="measured" if figures is None else figures.start_delays, peer_figures=figures,
        horizon=horizon_statement(agg, budget, streaming=e.kind != "peer"),
        never_trained=never_trained(ledger, arr, passes=passes if e.kind != "peer" else None, rows=facts),
    )
    return column, None, tuple(s.label for s in agg.strata)
