"""The natural-context assay with its prefix-region control (seed 000 §5.7).

Job: score the final ``K`` targets of the long sources with ``C`` natural
preceding tokens (no synthetic BOS) for each input context ``C`` (1,024 and
2,048 in the paper), score the *prefix-region control* — the ``K`` targets
at source positions ``C − K + 1 .. C`` of the same sources, with the same
preceding-token counts — and report, per pair of checkpoints and per
stratum, the natural-tail delta and the tail-minus-prefix interaction
computed **against the control**. Imports: this package's bootstrap,
family, metrics, population and windows modules.

What the paper specifies, and what this module does
---------------------------------------------------
* *Sources*: the previously selected long sources, from the three strata
  above 4,096 tokens only (256, 120 and 37 sources in §5.7): natural windows
  are cut from sources with ``L > spec.natural_threshold()``, 4,096 at
  ``R = 2049``; the 2050–4096 stratum gets none.
* *Intervals*: nominal paired-source intervals (95 %), exploratory — §5.7's
  intervals are "not the original multiplicity-adjusted confirmation
  intervals" — so every cell here is exploratory, none is a declared family.
* *The full-window diagnostic* (natural tail minus the complete
  ``R − 1``-target beginning window, the §5.5 definition of "prefix") is
  reported beside the control when ``full_window=True``, labelled as such:
  §5.7 warns that, with the different prefix target definition, "its signs
  must not be copied from the earlier complete-prefix-window diagnostic".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..reporting.model import Block, Column, Section, Table, Text
from .bootstrap import ContrastResult, ModelComparison, compare
from .family import ContrastFamily, Dropped
from .metrics import WindowScores, score, validate_token_bytes
from .population import Population
from .protocol import NllFn
from .windows import WindowSpec

__all__ = [
    "NATURAL_CONTEXTS",
    "NATURAL_TARGET",
    "NaturalCell",
    "NaturalContextAssay",
    "natural_blocks",
    "natural_context_assay",
]

NATURAL_CONTEXTS: tuple[int, ...] = (1024, 2048)
"""Seed 000 §5.7's input contexts: 1,024 and 2,048 natural preceding tokens."""

NATURAL_TARGET = (
    "Natural-context assay: the same final targets of each long source scored with natural preceding "
    "context (no synthetic BOS), against a prefix-region control of the same size and context near the "
    "start of the source. Intervals are nominal paired-source intervals, exploratory and conditional on the "
    "checkpoints; the interaction subtracts the prefix-region control's delta, and its sign must not be "
    "read from the full-window diagnostic, which subtracts the complete beginning window instead."
)
"""What the natural-context results are, in words (seed 000 §5.7)."""


@dataclass(frozen=True, slots=True)
class NaturalCell:
    """One checkpoint pair in one stratum at one context.

    Attributes:
        context: ``C``.
        model, baseline: the pair (``model − baseline``).
        stratum: the stratum label.
        tail: the natural-tail delta.
        prefix_region: the prefix-region control's delta.
        interaction: tail minus prefix-region (the §5.7 interaction).
        full_window: tail minus the complete beginning window (the earlier
            diagnostic), when beginning windows were scored.
    """

    context: int
    model: str
    baseline: str
    stratum: str
    tail: ContrastResult
    prefix_region: ContrastResult
    interaction: ContrastResult
    full_window: ContrastResult | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"context": self.context, "model": self.model, "baseline": self.baseline,
                "stratum": self.stratum, "sources": self.tail.sources, "tail": self.tail.to_dict(),
                "prefix_region": self.prefix_region.to_dict(), "interaction": self.interaction.to_dict(),
                "full_window": None if self.full_window is None else self.full_window.to_dict()}


@dataclass(frozen=True)
class NaturalContextAssay:
    """Every context's windows, scores and comparison, and the cells of each pair and stratum."""

    contexts: tuple[int, ...]
    specs: tuple[WindowSpec, ...]
    scores: tuple[dict[str, WindowScores], ...]
    comparisons: tuple[ModelComparison, ...]
    cells: tuple[NaturalCell, ...]
    dropped: tuple[Dropped, ...] = ()
    statement: str = NATURAL_TARGET

    def cell(self, context: int, model: str, stratum: str, baseline: str | None = None) -> NaturalCell:
        """The cell of ``model`` (against ``baseline``, any when ``None``) in ``stratum`` at ``context``."""
        for c in self.cells:
            same_pair = baseline in (None, c.baseline)
            if (c.context, c.model, c.stratum) == (context, model, stratum) and same_pair:
                return c
        raise KeyError(f"no natural-context cell ({context}, {model!r}, {stratum!r})")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"contexts": list(self.contexts), "windows": [s.to_dict() for s in self.specs],
                "fingerprints": [next(iter(s.values())).fingerprint.to_dict() for s in self.scores],
                "cells": [c.to_dict() for c in self.cells], "dropped": [d.to_dict() for d in self.dropped],
                "statement": self.statement}


