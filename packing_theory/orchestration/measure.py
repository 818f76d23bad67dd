"""One measurement: a corpus replayed by a set of packers, cut at one horizon, each stream fed to consumers.

``audit`` and ``compare`` are the same measurement (:func:`measure`) with
different defaults, extras and renderings; so are the per-source figures and
the per-document table. For every packer — a streaming policy or a
framework's packer (:mod:`packing_theory.registry`) — :func:`measure` builds
the packer from one :class:`Settings`, replays the corpus to the horizon, and
feeds the one event stream to the ledger (mass, sources started, strata,
exposure), the row facts (the unfinished row), the costs (start delays,
fragments, context), the framework's own figures (a peer's padding and
targets) and, when asked, the per-source series and the per-document table.
The result is one :class:`PackerRun` per packer, whose :meth:`PackerRun.to_dict`
is the per-packer JSON of every report (one JSON Schema,
``docs/schemas/packer-run.schema.json``).

**Row widths.** ``Settings.capacity`` is the row width ``R`` of every packer;
``Settings.seq_length`` is instead the trained positions ``L``, and each
packer's row width follows from its framework's rule (streaming and Megatron
``R = L + 1``, TRL ``R = L``; a framework that accepts only some lengths —
OLMo-core's powers of two — takes the largest it accepts that is ``<= L``).
Without either, ``L = 2048`` (autoresearch's ``T``; streaming ``R = 2049``).

**Horizons.** ``horizon`` is a :class:`~packing_theory.engine.horizon.Budget`
(rows, targets or tokens: the same for every packer), ``"common"`` (the most
placed tokens every packer reaches: the fewest any packer places by its
natural end; a streaming packer's pass to its end stops once it passes a
smaller one, and a framework's packer, which packs its whole input anyway,
finds its end in the same pass as its run) or ``"natural"`` (each packer to
its own end: not like for like). Each run
states where it stopped and why (:attr:`PackerRun.horizon`);
:meth:`Measurement.horizon_note` says when packers stopped at different points.

**Where it runs.** Every packer is one task of a
:class:`~packing_theory.distributed.executors.TaskRunner` (this process, local
processes capped by the CPUs and the tasks, any executor, a Dask cluster);
the result is the same wherever it runs, apart from timings.

>>> m = measure([3, 9, 2, 4, 10, 1] * 4, ["discard", "trl-bfd"], Settings(capacity=8, min_buffer=2, refill=2),
...             horizon="common")
>>> [(r.packer, r.row_width, r.horizon.reason, r.never_trained.never_started.documents) for r in m.runs]
[('discard', 8, 'budget reached', 1), ('trl-bfd', 8, 'budget reached', 16)]
>>> m.horizon, m.horizon_set_by
(Budget(unit='tokens', value=64), ('discard',))
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._allocator import release_freed_memory
from ..audit.costs import CostAccumulator
from ..audit.documents import DocumentRows, document_table, partial_row_by_stratum
from ..audit.identity import DocumentIdentity
from ..audit.ledger import Ledger
from ..audit.store import out_of_core_store
from ..audit.untrained import horizon_statement, never_trained
from ..distributed.executors import TaskRunner, open_runner
from ..engine.batches import split_batches
from ..engine.compiled import compiled_available
from ..engine.consumers import feed_all
from ..engine.horizon import Budget, cut_at_horizon
from ..engine.horizon_batches import cut_batches_at_horizon
from ..errors import InputError, InputTypeError, MissingDependency
from ..lengths import validate_lengths
from ..peers import PeerFigures, PeerPacker
from ..registry import entries
from ._reach import ReachBound, Reaching
from ._tasks import (
    MappedLengths,
    NoRows,
    build_packer_for,
    check_packers,
    lengths_of,
    per_event_first,
    reach_group,
    reach_one,
    shared_lengths,
    stream_of,
    user_errors,
)
from .corpus import CorpusSummary, corpus_summary
from .packer_run import PackerRun
from .resume import RunParts, measurement_key
from .settings import DEFAULT_SEQ_LENGTH, Settings
from .verdicts import packer_verdict

__all__ = [
    "DEFAULT_SEQ_LENGTH",
    "HORIZON_RULES",
    "CorpusSummary",
    "Measurement",
    "PackerRun",
    "Settings",
    "corpus_summary",
    "measure",
]

HORIZON_RULES: dict[str, str] = {
    "common": "the common token horizon: the most placed tokens every packer reaches (the fewest any "
    "packer places at its natural end)",
    "natural": "each packer to its own natural end (not like for like)",
    "asked": "the horizon asked, for every packer",
}
"""How a measurement's horizon was chosen, in words (:attr:`Measurement.horizon_rule`)."""

