"""The frameworks' own packing code, driven for the golden harness (``tools/peer_golden.py``).

Never a dependency of the library and never committed: each runner imports or
loads a framework that must be installed (or unpacked) separately — see
``tools/peer_golden.py`` for the environments. Two kinds of runner:

* row runners (TRL, OLMo-core, Megatron, LLM Foundry) take a row-digest
  configuration and one length list and return the framework's canonical rows
  (and TRL's ``seq_lengths``);
* trainer-view runners (torchtune, Axolotl, NeMo) take the directory of
  unpacked wheels, a configuration and one stream, and return the
  trainer-view digest (:func:`peer_inputs.parts_digest`) or ``"ValueError"``.
  Each packing file is loaded by path, with small stub modules standing in for
  the package ``__init__`` chains (logging, distributed helpers, constants).
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import os
import sys
import tempfile
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_inputs import document, token
from peer_inputs import parts_digest as digest

__all__ = ["ROW_RUNNERS", "TRAINER_RUNNERS", "foundry_root", "framework_rows", "megatron_num_samples"]


def megatron_num_samples(cfg: dict[str, Any], lengths: Sequence[int]) -> Any:
    """Megatron's ``num_samples`` for one input: a configuration gives it relative to an epoch."""
    value = cfg["options"].get("num_samples")
    if isinstance(value, str):
        per_epoch = max((sum(lengths) - 1) // cfg["seq_length"], 1)
        return max(1, int(float(value) * per_epoch))
    return value


# --------------------------------------------------------------------------- row runners


def _docs(lengths: Sequence[int]) -> list[list[int]]:
    return [[token(d, p) for p in range(n)] for d, n in enumerate(lengths)]


def run_trl(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], list[list[int]] | None]:
    import datasets
    from trl import pack_dataset

    datasets.disable_progress_bars()
    strategy = cfg["policy"].split("-", 1)[1]
    L = cfg["seq_length"]
    feats = datasets.Features({"input_ids": datasets.List(datasets.Value("int64"))})
    ds = datasets.Dataset.from_dict({"input_ids": _docs(lengths)}, features=feats)
    out = pack_dataset(ds, L, strategy=strategy, map_kwargs={"batch_size": cfg["options"]["window"]})
    rows = [list(r) + [0] * (L - len(r)) for r in out["input_ids"]]
    seqs = [list(s) for s in out["seq_lengths"]] if "seq_lengths" in out.column_names else None
    return rows, seqs


def run_olmo(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], None]:
    from olmo_core.data.numpy_dataset import NumpyPackedFSLDataset
    from olmo_core.data.types import LongDocStrategy

    L = cfg["seq_length"]
    per = cfg["options"]["documents_per_file"] or len(lengths)
    eos = 1
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for f, lo in enumerate(range(0, len(lengths), per)):
            toks: list[int] = []
            for d in range(lo, min(len(lengths), lo + per)):
                toks.extend(token(d, p) for p in range(lengths[d] - 1))
                toks.append(eos)
            path = os.path.join(tmp, f"part-{f:05d}.npy")
            np.asarray(toks, dtype=np.uint32).tofile(path)
            paths.append(path)
        strategy = LongDocStrategy.truncate if cfg["policy"] == "olmo-truncate" else LongDocStrategy.fragment
        ds = NumpyPackedFSLDataset(*paths, sequence_length=L, pad_token_id=0, eos_token_id=eos,
                                   vocab_size=2**31, dtype=np.uint32, long_doc_strategy=strategy)
        ds.work_dir = Path(tmp) / "work"
        ds.prepare()
        rows = [ds[i]["input_ids"].tolist() for i in range(len(ds))]
    return rows, None


def _megatron_module() -> Any:
    import megatron.core.datasets.gpt_dataset as gpt

    return gpt


class _FakeIndexed:
    def __init__(self, lengths: Sequence[int]) -> None:
        self.sequence_lengths = np.asarray(lengths, dtype=np.int32)
        self.path_prefix = ""

    def get(self, idx: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        n = int(self.sequence_lengths[idx])
        stop = n if length is None else offset + length
        return np.asarray([token(int(idx), p) for p in range(offset, stop)], dtype=np.int64)


def run_megatron(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], None]:
    gpt = _megatron_module()
    from megatron.core.datasets.utils import Split

    conf = types.SimpleNamespace(sequence_length=cfg["seq_length"], add_extra_token_to_sequence=True,
                                 random_seed=cfg["options"]["seed"], path_to_cache=None, mock=True,
                                 defer_npy_index_mmap=False, fast_cache_load=False,
                                 drop_last_partial_validation_sequence=True)
    fake: Any = types.SimpleNamespace(config=conf, num_samples=megatron_num_samples(cfg, lengths),
                                      indices=np.arange(len(lengths), dtype=np.int32),
                                      dataset=_FakeIndexed(lengths), index_split=Split.train,
                                      unique_description_hash="x", _pad_token_id=0)
    fake._get_num_tokens_per_epoch = types.MethodType(gpt.GPTDataset._get_num_tokens_per_epoch, fake)
    fake._get_num_epochs = types.MethodType(gpt.GPTDataset._get_num_epochs, fake)
    doc, sample, shuffle = gpt.GPTDataset._build_document_sample_shuffle_indices(fake)
    fake.document_index, fake.sample_index, fake.shuffle_index = doc, sample, shuffle
    rows = []
    for i in range(sample.shape[0] - 1):
        text = gpt.GPTDataset._query_document_sample_shuffle_indices(fake, i)[0]
        rows.append([int(t) for t in text])
    return rows, None


