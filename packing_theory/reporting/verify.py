"""Check that a report directory holds one complete run: :func:`verify_report`.

>>> import tempfile, os
>>> verify_report(tempfile.mkdtemp()).problems
('no readable manifest',)
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .files import lstat_or_none, read_json, sha256_file
from .journal import staging_directories
from .manifest import PNG_RUN_KEY, REPORT_MANIFEST_NAME, manifest_files, png_text

__all__ = ["ReportCheck", "verify_report"]


@dataclass(frozen=True, slots=True)
class ReportCheck:
    """What :func:`verify_report` found: ``ok`` when ``problems`` is empty."""

    run_id: str | None
    config_hash: str | None
    files: tuple[str, ...]
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """One complete run: every listed file present, intact and carrying the run id."""
        return not self.problems


def verify_report(outdir: str | os.PathLike[str], *, names: Sequence[str] = ()) -> ReportCheck:
    """Check that ``outdir`` holds one complete run: the manifest, every file, the same run id in each.

    Files are checked by kind: ``.json`` must parse and hold ``run.id``;
    ``.md`` / ``.txt`` / ``.html`` must contain the run id; ``.png`` must be a
    complete PNG whose ``packing-theory run`` text chunk is the run id; data tables
    (``documents.csv``, ``.parquet``) stay plain data, tied to the run by their
    SHA-256 in the manifest. Files
    named in ``names`` but absent from the manifest (stale plots) are problems,
    and so is an interrupted run's staging directory. O(report bytes).
    """
    root = os.fspath(outdir)
    manifest = read_json(os.path.join(root, REPORT_MANIFEST_NAME))
    listed = manifest_files(manifest)
    if not listed or not isinstance(manifest, dict):
        return ReportCheck(None, None, (), ("no readable manifest",))
    run_id = str(manifest.get("run_id"))
    problems = []
    for name, digest in sorted(listed.items()):
        path = os.path.join(root, name)
        st = lstat_or_none(path)
        if st is None or not stat.S_ISREG(st.st_mode):
            problems.append(f"{name}: missing or not a regular file")
            continue
        if sha256_file(path)[0] != digest:
            problems.append(f"{name}: content differs from the manifest")
        problems += _run_id_problems(path, name, run_id)
    problems += [f"{n}: present but not part of run {run_id}" for n in names
                 if n not in listed and os.path.lexists(os.path.join(root, n))]
    problems += [f"{e}: an interrupted run's staging directory (run recover())"
                 for e in staging_directories(root)]
    return ReportCheck(run_id, str(manifest.get("config_hash")), tuple(sorted(listed)), tuple(problems))


def _run_id_problems(path: str, name: str, run_id: str) -> list[str]:
    try:
        if name.endswith(".json"):
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            found = (doc.get("run") or {}).get("id") if isinstance(doc, dict) else None
            return [] if found == run_id else [f"{name}: run id {found!r}, manifest {run_id!r}"]
        if name.endswith(".png"):
            found = png_text(path).get(PNG_RUN_KEY)
            return [] if found == run_id else [f"{name}: run id {found!r}, manifest {run_id!r}"]
        if name.endswith((".md", ".txt", ".html")):
            ok = run_id in Path(path).read_text(encoding="utf-8")
            return [] if ok else [f"{name}: does not mention run {run_id}"]
    except (OSError, ValueError, RecursionError) as exc:
        return [f"{name}: unreadable ({type(exc).__name__}: {exc})"]
    return []
