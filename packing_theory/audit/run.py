"""The whole audit: one corpus, several policies side by side, startup spreads, evaluation population."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..engine.policies import POLICIES, PackerConfig
from ..engine.replay import Engine
from ..lengths import exact_sum, validate_lengths
from .ledger import audit_lengths
from .population import (
    AUTORESEARCH_EVAL_TARGETS,
    DEFAULT_EVAL_PREFIXES,
    EvalPopulation,
    evaluation_population,
)
from .results import Aggregates
from .startup import StartupSpread, startup_delays
from .strata import STRATA_BOUNDARIES, check_boundaries, stratum_index

__all__ = ["AUTORESEARCH_ROWS", "AuditResult", "CorpusSummary", "corpus_summary", "run_audit"]

AUTORESEARCH_ROWS = 243_968
"""autoresearch's training budget: 953 updates × 256 rows (499,646,464 targets at R = 2049)."""

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
    s = stratum_index(arr, boundaries)
    S = len(boundaries) + 1
    total = exact_sum(arr)
    if total < 2**53:  # float64 weights are exact
        by_stratum = tuple(int(v) for v in np.bincount(s, weights=arr, minlength=S).round())
    else:
        by_stratum = tuple(exact_sum(arr[s == k]) for k in range(S))
    return CorpusSummary(label, int(arr.size), total, int((arr > capacity).sum()), int(arr.max()),
                         tuple(int(v) for v in np.bincount(s, minlength=S)), by_stratum)


@dataclass(frozen=True, slots=True)
class AuditResult:
    """A complete audit: one corpus, several policies side by side, startup spreads, evaluation.

    ``seconds`` holds wall times by stage (``"replay:<policy>"``,
    ``"startup:<policy>"``, ``"evaluation:<policy>"``).
    """

    corpus: CorpusSummary
    config: PackerConfig
    boundaries: tuple[int, ...]
    policies: tuple[Aggregates, ...]
    startup: tuple[StartupSpread, ...]
    evaluation: tuple[EvalPopulation, ...]
    eval_corpus: CorpusSummary | None
    seconds: dict[str, float]

    def policy(self, name: str) -> Aggregates:
        """The aggregates of one policy."""
        for agg in self.policies:
            if agg.policy == name:
                return agg
        raise KeyError(f"policy {name!r} was not audited (audited: {[a.policy for a in self.policies]})")


def run_audit(
    lengths: npt.ArrayLike,
    config: PackerConfig | None = None,
    *,
    policies: Sequence[str] | None = None,
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
) -> AuditResult:
    """Audit ``lengths`` under each policy of ``policies`` with the rest of ``config``.

    Args:
        lengths: BOS-inclusive source lengths (the training corpus).
        config: the loader settings (default :class:`PackerConfig`: R = 2049,
            B = 1000, refill 128, and ``rows`` = :data:`AUTORESEARCH_ROWS` when
            neither ``rows`` nor ``targets`` is set).
        policies: policies compared side by side (default: ``config.policy``).
        permutations: startup-delay permutations per policy (0 to skip).
        eval_lengths: an evaluation stream; when given, its population is
            audited with each policy at ``eval_targets`` and ``eval_prefixes``.
        progress: a factory ``(description, total rows) -> callback(rows)``
            (see :func:`packing_theory.audit.report.progress_bar`).

    Complexity: one replay per policy (O(events)), the permutation prefixes,
    and one evaluation replay per policy.
    """

    arr = validate_lengths(np.asarray(lengths))
    if config is None:
        config = PackerConfig(rows=AUTORESEARCH_ROWS)
    names: list[str] = list(policies) if policies is not None else [config.policy]
    if not names:
        raise ValueError("policies must name at least one policy, got []")
    for name in names:
        if name not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"policies must not repeat, got {names}")
    permutations = check_int("permutations", permutations, 0)
    seconds: dict[str, float] = {}
    aggs: list[Aggregates] = []
    spreads: list[StartupSpread] = []
    evals: list[EvalPopulation] = []
    ev_arr = None if eval_lengths is None else validate_lengths(np.asarray(eval_lengths),
                                                                name="evaluation lengths")
    for name in names:
        cfg = replace(config, policy=name)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        cb = progress(f"audit {name}", cfg.row_budget) if progress is not None else None
        aggs.append(audit_lengths(arr, cfg, engine=engine, progress=cb,
                                  ledger_kwargs={"boundaries": boundaries}))
        if cb is not None and hasattr(cb, "close"):
            cb.close()
        seconds[f"replay:{name}"] = time.perf_counter() - t0
        if permutations:
            t0 = time.perf_counter()
            spreads.append(startup_delays(arr, cfg, permutations=int(permutations), seed=permutation_seed,
                                          engine=engine))
            seconds[f"startup:{name}"] = time.perf_counter() - t0
        if ev_arr is not None:
            t0 = time.perf_counter()
            evals.append(evaluation_population(ev_arr, cfg, targets=eval_targets, prefixes=eval_prefixes,
                                               boundaries=boundaries, engine=engine))
            seconds[f"evaluation:{name}"] = time.perf_counter() - t0
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
    )