def foundry_root() -> Path:
    """The installed ``llmfoundry`` package directory (found on ``sys.path``, never imported)."""
    for entry in sys.path:
        candidate = Path(entry or ".") / "llmfoundry"
        if (candidate / "data" / "packing.py").is_file():
            return candidate
    raise ImportError("llm-foundry is not installed")


def _foundry_packing_module() -> Any:
    root = foundry_root()
    composer = types.ModuleType("composer")
    composer_utils = types.ModuleType("composer.utils")
    composer_utils.dist = types.SimpleNamespace()  # type: ignore[attr-defined]
    consts = types.ModuleType("llmfoundry.utils.consts")
    consts.CROSS_ENTROPY_IGNORE_INDEX = -100  # type: ignore[attr-defined]
    for name, mod in (("composer", composer), ("composer.utils", composer_utils),
                      ("llmfoundry.utils.consts", consts)):
        sys.modules.setdefault(name, mod)
    transformers = sys.modules.get("transformers")
    if transformers is None:
        tr = types.ModuleType("transformers")
        tr.PreTrainedTokenizerBase = object  # type: ignore[attr-defined]
        sys.modules["transformers"] = tr
    spec2 = importlib.util.spec_from_file_location("foundry_packing", root / "data" / "packing.py")
    assert spec2 is not None and spec2.loader is not None
    mod = importlib.util.module_from_spec(spec2)
    spec2.loader.exec_module(mod)
    return mod


def run_foundry_concat(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], None]:
    data = _foundry_data_module()
    docs = _docs(lengths)

    class Tok:
        bos_token_id = None
        eos_token_id = None

        def __call__(self, text: Any, **kw: Any) -> dict[str, list[int]]:
            if isinstance(text, list):
                return {"input_ids": [docs[i] for i in text]}
            return {"input_ids": docs[int(text)]}

    ds = data.ConcatTokensDataset.__new__(data.ConcatTokensDataset)
    ds.hf_dataset = [{"text": str(d)} for d in range(len(lengths))]
    ds.tokenizer = Tok()
    ds.max_length = cfg["seq_length"]
    ds.bos_text = ""
    ds.eos_text = ""
    ds.should_wrap = cfg["policy"] == "foundry-concat-wrap"
    ds.bos_tokens = []
    ds.eos_tokens = []
    rows = [np.frombuffer(s["tokens"], dtype=np.int64).tolist() if isinstance(s["tokens"], bytes)
            else list(s["tokens"]) for s in iter(ds)]
    return rows, None


def _foundry_data_module() -> Any:
    root = foundry_root()
    spec2 = importlib.util.spec_from_file_location("foundry_data", root / "data" / "data.py")
    assert spec2 is not None and spec2.loader is not None
    mod = importlib.util.module_from_spec(spec2)
    _stub_foundry_data_imports()
    spec2.loader.exec_module(mod)
    return mod


def _stub_foundry_data_imports() -> None:
    for name in ("llmfoundry", "llmfoundry.data", "llmfoundry.utils"):
        if name not in sys.modules:
            m = types.ModuleType(name)
            m.__path__ = []  # type: ignore[attr-defined]
            sys.modules[name] = m


def run_foundry_binpack(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], None]:
    import torch

    packing = _foundry_packing_module()
    o = cfg["options"]
    L = cfg["seq_length"]
    B = o["batch_size"]
    per = int(B * o["packing_ratio"])
    docs = _docs(lengths)
    coll = packing.BinPackCollator(collator=lambda x: x, target_batch_size=B, max_seq_len=L, pad_token_id=0,
                                   padding_side=o["padding_side"],
                                   max_leftover_bins_to_keep=o["max_leftover_bins_to_keep"])
    rows: list[list[int]] = []
    for lo in range(0, len(docs), per):
        batch = docs[lo : lo + per]
        width = min(L, max(len(d) for d in batch))
        ids = torch.zeros((len(batch), width), dtype=torch.int64)
        mask = torch.zeros((len(batch), width), dtype=torch.int64)
        for k, d in enumerate(batch):  # the base collator: truncate to max_seq_len, right-pad
            t = d[:L]
            ids[k, : len(t)] = torch.tensor(t)
            mask[k, : len(t)] = 1
        out = coll.pack({"input_ids": ids, "attention_mask": mask})
        rows.extend(out["input_ids"].tolist())
    return rows, None


ROW_RUNNERS: dict[str, Callable[[dict[str, Any], Sequence[int]], tuple[list[list[int]], Any]]] = {
    "trl": run_trl, "olmo": run_olmo, "megatron": run_megatron,
    "foundry-concat": run_foundry_concat, "foundry-binpack": run_foundry_binpack,
}


def runner(policy: str) -> Callable[[dict[str, Any], Sequence[int]], tuple[list[list[int]], Any]]:
    for prefix, fn in sorted(ROW_RUNNERS.items(), key=lambda kv: -len(kv[0])):
        if policy.startswith(prefix):
            return fn
    raise KeyError(policy)


def framework_rows(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], Any]:
    """The framework's canonical rows (and TRL's seq_lengths) for one input."""
    return runner(cfg["policy"])(cfg, lengths)


# --------------------------------------------------------------------------- trainer-view runners


def stub(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__path__ = []  # type: ignore[attr-defined]
    sys.modules[name] = mod
    return mod


def load_path(name: str, path: Path) -> types.ModuleType:
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
    if k == 0 and version != "0.12.2":  # 0.12.2 (like 0.13.x) indexes batches[-1] of an empty list: run it
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


TRAINER_RUNNERS: dict[str, Callable[[Path, dict[str, Any], list[int]], str]] = {
    "torchtune": run_torchtune, "axolotl": run_axolotl, "nemo": run_nemo,
}
