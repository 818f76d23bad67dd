"""The prefix ranking check: do prefixes of one fixed population rank checkpoints as it does? (seed 000 §5.6)

Job: from row-level sufficient statistics of several checkpoints on one
fixed population (the official evaluation stream's rows: summed NLL of the
counted targets and summed bytes per row), compare each checkpoint's BPB on
prefixes of the population with its BPB on the whole, count ranking
reversals, and set each method/prefix contrast against the distribution of
the same contrast on uniform row subsets of the same size. Imports: numpy,
this package's family (the one contrast arithmetic), metrics and protocol modules.

The check (seed 000 §5.6)
-------------------------
* **Prefixes** of the official 20,971,520-target population: 0.262 M,
  2.10 M and 10.49 M targets (:data:`PAPER_PREFIXES` — 128, 1,024 and 5,120
  rows of 2,048 targets). A prefix must end at a row boundary.
* **Reversals**: a pair of checkpoints ordered one way by the full score and
  the other way by the prefix score (ties are not reversals). Seed 000 finds
  none among seven checkpoints at any of the three prefixes.
* **Subset reference**: for each non-baseline checkpoint ``m`` and prefix
  ``p``, the contrast ``BPB_m(p) − BPB_baseline(p)`` is compared with the
  same contrast on ``subsets`` (1,000) uniform row subsets of the same number
  of rows, drawn without replacement from the whole population with
  ``numpy.random.default_rng([seed, i])`` for prefix ``i`` (one draw serves
  every checkpoint, so the contrasts stay paired). A contrast outside the
  nominal central ``level`` interval of its reference is flagged — seed 000
  finds one of 18, "not strong multiplicity-adjusted evidence": the flags are
  not adjusted for multiplicity.

>>> rng = np.random.default_rng(0)
>>> nbytes = rng.integers(3000, 5000, size=64)
>>> nll = {"a": nbytes * 0.70, "b": nbytes * 0.71 + rng.normal(0, 5, size=64)}
>>> stats = RowStatistics.from_arrays(nll, nbytes, targets=np.full(64, 16))
>>> check = ranking_check(stats, baseline="a", prefixes=(128, 512), subsets=200, seed=1)
>>> [p.rows for p in check.prefixes], check.reversal_count
([8, 32], 0)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError
from ..reporting.model import Column, Section, Table, Text
from .family import contrast_value
from .metrics import LN2, Float64Array, validate_token_bytes
from .protocol import NllFn

__all__ = [
    "DEFAULT_SUBSETS",
    "PAPER_PREFIXES",
    "RANKING_TARGET",
    "PrefixContrast",
    "PrefixResult",
    "RankingCheck",
    "RowStatistics",
    "rank",
    "ranking_blocks",
    "ranking_check",
    "reversals",
    "row_statistics",
]

PAPER_PREFIXES: tuple[int, ...] = (262_144, 2_097_152, 10_485_760)
"""Seed 000 §5.6's prefixes, in targets: 0.262 M, 2.10 M and 10.49 M of the 20.97 M-target population."""

DEFAULT_SUBSETS = 1000
"""Uniform row subsets per prefix in the reference distribution (seed 000 §5.6)."""

