"""Orchestration: one corpus replayed by several packers, each stream fed to the consumers.

======================  ========================================================
module                  job
======================  ========================================================
``audit``               :func:`run_audit`: the audit of one corpus under
                        streaming policies and peers, startup spreads,
                        evaluation population (``packing-theory audit``)
``compare``             :func:`compare_packers`: every packer side by side for
                        one pass, with costs and invariant verdicts
                        (``packing-theory compare``)
``sources``             :func:`~packing_theory.orchestration.sources.audit_sources`:
                        per data source, each packer's accounting, the
                        realised mixture, its drift and the cleaning funnel
                        (``--labels`` ... ``--mixture`` / ``--funnel``)
``demo``                what ``--demo`` feeds each command
======================  ========================================================

This layer decides *what is replayed and fed to which consumer*; the
consumers are in :mod:`packing_theory.audit` (and
:mod:`packing_theory.invariant`), the documents of a result are rendered by
:mod:`packing_theory.rendering` and written by :mod:`packing_theory.reporting`.

Imports: audit, invariant, the registry, peers, corpus, engine and the foundation.
"""

from __future__ import annotations

from .audit import AUTORESEARCH_ROWS, AuditResult, CorpusSummary, audit_peer, corpus_summary, run_audit
from .compare import (
    PackerColumn,
    PackerComparison,
    compare_packers,
    default_packers,
    packer_verdict,
    shrunk_counterexample,
)
from .demo import (
    COMPARE_DEMO_DOCUMENTS,
    DEMO_EVAL_DOCUMENTS,
    DEMO_EVAL_SEED,
    DEMO_POLICIES,
    AuditDemo,
    CompareDemo,
    audit_demo,
    audit_demo_budget,
    compare_demo,
)

__all__ = [
    "AUTORESEARCH_ROWS",
    "COMPARE_DEMO_DOCUMENTS",
    "DEMO_EVAL_DOCUMENTS",
    "DEMO_EVAL_SEED",
    "DEMO_POLICIES",
    "AuditDemo",
    "AuditResult",
    "CompareDemo",
    "CorpusSummary",
    "PackerColumn",
    "PackerComparison",
    "audit_demo",
    "audit_demo_budget",
    "audit_peer",
    "compare_demo",
    "compare_packers",
    "corpus_summary",
    "default_packers",
    "packer_verdict",
    "run_audit",
    "shrunk_counterexample",
]
