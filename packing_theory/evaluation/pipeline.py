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
from .bootstrap import Contrast, ModelComparison, compare
from .family import SEED_000_FAMILY_STRATA, ContrastFamily, declare_family
from .metrics import WindowScores, score, validate_token_bytes
from .natural import NaturalContextAssay, natural_context_assay
from .population import Population, SupportStatement, support_statement
from .protocol import NllFn
from .ranking import DEFAULT_SUBSETS, PAPER_PREFIXES, RankingCheck, RowStatistics, ranking_check
from .results import CensusSummary, EvaluationSummary, census_summary, summarize_scores
from .windows import WindowSpec

__all__ = ["SEED_000_FAMILY_STRATA", "EvaluationRun", "default_family", "evaluate_models"]

def default_family(population: Population, models: Sequence[str], baseline: str,
                   strata: Sequence[str] = SEED_000_FAMILY_STRATA, kind: str = "tail",
                   minus: str = "beginning") -> ContrastFamily:
    """Every non-baseline model against ``baseline``, a ``kind − minus`` interaction in each of ``strata``.

    The family of ``evaluate`` when no pair is declared
    (:func:`~packing_theory.evaluation.family.declare_family` with the pairs
    ``(model, baseline)``): a stratum with fewer than 2 sources is dropped and
    reported, and the Bonferroni ``m`` stays the declared size.

    >>> import numpy as np
    >>> from packing_theory.evaluation import sample_population
    >>> pop = sample_population([np.zeros(5000, dtype=int) + i for i in range(3)], per_stratum=None,
    ...                         drop_internal_duplicates=False)
    >>> fam = default_family(pop, ["a", "b"], "a")
    >>> [c.name for c in fam.contrasts], fam.size, fam.dropped[0].what
    (['b − a, 4097–8192, tail − beginning'], 2, 'stratum')
    """
    return declare_family(population, [(m, baseline) for m in models if m != baseline], strata, kind, minus)


@dataclass(frozen=True)
class EvaluationRun:
    """Everything one evaluation produced (see :func:`evaluate_models`)."""

    models: tuple[str, ...]
    baseline: str
    population: Population
    spec: WindowSpec
    scores: dict[str, WindowScores]
    summary: EvaluationSummary
    comparison: ModelComparison
    census_population: Population | None
    census: CensusSummary | None
    support: dict[str, SupportStatement]
    model_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    natural: NaturalContextAssay | None = None
    ranking: RankingCheck | None = None

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
    family: Sequence[Contrast] | ContrastFamily | None = None,
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
    natural_contexts: Sequence[int] = (),
    ranking: RowStatistics | None = None,
    ranking_prefixes: Sequence[int] = PAPER_PREFIXES,
    ranking_subsets: int = DEFAULT_SUBSETS,
    ranking_seed: int = 0,
) -> EvaluationRun:
    """Score every model on ``population``'s windows (and a census), tabulate, bootstrap, state support.

    Args:
        population: the sampled sources.
        models: name -> :class:`~packing_theory.evaluation.protocol.NllFn` (two or more).
        token_bytes: byte length of every token id.
        baseline: the reference model.
        spec: window kinds and sizes (default beginning and tail, R = 2049).
        family: the declared contrasts or family (default :func:`default_family`).
        replicates, bootstrap_seed, level: the bootstrap.
        census_population: sources for a whole-source census (none by default).
        census_spec: its windows (default ``WindowSpec(kinds=("census",))``: C = 2048, S = 512).
        training: per model, the :class:`~packing_theory.audit.Aggregates` of the
            run that trained it (for the support statement).
        official: the official evaluation stream's population audit.
        batch_size, check_padding: passed to :func:`~packing_theory.evaluation.metrics.score`.
        progress: called with a short description before each stage.
        natural_contexts: contexts of the natural-context assay with its
            prefix-region control (seed 000 §5.7: 1,024 and 2,048; none by default),
            for the family's pairs, from the population's sources longer than ``2 (R − 1)``.
        ranking: row-level statistics of the checkpoints on a fixed population
            for the prefix ranking check (seed 000 §5.6), with its prefixes,
            subset count and seed.

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
    summary = summarize_scores(population, scores, tb)
    seconds["summary"] = time.perf_counter() - t0
    fam = family if family is not None else default_family(population, list(models), baseline)
    if not isinstance(fam, ContrastFamily):
        fam = tuple(fam)
    say(f"bootstrap: {replicates:,} replicates, family of {len(fam) if isinstance(fam, tuple) else fam.size}")
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
            cscores[name] = score(cwin, fn, tb, model=name, spec=csp, batch_size=batch_size,
                                  position="source")
            seconds[f"census:{name}"] = time.perf_counter() - t0
        census = census_summary(census_population, cscores, tb, baseline=baseline)
    natural: NaturalContextAssay | None = None
    threshold = max(sp.capacity, sp.natural_threshold())
    natural_note = None
    if natural_contexts and not (population.lengths > threshold).any():
        natural_note = (f"natural-context assay skipped: no population source is longer than {threshold} "
                        f"tokens")
        say(natural_note)
    elif natural_contexts:
        say(f"natural-context assay: contexts {', '.join(str(c) for c in natural_contexts)}")
        t0 = time.perf_counter()
        natural = natural_context_assay(population, models, tb, baseline=baseline, pairs=comparison.pairs,
                                        contexts=natural_contexts, targets=sp.natural_targets,
                                        capacity=sp.capacity, natural_above=sp.natural_above,
                                        replicates=replicates, seed=bootstrap_seed, batch_size=batch_size)
        seconds["natural"] = time.perf_counter() - t0
    rank_check = None
    if ranking is not None:
        say(f"ranking check: {ranking.n_rows:,} rows, {ranking_subsets:,} subsets per prefix")
        t0 = time.perf_counter()
        rank_base = baseline if baseline in ranking.models else ranking.models[0]
        rank_check = ranking_check(ranking, baseline=rank_base, prefixes=ranking_prefixes,
                                   subsets=ranking_subsets, seed=ranking_seed)
        seconds["ranking"] = time.perf_counter() - t0
    support = {name: support_statement(population, training=(training or {}).get(name), official=official)
               for name in models}
    return EvaluationRun(
        models=tuple(models), baseline=baseline, population=population, spec=sp, scores=scores,
        summary=summary, comparison=comparison, census_population=census_population, census=census,
        support=support, settings={"replicates": int(replicates), "bootstrap_seed": int(bootstrap_seed),
                                   "level": float(level), "batch_size": int(batch_size),
                                   "token_bytes": int(tb.size),
                                   "token_bytes_positive": int(np.count_nonzero(tb)),
                                   "natural_contexts": [int(c) for c in natural_contexts],
                                   "natural_note": natural_note,
                                   "family": comparison.describe_family()},
        seconds=seconds, natural=natural, ranking=rank_check,
    )
