"""Orchestration: ONE measurement — a corpus, a set of packers, one horizon, one set of consumers.

====================  ==============================================================
module                job
====================  ==============================================================
``corpus``            :class:`Corpus` and :func:`open_corpus`: the lengths, every
                      document's raw index, name and data source, the funnel, the
                      declared mixture
``settings``          :class:`Settings`: one row width or one sequence length, one
                      set of knobs for every packer
``measure``           :func:`measure`: every packer replayed to one horizon, one
                      :class:`PackerRun` each
``audit``             :func:`audit_corpus`: the measurement at autoresearch's budget
                      with startup spreads, the evaluation population, the data
                      sources and the per-document table (``packing-theory audit``)
``compare``           :func:`compare_corpus`: the measurement at the common token
                      horizon, ranked by what differs (``packing-theory compare``)
``sources``           the per-source consumers of a measurement (:class:`SourcePlan`)
``answer``            the decomposition of a packer's tokens, the sentences, the
                      ranking of what differs, the never-started documents
``audit_report``      what an audit says: headline, JSON, sections (with
                      ``audit_sections`` and ``audit_plots``)
``compare_report``    what a comparison says: headline, JSON, sections, plots
``verdicts``          a packer's invariant verdict (and shrunk counterexample)
``demo``              what ``--demo`` feeds each command
====================  ==============================================================

This layer decides *what is replayed and fed to which consumer*; the
consumers are in :mod:`packing_theory.audit` and
:mod:`packing_theory.invariant`, and every result is written by
:func:`packing_theory.reporting.write_report`.

Imports: distributed (the task runner), audit, invariant, the registry, peers, corpus, engine,
reporting and the foundation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .audit import AUDIT_FILES, AUTORESEARCH_ROWS, DOCUMENTS_FILES, AuditResult, EvalStream, audit_corpus
    from .compare import Comparison, compare_corpus, default_packers
    from .compare_report import COMPARE_FILES
    from .corpus import Corpus, CorpusSummary, corpus_summary, open_corpus
    from .demo import (
        COMPARE_DEMO_DOCUMENTS,
        DEMO_EVAL_DOCUMENTS,
        DEMO_EVAL_SEED,
        DEMO_POLICIES,
        PAPER_5_1,
        AuditDemo,
        CompareDemo,
        audit_demo,
        audit_demo_budget,
        compare_demo,
    )
    from .measure import HORIZON_RULES, Measurement, PackerRun, measure
    from .settings import DEFAULT_SEQ_LENGTH, Settings
    from .sources import SourcePlan, SourcesResult
    from .verdicts import packer_verdict, shrunk_counterexample

__all__ = [
    "AUDIT_FILES",
    "AUTORESEARCH_ROWS",
    "COMPARE_DEMO_DOCUMENTS",
    "COMPARE_FILES",
    "DEFAULT_SEQ_LENGTH",
    "DEMO_EVAL_DOCUMENTS",
    "DEMO_EVAL_SEED",
    "DEMO_POLICIES",
    "DOCUMENTS_FILES",
    "HORIZON_RULES",
    "PAPER_5_1",
    "AuditDemo",
    "AuditResult",
    "CompareDemo",
    "Comparison",
    "Corpus",
    "CorpusSummary",
    "EvalStream",
    "Measurement",
    "PackerRun",
    "Settings",
    "SourcePlan",
    "SourcesResult",
    "audit_corpus",
    "audit_demo",
    "audit_demo_budget",
    "compare_corpus",
    "compare_demo",
    "corpus_summary",
    "default_packers",
    "measure",
    "open_corpus",
    "packer_verdict",
    "shrunk_counterexample",
]

lazy_package(__name__, {
    ".audit": ("AUDIT_FILES", "AUTORESEARCH_ROWS", "DOCUMENTS_FILES", "AuditResult", "EvalStream",
               "audit_corpus"),
    ".compare": ("Comparison", "compare_corpus", "default_packers"),
    ".compare_report": ("COMPARE_FILES",),
    ".corpus": ("Corpus", "CorpusSummary", "corpus_summary", "open_corpus"),
    ".demo": ("COMPARE_DEMO_DOCUMENTS", "DEMO_EVAL_DOCUMENTS", "DEMO_EVAL_SEED", "DEMO_POLICIES",
              "PAPER_5_1", "AuditDemo", "CompareDemo", "audit_demo", "audit_demo_budget", "compare_demo"),
    ".measure": ("HORIZON_RULES", "Measurement", "PackerRun", "measure"),
    ".settings": ("DEFAULT_SEQ_LENGTH", "Settings"),
    ".sources": ("SourcePlan", "SourcesResult"),
    ".verdicts": ("packer_verdict", "shrunk_counterexample"),
})
