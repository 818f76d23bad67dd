"""Run the frameworks' own packing code on generated inputs and write golden digests.

Needs a separate environment with the frameworks (never a dependency of the
library, never committed): ``trl`` + ``datasets`` + ``pyarrow`` +
``transformers`` (TRL 1.16.0), ``torch==2.13.0`` + ``ai2-olmo-core`` (3.0.0),
``megatron-core`` (0.16.1, installed ``--no-deps``: its compiled
``helpers_cpp`` needs only numpy) and ``llm-foundry`` (0.22.0, installed
``--no-deps``; ``llmfoundry/data/packing.py`` is loaded by path with stubs for
``composer`` and ``llmfoundry.utils.consts``, since the package ``__init__``
pulls in the whole training stack).

Usage::

    python tools/peer_golden.py write [--only NAME] [--count N] OUT_DIR   # goldens
    python tools/peer_golden.py check [--only NAME] [--count N]           # live agreement, no files

Every configuration runs its framework on ``count`` (default 1,000)
generated inputs (``tools/peer_inputs.py``) and compares the framework's rows
with our peer's rows; ``write`` stores the generator parameters, the SHA-256
of the inputs and one digest per input. ``tests/test_peer_golden.py`` checks
our peers against these digests on every CI run; ``tests/test_peer_live.py``
calls :func:`framework_rows` directly when the frameworks are installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_inputs import digest, inputs, inputs_sha256, our_rows, token

import packing_theory.peers as peers

# name, policy, framework version, capacity (the framework's sequence length), peer options, generator
CONFIGS: list[dict[str, Any]] = []
for _strategy in ("bfd", "bfd_split", "wrapped"):
    for _L, _window, _seed in ((8, 1000, 11), (8, 7, 12), (5, 3, 13), (16, 1, 14)):
        CONFIGS.append({"name": f"trl-{_strategy}__L{_L}_w{_window}", "policy": f"trl-{_strategy}",
                        "version": "trl 1.16.0", "capacity": _L, "options": {"window": _window},
                        "gen": {"seed": _seed, "empty": True}})
for _strategy in ("truncate", "fragment"):
    for _L, _per, _seed in ((8, None, 21), (16, 5, 22), (4, 3, 23)):
        CONFIGS.append({"name": f"olmo-{_strategy}__L{_L}_f{_per}", "policy": f"olmo-{_strategy}",
                        "version": "ai2-olmo-core 3.0.0", "capacity": _L,
                        "options": {"documents_per_file": _per}, "gen": {"seed": _seed, "empty": False}})
for _L, _seed, _samples in ((8, 1234, None), (5, 7, "1.9"), (4, 99, "2.5"), (6, 3, "1.3"), (16, 5, "3.1")):
    CONFIGS.append({"name": f"megatron-gpt__L{_L}_s{_seed}_n{_samples}", "policy": "megatron-gpt",
                    "version": "megatron-core 0.16.1", "capacity": _L,
                    "options": {"seed": _seed, "num_samples": _samples},
                    "gen": {"seed": 30 + _seed, "empty": True, "min_total": 2}})
for _nw in (False, True):
    for _L, _seed in ((8, 41), (5, 42)):
        _pol = "foundry-concat-no_wrap" if _nw else "foundry-concat-wrap"
        CONFIGS.append({"name": f"{_pol}__L{_L}", "policy": _pol, "version": "llm-foundry 0.22.0",
                        "capacity": _L, "options": {}, "gen": {"seed": _seed, "empty": True}})
for _L, _b, _ratio, _keep, _side, _seed in ((8, 2, 2.0, None, "right", 51), (8, 1, 3.0, 0, "left", 52),
                                            (16, 3, 1.5, 1, "right", 53), (5, 2, 1.0, 2, "right", 54)):
    CONFIGS.append({"name": f"foundry-binpack__L{_L}_b{_b}_r{_ratio}_k{_keep}_{_side}",
                    "policy": "foundry-binpack", "version": "llm-foundry 0.22.0", "capacity": _L,
                    "options": {"batch_size": _b, "packing_ratio": _ratio, "max_leftover_bins_to_keep": _keep,
                                "padding_side": _side},
                    "gen": {"seed": _seed, "empty": False}})


def peer_options(cfg: dict[str, Any], lengths: Sequence[int]) -> dict[str, Any]:
    """Our peer's constructor options for one input (Megatron's num_samples is relative to an epoch)."""
    opts = dict(cfg["options"])
    if cfg["policy"] == "megatron-gpt" and isinstance(opts.get("num_samples"), str):
        per_epoch = max((sum(lengths) - 1) // cfg["capacity"], 1)
        opts["num_samples"] = max(1, int(float(opts["num_samples"]) * per_epoch))
    return opts


def make_inputs(cfg: dict[str, Any], count: int) -> list[list[int]]:
    g = cfg["gen"]
    return list(inputs(g["seed"], count, cfg["capacity"], empty=g["empty"], min_total=g.get("min_total", 0)))


# --------------------------------------------------------------------------- framework runners


def _docs(lengths: Sequence[int]) -> list[list[int]]:
    return [[token(d, p) for p in range(n)] for d, n in enumerate(lengths)]


def run_trl(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], list[list[int]] | None]:
    import datasets
    from trl import pack_dataset

    datasets.disable_progress_bars()
    strategy = cfg["policy"].split("-", 1)[1]
    L = cfg["capacity"]
    feats = datasets.Features({"input_ids": datasets.List(datasets.Value("int64"))})
    ds = datasets.Dataset.from_dict({"input_ids": _docs(lengths)}, features=feats)
    out = pack_dataset(ds, L, strategy=strategy, map_kwargs={"batch_size": cfg["options"]["window"]})
    rows = [list(r) + [0] * (L - len(r)) for r in out["input_ids"]]
    seqs = [list(s) for s in out["seq_lengths"]] if "seq_lengths" in out.column_names else None
    return rows, seqs


def run_olmo(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], None]:
    from olmo_core.data.numpy_dataset import NumpyPackedFSLDataset
    from olmo_core.data.types import LongDocStrategy

    L = cfg["capacity"]
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

    opts = peer_options(cfg, lengths)
    conf = types.SimpleNamespace(sequence_length=cfg["capacity"], add_extra_token_to_sequence=True,
                                 random_seed=opts["seed"], path_to_cache=None, mock=True,
                                 defer_npy_index_mmap=False, fast_cache_load=False,
                                 drop_last_partial_validation_sequence=True)
    fake: Any = types.SimpleNamespace(config=conf, num_samples=opts["num_samples"],
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
    ds.max_length = cfg["capacity"]
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
    L = cfg["capacity"]
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


RUNNERS: dict[str, Callable[[dict[str, Any], Sequence[int]], tuple[list[list[int]], Any]]] = {
    "trl": run_trl, "olmo": run_olmo, "megatron": run_megatron,
    "foundry-concat": run_foundry_concat, "foundry-binpack": run_foundry_binpack,
}


def runner(policy: str) -> Callable[[dict[str, Any], Sequence[int]], tuple[list[list[int]], Any]]:
    for prefix, fn in sorted(RUNNERS.items(), key=lambda kv: -len(kv[0])):
        if policy.startswith(prefix):
            return fn
    raise KeyError(policy)


def framework_rows(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], Any]:
    """The framework's canonical rows (and TRL's seq_lengths) for one input."""
    return runner(cfg["policy"])(cfg, lengths)


def eos_marked(rows: list[list[int]], lengths: Sequence[int]) -> list[list[int]]:
    """OLMo-core finds documents by their EOS token: the last token of every document becomes 1."""
    return [[1 if t and t % 100_000 == lengths[t // 100_000 - 1] - 1 else t for t in r] for r in rows]


def make_peer(cfg: dict[str, Any], lengths: Sequence[int]) -> Any:
    return peers.make_peer(cfg["policy"], cfg["capacity"], **peer_options(cfg, lengths))


def ours(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], list[list[int]] | None]:
    rows, seqs = our_rows(make_peer(cfg, lengths), lengths)
    if cfg["policy"].startswith("olmo"):
        rows = eos_marked(rows, lengths)
    return rows, (seqs if cfg["policy"] in ("trl-bfd", "trl-bfd_split") else None)


def guarded(fn: Callable[[dict[str, Any], Sequence[int]], Any], cfg: dict[str, Any],
            lengths: Sequence[int]) -> Any:
    """``fn(cfg, lengths)``, or ``([["error"]], None)`` when it raises (both sides must then raise)."""
    try:
        return fn(cfg, lengths)
    except Exception as exc:  # the framework's own failure is part of its behaviour
        if os.environ.get("PEER_GOLDEN_DEBUG"):
            print(f"    {fn.__name__} raised {type(exc).__name__}: {exc}")
        return [["error"]], None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("write", "check"))
    ap.add_argument("out", nargs="?", default="tests/data/peer_golden")
    ap.add_argument("--only", default="", help="substring of the configuration names to run")
    ap.add_argument("--count", type=int, default=1000)
    args = ap.parse_args(argv)
    out = Path(args.out)
    failures = 0
    for cfg in CONFIGS:
        if args.only not in cfg["name"]:
            continue
        t0 = time.perf_counter()
        lists = make_inputs(cfg, args.count)
        digests = []
        bad = 0
        for lengths in lists:
            theirs = guarded(framework_rows, cfg, lengths)
            mine = guarded(ours, cfg, lengths)
            if theirs[0] != mine[0] or (theirs[1] is not None and theirs[1] != mine[1]):
                bad += 1
                if bad <= 3:
                    print(f"  MISMATCH {cfg['name']} lengths={lengths}\n    theirs={theirs}\n    ours={mine}")
            digests.append(digest(*theirs) if theirs[0] != [["error"]] else "error")
        failures += bad
        took = time.perf_counter() - t0
        print(f"{cfg['name']}: {len(lists) - bad}/{len(lists)} inputs identical ({took:.1f} s)", flush=True)
        if args.mode == "write" and not bad:
            out.mkdir(parents=True, exist_ok=True)
            golden = {**{k: cfg[k] for k in ("name", "policy", "version", "capacity", "options", "gen")},
                      "count": len(lists), "numpy": np.__version__, "inputs_sha256": inputs_sha256(lists),
                      "seq_lengths": cfg["policy"] in ("trl-bfd", "trl-bfd_split"), "digests": digests}
            (out / f"{cfg['name']}.json").write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
