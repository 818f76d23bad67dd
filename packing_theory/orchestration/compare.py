"""Every packer side by side on one corpus, ranked by what differs between them.

:func:`compare` is :func:`~packing_theory.orchestration.measure.measure` of
every registered packer (or those asked) at the **common token horizon** by
default: every packer is cut once it has placed the most tokens that every
packer reaches (a first, light pass finds each packer's natural end). At that
horizon every packer that fills its rows trains the same tokens, so the
untrained *total* is equal by construction: it is stated once
(:func:`~packing_theory.orchestration.answer.equal_figures`) and never ranks
anything. What differs is which documents and sources those tokens come
from: :attr:`Comparison.ranking` ranks by the first quantity of
:data:`~packing_theory.orchestration.answer.RANKED` that is not equal for
every packer (documents with no token trained, tokens cut off, start delays,
prefix bias, distance from the declared mixture, unused row positions), packers
equal on it by the next quantity that differs among them, and the report shows
all of them.

The per-packer figures are the audit's: the same :class:`~packing_theory.orchestration.measure.PackerRun`
(``tests/orchestration/test_one_measurement.py`` checks every registered packer).

>>> from packing_theory.orchestration import Settings
>>> cmp = compare_corpus([3, 9, 2, 4, 10, 1] * 4, ["discard", "trl-bfd"],
...               Settings(capacity=8, min_buffer=2, refill=2))
>>> cmp.ranking.by.key, cmp.ranking.order
('untrained_documents', ('discard', 'trl-bfd'))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy.typing as npt

from ..engine.horizon import Budget
from ..registry import names
from .answer import Ranking, equal_figures, ranking
from .corpus import Corpus
from .measure import Measurement, measure
from .settings import Settings
from .sources import SourcePlan, SourcesResult, sources_result

__all__ = ["Comparison", "compare_corpus", "default_packers"]


def default_packers() -> list[str]:
    """Every packer of the registry: the streaming policies, then every registered peer."""
    return list(names())


@dataclass(frozen=True, eq=False)
class Comparison:
    """The result of :func:`compare`; a :class:`~packing_theory.reporting.Report` of kind ``compare``."""

    measurement: Measurement
    sources: SourcesResult | None = None
    corpus: Corpus | None = None

    kind = "compare"

    @property
    def title(self) -> str:
        """``Packer comparison — <corpus>``."""
        return f"Packer comparison — {self.measurement.corpus.label or 'corpus'}"

    @property
    def ranking(self) -> Ranking:
        """The packers ranked by the first quantity that differs between them, ties by the next."""
        return ranking(self.measurement.runs)

    @property
    def equal(self) -> dict[str, Any]:
        """What every packer shares at the horizon (stated once, never ranked)."""
        return equal_figures(self.measurement)

    def headline(self) -> str:
        """The horizon, what is equal (once), and the ranking's best and worst with their numbers."""
        from .compare_report import compare_headline

        return compare_headline(self)

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The ``compare.json`` document."""
        from .compare_report import compare_document

        return compare_document(self, run)

    def sections(self) -> Sequence[Any]:
        """What a person reads, the ranking first."""
        from .compare_report import compare_sections

        return compare_sections(self)

    def plots(self) -> Sequence[Any]:
        """The PNG plots."""
        from .compare_report import compare_plot_files

        return compare_plot_files(self)

    def attachments(self) -> Sequence[Any]:
        """None: the comparison's documents are in its JSON."""
        return []


def compare_corpus(
    corpus: Corpus | npt.ArrayLike,
    packers: Sequence[str] | None = None,
    settings: Settings | None = None,
    *,
    horizon: Budget | str = "common",
    mixture_blocks: int | None = None,
    drift_threshold: float | None = None,
    executor: object = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    label: str = "",
    resume: str | os.PathLike[str] | None = None,
) -> Comparison:
    """Every packer of ``packers`` (default: every registered packer) on ``corpus``, at one horizon.

    Args are those of :func:`~packing_theory.orchestration.audit.audit`; ``horizon`` defaults to
    ``"common"``; ``resume`` is :func:`~packing_theory.orchestration.measure.measure`'s (a directory
    that keeps the finished packers' runs, so that a rerun replays only the rest).

    Raises:
        InputError: see :func:`~packing_theory.orchestration.measure.measure`.
    """
    from .audit import _as_corpus, _source_plan

    c = _as_corpus(corpus, label)
    plan: SourcePlan | None = _source_plan(c, mixture_blocks, drift_threshold)
    chosen = list(packers) if packers is not None else default_packers()
    m = measure(
        c.lengths,
        chosen,
        settings,
        horizon=horizon,
        sources=plan,
        executor=executor,
        workers=workers,
        progress=progress,
        corpus_label=c.label,
        resume=resume,
    )
    m = replace(m, corpus=replace(m.corpus, read=c.described))  # how it was read, for the report
    return Comparison(m, None if plan is None else sources_result(plan, m.runs, m.refused), c)
