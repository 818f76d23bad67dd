"""Starting and stopping a local process pool so that a signal never leaves a worker behind.

Kept apart from :mod:`packing_theory.distributed.executors` (the runners that use
them): :func:`start_pool` forks a pool's processes with the interrupt signals
held back, :func:`stop_pool` ends one at once on an interrupt, and
:func:`default_signals`, each worker's initializer, lets a worker just end on a
signal. Together they make a signal during a pool's start-up behave as it
does later: status 3 and one line (:mod:`packing_theory.cli._exit`).
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["default_signals", "start_pool", "stop_pool"]


def default_signals() -> None:
    """Pool initializer: SIGINT, SIGTERM and SIGHUP back to their default action in a worker process, and
    the report directory locks the command holds closed there
    (:func:`~packing_theory.reporting.lock.close_inherited_locks`).

    A forked worker inherits the command's handlers (:mod:`packing_theory.cli._exit`
    turns SIGTERM into an exception to clean up); when the pool terminates its
    workers, that handler would print a traceback per worker, and Ctrl-C (sent
    to every process of the terminal's group) a ``KeyboardInterrupt`` traceback.
    A worker has nothing of its own to clean up: it should just end, and the
    command reports the interrupt once.
    """
    import signal

    from ..reporting.lock import close_inherited_locks

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)
    close_inherited_locks()  # a worker that outlives a killed run must not keep its report locked


def _started() -> None:
    """The first task of a pool: submitting it forks the pool's processes (see :func:`start_pool`)."""


def start_pool(workers: int) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes, started now, with SIGINT, SIGTERM and SIGHUP
    held back while its processes fork.

    Under the ``fork`` start method the first ``submit`` forks every process of
    the pool; a signal handled in the middle of that (its exception raised
    inside the pool's bookkeeping or an at-fork hook) could leave processes the
    pool does not know of, which the interpreter then waits for at exit
    forever. Held back, the signal is delivered once the pool has started, and
    the command ends as it does for a signal at any later time: status 3, one
    line (:mod:`packing_theory.cli._exit`). A process forked while the signal
    is held that gets it itself just ends.
    """
    from ..reporting.files import signals_held

    pool = ProcessPoolExecutor(max_workers=workers, initializer=default_signals)
    try:
        with signals_held():
            pool.submit(_started)
    except BaseException:  # the held signal, delivered: its processes are stopped, never left behind
        stop_pool(pool, now=True)
        raise
    return pool


def stop_pool(pool: ProcessPoolExecutor, *, now: bool = False) -> None:
    """Shut ``pool`` down: after its running tasks, or (``now=True``: an interrupt, an error) at once,
    its processes terminated, so that an interrupted command never waits for a long task to finish."""
    if now:
        processes: dict[int, Any] = getattr(pool, "_processes", None) or {}  # CPython's pid -> Process
        for process in list(processes.values()):
            with contextlib.suppress(Exception):
                process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


