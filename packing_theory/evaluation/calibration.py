"""Calibration experiments with a known answer: a null contrast and a planted position effect.

Job: synthetic corpora and two oracle models whose true contrasts are known
exactly, to check that the protocol recovers a planted effect and that its
intervals cover a true zero at about the nominal rate (the tests and
``benchmarks/eval_coverage.py`` run them). Imports: numpy and this
package's metrics, population, windows and bootstrap modules.

Both experiments use small windows (``R = 65``: 64 targets) and two
over-context length strata, ``[300, 600]`` and ``[700, 1000]``, with strata
boundaries ``(65, 650)``; the onset of the "late" part of a document is
position 65, so beginning windows are wholly early and tail windows wholly
late. Models are :class:`UnigramModel` oracles: their NLL depends on the
target token only, so every expectation below is exact.

**Null** (:func:`null_experiment`). Ids ``1 .. 2P`` form pairs ``(a_i, b_i)``
of equal byte length. Each source draws a topic for its early part and
another for its late part, each fair: topic 0 gives ``a_i`` probability
``0.7 w_i`` and ``b_i`` ``0.3 w_i``; topic 1 the reverse. Model ``A``
predicts ``0.6 w_i`` / ``0.4 w_i``, model ``B`` the mirror image. Swapping
every ``a_i`` with ``b_i`` leaves the corpus law unchanged and exchanges the
two models, so every delta and every interaction has a distribution
symmetric about 0: the true contrast is exactly 0.

**Planted** (:func:`planted_experiment`). Early tokens ``1..8`` follow a
fixed law ``e``; late tokens ``9..16`` come, in source ``s``, from a
mixture ``ρ_s t + (1 − ρ_s) U`` with ``ρ_s ~ Uniform(0.5, 1)``, ``t`` skewed
and ``U`` uniform. Both models give the early tokens ``0.9 e``; model
``base`` spreads 0.1 uniformly over the late tokens, model ``late`` puts
``0.1 t`` on them — it is better late in documents by a known amount. The
beginning delta is exactly 0 and the tail delta (and the interaction)
converges to :func:`planted_value` ``= −(ρ̄ KL(t‖U) − (1 − ρ̄) KL(U‖t)) /
(ln 2 (ρ̄ E_t[bytes] + (1 − ρ̄) E_U[bytes]))`` with ``ρ̄ = 0.75``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError
from .metrics import LN2, WindowScores, score
from .population import Population, sample_population
from .windows import WindowSpec

__all__ = [
    "CALIBRATION_BOUNDARIES",
    "CALIBRATION_STRATA",
    "Experiment",
    "UnigramModel",
    "null_experiment",
    "planted_experiment",
    "planted_value",
]

Float64Array = npt.NDArray[np.float64]

CALIBRATION_BOUNDARIES: tuple[int, ...] = (65, 650)
"""Stratum boundaries of both experiments (labels ``1–65``, ``66–650``, ``>650``)."""

CALIBRATION_STRATA: tuple[tuple[int, int], ...] = ((300, 600), (700, 1000))
"""Length ranges of the two populated strata (``66–650`` and ``>650``)."""

_R = 65
_ONSET = 65
_BOS_P = 1e-6

_E = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 2.0, 1.0, 1.0])
_E = _E / _E.sum()
_T = np.array([8.0, 4.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0])
_T = _T / _T.sum()
_U = np.full(8, 1 / 8)
_PLANTED_BYTES = np.array([0, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 4, 3, 2, 1], dtype=np.int64)
_RHO_MEAN = 0.75


class UnigramModel:
    """An :class:`~packing_theory.evaluation.protocol.NllFn` whose NLL is ``-ln q[target]``, context-free.

    >>> m = UnigramModel([0.5, 0.25, 0.25])
    >>> [round(float(v), 4) for v in m(np.array([[0, 1, 2]]), None)[0]]
    [1.3863, 1.3863]
    """

    def __init__(self, probs: npt.ArrayLike) -> None:
        q = np.asarray(probs, dtype=np.float64)
        if q.ndim != 1 or q.size == 0 or not np.isfinite(q).all() or (q <= 0).any():
            raise InputError("probs must be a non-empty 1-D array of positive probabilities")
        if abs(float(q.sum()) - 1.0) > 1e-9:
            raise InputError(f"probs must sum to 1, got {float(q.sum())!r}")
        self.nll_table: Float64Array = -np.log(q)

    def __call__(self, input_ids: npt.NDArray[np.int64], segment_ids: npt.NDArray[np.int32] | None,
                 /) -> Float64Array:
        out: Float64Array = self.nll_table[np.asarray(input_ids)[:, 1:]]
        return out


@dataclass(frozen=True)
class Experiment:
    """A calibration corpus scored by two oracle models.

    Attributes:
        population: the sources (every source of both strata; no sampling).
        scores: ``{"A": ..., "B": ...}`` (null) or ``{"base": ..., "late": ...}`` (planted).
        token_bytes: the byte-length table.
        spec: beginning and tail windows, ``R = 65``.
        truth: the true value of every tail − beginning interaction, by stratum label.
    """

    population: Population
    scores: dict[str, WindowScores]
    token_bytes: npt.NDArray[np.int64]
    spec: WindowSpec
    truth: dict[str, float]


def _lengths(rng: np.random.Generator, per_stratum: int) -> list[int]:
    out: list[int] = []
    for lo, hi in CALIBRATION_STRATA:
        out.extend(int(v) for v in rng.integers(lo, hi + 1, size=per_stratum))
    return out


def _finish(docs: Sequence[npt.NDArray[np.int64]], models: dict[str, UnigramModel], tb: npt.NDArray[np.int64],
            truth: float) -> Experiment:
    pop = sample_population(docs, per_stratum=None, boundaries=CALIBRATION_BOUNDARIES,
                            drop_internal_duplicates=False)
    spec = WindowSpec(kinds=("beginning", "tail"), capacity=_R)
    windows = pop.windows(spec)
    scores = {name: score(windows, m, tb, model=name, spec=spec, batch_size=256)
              for name, m in models.items()}
    labels = [pop.labels[1], pop.labels[2]]
    return Experiment(pop, scores, tb, spec, {lab: truth for lab in labels})


def null_experiment(seed: int, *, per_stratum: int = 40, pairs: int = 6) -> Experiment:
    """The null corpus (true contrasts exactly 0) with ``per_stratum`` sources in each of two strata."""
    check_int("seed", seed, 0)
    n = check_int("per_stratum", per_stratum, 2)
    P = check_int("pairs", pairs, 1)
    rng = np.random.default_rng([seed, 0x4E0])
    w = 1.0 / np.arange(1, P + 1)
    w /= w.sum()
    V = 1 + 2 * P
    tb = np.zeros(V, dtype=np.int64)
    tb[1::2] = tb[2::2] = 1 + np.arange(P) % 4
    topic = np.zeros((2, V))
    topic[0, 1::2], topic[0, 2::2] = 0.7 * w, 0.3 * w
    topic[1, 1::2], topic[1, 2::2] = 0.3 * w, 0.7 * w
    cum = np.cumsum(topic, axis=1)
    cum[:, -1] = 1.0
    docs = []
    for L in _lengths(rng, n):
        z = rng.integers(0, 2, size=2)
        u = rng.random(L - 1)
        pos = np.arange(1, L)
        which = np.where(pos < _ONSET, z[0], z[1])
        toks = np.where(which == 0, np.searchsorted(cum[0], u, side="right"),
                        np.searchsorted(cum[1], u, side="right"))
        docs.append(np.r_[0, np.minimum(toks, V - 1)].astype(np.int64))
    qa = np.zeros(V)
    qa[1::2], qa[2::2] = 0.6 * w, 0.4 * w
    qb = np.zeros(V)
    qb[1::2], qb[2::2] = 0.4 * w, 0.6 * w
    models = {}
    for name, q in (("A", qa), ("B", qb)):
        q = q * (1 - _BOS_P)
        q[0] = _BOS_P
        models[name] = UnigramModel(q)
    return _finish(docs, models, tb, 0.0)


def planted_value() -> float:
    """The true tail − beginning interaction (and tail delta) of :func:`planted_experiment`, in BPB."""
    kl_tu = float(np.sum(_T * np.log(_T / _U)))
    kl_ut = float(np.sum(_U * np.log(_U / _T)))
    late_bytes = _PLANTED_BYTES[9:17].astype(np.float64)
    num = -(_RHO_MEAN * kl_tu - (1 - _RHO_MEAN) * kl_ut)
    den = LN2 * (_RHO_MEAN * float(_T @ late_bytes) + (1 - _RHO_MEAN) * float(_U @ late_bytes))
    return num / den


def planted_experiment(seed: int, *, per_stratum: int = 60) -> Experiment:
    """The planted corpus: model ``late`` beats ``base`` on late tokens by :func:`planted_value`."""
    check_int("seed", seed, 0)
    n = check_int("per_stratum", per_stratum, 2)
    rng = np.random.default_rng([seed, 0x9A1])
    docs = []
    for L in _lengths(rng, n):
        rho = rng.uniform(0.5, 1.0)
        late_law = rho * _T + (1 - rho) * _U
        pos = np.arange(1, L)
        early = 1 + rng.choice(8, size=L - 1, p=_E)
        late = 9 + rng.choice(8, size=L - 1, p=late_law)
        docs.append(np.r_[0, np.where(pos < _ONSET, early, late)].astype(np.int64))
    models = {}
    for name, late_q in (("base", _U), ("late", _T)):
        q = np.zeros(17)
        q[1:9] = 0.9 * _E
        q[9:17] = 0.1 * late_q
        q = q * (1 - _BOS_P)
        q[0] = _BOS_P
        models[name] = UnigramModel(q)
    return _finish(docs, models, _PLANTED_BYTES.copy(), planted_value())