RANKING_TARGET = (
    "What this check is about: one fixed, finite evaluation population and these checkpoints. A prefix is "
    "compared with the whole population it belongs to; no reversal means that, on this population, the "
    "prefix orders these checkpoints as the whole does, not that the population represents sources it "
    "cannot contain. The subset reference shows how far the same contrast moves on uniform row subsets of "
    "the prefix's size; a prefix outside it differs from a typical subset (rows are not exchangeable along a "
    "packed stream). The flags are nominal and unadjusted for multiplicity."
)
"""The inferential target of the ranking check, in words."""

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RowStatistics:
    """Per-row sufficient statistics of several checkpoints on one population of rows.

    Attributes:
        models: checkpoint names, in order.
        nll: ``(models, rows)`` summed NLL (nats) of each row's counted targets.
        bytes: ``(rows,)`` summed byte length of each row's targets (the same for every checkpoint).
        targets: ``(rows,)`` scored targets of each row.
    """

    models: tuple[str, ...]
    nll: Float64Array
    bytes: Int64Array
    targets: Int64Array

    @classmethod
    def from_arrays(cls, nll: Mapping[str, npt.ArrayLike], nbytes: npt.ArrayLike,
                    targets: npt.ArrayLike | None = None) -> RowStatistics:
        """Validate ``nll`` (name -> per-row NLL) and ``nbytes`` (per-row bytes); ``targets`` default 1 a row.

        Raises:
            ValueError: fewer than two checkpoints, mismatched lengths, negative or
                non-finite values, or a row without bytes.
        """
        if not isinstance(nll, Mapping) or len(nll) < 2:
            raise InputError("nll must map at least two checkpoint names to per-row NLL sums")
        b = np.asarray(nbytes)
        if b.ndim != 1 or b.size == 0 or not np.issubdtype(b.dtype, np.integer):
            raise InputError(f"bytes must be a non-empty 1-D integer array, got shape {b.shape}, "
                             f"dtype {b.dtype}")
        if (b <= 0).any():
            raise InputError(f"bytes[{int(np.argmax(b <= 0))}] must be > 0 (a row without bytes has no BPB)")
        t = np.ones(b.size, dtype=np.int64) if targets is None else np.asarray(targets)
        if t.shape != b.shape or not np.issubdtype(t.dtype, np.integer) or (t < 0).any():
            raise InputError(f"targets must be {b.size} integers >= 0, got shape {t.shape}")
        rows = np.empty((len(nll), b.size), dtype=np.float64)
        for i, (name, v) in enumerate(nll.items()):
            if not isinstance(name, str) or not name:
                raise InputTypeError(f"checkpoint names must be non-empty strings, got {name!r}")
            a = np.asarray(v, dtype=np.float64)
            if a.shape != b.shape:
                raise InputError(f"nll[{name!r}] has shape {a.shape}; bytes has {b.shape}")
            if not np.isfinite(a).all() or (a < 0).any():
                raise InputError(f"nll[{name!r}] holds a negative or non-finite row sum")
            rows[i] = a
        out = cls(tuple(nll), rows, b.astype(np.int64), t.astype(np.int64))
        out._check()
        return out

    @property
    def n_rows(self) -> int:
        """Rows of the population."""
        return int(self.bytes.size)

    def bpb(self, rows: npt.ArrayLike | slice | None = None) -> dict[str, float]:
        """Each checkpoint's BPB over ``rows`` (indices or a slice; all rows by default)."""
        sel: Any = slice(None) if rows is None else rows
        denom = LN2 * float(self.bytes[sel].sum())
        sums = self.nll[:, sel].sum(axis=1)
        return {m: float(v) / denom for m, v in zip(self.models, sums, strict=True)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an ``.npz``: ``bytes``, ``targets`` and one per-row NLL array per checkpoint (in order)."""
        out = Path(path)
        arrays: dict[str, Any] = {"bytes": self.bytes, "targets": self.targets}
        for m, v in zip(self.models, self.nll, strict=True):
            if m in arrays:
                raise InputError(f"checkpoint name {m!r} collides with a reserved array name")
            arrays[m] = v
        with out.open("wb") as fh:
            np.savez(fh, **arrays)
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RowStatistics:
        """Read :meth:`save`'s ``.npz``: arrays ``bytes``, optional ``targets``, and one per checkpoint.

        Raises:
            ValueError: an unreadable file, no ``bytes`` array, or bad values.
        """
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"--ranking {os.fspath(path)!r} is not a readable .npz file: {exc}") from exc
        if "bytes" not in arrays:
            raise InputError(f"--ranking {os.fspath(path)!r} has no 'bytes' array (per-row byte sums)")
        nbytes = arrays.pop("bytes")
        targets = arrays.pop("targets", None)
        return cls.from_arrays(arrays, nbytes, targets)

    def _check(self) -> None:
        """Assert the internal invariants (shapes, dtypes, finite non-negative sums)."""
        assert self.nll.shape == (len(self.models), self.bytes.size) and self.nll.dtype == np.float64
        assert self.bytes.dtype == np.int64 and self.targets.dtype == np.int64
        assert self.targets.shape == self.bytes.shape and (self.bytes > 0).all()
        assert np.isfinite(self.nll).all() and (self.nll >= 0).all()
        assert len(set(self.models)) == len(self.models)


def row_statistics(rows: npt.ArrayLike, models: Mapping[str, NllFn | Callable[..., Any]],
                   token_bytes: npt.ArrayLike, *, batch_size: int = 16) -> RowStatistics:
    """Score packed rows (``(n, R)`` token ids, e.g. the official evaluation stream) with each model.

    Each row is one causal sequence, as the official score sees it (no
    document mask: ``segment_ids=None``); position 0 is input only, a target
    counts when its byte length is positive (the positive-byte mask). O(one
    ``nll_fn`` call per ``batch_size`` rows per model).

    Raises:
        ValueError: not a 2-D array of at least 2 columns, a token outside
            ``token_bytes``, a row without bytes, or an ``nll_fn`` result of the wrong shape.
    """
    ids = np.ascontiguousarray(np.asarray(rows), dtype=np.int64)
    if ids.ndim != 2 or ids.shape[0] == 0 or ids.shape[1] < 2:
        raise InputError(f"rows must be a non-empty (rows, R) array with R >= 2, got shape {ids.shape}")
    tb = validate_token_bytes(token_bytes)
    if int(ids.min()) < 0 or int(ids.max()) >= tb.size:
        raise InputError(f"rows hold a token id outside token_bytes (size {tb.size})")
    bs = check_int("batch_size", batch_size, 1)
    tbytes = tb[ids[:, 1:]]
    counted = tbytes > 0
    nll: dict[str, Float64Array] = {}
    for name, fn in models.items():
        if not callable(fn):
            raise InputTypeError(f"models[{name!r}] must be callable (an NllFn), got {type(fn).__name__}")
        sums = np.empty(ids.shape[0], dtype=np.float64)
        for b0 in range(0, ids.shape[0], bs):
            out = np.asarray(fn(ids[b0 : b0 + bs], None), dtype=np.float64)
            if out.shape != (min(bs, ids.shape[0] - b0), ids.shape[1] - 1):
                raise InputError(f"models[{name!r}] returned shape {out.shape} for rows of shape "
                                 f"{ids[b0 : b0 + bs].shape}")
            sums[b0 : b0 + bs] = np.where(counted[b0 : b0 + bs], out, 0.0).sum(axis=1)
        nll[name] = sums
    return RowStatistics.from_arrays(nll, tbytes.sum(axis=1), np.full(ids.shape[0], ids.shape[1] - 1))


def rank(scores: Mapping[str, float]) -> tuple[str, ...]:
    """Checkpoints from best (lowest BPB) to worst; ties keep the mapping's order.

    >>> rank({"a": 1.0, "b": 0.9, "c": 1.0})
    ('b', 'a', 'c')
    """
    names = list(scores)
    return tuple(sorted(names, key=lambda m: (scores[m], names.index(m))))


def reversals(first: Mapping[str, float], second: Mapping[str, float]) -> tuple[tuple[str, str], ...]:
    """Pairs ordered one way by ``first`` and the other way by ``second`` (ties are not reversals).

    Each pair is given as ``(better by first, better by second)``. O(models²).

    >>> reversals({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.0, "b": 3.5, "c": 3.0})
    (('b', 'c'),)
    """
    common = [m for m in first if m in second]
    if len(common) != len(first) or len(common) != len(second):
        raise InputError(f"reversals need the same checkpoints on both sides, got {sorted(first)} and "
                         f"{sorted(second)}")
    out: list[tuple[str, str]] = []
    for a, b in combinations(common, 2):
        d1, d2 = first[a] - first[b], second[a] - second[b]
        if d1 * d2 < 0:
            out.append((a, b) if d1 < 0 else (b, a))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PrefixContrast:
    """One method/prefix contrast against its subset reference.

    Attributes:
        model, baseline: the contrast is ``model − baseline`` BPB.
        estimate: on the prefix.
        full: on the whole population.
        reference_lo, reference_hi: the central ``level`` interval of the same
            contrast on the uniform row subsets.
        reference_mean: their mean.
        quantile: the share of subset contrasts below ``estimate``.
    """

    model: str
    baseline: str
    estimate: float
    full: float
    reference_lo: float
    reference_hi: float
    reference_mean: float
    quantile: float

    @property
    def outside(self) -> bool:
        """The prefix contrast lies outside the subset reference interval."""
        return self.estimate < self.reference_lo or self.estimate > self.reference_hi

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"model": self.model, "baseline": self.baseline, "estimate": self.estimate, "full": self.full,
                "reference_lo": self.reference_lo, "reference_hi": self.reference_hi,
                "reference_mean": self.reference_mean, "quantile": self.quantile, "outside": self.outside}


@dataclass(frozen=True)
class PrefixResult:
    """One prefix: its size, scores, ranking, reversals against the full ranking, and its contrasts."""

    targets: int
    rows: int
    bpb: dict[str, float]
    ranking: tuple[str, ...]
    reversals: tuple[tuple[str, str], ...]
    contrasts: tuple[PrefixContrast, ...]
    reference: Float64Array

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the subset replicates are left out)."""
        return {"targets": self.targets, "rows": self.rows, "bpb": self.bpb, "ranking": list(self.ranking),
                "reversals": [list(p) for p in self.reversals],
                "contrasts": [c.to_dict() for c in self.contrasts]}


@dataclass(frozen=True)
class RankingCheck:
    """The §5.6 ranking check (see the module doc)."""

    models: tuple[str, ...]
    baseline: str
    rows: int
    targets: int
    full: dict[str, float]
    ranking: tuple[str, ...]
    prefixes: tuple[PrefixResult, ...]
    subsets: int
    seed: int
    level: float
    statement: str = RANKING_TARGET

    @property
    def reversal_count(self) -> int:
        """Reversals over every prefix."""
        return sum(len(p.reversals) for p in self.prefixes)

    @property
    def outside_count(self) -> int:
        """Method/prefix contrasts outside their subset reference interval."""
        return sum(c.outside for p in self.prefixes for c in p.contrasts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"models": list(self.models), "baseline": self.baseline, "rows": self.rows,
                "targets": self.targets, "full": self.full, "ranking": list(self.ranking),
                "prefixes": [p.to_dict() for p in self.prefixes], "subsets": self.subsets, "seed": self.seed,
                "level": self.level, "reversal_count": self.reversal_count,
                "outside_count": self.outside_count,
                "contrasts": sum(len(p.contrasts) for p in self.prefixes), "statement": self.statement}


def _prefix_rows(targets: Int64Array, prefix: int) -> int:
    cum = np.cumsum(targets)
    r = int(np.searchsorted(cum, prefix, side="left")) + 1
    if prefix > int(cum[-1]) or int(cum[r - 1]) != prefix:
        raise InputError(f"prefix of {prefix:,} targets does not end at a row boundary of the "
                         f"{int(cum[-1]):,}-target population")
    return r


def _contrast(bpb: Mapping[str, Any], model: str, baseline: str) -> Any:
    return contrast_value(lambda m, _k: bpb[m], model, baseline, "rows")[0]


def ranking_check(stats: RowStatistics, *, baseline: str, prefixes: Iterable[int] = PAPER_PREFIXES,
                  subsets: int = DEFAULT_SUBSETS, seed: int = 0, level: float = 0.95) -> RankingCheck:
    """Scores on prefixes, reversals against the full ranking, and the uniform-row-subset reference.

    Args:
        stats: per-row sufficient statistics of the checkpoints.
        baseline: the checkpoint every contrast subtracts.
        prefixes: prefix sizes in targets (each must end at a row boundary).
        subsets: uniform row subsets per prefix.
        seed: the subset RNG seed (stream ``[seed, i]`` for prefix ``i``).
        level: the reference interval's nominal central coverage.

    Complexity: O(subsets × prefix rows × checkpoints) per prefix.

    Raises:
        ValueError: an unknown baseline, a prefix that is not a row boundary
            or not shorter than the population, or bad counts.
    """
    if not isinstance(stats, RowStatistics):
        raise InputTypeError(f"stats must be RowStatistics, got {type(stats).__name__}")
    if baseline not in stats.models:
        raise InputError(f"baseline {baseline!r} is not among the checkpoints {list(stats.models)}")
    S = check_int("subsets", subsets, 1)
    sd = check_int("seed", seed, 0)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"level must be a number in (0, 1), got {level!r}")
    sizes = [check_int("prefix", p, 1) for p in prefixes]
    if len(set(sizes)) != len(sizes) or sizes != sorted(sizes):
        raise InputError(f"prefixes must be increasing and distinct, got {sizes}")
    full = stats.bpb()
    n = stats.n_rows
    others = [m for m in stats.models if m != baseline]
    out: list[PrefixResult] = []
    for i, size in enumerate(sizes):
        r = _prefix_rows(stats.targets, size)
        if r >= n:
            raise InputError(f"prefix of {size:,} targets covers the whole population ({n:,} rows)")
        pre = stats.bpb(slice(0, r))
        rng = np.random.default_rng([sd, i])
        ref = np.empty((S, len(others)), dtype=np.float64)
        for k in range(S):
            idx = rng.choice(n, size=r, replace=False)
            sub = stats.bpb(idx)
            ref[k] = [_contrast(sub, m, baseline) for m in others]
        lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
        contrasts = []
        for j, m in enumerate(others):
            est = float(_contrast(pre, m, baseline))
            lo, hi = np.quantile(ref[:, j], [lo_q, hi_q])
            contrasts.append(PrefixContrast(m, baseline, est, float(_contrast(full, m, baseline)), float(lo),
                                            float(hi), float(ref[:, j].mean()),
                                            float(np.mean(ref[:, j] < est))))
        out.append(PrefixResult(size, r, pre, rank(pre), reversals(full, pre), tuple(contrasts), ref))
    return RankingCheck(models=stats.models, baseline=baseline, rows=n, targets=int(stats.targets.sum()),
                        full=full, ranking=rank(full), prefixes=tuple(out), subsets=S, seed=sd,
                        level=float(level))


