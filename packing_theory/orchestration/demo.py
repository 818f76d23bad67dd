"""What ``--demo`` feeds each command, as functions of the library (usable from Python).

=====================  ==========================================================
command                the demo's inputs
=====================  ==========================================================
``audit --demo``       :func:`audit_demo`: the calibrated default corpus (846,848
                       sources) at autoresearch's settings (R = 2049, B = 1000,
                       refill 128, 243,968 rows) under :data:`DEMO_POLICIES`, and
                       an evaluation stream at 20,971,520 targets
``compare --demo``     :func:`compare_demo`: the first :data:`COMPARE_DEMO_DOCUMENTS`
                       documents of the default corpus, every registered packer
``evaluate --demo``    :class:`packing_theory.evaluation.demo.DemoConfig` and
                       :func:`~packing_theory.evaluation.demo.run_demo`
=====================  ==========================================================

>>> demo = audit_demo(scale=0.01)
>>> demo.policies, demo.rows, demo.lengths.size, demo.eval_lengths.size
(('discard', 'continue', 'segment-first'), 2439, 8468, 500)
>>> result = demo.run(permutations=0)
>>> [r.packer for r in result.measurement.runs] == list(demo.policies)
True
>>> cmp = compare_demo(1000)
>>> cmp.lengths.size, cmp.packers[:2], cmp.label
(1000, ('discard', 'continue'), 'default corpus (seed 0), first 1,000 documents')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.population import AUTORESEARCH_EVAL_TARGETS, DEFAULT_EVAL_PREFIXES
from ..corpus import default_lengths
from ..engine.horizon import Budget
from ..errors import InputError
from .audit import AUTORESEARCH_ROWS, AuditResult, EvalStream, audit_corpus
from .compare import default_packers
from .settings import Settings

__all__ = [
    "COMPARE_DEMO_DOCUMENTS",
    "DEMO_EVAL_DOCUMENTS",
    "DEMO_EVAL_SEED",
    "DEMO_POLICIES",
    "PAPER_5_1",
    "AuditDemo",
    "CompareDemo",
    "audit_demo",
    "audit_demo_budget",
    "compare_demo",
]

Int64Array = npt.NDArray[np.int64]

PAPER_5_1: dict[str, Any] = {
    "source": "Source Exclusion in Streaming Pretraining, §5.1: ClimbMix at autoresearch's settings "
              "(R = 2049, B = 1000, refill 128, 243,968 rows)",
    "discard": {
        "arrived_sources": 836_864, "arrived_tokens": 623_932_921, "emitted_tokens": 499_890_432,
        "discarded_tokens": 96_750_834, "buffered_tokens": 27_291_655, "crop_events": 225_735,
        "median_crop_prefix": 14, "crop_bos_only": 15_711, "protected_members": 999,
        "protected_tokens": 27_244_798, "protected_share_of_arrived": 0.0437,
        "protected_share_of_buffered": 0.9983, "over_capacity_emitted_fraction": 0.1176,
        "retention": {"33–128": 0.207, "513–1024": 0.996, "1025–2049": 1.0, ">16384": 0.0},
        "never_started_over_16384": 785,
        "startup_delay_range": [12_990_000, 14_840_000], "startup_permutations": 20,
    },
    "continue": {"discarded_tokens": 0, "buffered_tokens": 25_129_596, "protected_tokens": 25_049_286},
    "segment-first": {
        "arrived_sources": 702_208, "discarded_tokens": 23_430_384, "buffered_tokens": 302_148,
        "added_bos": 52_544, "over_capacity_emitted_fraction": 0.2573,
    },
    "evaluation": {
        "targets": 20_971_520, "protected_tokens": 5_892_120, "protected_share_of_arrived": 0.2086,
        "first_over_capacity_target": 13_895_680,
        "zero_over_capacity_inclusion_prefixes": [2_097_152, 10_485_760],
    },
}
"""The source paper's §5.1 figures, shown beside the full-size audit demo's (its *Published figures*)."""

DEMO_POLICIES: tuple[str, ...] = ("discard", "continue", "segment-first")
"""The policies the audit demo compares."""

DEMO_EVAL_SEED = 1
"""Seed of the audit demo's evaluation stream (a separate draw from the default generator)."""