Int64Array = npt.NDArray[np.int64]

FEED_BATCH_EVENTS = 1 << 18
"""The most events of one batch the consumers of a packer's run are fed at once (a larger batch is split:
:func:`~packing_theory.engine.batches.split_batches`)."""


# --------------------------------------------------------------------------- the measurement


@dataclass(frozen=True)
class Measurement:
    """Every packer of one corpus at one horizon (see the module doc)."""

    corpus: CorpusSummary
    settings: Settings
    horizon: Budget | None
    """The horizon every packer was cut at (``None``: each packer's natural end)."""
    horizon_rule: str
    """A key of :data:`HORIZON_RULES`."""
    runs: tuple[PackerRun, ...]
    refused: tuple[tuple[str, str], ...] = ()
    """``(packer, the framework's message)`` for packers whose framework refused this corpus."""
    horizon_set_by: tuple[str, ...] = ()
    """The common horizon: the packers that place the fewest tokens at their natural end (so set it)."""
    seconds: float = 0.0
    resumed: tuple[str, ...] = ()
    """Packers whose result (run or refusal) was read back from ``resume``'s parts rather than replayed
    (not in the JSON)."""
    resume_problem: str | None = None
    """Why ``resume``'s parts stopped being kept (a full disk...), else ``None`` (not in the JSON)."""

    def run(self, name: str) -> PackerRun:
        """One packer's run.

        Raises:
            KeyError: ``name`` was not measured (the message lists those that were).
        """
        for r in self.runs:
            if r.packer == name:
                return r
        raise KeyError(f"packer {name!r} was not measured (measured: {[r.packer for r in self.runs]})")

    def horizon_note(self) -> str:
        """A sentence when the packers stopped at different points (their figures are then not like for
        like), else ``""``.

        A packer stops before the horizon asked when its stream ran dry or its framework packed
        everything it was given; packers that all reached the horizon, or all ran to their own end
        under ``"natural"``, need no note.
        """
        reasons = {r.horizon.reason for r in self.runs}
        if len(self.runs) < 2 or reasons == {"budget reached"}:
            return ""
        if self.horizon_rule == "natural":
            return "every packer ran to its own end: the figures are not like for like"
        short = [
            f"{r.packer} ({r.horizon.reason} at row {r.horizon.stopped_at_row:,})"
            for r in self.runs
            if r.horizon.reason != "budget reached"
        ]
        if not short:
            return ""
        asked = self.horizon.describe() if self.horizon is not None else "the horizon"
        return (
            f"not every packer reached {asked}: {', '.join(short)} stopped before it, so their figures "
            "count fewer rows than the others'"
        )

    def to_dict(self) -> dict[str, Any]:
        """The measurement's JSON: corpus, settings, horizon, one entry per packer, refusals."""
        return {
            "corpus": self.corpus.to_dict(),
            "settings": self.settings.to_dict(),
            "horizon": {
                **(self.horizon.to_dict() if self.horizon else {"unit": None, "value": None}),
                "rule": self.horizon_rule,
                "explained": HORIZON_RULES[self.horizon_rule],
                "set_by": list(self.horizon_set_by),
                "note": self.horizon_note() or None,
            },
            "packers": [r.to_dict() for r in self.runs],
            "refused": [{"packer": n, "reason": why} for n, why in self.refused],
        }


@dataclass(frozen=True)
class _Task:
    """Everything one packer's task needs (pickled to a worker)."""

    name: str
    settings: Settings
    budget: Budget | None
    documents: bool
    identity: DocumentIdentity | None
    """Who each document is, without its names (they stay where the corpus was read)."""
    sources: Any


