"""The finite evaluation population: which sources and strata a budgeted score can contain.

Seed 000 §3's support statement: if a truncated evaluation stream gives a
length stratum zero inclusion probability, reweighting its observed losses
cannot identify the full-population loss. :func:`evaluation_population`
replays an evaluation stream to its target budget (and prefixes of it) and
reports, per stratum, the sources it includes at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct
from ..engine.batches import EventBatch, EventItem
from ..engine.consumers import consumer_settings, feed_all
from ..engine.events import Placement, first_target
from ..engine.policies import LengthsInput, PackerConfig, resolve_config
from ..engine.replay import Engine, make_packer
from ..lengths import validate_lengths
from .ledger import Ledger
from .strata import STRATA_BOUNDARIES, stratum_index, stratum_labels

__all__ = ["AUTORESEARCH_EVAL_TARGETS", "DEFAULT_EVAL_PREFIXES", "EvalPopulation", "EvalPrefix",
           "ScoredTargets", "evaluation_population"]

AUTORESEARCH_EVAL_TARGETS = 20_971_520
"""autoresearch's official evaluation budget in targets (10,240 rows at R = 2049)."""

Int64Array = npt.NDArray[np.int64]

DEFAULT_EVAL_PREFIXES: tuple[int, ...] = (2_097_152, 10_485_760)
"""Evaluation prefixes quoted by seed 000 §5.1 (2.10 M and 10.49 M targets)."""


