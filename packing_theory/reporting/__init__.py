"""One report model and one way to write it: every report of the library goes through here.

Every result a command writes (audit, compare, evaluate, census,
contamination, reconcile, doctor) implements :class:`Report` (its headline,
JSON document, sections, plots and attachments; :mod:`~packing_theory.reporting.model`);
:func:`write_report` renders the Markdown and the self-contained page from the
same sections and writes every file through :class:`ReportWriter`: checked and
locked before the computation, staged, and swapped in as one unit with a
manifest (see :mod:`~packing_theory.reporting.writer`). Nothing here knows
what a particular report says.

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
``model``      :class:`Report` and its blocks (text, tables, stacked bars, plots)
``markdown``   a report as Markdown; number cells, escaping of user text
``page``       a report as one self-contained HTML page, the answer first
``publish``    :func:`write_report` and :func:`stage_report`
``glossary``   the terms a report uses, with the docs page defining each
=============  ===============================================================

Imports: the foundation only (``errors``); matplotlib and tqdm inside the
functions that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
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
    from .model import (
        Amount,
        Attachment,
        Bars,
        Column,
        Plot,
        PlotFile,
        Report,
        Section,
        Table,
        Text,
    )
    from .plotting import matplotlib_available, pyplot, require_matplotlib, save_figure
    from .progress import ProgressBar, progress_bar
    from .publish import stage_report, write_report
    from .verify import ReportCheck, verify_report
    from .writer import ReportFiles, ReportWriter, recover

__all__ = [
    "LOCK_NAME",
    "MANIFEST_SCHEMA",
    "PNG_CONFIG_KEY",
    "PNG_RUN_KEY",
    "REPORT_MANIFEST_NAME",
    "Amount",
    "Attachment",
    "Bars",
    "Column",
    "DirectoryLock",
    "Plot",
    "PlotFile",
    "ProgressBar",
    "Report",
    "ReportBusy",
    "ReportCheck",
    "ReportError",
    "ReportFiles",
    "ReportWriter",
    "Section",
    "Table",
    "Text",
    "config_hash",
    "matplotlib_available",
    "png_text",
    "progress_bar",
    "pyplot",
    "recover",
    "require_matplotlib",
    "save_figure",
    "stage_report",
    "verify_report",
    "write_report",
]

lazy_package(__name__, {
    ".files": ("ReportBusy", "ReportError"),
    ".lock": ("LOCK_NAME", "DirectoryLock"),
    ".manifest": ("MANIFEST_SCHEMA", "PNG_CONFIG_KEY", "PNG_RUN_KEY", "REPORT_MANIFEST_NAME", "config_hash",
                  "png_text"),
    ".model": ("Amount", "Attachment", "Bars", "Column", "Plot", "PlotFile", "Report", "Section", "Table",
               "Text"),
    ".plotting": ("matplotlib_available", "pyplot", "require_matplotlib", "save_figure"),
    ".progress": ("ProgressBar", "progress_bar"),
    ".publish": ("stage_report", "write_report"),
    ".verify": ("ReportCheck", "verify_report"),
    ".writer": ("ReportFiles", "ReportWriter", "recover"),
})
