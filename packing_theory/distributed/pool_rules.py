"""Two rules of the task runners: which errors are never retried, and how many local processes start.

Kept apart from :mod:`packing_theory.distributed.executors` (which applies them)
so that each rule is stated once, with its reason.
"""

from __future__ import annotations

import os

from ..errors import InputError, InputTypeError

__all__ = ["bad_input", "local_workers", "pool_size"]


def bad_input(exc: BaseException) -> bool:
    """Whether a task's error says its input is bad (``InputError`` / ``InputTypeError``): never retried.

    Reading a corrupt file again gives the same error; a retry only spends the
    time again (``--retries 1000000`` would read it a million times). Anything
    else (a worker killed, an ``OSError``, a flaky dependency) is retried.

    >>> bad_input(InputError("not UTF-8")), bad_input(OSError("disk"))
    (True, False)
    """
    return isinstance(exc, (InputError, InputTypeError))


def local_workers(requested: int) -> int:
    """The local pool size for ``--workers requested``: at most one process per CPU.

    The rule: ``min(requested, os.cpu_count())`` processes at most, and a pool
    is then made with no more processes than it has tasks (``min(that, tasks)``).
    More processes than CPUs only contend for them (the census and the rank
    audits are CPU-bound), and ``--workers 99999`` would fork thousands.

    >>> local_workers(1)
    1
    >>> local_workers(10**6) == (os.cpu_count() or 1)
    True
    """
    return max(1, min(requested, os.cpu_count() or 1))


def pool_size(requested: int, tasks: int | None = None) -> tuple[int, str | None]:
    """The processes a local pool of ``--workers requested`` starts for ``tasks`` tasks, and, when that
    is fewer than asked, the sentence saying so (``None`` otherwise).

    The rule of :func:`local_workers` (at most one process per CPU), then at most
    one process per task: a pool forks all its processes when its first task is
    submitted, so ``--workers 48`` for one task would fork 48.

    >>> pool_size(3, tasks=1)
    (1, '--workers 3: 1 process (1 task, ...')
    """
    cpus = os.cpu_count() or 1
    size = local_workers(requested)
    if tasks is not None:
        size = max(1, min(size, tasks))
    if size >= requested:
        return size, None
    why = f"{tasks} task{'s' if tasks != 1 else ''}, " if tasks is not None else ""
    return size, (f"--workers {requested}: {size} process{'es' if size != 1 else ''} ({why}{cpus} CPU"
                  f"{'s' if cpus != 1 else ''}; a pool starts no more processes than it has tasks or CPUs)")
