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
    python tools/loader_golden.py epochs AUTORESEARCH_GIT NANOCHAT_GIT DUMP_DIR

A fixture keeps only what the replay needs (lengths per arrival, tokenizer
batch sizes, R, B, policy, row count) and a SHA-256 per block of 64 golden
rows, so ``tests/engine/test_loader_golden.py`` re-checks agreement in CI without the
loaders' code or their 96 MB of output.

Several epochs, directly
------------------------
``epochs`` runs the public loaders' own code over several epochs of one
synthetic corpus (the buffer persists across epochs; every epoch restarts the
batching of its row groups). It reads each loader's source at its commit from
a local clone (``git --git-dir GIT show COMMIT:PATH``, e.g. the clones the
``fetch`` tool leaves under ``/work/.mirror``) into a temporary directory
outside this repository, loads it with stubs for what it cannot have here —
``pyarrow.parquet`` (a fake ``ParquetFile`` serving synthetic row groups),
CUDA (``torch.empty(..., pin_memory=True, device="cuda")`` made CPU-only),
the tokenizer (document ``g`` of BOS-inclusive length ``L`` encodes as
``[0] + [(g+1)*1_000_000 + p for p in 1..L-1]``, the same ids every epoch),
nanochat's ``get_dist_info`` / ``list_parquet_files`` and autoresearch's
unused ``requests`` / ``rustbpe`` / ``tiktoken`` — and records every row
plus every yielded ``epoch`` (autoresearch) or ``state_dict`` (nanochat).
Their code is never copied into this repository; only the digests are.
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


def replay_rows(meta: dict[str, Any], n_rows: int | None = None) -> Iterator[list[int]]:
    """Our fast engine's token rows for a golden stream (several passes when the dump spans epochs)."""
    rows = int(n_rows if n_rows is not None else meta["n_rows"])
    config = pt.PackerConfig(
        capacity=int(meta["R"]),
        min_buffer=int(meta["buffer_size"]),
        refill=tuple(int(b) for b in meta["encode_batch_sizes"]),
        policy=POLICY[meta["loader"]],
        rows=rows,
        passes=int(meta.get("epochs", 1)) + 1,
    )
    if "tags" in meta:  # a multi-epoch dump: documents read by source id, the same ids every pass
        docs = [tag_tokens(g, n) for g, n in zip(meta["tags"], meta["lengths"], strict=True)]
        return pt.Packer(config).token_rows(docs)
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
        meta.setdefault("n_rows", len(golden))
        ours = list(replay_rows(meta, len(golden)))
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
        for key in ("tags", "row_groups", "epochs", "yields", "batch_rows"):  # multi-epoch dumps
            if key in meta:
                fixture[key] = meta[key]
        name = path.name.rsplit(".", 1)[0] + ".json"
        (out / name).write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
        print(f"wrote {out / name}")
    return 0



# --------------------------------------------------------------------------- several epochs, directly

LOADER_SOURCES = {  # loader -> (repository, commit, path)
    "autoresearch_228791f": ("autoresearch", "228791fb499afffb54b46200aca536f79142f117", "prepare.py"),
    "autoresearch_pr372": ("autoresearch", "adfd0fac0ac9e6a48b975765332305f7d45ebea7", "prepare.py"),
    "nanochat_master": ("nanochat", "92d63d4e8bb4df75c3b71618f31ddde2378b2bcd", "nanochat/dataloader.py"),
    "nanochat_pr544": ("nanochat", "767df6ef61a37e845489fb0973b27892672cdf19", "nanochat/dataloader.py"),
}
TAG_ENCODING = ("BOS=0; document with tag g, BOS-inclusive position p>=1 -> (g+1)*1000000+p "
                "(same ids every epoch)")


def tag_tokens(tag: int, length: int) -> list[int]:
    return [0] + [(tag + 1) * 1_000_000 + p for p in range(1, length)]


class _FakeColumn:
    def __init__(self, texts: list[str]) -> None:
        self._texts = texts

    def to_pylist(self) -> list[str]:
        return list(self._texts)


class _FakeRowGroup:
    def __init__(self, texts: list[str]) -> None:
        self._texts = texts

    def column(self, name: str) -> _FakeColumn:
        assert name == "text"
        return _FakeColumn(self._texts)


