"""A packer's consumers are fed batches of at most ``FEED_BATCH_EVENTS`` events, with the same figures."""

from __future__ import annotations

import importlib
import json
from typing import Any

import numpy as np
import pytest

from packing_theory.engine.batches import EventBatch
from packing_theory.orchestration.measure import Settings, measure

measure_module = importlib.import_module("packing_theory.orchestration.measure")
PACKERS = ["bestfit-pad", "fewer-truncations", "seamless", "megatron-gpt", "olmo-fragment", "torchtune-split"]


def _json(m: Any) -> str:
    d = m.to_dict()
    d.pop("seconds", None)
    for r in d["packers"]:
        r.pop("seconds", None)
    return json.dumps(d, sort_keys=True, default=str)


def test_the_consumers_take_batches_in_pieces_with_the_same_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numba")  # the compiled engine (the fast extra) emits the large batches cut here
    lengths = np.random.default_rng(3).integers(1, 90, 600)
    settings = Settings(capacity=32, min_buffer=4, refill=4, engine="compiled")
    whole = measure(lengths, PACKERS, settings, horizon="common")
    seen: list[int] = []
    split = measure_module.split_batches

    def spy(items: Any, size: int) -> Any:
        for item in split(items, size):
            if type(item) is EventBatch:
                seen.append(len(item))
            yield item

    monkeypatch.setattr(measure_module, "FEED_BATCH_EVENTS", 37)
    monkeypatch.setattr(measure_module, "split_batches", spy)
    pieces = measure(lengths, PACKERS, settings, horizon="common")
    assert seen and max(seen) == 37
    assert _json(pieces) == _json(whole)
