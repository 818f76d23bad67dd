"""The whole audit: one corpus, several packers side by side, startup spreads, evaluation population.

:func:`run_audit` replays one corpus under each chosen packer — streaming
policies and peer packers (:mod:`packing_theory.peers`) alike — feeds each
event stream to a :class:`~packing_theory.audit.Ledger`, and adds, for the
streaming policies, the startup-delay spread over permutations and the
evaluation population. ``packing-theory audit`` is this function plus the
report (:mod:`packing_theory.rendering.audit`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, as_completed
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..audit.documents import DocumentRows, DocumentTable, document_table
from ..audit.identity import DocumentIdentity
from ..audit.ledger import Ledger
from ..audit.population import (
    AUTORESEARCH_EVAL_TARGETS,
    DEFAULT_EVAL_PREFIXES,
    EvalPopulation,
    evaluation_population,
)
from ..audit.results import Aggregates
from ..audit.startup import StartupSpread, permutation_states, startup_delay_all, startup_delays_many
from ..audit.store import out_of_core_store
from ..audit.strata import STRATA_BOUNDARIES, check_boundaries, stratum_index
from ..audit.untrained import HorizonStatement, NeverTrained, horizon_statement, never_trained
from ..engine.consumers import feed_all
from ..engine.horizon import Budget, cut_at_horizon
from ..engine.policies import POLICIES, PackerConfig
from ..engine.replay import Engine, make_packer
from ..errors import InputError, InputTypeError
from ..lengths import exact_sum, release_pages, validate_lengths
from ..registry import entry
from ..registry import names as packer_names

Int64Array = npt.NDArray[np.int64]

__all__ = ["AUTORESEARCH_ROWS", "AuditResult", "CorpusSummary", "PackerAccount", "asked_horizon",
           "audit_peer", "corpus_summary", "run_audit"]

AUTORESEARCH_ROWS = 243_968
"""autoresearch's training budget: 953 updates × 256 rows (499,646,464 targets at R = 2049)."""

_SUMMARY_CHUNK = 1 << 16
"""Lengths per step of :func:`corpus_summary`: its scratch columns (512 KiB) are reused by the allocator
instead of being fresh, zeroed huge pages at every step."""


@dataclass(frozen=True, slots=True)
class CorpusSummary:
    """The audited corpus: size and sources per stratum."""

    label: str
    documents: int
    tokens: int
    over_capacity_documents: int
    max_length: int
    strata_sources: tuple[int, ...]
    strata_tokens: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def corpus_summary(lengths: npt.ArrayLike, capacity: int = 2049, *, label: str = "",
                   boundaries: Sequence[int] = STRATA_BOUNDARIES) -> CorpusSummary:
    """Size and stratum census of a length array. O(n).

    >>> corpus_summary([3, 40, 5], capacity=8, boundaries=(8,)).strata_sources
    (2, 1)
    """

    arr = validate_lengths(lengths if isinstance(lengths, np.ndarray) else np.asarray(lengths))
    S = len(boundaries) + 1
    sources = [0] * S
    tokens = [0] * S
    over = top = 0
    for lo in range(0, arr.size, _SUMMARY_CHUNK):  # chunked: O(chunk) scratch for a memory-mapped input
        part = arr[lo : lo + _SUMMARY_CHUNK]
        s = stratum_index(part, boundaries)
        over += int((part > capacity).sum())
        top = max(top, int(part.max()))
        for k, v in enumerate(np.bincount(s, minlength=S).tolist()):
            sources[k] += v
        if exact_sum(part) < 2**53:  # float64 weights are exact
            sums = [int(v) for v in np.bincount(s, weights=part, minlength=S).round()]
        else:
            sums = [exact_sum(part[s == k]) for k in range(S)]
        for k, v in enumerate(sums):
            tokens[k] += v
        release_pages(part)
    return CorpusSummary(label, int(arr.size), sum(tokens), over, top, tuple(sources),
                         tuple(tokens))


