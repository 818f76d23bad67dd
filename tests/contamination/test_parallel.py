"""The parallel scan (one input per task, local processes or a Dask cluster) gives the serial scan's report.

The Dask test is skipped (visibly) without dask.distributed:
``pip install "packing-theory[distributed]"``.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tests.contamination.corpora as corpora
from packing_theory.contamination import CorpusInput, ReferenceSpec, scan_contamination
from packing_theory.corpus import write_shards
from packing_theory.distributed.executors import open_executor


def _corpus(tmp: Path) -> tuple[list[CorpusInput], list[ReferenceSpec], corpora.Planted]:
    p = corpora.planted(8, documents=90, hit_every=5)
    docs = [[0, *d] for d in p.docs]  # shard documents start with their BOS
    m = write_shards(tmp / "mix", docs, vocab=corpora.VOCAB + 100, shard_tokens=700, sources=p.sources,
                     bos_id=0)
    shards = [CorpusInput(str(tmp / "mix" / s["path"]), "shard") for s in m["shards"]]
    jsonl = corpora.write_jsonl(p, tmp / "c.jsonl")
    inputs = [*shards, CorpusInput(str(jsonl), "jsonl", source_column="source")]
    refs = [ReferenceSpec(str(p.write_references(tmp / "refs.txt")), per_line=True)]
    return inputs, refs, p


def _same(a: Any, b: Any) -> None:
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d.pop("seconds"), d.pop("timings")
    assert da == db
    assert a.mask is not None and b.mask is not None and a.mask.tolist() == b.mask.tolist()
    assert a.lengths is not None and b.lengths is not None and a.lengths.tolist() == b.lengths.tolist()


@pytest.mark.parametrize("memory_grams", [10**6, 40])
def test_local_processes_give_the_serial_report(tmp_path: Path, memory_grams: int) -> None:
    inputs, refs, p = _corpus(tmp_path)
    kw: dict[str, Any] = {"tokenizer": corpora.ids_tokenizer, "n": corpora.N, "memory_grams": memory_grams,
                          "index_dir": tmp_path / "idx"}
    serial = scan_contamination(inputs, refs, **kw)
    with ProcessPoolExecutor(max_workers=2) as pool:
        parallel = scan_contamination(inputs, refs, executor=pool, **kw)
    _same(serial, parallel)
    assert parallel.index["passes"] == (1 if memory_grams > 1000 else -(-parallel.reference_grams // 40))
    expected = p.expected()  # the shards' documents, then the same documents again from the JSON Lines file
    assert parallel.documents_scanned == 2 * len(p.docs) and parallel.matched_grams == 2 * sum(expected)
    hits = [i for i, m in enumerate(expected) if m]
    assert [h.index for h in parallel.hit_documents] == hits + [len(p.docs) + i for i in hits]
    assert (tmp_path / "idx").exists() and list((tmp_path / "idx").iterdir()) == []


def test_open_executor_local_with_one_worker_is_the_serial_scan(tmp_path: Path) -> None:
    inputs, refs, _ = _corpus(tmp_path)
    with open_executor("local", workers=1) as executor:
        assert executor is None
        rep = scan_contamination(inputs, refs, tokenizer=corpora.ids_tokenizer, executor=executor)
    assert rep.status == 1


def test_a_dask_cluster_gives_the_serial_report(tmp_path: Path) -> None:
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed: pip install 'packing-theory[distributed]'")
    import cloudpickle

    cloudpickle.register_pickle_by_value(corpora)  # the workers cannot import tests/
    inputs, refs, _ = _corpus(tmp_path)
    kw: dict[str, Any] = {"tokenizer": corpora.ids_tokenizer, "n": corpora.N, "memory_grams": 60,
                          "index_dir": tmp_path / "idx"}
    serial = scan_contamination(inputs, refs, **kw)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    with cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        with open_executor(address, workers=2) as executor:
            parallel = scan_contamination(inputs, refs, executor=executor, **kw)
    _same(serial, parallel)
    assert parallel.index["passes"] > 1 and np.flatnonzero(parallel.mask).size == len(parallel.hit_documents)
