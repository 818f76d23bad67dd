"""The census and per-rank audits on a real local Dask cluster: the same numbers as the serial path.

Skipped (visibly) without dask.distributed: ``pip install "packing-theory[distributed]"``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed: pip install 'packing-theory[distributed]'")

import cloudpickle  # noqa: E402  (a dependency of distributed)

import tests.distributed_helpers as distributed_helpers  # noqa: E402
from packing_theory.cli import main  # noqa: E402
from packing_theory.corpus import default_lengths, lengths_from_shards  # noqa: E402
from packing_theory.corpus.text import lengths_from_text_files  # noqa: E402
from packing_theory.distributed import (  # noqa: E402
    CensusOptions,
    ParquetSource,
    audit_ranks,
    open_runner,
    run_census,
)
from packing_theory.engine.policies import PackerConfig  # noqa: E402
from tests.distributed_helpers import KillOnce, make_parquet, make_shards, make_texts, strip_run_fields  # noqa: E402

cloudpickle.register_pickle_by_value(distributed_helpers)  # the workers cannot import tests/

pytestmark = pytest.mark.xdist_group("dask_cluster")  # one pytest worker starts the cluster, once



def test_census_on_the_cluster_equals_serial(client: Any, tmp_path: Path) -> None:
    texts = make_texts(str(tmp_path))
    shards = make_shards(str(tmp_path))
    parquet = make_parquet(str(tmp_path))
    cases = [(texts, CensusOptions("text", "whitespace", per_line=True, hashes=True)),
             (shards, CensusOptions("shards", hashes=True)),
             (parquet, CensusOptions("parquet", "bytes"))]
    for k, (paths, opts) in enumerate(cases):
        serial = run_census(paths, opts, tmp_path / f"serial{k}")
        remote = run_census(paths, opts, tmp_path / f"dask{k}", executor=client)
        for name in ("lengths.npy", "doc_bytes.npy", "doc_hashes.npy"):
            a, b = tmp_path / f"serial{k}" / name, tmp_path / f"dask{k}" / name
            assert a.exists() == b.exists() and (not a.exists() or a.read_bytes() == b.read_bytes())
        assert strip_run_fields(remote.manifest) == strip_run_fields(serial.manifest)
        workers = {t["worker"] for t in remote.manifest["execution"]["tasks"]}
        assert workers <= set(client.scheduler_info()["workers"]) and workers
        assert remote.manifest["execution"]["executor"].startswith("dask tcp://127.0.0.1:")
    assert np.array_equal(serial.lengths, run_census(parquet, cases[2][1], tmp_path / "again").lengths)
    assert (tmp_path / "serial0" / "lengths.npy").read_bytes() == _npy(
        lengths_from_text_files(texts, "whitespace", per_line=True))
    assert (tmp_path / "serial1" / "lengths.npy").read_bytes() == _npy(lengths_from_shards(shards))


def _npy(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def test_a_killed_worker_changes_no_number(client: Any, tmp_path: Path) -> None:
    texts = make_texts(str(tmp_path))
    tok = KillOnce(str(tmp_path / "marker"), trigger="shard2 ", mode="exit")
    res = run_census(texts, CensusOptions("text", tok, per_line=True), tmp_path / "out", executor=client)
    assert (tmp_path / "marker").read_text().count("\n") == 1  # exactly one worker process died
    assert np.array_equal(res.lengths, lengths_from_text_files(texts, "whitespace", per_line=True))
    attempts = {t["input"]: t["attempts"] for t in res.manifest["execution"]["tasks"]}
    assert attempts[2] >= 2  # the scheduler reran it on a live worker, and the manifest says so
    client.wait_for_workers(2, timeout=30)


def test_interrupted_cluster_census_resumes(client: Any, tmp_path: Path) -> None:
    texts = make_texts(str(tmp_path), n=5)
    out = tmp_path / "out"
    failing = KillOnce(str(tmp_path / "m"), trigger="shard3 ", mode="raise", always=True)
    with pytest.raises(Exception, match=r"census of '.*t3\.txt' failed"):
        run_census(texts, CensusOptions("text", failing, per_line=True), out, executor=client, retries=0)
    healed = KillOnce(str(tmp_path / "m"), trigger="shard3 ", mode="raise")
    res = run_census(texts, CensusOptions("text", healed, per_line=True), out, executor=client)
    assert (res.reused, res.computed) == (4, 1)
    assert np.array_equal(res.lengths, lengths_from_text_files(texts, "whitespace", per_line=True))


def test_rank_audits_on_the_cluster_equal_serial(client: Any, tmp_path: Path) -> None:
    lengths = default_lengths(seed=0)[:8000]
    cfg = PackerConfig(min_buffer=50, rows=500, exhausted="drain")
    serial = audit_ranks(lengths, 4, cfg, policies=["discard", "continue"], row_group_size=512)
    execution: dict[str, Any] = {}
    with open_runner(client) as runner:
        remote = audit_ranks(lengths, 4, cfg, policies=["discard", "continue"], row_group_size=512,
                             executor=runner, execution=execution)
    assert {t["worker"] for t in execution["tasks"]} <= set(client.scheduler_info()["workers"])
    assert remote == serial and all(s.complete for s in remote)
    assert [s.to_dict() for s in remote] == [s.to_dict() for s in serial]
    files = make_parquet(str(tmp_path), rows=120, row_group_size=20)
    source = ParquetSource(tuple(files), "bytes")
    pcfg = PackerConfig(capacity=257, min_buffer=8, exhausted="drain")
    assert audit_ranks(source, 2, pcfg, executor=client) == audit_ranks(source, 2, pcfg)


def test_cli_with_a_dask_scheduler_equals_serial(client: Any, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    address = client.scheduler.address.replace("tcp://", "dask://")
    texts = make_texts(str(tmp_path))
    args = ["census", "--text", *texts, "--per-line", "--tokenizer", "whitespace"]
    assert main([*args, "--out", str(tmp_path / "s")]) == 0
    assert main([*args, "--out", str(tmp_path / "d"), "--executor", address]) == 0
    assert "reused 0, computed 4; executor dask://" in capsys.readouterr().err
    docs = [json.loads((tmp_path / d / "census.json").read_text()) for d in ("s", "d")]
    assert strip_run_fields(docs[0]) == strip_run_fields(docs[1])
    np.save(tmp_path / "l.npy", default_lengths(seed=0)[:6000])
    audit = ["audit", "--lengths", str(tmp_path / "l.npy"), "--policy", "discard,continue", "--rows", "300",
             "--permutations", "2", "--no-plots", "--no-progress", "--world-size", "3",
             "--row-group-size", "256"]
    assert main([*audit, "--out", str(tmp_path / "as")]) == 0
    assert main([*audit, "--out", str(tmp_path / "ad"), "--executor", address]) == 0
    reports = [json.loads((tmp_path / d / "audit.json").read_text()) for d in ("as", "ad")]
    assert strip_run_fields(reports[0]) == strip_run_fields(reports[1])
    assert reports[0]["ranks"]["policies"]["discard"]["global"]["documents"] == 6000
    assert sys.modules.get("distributed") is distributed


def _server(behaviour: str) -> tuple[int, Any]:
    """A loopback TCP server that is not a Dask scheduler: it stays silent, or answers garbage and closes."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            if behaviour == "garbage":
                conn.sendall(b"\xff" * 64 + b"HTTP/1.0 400 Bad Request\r\n\r\n")
                conn.close()
            else:
                held.append(conn)  # accept and never answer

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1], srv


@pytest.mark.parametrize("behaviour", ["silent", "garbage", "closed"])
def test_a_port_that_is_not_a_scheduler_fails_on_one_line(behaviour: str) -> None:
    """Review finding: an HTTP server's port hung the census forever; a garbage answer gave
    'out of memory'."""
    import time

    from packing_theory.distributed.executors import connect_dask

    if behaviour == "closed":
        import socket

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port, srv = s.getsockname()[1], s
        s.close()
    else:
        port, srv = _server(behaviour)
    t0 = time.monotonic()
    try:
        with pytest.raises(ValueError, match=rf"--executor dask://127\.0\.0\.1:{port}: "):
            connect_dask(f"tcp://127.0.0.1:{port}", timeout=3.0)
    finally:
        srv.close()
    assert time.monotonic() - t0 < 60  # it gave up; it did not hang (the bound is 3 s + 1 s)