@dataclass(frozen=True, slots=True)
class AuditResult:
    """A complete audit: one corpus, several packers side by side, startup spreads, evaluation.

    ``policies`` holds one :class:`~packing_theory.audit.Aggregates` per packer
    in the order asked; ``startup`` and ``evaluation`` hold the streaming
    policies only (they replay the streaming engine). ``seconds`` holds wall
    times by stage (``"replay:<policy>"``, ``"startup:<policy>"``,
    ``"evaluation:<policy>"``).
    """

    corpus: CorpusSummary
    config: PackerConfig
    boundaries: tuple[int, ...]
    policies: tuple[Aggregates, ...]
    startup: tuple[StartupSpread, ...]
    evaluation: tuple[EvalPopulation, ...]
    eval_corpus: CorpusSummary | None
    seconds: dict[str, float]
    horizon: Budget | None = None
    """The horizon asked (``None``: every packer ran to its natural end)."""
    horizons: tuple[HorizonStatement, ...] = ()
    """Per packer (order of ``policies``): where its run stopped and why."""
    never_trained: tuple[NeverTrained, ...] = ()
    """Per packer (order of ``policies``): what it never trained at its horizon."""
    document_tables: tuple[DocumentTable, ...] = ()
    """Per packer, the per-document table (only when :func:`run_audit` was asked for it)."""

    def policy(self, name: str) -> Aggregates:
        """The aggregates of one policy."""
        for agg in self.policies:
            if agg.policy == name:
                return agg
        raise KeyError(f"policy {name!r} was not audited (audited: {[a.policy for a in self.policies]})")


@dataclass(frozen=True)
class PackerAccount:
    """One packer's replay accounted: aggregates, what it never trained, (on request) its documents."""

    aggregates: Aggregates
    never_trained: NeverTrained
    documents: DocumentTable | None


def asked_horizon(config: PackerConfig, horizon: Budget | None = None) -> Budget | None:
    """The horizon of an audit: ``horizon`` if given, else the config's ``rows`` or ``targets`` budget.

    >>> asked_horizon(PackerConfig(targets=4096)), asked_horizon(PackerConfig())
    (Budget(unit='targets', value=4096), None)
    """
    if horizon is not None:
        return horizon
    if config.rows is not None:
        return Budget("rows", config.rows)
    if config.targets is not None:
        return Budget("targets", config.targets)
    return None


def _account(events: Any, capacity: int, min_buffer: int, name: str, arr: Int64Array, passes: int | None,
             boundaries: tuple[int, ...], documents: bool, names: Sequence[str] | None,
             progress: Callable[[int], None] | None = None, figures: Any = None,
             compiled: bool = False, identity: DocumentIdentity | None = None) -> PackerAccount:
    """Feed one packer's stream to a ledger and the row consumer; account it (the table for ``documents``).

    ``figures``, for a peer, is its framework-figure consumer (``peer.figures(arr)``), fed in the same
    pass; the aggregates then carry the framework's own padding and targets. ``compiled``: the
    compiled ledger (same results). Per-occurrence first rows are kept only for
    ``documents`` (the table reads them; no first targets): the ledger holds 13 bytes per occurrence
    (:data:`~packing_theory.audit.table.BYTES_PER_OCCURRENCE`); past
    :data:`~packing_theory.audit.store.OUT_OF_CORE` occurrences they go to temporary disk stores
    (memory O(window + buffer)). ``identity`` names the documents of the table.
    """
    offered = int(arr.size) * (passes or 1)
    ledger = Ledger(capacity, min_buffer, policy=name, boundaries=boundaries, compiled=compiled,
                    keep_first_targets=False, occurrences_hint=offered, store=out_of_core_store(offered))
    # the rows also locate the partial row
    consumers: list[Any] = [ledger, DocumentRows(capacity, per_occurrence=documents, arrival_rows=False,
                                                 store=out_of_core_store(offered) if documents else None)]
    if figures is not None:
        consumers.append(figures)
    results = feed_all(events, *consumers, progress=progress)
    agg, facts = results[0], results[1]
    table = (document_table(ledger, facts, arr, passes=passes, names=names, identity=identity) if documents
             else None)
    if figures is not None:
        agg = agg.with_peer_figures(results[-1], figures.occurrence_targets())
    return PackerAccount(agg, never_trained(ledger, arr, passes=passes, rows=facts), table)


