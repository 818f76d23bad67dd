"""``compare`` and ``audit`` on a real two-worker local Dask cluster write the same report as the local run.

Every registered packer is one task of the comparison (its reach to the common
horizon, then its replay); the scheduler's task stream shows that those tasks
ran on the cluster's workers, and the reports equal the local ones apart from
the run id and the timings. Skipped (visibly) without dask.distributed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed: pip install 'packing-theory[distributed]'")

from packing_theory.cli import main  # noqa: E402
from packing_theory.corpus import default_lengths  # noqa: E402
from packing_theory.registry import entries  # noqa: E402
from tests.distributed_helpers import strip_run_fields  # noqa: E402

pytestmark = pytest.mark.xdist_group("dask_cluster")  # one pytest worker starts the cluster, once



def _report(out: Path, name: str) -> dict[str, Any]:
    doc = json.loads((out / name).read_text())
    assert isinstance(doc, dict)
    return doc


def _packer_tasks(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comparison's tasks in the scheduler's task stream (their keys name the runner's label)."""
    return [t for t in stream if str(t["key"]).startswith("packing-theory-packer-")]


@pytest.mark.parametrize("engine", ["fast", "compiled"])  # compiled: per-event packers go first
def test_compare_on_the_cluster_equals_the_local_run(client: Any, tmp_path: Path, engine: str) -> None:
    if engine == "compiled":
        pytest.importorskip("numba", reason="the compiled engine needs numba")
    address = client.scheduler.address.replace("tcp://", "dask://")
    np.save(tmp_path / "l.npy", default_lengths(seed=0)[:400])
    args = ["compare", "--lengths", str(tmp_path / "l.npy"), "--seq-length", "512", "--min-buffer", "20",
            "--engine", engine, "--no-plots", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "s")]) == 0
    with distributed.get_task_stream(client=client) as stream:
        assert main([*args, "--out", str(tmp_path / "d"), "--executor", address]) == 0
    local, remote = _report(tmp_path / "s", "compare.json"), _report(tmp_path / "d", "compare.json")
    assert strip_run_fields(remote) == strip_run_fields(local)
    assert remote["run"]["id"] != local["run"]["id"]  # two runs, not one report read twice
    measured = [p["packer"] for p in local["packers"]]
    refused = [r["packer"] for r in local["refused"]]
    assert sorted(measured + refused) == sorted(entries())  # every registered packer, measured or refused
    assert len(measured) >= len(entries()) // 2 and local["corpus"]["documents"] == 400
    tasks = _packer_tasks(stream.data)
    # the common horizon: one task for the streaming packers' reaches (the runner's one worker: one
    # group), then one pass per peer that builds (its run and its reach); then one replay per streaming
    # packer, and again per measured peer when a peer's reach set the horizon below the streaming ones'
    peers = [n for n, e in entries().items() if e.kind == "peer"]
    unbuilt = {r["packer"] for r in local["refused"] if "rows of at least 2 tokens" in r["reason"]}
    peer_set = any(n in peers for n in local["horizon"]["set_by"])
    streaming = len(entries()) - len(peers)
    again = sum(n in peers for n in measured) if peer_set else 0
    assert len(tasks) == 1 + (len(peers) - len(unbuilt)) + streaming + again
    assert {t["worker"] for t in tasks} <= set(client.scheduler_info()["workers"])
    assert (tmp_path / "d" / "compare.md").read_text().count("\n") > 10


def test_audit_of_two_policies_on_the_cluster_equals_the_local_run(client: Any, tmp_path: Path) -> None:
    address = client.scheduler.address.replace("tcp://", "dask://")
    np.save(tmp_path / "l.npy", default_lengths(seed=0)[:600])
    args = ["audit", "--lengths", str(tmp_path / "l.npy"), "--policy", "discard,trl-bfd",
            "--seq-length", "512", "--min-buffer", "20", "--rows", "60", "--permutations", "2",
            "--no-plots", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "s")]) in (0, 1)
    with distributed.get_task_stream(client=client) as stream:
        status = main([*args, "--out", str(tmp_path / "d"), "--executor", address])
    assert status == main([*args, "--out", str(tmp_path / "s2")])  # the same finding, or none, both ways
    local, remote = _report(tmp_path / "s", "audit.json"), _report(tmp_path / "d", "audit.json")
    assert strip_run_fields(remote) == strip_run_fields(local)
    assert [p["packer"] for p in local["packers"]] == ["discard", "trl-bfd"]
    tasks = _packer_tasks(stream.data)
    assert len(tasks) == 2  # one replay per packer (an asked horizon needs no reach pass)
    assert {t["worker"] for t in tasks} <= set(client.scheduler_info()["workers"])
