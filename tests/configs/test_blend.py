"""Megatron's blend replayed (``configs.blend``) against megatron-core 0.16.1's own builder and helper."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing_theory import build_packer
from packing_theory.configs.blend import MegatronBlend, blending_indices, split_bookends
from packing_theory.errors import InputError
from packing_theory.testing import scaled_examples
from tests.peers.test_golden import inputs_mod


def _helpers() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip("megatron.core.datasets.helpers_cpp")


@settings(max_examples=scaled_examples(40), deadline=None)
@given(st.lists(st.floats(0.001, 50.0), min_size=1, max_size=6), st.integers(0, 3000))
def test_blending_indices_equal_the_compiled_helper(weights: list[float], size: int) -> None:
    helpers = _helpers()
    w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    di = np.zeros(size, np.int16)
    dsi = np.zeros(size, np.int64)
    helpers.build_blending_indices(di, dsi, w, len(weights), size, False)
    ours = blending_indices(w.tolist(), size)
    assert np.array_equal(ours[0], di) and np.array_equal(ours[1], dsi)


def _indexed(tmp: Path, name: str, lengths: list[int]) -> str:
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

    prefix = str(tmp / name)
    builder = IndexedDatasetBuilder(prefix + ".bin", dtype=np.int32)
    for d, n in enumerate(lengths):
        builder.add_item(torch.tensor([inputs_mod.token(d, p) for p in range(n)], dtype=torch.int32))
        builder.end_document()
    builder.finalize(prefix + ".idx")
    return prefix


class _Tokenizer:
    eod = 0
    pad = -1
    vocab_size = 2**31
    unique_identifiers: ClassVar[dict[str, str]] = {"class": "test"}


@pytest.mark.parametrize(("weights", "split", "samples", "seed"), [
    ((0.3, 0.7), "90,10,0", 50, 1234),
    ((1.0, 1.0, 2.0), "100", 37, 7),
    ((5.0, 1.0), "80,20,0", 120, 3),  # the small source is repeated over several epochs
])
def test_plan_equals_megatron_core_builder(tmp_path: Path, weights: tuple[float, ...], split: str,
                                           samples: int, seed: int) -> None:
    _helpers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
        from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    rng = np.random.default_rng(len(weights) + samples)
    L = 16
    corpora = [[int(x) for x in rng.integers(1, 3 * L, size=int(rng.integers(20, 60)))] for _ in weights]
    prefixes = [_indexed(tmp_path, f"src{i}", c) for i, c in enumerate(corpora)]
    cfg = GPTDatasetConfig(random_seed=seed, sequence_length=L, blend=(prefixes, list(weights)), split=split,
                           path_to_cache=None, tokenizer=_Tokenizer(), reset_position_ids=False,
                           reset_attention_mask=False, eod_mask_loss=False)
    sizes = [samples, 5 if split != "100" else 0, 0]
    train = BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, cfg).build()[0]
    plan = MegatronBlend(tuple(prefixes), weights, split, samples, L, seed)
    di, dsi = plan.indices()
    assert len(train) == len(di) == sum(plan.targets())
    assert np.array_equal(train.dataset_index, di) and np.array_equal(train.dataset_sample_index, dsi)
    for i, corpus in enumerate(corpora):
        lo, hi = plan.train_documents(len(corpus))
        assert (lo, hi) == (int(train.datasets[i].indices[0]), int(train.datasets[i].indices[-1]) + 1)
        packer = build_packer("megatron-gpt", seq_length=L, seed=seed, num_samples=plan.built()[i])
        rows, _ = inputs_mod.our_rows(packer, corpus[lo:hi])
        drawn = plan.drawn()[i]
        assert len(rows) >= drawn
        for j in range(drawn):
            text, _ = train.datasets[i]._query_document_sample_shuffle_indices(j)
            assert [int(t) for t in text] == rows[j]
    assert sum(plan.drawn()) == samples


def test_split_and_errors() -> None:
    assert split_bookends("969, 30, 1") == (0.0, 0.969)
    assert MegatronBlend(("a", "b"), (1, 3), "100", 8, 4).normalized == [0.25, 0.75]
    with pytest.raises(InputError, match="--split must be comma-separated non-negative numbers, got '-1,2'"):
        split_bookends("-1,2")
    with pytest.raises(InputError, match="--data-path weight of 'b' must be a positive number, got 0"):
        MegatronBlend(("a", "b"), (1, 0), "100", 8, 4)
    with pytest.raises(InputError, match="a blend needs one weight per prefix, got 1 weights for 2 prefixes"):
        MegatronBlend(("a", "b"), (1,), "100", 8, 4)
