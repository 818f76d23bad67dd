"""Paired-source bootstrap within strata, Bonferroni-adjusted percentile intervals (seed 000 §4, §5.5).

Job: compare models scored on the *same* windows — BPB deltas against a
baseline and interaction contrasts (one kind's delta minus another's, e.g.
tail minus beginning) — with seeded paired-source bootstrap intervals, and
say in words what those intervals are about. Imports: numpy and this
package's metrics, population and windows modules.

Method
------
For a stratum with ``n`` sources, one replicate draws ``n`` source indices
uniformly with replacement (``numpy.random.default_rng([seed, k])`` for
stratum ``k``, ``Generator.integers`` in blocks of replicates). A drawn
source brings *all* its windows and *every* model's scores of them, so
models and window kinds stay paired. Each statistic is a ratio of resampled
sums (``sum NLL / (ln 2 × sum bytes)``), never a mean of per-source ratios.
A declared *family* of ``m`` contrasts gets two-sided percentile intervals at
the Bonferroni-adjusted quantiles ``α/(2m)`` and ``1 − α/(2m)`` (``numpy.quantile``,
linear interpolation); with ``level = 0.95`` and ``m = 8`` they are seed 000's
99.375 % intervals. Every other cell is reported with a nominal, unadjusted
interval and flagged exploratory.

A contrast of a window kind needs every source of its stratum to supply that
kind (paired conditions); census windows get no interval at all (use
:func:`packing_theory.evaluation.results.census_summary`). The family is a
plain sequence of contrasts (an uncomputable one is an error) or a declared
:class:`~packing_theory.evaluation.family.ContrastFamily` (an uncomputable
one is dropped, and reported with its reason; ``m`` stays the declared size).
Exploratory cells follow the family's ``(model, baseline)`` pairs, or compare
every model with the comparison's baseline when no pair is declared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError
from .family import (
    Contrast,
    ContrastFamily,
    Dropped,
    bonferroni_quantiles,
    contrast_value,
    interaction_family,
)
from .metrics import LN2, Float64Array, WindowScores
from .population import Population
from .windows import KINDS

__all__ = [
    "BOOTSTRAP_TARGET",
    "Contrast",
    "ContrastFamily",
    "ContrastResult",
    "Dropped",
    "Interval",
    "ModelComparison",
    "bonferroni_quantiles",
    "compare",
    "interaction_family",
    "percentile_interval",
    "source_sums",
]

BOOTSTRAP_TARGET = (
    "What these intervals are about: the trained checkpoints are held fixed, and whole sources are redrawn "
    "with replacement inside each length stratum, each redrawn source carrying all of its windows and every "
    "model's scores of them. An interval therefore describes how the contrast would move under another draw "
    "of sources exchangeable with the ones scored in that stratum, as if they came from a larger population "
    "than the finite set at hand. It is not a statement about the finite set itself: no finite-population "
    "correction is made, and in a stratum where every eligible source was scored the point value is already "
    "that set's exact contrast. Nor is it a statement about training: a different seed, data order or "
    "initialisation could move the checkpoints by more than these intervals show. Percentile intervals are "
    "approximate, and Bonferroni-adjusted quantiles keep the family's error rate near, not exactly at, the "
    "nominal level. Conditional window samples oversample long sources; they are not pooled into a "
    "corpus-weighted score."
)
"""The inferential target of every bootstrap result, in words (seed 000 §4, "Uncertainty target")."""

_BLOCK_ELEMENTS = 1 << 21  # replicate rows per block ~ this / (sources * columns)


def percentile_interval(replicates: npt.ArrayLike, level: float = 0.95,
                        family_size: int = 1) -> tuple[float, float]:
    """The percentile interval of bootstrap ``replicates`` at Bonferroni-adjusted quantiles.

    >>> percentile_interval(np.arange(101.0), 0.9)
    (5.0, 95.0)
    """
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim != 1 or r.size == 0:
        raise InputError(f"replicates must be a non-empty 1-D array, got shape {r.shape}")
    if not np.isfinite(r).all():
        raise InputError("replicates hold a non-finite value (a resample without bytes?)")
    q_lo, q_hi, _ = bonferroni_quantiles(level, family_size)
    lo, hi = np.quantile(r, [q_lo, q_hi])
    return float(lo), float(hi)


@dataclass(frozen=True, slots=True)
class Interval:
    """A two-sided percentile interval with its nominal per-contrast coverage."""

    lo: float
    hi: float
    level: float

    @property
    def excludes_zero(self) -> bool:
        """Whether 0 lies outside ``[lo, hi]``."""
        return self.lo > 0 or self.hi < 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"lo": self.lo, "hi": self.hi, "level": self.level, "excludes_zero": self.excludes_zero}


@dataclass(frozen=True, slots=True)
class ContrastResult:
    """A contrast's point value, its parts and its bootstrap interval.

    ``parts`` are the model's and the baseline's BPB for a delta, or the two
    deltas (``kind``, ``minus``) for an interaction. ``family`` is true for a
    member of the declared family (Bonferroni-adjusted interval), false for an
    exploratory cell (nominal interval). ``census_stratum``: every eligible
    source of the stratum was scored, so ``estimate`` is that finite set's
    exact contrast and the interval targets the wider population only.
    """

    contrast: Contrast
    baseline: str
    sources: int
    estimate: float
    parts: tuple[float, float]
    interval: Interval
    family: bool
    census_stratum: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**self.contrast.to_dict(), "baseline": self.baseline, "sources": self.sources,
                "estimate": self.estimate, "parts": list(self.parts), "interval": self.interval.to_dict(),
                "family": self.family, "census_stratum": self.census_stratum}


@dataclass(frozen=True)
class ModelComparison:
    """Bootstrap comparison of several models against a baseline (see the module doc).

    Attributes:
        models: compared models (baseline included).
        baseline: the reference model.
        level: nominal familywise level (0.95).
        family_size: ``m``, contrasts in the declared family.
        adjusted_level: per-contrast coverage of family intervals, ``1 − (1 − level)/m``.
        replicates: bootstrap replicates ``B``.
        seed: bootstrap seed.
        family: results of the declared contrasts, in declaration order.
        exploratory: every other delta and interaction with a nominal interval.
        fingerprint: the common input fingerprint of all models' scores.
        statement: the inferential target in words (:data:`BOOTSTRAP_TARGET`).
        dropped: declared strata and contrasts that could not be computed, with reasons.
        pairs: the ``(model, baseline)`` pairs of the exploratory cells.
    """

    models: tuple[str, ...]
    baseline: str
    level: float
    family_size: int
    adjusted_level: float
    replicates: int
    seed: int
    family: tuple[ContrastResult, ...]
    exploratory: tuple[ContrastResult, ...]
    fingerprint: dict[str, Any]
    statement: str = BOOTSTRAP_TARGET
    dropped: tuple[Dropped, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()

    def describe_family(self) -> str:
        """One line: the declared family's size, the family level and the per-contrast level.

        The line the ``evaluate`` command prints, e.g. "declared family of 8
        contrasts at family level 0.95: Bonferroni-adjusted 99.375% intervals".
        """
        if not self.family_size:
            return "no contrast was declared"
        n = self.family_size
        text = (f"declared family of {n} contrast{'s' if n != 1 else ''} at family level {self.level:g}: "
                f"Bonferroni-adjusted {100 * self.adjusted_level:.3f}% intervals")
        lost = n - len(self.family)
        if lost:
            text += f" ({lost} of them dropped, each reported with its reason)"
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"models": list(self.models), "baseline": self.baseline, "level": self.level,
                "family_size": self.family_size, "adjusted_level": self.adjusted_level,
                "replicates": self.replicates, "seed": self.seed,
                "family": [c.to_dict() for c in self.family],
                "exploratory": [c.to_dict() for c in self.exploratory],
                "fingerprint": self.fingerprint, "statement": self.statement,
                "describe_family": self.describe_family(), "dropped": [d.to_dict() for d in self.dropped],
                "pairs": [list(p) for p in self.pairs]}


def source_sums(scores: WindowScores, n_sources: int,
                kind: str) -> tuple[Float64Array, npt.NDArray[np.int64]]:
    """Per-source summed NLL and bytes of the ``kind`` windows (zeros for sources without one)."""
    m = scores.mask(kind)
    src = scores.sources[m]
    if src.size and (src.min() < 0 or src.max() >= n_sources):
        raise InputError(f"scores of {scores.model!r} name source {int(src.max())} outside the "
                         f"{n_sources}-source population")
    nll = np.bincount(src, weights=scores.window_nll()[m], minlength=n_sources).astype(np.float64)
    nbytes = np.zeros(n_sources, dtype=np.int64)
    np.add.at(nbytes, src, scores.window_bytes()[m])
    return nll, nbytes


def _check_scores(population: Population, scores: Mapping[str, WindowScores], baseline: str) -> list[str]:
    if not isinstance(scores, Mapping) or len(scores) < 2:
        raise InputError("scores must map at least two model names to WindowScores")
    names = list(scores)
    if baseline not in scores:
        raise InputError(f"baseline {baseline!r} is not among the scored models {names}")
    ref = scores[baseline]
    for name, s in scores.items():
        if not isinstance(s, WindowScores):
            raise InputTypeError(f"scores[{name!r}] must be WindowScores, got {type(s).__name__}")
        if not s.same_inputs(ref):
            raise InputError(f"scores[{name!r}] did not score the same windows as the baseline {baseline!r} "
                             f"(input fingerprints or bins differ): paired comparison is impossible")
    if ref.n_windows and int(ref.sources.max()) >= population.n_sources:
        raise InputError(f"the scores name source {int(ref.sources.max())} but the population has "
                         f"{population.n_sources} sources")
    return names


def compare(
    population: Population,
    scores: Mapping[str, WindowScores],
    *,
    baseline: str,
    family: Sequence[Contrast] | ContrastFamily = (),
    replicates: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    exploratory: bool = True,
) -> ModelComparison:
    """Paired-source bootstrap comparison of ``scores`` (model name -> scores of the same windows).

    Args:
        population: the population the windows were cut from (its strata).
        scores: at least two models' :class:`WindowScores` with equal fingerprints.
        baseline: the reference model of every contrast without its own baseline.
        family: the declared contrasts (Bonferroni over ``len(family)``), or a
            :class:`~packing_theory.evaluation.family.ContrastFamily` (over its
            declared size; uncomputable contrasts dropped with a reason).
        replicates: ``B``.
        seed: bootstrap seed (stream ``[seed, k]`` for stratum ``k``).
        level: nominal familywise coverage.
        exploratory: also report every other delta and interaction (nominal intervals).

    Complexity: O(B × sources × columns) per stratum, in blocks of about
    2 M elements.

    Raises:
        ValueError: fewer than two models, an unknown baseline/model/stratum,
            different fingerprints; for a plain sequence also a contrast whose
            stratum has fewer than two sources or a source without the needed windows.
    """
    names = _check_scores(population, scores, baseline)
    B = check_int("replicates", replicates, 1)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be an int >= 0, got {seed!r}")
    strict = not isinstance(family, ContrastFamily)
    decl = family if isinstance(family, ContrastFamily) else ContrastFamily(tuple(family))
    bonferroni_quantiles(level, 1)
    for c in decl.contrasts:
        for who in (c.model, c.baseline or baseline):
            if who not in scores:
                raise InputError(f"contrast {c.name!r} names model {who!r}, not among {names}")
        if c.model == (c.baseline or baseline):
            raise InputError(f"contrast {c.name!r} compares {c.model!r} with itself")
        population.stratum_of(c.stratum)
    pairs = decl.pairs or tuple((m, baseline) for m in names if m != baseline)
    for a, b in pairs:
        for who in (a, b):
            if who not in scores:
                raise InputError(f"pair {a}:{b} names model {who!r}, not among {names}")
    n = population.n_sources
    kinds = [k for k in KINDS if k != "census" and any(kk == k for kk in scores[baseline].kinds)]
    sums = {(m, k): source_sums(scores[m], n, k) for m in names for k in kinds}
    results_f: dict[Contrast, ContrastResult] = {}
    results_x: list[ContrastResult] = []
    census = set(population.census_strata)
    for s, label in enumerate(population.labels):
        idx = np.flatnonzero(population.strata == s)
        paired = [k for k in kinds if idx.size and (sums[(baseline, k)][1][idx] > 0).all()]
        for c in [c for c in decl.contrasts if c.stratum == label]:
            why = _uncomputable(c, label, int(idx.size), paired)
            if why is not None:
                if strict:
                    raise InputError(f"contrast {c.name!r}: {why}")
                decl = decl.drop(c, why)
        wanted = [c for c in decl.contrasts if c.stratum == label]
        explo: list[Contrast] = []
        if exploratory and idx.size >= 2:
            declared = {(c.model, c.baseline or baseline, c.kind, c.minus) for c in wanted}
            explo = [Contrast(m, label, k, mi, None if b == baseline else b)
                     for m, b in pairs for k, mi in _cells(paired)
                     if (m, b, k, mi) not in declared]
        if not wanted and not explo:
            continue
        totals = _StratumTotals(sums, idx, names, paired, baseline, B, int(seed), s)
        for c in wanted:
            results_f[c] = totals.result(c, c.baseline or baseline, level, max(1, decl.size), label in census)
        results_x.extend(totals.result(c, c.baseline or baseline, level, 1, label in census, family=False)
                         for c in explo)
    m = decl.size
    return ModelComparison(
        models=tuple(names), baseline=baseline, level=float(level), family_size=m,
        adjusted_level=bonferroni_quantiles(level, m)[2] if m else float(level), replicates=B,
        seed=int(seed), family=tuple(results_f[c] for c in decl.contrasts), exploratory=tuple(results_x),
        fingerprint=scores[baseline].fingerprint.to_dict(), dropped=decl.dropped, pairs=pairs,
    )


def _uncomputable(c: Contrast, label: str, n: int, paired: Sequence[str]) -> str | None:
    """Why ``c`` has no bootstrap interval in its stratum, or ``None``."""
    if n < 2:
        return f"stratum {label} has {n} source(s); a bootstrap interval needs at least 2"
    for k in (c.kind, c.minus):
        if k is not None and k not in paired:
            return (f"not every source of stratum {label} has {k} windows with bytes (a paired contrast "
                    f"needs all of them)")
    return None


_INTERACTIONS = (("tail", "beginning"), ("natural-tail", "beginning"), ("natural-tail", "prefix-region"))
"""Exploratory interactions ``kind − minus`` reported whenever both kinds are paired in a stratum."""


def _cells(paired: Sequence[str]) -> list[tuple[str, str | None]]:
    """The exploratory cells of a stratum: each paired kind's delta, then the paired interactions."""
    cells: list[tuple[str, str | None]] = [(k, None) for k in paired]
    return cells + [(k, mi) for k, mi in _INTERACTIONS if k in paired and mi in paired]


