"""A census on a real local Dask cluster keeps every record's own name, byte for byte as the serial census.

Skipped (visibly) without dask.distributed: ``pip install "packing-theory[distributed]"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed: pip install 'packing-theory[distributed]'")

from packing_theory.audit.documents import census_names  # noqa: E402
from packing_theory.distributed import CensusOptions, run_census  # noqa: E402
from packing_theory.orchestration import open_corpus  # noqa: E402
from tests.cli.test_census_names import _jsonl_corpus, _parquet_corpus  # noqa: E402

pytestmark = pytest.mark.xdist_group("dask_cluster")  # one pytest worker starts the cluster, once


def test_cluster_census_names_equal_serial_and_data(client: Any, tmp_path: Path) -> None:
    cases = [(sorted(str(p) for p in _jsonl_corpus(tmp_path).rglob("*.jsonl")), "jsonl"),
             (sorted(str(p) for p in _parquet_corpus(tmp_path).rglob("*.parquet")), "parquet")]
    for k, (paths, kind) in enumerate(cases):
        options = CensusOptions(kind, "whitespace")  # type: ignore[arg-type]
        run_census(paths, options, tmp_path / f"serial{k}")
        remote = run_census(paths, options, tmp_path / f"dask{k}", executor=client)
        for name in ("doc_names.bin", "doc_name_offsets.npy"):
            serial, dask = tmp_path / f"serial{k}" / name, tmp_path / f"dask{k}" / name
            assert serial.read_bytes() == dask.read_bytes()
        n = int(remote.lengths.size)
        names = census_names(tmp_path / f"dask{k}" / "census.json", n)
        assert names is not None and remote.manifest["names"]["named"] > 0
        corpus = open_corpus(paths, format=kind, tokenizer="whitespace")
        assert names.take(np.arange(n, dtype=np.int64)) == [corpus.name(i) for i in range(n)]
