"""The file operations every report uses: no symlink followed, new files flushed, names checked.

Everything here refuses to follow a symlink (``O_NOFOLLOW``) and writes only
files it creates (``O_EXCL``), so a path that appears between a check and a
write is never written through. :func:`plain_name` is the one test of a
report file name (a manifest's, a journal's, a writer's).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ..errors import InputError

__all__ = [
    "ReportBusy",
    "ReportError",
    "fsync_dir",
    "lstat_or_none",
    "plain_name",
    "read_json",
    "sha256_file",
    "signals_held",
    "stat_or_none",
    "write_new",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class ReportError(InputError):
    """The report directory cannot be used as asked (one line naming the directory or file)."""

    __module__ = "packing_theory.reporting"


class ReportBusy(ReportError):
    """Another run holds the report directory's lock."""

    __module__ = "packing_theory.reporting"


def plain_name(name: object) -> bool:
    """Whether ``name`` is a plain file name: a non-empty string, no directory part, not hidden.

    >>> [plain_name(n) for n in ("audit.json", "../x", "/abs", ".journal.json", "", "a\\x00b")]
    [True, False, False, False, False, False]
    """
    if not isinstance(name, str) or not name or name in (".", "..") or name.startswith(".") or "\x00" in name:
        return False
    return os.sep not in name and "/" not in name and not (os.altsep and os.altsep in name)


def sha256_file(path: str) -> tuple[str, int]:
    """SHA-256 hex digest and size of a regular file (never through a symlink). O(size), 1 MiB blocks."""
    h = hashlib.sha256()
    n = 0
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            n += len(block)
    return h.hexdigest(), n


def read_json(path: str) -> Any:
    """JSON of a regular file (never through a symlink); ``None`` when absent or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return json.loads(fh.read(16 << 20))
    except (OSError, ValueError, RecursionError):
        return None


def write_new(path: str, data: bytes) -> None:
    """Write a new file (never through an existing path or symlink) and flush it to disk.

    Raises:
        OSError: the path exists, or the write fails (a full disk: the partial
            file stays where it is, inside a staging directory that is discarded).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def fsync_dir(path: str) -> None:
    """Flush a directory's entries (renames) to disk; silently skipped where unsupported."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def lstat_or_none(path: str) -> os.stat_result | None:
    """``os.lstat`` (the link itself), or ``None`` when nothing is there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def stat_or_none(path: str) -> os.stat_result | None:
    """``os.stat`` (through links), or ``None`` when it cannot be read."""
    try:
        return os.stat(path)
    except OSError:
        return None


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold back SIGINT/SIGTERM/SIGHUP in the block; deliver them (to the old handlers) after it.

    A process forked inside the block (a pool's worker) that gets one of them before it sets its own
    handlers ends by the signal's default action: it holds nothing back.
    """
    if threading.current_thread() is not threading.main_thread():
        sigs = {signal.SIGINT, signal.SIGTERM}
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        return
    caught: list[int] = []
    owner = os.getpid()

    def defer(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:  # a process forked inside the block (a pool worker): it just ends
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
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
