"""The swap of a staged run into its report directory, and finishing one that a SIGKILL interrupted.

A run writes its files into a staging directory ``DIR/.packing-theory-staging-*``
(same file system). Its commit writes a journal there
(``.journal.json``: the new manifest and the previous run's files to remove,
each with the content it must still have), then :func:`apply_journal` renames
each staged file over its old version, removes the stale files and moves the
manifest in last. The journal makes the swap restartable: the next run (or
:func:`~packing_theory.reporting.writer.recover`) finds the staging directory
and either completes the swap (a journal) or discards it (no journal: the run
died before its commit).

A journal is a file in a directory anyone with write access can edit, so it
is **checked before anything is done**: every name must be a plain file name
(no directory part, not hidden), every staged file a regular file, and a
stale file is removed only if it still has the content (SHA-256, or symlink
target) recorded when the run opened the directory. A journal that fails a
check is discarded with its staging directory, and nothing is applied.

>>> journal_problem({"manifest": {"schema": "packing-theory/report-manifest", "files": {}},
...                  "stale": {"../victim": "00"}})
"stale entry '../victim' is not a plain file name"
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from typing import Any

from .files import fsync_dir, lstat_or_none, plain_name, read_json, sha256_file, write_new
from .manifest import MANIFEST_SCHEMA, REPORT_MANIFEST_NAME

__all__ = [
    "JOURNAL_NAME",
    "STAGING_PREFIX",
    "apply_journal",
    "entry_digest",
    "journal_problem",
    "make_staging",
    "recover_locked",
    "staging_directories",
    "write_journal",
]

STAGING_PREFIX = ".packing-theory-staging-"
"""Name prefix of a run's staging directory inside the report directory."""
JOURNAL_NAME = ".journal.json"
"""The journal's name inside a staging directory (written at commit)."""
_SYMLINK = "symlink:"


def make_staging(root: str) -> str:
    """A fresh, private staging directory inside ``root``."""
    return tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=root)


def staging_directories(root: str) -> list[str]:
    """Names of the staging directories in ``root`` (real directories only, sorted)."""
    out = []
    for entry in sorted(os.listdir(root)):
        st = lstat_or_none(os.path.join(root, entry))
        if entry.startswith(STAGING_PREFIX) and st is not None and stat.S_ISDIR(st.st_mode):
            out.append(entry)
    return out


def entry_digest(path: str) -> str:
    """What a directory entry holds, as a journal records it: a regular file's SHA-256, a symlink's
    ``"symlink:<target>"``, or ``""`` for anything else (which is then never removed)."""
    st = lstat_or_none(path)
    if st is None:
        return ""
    if stat.S_ISLNK(st.st_mode):
        return _SYMLINK + os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        return sha256_file(path)[0]
    return ""


def journal_problem(journal: Any) -> str | None:
    """Why ``journal`` must not be applied, or ``None`` when every name and record is acceptable."""
    if not isinstance(journal, dict):
        return "not a JSON object"
    manifest, stale = journal.get("manifest"), journal.get("stale")
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        return "no report manifest"
    files = manifest.get("files")
    if not isinstance(files, dict) or not isinstance(stale, dict):
        return "no file lists"
    for name, record in files.items():
        if not plain_name(name):
            return f"file entry {name!r} is not a plain file name"
        if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
            return f"file entry {name!r} has no SHA-256"
    for name, digest in stale.items():
        if not plain_name(name):
            return f"stale entry {name!r} is not a plain file name"
        if not isinstance(digest, str) or not digest:
            return f"stale entry {name!r} records no content"
    return None


def write_journal(staging: str, manifest: Mapping[str, Any], stale: Mapping[str, str]) -> dict[str, Any]:
    """Write the manifest (staged) and then the journal into ``staging``; return the journal.

    Everything that needs disk space is written here, before the swap: a full
    disk fails the commit with the previous report untouched.
    """
    journal = {"manifest": dict(manifest), "stale": dict(stale)}
    assert journal_problem(journal) is None, journal_problem(journal)  # the writer checked every name
    write_new(os.path.join(staging, REPORT_MANIFEST_NAME),
              (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    fsync_dir(staging)
    write_new(os.path.join(staging, JOURNAL_NAME), json.dumps(journal).encode("utf-8"))
    fsync_dir(staging)
    return journal


def apply_journal(root: str, staging: str, journal: Mapping[str, Any]) -> None:
    """Carry out a checked journal (idempotent: a second application finishes a first).

    Only renames inside ``root`` and unlinks of entries whose content is the
    recorded one; the staging directory is removed at the end.
    """
    manifest = journal["manifest"]
    files = manifest["files"]
    for name in files:
        src = os.path.join(staging, name)
        st = lstat_or_none(src)
        if st is not None and stat.S_ISREG(st.st_mode):  # gone already: moved by a first application
            os.replace(src, os.path.join(root, name))
    for name, digest in journal["stale"].items():
        path = os.path.join(root, name)
        if name not in files and digest and entry_digest(path) == digest:
            os.unlink(path)  # never follows: a symlink is removed itself
    tmp = os.path.join(staging, REPORT_MANIFEST_NAME)
    if lstat_or_none(tmp) is None:
        write_new(tmp, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    os.replace(tmp, os.path.join(root, REPORT_MANIFEST_NAME))
    fsync_dir(root)
    shutil.rmtree(staging, ignore_errors=True)


def recover_locked(root: str) -> list[str]:
    """Finish or discard every staging directory in ``root`` (the caller holds the lock); one line each."""
    done = []
    for entry in staging_directories(root):
        path = os.path.join(root, entry)
        journal = read_json(os.path.join(path, JOURNAL_NAME))
        if journal is None:
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"removed the staging directory of an interrupted run ({entry})")
            continue
        problem = journal_problem(journal)
        if problem is not None:
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"discarded {entry}: its journal is not valid ({problem}); nothing was applied")
            continue
        apply_journal(root, path, journal)
        done.append(f"completed the interrupted commit of run {journal['manifest'].get('run_id')}")
    return done