@dataclass(frozen=True, slots=True)
class EvalPrefix:
    """Inclusion within the first ``targets`` targets of the evaluation stream.

    ``included[s]`` counts population sources of stratum ``s`` with at least one
    target before ``targets``; ``zero_inclusion`` lists the labels of strata
    present in the population (``population[s] > 0``) with none included.
    """

    targets: int
    included: tuple[int, ...]
    zero_inclusion: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class EvalPopulation:
    """Which sources and length strata a budgeted evaluation score can contain (seed 000 §3, §5.1).

    Attributes:
        policy: the evaluation loader's policy.
        targets: the evaluation budget in targets.
        labels: stratum labels.
        population: sources per stratum in the intended population (the
            whole evaluation stream unless another population was given).
        arrived: distinct evaluation sources that entered the buffer within the budget.
        included: distinct sources with at least one scored target within the budget.
        target_counts: scored targets per stratum, counted up to the budget.
        zero_inclusion: labels of strata present in the population with no
            included source: reweighting the observed losses cannot identify
            their loss (the support statement of seed 000 §3).
        prefixes: the same verdict for shorter budgets (nested prefixes).
        first_over_capacity_target: first target of a source longer than R, if any.
        protected_tokens: the protected-set mass at the budget.
        protected_share_of_arrived: its share of the arrived mass.
        included_sources: the original source ids with at least one scored target.
    """

    policy: str
    targets: int
    labels: tuple[str, ...]
    population: tuple[int, ...]
    arrived: tuple[int, ...]
    included: tuple[int, ...]
    target_counts: tuple[int, ...]
    zero_inclusion: tuple[str, ...]
    prefixes: tuple[EvalPrefix, ...]
    first_over_capacity_target: int | None
    protected_tokens: int
    protected_share_of_arrived: float | None
    included_sources: Int64Array = field(repr=False, compare=False)

    @property
    def verdict(self) -> str:
        """One sentence: which strata the score cannot contain."""
        if not self.zero_inclusion:
            return (f"every length stratum present in the population has at least one source scored "
                    f"within {self.targets:,} targets")
        return (f"zero inclusion within {self.targets:,} targets for stratum(s) "
                f"{', '.join(self.zero_inclusion)}: their loss is not identified by reweighting "
                f"the observed rows")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the source id list is summarised by its length)."""
        return {"policy": self.policy, "targets": self.targets, "labels": list(self.labels),
                "population": list(self.population), "arrived": list(self.arrived),
                "included": list(self.included), "target_counts": list(self.target_counts),
                "zero_inclusion": list(self.zero_inclusion),
                "prefixes": [p.to_dict() for p in self.prefixes],
                "first_over_capacity_target": self.first_over_capacity_target,
                "protected_tokens": self.protected_tokens,
                "protected_share_of_arrived": self.protected_share_of_arrived,
                "included_source_count": int(self.included_sources.size),
                "verdict": self.verdict}


def evaluation_population(
    lengths: LengthsInput,
    config: PackerConfig | None = None,
    *,
    targets: int = AUTORESEARCH_EVAL_TARGETS,
    prefixes: Sequence[int] = DEFAULT_EVAL_PREFIXES,
    population: npt.ArrayLike | None = None,
    boundaries: Sequence[int] = STRATA_BOUNDARIES,
    engine: Engine = "fast",
    **kwargs: Any,
) -> EvalPopulation:
    """Replay an evaluation stream to ``targets`` and report which strata it can score.

    ``config`` (or keyword :class:`PackerConfig` fields) gives the evaluation
    loader; its budget is replaced by ``targets``. ``population`` (lengths of
    the intended population) defaults to the whole evaluation stream.

    Complexity: one replay of the budget plus O(sources) numpy work.

    >>> ev = evaluation_population([3, 40, 5, 2, 6, 4] * 4, capacity=8, min_buffer=3, refill=2,
    ...                            targets=21, prefixes=(7,), boundaries=(8,))
    >>> ev.labels, ev.population, ev.included, ev.zero_inclusion
    (('1–8', '>8'), (20, 4), (7, 0), ('>8',))
    >>> ev.prefixes[0].included
    (2, 0)
    """
    config = resolve_config(config, kwargs, PackerConfig)
    targets = check_int("targets", targets, 1)
    for i, p in enumerate(prefixes):
        check_int(f"prefixes[{i}]", p, 1, maximum=targets)
    arr = lengths if isinstance(lengths, np.ndarray) else np.asarray(list(lengths))
    arr = validate_lengths(arr, name="evaluation lengths")
    pop = arr if population is None else validate_lengths(np.asarray(population), name="population")
    cfg = replace(config, rows=None, targets=int(targets))
    packer = make_packer(engine, cfg)
    ledger = Ledger.for_packer(packer, boundaries=boundaries)
    agg, scored = feed_all(packer.stream(arr), ledger, ScoredTargets.for_packer(packer, targets))
    cols = ledger.arrays()
    arrived = cols["arrived"]
    strat = cols["stratum"][arrived]
    first = cols["first_target"][arrived]
    src = cols["source"][arrived]
    S = ledger.n_strata
    labels = tuple(stratum_labels(ledger.boundaries))
    pop_counts = tuple(int(v) for v in np.bincount(stratum_index(pop, ledger.boundaries), minlength=S))
    occ, weights = scored
    target_counts = np.bincount(cols["stratum"][occ], weights=weights, minlength=S).round().astype(np.int64)

    def included_within(limit: int) -> tuple[int, ...]:
        return _distinct_by_stratum(src, strat, (first >= 0) & (first < limit), S)

    def zero(inc: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(labels[s] for s in range(S) if pop_counts[s] > 0 and inc[s] == 0)

    inc = included_within(int(targets))
    pre = tuple(EvalPrefix(int(p), included_within(int(p)), zero(included_within(int(p))))
                for p in sorted(prefixes))
    sources = distinct(src[(first >= 0) & (first < targets)])
    first_long = agg.first_over_capacity_target
    return EvalPopulation(
        policy=cfg.policy,
        targets=int(targets),
        labels=labels,
        population=pop_counts,
        arrived=_distinct_by_stratum(src, strat, np.ones(src.size, dtype=np.bool_), S),
        included=inc,
        target_counts=tuple(int(v) for v in target_counts),
        zero_inclusion=zero(inc),
        prefixes=pre,
        first_over_capacity_target=first_long if first_long is not None and first_long < targets else None,
        protected_tokens=agg.protected.tokens,
        protected_share_of_arrived=agg.protected.share_of_arrived,
        included_sources=sources,
    )


class ScoredTargets:
    """Per placement: how many of its targets an evaluation of ``targets`` targets scores.

    A consumer of the event stream (:class:`~packing_theory.engine.consumers.Consumer`):
    :meth:`result` gives ``(occurrences, scored targets)``, one entry per
    placement with a scored target. The budget cuts the last row: rows are
    whole, the budget need not be.

    >>> from packing_theory import Placement
    >>> s = ScoredTargets(capacity=4, targets=4)
    >>> s.feed(Placement(0, 0, 0, 0, 0, 4, False, False)); s.feed(Placement(1, 0, 1, 1, 0, 4, False, False))
    >>> [a.tolist() for a in s.result()]
    [[0, 1], [3, 1]]
    """

    def __init__(self, capacity: int, targets: int) -> None:
        self.capacity = check_int("capacity", capacity, 2)
        self.targets = check_int("targets", targets, 1)
        self._occ: list[int] = []
        self._cnt: list[int] = []
        self._blocks: list[tuple[Int64Array, Int64Array]] = []

    @classmethod
    def for_packer(cls, packer: object, targets: int) -> ScoredTargets:
        """The count for the stream of ``packer`` (its ``R``) and an evaluation of ``targets`` targets."""
        return cls(consumer_settings(packer).capacity, targets)

    def feed(self, ev: EventItem) -> None:
        """Account one event or a batch (its placements, with numpy)."""
        capacity, targets = self.capacity, self.targets
        if type(ev) is Placement:
            first = ev.first_target(capacity)
            n = ev.length - (1 if ev.offset == 0 else 0)
            k = min(first + n, targets) - first
            if k > 0:
                self._occ.append(ev.occurrence)
                self._cnt.append(k)
        elif type(ev) is EventBatch:
            self._flush()
            p = ev.placement
            firsts = first_target(p.row, p.offset, capacity)
            ks = np.minimum(firsts + p.length - (p.offset == 0), targets) - firsts
            sel = ks > 0
            self._blocks.append((p.occurrence[sel], ks[sel]))

    def _flush(self) -> None:
        if self._occ:
            block = (np.asarray(self._occ, dtype=np.int64), np.asarray(self._cnt, dtype=np.int64))
            self._blocks.append(block)
            self._occ, self._cnt = [], []

    def result(self) -> tuple[Int64Array, Int64Array]:
        """``(occurrences, scored targets)`` of the placements with a scored target, in stream order."""
        self._flush()
        if not self._blocks:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return (np.concatenate([o for o, _ in self._blocks]).astype(np.int64),
                np.concatenate([k for _, k in self._blocks]).astype(np.int64))

    def _check(self) -> None:
        """Assert the internal invariants: aligned columns, every count in ``[1, targets]``."""
        assert len(self._occ) == len(self._cnt)
        assert all(1 <= k <= self.targets for k in self._cnt)
        for o, k in self._blocks:
            assert o.shape == k.shape and ((k >= 1) & (k <= self.targets)).all()


def _distinct_by_stratum(src: Int64Array, strat: Int64Array, sel: npt.NDArray[np.bool_], strata: int
                         ) -> tuple[int, ...]:
    """Distinct original sources per stratum among ``sel`` (a source repeated over passes counts once)."""
    _, idx = np.unique(src[sel], return_index=True)
    return tuple(int(v) for v in np.bincount(strat[sel][idx], minlength=strata))

