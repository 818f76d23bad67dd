"""Report infrastructure shared by every report-writing command: safe files, plots, progress, tables.

``audit``, ``compare``, ``evaluate`` and ``census`` write their reports through
:class:`ReportWriter`: checked and locked before the computation, staged, and
swapped in as one unit with a manifest (see :mod:`~packing_theory.reporting.writer`).
Nothing here knows what a report says; the documents themselves are rendered
by :mod:`packing_theory.rendering` and :mod:`packing_theory.evaluation.report`.

=============  ===============================================================
module         job
=============  ===============================================================
``files``      file operations that never follow a symlink; the report errors
``lock``       :class:`DirectoryLock`: one run at a time per directory
``manifest``   run ids, config hashes, the manifest, PNG text chunks
``journal``    the staged swap and its recovery after a SIGKILL
``writer``     :class:`ReportWriter` and :func:`recover`
``verify``     :func:`verify_report`: is a directory one complete run?
``plotting``   the one matplotlib loader (``Agg``), the palette, :func:`require_matplotlib`
``progress``   a progress bar (tqdm, only on a terminal)
``markdown``   number cells and Markdown tables
``html``       the self-contained ``report.html`` of any report document
``glossary``   the terms a report uses, with the docs page defining each
=============  ===============================================================

Imports: the foundation only (``errors``); matplotlib and tqdm inside the
functions that need them.
"""

from __future__ import annotations

from .files import ReportBusy, ReportError
from .lock import LOCK_NAME, DirectoryLock
from .manifest import (
    MANIFEST_SCHEMA,
    PNG_CONFIG_KEY,
    PNG_RUN_KEY,
    REPORT_MANIFEST_NAME,
    config_hash,
    png_text,
)
from .plotting import matplotlib_available, pyplot, require_matplotlib, save_figure
from .progress import ProgressBar, progress_bar
from .verify import ReportCheck, verify_report
from .writer import ReportFiles, ReportWriter, recover

__all__ = [
    "LOCK_NAME",
    "MANIFEST_SCHEMA",
    "PNG_CONFIG_KEY",
    "PNG_RUN_KEY",
    "REPORT_MANIFEST_NAME",
    "DirectoryLock",
    "ProgressBar",
    "ReportBusy",
    "ReportCheck",
    "ReportError",
    "ReportFiles",
    "ReportWriter",
    "config_hash",
    "matplotlib_available",
    "png_text",
    "progress_bar",
    "pyplot",
    "recover",
    "require_matplotlib",
    "save_figure",
    "verify_report",
]
