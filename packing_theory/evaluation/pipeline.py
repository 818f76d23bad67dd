"""The whole protocol in one call: windows, scores, tables, bootstrap, census, support statements.

Job: run seed 000's evaluation protocol for two or more models on one
population and collect everything a report needs (:class:`EvaluationRun`).
Imports: the audit layer's result types and this package's modules.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit import Aggregates, EvalPopulation
from ..errors import InputError
from .bootstrap import Comparison, Contrast, compare, interaction_family
from .metrics import WindowScores, score, validate_token_bytes
from .population import Population, SupportStatement, support_statement
from .protocol import NllFn
from .results import CensusSummary, EvaluationSummary, census_summary, summarize
from .windows import WindowSpec

__all__ = ["SEED_000_FAMILY_STRATA", "EvaluationRun", "default_family", "evaluate_models"]

SEED_000_FAMILY_STRATA: tuple[str, ...] = ("4097–8192", "8193–16384")
"""The strata of seed 000 §5.5's declared confirmation family (tail minus prefix per intervention)."""


def default_family(population: Population, models: Sequence[str], baseline: str,
                   strata: Sequence[str] = SEED_000_FAMILY_STRATA, kind: str = "tail",
                   minus: str = "beginning") -> tuple[Contrast, ...]:
    """One ``kind − minus`` interaction per non-baseline model in each of ``strata`` with 2+ sources.

    >>> import numpy as np
    >>> from packing_theory.evaluation import sample_population
    >>> pop = sample_population([np.zeros(5000, dtype=int) + i for i in range(3)], per_stratum=None,
    ...                         drop_internal_duplicates=False)
    >>> [c.name for c in default_family(pop, ["a", "b"], "a")]
    ['b − baseline, 4097–8192, tail − beginning']
    """
    present = [s for s in strata
               if s in population.labels and population.sampled[population.stratum_of(s)] >= 2]
    return interaction_family([m for m in models if m != baseline], present, kind, minus)


@dataclass(frozen=True)
class EvaluationRun:
    """Everything one evaluation produced (see :func:`evaluate_models`)."""

    models: tuple[str, ...]
    baseline: str
    population: Population
    spec: WindowSpec
    scores: dict[str, WindowScores]
    summary: EvaluationSummary
    comparison: Comparison
    census_population: Population | None
    census: CensusSummary | None
    support: dict[str, SupportStatement]
    model_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def accounting_ok(self) -> bool:
        """Every accounting check of the windows and of the census reconciles exactly."""
        acc = list(self.summary.accounting) + (list(self.census.accounting) if self.census else [])
        return all(a.ok for a in acc)


def evaluate_models(
    population: Population,
    models: Mapping[str, NllFn | Callable[..., Any]],
    token_bytes: npt.ArrayLike,
    *,
    baseline: str,
    spec: WindowSpec | None = None,
    family: Sequence[Contrast] | None = None,
    replicates: int = 10_000,
    bootstrap_seed: int = 0,
    level: float = 0.95,
    census_population: Population | None = None,
    census_spec: WindowSpec | None = None,
    training: Mapping[str, Aggregates] | None = None,
    official: EvalPopulation | None = None,
    batch_size: int = 16,
    check_padding: bool = True,
    progress: Callable[[str], None] | None = None,
) -> EvaluationRun:
    """Score every model on ``population``'s windows (and a census), tabulate, bootstrap, state support.

    Args:
        population: the sampled sources.
        models: name -> :class:`~packing_theory.evaluation.protocol.NllFn` (two or more).
        token_bytes: byte length of every token id.
        baseline: the reference model.
        spec: window kinds and sizes (default beginning and tail, R = 2049).
        family: the declared contrasts (default :func:`default_family`).
        replicates, bootstrap_seed, level: the bootstrap.
        census_population: sources for a whole-source census (none by default).
        census_spec: its windows (default ``WindowSpec(kinds=("census",))``: C = 2048, S = 512).
        training: per model, the :class:`~packing_theory.audit.Aggregates` of the
            run that trained it (for the support statement).
        official: the official evaluation stream's population audit.
        batch_size, check_padding: passed to :func:`~packing_theory.evaluation.metrics.score`.
        progress: called with a short description before each stage.

    Raises:
        ValueError: fewer than two models, an unknown baseline, or any error of the stages.
    """
    if len(models) < 2:
        raise InputError(f"evaluate_models needs at least two models, got {list(models)}")
    if baseline not in models:
        raise InputError(f"baseline {baseline!r} is not among the models {list(models)}")
    tb = validate_token_bytes(token_bytes)
    sp = spec if spec is not None else WindowSpec()
    say = progress or (lambda _msg: None)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    windows = population.windows(sp)
    if not windows:
        raise InputError("the population yields no window (every source has a single token)")
    seconds["windows"] = time.perf_counter() - t0
    scores: dict[str, WindowScores] = {}
    for name, fn in models.items():
        say(f"scoring {name} on {len(windows):,} windows")
        t0 = time.perf_counter()
        scores[name] = score(windows, fn, tb, model=name, spec=sp, batch_size=batch_size,
                             check_padding=check_padding)
        seconds[f"score:{name}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = summarize(population, scores, tb)
    seconds["summary"] = time.perf_counter() - t0
    fam = tuple(family) if family is not None else default_family(population, list(models), baseline)
    say(f"bootstrap: {replicates:,} replicates, family of {len(fam)}")
    t0 = time.perf_counter()
    comparison = compare(population, scores, baseline=baseline, family=fam, replicates=replicates,
                         seed=bootstrap_seed, level=level)
    seconds["bootstrap"] = time.perf_counter() - t0
    census: CensusSummary | None = None
    if census_population is not None:
        csp = census_spec if census_spec is not None else WindowSpec(kinds=("census",))
        if csp.kinds != ("census",):
            raise InputError(f"census_spec must have kinds=('census',), got {csp.kinds}")
        cwin = census_population.windows(csp)
        cscores: dict[str, WindowScores] = {}
        for name, fn in models.items():
            say(f"census: scoring {name} on {len(cwin):,} windows")
            t0 = time.perf_counter()
            cscores[name] = score(cwin, fn, tb, model=name, spec=csp, batch_size=batch_size)
            seconds[f"census:{name}"] = time.perf_counter() - t0
        census = census_summary(census_population, cscores, tb, baseline=baseline)
    support = {name: support_statement(population, training=(training or {}).get(name), official=official)
               for name in models}
    return EvaluationRun(
        models=tuple(models), baseline=baseline, population=population, spec=sp, scores=scores,
        summary=summary, comparison=comparison, census_population=census_population, census=census,
        support=support, settings={"replicates": int(replicates), "bootstrap_seed": int(bootstrap_seed),
                                   "level": float(level), "batch_size": int(batch_size),
                                   "token_bytes": int(tb.size),
                                   "token_bytes_positive": int(np.count_nonzero(tb))},
        seconds=seconds,
    )