DEMO_EVAL_DOCUMENTS = 50_000
"""Documents in the audit demo's evaluation stream (a prefix of ``default_lengths(DEMO_EVAL_SEED)``)."""

COMPARE_DEMO_DOCUMENTS = 50_000
"""Documents of ``default_lengths(0)`` the compare demo replays (a prefix keeps it under a minute)."""


def audit_demo_budget(scale: float = 1.0) -> tuple[int, int, tuple[int, ...]]:
    """The audit demo's row budget, evaluation targets and evaluation prefixes at ``scale`` (no data made).

    ``scale < 1`` scales every budget (for quick checks and tests); ``scale = 1``
    is the full-size demo.

    >>> audit_demo_budget()
    (243968, 20971520, (2097152, 10485760))
    >>> audit_demo_budget(0)
    Traceback (most recent call last):
    packing_theory.InputError: --scale must be in (0, 1], got 0
    """
    if not 0 < scale <= 1:
        raise InputError(f"--scale must be in (0, 1], got {scale}")
    rows = AUTORESEARCH_ROWS
    eval_targets = AUTORESEARCH_EVAL_TARGETS
    prefixes = DEFAULT_EVAL_PREFIXES
    if scale < 1:
        rows = max(1, int(rows * scale))
        eval_targets = max(2048, int(eval_targets * scale) // 2048 * 2048)
        prefixes = tuple(p for p in (max(1, int(p * scale)) for p in prefixes) if p <= eval_targets)
    return rows, eval_targets, prefixes


@dataclass(frozen=True, eq=False)
class AuditDemo:
    """The inputs of ``packing-theory audit --demo``: the streams, their labels and the budgets."""

    lengths: Int64Array
    eval_lengths: Int64Array
    corpus_label: str
    eval_label: str
    rows: int
    eval_targets: int
    eval_prefixes: tuple[int, ...]
    policies: tuple[str, ...] = DEMO_POLICIES
    scale: float = 1.0

    @property
    def evaluation(self) -> EvalStream:
        """The demo's evaluation stream and its budgets."""
        return EvalStream(self.eval_lengths, self.eval_targets, self.eval_prefixes, self.eval_label)

    def run(self, *, policies: Sequence[str] | None = None, settings: Settings | None = None,
            **kwargs: Any) -> AuditResult:
        """:func:`~packing_theory.orchestration.audit` of the demo at autoresearch's settings (R = 2049,
        B = 1000, refill 128) and :attr:`rows` (``kwargs`` go to it)."""
        return audit_corpus(self.lengths, list(policies if policies is not None else self.policies),
                     settings if settings is not None else Settings(capacity=2049),
                     horizon=kwargs.pop("horizon", Budget("rows", self.rows)), evaluation=self.evaluation,
                     label=self.corpus_label, **kwargs)


def audit_demo(scale: float = 1.0) -> AuditDemo:
    """The inputs of ``audit --demo``; ``scale < 1`` takes a prefix of both streams and scales the budgets."""
    rows, eval_targets, prefixes = audit_demo_budget(scale)
    train = default_lengths(seed=0)
    evals = default_lengths(seed=DEMO_EVAL_SEED)[:DEMO_EVAL_DOCUMENTS]
    if scale < 1:
        train = train[: max(1, int(train.size * scale))]
        evals = evals[: max(1, int(evals.size * scale))]
    return AuditDemo(train, evals, "default (calibrated synthetic, seed 0)",
                     f"default seed {DEMO_EVAL_SEED}, first {evals.size:,} documents", rows, eval_targets,
                     prefixes, scale=scale)


@dataclass(frozen=True, eq=False)
class CompareDemo:
    """The inputs of ``packing-theory compare --demo``: a corpus prefix, its label, the packers."""

    lengths: Int64Array
    label: str
    packers: tuple[str, ...]


def compare_demo(documents: int = COMPARE_DEMO_DOCUMENTS) -> CompareDemo:
    """The inputs of ``compare --demo``: the first ``documents`` of the default corpus, every packer.

    Raises:
        InputError: ``documents < 1``.
    """
    if isinstance(documents, bool) or not isinstance(documents, int) or documents < 1:
        raise InputError(f"--documents must be an integer >= 1, got {documents!r}")
    lengths = default_lengths(0)[:documents]
    return CompareDemo(lengths, f"default corpus (seed 0), first {lengths.size:,} documents",
                       tuple(default_packers()))
