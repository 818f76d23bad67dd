"""Live differential tests: run torchtune's, Axolotl's and NeMo's packing code itself.

Optional: they need the unpacked framework wheels (the directory that
``tools/peer_golden_b.py`` reads, named by ``PACKING_THEORY_PEER_WHEELS``)
plus ``torch`` (and ``numba`` for Axolotl); each test skips with the reason
when something is missing. Streams and configurations differ from the
committed goldens: fresh random streams, the same comparison.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from test_peer_golden_b import CASES, documents

WHEELS = Path(os.environ.get("PACKING_THEORY_PEER_WHEELS", "/nonexistent"))
WHEEL_DIRS = {
    "torchtune": "torchtune-0.6.1-py3-none-any",
    "axolotl": "axolotl-0.19.0-py3-none-any",
    "nemo": "nemo_toolkit-3.0.0-py3-none-any",
}
NEEDS = {"torchtune": ["torch"], "axolotl": ["torch", "numba"], "nemo": []}
STREAMS = 200


def harness() -> Any:
    spec = importlib.util.spec_from_file_location(
        "peer_golden_b", Path(__file__).parent.parent / "tools" / "peer_golden_b.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["peer_golden_b"] = mod
    spec.loader.exec_module(mod)
    return mod


def require(framework: str) -> Any:
    if not (WHEELS / WHEEL_DIRS[framework]).is_dir():
        pytest.skip(
            f"{framework}: set PACKING_THEORY_PEER_WHEELS to a directory holding the unpacked "
            f"{WHEEL_DIRS[framework]} wheel (see tools/peer_golden_b.py)"
        )
    for mod in NEEDS[framework]:
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{framework}: the framework's packing code needs {mod}, which is not installed")
    return harness()


@pytest.mark.parametrize("framework", ["torchtune", "axolotl", "nemo"])
def test_live_framework_agrees(framework: str) -> None:
    h = require(framework)
    configs, run = h.RUNNERS[framework]
    rng = random.Random(f"live-{framework}")
    checked = 0
    for c, cfg in enumerate(configs()):
        if cfg.get("version", "default") not in ("default", "0.19.0"):  # the newest release only
            continue
        cfg = dict(cfg)
        cfg["L"] = rng.choice([4, 8, 12, 16, 32])
        max_len = cfg["L"] + (1 if framework == "nemo" else 0)
        bounded = framework == "nemo" or (framework == "torchtune" and not cfg["split_across_pack"])
        for lengths in h.streams(
            rng, cfg["L"], STREAMS // len(configs()) + 1, max_len=max_len if bounded else None
        ):
            want = run(WHEELS, cfg, lengths)
            docs = documents(lengths, h.TOKEN_BASE)
            if want == "ValueError":
                with pytest.raises(ValueError):
                    CASES[framework](cfg, lengths, docs)
            else:
                assert CASES[framework](cfg, lengths, docs)[1] == want, (c, cfg, lengths)
            checked += 1
    assert checked >= STREAMS // 2
