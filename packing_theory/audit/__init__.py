"""The source-inclusion audit: what a packer's event stream did to every source (seed 000 §5.1, §6).

Seed 000 §6 asks a practical audit to record four quantities separately:
token mass emitted / discarded / buffered, sources started, positions exposed
within each source, and the finite evaluation population.

=================  ===========================================================
module             job
=================  ===========================================================
``strata``         length strata (the one stratum lookup)
``results``        the reported value types (:class:`Aggregates` and its parts)
``ledger``         :class:`Ledger`: per-source accounting of any event stream
``table``          the ledger's compact per-occurrence columns and their reduction
``stream``         :class:`StreamLedger`: the summary in O(B + strata) memory
``startup``        startup delay over permutations
``population``     the finite evaluation population and its support statement
``documents``      the per-document table (one row per document offered) and its file
``untrained``      where a run stopped and what it never trained, in parts that reconcile
``explanations``   what happened to one document under one packer, and why
=================  ===========================================================

A whole audit (one corpus, several packers side by side) is
:func:`packing_theory.orchestration.audit`, written by
:func:`packing_theory.reporting.write_report`.

Imports: the engine, the invariant layer, peers, corpus and the foundation;
never the layers above.

>>> from packing_theory import Packer, feed_all
>>> packer = Packer(capacity=8, min_buffer=2, refill=2, exhausted="drain")
>>> (agg,) = feed_all(packer.stream([5, 3, 9, 4]), Ledger.for_packer(packer))
>>> agg.mass.emitted_tokens, agg.mass.discarded_tokens, agg.mass.identity_holds
(16, 5, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .documents import DocumentRows, DocumentTable, document_table, write_documents
    from .explanations import Explanation, explain
    from .ledger import Ledger, audit_events, audit_lengths
    from .population import (
        AUTORESEARCH_EVAL_TARGETS,
        DEFAULT_EVAL_PREFIXES,
        EvalPopulation,
        EvalPrefix,
        evaluation_population,
    )
    from .results import (
        Aggregates,
        CoverageRow,
        EmittedInterval,
        ExposureProfile,
        MassPartition,
        ProtectedMass,
        SeriesSample,
        SourceRecord,
        StratumRow,
    )
    from .startup import StartupSpread, startup_delays
    from .strata import EVALUATION_BOUNDARIES, STRATA_BOUNDARIES, stratum_index, stratum_labels
    from .stream import StreamLedger, StreamResult
    from .untrained import HorizonStatement, NeverTrained, horizon_statement, never_trained

__all__ = [
    "AUTORESEARCH_EVAL_TARGETS",
    "DEFAULT_EVAL_PREFIXES",
    "EVALUATION_BOUNDARIES",
    "STRATA_BOUNDARIES",
    "Aggregates",
    "CoverageRow",
    "DocumentRows",
    "DocumentTable",
    "EmittedInterval",
    "EvalPopulation",
    "EvalPrefix",
    "Explanation",
    "ExposureProfile",
    "HorizonStatement",
    "Ledger",
    "MassPartition",
    "NeverTrained",
    "ProtectedMass",
    "SeriesSample",
    "SourceRecord",
    "StartupSpread",
    "StratumRow",
    "StreamLedger",
    "StreamResult",
    "audit_events",
    "audit_lengths",
    "document_table",
    "evaluation_population",
    "explain",
    "horizon_statement",
    "never_trained",
    "startup_delays",
    "stratum_index",
    "stratum_labels",
    "write_documents",
]

lazy_package(__name__, {
    ".documents": ("DocumentRows", "DocumentTable", "document_table", "write_documents"),
    ".explanations": ("Explanation", "explain"),
    ".ledger": ("Ledger", "audit_events", "audit_lengths"),
    ".population": ("AUTORESEARCH_EVAL_TARGETS", "DEFAULT_EVAL_PREFIXES", "EvalPopulation", "EvalPrefix",
                    "evaluation_population"),
    ".results": ("Aggregates", "CoverageRow", "EmittedInterval", "ExposureProfile", "MassPartition",
                 "ProtectedMass", "SeriesSample", "SourceRecord", "StratumRow"),
    ".startup": ("StartupSpread", "startup_delays"),
    ".strata": ("EVALUATION_BOUNDARIES", "STRATA_BOUNDARIES", "stratum_index", "stratum_labels"),
    ".stream": ("StreamLedger", "StreamResult"),
    ".untrained": ("HorizonStatement", "NeverTrained", "horizon_statement", "never_trained"),
})