def _run_one(task: _Task, arr: Int64Array | MappedLengths, reach: bool = False
             ) -> tuple[PackerRun | None, str | None, tuple[int, bool] | None]:
    """One packer's :class:`PackerRun` (a top-level function: it runs in worker processes), or
    ``(None, refusal)`` when its framework refuses the corpus; with ``reach`` (a peer's), the same pass
    also reads its stream on and returns ``(tokens placed, to its natural end)`` (else ``None``).

    An offline peer (it packs its whole input before the first row) is read to its end: its framework
    refuses a corpus wherever the refused document is. An online peer emits rows as it reads, so, as in
    training, what lies past the rows taken is never read: its pass stops once it passes the task's budget
    (the smallest streaming reach), its count then a lower bound above it."""
    release_freed_memory()  # the previous task's freed blocks: this run starts from what is live
    t0 = time.perf_counter()
    arr = lengths_of(arr)
    name, settings, budget = task.name, task.settings, task.budget
    packer, e, options = build_packer_for(name, settings, budget)  # bad options were refused before any task
    width = packer.capacity
    compiled = settings.engine == "compiled"
    streaming = e.kind != "peer"
    passes = settings.passes if streaming else None
    offered = int(arr.size) * (passes or 1)
    # past OUT_OF_CORE occurrences the per-document state goes to temporary disk stores (removed with
    # the ledger and the table): memory O(window + buffer) whatever the corpus size
    ledger = Ledger(
        width,
        settings.min_buffer,
        policy=name,
        boundaries=settings.boundaries,
        compiled=compiled,
        keep_first_targets=False,
        occurrences_hint=offered,
        store=out_of_core_store(offered),
    )
    rows = DocumentRows(
        width,
        per_occurrence=task.documents,
        arrival_rows=False,
        store=out_of_core_store(offered) if task.documents else None,
    )
    consumers: list[Any] = [ledger, rows, CostAccumulator(width, name, compiled=compiled)]
    try:
        counter = None if streaming else packer.figures(arr)
    except ValueError as exc:  # the framework's own rule refuses this corpus (where it reads it whole)
        return None, str(exc), None
    if counter is not None:
        counter.keep_lengths = False  # the ledger's table holds each occurrence's arrived length
        consumers.append(counter)
    series = None
    if task.sources is not None:
        series = task.sources.series()
        consumers.append(series)
    events: Any = stream_of(packer, arr, settings.engine)
    reaching = None
    if not streaming:  # a streaming packer honours the budget natively (the same events: tested)
        if reach:
            online = isinstance(packer, PeerPacker) and not packer.offline
            stop = budget.value if online and budget is not None else None
            events = reaching = Reaching(events, width, stop_above=stop)
        cut = cut_batches_at_horizon if compiled else cut_at_horizon
        events = cut(events, budget, capacity=width)
    # an offline peer emits every arrival in one batch: the consumers take it in pieces, so that what they
    # build per batch is O(FEED_BATCH_EVENTS), not O(corpus) (the same stream: the same figures)
    events = split_batches(events, FEED_BATCH_EVENTS)
    try:
        results = feed_all(events, *consumers)
    except ValueError as exc:
        if streaming:
            raise
        return None, str(exc), None  # the framework's own rule refuses this corpus
    del events, consumers
    # the consumers' per-document state is reduced to the run before the stream is read on for its reach:
    # what the peer builds past the horizon is then never held beside the ledger, the costs and the figures
    run = _reduced(task, e, options, width, arr, ledger, rows, counter, results, t0)
    del ledger, rows, counter, series, results
    if reaching is None:
        return run, None, None
    try:
        reached = (reaching.finish(), reaching.whole)
    except ValueError as exc:  # the framework's own rule refuses this corpus past the horizon
        return None, str(exc), None
    return replace(run, seconds=time.perf_counter() - t0), None, reached


