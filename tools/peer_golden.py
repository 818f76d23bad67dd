"""Run the frameworks' own packing code on generated inputs, compare with our peers, write golden digests.

One harness for every framework peer; the frameworks' code is never a
dependency of the library and never committed. Two kinds of fixture, both in
``tests/data/peer_golden`` (``tools/peer_inputs.py`` says exactly what each
digest covers):

* **row digests** — TRL, OLMo-core, Megatron, LLM Foundry. Needs a separate
  environment with the frameworks: ``trl`` + ``datasets`` + ``pyarrow`` +
  ``transformers`` (TRL 1.16.0), ``torch==2.13.0`` + ``ai2-olmo-core``
  (3.0.0), ``megatron-core`` (0.16.1, installed ``--no-deps``: its compiled
  ``helpers_cpp`` needs only numpy) and ``llm-foundry`` (0.22.0, installed
  ``--no-deps``; ``llmfoundry/data/packing.py`` is loaded by path with stubs
  for ``composer`` and ``llmfoundry.utils.consts``, since the package
  ``__init__`` pulls in the whole training stack). A fixture
  ``<policy>__<options>.json`` stores the generator parameters, the SHA-256
  of the inputs and one digest of the framework's rows per input.
* **trainer-view digests** — torchtune, Axolotl, NeMo. Point ``--wheels`` at
  unpacked wheels (``pip download --no-deps torchtune==0.6.1 axolotl==0.19.0
  nemo-toolkit==3.0.0`` then unzip) in a venv with ``torch==2.13.0``,
  ``numba``, ``numpy`` and ``tqdm``. A fixture
  ``<framework>-<version>-c<NN>.json`` stores the streams, the configuration
  and one digest per stream of what the framework emitted (or
  ``"ValueError"`` where it raised).

Usage::

    python tools/peer_golden.py write [--only NAME] [--count N] [--wheels DIR] [OUT_DIR]   # goldens
    python tools/peer_golden.py check [--only NAME] [--count N] [--wheels DIR]             # agreement only

Every configuration runs its framework and our peer on ``count`` (default
1,000) inputs and compares them; ``write`` stores a fixture only when every
input agrees. ``tests/peers/test_golden.py`` checks our peers against the
fixtures on every CI run; ``tests/peers/test_live.py`` runs the frameworks
directly when they are installed. Configurations without their framework
(no ``--wheels`` for a trainer-view one) are skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_inputs import (
    TOKEN_BASE,
    digest,
    inputs,
    inputs_sha256,
    our_rows,
    our_trainer_view,
    trainer_streams,
)
from peer_runners import TRAINER_RUNNERS, framework_rows, megatron_num_samples

from packing_theory import build_packer

# ----------------------------------------------------------------------------- row-digest configurations
# name, policy, framework version, the framework's sequence length, peer options, generator
ROW_CONFIGS: list[dict[str, Any]] = []
for _strategy in ("bfd", "bfd_split", "wrapped"):
    for _L, _window, _seed in ((8, 1000, 11), (8, 7, 12), (5, 3, 13), (16, 1, 14)):
        ROW_CONFIGS.append({"name": f"trl-{_strategy}__L{_L}_w{_window}", "policy": f"trl-{_strategy}",
                            "version": "trl 1.16.0", "seq_length": _L, "options": {"window": _window},
                            "gen": {"seed": _seed, "empty": True}})
for _strategy in ("truncate", "fragment"):
    for _L, _per, _seed in ((8, None, 21), (16, 5, 22), (4, 3, 23)):
        ROW_CONFIGS.append({"name": f"olmo-{_strategy}__L{_L}_f{_per}", "policy": f"olmo-{_strategy}",
                            "version": "ai2-olmo-core 3.0.0", "seq_length": _L,
                            "options": {"documents_per_file": _per}, "gen": {"seed": _seed, "empty": False}})
for _L, _seed, _samples in ((8, 1234, None), (5, 7, "1.9"), (4, 99, "2.5"), (6, 3, "1.3"), (16, 5, "3.1")):
    ROW_CONFIGS.append({"name": f"megatron-gpt__L{_L}_s{_seed}_n{_samples}", "policy": "megatron-gpt",
                        "version": "megatron-core 0.16.1", "seq_length": _L,
                        "options": {"seed": _seed, "num_samples": _samples},
                        "gen": {"seed": 30 + _seed, "empty": True, "min_total": 2}})
for _nw in (False, True):
    for _L, _seed in ((8, 41), (5, 42)):
        _pol = "foundry-concat-no_wrap" if _nw else "foundry-concat-wrap"
        ROW_CONFIGS.append({"name": f"{_pol}__L{_L}", "policy": _pol, "version": "llm-foundry 0.22.0",
                            "seq_length": _L, "options": {}, "gen": {"seed": _seed, "empty": True}})
for _L, _b, _ratio, _keep, _side, _seed in ((8, 2, 2.0, None, "right", 51), (8, 1, 3.0, 0, "left", 52),
                                            (16, 3, 1.5, 1, "right", 53), (5, 2, 1.0, 2, "right", 54)):
    ROW_CONFIGS.append({"name": f"foundry-binpack__L{_L}_b{_b}_r{_ratio}_k{_keep}_{_side}",
                        "policy": "foundry-binpack", "version": "llm-foundry 0.22.0", "seq_length": _L,
                        "options": {"batch_size": _b, "packing_ratio": _ratio,
                                    "max_leftover_bins_to_keep": _keep, "padding_side": _side},
                        "gen": {"seed": _seed, "empty": False}})

SEQ_LENGTHS_POLICIES = ("trl-bfd", "trl-bfd_split")
"""Row-digest policies whose digest also covers each row's ``seq_lengths``."""


