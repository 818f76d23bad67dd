"""Every module of the package that imports an optional dependency at its top is listed in the root
conftest, so that the README's test command (the test extra only) does not fail collecting its doctests."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import OPTIONAL_MODULES

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = ("numba", "torch", "transformers", "trl", "datasets", "omegaconf", "dask", "distributed",
            "tokenizers", "zstandard", "streaming", "megatron", "accelerate")
TOP_IMPORT = re.compile(rf"^(?:from|import) ({'|'.join(OPTIONAL)})\b", re.M)


def test_every_module_importing_an_optional_dependency_at_its_top_is_listed() -> None:
    found = {}
    for path in sorted((ROOT / "packing_theory").rglob("*.py")):
        m = TOP_IMPORT.search(path.read_text(encoding="utf-8"))
        if m:
            found[path.relative_to(ROOT).as_posix()] = m.group(1)
    assert found == OPTIONAL_MODULES
