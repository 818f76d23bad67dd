"""The Dask side of the runners on a real local cluster whose workers are all gone: a bounded wait.

Skipped (visibly) without dask.distributed: ``pip install "packing-theory[distributed]"``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed: pip install 'packing-theory[distributed]'")

from packing_theory.cli import main  # noqa: E402
from packing_theory.distributed import CensusOptions, TaskRunner, run_census  # noqa: E402
from packing_theory.distributed.executors import TaskFailed  # noqa: E402
from packing_theory.errors import InputError  # noqa: E402
from tests.distributed_helpers import make_texts  # noqa: E402


@pytest.fixture(scope="module")
def workerless() -> Iterator[Any]:
    """A client of a local cluster that had a worker and has none left (scaled to zero: none restarts)."""
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    with cluster, distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(1, timeout=60)
        cluster.scale(0)
        deadline = time.monotonic() + 60
        while client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not client.scheduler_info()["workers"]
        yield client


def test_a_census_whose_workers_are_all_gone_fails_after_the_bounded_wait(workerless: Any,
                                                                          tmp_path: Path) -> None:
    """Before the fix the run waited forever for a worker (tasks in the scheduler's no-worker state)."""
    texts = make_texts(str(tmp_path), n=2)
    runner = TaskRunner("dask", workerless, workers=1, retries=0, spec="dask tcp://test",
                        no_worker_wait_s=1.0)
    expected = (r"executor dask tcp://test: the Dask scheduler has had no worker for 1 s \(all died or none "
                r"joined\) while 2 task\(s\) waited")
    with pytest.raises(TaskFailed, match=expected):
        run_census(texts, CensusOptions("text", "whitespace"), tmp_path / "out", executor=runner)


def test_the_command_line_census_is_status_3_naming_the_executor(workerless: Any, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("packing_theory.distributed.dask_client.NO_WORKER_WAIT_S", 1.0)
    address = workerless.scheduler.address.replace("tcp://", "dask://")
    texts = make_texts(str(tmp_path), n=2)
    assert main(["census", "--text", *texts, "--out", str(tmp_path / "out"), "--executor", address]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"executor {address}: the Dask scheduler has had no worker for 1 s" in err[0]


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "5"])
def test_the_wait_must_be_a_finite_positive_number(bad: object) -> None:
    with pytest.raises(InputError, match="no_worker_wait_s must be a finite number of seconds > 0"):
        TaskRunner("inprocess", None, workers=1, retries=0, spec="local", no_worker_wait_s=bad)  # type: ignore[arg-type]


@pytest.fixture()
def cluster() -> Iterator[Any]:
    """A fresh local cluster of one worker process (a test may close it under the run)."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as c:
        yield c


def test_relative_inputs_are_read_by_workers_in_another_directory(cluster: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix the census sent the paths as given: a worker in another directory failed with
    "No such file or directory: 't1.txt'" for a file that exists, without saying why."""
    import os

    texts = make_texts(str(tmp_path), n=2)
    monkeypatch.chdir(tmp_path)
    relative = [os.path.relpath(t, tmp_path) for t in texts]
    with distributed.Client(cluster, set_as_default=False) as client:
        client.run(os.chdir, "/")  # the worker's own working directory is not the driver's
        res = run_census(relative, CensusOptions("text", "whitespace"), "out", executor=client)
    assert res.computed == 2 and [s["path"] for s in res.manifest["shards"]] == relative


def test_a_scheduler_that_goes_away_is_could_not_measure_on_one_line(cluster: Any, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]
                                                                     ) -> None:
    """Before the fix a census whose scheduler died ended as an internal error (ClosedClientError, exit 3
    "a bug") after distributed's own log line."""
    import threading
    import time

    texts = make_texts(str(tmp_path), n=12)
    parts = tmp_path / "out" / "parts"

    def close_after_the_first_part() -> None:
        deadline = time.monotonic() + 300  # bounds a hang only
        while time.monotonic() < deadline and not any(parts.glob("*.json")):
            time.sleep(0.05)
        cluster.close()

    closer = threading.Thread(target=close_after_the_first_part, daemon=True)
    closer.start()
    address = cluster.scheduler_address.replace("tcp://", "dask://")
    code = main(["census", "--text", *texts, "--per-line", "--tokenizer",
                 "tests.distributed_helpers:slow_words", "--out", str(tmp_path / "out"),
                 "--executor", address, "--retries", "0"])
    closer.join(60)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3, err
    assert len(err) == 1 and "internal error" not in err[0], err
    assert "the Dask scheduler went away" in err[0] or "cannot submit" in err[0], err