def _replay_streaming(arr: Int64Array, config: PackerConfig, engine: Engine, boundaries: tuple[int, ...],
                      documents: bool = False, names: Sequence[str] | None = None,
                      progress: Callable[[int], None] | None = None,
                      identity: DocumentIdentity | None = None) -> PackerAccount:
    packer = make_packer(engine, config)
    return _account(packer.stream(arr), config.capacity, config.min_buffer, config.policy, arr, config.passes,
                    boundaries, documents, names, progress, compiled=engine == "compiled", identity=identity)


def _replay_peer(arr: Int64Array, name: str, capacity: int, min_buffer: int, options: Mapping[str, Any],
                 budget: Budget | None, boundaries: tuple[int, ...], documents: bool = False,
                 names: Sequence[str] | None = None,
                 identity: DocumentIdentity | None = None) -> PackerAccount:
    peer = entry(name).build(capacity, **dict(options))
    events = cut_at_horizon(peer.events(arr), budget, capacity=peer.capacity)
    return _account(events, peer.capacity, min_buffer, name, arr, None, boundaries, documents, names,
                    figures=peer.figures(arr), identity=identity)


def audit_peer(lengths: npt.ArrayLike, name: str, capacity: int, min_buffer: int, *,
               options: Mapping[str, Any] | None = None,
               boundaries: Sequence[int] = STRATA_BOUNDARIES, horizon: Budget | None = None) -> Aggregates:
    """Replay ``lengths`` with peer packer ``name`` (built at ``capacity`` with ``options``) and aggregate it.

    ``capacity`` is the peer's row width ``R`` (every packer's meaning of
    ``capacity``; :func:`~packing_theory.registry.build_packer`). ``min_buffer``
    is the ``B`` of the protected-set columns. ``horizon`` cuts the peer's
    event stream at that budget (:func:`~packing_theory.engine.horizon.cut_at_horizon`);
    ``None`` runs it to its natural end. ``targets`` and
    ``mass.padding_tokens`` are the framework's own (its training collator's
    targets, the pad tokens it stores), ``peer_figures`` holds the rule, every
    option the peer ran with (defaults included) and the framework's horizon
    (:meth:`~packing_theory.audit.Aggregates.with_peer_figures`).

    Raises:
        InputError: an unknown peer, a bad option, or a corpus the framework's
            own rule refuses.
    """
    arr = validate_lengths(np.asarray(lengths))
    return _replay_peer(arr, name, capacity, min_buffer, dict(options or {}), horizon,
                        tuple(boundaries)).aggregates


