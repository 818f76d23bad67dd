"""Live differential tests: run the frameworks' own code when it is installed, else skip visibly.

The harness (``tools/peer_golden.py``) knows how to drive each framework;
these tests run it on a few inputs per configuration and compare row by row.
Install the frameworks in a separate environment to run them (see the
harness's docstring); in the library's own environment they skip with the
reason.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _harness() -> Any:
    import sys

    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location("peer_golden", TOOLS / "peer_golden.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NEEDS = {
    "trl-": ("trl", "TRL (pip install trl datasets pyarrow transformers) is not installed"),
    "olmo-": ("olmo_core", "OLMo-core (pip install torch==2.13.0 ai2-olmo-core) is not installed"),
    "megatron-": ("megatron.core", "megatron-core (pip install --no-deps megatron-core) is not installed"),
    "foundry-concat": ("datasets", "llm-foundry's data.py needs datasets (and llm-foundry installed)"),
    "foundry-binpack": ("torch", "llm-foundry's packing.py needs torch (and llm-foundry installed)"),
}
LIVE_INPUTS = 25


def _available(policy: str) -> tuple[bool, str]:
    for prefix, (module, reason) in NEEDS.items():
        if policy.startswith(prefix):
            try:
                found = importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:
                found = False
            if found and prefix.startswith("foundry"):
                try:  # located on sys.path, never imported (the harness stubs the package)
                    harness.foundry_root()
                except ImportError:
                    found = False
            return found, reason
    return False, "no live runner"


harness = _harness()


@pytest.mark.parametrize("cfg", harness.CONFIGS, ids=lambda c: c["name"])
def test_live_framework_agrees(cfg: dict[str, Any]) -> None:
    ok, reason = _available(cfg["policy"])
    if not ok:
        pytest.skip(reason)
    for lengths in harness.make_inputs(cfg, LIVE_INPUTS):
        theirs = harness.guarded(harness.framework_rows, cfg, lengths)
        ours = harness.guarded(harness.ours, cfg, lengths)
        assert theirs[0] == ours[0], f"rows differ for lengths={lengths}"
        if theirs[1] is not None:
            assert theirs[1] == ours[1], f"seq_lengths differ for lengths={lengths}"
