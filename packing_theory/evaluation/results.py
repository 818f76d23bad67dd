"""Tables by model, window kind and stratum; accounting checks; the whole-source census (seed 000 §5.5, §5.8).

Job: pool :class:`~packing_theory.evaluation.metrics.WindowScores` into
per-stratum metrics, reconcile sources, targets and bytes *exactly* against
the population's own token ids, and report census results as point values
whose stratum contributions add up to each aggregate and each contrast.
Imports: numpy and this package's metrics, population and windows modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._unique import distinct
from ..errors import InputError, InputTypeError
from .metrics import LN2, Metrics, WindowScores, bin_labels, validate_token_bytes
from .population import Population
from .windows import KINDS, WindowSpec, scored_range

__all__ = [
    "CENSUS_TARGET",
    "WINDOW_TARGET",
    "Accounting",
    "Cell",
    "CensusContrast",
    "CensusModel",
    "CensusSummary",
    "EvaluationSummary",
    "account",
    "census_summary",
    "summarize_scores",
]

WINDOW_TARGET = (
    "Point values for the scored windows of this population under these checkpoints. The conditional "
    "window sample oversamples long sources on purpose; values pooled across strata are therefore not a "
    "corpus-weighted score and are shown for bookkeeping only."
)
"""What the per-stratum tables are, in words."""

CENSUS_TARGET = (
    "Census: every target of every retained source is scored exactly once, so these are the exact values "
    "for this finite set of sources under these checkpoints. Nothing was sampled, so no sampling interval "
    "is attached. Differences between checkpoints still include whatever a different training run would "
    "have changed, which one evaluation cannot measure."
)
"""What census results are, in words (seed 000 §4: census results carry no sampling interval)."""


@dataclass(frozen=True, slots=True)
class Cell:
    """Pooled metrics of one model on one window kind in one stratum (``stratum="all"``: pooled)."""

    model: str
    kind: str
    stratum: str
    metrics: Metrics

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"model": self.model, "kind": self.kind, "stratum": self.stratum, **self.metrics.to_dict()}


@dataclass(frozen=True, slots=True)
class Accounting:
    """Expected vs observed sources, targets and bytes of one window kind.

    Expected values come from the population's token ids and the window
    definitions (:func:`~packing_theory.evaluation.windows.scored_range`);
    observed values from the scores. ``positions_ok``: every source's scored
    positions are exactly its expected range (census: tiled once, no gap).
    """

    model: str
    kind: str
    sources_expected: int
    sources_observed: int
    targets_expected: int
    targets_observed: int
    bytes_expected: int
    bytes_observed: int
    positions_ok: bool
    first_problem: str | None = None

    @property
    def ok(self) -> bool:
        """Every count reconciles exactly."""
        return (self.positions_ok and self.sources_expected == self.sources_observed
                and self.targets_expected == self.targets_observed
                and self.bytes_expected == self.bytes_observed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"model": self.model, "kind": self.kind, "sources_expected": self.sources_expected,
                "sources_observed": self.sources_observed, "targets_expected": self.targets_expected,
                "targets_observed": self.targets_observed, "bytes_expected": self.bytes_expected,
                "bytes_observed": self.bytes_observed, "positions_ok": self.positions_ok, "ok": self.ok,
                "first_problem": self.first_problem}


def account(population: Population, scores: WindowScores, token_bytes: npt.ArrayLike,
            spec: WindowSpec | None = None) -> tuple[Accounting, ...]:
    """Reconcile ``scores`` with the population, one :class:`Accounting` per kind of ``spec``.

    ``spec`` defaults to the one the scores carry. O(tokens of the population).

    Raises:
        ValueError: no spec known, or a population token outside ``token_bytes``.
    """
    sp = spec if spec is not None else scores.spec
    if sp is None:
        raise InputError("the scores carry no WindowSpec: pass spec= (the one the windows were cut with)")
    tb = validate_token_bytes(token_bytes)
    cum: list[npt.NDArray[np.int64]] = []
    for i, d in enumerate(population.documents):
        if d.size and int(d.max()) >= tb.size:
            raise InputError(f"population source {i} holds token id {int(d.max())} outside token_bytes "
                             f"(size {tb.size})")
        cum.append(np.concatenate([[0], np.cumsum(tb[d])]).astype(np.int64))
    out: list[Accounting] = []
    win_bytes = scores.window_bytes()
    win_targets = scores.targets.sum(axis=1)
    for kind in sp.kinds:
        m = scores.mask(kind)
        src, starts, ntg = scores.sources[m], scores.starts[m], win_targets[m]
        exp_sources = exp_targets = exp_bytes = 0
        problem: str | None = None
        by_source: dict[int, list[tuple[int, int]]] = {}
        for s, a, t in zip(src.tolist(), starts.tolist(), ntg.tolist(), strict=True):
            by_source.setdefault(s, []).append((a, a + t))
        for s, L in enumerate(population.lengths.tolist()):
            r = scored_range(L, kind, sp)
            got = sorted(by_source.pop(s, []))
            if r is None:
                if got and problem is None:
                    problem = f"source {s} (L={L}) has {kind} windows but should have none"
                continue
            exp_sources += 1
            exp_targets += len(r)
            exp_bytes += int(cum[s][r.stop] - cum[s][r.start])
            nxt = r.start
            for a, b in got:
                if a != nxt:
                    break
                nxt = b
            else:
                if nxt == r.stop and got:
                    continue
            if problem is None:
                problem = (f"source {s} (L={L}): {kind} windows score {got}, "
                           f"expected positions {r.start}..{r.stop - 1}")
        if by_source and problem is None:
            problem = f"{kind} windows name sources outside the population: {sorted(by_source)[:5]}"
        out.append(Accounting(scores.model, kind, exp_sources, int(distinct(src).size), exp_targets,
                              int(ntg.sum()), exp_bytes, int(win_bytes[m].sum()), problem is None, problem))
    return tuple(out)


def _check_same(scores: Mapping[str, WindowScores]) -> list[str]:
    if not isinstance(scores, Mapping) or not scores:
        raise InputError("scores must map at least one model name to WindowScores")
    names = list(scores)
    ref = scores[names[0]]
    for name, s in scores.items():
        if not isinstance(s, WindowScores):
            raise InputTypeError(f"scores[{name!r}] must be WindowScores, got {type(s).__name__}")
        if not s.same_inputs(ref):
            raise InputError(f"scores[{name!r}] did not score the same windows as {names[0]!r} "
                             f"(input fingerprints or bins differ)")
    return names


@dataclass(frozen=True)
class EvaluationSummary:
    """Per-model, per-kind, per-stratum metrics with exact accounting.

    Attributes:
        models: model names.
        kinds: window kinds present.
        labels: stratum labels.
        bins: position-bin labels.
        cells: one :class:`Cell` per (model, kind, non-empty stratum).
        pooled: one per (model, kind) over all strata (bookkeeping; not corpus-weighted).
        accounting: one :class:`Accounting` per (model, kind).
        population: the population summary.
        fingerprint: the common input fingerprint.
        statement: :data:`WINDOW_TARGET`.
    """

    models: tuple[str, ...]
    kinds: tuple[str, ...]
    labels: tuple[str, ...]
    bins: tuple[str, ...]
    cells: tuple[Cell, ...]
    pooled: tuple[Cell, ...]
    accounting: tuple[Accounting, ...]
    population: dict[str, Any]
    fingerprint: dict[str, Any]
    statement: str = WINDOW_TARGET

    def cell(self, model: str, kind: str, stratum: str) -> Metrics:
        """The metrics of one cell."""
        for c in (*self.cells, *self.pooled):
            if (c.model, c.kind, c.stratum) == (model, kind, stratum):
                return c.metrics
        raise KeyError(f"no cell ({model!r}, {kind!r}, {stratum!r})")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"models": list(self.models), "kinds": list(self.kinds), "labels": list(self.labels),
                "bins": list(self.bins), "cells": [c.to_dict() for c in self.cells],
                "pooled": [c.to_dict() for c in self.pooled],
                "accounting": [a.to_dict() for a in self.accounting], "population": self.population,
                "fingerprint": self.fingerprint, "statement": self.statement}


def summarize_scores(population: Population, scores: Mapping[str, WindowScores],
              token_bytes: npt.ArrayLike) -> EvaluationSummary:
    """Metrics by model, window kind and stratum, after exact accounting.

    Raises:
        ValueError: models that scored different windows, or an accounting
            mismatch (sources, targets, bytes or positions), naming the first problem.
    """
    names = _check_same(scores)
    ref = scores[names[0]]
    acc: list[Accounting] = []
    for name in names:
        acc.extend(account(population, scores[name], token_bytes))
    bad = [a for a in acc if not a.ok]
    if bad:
        a = bad[0]
        raise InputError(f"accounting fails for {a.model!r} {a.kind} windows: sources {a.sources_observed}/"
                         f"{a.sources_expected}, targets {a.targets_observed}/{a.targets_expected}, bytes "
                         f"{a.bytes_observed}/{a.bytes_expected}; {a.first_problem}")
    kinds = tuple(k for k in KINDS if k in set(ref.kinds))
    strata_of_window = population.strata[ref.sources]
    cells: list[Cell] = []
    pooled: list[Cell] = []
    for name in names:
        s = scores[name]
        for kind in kinds:
            km = s.mask(kind)
            for k, label in enumerate(population.labels):
                m = km & (strata_of_window == k)
                if m.any():
                    cells.append(Cell(name, kind, label, s.metrics(m)))
            pooled.append(Cell(name, kind, "all", s.metrics(km)))
    return EvaluationSummary(models=tuple(names), kinds=kinds, labels=population.labels,
                             bins=tuple(bin_labels(ref.bin_edges)), cells=tuple(cells), pooled=tuple(pooled),
                             accounting=tuple(acc), population=population.to_dict(),
                             fingerprint=ref.fingerprint.to_dict())


# --------------------------------------------------------------------------- census


@dataclass(frozen=True, slots=True)
class CensusModel:
    """One model's census: the aggregate and each stratum's share of it.

    ``stratum_contributions[s]`` = stratum ``s``'s NLL / (ln 2 × all census
    bytes): they add up to ``aggregate.bpb``.
    """

    model: str
    aggregate: Metrics
    strata: tuple[Metrics | None, ...]
    stratum_contributions: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"model": self.model, "aggregate": self.aggregate.to_dict(),
                "strata": [None if m is None else m.to_dict() for m in self.strata],
                "stratum_contributions": list(self.stratum_contributions)}


@dataclass(frozen=True, slots=True)
class CensusContrast:
    """``model`` minus ``baseline`` whole-source BPB and each stratum's and region's share (no interval).

    ``bin_contributions`` are the *regions* of seed 000 §5.8: the position bins
    of each target's position in its source (``score(..., position="source")``),
    each bin's NLL difference over ln 2 × all census bytes; they add up to
    ``delta_bpb``, as the stratum contributions do.
    """

    model: str
    baseline: str
    delta_bpb: float
    stratum_contributions: tuple[float, ...]
    bin_contributions: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"model": self.model, "baseline": self.baseline, "delta_bpb": self.delta_bpb,
                "stratum_contributions": list(self.stratum_contributions),
                "bin_contributions": list(self.bin_contributions), "interval": None}


@dataclass(frozen=True)
class CensusSummary:
    """Whole-source census results: point values only (:data:`CENSUS_TARGET`)."""

    labels: tuple[str, ...]
    bins: tuple[str, ...]
    baseline: str
    models: tuple[CensusModel, ...]
    contrasts: tuple[CensusContrast, ...]
    accounting: tuple[Accounting, ...]
    population: dict[str, Any]
    fingerprint: dict[str, Any]
    statement: str = CENSUS_TARGET

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"labels": list(self.labels), "bins": list(self.bins), "baseline": self.baseline,
                "models": [m.to_dict() for m in self.models],
                "contrasts": [c.to_dict() for c in self.contrasts],
                "accounting": [a.to_dict() for a in self.accounting], "population": self.population,
                "fingerprint": self.fingerprint, "statement": self.statement}


def census_summary(population: Population, scores: Mapping[str, WindowScores], token_bytes: npt.ArrayLike,
                   *, baseline: str) -> CensusSummary:
    """Census point values for every model, contrasts against ``baseline``, stratum contributions.

    Uses the ``census`` windows of the scores and first checks that they score
    every target of every population source exactly once, with exact target
    and byte totals. The scores must bin targets by their position in the
    source (``score(..., position="source")``): a census window's own
    positions say nothing about where in the source its targets lie.

    Raises:
        ValueError: no census windows, scores binned by window position, an
            unknown baseline, different inputs, or a census that does not tile every source.
    """
    names = _check_same(scores)
    if baseline not in scores:
        raise InputError(f"baseline {baseline!r} is not among the scored models {names}")
    ref = scores[baseline]
    cm = ref.mask("census")
    if not cm.any():
        raise InputError("the scores hold no census windows (cut them with WindowSpec(kinds=('census',)))")
    if ref.position != "source":
        raise InputError("census region contributions are binned by position in the source: score the census "
                         "windows with score(..., position='source')")
    sp = ref.spec if ref.spec is not None else WindowSpec(kinds=("census",))
    acc = tuple(a for name in names for a in account(population, scores[name], token_bytes, sp)
                if a.kind == "census")
    for a in acc:
        if not a.ok:
            raise InputError(f"census accounting fails for {a.model!r}: targets {a.targets_observed}/"
                             f"{a.targets_expected}, bytes {a.bytes_observed}/{a.bytes_expected}; "
                             f"{a.first_problem}")
    strat = population.strata[ref.sources]
    S = len(population.labels)
    models: list[CensusModel] = []
    per_model_nll: dict[str, npt.NDArray[np.float64]] = {}
    total_bytes = int(ref.bytes[cm].sum())
    for name in names:
        s = scores[name]
        agg = s.metrics(cm)
        rows: list[Metrics | None] = []
        nll_s = np.zeros(S, dtype=np.float64)
        for k in range(S):
            m = cm & (strat == k)
            if m.any():
                mk = s.metrics(m)
                rows.append(mk)
                nll_s[k] = mk.nll
            else:
                rows.append(None)
        per_model_nll[name] = nll_s
        contrib = tuple(float(v) / (LN2 * total_bytes) for v in nll_s)
        models.append(CensusModel(name, agg, tuple(rows), contrib))
    by_name = {m.model: m for m in models}
    contrasts: list[CensusContrast] = []
    base = by_name[baseline].aggregate
    for name in names:
        if name == baseline:
            continue
        agg = by_name[name].aggregate
        d_strata = (per_model_nll[name] - per_model_nll[baseline]) / (LN2 * total_bytes)
        d_bins = tuple((a - b) / (LN2 * total_bytes) for a, b in zip(agg.bin_nll, base.bin_nll, strict=True))
        delta = float(agg.bpb) - float(base.bpb)  # type: ignore[arg-type]
        contrasts.append(CensusContrast(name, baseline, delta, tuple(float(v) for v in d_strata), d_bins))
    return CensusSummary(labels=population.labels, bins=tuple(bin_labels(ref.bin_edges)), baseline=baseline,
                         models=tuple(models), contrasts=tuple(contrasts), accounting=acc,
                         population=population.to_dict(), fingerprint=ref.fingerprint.to_dict())