def run_audit(
    lengths: npt.ArrayLike,
    config: PackerConfig | None = None,
    *,
    policies: Sequence[str] | None = None,
    peer_options: Mapping[str, Mapping[str, Any]] | None = None,
    seq_length: int | None = None,
    permutations: int = 20,
    permutation_seed: int = 0,
    eval_lengths: npt.ArrayLike | None = None,
    eval_targets: int = AUTORESEARCH_EVAL_TARGETS,
    eval_prefixes: Sequence[int] = DEFAULT_EVAL_PREFIXES,
    engine: Engine = "fast",
    boundaries: Sequence[int] = STRATA_BOUNDARIES,
    corpus_label: str = "",
    eval_label: str = "",
    progress: Callable[[str, int | None], Callable[[int], None] | None] | None = None,
    executor: Executor | None = None,
    horizon: Budget | None = None,
    documents: bool = False,
    document_names: Sequence[str] | None = None,
    document_identity: DocumentIdentity | None = None,
) -> AuditResult:
    """Audit ``lengths`` under each packer of ``policies`` with the rest of ``config``.

    Args:
        lengths: BOS-inclusive source lengths (the training corpus).
        config: the loader settings (default :class:`PackerConfig`: R = 2049,
            B = 1000, refill 128, and ``rows`` = :data:`AUTORESEARCH_ROWS` when
            neither ``rows`` nor ``targets`` is set).
        policies: packers compared side by side, in this order (default:
            ``config.policy``): streaming policies and peer policies
            (``trl-bfd``, ...; see ``packing-theory policies``). A peer replays
            the whole corpus at row width ``config.capacity`` (:func:`audit_peer`);
            it gets no startup spread or evaluation population, which replay
            the streaming engine.
        peer_options: per peer, its knobs (``{"trl-bfd": {"window": 500}}``).
        seq_length: instead of one row width for every peer, the framework
            sequence length ``L``: each peer's row width is its registry entry's
            rule applied to ``L`` (:meth:`~packing_theory.registry.PackerEntry.capacity_for`).
        permutations: startup-delay permutations per streaming policy (0 to skip).
        eval_lengths: an evaluation stream; when given, its population is
            audited with each streaming policy at ``eval_targets`` and
            ``eval_prefixes`` (no streaming policy: no evaluation section).
        engine: ``"fast"``, ``"compiled"`` (batches; the ``fast`` extra) or ``"reference"``.
        progress: a factory ``(description, total) -> callback(done)``
            (see :func:`packing_theory.reporting.progress_bar`): rows of each
            streaming replay when sequential, finished tasks with an executor.
        executor: any :class:`concurrent.futures.Executor` (a
            ``ProcessPoolExecutor``, or a Dask ``distributed`` client's executor):
            every replay (streaming or peer), every startup permutation
            (replayed under every streaming policy) and every evaluation replay
            becomes one task. Tasks are pure functions of their arguments
            (permutation ``i`` carries the generator state saved before its
            draw), so the result equals the sequential one whatever the
            executor; ``seconds`` then holds the tasks' own wall times, summed
            per stage. ``None`` (default) runs everything in this process.
        horizon: one horizon for every packer, in rows, targets or tokens
            (:class:`~packing_theory.engine.horizon.Budget`); default: the
            config's ``rows`` / ``targets``. Streaming policies honour it
            natively (a ``tokens`` budget is ``ceil(T / R)`` of their full
            rows), peers by the cut of their event stream.
        documents: also keep each packer's per-document table
            (:attr:`AuditResult.document_tables`; O(documents) memory per packer).
        document_names: one name per document (file paths) for the tables' ``name`` column.
        document_identity: who each document of ``lengths`` is in the raw corpus (its index, name,
            source, and the documents a cleaning funnel removed) for the tables' rows
            (:class:`~packing_theory.audit.identity.DocumentIdentity`; overrides ``document_names``).

    Raises:
        InputError: an unknown or repeated policy, options for a packer that
            is not an audited peer, bad lengths or settings.

    Complexity: one replay per packer (O(events)), the permutation prefixes,
    and one evaluation replay per streaming policy.
    """

    arr = validate_lengths(np.asarray(lengths))
    if config is None:
        config = PackerConfig(rows=AUTORESEARCH_ROWS)
    budget = asked_horizon(config, horizon)
    if horizon is not None:  # one horizon: the streaming engines' native row budget
        config = replace(config, rows=horizon.streaming_rows(config.capacity), targets=None)
    if document_names is not None and len(document_names) != arr.size:
        raise InputError(f"document_names has {len(document_names):,} entries for {arr.size:,} documents")
    names: list[str] = list(policies) if policies is not None else [config.policy]
    peers = set(packer_names("peer"))
    _check_names(names, peers, peer_options)
    if executor is not None and not isinstance(executor, Executor):
        raise InputTypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    permutations = check_int("permutations", permutations, 0)
    permutation_seed = check_int("permutation_seed", permutation_seed, 0)
    streaming = [n for n in names if n not in peers]
    ev_arr = None if eval_lengths is None else validate_lengths(np.asarray(eval_lengths),
                                                                name="evaluation lengths")
    if not streaming:
        ev_arr = None
    peer_plan: list[tuple[str, int, dict[str, Any]]] = []
    for name in names:  # a peer's options and capacity are checked before anything is replayed
        if name in peers:
            opts = dict((peer_options or {}).get(name, {}))
            width = config.capacity if seq_length is None else entry(name).capacity_for(seq_length, opts)
            entry(name).build(width, **opts)
            peer_plan.append((name, width, opts))
    plan = _Plan(arr, [replace(config, policy=n) for n in streaming],  # type: ignore[arg-type]
                 peer_plan,
                 permutations, permutation_seed, ev_arr, eval_targets, tuple(eval_prefixes), engine,
                 tuple(boundaries), config.capacity, config.min_buffer, budget, documents,
                 None if document_names is None else list(document_names),
                 None if document_identity is None else document_identity.check(int(arr.size)))
    if executor is None:
        accounts, spreads, evals, seconds = _sequential(plan, progress)
    else:
        accounts, spreads, evals, seconds = _parallel(plan, progress, executor)
    accounts.sort(key=lambda a: names.index(a.aggregates.policy))
    aggs = [a.aggregates for a in accounts]
    return AuditResult(
        corpus=corpus_summary(arr, config.capacity, label=corpus_label, boundaries=boundaries),
        config=config,
        boundaries=check_boundaries(boundaries),
        policies=tuple(aggs),
        startup=tuple(spreads),
        evaluation=tuple(evals),
        eval_corpus=(corpus_summary(ev_arr, config.capacity, label=eval_label, boundaries=boundaries)
                     if ev_arr is not None else None),
        seconds=seconds,
        horizon=budget,
        horizons=tuple(horizon_statement(a, budget, streaming=a.policy not in peers) for a in aggs),
        never_trained=tuple(a.never_trained for a in accounts),
        document_tables=tuple(a.documents for a in accounts if a.documents is not None),
    )