def natural_context_assay(
    population: Population,
    models: Mapping[str, NllFn | Callable[..., Any]],
    token_bytes: Any,
    *,
    baseline: str,
    pairs: Sequence[tuple[str, str]] = (),
    contexts: Sequence[int] = NATURAL_CONTEXTS,
    targets: int = 512,
    capacity: int = 2049,
    natural_above: int | None = None,
    full_window: bool = True,
    replicates: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    batch_size: int = 16,
    scored: Mapping[int, Mapping[str, WindowScores]] | None = None,
) -> NaturalContextAssay:
    """Score and compare the natural tails and their prefix-region control at every context.

    Args:
        population: the sampled sources (natural windows come from those longer
            than the spec's threshold).
        models: name -> ``NllFn`` (two or more); unused for a context in ``scored``.
        token_bytes: byte length of every token id.
        baseline: the reference model when ``pairs`` is empty.
        pairs: ``(model, baseline)`` pairs (default: every model against ``baseline``).
        contexts: the input contexts ``C`` (1,024 and 2,048).
        targets: ``K`` (512).
        capacity: ``R`` of the beginning window of the full-window diagnostic (2049).
        natural_above: the length threshold (default ``2 (R − 1)``).
        full_window: also score beginning windows and report the full-window diagnostic.
        replicates, seed, level: the paired-source bootstrap (nominal intervals).
        batch_size: windows per model call.
        scored: precomputed scores per context (``score`` of ``population.windows(spec)``
            restricted to the natural sources), e.g. from a remote run.

    Raises:
        ValueError: no source longer than the threshold, fewer than two
            models, or any error of the windows, the scoring or the bootstrap.
    """
    if len(models) < 2 and not scored:
        raise InputError(f"the natural-context assay needs at least two models, got {list(models)}")
    tb = validate_token_bytes(token_bytes)
    kinds: tuple[str, ...] = ("natural-tail", "prefix-region")
    if full_window:
        kinds = ("beginning", *kinds)
    specs, all_scores, comparisons, cells = [], [], [], []
    for C in contexts:
        spec = WindowSpec(kinds=kinds, capacity=capacity, natural_targets=targets, context=C,
                          natural_above=natural_above)
        threshold = max(spec.capacity, spec.natural_threshold())
        windows = [w for w in population.windows(spec) if int(population.lengths[w.source]) > threshold]
        if not windows:
            raise InputError(f"no population source is longer than {threshold} tokens: the natural-context "
                             f"assay has nothing to score")
        if scored is not None and C in scored:
            sc = dict(scored[C])
        else:
            sc = {name: score(windows, fn, tb, model=name, spec=spec, batch_size=batch_size)
                  for name, fn in models.items()}
        cmp = compare(population, sc, baseline=baseline, family=ContrastFamily((), tuple(pairs)),
                      replicates=replicates, seed=seed, level=level)
        specs.append(spec)
        all_scores.append(sc)
        comparisons.append(cmp)
        cells.extend(_cells(int(C), cmp))
    return NaturalContextAssay(tuple(int(c) for c in contexts), tuple(specs), tuple(all_scores),
                               tuple(comparisons), tuple(cells), _dropped(population, specs[0]))


def _dropped(population: Population, spec: WindowSpec) -> tuple[Dropped, ...]:
    """Strata with natural windows that yield no cell: some sources too short, or fewer than 2 sources."""
    threshold = max(spec.capacity, spec.natural_threshold())
    out: list[Dropped] = []
    for k, label in enumerate(population.labels):
        lengths = population.lengths[population.strata == k]
        n_long = int((lengths > threshold).sum())
        if n_long == 0:
            continue
        if n_long < lengths.size:
            out.append(Dropped("stratum", label, f"only {n_long} of its {lengths.size} sources are longer "
                                                 f"than {threshold} tokens (natural windows are not paired)"))
        elif n_long < 2:
            out.append(Dropped("stratum", label, f"{n_long} source longer than {threshold} tokens; a paired "
                                                 f"bootstrap interval needs at least 2"))
    return tuple(out)


def _cells(context: int, cmp: ModelComparison) -> list[NaturalCell]:
    by = {(r.contrast.model, r.baseline, r.contrast.stratum, r.contrast.kind, r.contrast.minus): r
          for r in cmp.exploratory}
    out: list[NaturalCell] = []
    for model, base in cmp.pairs:
        for stratum in dict.fromkeys(r.contrast.stratum for r in cmp.exploratory):
            tail = by.get((model, base, stratum, "natural-tail", None))
            inter = by.get((model, base, stratum, "natural-tail", "prefix-region"))
            if tail is None or inter is None:
                continue
            out.append(NaturalCell(context, model, base, stratum, tail,
                                   by[(model, base, stratum, "prefix-region", None)], inter,
                                   by.get((model, base, stratum, "natural-tail", "beginning"))))
    return out


def natural_blocks(assay: NaturalContextAssay) -> Section:
    """The assay as a report section (the evaluation report's *Natural preceding context*)."""
    cols = (Column("context", "count"), Column("stratum", term="length stratum"), Column("sources", "count"),
            Column("contrast"), Column("natural tail Δ [interval]"), Column("prefix region Δ", "delta"),
            Column("tail − prefix region [interval]"), Column("full-window diagnostic", "delta"))
    rows = tuple((c.context, c.stratum, c.tail.sources, f"{c.model} − {c.baseline}", _ci(c.tail),
                  c.prefix_region.estimate, _ci(c.interaction),
                  None if c.full_window is None else c.full_window.estimate) for c in assay.cells)
    blocks: list[Block] = [Text(assay.statement), Table("Natural context and the prefix-region control", cols,
                                                        rows, key="natural")]
    blocks += [Text(f"Dropped {d.what} {d.name}: {d.reason}") for d in assay.dropped]
    return Section("natural", "Natural preceding context and the prefix-region control", tuple(blocks),
                   collapsed=True)


def _ci(r: ContrastResult) -> str:
    return f"{r.estimate:+.6f} [{r.interval.lo:+.6f}, {r.interval.hi:+.6f}]"
