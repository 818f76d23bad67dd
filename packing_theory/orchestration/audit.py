"""The audit: one measurement of a corpus under several packers, with startup spreads, the evaluation
population, the data sources and the per-document table.

:func:`audit` is :func:`~packing_theory.orchestration.measure.measure` at a
horizon of autoresearch's budget (243,968 rows) unless told otherwise, plus:

* for the streaming policies, the startup-delay spread over permutations of
  the corpus and the evaluation population of an evaluation stream (seed 000
  §5.1, §6);
* with source labels, each packer's per-source figures, the declared mixture
  against the realised one and the cleaning funnel
  (:mod:`packing_theory.orchestration.sources`);
* on request, every packer's per-document table (written as ``documents.csv``
  or ``documents.parquet``).

Every task (one per packer, per permutation, per evaluation replay) runs on
one task runner: this process, local processes or a Dask cluster; the result
is the same wherever it runs, apart from timings. The result,
:class:`AuditResult`, is a :class:`~packing_theory.reporting.Report`: write it
with :func:`~packing_theory.reporting.write_report` (the command line does
exactly that).

>>> from packing_theory.orchestration import Settings
>>> res = audit_corpus([3, 40, 5, 50, 2, 60, 4, 70] * 3, ["discard"],
...                    Settings(capacity=8, min_buffer=4, refill=2), permutations=0)
>>> r = res.measurement.runs[0]
>>> r.horizon.reason, r.never_trained.never_started.documents
('stream exhausted', 3)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..audit.population import (
    AUTORESEARCH_EVAL_TARGETS,
    DEFAULT_EVAL_PREFIXES,
    EvalPopulation,
    evaluation_population,
)
from ..audit.startup import StartupSpread, permutation_states, startup_delay_all
from ..distributed.executors import open_runner
from ..engine.horizon import Budget
from ..engine.policies import PackerConfig
from ..errors import InputError
from ..lengths import validate_lengths
from ..registry import entries
from .audit_plots import PLOT_FILES, SOURCES_PLOT
from .corpus import Corpus, CorpusSummary, corpus_summary
from .measure import Measurement, measure
from .settings import Settings
from .sources import SourcePlan, SourcesResult, sources_result

__all__ = [
    "AUDIT_FILES",
    "AUTORESEARCH_ROWS",
    "DOCUMENTS_FILES",
    "AuditResult",
    "EvalStream",
    "audit_corpus",
    "streaming_config",
]

AUTORESEARCH_ROWS = 243_968
"""autoresearch's training budget: 953 updates × 256 rows (499,646,464 targets at R = 2049)."""

DOCUMENTS_FILES: tuple[str, ...] = ("documents.csv", "documents.parquet")
"""The per-document file's names."""

AUDIT_FILES: tuple[str, ...] = ("audit.html", "audit.json", "audit.md", *PLOT_FILES, SOURCES_PLOT,
                                *DOCUMENTS_FILES)
"""Every file an audit report directory may hold (a writer opened before the audit is told them all)."""


@dataclass(frozen=True, eq=False)
class EvalStream:
    """An evaluation stream: its lengths, the targets it is scored to, shorter budgets also checked."""

    lengths: npt.NDArray[np.int64]
    targets: int = AUTORESEARCH_EVAL_TARGETS
    prefixes: tuple[int, ...] = DEFAULT_EVAL_PREFIXES
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "lengths", validate_lengths(np.asarray(self.lengths), name="evaluation lengths")
        )
        check_int("targets", self.targets, 1)
        object.__setattr__(self, "prefixes", tuple(check_int("prefixes", p, 1) for p in self.prefixes))