def _check_names(names: list[str], peers: set[str],
                 peer_options: Mapping[str, Mapping[str, Any]] | None) -> None:
    if not names:
        raise InputError("policies must name at least one policy, got []")
    for name in names:
        if name not in POLICIES and name not in peers:
            raise InputError(f"policy must be one of {', '.join(packer_names())}; got {name!r}")
    if len(set(names)) != len(names):
        raise InputError(f"policies must not repeat, got {names}")
    for name, options in (peer_options or {}).items():
        if name not in peers or name not in names:
            raise InputError(f"peer_options names {name!r}, which is not an audited peer policy "
                             f"(audited: {', '.join(names)})")
        try:
            entry(name).options(options)  # an unknown knob names itself and the packer
        except InputError as exc:
            raise InputError(f"peer_options[{name!r}]: {exc}") from None


@dataclass(frozen=True)
class _Plan:
    """Everything one audit replays (validated): what the sequential and parallel runs share."""

    arr: Int64Array
    configs: list[PackerConfig]  # one per streaming policy
    peers: list[tuple[str, int, dict[str, Any]]]  # (peer policy, row width, knobs)
    permutations: int
    seed: int
    ev_arr: Int64Array | None
    eval_targets: int
    eval_prefixes: tuple[int, ...]
    engine: Engine
    boundaries: tuple[int, ...]
    capacity: int
    min_buffer: int
    budget: Budget | None
    documents: bool
    names: list[str] | None
    identity: DocumentIdentity | None = None


_Parts = tuple[list[PackerAccount], list[StartupSpread], list[EvalPopulation], dict[str, float]]


