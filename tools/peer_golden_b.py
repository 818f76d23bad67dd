"""Run torchtune's, Axolotl's and NeMo's own packing code and write golden digests.

The frameworks' code is never committed: point this harness at unpacked
wheels (``pip download --no-deps torchtune==0.6.1 axolotl==0.19.0
nemo-toolkit==3.0.0`` then unzip) and run it in a venv with ``torch==2.13.0``,
``numba``, ``numpy`` and ``tqdm``. Each packing file is loaded by path, with
small stub modules standing in for the package ``__init__`` chains (logging,
distributed helpers, constants).

Usage::

    python tools/peer_golden_b.py WHEELS_DIR tests/data/peer_golden/part_b [--streams 1000]

For every configuration it generates ``--streams`` length streams (heavy
ties; lengths 0, 1, L-1, L, L+1, 3L; several sizes), runs the framework on
synthetic documents (document ``d`` holds tokens ``(d+1)*1_000_000 + p``),
and writes ``OUT_DIR/<framework>-<version>-c<NN>.json`` with the lengths, the
options and one SHA-256 (first 16 hex digits) per stream over everything the
framework emitted row by row (which document, which token range, which
position ids), or ``"ValueError"`` where the framework raised.
``tests/test_peer_golden_b.py`` replays every stream with our peers.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import random
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

TOKEN_BASE = 1_000_000


def document(d: int, n: int) -> list[int]:
    """Synthetic document ``d`` of ``n`` tokens."""
    return [(d + 1) * TOKEN_BASE + p for p in range(n)]


def digest(parts: Iterable[Sequence[int] | str]) -> str:
    """SHA-256 (16 hex digits) over tagged int64 arrays and string markers."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            h.update(b"|" + part.encode())
        else:
            h.update(b"#" + str(len(part)).encode() + b":")
            h.update(np.asarray(part, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def streams(rng: random.Random, L: int, count: int, *, max_len: int | None = None) -> list[list[int]]:
    """Generated length streams: specials 0, 1, 2, L-1, L, L+1, 3L, heavy ties, random lengths.

    ``max_len`` redraws longer lengths uniformly in ``1..max_len``.
    """
    specials = [0, 1, 2, L - 1, L, L + 1, 3 * L]
    out = []
    for k in range(count):
        n = rng.choice([0, 1, 2, 3, 5, 8, 13, 21, 34, 60])
        kind = k % 4
        ties = [rng.randint(1, 2 * L) for _ in range(rng.randint(1, 3))]
        s = []
        for _ in range(n):
            r = rng.random()
            if kind == 0 or r < 0.25:
                v = rng.choice(specials)
            elif kind == 1 or r < 0.5:
                v = rng.choice(ties)
            else:
                v = rng.randint(1, 2 * L)
            if max_len is not None and v > max_len:
                v = rng.randint(1, max_len)
            s.append(v)
        out.append(s)
    return out


# ----------------------------------------------------------------------------- loading
def stub(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__path__ = []  # type: ignore[attr-defined]
    sys.modules[name] = mod
    return mod


def load_path(name: str, path: Path) -> types.ModuleType:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_functions(
    path: Path, names: Sequence[str], namespace: dict[str, Any]
) -> dict[str, Callable[..., Any]]:
    """Execute only the named top-level function definitions of a file (its imports are heavy)."""
    tree = ast.parse(path.read_text())
    body = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    ns = dict(namespace)
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), ns)
    return {n: ns[n] for n in names}


# ----------------------------------------------------------------------------- torchtune
def torchtune_configs() -> list[dict[str, Any]]:
    out = []
    for split in (False, True):
        for L, max_packs in ((8, None), (16, None), (64, None), (16, 3), (8, 1)):
            out.append({"split_across_pack": split, "L": L, "max_packs": max_packs, "padding_idx": 0})
    out.append({"split_across_pack": True, "L": 8, "max_packs": None, "padding_idx": 7})
    return out


def run_torchtune(root: Path, cfg: dict[str, Any], lengths: list[int]) -> str:
    import torch  # noqa: F401  (the packing file needs it)

    if "tt_packed" not in sys.modules:
        stub("torchtune")
        stub("torchtune.data")
        stub("torchtune.data._common", CROSS_ENTROPY_IGNORE_IDX=-100, PACK_TYPE=dict)
        load_path("tt_packed", root / "torchtune-0.6.1-py3-none-any/torchtune/datasets/_packed.py")
    packed = sys.modules["tt_packed"]
    ds = [{"tokens": document(d, n), "labels": document(d, n)} for d, n in enumerate(lengths)]
    import contextlib
    import io

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            pd = packed.PackedDataset(
                ds,
                max_seq_len=cfg["L"],
                padding_idx=cfg["padding_idx"],
                max_packs=cfg["max_packs"],
                split_across_pack=cfg["split_across_pack"],
            )
    except ValueError:
        return "ValueError"
    parts: list[Any] = []
    for pack in pd.packs:
        parts += [
            "pack",
            pack["tokens"].tolist(),
            pack["labels"].tolist(),
            pack["input_pos"].tolist(),
            pack["seq_lens"].tolist(),
        ]
    return digest(parts)


# ----------------------------------------------------------------------------- axolotl
def axolotl_configs() -> list[dict[str, Any]]:
    base = {
        "excess_length_strategy": "drop",
        "min_sample_len": None,
        "micro_batch_size": 1,
        "multipack_real_batches": False,
        "bin_size": 200,
        "group_size": 100_000,
        "sequential": False,
        "drop_last": True,
        "epochs": 1,
        "seed": None,
        "world_size": 1,
        "version": "0.19.0",
        "L": 16,
    }
    variants = [
        {},
        {"L": 8, "seed": 3, "epochs": 2},
        {"excess_length_strategy": "truncate", "min_sample_len": 1},
        {"bin_size": 2, "group_size": 7, "seed": 11},
        {"sequential": True, "seed": 5},
        {"multipack_real_batches": True, "micro_batch_size": 3, "seed": 7, "epochs": 2},
        {"micro_batch_size": 2, "drop_last": False, "seed": 1},
        {"multipack_real_batches": True, "micro_batch_size": 2, "world_size": 4, "seed": 2, "L": 32},
        {
            "version": "0.12.2",
            "world_size": 4,
            "seed": 2,
            "multipack_real_batches": True,
            "micro_batch_size": 2,
        },
    ]
    return [{**base, **v} for v in variants]


def axolotl_draw(seed: int | None, d: int, k: int) -> list[int]:
    """The sampler order our peer documents: identity, or PCG64([seed, d]) permutations."""
    if seed is None:
        return list(range(k))
    return [int(x) for x in np.random.Generator(np.random.PCG64([seed, d])).permutation(k)]


def run_axolotl(root: Path, cfg: dict[str, Any], lengths: list[int]) -> str:
    version = cfg["version"]
    key = f"ax_multipack_{version}".replace(".", "_")
    if key not in sys.modules:
        import logging

        stub("axolotl")
        stub("axolotl.utils")
        stub("axolotl.utils.distributed", reduce_and_broadcast=lambda fn, reduce: reduce([fn()]))
        stub("axolotl.utils.logging", get_logger=logging.getLogger)
        if version == "0.12.2":
            base = root / "axolotl-0.12.2-src/axolotl-0.12.2/src/axolotl"
            fns = load_functions(base / "utils/trainer.py", ["drop_long_seq"], {})

            def filter_0122(sample: Any, sequence_len: int, min_sequence_len: int, raise_on_drop: Any) -> Any:
                drop = fns["drop_long_seq"]
                return drop(sample, sequence_len=sequence_len, min_sequence_len=min_sequence_len)

            fns["filter_sequences_by_length"] = filter_0122
        else:
            base = root / "axolotl-0.19.0-py3-none-any/axolotl"
            fns = load_functions(base / "utils/trainer.py", ["filter_sequences_by_length"], {})
            fns.update(
                load_functions(base / "utils/data/utils.py", ["keep_min_len", "truncate_long_seq"], {})
            )
        load_path(key, base / "utils/samplers/multipack.py")
        sys.modules[key].__dict__["_filters"] = fns
        # gc.collect() after every batch generation changes nothing in the packing; skip it for speed
        sys.modules[key].__dict__["gc"] = types.SimpleNamespace(collect=lambda: 0)
    mp = sys.modules[key]
    fns = mp.__dict__["_filters"]
    L = cfg["L"]
    ids = [document(d, n) for d, n in enumerate(lengths)]
    # handle_long_seq_in_dataset, on one batch holding the whole dataset
    rows = list(range(len(ids)))
    if cfg["excess_length_strategy"] == "truncate":
        keep = fns["keep_min_len"](
            {"input_ids": [ids[r] for r in rows]}, min_sequence_len=cfg["min_sample_len"]
        )
        rows = [r for r, k in zip(rows, keep, strict=False) if k]
        sample = {"input_ids": [list(ids[r]) for r in rows]}
        sample = fns["truncate_long_seq"](sample, sequence_len=L)
        data = sample["input_ids"]
    else:
        if not rows:
            keep = []
        else:
            keep = fns["filter_sequences_by_length"](
                {"input_ids": [ids[r] for r in rows]},
                sequence_len=L,
                min_sequence_len=cfg["min_sample_len"],
                raise_on_drop=False,
            )
        rows = [r for r, k in zip(rows, keep, strict=False) if k]
        data = [ids[r] for r in rows]
    k = len(rows)
    if k == 0:
        return digest(["empty"])
    if cfg["multipack_real_batches"]:
        batch_size, cap = cfg["micro_batch_size"], L
    else:
        batch_size, cap = 1, cfg["micro_batch_size"] * L
    n_est = 1 if (cfg["version"] != "0.12.2" and cfg["world_size"] >= 4) else 4
    draws = [axolotl_draw(cfg["seed"], d, k) for d in range(1 + n_est + cfg["epochs"])]

    class Replay:
        def __init__(self) -> None:
            self.i = 0

        def __iter__(self):  # type: ignore[no-untyped-def]
            order = draws[self.i]
            self.i += 1
            return iter(order)

        def __len__(self) -> int:
            return k

    os.environ["WORLD_SIZE"] = str(cfg["world_size"])
    sampler = mp.MultipackBatchSampler(
        Replay(),
        batch_size=batch_size,
        batch_max_len=cap,
        lengths=np.array([len(x) for x in data]),
        bin_size=cfg["bin_size"],
        drop_last=cfg["drop_last"],
        sequential=cfg["sequential"],
        group_size=cfg["group_size"],
        num_processes=1,
    )
    try:
        len(sampler)
    except IndexError:  # 0.12.2: drop_last leaving no batch indexes batches[-1] of an empty list
        return "ValueError"
    parts: list[Any] = []
    for e in range(cfg["epochs"]):
        sampler.set_epoch(e)
        parts.append(f"epoch{e}")
        for batch in sampler:
            parts.append("batch")
            for bin_ in batch:
                tokens: list[int] = []
                pos: list[int] = []
                for j in bin_:
                    tokens += data[j]
                    pos += list(range(len(data[j])))
                parts += ["bin", [rows[j] for j in bin_], tokens, pos]
    return digest(parts)


# ----------------------------------------------------------------------------- NeMo
def nemo_configs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for algo in ("first_fit", "first_fit_decreasing", "first_fit_shuffle"):
        for L, seed in ((8, 0), (16, 1), (64, 2)):
            out.append({"algorithm": algo, "L": L, "seed": seed, "pad_id": 0})
    for algo in ("first_fit", "first_fit_decreasing", "first_fit_shuffle"):
        out.append({"algorithm": algo, "L": 16, "seed": 3, "pad_id": 0, "version": "2.0.0"})
    return out


def run_nemo(root: Path, cfg: dict[str, Any], lengths: list[int]) -> str:
    version = cfg.get("version", "3.0.0")
    key = f"nemo_spu_{version}".replace(".", "_")
    if key not in sys.modules:
        import logging

        stub("nemo")
        stub("nemo.utils", logging=logging.getLogger("nemo"))
        load_path(key, root / f"nemo_toolkit-{version}-py3-none-any/nemo/utils/sequence_packing_utils.py")
    spu = sys.modules[key]
    P = cfg["L"]
    dataset = [
        {"input_ids": document(d, n), "loss_mask": [True] * n, "answer_start_idx": 0}
        for d, n in enumerate(lengths)
    ]
    import contextlib
    import io

    np.random.seed(cfg["seed"])
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            sequences, hist = spu.create_hist(dataset, P)
            if version == "2.0.0":
                assignments = spu.create_packing_strategy(hist, P, cfg["algorithm"])
                out = spu.fill_packing_strategy(assignments, sequences, P)
            else:
                assignments, _ = spu.create_packing_strategy(hist, P, cfg["algorithm"])
                out = spu.fill_packing_strategy(assignments, sequences, P, cfg["pad_id"])
    except (ValueError, KeyError, IndexError, ZeroDivisionError):
        return "ValueError"
    parts: list[Any] = []
    for item in out:
        ids = list(item["input_ids"])
        starts = list(item["seq_start_id"])
        bounds = [*starts, len(ids)]
        inputs: list[int] = []
        for a, b in itertools.pairwise(bounds):
            inputs += ids[a : b - 1]
        parts += ["pack", ids, starts, inputs + [cfg["pad_id"]] * (P - len(inputs))]
    return digest(parts)


RUNNERS = {
    "torchtune": (torchtune_configs, run_torchtune),
    "axolotl": (axolotl_configs, run_axolotl),
    "nemo": (nemo_configs, run_nemo),
}


def config_name(framework: str, version: str, c: int) -> str:
    return f"{framework}-{version}-c{c:02d}"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    root, out = Path(argv[0]), Path(argv[1])
    count = int(argv[argv.index("--streams") + 1]) if "--streams" in argv else 1000
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    out.mkdir(parents=True, exist_ok=True)
    for framework, (configs, run) in RUNNERS.items():
        if only and framework != only:
            continue
        for c, cfg in enumerate(configs()):
            rng = random.Random(f"{framework}-{c}")
            L = cfg["L"]
            if framework == "torchtune" and not cfg["split_across_pack"]:
                ss = streams(rng, L, count, max_len=L)
                for s in ss[::40]:  # a few streams hold an over-long sample: the framework raises
                    s.append(L + 1)
            elif framework == "nemo":
                # NeMo 2.0.0's histogram stops one length short: keep most of its streams packable
                ss = streams(rng, L, count, max_len=L + 1 if cfg.get("version", "3.0.0") != "2.0.0" else L)
                for s in ss[::50]:
                    s.append(L + 2)
                if cfg.get("version") == "2.0.0":
                    for s in ss[1::20]:  # seq_len == pack_size: packable in 3.0.0, not in 2.0.0
                        s.append(L + 1)
            else:
                ss = streams(rng, L, count)
            results = [run(root, cfg, s) for s in ss]
            versions = {
                "torchtune": "0.6.1",
                "axolotl": cfg.get("version", "0.19.0"),
                "nemo": cfg.get("version", "3.0.0"),
            }
            name = config_name(framework, versions[framework], c)
            fixture = {
                "framework": framework,
                "version": versions[framework],
                "config": cfg,
                "token_base": TOKEN_BASE,
                "streams": ss,
                "digests": results,
            }
            (out / f"{name}.json").write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
            errors = sum(r == "ValueError" for r in results)
            print(f"{name}: {len(ss)} streams, {errors} raised")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
