"""``--workers N`` forks no more processes than the work has tasks, and no more than the CPUs.

Before the fix ``--workers N`` forked N processes whatever the work (48 for one
task; ``--workers 99999`` forked over 3,000). The rule
(:func:`~packing_theory.distributed.pool_rules.local_workers`): a local pool has
at most ``min(N, os.cpu_count())`` processes, and at most one per task.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

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


def test_open_executor_starts_no_more_processes_than_tasks_or_cpus() -> None:
    """Before the fix ``audit --workers 48`` forked 48 processes for one task and ``--workers 100000``
    started 60-111 processes in 6 s: ``open_executor`` (audit's and compare's pool) had no cap."""
    from packing_theory.distributed.executors import open_executor
    from packing_theory.distributed.pool_rules import pool_size

    cpus = os.cpu_count() or 1
    with open_executor("local", workers=48, tasks=1) as pool:
        assert pool is not None and pool._max_workers == 1  # type: ignore[attr-defined]
        assert len(pool._processes) == 1  # type: ignore[attr-defined]  # started: one process, forked once
    with open_executor("local", workers=100_000) as pool:
        assert pool is not None and pool._max_workers == cpus  # type: ignore[attr-defined]
    assert pool_size(48, 3) == (min(3, cpus), pool_size(48, 3)[1])
    assert pool_size(48, 3)[1].startswith(f"--workers 48: {min(3, cpus)} process")  # type: ignore[union-attr]
    assert pool_size(1, 5) == (1, None)


def test_audit_asks_for_a_pool_no_larger_than_its_tasks(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from packing_theory.cli import main
    from packing_theory.distributed import executors

    sizes: list[int] = []
    start = executors.start_pool

    def recorded(workers: int) -> Any:
        sizes.append(workers)
        return start(workers)

    monkeypatch.setattr(executors, "start_pool", recorded)
    np.save(tmp_path / "l.npy", np.array([5, 9, 3, 12, 40, 2, 7] * 20, dtype=np.int64))
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--capacity", "16", "--min-buffer", "2",
                 "--workers", "48", "--permutations", "0", "--policy", "discard", "--no-plots",
                 "--out", str(tmp_path / "rep")]) == 0
    assert sizes == [1]  # one policy, no permutation, no evaluation: one task