def _sequential(plan: _Plan, progress: Any) -> _Parts:
    seconds: dict[str, float] = {}
    aggs: list[PackerAccount] = []
    spreads: list[StartupSpread] = []
    evals: list[EvalPopulation] = []
    configs, arr, permutations = plan.configs, plan.arr, plan.permutations
    share = 0.0
    if permutations and configs:  # each permutation drawn once and replayed under every policy
        t0 = time.perf_counter()
        bar = progress("audit startup permutations", permutations) if progress is not None else None
        delays = startup_delays_many(arr, configs, permutations, plan.seed, plan.engine, progress=bar)
        if bar is not None and hasattr(bar, "close"):
            bar.close()
        share = (time.perf_counter() - t0) / len(configs)
        for j, cfg in enumerate(configs):
            spreads.append(StartupSpread(cfg.policy, permutations, int(plan.seed),
                                         tuple(d[j] for d in delays)))
    for cfg in configs:
        name = cfg.policy
        t0 = time.perf_counter()
        cb = progress(f"audit {name}", cfg.row_budget) if progress is not None else None
        aggs.append(_replay_streaming(arr, cfg, plan.engine, plan.boundaries, plan.documents, plan.names, cb,
                                      plan.identity))
        if cb is not None and hasattr(cb, "close"):
            cb.close()
        seconds[f"replay:{name}"] = time.perf_counter() - t0
        if permutations:
            seconds[f"startup:{name}"] = share
        if plan.ev_arr is not None:
            t0 = time.perf_counter()
            evals.append(evaluation_population(plan.ev_arr, cfg, targets=plan.eval_targets,
                                               prefixes=plan.eval_prefixes, boundaries=plan.boundaries,
                                               engine=plan.engine))
            seconds[f"evaluation:{name}"] = time.perf_counter() - t0
    for peer, width, options in plan.peers:
        t0 = time.perf_counter()
        aggs.append(_replay_peer(arr, peer, width, plan.min_buffer, options, plan.budget, plan.boundaries,
                                 plan.documents, plan.names, plan.identity))
        seconds[f"replay:{peer}"] = time.perf_counter() - t0
    return aggs, spreads, evals, seconds


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and its wall time (runs inside a worker)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def _parallel(plan: _Plan, progress: Any, executor: Executor) -> _Parts:
    arr, configs, engine = plan.arr, plan.configs, plan.engine
    states = (permutation_states(arr.size, plan.permutations, plan.seed) if plan.permutations and configs
              else [])
    jobs: list[tuple[str, str, Future[tuple[Any, float]]]] = []
    for state in states:  # one task per permutation, replayed under every policy
        jobs.append(("startup", "*", executor.submit(_timed, startup_delay_all, arr, configs, state, engine)))
    for cfg in configs:
        name = cfg.policy
        jobs.append(("replay", name, executor.submit(_timed, _replay_streaming, arr, cfg, engine,
                                                     plan.boundaries, plan.documents, plan.names, None,
                                                     plan.identity)))
        if plan.ev_arr is not None:
            jobs.append(("evaluation", name, executor.submit(
                _timed, evaluation_population, plan.ev_arr, cfg, targets=plan.eval_targets,
                prefixes=plan.eval_prefixes, boundaries=plan.boundaries, engine=engine)))
    for peer, width, options in plan.peers:
        jobs.append(("replay", peer, executor.submit(_timed, _replay_peer, arr, peer, width,
                                                     plan.min_buffer, options, plan.budget,
                                                     plan.boundaries, plan.documents, plan.names,
                                                     plan.identity)))
    cb = progress("audit tasks", len(jobs)) if progress is not None else None
    if cb is not None:
        for done, _ in enumerate(as_completed([f for _, _, f in jobs]), 1):
            cb(done)
        if hasattr(cb, "close"):
            cb.close()
    seconds: dict[str, float] = {}
    aggs: list[PackerAccount] = []
    evals: list[EvalPopulation] = []
    delays: dict[str, list[int | None]] = {cfg.policy: [] for cfg in configs}
    for stage, label, future in jobs:  # submission order: deterministic whatever finished first
        value, spent = future.result()
        if stage == "startup":
            for cfg, delay in zip(configs, value, strict=True):
                delays[cfg.policy].append(delay)
                key = f"startup:{cfg.policy}"
                seconds[key] = seconds.get(key, 0.0) + spent / len(configs)
            continue
        key = f"{stage}:{label}"
        seconds[key] = seconds.get(key, 0.0) + spent
        if stage == "replay":
            aggs.append(value)
        else:
            evals.append(value)
    spreads = [StartupSpread(cfg.policy, plan.permutations, int(plan.seed), tuple(delays[cfg.policy]))
               for cfg in configs] if plan.permutations else []
    return aggs, spreads, evals, seconds