def _reduced(task: _Task, e: Any, options: dict[str, Any], width: int, arr: Int64Array, ledger: Ledger,
             rows: DocumentRows, counter: Any, results: tuple[Any, ...], t0: float) -> PackerRun:
    """The :class:`PackerRun` of a packer's consumers fed its stream to the horizon (:func:`_run_one`)."""
    name, settings, budget = task.name, task.settings, task.budget
    streaming = e.kind != "peer"
    passes = settings.passes if streaming else None
    agg, facts, costs = results[0], results[1], results[2]
    figures: PeerFigures | None = None
    if counter is not None:
        figures = results[3]
        agg = agg.with_peer_figures(figures, counter.occurrence_target_columns(lengths=ledger.lengths_of))
    delays = "measured" if figures is None else figures.start_delays
    if delays != "measured":  # row positions of an offline packer, not waits
        costs = replace(
            costs, start_delay_max=None, start_delay_p50=None, start_delay_p99=None, unstarted_wait_max=None
        )
    nt = never_trained(ledger, arr, passes=passes, rows=facts)
    if facts.partial_placements.size:  # the unfinished row's tokens are emitted, never trained
        by = partial_row_by_stratum(ledger, facts, settings.boundaries)
        agg = replace(agg, strata=tuple(replace(s, partial_row_tokens=v)
                                        for s, v in zip(agg.strata, by, strict=True)))
    table = (
        document_table(ledger, facts, arr, passes=passes, identity=task.identity) if task.documents else None
    )
    per_source = None if task.sources is None else task.sources.account(name, ledger, results[-1], agg)
    return PackerRun(
        packer=name,
        kind=e.kind,
        framework=e.framework,
        row_width=width,
        seq_length=e.row_width.seq_length(width, options),
        options=options,
        in_family=e.in_family,
        verdict=packer_verdict(e),
        trainer_view=e.trainer_view,
        horizon=horizon_statement(agg, budget, streaming=streaming),
        aggregates=agg,
        never_trained=nt,
        costs=costs,
        start_delays=delays,
        documents=table,
        sources=per_source,
        seconds=time.perf_counter() - t0,
    )