class _StratumTotals:
    """Point and resampled column sums of one stratum: NLL per (model, kind), bytes per kind."""

    def __init__(self, sums: Mapping[tuple[str, str], tuple[Float64Array, npt.NDArray[np.int64]]],
                 idx: npt.NDArray[np.intp], names: Sequence[str], kinds: Sequence[str], baseline: str,
                 replicates: int, seed: int, stratum: int) -> None:
        cols = [(m, k) for m in names for k in kinds]
        V = np.empty((idx.size, len(cols) + len(kinds)), dtype=np.float64)
        for j, key in enumerate(cols):
            V[:, j] = sums[key][0][idx]
        for j, k in enumerate(kinds):
            V[:, len(cols) + j] = sums[(baseline, k)][1][idx]
        self.col = {key: j for j, key in enumerate(cols)}
        self.bcol = {k: len(cols) + j for j, k in enumerate(kinds)}
        self.point = V.sum(axis=0)[None, :]
        self.reps = _resample(V, replicates, seed, stratum)
        self.sources = int(idx.size)

    def _bpb(self, tot: Float64Array, m: str, k: str) -> Float64Array:
        out: Float64Array = tot[:, self.col[(m, k)]] / (LN2 * tot[:, self.bcol[k]])
        return out

    def _stat(self, tot: Float64Array, c: Contrast,
              base: str) -> tuple[Float64Array, Float64Array, Float64Array]:
        return contrast_value(lambda m, k: self._bpb(tot, m, k), c.model, base, c.kind, c.minus)

    def result(self, c: Contrast, base: str, level: float, m: int, census: bool, *,
               family: bool = True) -> ContrastResult:
        est, p1, p2 = self._stat(self.point, c, base)
        rep, _, _ = self._stat(self.reps, c, base)
        lo, hi = percentile_interval(rep, level, m)
        _, _, cov = bonferroni_quantiles(level, m)
        return ContrastResult(c, base, self.sources, float(est[0]), (float(p1[0]), float(p2[0])),
                              Interval(lo, hi, cov), family, census)


def _resample(V: Float64Array, B: int, seed: int, stratum: int) -> Float64Array:
    """``B`` resampled column sums of ``V`` (rows = sources), deterministic for ``(seed, stratum)``."""
    n, c = V.shape
    rng = np.random.default_rng([seed, stratum])
    block = max(1, _BLOCK_ELEMENTS // max(1, n * c))
    out = np.empty((B, c), dtype=np.float64)
    for b0 in range(0, B, block):
        b1 = min(B, b0 + block)
        draw = rng.integers(0, n, size=(b1 - b0, n))
        out[b0:b1] = V[draw].sum(axis=1)
    return out
