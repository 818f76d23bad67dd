"""One run at a time per report directory: ``DIR/.packing-theory.lock``, held with ``flock``.

The lock file exists only while a run holds it. :meth:`DirectoryLock.release`
unlinks it while still holding the lock, then closes it; a contender that
opened the file just before the unlink acquires a lock on a file that no
longer has a name, notices (the path names another inode, or nothing), and
tries again on the path. So two runs never both believe they hold the
directory, and a finished run leaves no lock file behind. The kernel drops
the lock of a killed process: a killed run never blocks the next one (its
file stays, and the next run locks and reuses it). A process forked while a
lock is held (a pool's worker) inherits its descriptor, which would keep the
lock held after its run is killed; :func:`close_inherited_locks`, run first in
every worker, closes those copies.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> lock = DirectoryLock(d)
>>> lock.acquire("doctest")
>>> DirectoryLock(d).acquire("second")  # doctest: +ELLIPSIS
Traceback (most recent call last):
packing_theory.reporting.ReportBusy: report directory '...' is being written by another run (doctest); ...
>>> lock.release()
>>> import os; os.path.exists(os.path.join(d, LOCK_NAME))
False
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from .files import ReportBusy, ReportError, lstat_or_none

__all__ = ["LOCK_NAME", "DirectoryLock", "close_inherited_locks"]

LOCK_NAME = ".packing-theory.lock"
"""The lock file of a report directory (present only while a run holds it, or after a killed run)."""

_HELD: set[int] = set()
"""The descriptors of the locks this process holds (a forked child's copies are closed there)."""

_ATTEMPTS = 64  # each retry needs another run to release the lock in between: a handful at most


class DirectoryLock:
    """An exclusive, non-blocking lock on the directory ``root`` (see the module docstring).

    ``shown`` names the directory in messages (what the user typed; default ``root``).
    """

    def __init__(self, root: str, *, shown: str | None = None) -> None:
        self.root = root
        self.path = os.path.join(root, LOCK_NAME)
        self.shown = root if shown is None else shown
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def acquire(self, note: str) -> None:
        """Take the lock at once or fail; write ``note`` (who holds it) into the lock file.

        Raises:
            ReportBusy: another run holds it (the message quotes that run's note).
            ReportError: the lock file is a symlink or not a regular file, or the
                directory is not writable.
        """
        import fcntl

        if self._fd is not None:
            raise ReportError(f"report directory {self.shown!r}: the lock is already held by this run")
        for _ in range(_ATTEMPTS):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "unknown"
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise ReportBusy(f"report directory {self.shown!r} is being written by another run "
                                     f"({holder}); wait for it to finish or choose another directory"
                                     ) from exc
                raise
            if self._names(fd):
                with contextlib.suppress(OSError):  # the note only informs a contender (a full disk: none)
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{note}\n".encode())
                self._fd = fd
                _HELD.add(fd)
                self._check()
                return
            os.close(fd)  # released and unlinked by its holder between our open and our lock: again
        raise ReportBusy(f"report directory {self.shown!r}: its lock changed hands {_ATTEMPTS} times while "
                         "this run tried to take it; try again")

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK,
                         0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ReportError(f"report directory {self.shown!r}: {LOCK_NAME} is a symlink; "
                                  "remove it") from exc
            raise ReportError(f"report directory {self.shown!r} is not writable: "
                              f"{exc.strerror or exc}") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ReportError(f"report directory {self.shown!r}: {LOCK_NAME} is not a regular file; "
                              "remove it")
        return fd

    def _names(self, fd: int) -> bool:
        """Whether the lock path still names the file open as ``fd``."""
        now = lstat_or_none(self.path)
        mine = os.fstat(fd)
        return now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)

    def release(self) -> None:
        """Unlink the lock file (still locked), then close it, which releases the lock. Idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _HELD.discard(fd)
        try:
            if self._names(fd):  # never unlink a file some other run created under that name
                os.unlink(self.path)
        except OSError:
            pass  # a read-only directory by now: the lock file stays, harmless
        finally:
            os.close(fd)

    def _check(self) -> None:
        """While held, the lock path names the locked file."""
        if self._fd is not None:
            assert self._names(self._fd), f"{self.path} no longer names the held lock file"


def close_inherited_locks() -> None:
    """In a forked child (a pool's worker): close the copies of the parent's lock descriptors.

    ``flock`` belongs to the open file, which a fork shares: a worker that outlives its run (the run
    killed with SIGKILL while a task was running) would otherwise keep the report directory locked, and
    the rerun that should resume would be refused. The child never writes a report itself.
    """
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()
