"""audit and compare are one measurement: the same per-packer figures for every registered packer at the
same horizon, and one JSON Schema for the per-packer result (``docs/schemas/packer-run.schema.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.engine.horizon import Budget
from packing_theory.orchestration import Settings, audit_corpus, compare_corpus
from packing_theory.registry import names

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "packer-run.schema.json").read_text())


def _corpus() -> np.ndarray:
    rng = np.random.default_rng(11)
    return np.maximum(1, rng.lognormal(3.2, 1.1, 400)).astype(np.int64)


def _timeless(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k != "seconds"}


@pytest.mark.parametrize("horizon", [Budget("rows", 25), Budget("tokens", 3000), "natural"])
def test_audit_and_compare_give_every_packer_the_same_figures(horizon: Budget | str) -> None:
    lengths = _corpus()
    settings = Settings(seq_length=48, min_buffer=12, refill=4)
    every = list(names())
    a = audit_corpus(lengths, every, settings, horizon=horizon, permutations=0).to_dict()
    c = compare_corpus(lengths, every, settings, horizon=horizon).to_dict()
    assert a["refused"] == c["refused"]
    assert [p["packer"] for p in a["packers"]] == [p["packer"] for p in c["packers"]]
    assert len(a["packers"]) + len(a["refused"]) == len(every)
    for pa, pc in zip(a["packers"], c["packers"], strict=True):
        assert _timeless(pa) == _timeless(pc), pa["packer"]
        jsonschema.validate(pa, SCHEMA)
        jsonschema.validate(pc, SCHEMA)
    assert a["horizon"] == c["horizon"]


def test_the_schemas_stop_reasons_are_the_librarys() -> None:
    from packing_theory.audit.untrained import STOP_REASONS

    assert SCHEMA["properties"]["horizon"]["properties"]["reason"]["enum"] == list(STOP_REASONS)


def test_the_schema_refuses_a_run_that_lost_a_key_or_gained_one() -> None:
    c = compare_corpus(
        _corpus(), ["discard", "trl-bfd"], Settings(seq_length=48, min_buffer=12, refill=4)
    ).to_dict()
    run = c["packers"][0]
    jsonschema.validate(run, SCHEMA)
    broken = {k: v for k, v in run.items() if k != "never_trained"}
    with pytest.raises(jsonschema.ValidationError, match="never_trained"):
        jsonschema.validate(broken, SCHEMA)
    with pytest.raises(jsonschema.ValidationError, match="policy"):
        jsonschema.validate({**run, "policy": "discard"}, SCHEMA)
