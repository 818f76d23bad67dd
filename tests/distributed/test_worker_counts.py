"""``--workers N`` forks no more processes than the work has tasks, and no more than the CPUs.

Before the fix ``--workers N`` forked N processes whatever the work (48 for one
task; ``--workers 99999`` forked over 3,000). The rule
(:func:`~packing_theory.distributed.pool_rules.local_workers`): a local pool has
at most ``min(N, os.cpu_count())`` processes, and at most one per task.
"""

from __future__ import annotations

import os

from packing_theory.distributed.executors import local_workers, open_runner


def child_pid(x: int) -> int:
    return os.getpid() + 0 * x


def test_a_pool_has_no_more_processes_than_tasks_or_cpus() -> None:
    cpus = os.cpu_count() or 1
    assert local_workers(99_999) == cpus and local_workers(1) == 1
    with open_runner("local", workers=99_999) as runner:
        assert runner.workers == cpus and runner.kind == "processes"
        pids: set[int] = set()
        runner.run(child_pid, [(1,)], on_result=lambda i, pid: pids.add(pid))
        assert runner._owned is not None
        assert runner._owned._max_workers == 1  # type: ignore[attr-defined]  # one task: one process
        assert len(pids) == 1 and os.getpid() not in pids
    with open_runner("local", workers=99_999) as runner:
        runner.run(child_pid, [(i,) for i in range(5 * cpus)], on_result=lambda i, pid: None)
        assert runner._owned is not None and runner._owned._max_workers == cpus  # type: ignore[attr-defined]