def peer_options(cfg: dict[str, Any], lengths: Sequence[int]) -> dict[str, Any]:
    """Our peer's options for one input (Megatron's ``num_samples`` is relative to an epoch)."""
    opts = dict(cfg["options"])
    if "num_samples" in opts:
        opts["num_samples"] = megatron_num_samples(cfg, lengths)
        opts["samples"] = "index"  # the digests cover every sample of the index (len(GPTDataset))
    return opts


def make_inputs(cfg: dict[str, Any], count: int) -> list[list[int]]:
    """The generated inputs of row-digest configuration ``cfg``."""
    g = cfg["gen"]
    return list(inputs(g["seed"], count, cfg["seq_length"], empty=g["empty"],
                       min_total=g.get("min_total", 0)))


def eos_marked(rows: list[list[int]], lengths: Sequence[int]) -> list[list[int]]:
    """OLMo-core finds documents by their EOS token: the last token of every document becomes 1."""
    return [[1 if t and t % 100_000 == lengths[t // 100_000 - 1] - 1 else t for t in r] for r in rows]


def make_peer(cfg: dict[str, Any], lengths: Sequence[int]) -> Any:
    """Our peer for row-digest configuration ``cfg``, built for the framework's sequence length."""
    return build_packer(cfg["policy"], seq_length=cfg["seq_length"], **peer_options(cfg, lengths))


def ours(cfg: dict[str, Any], lengths: Sequence[int]) -> tuple[list[list[int]], list[list[int]] | None]:
    """Our peer's canonical rows (and seq_lengths where the digest covers them) for one input."""
    rows, seqs = our_rows(make_peer(cfg, lengths), lengths)
    if cfg["policy"].startswith("olmo"):  # the harness's EOS marking, a property of the fixture
        rows = eos_marked(rows, lengths)
    return rows, (seqs if cfg["policy"] in SEQ_LENGTHS_POLICIES else None)


def guarded(fn: Callable[[dict[str, Any], Sequence[int]], Any], cfg: dict[str, Any],
            lengths: Sequence[int]) -> Any:
    """``fn(cfg, lengths)``, or ``([["error"]], None)`` when it raises (both sides must then raise)."""
    try:
        return fn(cfg, lengths)
    except Exception as exc:  # the framework's own failure is part of its behaviour
        if os.environ.get("PEER_GOLDEN_DEBUG"):
            print(f"    {fn.__name__} raised {type(exc).__name__}: {exc}")
        return [["error"]], None


# ----------------------------------------------------------------------------- trainer-view configurations


def _torchtune_configs() -> list[dict[str, Any]]:
    out = []
    for split in (False, True):
        for L, max_packs in ((8, None), (16, None), (64, None), (16, 3), (8, 1)):
            out.append({"split_across_pack": split, "L": L, "max_packs": max_packs, "padding_idx": 0})
    out.append({"split_across_pack": True, "L": 8, "max_packs": None, "padding_idx": 7})
    return out


def _axolotl_configs() -> list[dict[str, Any]]:
    base = {"excess_length_strategy": "drop", "min_sample_len": None, "micro_batch_size": 1,
            "multipack_real_batches": False, "bin_size": 200, "group_size": 100_000, "sequential": False,
            "drop_last": True, "epochs": 1, "seed": None, "world_size": 1, "version": "0.19.0", "L": 16}
    variants: list[dict[str, Any]] = [
        {},
        {"L": 8, "seed": 3, "epochs": 2},
        {"excess_length_strategy": "truncate", "min_sample_len": 1},
        {"bin_size": 2, "group_size": 7, "seed": 11},
        {"sequential": True, "seed": 5},
        {"multipack_real_batches": True, "micro_batch_size": 3, "seed": 7, "epochs": 2},
        {"micro_batch_size": 2, "drop_last": False, "seed": 1},
        {"multipack_real_batches": True, "micro_batch_size": 2, "world_size": 4, "seed": 2, "L": 32},
        {"version": "0.12.2", "world_size": 4, "seed": 2, "multipack_real_batches": True,
         "micro_batch_size": 2},
    ]
    return [{**base, **v} for v in variants]


def _nemo_configs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for algo in ("first_fit", "first_fit_decreasing", "first_fit_shuffle"):
        for L, seed in ((8, 0), (16, 1), (64, 2)):
            out.append({"algorithm": algo, "L": L, "seed": seed, "pad_id": 0})
    for algo in ("first_fit", "first_fit_decreasing", "first_fit_shuffle"):
        out.append({"algorithm": algo, "L": 16, "seed": 3, "pad_id": 0, "version": "2.0.0"})
    return out


TRAINER_CONFIGS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "torchtune": _torchtune_configs, "axolotl": _axolotl_configs, "nemo": _nemo_configs,
}
"""Trainer-view configurations per framework (``L``: the framework's sequence length)."""

DEFAULT_VERSION = {"torchtune": "0.6.1", "axolotl": "0.19.0", "nemo": "3.0.0"}


def trainer_fixture_name(framework: str, cfg: dict[str, Any], c: int) -> str:
    """``<framework>-<version>-c<NN>``, the fixture of configuration ``c``."""
    return f"{framework}-{cfg.get('version', DEFAULT_VERSION[framework])}-c{c:02d}"


# ----------------------------------------------------------------------------- the runs


def _row_configs(args: argparse.Namespace, out: Path) -> int:
    failures = 0
    for cfg in ROW_CONFIGS:
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
            golden = {**{k: cfg[k] for k in ("name", "policy", "version", "seq_length", "options", "gen")},
                      "count": len(lists), "numpy": np.__version__, "inputs_sha256": inputs_sha256(lists),
                      "seq_lengths": cfg["policy"] in SEQ_LENGTHS_POLICIES, "digests": digests}
            (out / f"{cfg['name']}.json").write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    return failures


def _trainer_configs(args: argparse.Namespace, out: Path) -> int:
    failures = 0
    for framework, configs in TRAINER_CONFIGS.items():
        for c, cfg in enumerate(configs()):
            name = trainer_fixture_name(framework, cfg, c)
            if args.only not in name:
                continue
            if args.wheels is None:
                print(f"{name}: skipped (needs --wheels, the unpacked framework wheels)")
                continue
            ss = trainer_streams(framework, c, cfg, args.count)
            theirs = [TRAINER_RUNNERS[framework](args.wheels, cfg, s) for s in ss]
            bad = sum(t != our_trainer_view(framework, cfg, s) for t, s in zip(theirs, ss, strict=True))
            failures += bad
            errors = sum(t == "ValueError" for t in theirs)
            print(f"{name}: {len(ss) - bad}/{len(ss)} streams identical, {errors} raised", flush=True)
            if args.mode == "write" and not bad:
                out.mkdir(parents=True, exist_ok=True)
                fixture = {"framework": framework, "version": cfg.get("version", DEFAULT_VERSION[framework]),
                           "config": cfg, "token_base": TOKEN_BASE, "streams": ss, "digests": theirs}
                (out / f"{name}.json").write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("write", "check"))
    ap.add_argument("out", nargs="?", default="tests/data/peer_golden")
    ap.add_argument("--only", default="", help="substring of the configuration (fixture) names to run")
    ap.add_argument("--count", type=int, default=1000, help="inputs (streams) per configuration")
    ap.add_argument("--wheels", type=Path, default=None,
                    help="directory of unpacked torchtune / axolotl / nemo-toolkit wheels (trainer views)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    failures = _row_configs(args, out) + _trainer_configs(args, out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
