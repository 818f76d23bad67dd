"""Write a report: every file of one :class:`~packing_theory.reporting.model.Report`, as one unit.

:func:`write_report` is the one way a report reaches the disk, from Python
and from every command alike: ``KIND.json`` (:meth:`Report.to_dict`),
``KIND.md`` and ``KIND.html`` (rendered from the same sections), the PNG
plots (with ``plots=True``; matplotlib, the ``plots`` extra) and the
attachments (the per-document table), through the locked, staged
:class:`~packing_theory.reporting.ReportWriter`. A command that must check its
output directory *before* it computes opens the writer first and calls
:func:`stage_report` once the report exists.

>>> import tempfile, os
>>> from packing_theory.reporting.model import Section, Text
>>> class R:
...     kind, title = "demo", "Demo"
...     def headline(self): return "3 rows."
...     def to_dict(self, run=None): return {"schema": "demo", "version": 1, "run": run}
...     def sections(self): return [Section("answer", "Answer", (Text("three"),), answer=True)]
...     def plots(self): return []
...     def attachments(self): return []
>>> d = os.path.join(tempfile.mkdtemp(), "rep")
>>> files = write_report(R(), d)
>>> sorted(os.listdir(d))
['.packing-theory-manifest.json', 'demo.html', 'demo.json', 'demo.md']
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputTypeError
from .markdown import render_markdown
from .model import Report
from .page import render_page
from .writer import ReportFiles, ReportWriter

__all__ = ["report_config", "report_file_names", "stage_report", "write_report"]


def report_config(report: Report) -> dict[str, Any]:
    """What determines a report, hashed into each of its files: its kind, ``settings``, inputs and horizon.

    The JSON document's ``settings`` entry (the packers' settings and the
    report's own options), its ``corpus`` entry's identity (label, size) and the
    horizon asked — never timings or run ids, so that two runs of one
    configuration, from Python or the command line, carry the same hash.
    """
    doc = report.to_dict(None)
    corpus = doc.get("corpus")
    ident = ({k: corpus.get(k) for k in ("label", "documents", "tokens")} if isinstance(corpus, Mapping)
             else corpus)
    horizon = doc.get("horizon")
    asked = ({k: horizon.get(k) for k in ("unit", "value", "rule")} if isinstance(horizon, Mapping)
             else horizon)
    return {"kind": report.kind, "settings": doc.get("settings"), "corpus": ident, "horizon": asked}


def report_file_names(report: Report) -> tuple[str, ...]:
    """Every file name a report of this kind may write: its JSON, Markdown, page, plots and attachments,
    and the names in its optional ``file_names`` attribute (attachments it writes only sometimes: a
    run without them removes the previous run's)."""
    k = report.kind
    extra = tuple(getattr(report, "file_names", ()))
    names = (f"{k}.html", f"{k}.json", f"{k}.md", *(p.name for p in report.plots()),
             *(a.name for a in report.attachments()), *extra)
    return tuple(dict.fromkeys(names))


def stage_report(writer: ReportWriter, report: Report, *, plots: bool = True,
                 config: Mapping[str, Any] | None = None) -> ReportFiles:
    """Stage every file of ``report`` in an open ``writer`` (the caller commits). Returns their paths.

    ``plots``: draw the PNG plots (each plot the report cannot draw is named,
    with the reason, in the Markdown and on the page). ``config`` (default
    :func:`report_config`) is hashed into every file.

    Raises:
        InputTypeError: ``report`` does not implement :class:`Report`.
        ImportError: ``plots=True`` without matplotlib.
    """
    if not isinstance(report, Report):
        raise InputTypeError(f"report must implement packing_theory.reporting.Report, got "
                             f"{type(report).__name__}")
    writer.set_config(report_config(report) if config is None else config)
    run = writer.run_info
    for a in report.attachments():
        a.write(writer.path(a.name), writer.run_id)
    shown: dict[str, bytes | str] = {}
    notes: dict[str, str | None] | None = None
    pngs: list[Path] = []
    if plots:
        notes = {}
        for p in report.plots():
            if p.draw is None:
                notes[p.name] = shown[p.name] = p.note or ""
                continue
            path = writer.path(p.name)
            p.draw(path, writer.png_metadata)
            pngs.append(path)
            notes[p.name] = None
            shown[p.name] = path.read_bytes()
    j = writer.write_json(f"{report.kind}.json", report.to_dict(run))
    md = writer.write_text(f"{report.kind}.md", render_markdown(report, run=run, plots=notes))
    page = writer.write_text(f"{report.kind}.html", render_page(
        report, run=run, plots=shown, docs_url=os.environ.get("PACKING_THEORY_DOCS_URL")))
    return ReportFiles(j, md, tuple(pngs), page)


def write_report(report: Report, out: str | os.PathLike[str], *, plots: bool = False, force: bool = False,
                 config: Mapping[str, Any] | None = None, tool: str | None = None) -> ReportFiles:
    """Write every file of ``report`` into the directory ``out`` as one unit; return their paths.

    ``config`` (default :func:`report_config`) is hashed into every file;
    ``force`` replaces report-named files this library did not
    write. ``tool``
    names the writer in the manifest (default ``packing-theory KIND``, as the
    command line).

    Raises:
        ReportError: see :meth:`~packing_theory.reporting.ReportWriter.open`.
        OSError: ``out`` cannot be created or written.
    """
    names = report_file_names(report)
    with ReportWriter(out, names=names, config={}, tool=tool or f"packing-theory {report.kind}",
                      force=force) as writer:
        files = stage_report(writer, report, plots=plots, config=config)
        writer.commit()
    root = Path(os.path.realpath(out))
    return ReportFiles(root / files.json.name, root / files.markdown.name,
                       tuple(root / p.name for p in files.plots),
                       None if files.html is None else root / files.html.name)
