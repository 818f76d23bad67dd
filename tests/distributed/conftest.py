"""The local Dask cluster the cluster tests run on (one per test module; skipped without dask.distributed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A client of a two-worker local cluster (processes, one thread each), closed after the module."""
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed: pip install 'packing-theory[distributed]'")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    with cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c