def measure(
    lengths: npt.ArrayLike,
    packers: Sequence[str],
    settings: Settings | None = None,
    *,
    horizon: Budget | str = "common",
    documents: bool = False,
    document_identity: DocumentIdentity | None = None,
    sources: Any = None,
    executor: object = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    corpus_label: str = "",
    resume: str | os.PathLike[str] | None = None,
) -> Measurement:
    """Replay ``lengths`` with every packer of ``packers`` at one horizon (see the module doc).

    Args:
        lengths: BOS-inclusive document lengths (a memory-mapped array is read in chunks where it can be).
        packers: registered packer names (``packing-theory policies``), in report order.
        settings: how every packer is built (default :class:`Settings`: ``L = 2048``).
        horizon: a :class:`~packing_theory.engine.horizon.Budget`, ``"common"`` or ``"natural"``.
        documents: keep each packer's per-document table (O(documents) memory per packer).
        document_identity: who each document of ``lengths`` is in the raw corpus (raw index, name, data
            source, the documents a funnel removed: :meth:`Corpus.identity
            <packing_theory.orchestration.corpus.Corpus.identity>`), for the per-document tables.
        sources: the per-source consumers (:class:`~packing_theory.orchestration.sources.SourcePlan`).
        executor: where the packers run, one task each: ``None`` / ``"local"`` (``workers`` local
            processes, in this process for 1), ``"dask://HOST:PORT"``, a Dask client or any
            :class:`concurrent.futures.Executor` (:func:`~packing_theory.distributed.executors.open_runner`).
        workers: local processes (0: one per CPU); capped by the CPUs and the packers.
        progress: called with the number of packers done.
        corpus_label: a name for the corpus in the report.
        resume: a directory that keeps the common horizon and each packer's run as they finish
            (:class:`~packing_theory.orchestration.resume.RunParts`): a rerun with the same corpus,
            settings and options reads them back and replays only the rest (not with ``documents``).

    Raises:
        InputError: an unknown or repeated packer, options for a packer that is not measured or that
            it does not take, bad lengths or settings, a row width a packer's framework refuses.

    Complexity: one replay per packer (O(events)); ``"common"`` adds a counting pass per streaming packer,
    stopped once it passes the smallest reach found, and for a framework's packer a second replay only
    when another framework's packer reaches fewer tokens than every streaming packer.
    """
    arr = validate_lengths(lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths))
    settings = Settings() if settings is None else settings
    if not isinstance(settings, Settings):
        raise InputTypeError(f"settings must be a Settings, got {type(settings).__name__}")
    names = check_packers(packers, settings)
    if not isinstance(horizon, Budget) and horizon not in ("common", "natural"):
        raise InputError(f"horizon must be 'common', 'natural' or a Budget, got {horizon!r}")
    if settings.engine == "compiled" and not compiled_available():
        raise MissingDependency("engine 'compiled' needs numba (pip install 'packing-theory[fast]')")
    identity = None if document_identity is None else document_identity.check(int(arr.size))
    unnamed = None if identity is None else replace(identity, names=None)  # names are read here, not sent
    refused: dict[str, str] = {}
    for name in names:  # every packer is built once before anything is replayed: a bad option is bad input
        try:
            build_packer_for(name, settings, None)
        except NoRows as exc:  # its framework's row for these settings holds no target: listed, not fatal
            refused[name] = str(exc)
    t0 = time.perf_counter()
    set_by: tuple[str, ...] = ()
    budget = horizon if isinstance(horizon, Budget) else None
    done: dict[str, tuple[PackerRun | None, str | None]] = {}
    parts = None
    if resume is not None:
        if documents:
            raise InputError("resume keeps runs without per-document tables; got documents=True (measure "
                             "the tables without resume)")
        parts = RunParts(resume, measurement_key(arr, settings, documents=documents, identity=unnamed,
                                                 sources=sources))

    resumed: list[str] = []

    def finished(name: str, value: tuple[PackerRun | None, str | None], at: Budget | None,
                 from_parts: bool = False) -> None:
        done[name] = value
        if from_parts:
            resumed.append(name)
        elif parts is not None:
            parts.save(name, at, value)
        if progress is not None:
            progress(len(done))

    def task(name: str, at: Budget | None) -> _Task:
        return _Task(name, settings, at, documents, unnamed, sources)

    with open_runner(executor, workers=workers, retries=0) as runner, user_errors(), \
            shared_lengths(arr, runner.kind) as shared:
        if horizon == "common":
            able = [n for n in names if n not in refused]
            found = None if parts is None else parts.horizon(able)
            if found is not None:
                budget, set_by, more = found
                refused.update(more)
            else:
                budget, set_by, kept = _common_horizon(runner, able, shared, settings, task, refused, parts)
                if parts is not None:
                    parts.save_horizon(able, budget, set_by, refused)
                for n, (made, from_parts) in kept.items():
                    finished(n, (made, None), budget, from_parts)
        if parts is not None:
            for n in [n for n in names if n not in refused and n not in done]:
                found = parts.load(n, budget)
                if found is None:  # a peer's pass made at this very horizon is its run
                    passed = parts.load(n, None, "pass")
                    if passed is not None and passed[0] is not None and passed[3] == budget:
                        found = passed[:2]
                if found is not None:
                    finished(n, found, budget, True)
        order = per_event_first([n for n in names if n not in refused and n not in done], settings.engine)
        runner.run(
            _run_one,
            [(task(n, budget), shared) for n in order],
            on_result=lambda i, value: finished(order[i], value[:2], budget),
            label="packer",
            names=lambda i: order[i],
        )
    runs = []
    for n in names:  # in report order, whatever order the tasks ran in
        if n in refused:
            continue
        run, why = done[n]
        if run is None:
            refused[n] = why or "refused"
        else:
            if run.documents is not None and identity is not None and identity.names is not None:
                run.documents.name_rows(identity.names)
            runs.append(run)
    rule = "asked" if isinstance(horizon, Budget) else str(horizon)
    return Measurement(
        corpus_summary(arr, settings.streaming_capacity, label=corpus_label, boundaries=settings.boundaries),
        settings,
        budget,
        rule,
        tuple(runs),
        refused=tuple((n, refused[n]) for n in names if n in refused),
        horizon_set_by=set_by,
        seconds=time.perf_counter() - t0,
        resumed=tuple(resumed),
        resume_problem=None if parts is None else parts.problem,
    )


def _pass_one(task: _Task, arr: Int64Array | MappedLengths, bound_path: str
              ) -> tuple[PackerRun | None, str | None, tuple[int, bool] | None, Budget | None]:
    """A peer's run and its reach in one pass (:func:`_run_one`), cut at the smallest reach known when it
    starts (the task's budget, or a smaller full reach another peer has written to ``bound_path``);
    returns the horizon it was cut at last, and writes its own full reach there."""
    at = task.budget
    known = ReachBound(bound_path, every_s=0).get()
    if at is not None and known is not None and known < at.value:
        at = Budget("tokens", known)
    run, why, reach = _run_one(replace(task, budget=at), arr, True)
    if reach is not None and reach[1]:
        ReachBound(bound_path).offer(reach[0])
    return run, why, reach, at


