"""Reports written safely: one run's files appear together, or not at all.

:class:`ReportWriter` is the one way a command writes a report directory
(``audit`` today; ``compare`` and ``evaluate`` are meant to use it too).

* **Validated first.** :meth:`ReportWriter.open` runs *before* the computation:
  it creates the directory if needed, takes the lock, finishes or discards an
  earlier interrupted run, and refuses files the tool did not write — all
  before any work is done.
* **A lock.** ``DIR/.packing-theory.lock`` is held (``flock``) from
  :meth:`~ReportWriter.open` to the end; a second run into the same directory
  fails at once, naming the run that holds it. The kernel releases the lock
  when a process dies, so a killed run never blocks the next one.
* **Staged, then swapped.** Every file is written into a fresh staging
  directory inside ``DIR`` (same file system). :meth:`~ReportWriter.commit`
  writes a journal, renames each file over its old version (``os.replace``:
  atomic per file, and a symlink named like a report file is replaced, never
  followed), removes the previous run's files that this run did not write
  (stale plots), and writes the manifest last. SIGINT, SIGTERM and SIGHUP are
  held back during those renames, so an interrupt leaves either the previous
  complete report or the new one. After a SIGKILL in that window, the next
  :meth:`~ReportWriter.open` (or :func:`recover`) completes the swap from the
  journal; an interrupt before it discards the staging directory.
* **One unit.** Every run has a :attr:`~ReportWriter.run_id` and a
  :attr:`~ReportWriter.config_hash`; producers put both into every file (the
  JSON's ``run`` entry, the Markdown's last line, the PNGs' text chunks), and
  ``DIR/.packing-theory-manifest.json`` lists each file with its SHA-256.
  :func:`verify_report` checks a directory is one complete run.
* **Not yours, not replaced.** A report-named file that the manifest does not
  list with its current content (the user's own ``audit.md``, a symlink, an
  edited report) is refused unless ``force=True``.

>>> import tempfile, os
>>> d = os.path.join(tempfile.mkdtemp(), "rep")
>>> with ReportWriter(d, names=["a.txt"], config={"k": 1}) as w:
...     _ = w.write_text("a.txt", f"run {w.run_id}\\n")
...     _ = w.commit()
>>> verify_report(d).ok
True
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from ..errors import InputError

__all__ = [
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA",
    "PNG_CONFIG_KEY",
    "PNG_RUN_KEY",
    "ReportBusy",
    "ReportCheck",
    "ReportError",
    "ReportWriter",
    "config_hash",
    "new_run_id",
    "png_text",
    "recover",
    "verify_report",
]

MANIFEST_NAME = ".packing-theory-manifest.json"
"""The manifest of the current report, written last."""
LOCK_NAME = ".packing-theory.lock"
"""The lock file (never removed while the directory holds a report)."""
MANIFEST_SCHEMA = "packing-theory/report-manifest"
PNG_RUN_KEY = "packing-theory run"
"""PNG text-chunk key holding the run id."""
PNG_CONFIG_KEY = "packing-theory config"
"""PNG text-chunk key holding the config hash."""
_STAGING = ".packing-theory-staging-"
_JOURNAL = ".journal.json"


class ReportError(InputError):
    """The report directory cannot be used as asked (one line naming the directory or file)."""


class ReportBusy(ReportError):
    """Another run holds the report directory's lock."""