@dataclass(frozen=True, eq=False)
class AuditResult:
    """A complete audit (see the module doc); a :class:`~packing_theory.reporting.Report` (``audit``)."""

    measurement: Measurement
    startup: tuple[StartupSpread, ...] = ()
    evaluation: tuple[EvalPopulation, ...] = ()
    eval_corpus: CorpusSummary | None = None
    sources: SourcesResult | None = None
    documents_file: str | None = None
    """``documents.csv`` / ``documents.parquet`` when the per-document table is part of the report."""
    corpus: Corpus | None = None
    reference: Mapping[str, Any] | None = None
    """Published figures shown beside the audit's (the demo: the paper's §5.1)."""
    ranks: Mapping[str, Any] | None = None
    """The per-rank section (``--world-size``), as given by :mod:`packing_theory.distributed.ranks`."""
    seconds: dict[str, float] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    """How the audit was asked for beyond the packers' settings (permutations and their seed, the
    evaluation's budgets, the drift blocks): part of the report's ``settings`` and of its config hash."""

    kind = "audit"
    title = "Source-inclusion audit"
    file_names = DOCUMENTS_FILES

    def headline(self) -> str:
        """The answer in one sentence (:func:`~packing_theory.orchestration.audit_report.audit_headline`)."""
        from .audit_report import audit_headline

        return audit_headline(self)

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The ``audit.json`` document (:func:`~packing_theory.orchestration.audit_report.audit_document`)."""
        from .audit_report import audit_document

        return audit_document(self, run)

    def sections(self) -> Sequence[Any]:
        """What a person reads, the answer first."""
        from .audit_report import audit_sections

        return audit_sections(self)

    def plots(self) -> Sequence[Any]:
        """The PNG plots (:mod:`~packing_theory.orchestration.audit_plots`)."""
        from .audit_plots import audit_plot_files

        return audit_plot_files(self)

    def attachments(self) -> Sequence[Any]:
        """The per-document table, when asked for."""
        from .audit_report import audit_attachments

        return audit_attachments(self)


def streaming_config(settings: Settings, policy: str, horizon: Budget | None) -> PackerConfig:
    """The streaming loader config of ``policy`` under ``settings``, with ``horizon`` as its row budget."""
    e = entries()[policy]
    knobs = settings.knobs(e)
    rows = horizon.streaming_rows(settings.streaming_capacity) if horizon is not None else None
    return PackerConfig(capacity=settings.streaming_capacity, policy=policy,  # type: ignore[arg-type]
                        rows=rows, **knobs)


def _as_corpus(corpus: Corpus | npt.ArrayLike, label: str) -> Corpus:
    if isinstance(corpus, Corpus):
        return corpus
    return Corpus.from_lengths(
        np.asarray(corpus) if not isinstance(corpus, np.ndarray) else corpus, label=label
    )


def audit_corpus(
    corpus: Corpus | npt.ArrayLike,
    packers: Sequence[str] | None = None,
    settings: Settings | None = None,
    *,
    horizon: Budget | str | None = None,
    permutations: int = 20,
    permutation_seed: int = 0,
    evaluation: EvalStream | None = None,
    documents: bool | str = False,
    mixture_blocks: int | None = None,
    drift_threshold: float | None = None,
    executor: object = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    reference: Mapping[str, Any] | None = None,
    label: str = "",
) -> AuditResult:
    """Audit ``corpus`` under every packer of ``packers`` (see the module doc).

    Args:
        corpus: a :class:`~packing_theory.orchestration.corpus.Corpus` (names, sources, funnel, mixture)
            or BOS-inclusive lengths.
        packers: registered packer names (default ``["discard"]``).
        settings: how every packer is built (:class:`~packing_theory.orchestration.measure.Settings`).
        horizon: a :class:`~packing_theory.engine.horizon.Budget`, ``"common"`` or ``"natural"``
            (default: autoresearch's :data:`AUTORESEARCH_ROWS` rows).
        permutations: startup-delay permutations per streaming policy (0 skips them).
        evaluation: an evaluation stream, audited with each streaming policy.
        documents: keep the per-document tables: ``True`` / ``"documents.csv"`` or
            ``"documents.parquet"`` (the file the report writes).
        mixture_blocks, drift_threshold: the per-source drift's row blocks and flag threshold.
        executor, workers: where the tasks run (:func:`~packing_theory.orchestration.measure.measure`).
        progress: called with the number of tasks done.
        reference: published figures to show beside the audit's.
        label: the corpus's name when ``corpus`` is an array.

    Raises:
        InputError: see :func:`~packing_theory.orchestration.measure.measure`; a bad ``documents`` name.
    """
    t0 = time.perf_counter()
    c = _as_corpus(corpus, label)
    names = list(packers) if packers is not None else ["discard"]
    settings = Settings() if settings is None else settings
    budget: Budget | str = Budget("rows", AUTORESEARCH_ROWS) if horizon is None else horizon
    permutations = check_int("permutations", permutations, 0)
    permutation_seed = check_int("permutation_seed", permutation_seed, 0)
    if documents is True:
        documents = DOCUMENTS_FILES[0]
    if documents and documents not in DOCUMENTS_FILES:
        raise InputError(
            f"documents must be one of {', '.join(DOCUMENTS_FILES)} (or a bool), got {documents!r}"
        )
    plan = _source_plan(c, mixture_blocks, drift_threshold)
    arr = c.lengths
    streaming = [n for n in names if entries().get(n) is not None and entries()[n].kind == "streaming"]
    seconds: dict[str, float] = {}
    with open_runner(executor, workers=workers, retries=0) as runner:
        m = measure(
            arr,
            names,
            settings,
            horizon=budget,
            documents=bool(documents),
            document_identity=c.identity(),
            sources=plan,
            executor=runner,
            progress=progress,
            corpus_label=c.label,
        )
        m = replace(m, corpus=replace(m.corpus, read=c.described))  # how it was read, for the report
        asked = m.horizon if isinstance(budget, Budget) else None
        configs = [streaming_config(settings, n, asked) for n in streaming]
        spreads: list[StartupSpread] = []
        if permutations and configs:
            t = time.perf_counter()
            states = permutation_states(arr.size, permutations, permutation_seed)
            delays: dict[int, list[int | None]] = {}
            runner.run(
                startup_delay_all,
                [(arr, configs, s, settings.engine) for s in states],
                on_result=delays.__setitem__,
                label="startup permutation",
            )
            spreads = [
                StartupSpread(
                    cfg.policy,
                    permutations,
                    permutation_seed,
                    tuple(delays[k][j] for k in range(permutations)),
                )
                for j, cfg in enumerate(configs)
            ]
            seconds["startup"] = time.perf_counter() - t
        evals: list[EvalPopulation] = []
        if evaluation is not None and configs:
            t = time.perf_counter()
            found: dict[int, EvalPopulation] = {}
            runner.run(
                _evaluate,
                [(evaluation, cfg, settings) for cfg in configs],
                on_result=found.__setitem__,
                label="evaluation replay",
            )
            evals = [found[i] for i in range(len(configs))]
            seconds["evaluation"] = time.perf_counter() - t
    for r in m.runs:
        seconds[f"replay:{r.packer}"] = r.seconds
    seconds["total"] = time.perf_counter() - t0
    eval_corpus = (
        corpus_summary(
            evaluation.lengths,
            settings.streaming_capacity,
            label=evaluation.label,
            boundaries=settings.boundaries,
        )
        if evaluation is not None and configs
        else None
    )
    return AuditResult(
        m,
        tuple(spreads),
        tuple(evals),
        eval_corpus,
        None if plan is None else sources_result(plan, m.runs, m.refused),
        documents or None,
        c,
        reference,
        None,
        seconds,
        {"permutations": permutations, "permutation_seed": permutation_seed,
         "evaluation": None if evaluation is None else {"targets": evaluation.targets,
                                                        "prefixes": list(evaluation.prefixes),
                                                        "documents": int(evaluation.lengths.size)},
         "mixture_blocks": mixture_blocks, "drift_threshold": drift_threshold},
    )


def _evaluate(stream: EvalStream, config: PackerConfig, settings: Settings) -> EvalPopulation:
    """One streaming policy's evaluation population (a task)."""
    return evaluation_population(
        stream.lengths,
        config,
        targets=stream.targets,
        prefixes=stream.prefixes,
        boundaries=settings.boundaries,
        engine=settings.engine,
    )


def _source_plan(c: Corpus, blocks: int | None, threshold: float | None) -> SourcePlan | None:
    if c.sources is None:
        if blocks is not None or threshold is not None:
            raise InputError("mixture_blocks and drift_threshold need source labels")
        return None
    labels = c.replayed_sources
    assert labels is not None
    extra: dict[str, Any] = {}
    if blocks is not None:
        extra["blocks"] = blocks
    if threshold is not None:
        extra["threshold"] = threshold
    return SourcePlan(labels, c.raw_lengths, c.sources, c.funnel, c.mixture, **extra)