def ranking_blocks(check: RankingCheck) -> Section:
    """The ranking check as a report section (the evaluation report's *Prefix ranking check*)."""
    cols = (Column("prefix targets", "count"), Column("rows", "count"), Column("reversals"),
            Column("contrast"), Column("prefix Δ", "delta"), Column("full Δ", "delta"),
            Column("subset interval"), Column("outside"))
    rows = []
    for p in check.prefixes:
        rev = "; ".join(f"{a} / {b}" for a, b in p.reversals) or "none"
        for c in p.contrasts:
            rows.append((p.targets, p.rows, rev, f"{c.model} − {c.baseline}", c.estimate, c.full,
                         f"[{c.reference_lo:+.6f}, {c.reference_hi:+.6f}]", "yes" if c.outside else ""))
    summary = (f"{check.rows:,} rows, {check.targets:,} targets; full ranking: {', '.join(check.ranking)}. "
               f"Reversals over {len(check.prefixes)} prefixes: {check.reversal_count}; method/prefix "
               f"contrasts outside the nominal {100 * check.level:g}% interval of {check.subsets:,} uniform "
               f"row subsets: {check.outside_count} of {sum(len(p.contrasts) for p in check.prefixes)}.")
    return Section("ranking", "Prefix ranking check", (Text(check.statement), Text(summary),
                                                       Table("Prefix ranking check", cols, tuple(rows),
                                                             key="prefix-ranking")), collapsed=True)