def _common_horizon(
    runner: TaskRunner,
    names: Sequence[str],
    arr: Int64Array | MappedLengths,
    settings: Settings,
    task: Callable[[str, Budget | None], _Task],
    refused: dict[str, str],
    parts: RunParts | None = None,
) -> tuple[Budget | None, tuple[str, ...], dict[str, tuple[PackerRun, bool]]]:
    """The common token horizon of ``names``, the packers that set it (in the order of ``names``), and the
    peers' runs made at that horizon on the way (each with whether it was read back from ``parts``).

    The streaming packers' reaches come first, replayed in turn in one group per worker and each stopped
    once it passes a smaller finished reach (:func:`~packing_theory.orchestration._tasks.reach_group`):
    only the smallest matters. A peer then runs once, cut at the smallest reach known when it starts,
    while the same pass reads its stream on for its own reach (an offline peer to its end, meeting its
    framework's refusal if any; an online one until it passes that reach: :func:`_pass_one`); a peer whose
    own reach is smaller lowers the cut for the peers that start after it. A peer's run is returned when
    it was cut at the final horizon (else it runs again there). Without streaming packers, every peer's
    reach is a pass of its own first. A refusal goes to ``refused``. With ``parts``, the streaming
    reaches and each peer's pass are kept as they finish, and read back instead of replayed.
    """
    table = entries()
    streaming = [n for n in names if table[n].kind != "peer"]
    peers = [n for n in names if table[n].kind == "peer"]
    reached: dict[str, int] = {}  # full passes only
    made: dict[str, tuple[PackerRun, Budget | None, bool]] = {}  # a peer's run, its cut, read back or not
    first: int | None = None
    if streaming:
        group_key = ",".join(streaming)
        got: dict[str, tuple[int, bool]] = {} if parts is None else parts.load(group_key, None, "reach") or {}
        if not got:
            k = 1 if runner.kind == "inprocess" else max(1, min(runner.workers, len(streaming)))
            groups = [streaming[i::k] for i in range(k)]
            with tempfile.TemporaryDirectory(prefix="packing-theory-reach-") as d:
                bound = os.path.join(d, "bound")
                runner.run(reach_group, [(g, arr, settings, bound) for g in groups],
                           on_result=lambda i, value: got.update(value), label="packer",
                           names=lambda i: ", ".join(groups[i]))
            if parts is not None:
                parts.save(group_key, None, got, "reach")
        reached.update((n, tokens) for n, (tokens, full) in got.items() if full)
        first = min(reached.values())  # the smallest reach is never stopped: it passes no smaller one
    order = per_event_first(peers, settings.engine)
    if first is not None:
        ran: dict[str, tuple[PackerRun | None, str | None, tuple[int, bool] | None, Budget | None]] = {}
        read_back = set()
        if parts is not None:
            for n in order:
                found = parts.load(n, None, "pass")
                if found is not None:
                    ran[n] = found
                    read_back.add(n)
        todo = [n for n in order if n not in ran]
        with tempfile.TemporaryDirectory(prefix="packing-theory-reach-") as d:
            bound = os.path.join(d, "bound")
            seed = ReachBound(bound)
            for known in [first, *(v[2][0] for v in ran.values() if v[2] is not None and v[2][1])]:
                seed.offer(known)

            def passed(i: int, value: tuple[PackerRun | None, str | None, tuple[int, bool] | None,
                                              Budget | None]) -> None:
                ran[todo[i]] = value
                if parts is not None:
                    parts.save(todo[i], None, value, "pass")

            at = Budget("tokens", first)
            runner.run(_pass_one, [(task(n, at), arr, bound) for n in todo], on_result=passed,
                       label="packer", names=lambda i: todo[i])
        for n in peers:
            run, why, own, cut = ran[n]
            if run is None or own is None:
                refused[n] = why or "refused"
            else:
                made[n] = (run, cut, n in read_back)
                if own[1]:  # else stopped past a smaller reach: not the horizon
                    reached[n] = own[0]
    else:
        plain: dict[str, tuple[int, str | None]] = {}
        runner.run(reach_one, [(n, arr, settings) for n in order],
                   on_result=lambda i, value: plain.__setitem__(order[i], value), label="packer",
                   names=lambda i: order[i])
        for n in peers:
            tokens, why = plain[n]
            if why is not None:
                refused[n] = why
            else:
                reached[n] = tokens
    if not reached:
        return None, (), {}
    budget = Budget("tokens", min(reached.values()))
    at_horizon = {n: (run, back) for n, (run, cut, back) in made.items() if cut == budget}
    return budget, tuple(n for n in names if reached.get(n) == budget.value), at_horizon
