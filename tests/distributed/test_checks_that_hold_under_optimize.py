"""Checks that reject results hold under ``python -O``; the task runner rechecks itself after a pool change.

Before the fix ``RankSummary._check`` was made of ``assert`` statements: under
``python -O`` the rank runner accepted a worker's summary that breaks its
invariants. And ``TaskRunner._check()`` was not rerun after a pool was replaced.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from packing_theory.distributed.executors import TaskRunner

ROOT = Path(__file__).resolve().parents[2]

BAD_SUMMARY = """
from packing_theory.distributed.merge import RankSummary
try:
    RankSummary.from_counts(rank=0, world_size=1, policy="discard", documents=3, tokens=9, rows=2,
                            start_rows=[0, 1], distinct_started=5)
except AssertionError as exc:
    print("refused:", exc)
else:
    print("accepted")
"""


def test_a_broken_rank_summary_is_refused_under_python_dash_o() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-O", "-c", BAD_SUMMARY], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("refused: rank 0 summary fails 0 <= distinct_started <= "
                                   "min(documents, started)")


def test_replacing_a_pool_reruns_the_runner_check(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = TaskRunner("processes", None, workers=1, retries=1, spec="local")
    calls: list[int] = []
    real = TaskRunner._check

    def counted(self: Any) -> None:
        calls.append(self.fresh_pools)
        real(self)

    monkeypatch.setattr(TaskRunner, "_check", counted)
    try:
        runner._pool(1)
        runner._replace_pool()
        runner._pool(1)
        assert calls == [0, 1, 1]
        runner.workers = 0  # a broken state is caught at the next pool change
        with pytest.raises(AssertionError):
            runner._replace_pool()
    finally:
        runner.workers = 1
        runner.close()
