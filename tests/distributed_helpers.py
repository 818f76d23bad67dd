"""Helpers the distributed tests send to worker processes (importable, or pickled by value for Dask)."""

from __future__ import annotations

import os

import numpy as np

from packing_theory.corpus import default_lengths, write_shard

__all__ = ["KillOnce", "kill_on_shard1", "make_parquet", "make_shards", "make_texts", "slow_words",
           "strip_run_fields"]


def kill_on_shard1(text: str) -> list[int]:
    """A tokenizer whose process dies on every document of shard 1 (a task that never completes)."""
    if "shard1 " in text:
        os._exit(19)
    return [len(w) for w in text.split()]


def slow_words(text: str) -> list[int]:
    """A whitespace tokenizer that takes a quarter of a second per document (tasks stay in flight)."""
    import time

    time.sleep(0.25)
    return [len(w) for w in text.split()]


class KillOnce:
    """A whitespace tokenizer that fails once, on the first text containing ``trigger``.

    ``mode="exit"`` kills the worker process (``os._exit``), ``"raise"`` raises; ``always=True``
    fails on every call with the trigger (an interrupted run). The marker file makes "once" hold
    across processes.
    """

    def __init__(self, marker: str, trigger: str, mode: str = "exit", always: bool = False) -> None:
        self.marker, self.trigger, self.mode, self.always = marker, trigger, mode, always

    def __call__(self, text: str) -> list[str]:
        if self.trigger in text and (self.always or not os.path.exists(self.marker)):
            with open(self.marker, "a") as fh:
                fh.write(f"{os.getpid()}\n")
            if self.mode == "exit":
                os._exit(17)
            raise RuntimeError(f"planned failure on {self.trigger!r}")
        return [len(w) for w in text.split()]


def make_texts(directory: str, n: int = 4, lines: int = 120) -> list[str]:
    """``n`` plain text files of ``lines`` documents each; file ``i`` holds the word ``shard{i}``."""
    paths = []
    for i in range(n):
        path = os.path.join(directory, f"t{i}.txt")
        with open(path, "w", encoding="utf-8") as fh:
            for j in range(lines):
                fh.write(f"shard{i} " + "w " * ((j * 7 + i) % 23) + ("é" * (j % 3)) + "\n")
                if j % 40 == 0:
                    fh.write("\n")  # blank lines are not documents
        paths.append(path)
    return paths


def make_shards(directory: str, n: int = 3, docs: int = 300) -> list[str]:
    """``n`` seed-002 shards of ``docs`` documents with default-corpus-like lengths (capped at 3000)."""
    lengths = np.minimum(default_lengths(seed=3)[: n * docs], 3000)
    paths = []
    rng = np.random.default_rng(0)
    for i in range(n):
        path = os.path.join(directory, f"s{i}.bin")
        chunk = lengths[i * docs : (i + 1) * docs]
        write_shard(path, [rng.integers(1, 50, size=int(L)) for L in chunk], vocab=64)
        paths.append(path)
    return paths


def make_parquet(directory: str, n: int = 2, rows: int = 200, row_group_size: int = 32) -> list[str]:
    """``n`` parquet files with a ``text`` column and small row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = []
    for i in range(n):
        path = os.path.join(directory, f"p{i}.parquet")
        texts = [f"doc {i} {j} " + "tok " * ((j * 13 + i) % 300) for j in range(rows)]
        pq.write_table(pa.table({"text": texts}), path, row_group_size=row_group_size)
        paths.append(path)
    return paths


def strip_run_fields(doc: dict) -> dict:
    """A report without the fields that differ between runs, at any depth (timings, run ids, who executed
    what)."""
    def strip(v: object) -> object:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("seconds", "run", "execution")}
        return [strip(x) for x in v] if isinstance(v, list) else v

    out = strip(doc)
    assert isinstance(out, dict)
    return out