def config_hash(config: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of the canonical JSON of ``config`` (sorted keys): equal configs, equal hashes.

    >>> config_hash({"b": 1, "a": [1, 2]}) == config_hash({"a": [1, 2], "b": 1})
    True
    """
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_run_id() -> str:
    """A run id: UTC time to the second and 8 random hex digits, e.g. ``20250101T120000Z-1a2b3c4d``."""
    now = _dt.datetime.now(_dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def _sha256(path: str) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            n += len(block)
    return h.hexdigest(), n


def _read_json(path: str) -> Any:
    """JSON of a regular file (never through a symlink); ``None`` when absent or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return json.loads(fh.read(16 << 20))
    except (OSError, ValueError):
        return None


def _write_new(path: str, data: bytes) -> None:
    """Write a new file (never through an existing path or symlink) and flush it to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back SIGINT/SIGTERM/SIGHUP in the block; deliver them (to the old handlers) after it."""
    if threading.current_thread() is not threading.main_thread():
        sigs = {signal.SIGINT, signal.SIGTERM}
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        return
    caught: list[int] = []

    def defer(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    names = [s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, defer) for s in names}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for signum in caught:  # re-deliver to whatever handled it before
            signal.raise_signal(signum)


# --------------------------------------------------------------------------- the writer


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
    ) -> None:
        self.names: tuple[str, ...] = tuple(names)
        for name in self.names:
            if not name or os.sep in name or name in (".", "..") or name.startswith(".") or (
                    os.altsep and os.altsep in name):
                raise InputError(f"report file names must be plain names, got {name!r}")
        self.outdir = os.fspath(outdir)
        self.tool = str(tool)
        self.force = bool(force)
        self.config = dict(config)
        self.config_hash = config_hash(self.config)
        self.run_id = new_run_id()
        self.staging: str | None = None
        self.committed: tuple[Path, ...] | None = None
        self._root: str | None = None
        self._lock_fd: int | None = None
        self._created = False
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._owned: dict[str, str] = {}
        self.recovered: list[str] = []
        """What :meth:`open` did about earlier interrupted runs (see :func:`recover`)."""

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
            OSError: the directory cannot be created or written.
        """
        if self._root is not None:
            return self
        out = self.outdir
        st = _lstat(out)
        if st is not None and stat.S_ISLNK(st.st_mode):
            st = _stat_or_none(out)
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
        self._lock(root)
        try:
            self._root = root
            self.recovered = _recover_locked(root)
            self._check_ownership(root)
            self.staging = _mkstaging(root)
        except BaseException:
            self._root = None
            self._unlock()
            raise
        return self

    def close(self) -> None:
        """Remove the staging directory (an uncommitted run leaves nothing) and release the lock."""
        root = self._root
        if root is None:
            return
        try:
            if self.staging is not None:
                shutil.rmtree(self.staging, ignore_errors=True)
                self.staging = None
            if self._created and self.committed is None:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(root, LOCK_NAME))
                    os.rmdir(root)  # only if empty: a directory this run created for nothing
        finally:
            self._root = None
            self._unlock()

    def _lock(self, root: str) -> None:
        import fcntl

        path = os.path.join(root, LOCK_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ReportError(f"report directory {self.outdir!r}: {LOCK_NAME} is a symlink; "
                                  "remove it") from exc
            raise ReportError(f"report directory {self.outdir!r} is not writable: "
                              f"{exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise ReportBusy(f"report directory {self.outdir!r} is being written by another run "
                                 f"({holder}); wait for it to finish or choose another directory") from exc
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, run {self.run_id}\n".encode())
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def _check_ownership(self, root: str) -> None:
        manifest = _read_json(os.path.join(root, MANIFEST_NAME))
        listed = _manifest_files(manifest)
        for name in self.names:
            path = os.path.join(root, name)
            st = _lstat(path)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                raise ReportError(f"report directory {self.outdir!r}: {name} is a directory; remove it or "
                                  "choose another directory")
            self._seen[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
            mine = stat.S_ISREG(st.st_mode) and name in listed and _sha256(path)[0] == listed[name]
            if mine:
                self._owned[name] = listed[name]
            elif not self.force:
                what = ("a symlink" if stat.S_ISLNK(st.st_mode) else "changed since packing-theory wrote it"
                        if name in listed else "not written by packing-theory")
                raise ReportError(f"report directory {self.outdir!r}: {name} exists and is {what}; pass "
                                  "--force to replace it, or choose another directory")
            else:
                self._owned[name] = ""  # replaced (or removed as stale) on --force

    # ------------------------------------------------------------------ writing

    def path(self, name: str) -> Path:
        """Where to write report file ``name`` in the staging directory (e.g. for ``savefig``)."""
        if self.staging is None:
            raise InputError("open() the writer before writing files")
        if name not in self.names:
            raise InputError(f"{name!r} is not a file of this report (files: {', '.join(self.names)})")
        return Path(self.staging) / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Write ``data`` as report file ``name`` (staged until :meth:`commit`)."""
        path = self.path(name)
        _write_new(os.fspath(path), data)
        return path

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) as report file ``name``."""
        return self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name: str, doc: Any) -> Path:
        """Write ``doc`` as indented JSON."""
        return self.write_text(name, json.dumps(doc, indent=2) + "\n")

    # ------------------------------------------------------------------ commit

    def commit(self) -> tuple[Path, ...]:
        """Swap the staged files in as one unit; return their final paths.

        Raises:
            ReportError: a report-named file appeared or changed in the
                directory during the run (nothing is replaced then).
        """
        root, staging = self._root, self.staging
        if root is None or staging is None:
            raise InputError("commit() needs an open writer")
        written = sorted(n for n in os.listdir(staging) if n in self.names)
        for name in self.names:  # nobody slipped a file in during the run
            st = _lstat(os.path.join(root, name))
            now = None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)
            if now != self._seen.get(name) and not self.force:
                raise ReportError(f"report directory {self.outdir!r}: {name} was created or changed by "
                                  "something else during this run; nothing was replaced")
        files = {}
        for name in written:
            digest, size = _sha256(os.path.join(staging, name))
            files[name] = {"sha256": digest, "bytes": size}
        stale = sorted(n for n, digest in self._owned.items() if n not in files)
        manifest = {"schema": MANIFEST_SCHEMA, "version": 1, "tool": self.tool, "run_id": self.run_id,
                    "config_hash": self.config_hash, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(
                        timespec="seconds"), "files": files}
        journal = {"manifest": manifest, "stale": {n: self._owned[n] for n in stale}}
        _fsync_dir(staging)
        committed = tuple(Path(root) / n for n in written)
        with _signals_held():  # a held-back signal is delivered when the block ends, with the state set
            _write_new(os.path.join(staging, _JOURNAL), json.dumps(journal).encode("utf-8"))
            _apply(root, staging, journal)
            self.staging = None
            self.committed = committed
        return committed


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _mkstaging(root: str) -> str:
    import tempfile

    return tempfile.mkdtemp(prefix=_STAGING, dir=root)


def _manifest_files(manifest: Any) -> dict[str, str]:
    """``name -> sha256`` listed by a manifest document (empty when it is not one)."""
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        return {}
    files = manifest.get("files")
    if not isinstance(files, dict):
        return {}
    return {str(n): str(v.get("sha256")) for n, v in files.items()
            if isinstance(v, dict) and isinstance(n, str) and "/" not in n and not n.startswith(".")}


def _apply(root: str, staging: str, journal: Mapping[str, Any]) -> None:
    """Carry out a committed journal (idempotent: a second application finishes a first)."""
    manifest = journal["manifest"]
    for name in manifest["files"]:
        src = os.path.join(staging, name)
        if os.path.lexists(src):
            os.replace(src, os.path.join(root, name))
    for name, digest in journal["stale"].items():
        path = os.path.join(root, name)
        st = _lstat(path)
        if st is None or name in manifest["files"]:
            continue
        if not digest or (stat.S_ISREG(st.st_mode) and _sha256(path)[0] == digest):
            os.unlink(path)
    tmp = os.path.join(staging, MANIFEST_NAME)
    if not os.path.lexists(tmp):
        _write_new(tmp, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    os.replace(tmp, os.path.join(root, MANIFEST_NAME))
    _fsync_dir(root)
    shutil.rmtree(staging, ignore_errors=True)


def recover(outdir: str | os.PathLike[str]) -> list[str]:
    """Finish or discard runs interrupted in ``outdir``; return what was done (one line each).

    A staging directory with a journal was interrupted inside its commit (a
    SIGKILL): its swap is completed. One without was interrupted before: it is
    removed. Every :meth:`ReportWriter.open` does this first (under the lock).

    Raises:
        ReportBusy: another run holds the lock.
    """
    with ReportWriter(outdir, names=(), config={}, tool="recover") as writer:
        return writer.recovered


def _recover_locked(root: str) -> list[str]:
    done = []
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if not entry.startswith(_STAGING) or os.path.islink(path) or not os.path.isdir(path):
            continue
        journal = _read_json(os.path.join(path, _JOURNAL))
        if isinstance(journal, dict) and isinstance(journal.get("manifest"), dict):
            _apply(root, path, journal)
            done.append(f"completed the interrupted commit of run {journal['manifest'].get('run_id')}")
        else:
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"removed the staging directory of an interrupted run ({entry})")
    return done


# --------------------------------------------------------------------------- checking a report


def png_text(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG file (``key -> value``).

    Raises:
        ValueError: not a complete PNG (bad signature, a truncated chunk, a bad
            CRC, or no ``IEND``).
    """
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise InputError(f"{os.fspath(path)!r} is not a PNG file")
    out: dict[str, str] = {}
    i = 8
    while i + 8 <= len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind = data[i + 4 : i + 8]
        body = data[i + 8 : i + 8 + n]
        crc = data[i + 8 + n : i + 12 + n]
        if len(body) != n or len(crc) != 4 or struct.unpack(">I", crc)[0] != zlib.crc32(kind + body):
            raise InputError(f"{os.fspath(path)!r} is truncated or corrupt at byte {i}")
        if kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            out[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IEND":
            return out
        i += 12 + n
    raise InputError(f"{os.fspath(path)!r} is truncated (no IEND chunk)")


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
    ``.md`` / ``.txt`` / ``.csv`` must contain the run id; ``.png`` must be a
    complete PNG whose ``packing-theory run`` text chunk is the run id. Files
    named in ``names`` but absent from the manifest (stale plots) are problems.
    """
    root = os.fspath(outdir)
    manifest = _read_json(os.path.join(root, MANIFEST_NAME))
    listed = _manifest_files(manifest)
    if not listed:
        return ReportCheck(None, None, (), ("no readable manifest",))
    assert isinstance(manifest, dict)
    run_id = str(manifest.get("run_id"))
    problems = []
    for name, digest in sorted(listed.items()):
        path = os.path.join(root, name)
        st = _lstat(path)
        if st is None or not stat.S_ISREG(st.st_mode):
            problems.append(f"{name}: missing or not a regular file")
            continue
        if _sha256(path)[0] != digest:
            problems.append(f"{name}: content differs from the manifest")
        problems += _run_id_problems(path, name, run_id)
    problems += [f"{n}: present but not part of run {run_id}" for n in names
                 if n not in listed and os.path.lexists(os.path.join(root, n))]
    staging = [e for e in os.listdir(root) if e.startswith(_STAGING)]
    problems += [f"{e}: an interrupted run's staging directory (run recover())" for e in staging]
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
        if name.endswith((".md", ".txt", ".csv")):
            ok = run_id in Path(path).read_text(encoding="utf-8")
            return [] if ok else [f"{name}: does not mention run {run_id}"]
    except (OSError, ValueError) as exc:
        return [f"{name}: unreadable ({exc})"]
    return []
