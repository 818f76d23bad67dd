"""Live differential tests: run the frameworks' own packing code when it is installed, else skip visibly.

The harness (``tools/peer_golden.py``, runners in ``tools/peer_runners.py``)
knows how to drive each framework; these tests run it on fresh inputs per
configuration and compare with our peers:

* TRL, OLMo-core, Megatron, LLM Foundry: installed in this environment (see
  the harness's docstring); row by row, a few inputs per configuration;
* torchtune, Axolotl, NeMo: the unpacked framework wheels in the directory
  named by ``PACKING_THEORY_PEER_WHEELS``, plus ``torch`` (and ``numba`` for
  Axolotl); fresh random streams and sequence lengths, the trainer-view digest.

Each test skips with the reason when its framework is missing.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tool_modules import load_tool

harness = load_tool("peer_golden")
runners = sys.modules["peer_runners"]
inputs_mod = sys.modules["peer_inputs"]

# ----------------------------------------------------------------------------- row-digest frameworks
NEEDS = {
    "trl-": ("trl", "TRL (pip install trl datasets pyarrow transformers) is not installed"),
    "olmo-": ("olmo_core.data.numpy_dataset",
              "OLMo-core (pip install torch==2.13.0 ai2-olmo-core) is not installed"),
    "megatron-": ("megatron.core.datasets.gpt_dataset",
                  "megatron-core (pip install --no-deps megatron-core) is not installed"),
    "foundry-concat": ("datasets", "llm-foundry's data.py needs datasets (and llm-foundry installed)"),
    "foundry-binpack": ("torch", "llm-foundry's packing.py needs torch (and llm-foundry installed)"),
}
LIVE_INPUTS = 25


def _available(policy: str) -> tuple[bool, str]:
    """Whether the module the runner imports imports here (an installed framework missing one of its own
    dependencies is not available either: the reason says which)."""
    for prefix, (module, reason) in NEEDS.items():
        if policy.startswith(prefix):
            try:
                found = importlib.util.find_spec(module.split(".")[0]) is not None
                if found:
                    importlib.import_module(module)
            except ImportError as exc:
                framework = reason.rsplit(" is ", 1)[0]
                return False, f"{module} does not import here ({exc}): {framework} needs its dependencies"
            if found and prefix.startswith("foundry"):
                try:  # located on sys.path, never imported (the harness stubs the package)
                    runners.foundry_root()
                except ImportError:
                    found = False
            return found, reason
    return False, "no live runner"


@pytest.mark.parametrize("cfg", harness.ROW_CONFIGS, ids=lambda c: c["name"])
def test_live_rows_agree(cfg: dict[str, Any]) -> None:
    ok, reason = _available(cfg["policy"])
    if not ok:
        pytest.skip(reason)
    for lengths in harness.make_inputs(cfg, LIVE_INPUTS):
        theirs = harness.guarded(runners.framework_rows, cfg, lengths)
        ours = harness.guarded(harness.ours, cfg, lengths)
        assert theirs[0] == ours[0], f"rows differ for lengths={lengths}"
        if theirs[1] is not None:
            assert theirs[1] == ours[1], f"seq_lengths differ for lengths={lengths}"


# ----------------------------------------------------------------------------- trainer-view frameworks
WHEELS = Path(os.environ.get("PACKING_THEORY_PEER_WHEELS", "/nonexistent"))
WHEEL_DIRS = {
    "torchtune": "torchtune-0.6.1-py3-none-any",
    "axolotl": "axolotl-0.19.0-py3-none-any",
    "nemo": "nemo_toolkit-3.0.0-py3-none-any",
}
WHEEL_NEEDS = {"torchtune": ["torch"], "axolotl": ["torch", "numba"], "nemo": []}
STREAMS = 200


def _require(framework: str) -> None:
    if not (WHEELS / WHEEL_DIRS[framework]).is_dir():
        pytest.skip(
            f"{framework}: set PACKING_THEORY_PEER_WHEELS to a directory holding the unpacked "
            f"{WHEEL_DIRS[framework]} wheel (see tools/peer_golden.py)"
        )
    for mod in WHEEL_NEEDS[framework]:
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{framework}: the framework's packing code needs {mod}, which is not installed")


@pytest.mark.parametrize("framework", ["torchtune", "axolotl", "nemo"])
def test_live_trainer_view_agrees(framework: str) -> None:
    _require(framework)
    configs = harness.TRAINER_CONFIGS[framework]()
    rng = random.Random(f"live-{framework}")
    checked = 0
    for c, cfg in enumerate(configs):
        if cfg.get("version", "default") not in ("default", "0.19.0"):  # the newest release only
            continue
        cfg = dict(cfg)
        cfg["L"] = rng.choice([4, 8, 12, 16, 32])
        max_len = cfg["L"] + (1 if framework == "nemo" else 0)
        bounded = framework == "nemo" or (framework == "torchtune" and not cfg["split_across_pack"])
        for lengths in inputs_mod.streams(rng, cfg["L"], STREAMS // len(configs) + 1,
                                          max_len=max_len if bounded else None):
            want = runners.TRAINER_RUNNERS[framework](WHEELS, cfg, lengths)
            assert inputs_mod.our_trainer_view(framework, cfg, lengths) == want, (c, cfg, lengths)
            checked += 1
    assert checked >= STREAMS // 2
