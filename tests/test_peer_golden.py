"""Our peers against golden digests of the frameworks' own packing code (``tools/peer_golden.py``).

Each fixture in ``tests/data/peer_golden`` names a policy, its options and the
input generator; the harness ran the framework (TRL 1.16.0, ai2-olmo-core
3.0.0, megatron-core 0.16.1, llm-foundry 0.22.0) on every generated input and
stored one digest of its rows per input. Here the same inputs are regenerated
(their SHA-256 must match) and our peer's rows must give the same digests.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import packing_theory.peers as peers

TOOLS = Path(__file__).resolve().parent.parent / "tools"
GOLDEN = sorted((Path(__file__).parent / "data" / "peer_golden").glob("*.json"))


def _tools_module(name: str) -> Any:
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


inputs_mod = _tools_module("peer_inputs")


def _options(meta: dict[str, Any], lengths: list[int]) -> dict[str, Any]:
    opts = dict(meta["options"])
    if meta["policy"] == "megatron-gpt" and isinstance(opts.get("num_samples"), str):
        per_epoch = max((sum(lengths) - 1) // meta["capacity"], 1)
        opts["num_samples"] = max(1, int(float(opts["num_samples"]) * per_epoch))
    return opts


def _digest(meta: dict[str, Any], lengths: list[int]) -> str:
    try:
        packer = peers.make_peer(meta["policy"], meta["capacity"], **_options(meta, lengths))
        rows, seqs = inputs_mod.our_rows(packer, lengths)
    except ValueError:
        return "error"
    if meta["policy"].startswith("olmo"):  # OLMo-core finds documents by their EOS token id (1)
        rows = [[1 if t and t % 100_000 == lengths[t // 100_000 - 1] - 1 else t for t in r] for r in rows]
    return inputs_mod.digest(rows, seqs if meta["seq_lengths"] else None)


def test_every_part_a_policy_has_goldens_with_1000_inputs() -> None:
    metas = [json.loads(p.read_text()) for p in GOLDEN]
    covered = {m["policy"] for m in metas}
    assert covered >= {"trl-bfd", "trl-bfd_split", "trl-wrapped", "olmo-truncate", "olmo-fragment",
                       "megatron-gpt", "foundry-concat-wrap", "foundry-concat-no_wrap", "foundry-binpack"}
    assert all(m["count"] >= 1000 and len(m["digests"]) == m["count"] for m in metas)


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_peer_matches_framework(path: Path) -> None:
    meta = json.loads(path.read_text())
    g = meta["gen"]
    lists = list(inputs_mod.inputs(g["seed"], meta["count"], meta["capacity"], empty=g["empty"],
                                   min_total=g.get("min_total", 0)))
    assert inputs_mod.inputs_sha256(lists) == meta["inputs_sha256"], "the input generator changed"
    mismatches = [i for i, (lengths, want) in enumerate(zip(lists, meta["digests"], strict=True))
                  if _digest(meta, lengths) != want]
    assert not mismatches, f"{len(mismatches)} inputs differ, first {lists[mismatches[0]]}"
