"""Rendering: the documents of an audit and of a comparison (JSON, Markdown, PNG).

=================  ============================================================
module             job
=================  ============================================================
``audit``          ``audit.json`` (schema ``packing-theory/audit`` v2) and
                   ``audit.md`` of an :class:`~packing_theory.orchestration.AuditResult`;
                   :func:`write_report`
``audit_plots``    the audit's four PNG plots
``compare``        ``compare.json`` (``packing-theory/compare`` v2),
                   ``compare.md`` and the PNGs of a
                   :class:`~packing_theory.orchestration.PackerComparison`
=================  ============================================================

A renderer turns a finished result into the bytes of a document and stages
them in an open :class:`~packing_theory.reporting.ReportWriter`; it never
replays anything and never writes outside the writer. The evaluation
report is rendered by :mod:`packing_theory.evaluation.report` in the same way.

Imports: orchestration (the result types), audit, reporting and the foundation.
"""

from __future__ import annotations

from .audit import (
    PAPER_5_1,
    POLICY_KEYS,
    REPORT_FILES,
    SCHEMA,
    SCHEMA_VERSION,
    TOP_LEVEL_KEYS,
    render_markdown,
    report_dict,
    write_report,
    write_report_files,
)
from .audit_plots import PLOT_FILES

__all__ = [
    "PAPER_5_1",
    "PLOT_FILES",
    "POLICY_KEYS",
    "REPORT_FILES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TOP_LEVEL_KEYS",
    "render_markdown",
    "report_dict",
    "write_report",
    "write_report_files",
]
