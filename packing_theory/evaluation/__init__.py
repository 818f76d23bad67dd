"""Seed 000's evaluation protocol for any model: windows, census, BPB, paired bootstrap.

Job: score a model — any callable that keeps the :class:`NllFn` contract —
on source windows of a stratified population, with seed 000's conventions
(§4 "Evaluation populations" and "Uncertainty target", §5.5–5.8, §8), and
compare models with paired-source bootstrap intervals that say what they
are about. What this package may import: numpy, the engine
(:class:`~packing_theory.Packer` and its config), the corpus layer and the
audit layer (stratum lookup, :class:`~packing_theory.audit.Ledger` results,
:func:`~packing_theory.audit.evaluation_population`). Never the CLI, never
torch: the torch ``nll_fn`` lives in ``packing_theory.adapters.torch``.

=====================  =================================================================
module                 job
=====================  =================================================================
:mod:`.windows`        beginning, tail, natural-tail, prefix-region and census windows; padding
:mod:`.protocol`       :class:`NllFn`, the model interface
:mod:`.metrics`        :func:`score`; CE, perplexity, BPB, position bins, fingerprints
:mod:`.population`     strata, seeded sampling, duplicate exclusion, support statement
:mod:`.results`        tables by stratum, exact accounting, whole-source census
:mod:`.family`         contrasts, declared contrast families (pairs), dropped strata, Bonferroni level
:mod:`.bootstrap`      paired-source bootstrap, Bonferroni percentile intervals
:mod:`.natural`        the natural-context assay with its prefix-region control (§5.7)
:mod:`.ranking`        the prefix ranking check with its uniform-row-subset reference (§5.6)
:mod:`.published`      seed 000's published figures through the contrast and ranking code
:mod:`.ngram`          :class:`NGramModel`, the numpy reference model
:mod:`.synthetic`      token ids with a planted position effect for length-only corpora
:mod:`.demo`           the ``evaluate --demo`` pipeline
:mod:`.report`         JSON, Markdown and interval plots
=====================  =================================================================

>>> import numpy as np
>>> from packing_theory import evaluation as ev
>>> docs = [np.r_[0, np.arange(1, L) % 7 + 1] for L in (40, 90, 300, 700)]
>>> pop = ev.sample_population(docs, per_stratum=None, boundaries=(64, 512))
>>> spec = ev.WindowSpec(kinds=("beginning", "tail"), capacity=65)
>>> windows = pop.windows(spec)
>>> model = ev.NGramModel(vocab_size=8, order=2).fit([d for d in docs])
>>> s = ev.score(windows, model, np.r_[0, np.ones(7, dtype=int)], spec=spec, model="bigram")
>>> summary = ev.summarize_scores(pop, {"bigram": s}, np.r_[0, np.ones(7, dtype=int)])
>>> [a.ok for a in summary.accounting]
[True, True]
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .bootstrap import (
        BOOTSTRAP_TARGET,
        ContrastResult,
        Interval,
        ModelComparison,
        compare,
        percentile_interval,
    )
    from .family import (
        SEED_000_FAMILY_STRATA,
        Contrast,
        ContrastFamily,
        Dropped,
        bonferroni_quantiles,
        contrast_value,
        declare_family,
        family_from_dict,
        family_of_pairs,
        interaction_family,
        parse_pair,
        read_family,
    )
    from .metrics import (
        POSITION_BINS,
        Fingerprint,
        Metrics,
        WindowScores,
        bin_labels,
        fingerprint,
        score,
        validate_token_bytes,
    )
    from .natural import NATURAL_CONTEXTS, NaturalCell, NaturalContextAssay, natural_context_assay
    from .ngram import NGramModel
    from .population import (
        DEFAULT_PER_STRATUM,
        DEFAULT_SAMPLE_SEED,
        EVAL_BOUNDARIES,
        Population,
        SupportStatement,
        normalise_text,
        sample_population,
        support_statement,
        text_digest,
        token_hash,
    )
    from .protocol import NllFn
    from .published import PublishedCheck, reproduce
    from .ranking import (
        DEFAULT_SUBSETS,
        PAPER_PREFIXES,
        PrefixContrast,
        PrefixResult,
        RankingCheck,
        RowStatistics,
        rank,
        ranking_check,
        reversals,
        row_statistics,
    )
    from .results import (
        CENSUS_TARGET,
        WINDOW_TARGET,
        Accounting,
        CensusSummary,
        EvaluationSummary,
        account,
        census_summary,
        summarize_scores,
    )
    from .synthetic import LazyDocuments, PlantedProcess
    from .windows import (
        KINDS,
        NATURAL_KINDS,
        Window,
        WindowSpec,
        beginning_window,
        census_windows,
        check_census,
        natural_tail_window,
        pad_batch,
        prefix_region_window,
        source_windows,
        tail_window,
    )

__all__ = [
    "BOOTSTRAP_TARGET",
    "CENSUS_TARGET",
    "DEFAULT_PER_STRATUM",
    "DEFAULT_SAMPLE_SEED",
    "DEFAULT_SUBSETS",
    "EVAL_BOUNDARIES",
    "KINDS",
    "NATURAL_CONTEXTS",
    "NATURAL_KINDS",
    "PAPER_PREFIXES",
    "POSITION_BINS",
    "SEED_000_FAMILY_STRATA",
    "WINDOW_TARGET",
    "Accounting",
    "CensusSummary",
    "Contrast",
    "ContrastFamily",
    "ContrastResult",
    "Dropped",
    "EvaluationSummary",
    "Fingerprint",
    "Interval",
    "LazyDocuments",
    "Metrics",
    "ModelComparison",
    "NGramModel",
    "NaturalCell",
    "NaturalContextAssay",
    "NllFn",
    "PlantedProcess",
    "Population",
    "PrefixContrast",
    "PrefixResult",
    "PublishedCheck",
    "RankingCheck",
    "RowStatistics",
    "SupportStatement",
    "Window",
    "WindowScores",
    "WindowSpec",
    "account",
    "beginning_window",
    "bin_labels",
    "bonferroni_quantiles",
    "census_summary",
    "census_windows",
    "check_census",
    "compare",
    "contrast_value",
    "declare_family",
    "family_from_dict",
    "family_of_pairs",
    "fingerprint",
    "interaction_family",
    "natural_context_assay",
    "natural_tail_window",
    "normalise_text",
    "pad_batch",
    "parse_pair",
    "percentile_interval",
    "prefix_region_window",
    "rank",
    "ranking_check",
    "read_family",
    "reproduce",
    "reversals",
    "row_statistics",
    "sample_population",
    "score",
    "source_windows",
    "summarize_scores",
    "support_statement",
    "tail_window",
    "text_digest",
    "token_hash",
    "validate_token_bytes",
]

lazy_package(__name__, {
    ".bootstrap": ("BOOTSTRAP_TARGET", "ContrastResult", "Interval", "ModelComparison", "compare",
                   "percentile_interval"),
    ".family": ("SEED_000_FAMILY_STRATA", "Contrast", "ContrastFamily", "Dropped", "bonferroni_quantiles",
                "contrast_value", "declare_family", "family_from_dict", "family_of_pairs",
                "interaction_family", "parse_pair", "read_family"),
    ".metrics": ("POSITION_BINS", "Fingerprint", "Metrics", "WindowScores", "bin_labels", "fingerprint",
                 "score", "validate_token_bytes"),
    ".natural": ("NATURAL_CONTEXTS", "NaturalCell", "NaturalContextAssay", "natural_context_assay"),
    ".ngram": ("NGramModel",),
    ".population": ("DEFAULT_PER_STRATUM", "DEFAULT_SAMPLE_SEED", "EVAL_BOUNDARIES", "Population",
                    "SupportStatement", "normalise_text", "sample_population", "support_statement",
                    "text_digest", "token_hash"),
    ".protocol": ("NllFn",),
    ".published": ("PublishedCheck", "reproduce"),
    ".ranking": ("DEFAULT_SUBSETS", "PAPER_PREFIXES", "PrefixContrast", "PrefixResult", "RankingCheck",
                 "RowStatistics", "rank", "ranking_check", "reversals", "row_statistics"),
    ".results": ("CENSUS_TARGET", "WINDOW_TARGET", "Accounting", "CensusSummary", "EvaluationSummary",
                 "account", "census_summary", "summarize_scores"),
    ".synthetic": ("LazyDocuments", "PlantedProcess"),
    ".windows": ("KINDS", "NATURAL_KINDS", "Window", "WindowSpec", "beginning_window", "census_windows",
                 "check_census", "natural_tail_window", "pad_batch", "prefix_region_window",
                 "source_windows", "tail_window"),
})