class _FakeParquet:
    """Stands in for ``pyarrow.parquet``: files are lists of row groups of texts ``"tag:length"``."""

    def __init__(self, files: dict[str, list[list[str]]]) -> None:
        self.files = files

    def ParquetFile(self, path: str) -> Any:  # the pyarrow name
        groups = self.files[path]

        class _File:
            num_row_groups = len(groups)

            def read_row_group(self, i: int, columns: Any = None) -> _FakeRowGroup:
                return _FakeRowGroup(groups[i])

        return _File()


class _FakeTokenizer:
    def get_bos_token_id(self) -> int:
        return 0

    def encode(self, texts: Any, prepend: Any = None, num_threads: int = 0) -> list[list[int]]:
        assert prepend == 0 and isinstance(texts, list)
        out = []
        for t in texts:
            tag, length = (int(x) for x in t.split(":"))
            out.append(tag_tokens(tag, length))
        return out


class _CpuTorch:
    """``torch`` with ``empty`` made CPU-only (the loaders allocate pinned and CUDA buffers)."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._torch, name)

    def empty(self, *shape: Any, pin_memory: bool = False, device: Any = None, **kw: Any) -> Any:
        return self._torch.empty(*shape, **kw)


def _load_loader(loader: str, git_dir: str, tmp: Path, files: dict[str, list[list[str]]],
                 rank: int, world_size: int) -> Any:
    import importlib.util
    import subprocess
    import types

    import torch

    _, commit, rel = LOADER_SOURCES[loader]
    source = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{rel}"], check=True,
                            capture_output=True, text=True).stdout
    path = tmp / f"{loader}.py"
    path.write_text(source)
    paths = list(files)
    stubs = {name: types.ModuleType(name) for name in ("requests", "rustbpe", "tiktoken")}
    nano = types.ModuleType("nanochat")
    nano.__path__ = []  # type: ignore[attr-defined]
    common = types.ModuleType("nanochat.common")
    common.get_dist_info = lambda: (world_size > 1, rank, rank, world_size)  # type: ignore[attr-defined]
    dataset = types.ModuleType("nanochat.dataset")
    dataset.list_parquet_files = lambda *a, **k: list(paths)  # type: ignore[attr-defined]
    stubs.update({"nanochat": nano, "nanochat.common": common, "nanochat.dataset": dataset})
    saved = {k: sys.modules.get(k) for k in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location(f"golden_{loader}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    module.pq = _FakeParquet(files)
    if loader.startswith("autoresearch"):
        module.torch = _CpuTorch(torch)
        module.list_parquet_files = lambda: list(paths)
        module.DATA_DIR = "/golden"  # val_path = DATA_DIR/VAL_FILENAME is excluded from train
        module.VAL_FILENAME = "val.parquet"  # listed last, so train reads every other file
    return module


def _corpus(seed: int, n_files: int, groups_per_file: int, docs_per_group: tuple[int, int],
            lengths: Any) -> dict[str, list[list[str]]]:
    rng = np.random.default_rng(seed)
    files: dict[str, list[list[str]]] = {}
    tag = 0
    for f in range(n_files):
        groups = []
        for _ in range(groups_per_file):
            n = int(rng.integers(docs_per_group[0], docs_per_group[1] + 1))
            group = []
            for _ in range(n):
                group.append(f"{tag}:{int(lengths(rng))}")
                tag += 1
            groups.append(group)
        files[f"/golden/shard_{f:05d}.parquet"] = groups
    return files


EPOCH_STREAMS: dict[str, dict[str, Any]] = {
    # small: row groups shorter than a tokenizer batch, long documents up to 4R, ~6 epochs
    "epochs_small_T16_B5": {"T": 16, "buffer": 5, "B": 4, "rows": 480, "seed": 11, "files": 3, "groups": 3,
                            "docs": (2, 9), "tokenizer_batch_size": 4, "world_size": 1, "rank": 0,
                            "lengths": lambda rng: 1 + int(rng.pareto(1.2) * 6) % 68},
    # realistic: R = 2049, B = 1000, 1,600 documents in 400-document row groups, ~3 epochs
    "epochs_realistic_T2048_B1000": {"T": 2048, "buffer": 1000, "B": 8, "rows": 1400, "seed": 12, "files": 2,
                                     "groups": 2, "docs": (400, 400), "tokenizer_batch_size": 128,
                                     "world_size": 1, "rank": 0,
                                     "lengths": lambda rng: 1 + int(rng.lognormal(5.8, 1.1)) % 12000},
    # nanochat under DDP: rank 1 of 2 reads row groups 1, 3, ... of every file
    "epochs_ddp_ws2_rank1_T16_B16": {"T": 16, "buffer": 16, "B": 4, "rows": 400, "seed": 13, "files": 3,
                                     "groups": 4, "docs": (3, 11), "tokenizer_batch_size": 4, "world_size": 2,
                                     "rank": 1, "lengths": lambda rng: 1 + int(rng.pareto(1.1) * 5) % 70},
}


def _rank_view(files: dict[str, list[list[str]]], train: list[str], rank: int, world_size: int,
               batch: int) -> dict[str, Any]:
    """What the loader reads in one pass: tags, lengths, tokenizer batch sizes, (file, row group, n)."""
    tags, lengths, sizes, groups = [], [], [], []
    for f, path in enumerate(train):
        for g in range(rank, len(files[path]), world_size):
            texts = files[path][g]
            for t in texts:
                tag, n = (int(x) for x in t.split(":"))
                tags.append(tag)
                lengths.append(n)
            sizes += [min(batch, len(texts) - i) for i in range(0, len(texts), batch)]
            if texts:
                groups.append([f, g, len(texts)])
    return {"tags": tags, "lengths": lengths, "encode_batch_sizes": sizes, "row_groups": groups}


def run_epochs(autoresearch_git: str, nanochat_git: str, out: Path) -> int:
    import tempfile

    out.mkdir(parents=True, exist_ok=True)
    gits = {"autoresearch": autoresearch_git, "nanochat": nanochat_git}
    for stream, cfg in EPOCH_STREAMS.items():
        files = _corpus(cfg["seed"], cfg["files"], cfg["groups"], cfg["docs"], cfg["lengths"])
        files["/golden/val.parquet"] = [["999999:3"]]  # the split rules keep it out of train
        train = [p for p in files if not p.endswith("val.parquet")]
        for loader in LOADER_SOURCES:
            repo = LOADER_SOURCES[loader][0]
            if repo == "autoresearch" and cfg["world_size"] > 1:
                continue  # autoresearch has no DDP split
            with tempfile.TemporaryDirectory() as tmp:
                module = _load_loader(loader, gits[repo], Path(tmp), files, cfg["rank"], cfg["world_size"])
                B, T = cfg["B"], cfg["T"]
                if repo == "autoresearch":
                    it = module.make_dataloader(_FakeTokenizer(), B, T, "train", buffer_size=cfg["buffer"])
                    batch = 128
                else:
                    it = module.tokenizing_distributed_data_loader_with_state_bos_bestfit(
                        _FakeTokenizer(), B, T, "train", tokenizer_batch_size=cfg["tokenizer_batch_size"],
                        device="cpu", buffer_size=cfg["buffer"])
                    batch = cfg["tokenizer_batch_size"]
                rows: list[list[int]] = []
                yields: list[Any] = []
                for _ in range(cfg["rows"] // B):
                    x, y, extra = next(it)
                    full = np.concatenate([x.numpy(), y.numpy()[:, -1:]], axis=1)
                    rows += full.tolist()
                    yields.append(extra if repo == "autoresearch" else
                                  [extra["pq_idx"], extra["rg_idx"], extra["epoch"]])
            view = _rank_view(files, train, cfg["rank"], cfg["world_size"], batch)
            epochs = max(y if isinstance(y, int) else y[2] for y in yields)
            _, commit, rel = LOADER_SOURCES[loader]
            meta = {"loader": loader, "commit": f"karpathy/{repo}@{commit} {rel}", "stream": stream,
                    "R": T + 1, "buffer_size": cfg["buffer"], "batch_rows": B, "policy": POLICY[loader],
                    "token_encoding": TAG_ENCODING, "epochs": epochs, "yields": yields, **view}
            np.savez_compressed(out / f"{loader}__{stream}.npz", rows=np.asarray(rows, dtype=np.int64))
            (out / f"{loader}__{stream}.meta.json").write_text(json.dumps(meta))
            print(f"{loader} {stream}: {len(rows)} rows over {epochs} epochs")
    return 0

if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2])))
    if len(sys.argv) >= 5 and sys.argv[1] == "epochs":
        sys.exit(run_epochs(sys.argv[2], sys.argv[3], Path(sys.argv[4])))
    if len(sys.argv) >= 4 and sys.argv[1] == "fixtures":
        sys.exit(fixtures(Path(sys.argv[2]), Path(sys.argv[3])))
    print(__doc__)
    sys.exit(2)
