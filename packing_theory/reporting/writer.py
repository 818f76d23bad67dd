"""Reports written safely: one run's files appear together, or not at all.

:class:`ReportWriter` is the one way a command writes a report directory
(``audit``, ``compare``, ``evaluate``, ``census``).

* **Validated first.** :meth:`ReportWriter.open` runs *before* the computation:
  it refuses an empty path, creates the directory if needed, takes the lock,
  finishes or discards an earlier interrupted run, and refuses files the tool
  did not write — all before any work is done.
* **A lock.** ``DIR/.packing-theory.lock`` (:mod:`~packing_theory.reporting.lock`)
  is held from :meth:`~ReportWriter.open` to the end; a second run into the
  same directory fails at once, naming the run that holds it. The lock file
  is removed when the run ends; the kernel releases the lock of a killed
  process, so a killed run never blocks the next one.
* **Staged, then swapped.** Every file is written into a fresh staging
  directory inside ``DIR`` (same file system). :meth:`~ReportWriter.commit`
  writes the manifest and a journal there, then renames each file over its
  old version (``os.replace``: atomic per file, and a symlink named like a
  report file is replaced, never followed), removes the previous run's files
  that this run did not write (stale plots), and moves the manifest in last
  (:mod:`~packing_theory.reporting.journal`). SIGINT, SIGTERM and SIGHUP are
  held back during those renames, so an interrupt leaves either the previous
  complete report or the new one. A full disk fails before the first rename.
  After a SIGKILL in that window, the next :meth:`~ReportWriter.open` (or
  :func:`recover`) completes the swap from the journal; an interrupt before
  it discards the staging directory.
* **One unit.** Every run has a :attr:`~ReportWriter.run_id` and a
  :attr:`~ReportWriter.config_hash`; producers put both into every file (the
  JSON's ``run`` entry, the Markdown's last line, the PNGs' text chunks), and
  ``DIR/.packing-theory-manifest.json`` lists each file with its SHA-256
  (:mod:`~packing_theory.reporting.manifest`);
  :func:`~packing_theory.reporting.verify.verify_report` checks a directory
  is one complete run.
* **Not yours, not replaced.** A report-named file that the manifest does not
  list with its current content (the user's own ``audit.md``, a symlink, an
  edited report) is refused unless ``force=True``.
* **Apart from the inputs.** Given the run's ``inputs`` (the paths the user
  named: files and directories), :meth:`~ReportWriter.open` refuses, with or
  without ``force``, a report directory inside (or equal to) an input
  directory — the next run would read the report as input — and an input that
  is one of the report's own files (``--force`` would overwrite it): see
  :func:`inputs_problem`.

>>> import tempfile, os
>>> from packing_theory.reporting import verify_report
>>> d = os.path.join(tempfile.mkdtemp(), "rep")
>>> with ReportWriter(d, names=["a.txt"], config={"k": 1}) as w:
...     _ = w.write_text("a.txt", f"run {w.run_id}\\n")
...     _ = w.commit()
>>> verify_report(d).ok, sorted(os.listdir(d))
(True, ['.packing-theory-manifest.json', 'a.txt'])
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import InputError
from .files import (
    ReportError,
    lstat_or_none,
    plain_name,
    read_json,
    sha256_file,
    signals_held,
    stat_or_none,
    write_new,
)
from .journal import apply_journal, entry_digest, make_staging, recover_locked, write_journal
from .lock import DirectoryLock
from .manifest import (
    PNG_CONFIG_KEY,
    PNG_RUN_KEY,
    REPORT_MANIFEST_NAME,
    config_hash,
    manifest_document,
    manifest_files,
    new_run_id,
)
from .markdown import run_line

__all__ = ["ReportFiles", "ReportWriter", "inputs_problem", "recover", "summary_line"]


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def inputs_problem(outdir: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]],
                   names: Iterable[str], owned: Iterable[str] = ()) -> str | None:
    """Why a report written to ``outdir`` would mix with the run's ``inputs`` (``None``: it would not).

    The one rule of every report-writing command: the report directory is not
    inside (or equal to) an input directory, and no input is one of the
    report's files (``names``) or lies in one of its own subdirectories
    (``owned``, e.g. a census's ``parts``; the staging directories always).
    Paths are compared resolved (symlinks followed) and report files also by
    identity (a hard link is the same file). O(inputs + names) ``stat`` calls.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> inputs_problem(os.path.join(d, "report"), [d], ["census.json"])  # doctest: +ELLIPSIS
    "the report directory '.../report' is inside the input directory '...': ..."
    >>> inputs_problem(os.path.join(d, "report"), [os.path.join(d, "a.txt")], ["census.json"]) is None
    True
    """
    out = os.path.realpath(outdir)
    shown = os.fspath(outdir)
    listed = set(names)
    kept = set(owned)
    mine = {}
    for name in listed:
        st = stat_or_none(os.path.join(out, name))
        if st is not None:
            mine[(st.st_dev, st.st_ino)] = name
    for given in inputs:
        path = os.fspath(given)
        real = os.path.realpath(path)
        if os.path.isdir(real):
            if _within(out, real):
                where = "is the input directory" if out == real else "is inside the input directory"
                return (f"the report directory {shown!r} {where} {path!r}: the next run would read the "
                        "report as input; choose an --out outside the inputs")
            continue
        st = stat_or_none(real)
        same = None if st is None else mine.get((st.st_dev, st.st_ino))
        top = os.path.relpath(real, out).split(os.sep)[0] if _within(real, out) else None
        if same is None and top is not None and (top in listed | kept or top.startswith(".packing-theory")):
            same = top
        if same is not None:
            return (f"the input {path!r} is the report's own {same} in {shown!r}: a report never reads "
                    "its own files, and --force would overwrite it; choose another --out")
    return None


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """The paths of a report's files staged in (or written through) a :class:`ReportWriter`.

    Every report-writing command returns one: ``plots`` is empty when the
    plots were skipped.
    """

    json: Path
    markdown: Path
    plots: tuple[Path, ...]
    html: Path | None = None


class ReportWriter:
    """Write one run's report files into ``outdir`` as a unit (see the module docstring).

    Args:
        outdir: the report directory (created if missing, with its parents).
        names: the file names a report of this kind may contain (e.g.
            ``audit.json``, ``audit.md`` and the plot names). Files with these
            names that this tool wrote and that a run does not rewrite are
            removed at commit (stale plots).
        config: the settings that determine the report; hashed into
            :attr:`config_hash`.
        tool: the writing command, recorded in the manifest.
        force: replace report-named files this tool did not write.
        inputs: the paths the run reads (files and directories, as named); checked by
            :func:`inputs_problem` when the directory is opened, ``force`` or not.
        owned: subdirectories of ``outdir`` the command keeps (a census's ``parts``), never inputs.

    Raises:
        ReportError: ``outdir`` is empty or holds a NUL byte, or a name is not
            a plain file name.

    Use as a context manager (``open`` on entry; on exit the staging
    directory is removed and the lock released, committed or not), or call
    :meth:`open` / :meth:`close` yourself.
    """

    def __init__(
        self,
        outdir: str | os.PathLike[str],
        *,
        names: Iterable[str],
        config: Mapping[str, Any],
        tool: str = "packing-theory",
        force: bool = False,
        inputs: Iterable[str | os.PathLike[str]] = (),
        owned: Iterable[str] = (),
    ) -> None:
        self.names: tuple[str, ...] = tuple(names)
        for name in self.names:
            if not plain_name(name):
                raise InputError(f"report file names must be plain names, got {name!r}")
        self.outdir = os.fspath(outdir)
        if not self.outdir or "\x00" in self.outdir:
            raise ReportError("report directory must be a non-empty path without NUL bytes, "
                              f"got {self.outdir!r}")
        self.tool = str(tool)
        self.force = bool(force)
        self.inputs: tuple[str, ...] = tuple(os.fspath(p) for p in inputs)
        self.owned: tuple[str, ...] = tuple(owned)
        self.config = dict(config)
        self.config_hash = config_hash(self.config)
        self.run_id = new_run_id()
        self.staging: str | None = None
        self.committed: tuple[Path, ...] | None = None
        self._root: str | None = None
        self._lock: DirectoryLock | None = None
        self._created = False
        self._journal = False  # written: from then on the staging directory belongs to recovery
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._owned: dict[str, str] = {}
        self.recovered: list[str] = []
        """What :meth:`open` did about earlier interrupted runs (see :func:`recover`)."""

    def set_config(self, config: Mapping[str, Any]) -> None:
        """Replace the configuration hashed into every file (before any file is written).

        A command opens its writer before it computes (so that a bad ``--out``
        fails at once); the report's own configuration document is known only
        once the result exists. :func:`~packing_theory.reporting.stage_report`
        sets it, so a report written from Python and by the command line carries
        the same hash.

        Raises:
            ReportError: a file was already staged under the previous hash.
        """
        new = config_hash(dict(config))
        if new == self.config_hash:
            return
        if self.staging is not None and any(os.scandir(self.staging)):
            raise ReportError("set_config after files were staged: they carry the previous config hash")
        self.config = dict(config)
        self.config_hash = new

    @property
    def png_metadata(self) -> dict[str, str]:
        """The PNG text chunks that tie a plot to this run (pass to ``savefig(metadata=...)``)."""
        return {PNG_RUN_KEY: self.run_id, PNG_CONFIG_KEY: self.config_hash}

    @property
    def run_info(self) -> dict[str, str]:
        """The ``"run"`` entry of the JSON files this writer writes: run id, config hash, tool."""
        return {"id": self.run_id, "config_hash": self.config_hash, "tool": self.tool}

    @property
    def run_line(self) -> str:
        """The Markdown line naming the run (:func:`~packing_theory.reporting.markdown.run_line`)."""
        return run_line(self.run_info)

    # ------------------------------------------------------------------ open / close

    def __enter__(self) -> ReportWriter:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> ReportWriter:
        """Validate the directory, take the lock, finish or discard an interrupted run, check ownership.

        Raises:
            ReportError: ``outdir`` is not a usable directory, or holds report-named
                files this tool did not write (without ``force``), or a directory
                where a report file goes.
            ReportBusy: another run holds the lock.
        """
        if self._root is not None:
            return self
        out = self.outdir
        problem = inputs_problem(out, self.inputs, self.names, self.owned)
        if problem is not None:
            raise ReportError(problem)
        st = lstat_or_none(out)
        if st is not None and stat.S_ISLNK(st.st_mode):
            st = stat_or_none(out)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            raise ReportError(f"report directory {out!r} exists and is not a directory")
        if st is None:
            try:
                os.makedirs(out)
            except FileExistsError:
                pass
            except OSError as exc:
                raise ReportError(f"report directory {out!r} cannot be created: "
                                  f"{exc.strerror or exc}") from exc
            else:
                self._created = True
        root = os.path.realpath(out)
        lock = DirectoryLock(root, shown=out)
        lock.acquire(f"pid {os.getpid()}, run {self.run_id}")
        try:
            self._root = root
            self.recovered = recover_locked(root)
            self._check_ownership(root)
            self.staging = make_staging(root)
        except BaseException:
            self._root = None
            lock.release()
            raise
        self._lock = lock
        return self

    def close(self) -> None:
        """Remove the staging directory (an uncommitted run leaves nothing) and release the lock."""
        root = self._root
        if root is None:
            return
        try:
            if self.staging is not None and not self._journal:
                shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        finally:
            self._root = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None
        if self._created and self.committed is None:
            with contextlib.suppress(OSError):
                os.rmdir(root)  # only if empty: a directory this run created for nothing

    def _check_ownership(self, root: str) -> None:
        manifest = read_json(os.path.join(root, REPORT_MANIFEST_NAME))
        listed = manifest_files(manifest)
        foreign = sorted(n for n in listed if n not in self.names)
        if foreign and self.names and not self.force:  # recover() (no names) takes any report
            tool = manifest.get("tool") if isinstance(manifest, dict) else None
            raise ReportError(f"report directory {self.outdir!r} holds another kind of report "
                              f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}, written by "
                              f"{tool or 'packing-theory'}); choose another directory, or pass --force")
        for name in self.names:
            path = os.path.join(root, name)
            st = lstat_or_none(path)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                raise ReportError(f"report directory {self.outdir!r}: {name} is a directory; remove it or "
                                  "choose another directory")
            self._seen[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
            mine = stat.S_ISREG(st.st_mode) and name in listed and sha256_file(path)[0] == listed[name]
            if mine:
                self._owned[name] = listed[name]
            elif not self.force:
                what = ("a symlink" if stat.S_ISLNK(st.st_mode) else "changed since packing-theory wrote it"
                        if name in listed else "not written by packing-theory")
                raise ReportError(f"report directory {self.outdir!r}: {name} exists and is {what}; pass "
                                  "--force to replace it, or choose another directory")
            elif digest := entry_digest(path):
                self._owned[name] = digest  # --force: replaced, or removed as stale if it still holds this

    # ------------------------------------------------------------------ writing

    def path(self, name: str) -> Path:
        """Where to write report file ``name`` in the staging directory (e.g. for ``savefig``)."""
        if self.staging is None or self._journal:
            raise InputError("open() the writer before writing files (and write before commit())")
        if name not in self.names:
            raise InputError(f"{name!r} is not a file of this report (files: {', '.join(self.names)})")
        return Path(self.staging) / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Write ``data`` as report file ``name`` (staged until :meth:`commit`)."""
        path = self.path(name)
        write_new(os.fspath(path), data)
        return path

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) as report file ``name``."""
        return self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name: str, doc: Any) -> Path:
        """Write ``doc`` as indented JSON (NaN and infinities refused: they are not JSON)."""
        return self.write_text(name, json.dumps(doc, indent=2, allow_nan=False) + "\n")

    # ------------------------------------------------------------------ commit

    def commit(self) -> tuple[Path, ...]:
        """Swap the staged files in as one unit; return their final paths.

        Raises:
            ReportError: a report-named file appeared or changed in the
                directory during the run (nothing is replaced then).
            OSError: the manifest or journal cannot be written (a full disk:
                nothing is replaced then either).
        """
        root, staging = self._root, self.staging
        if root is None or staging is None or self._journal:
            raise InputError("commit() needs an open writer (and commits once)")
        written = sorted(n for n in os.listdir(staging) if n in self.names)
        for name in self.names:  # nobody slipped a file in during the run
            st = lstat_or_none(os.path.join(root, name))
            now = None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)
            if now != self._seen.get(name) and not self.force:
                raise ReportError(f"report directory {self.outdir!r}: {name} was created or changed by "
                                  "something else during this run; nothing was replaced")
        files = {}
        for name in written:
            digest, size = sha256_file(os.path.join(staging, name))
            files[name] = {"sha256": digest, "bytes": size}
        stale = {n: d for n, d in sorted(self._owned.items()) if n not in files}
        manifest = manifest_document(tool=self.tool, run_id=self.run_id, config_hash=self.config_hash,
                                     files=files)
        committed = tuple(Path(root) / n for n in written)
        journal = write_journal(staging, manifest, stale)  # all the disk space the swap needs
        self._journal = True
        with signals_held():  # a held-back signal is delivered when the block ends, with the state set
            apply_journal(root, staging, journal)
            self.staging = None
            self.committed = committed
        return committed

    def summary_line(self, command: str, what: str) -> str:
        """The one line a command prints at the end: what it did and where the report is
        (:func:`summary_line` of the committed files)."""
        return summary_line(command, what, outdir=self.outdir, names=self.names,
                            written=[p.name for p in self.committed or ()], run_id=self.run_id)


def summary_line(command: str, what: str, *, outdir: str, names: Iterable[str], written: Iterable[str],
                 run_id: str) -> str:
    """``"COMMAND: WHAT; wrote DIR/MAIN.md, DIR/X.json and N PNG plot(s) (run ID)"``.

    The files are those of ``names`` that were ``written``: HTML and Markdown
    first (the file to open), the PNGs counted.

    >>> summary_line("demo", "3 things", outdir="rep", names=["a.json", "a.md", "p.png"],
    ...              written=["a.md", "a.json"], run_id="R")
    'demo: 3 things; wrote rep/a.md, rep/a.json and 0 PNG plot(s) (run R)'
    """
    names = list(names)
    done = set(written)
    texts = sorted((n for n in names if n in done and not n.endswith(".png")),
                   key=lambda n: (not n.endswith(".html"), not n.endswith(".md")))
    parts = [os.path.join(outdir, n) for n in texts]
    if any(n.endswith(".png") for n in names):
        parts.append(f"{sum(n in done for n in names if n.endswith('.png'))} PNG plot(s)")
    listed = (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else "".join(parts) or "nothing"
    return f"{command}: {what}; wrote {listed} (run {run_id})"


def recover(outdir: str | os.PathLike[str]) -> list[str]:
    """Finish or discard runs interrupted in ``outdir``; return what was done (one line each).

    A staging directory with a valid journal was interrupted inside its commit
    (a SIGKILL): its swap is completed. One without was interrupted before: it
    is removed, and so is one whose journal fails the checks of
    :func:`~packing_theory.reporting.journal.journal_problem` (nothing of it is
    applied). Every :meth:`ReportWriter.open` does this first (under the lock).

    Raises:
        ReportBusy: another run holds the lock.
    """
    with ReportWriter(outdir, names=(), config={}, tool="recover") as writer:
        return writer.recovered
