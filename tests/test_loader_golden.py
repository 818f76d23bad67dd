"""Token-for-token agreement with rows produced by the public loaders' own code.

The fixtures (``tests/data/loader_golden``) hold the arrival lengths, the
tokenizer batch sizes and SHA-256 digests of blocks of rows that the public
loaders emitted when run locally (see ``tools/loader_golden.py``): autoresearch
228791f and nanochat master (``discard``), autoresearch PR #372
(``continue``), nanochat PR #544 (``requeue-bos``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import packing_theory as pt

FIXTURES = sorted((Path(__file__).parent / "data" / "loader_golden").glob("*.json"))
BLOCK_TEST_ROWS = 600  # the reference engine re-checks this many leading rows per stream


def _rows(meta: dict[str, Any], engine: str, rows: int) -> list[list[int]]:
    docs = ([0] + [(d + 1) * 1_000_000 + p for p in range(1, n)] for d, n in enumerate(meta["lengths"]))
    packer = pt.make_packer(
        engine,
        capacity=meta["R"],
        min_buffer=meta["buffer_size"],
        refill=tuple(meta["encode_batch_sizes"]),
        policy=meta["policy"],
        rows=rows,
    )
    return list(packer.token_rows(docs))


def _digests(rows: list[list[int]], block: int) -> list[str]:
    import hashlib

    import numpy as np

    out = []
    for i in range(0, len(rows), block):
        h = hashlib.sha256()
        for row in rows[i : i + block]:
            h.update(np.asarray(row, dtype=np.int64).tobytes())
        out.append(h.hexdigest())
    return out


def test_fixtures_present() -> None:
    assert len(FIXTURES) == 42


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fast_engine_matches_loader(path: Path) -> None:
    meta = json.loads(path.read_text())
    rows = _rows(meta, "fast", meta["n_rows"])
    assert len(rows) == meta["n_rows"]
    assert _digests(rows, meta["block"]) == meta["row_block_sha256"]


@pytest.mark.parametrize("path", FIXTURES[::3], ids=lambda p: p.stem)
def test_reference_engine_matches_loader(path: Path) -> None:
    meta = json.loads(path.read_text())
    n = min(meta["n_rows"], BLOCK_TEST_ROWS // meta["block"] * meta["block"])
    rows = _rows(meta, "reference", n)
    k = n // meta["block"]
    assert _digests(rows, meta["block"]) == meta["row_block_sha256"][:k]
