"""Compare the engines with rows produced by running the public loaders' own code.

The golden dumps come from a local, never-committed harness that ran
autoresearch ``make_dataloader`` (228791f), autoresearch PR #372 (adfd0fa),
nanochat master's BOS best-fit loader (92d63d4) and nanochat PR #544
(767df6e) on synthetic documents: document ``d`` (0-based arrival index) of
BOS-inclusive length ``L`` is ``[0] + [(d+1)*1_000_000 + p for p in 1..L-1]``
with BOS = 0, batched the way each loader batches tokenizer input.

Usage::

    python tools/loader_golden.py compare DUMP_DIR          # token-for-token agreement
    python tools/loader_golden.py fixtures DUMP_DIR OUT_DIR # compact digests for tests

A fixture keeps only what the replay needs (lengths per arrival, tokenizer
batch sizes, R, B, policy, row count) and a SHA-256 per block of 64 golden
rows, so ``tests/test_loader_golden.py`` re-checks agreement in CI without the
loaders' code or their 96 MB of output.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import packing_theory as pt

POLICY = {
    "autoresearch_228791f": "discard",
    "nanochat_master": "discard",
    "autoresearch_pr372": "continue",
    "nanochat_pr544": "requeue-bos",
}
BLOCK = 64


def encoded_docs(lengths: Sequence[int]) -> Iterator[list[int]]:
    for d, n in enumerate(lengths):
        yield [0] + [(d + 1) * 1_000_000 + p for p in range(1, n)]


def replay_rows(meta: dict[str, Any]) -> Iterator[list[int]]:
    """Our fast engine's token rows for a golden stream."""
    config = pt.PackerConfig(
        capacity=int(meta["R"]),
        min_buffer=int(meta["buffer_size"]),
        refill=tuple(int(b) for b in meta["encode_batch_sizes"]),
        policy=POLICY[meta["loader"]],
        rows=int(meta["n_rows"]),
    )
    return pt.Packer(config).token_rows(encoded_docs(meta["lengths"]))


def load_dump(path: Path) -> tuple[dict[str, Any], np.ndarray | list[list[int]]]:
    if path.suffix == ".npz":
        meta = json.loads(path.with_suffix(".meta.json").read_text())
        data = np.load(path)
        return meta, data["rows"]
    meta = json.loads(path.read_text())
    return meta, meta.pop("rows")


def block_digests(rows: Iterator[Sequence[int]] | Sequence[Sequence[int]]) -> list[str]:
    digests = []
    h = hashlib.sha256()
    k = 0
    for row in rows:
        h.update(np.asarray(row, dtype=np.int64).tobytes())
        k += 1
        if k == BLOCK:
            digests.append(h.hexdigest())
            h = hashlib.sha256()
            k = 0
    if k:
        digests.append(h.hexdigest())
    return digests


def dumps(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir()
                  if p.name.endswith((".json", ".npz")) and not p.name.endswith((".runs.json", ".meta.json")))


def compare(directory: Path) -> int:
    total = agreed = 0
    for path in dumps(directory):
        meta, golden = load_dump(path)
        ours = list(replay_rows(meta))
        same = sum(1 for a, b in zip(ours, golden, strict=False) if list(a) == [int(x) for x in b])
        n = len(golden)
        total += n
        agreed += same if len(ours) == n else 0
        print(f"{path.name}: {same}/{n} rows identical (ours {len(ours)})")
    print(f"TOTAL: {agreed}/{total} rows identical token for token")
    return 0 if agreed == total else 1


def fixtures(directory: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for path in dumps(directory):
        meta, golden = load_dump(path)
        fixture = {
            "loader": meta["loader"], "commit": meta["commit"], "stream": meta["stream"],
            "R": meta["R"], "buffer_size": meta["buffer_size"], "n_rows": len(golden),
            "policy": POLICY[meta["loader"]], "token_encoding": meta["token_encoding"],
            "lengths": [int(x) for x in meta["lengths"]],
            "encode_batch_sizes": [int(x) for x in meta["encode_batch_sizes"]],
            "block": BLOCK, "row_block_sha256": block_digests(golden),
        }
        name = path.name.rsplit(".", 1)[0] + ".json"
        (out / name).write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2])))
    if len(sys.argv) >= 4 and sys.argv[1] == "fixtures":
        sys.exit(fixtures(Path(sys.argv[2]), Path(sys.argv[3])))
    print(__doc__)
    sys.exit(2)
