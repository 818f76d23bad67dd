"""Megatron's data blend: ``--data-path w1 p1 w2 p2 ...`` replayed as megatron-core's builder makes it.

Transcribed (our own code) from megatron-core 0.16.1:
``datasets/blended_megatron_dataset_builder.py`` (``_build_blended_dataset_splits``,
``_get_size_per_split_per_dataset``, ``_build_megatron_dataset_splits``),
``datasets/blended_megatron_dataset_config.py`` (``parse_and_normalize_split``,
``convert_split_vector_to_split_matrix``), ``datasets/utils.py`` (``normalize``),
``datasets/blended_dataset.py`` and ``helpers.cpp`` (``build_blending_indices``).

For ``N`` training samples (``--train-samples``, or ``--train-iters`` times
``--global-batch-size``) and weights ``w`` normalised to sum 1:

1. source ``i`` is *targeted* ``t_i = ceil(N * w_i)`` samples and its
   ``GPTDataset`` is built for ``ceil(t_i * (1 + 0.005))`` (the mid-level
   surplus) over its training split, the documents
   ``[round(lo * n_i), round(hi * n_i))`` of ``--split``'s first book-ends;
2. the blend holds ``sum(t_i)`` samples; sample ``k`` goes to the source with
   the largest error ``w_i * max(k, 1) - c_i`` (``c_i`` its samples so far; the
   first of equal errors), as the ``c_i``-th sample of that source: the
   greedy, error-minimising ``build_blending_indices`` (:func:`blending_indices`);
3. the trainer draws blend samples ``0 .. N - 1`` in order, so source ``i``
   contributes its first ``d_i`` samples (:meth:`MegatronBlend.drawn`).

The weights are therefore shares of *samples* (hence of tokens: every sample
holds ``seq_length + 1`` tokens), not of documents and not of each source's
size: ``--data-path 1 A 1 B`` draws half the samples from each, whatever their
sizes (NVIDIA/Megatron-LM#547). A source of short documents contributes more
documents per sample than its weight, and a small source is repeated.

``tests/configs/test_blend.py`` checks :func:`blending_indices` against the
wheel's compiled ``helpers_cpp.build_blending_indices`` and the whole plan,
sample by sample, against ``BlendedMegatronDatasetBuilder`` on indexed
datasets written with megatron-core's ``IndexedDatasetBuilder``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError

__all__ = ["MID_LEVEL_SURPLUS", "MegatronBlend", "blending_indices", "split_bookends", "train_split_range"]

MID_LEVEL_SURPLUS = 0.005
"""``GPTDatasetConfig.mid_level_dataset_surplus``: the extra samples built per source."""


def _normalize(weights: Sequence[float]) -> list[float]:
    w = np.array(weights, dtype=np.float64)
    return [float(x) for x in (w / np.sum(w)).tolist()]


def split_bookends(split: str) -> tuple[float, float]:
    """The training split's book-ends ``(lo, hi)`` of ``--split`` (``"969, 30, 1"`` -> ``(0.0, 0.969)``).

    >>> split_bookends("969, 30, 1"), split_bookends("1")
    ((0.0, 0.969), (0.0, 1.0))

    Raises:
        InputError: no number, or a negative one.
    """
    parts = [float(x) for x in re.findall(r"[.0-9]+", str(split))]
    if not parts or any(p < 0 for p in parts) or "-" in str(split):
        raise InputError(f"--split must be comma-separated non-negative numbers, got {split!r}")
    parts += [0.0] * (3 - len(parts))
    norm = _normalize(parts)
    return 0.0, norm[0]


def train_split_range(split: str, documents: int) -> tuple[int, int]:
    """``[begin, end)``: the documents of ``--split``'s training split, of a dataset of ``documents``.

    Megatron's builder takes the training split's book-ends ``(lo, hi)``
    (:func:`split_bookends`) and keeps the documents ``round(lo * n)`` to
    ``round(hi * n)`` (Python's ``round``, halves to even), whatever their
    lengths: the split is of documents, in the dataset's order.

    >>> train_split_range("50,25,25", 2000), train_split_range("969, 30, 1", 10)
    ((0, 1000), (0, 10))

    Raises:
        InputError: a bad ``split`` or ``documents``.
    """
    lo, hi = split_bookends(split)
    n = float(check_int("documents", documents, 0))
    return round(lo * n), round(hi * n)


def blending_indices(weights: Sequence[float], size: int
                     ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int64]]:
    """``(dataset_index, dataset_sample_index)`` of ``helpers.cpp``'s ``build_blending_indices``.

    Sample ``k`` goes to the dataset with the largest ``weights[i] * max(k, 1) -
    count[i]`` (ties to the lowest ``i``), as its ``count[i]``-th sample.

    >>> di, dsi = blending_indices([0.3, 0.7], 10)
    >>> di.tolist(), dsi.tolist()
    ([1, 0, 1, 1, 0, 1, 1, 0, 1, 1], [0, 0, 1, 2, 1, 3, 4, 2, 5, 6])

    Complexity: O(size * datasets), in Python floats (IEEE doubles, as the C++).
    """
    n = check_int("size", size, 0)
    w = [float(x) for x in weights]
    if not w:
        raise InputError("weights must name at least one dataset")
    counts = [0] * len(w)
    dataset_index = np.zeros(n, np.int16)
    sample_index = np.zeros(n, np.int64)
    for k in range(n):
        x = max(float(k), 1.0)
        best, best_err = 0, w[0] * x - float(counts[0])
        for i in range(1, len(w)):
            err = w[i] * x - float(counts[i])
            if err > best_err:
                best, best_err = i, err
        dataset_index[k] = best
        sample_index[k] = counts[best]
        counts[best] += 1
    return dataset_index, sample_index


@dataclass(frozen=True)
class MegatronBlend:
    """A Megatron ``--data-path`` blend and the plan ``BlendedMegatronDatasetBuilder`` makes of it.

    Attributes:
        prefixes: the dataset prefixes, in order.
        weights: the weights as given (any positive numbers).
        split: ``--split``.
        num_samples: ``N``, the training samples drawn.
        seq_length: ``--seq-length``.
        seed: ``--seed`` (the ``GPTDataset`` shuffles).
    """

    prefixes: tuple[str, ...]
    weights: tuple[float, ...]
    split: str
    num_samples: int
    seq_length: int
    seed: int = 1234

    def __post_init__(self) -> None:
        if len(self.prefixes) != len(self.weights) or not self.prefixes:
            raise InputError(f"a blend needs one weight per prefix, got {len(self.weights)} weights for "
                             f"{len(self.prefixes)} prefixes")
        for p, w in zip(self.prefixes, self.weights, strict=True):
            if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
                raise InputError(f"--data-path weight of {p!r} must be a positive number, got {w!r}")
        check_int("num_samples", self.num_samples, 1)
        split_bookends(self.split)

    @property
    def normalized(self) -> list[float]:
        """The weights divided by their sum (``megatron.core.datasets.utils.normalize``)."""
        return _normalize(self.weights)

    def targets(self) -> list[int]:
        """``ceil(N * w_i)``: the samples planned per source."""
        return [math.ceil(self.num_samples * w) for w in self.normalized]

    def built(self) -> list[int]:
        """``ceil(t_i * 1.005)``: the samples each source's ``GPTDataset`` is built for."""
        return [math.ceil(math.ceil(self.num_samples * w) * (1 + MID_LEVEL_SURPLUS))
                for w in self.normalized]

    def train_documents(self, documents: int) -> tuple[int, int]:
        """``[begin, end)`` of a source's training split, for ``documents`` documents
        (:func:`train_split_range`)."""
        return train_split_range(self.split, documents)

    def indices(self) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int64]]:
        """The blend's ``dataset_index`` and ``dataset_sample_index`` (``sum(t_i)`` samples)."""
        return blending_indices(self.normalized, sum(self.targets()))

    def drawn(self) -> list[int]:
        """``d_i``: the samples of each source among the ``N`` drawn (the first ``d_i`` of its dataset)."""
        di, _ = self.indices()
        counts = np.bincount(di[: self.num_samples], minlength=len(self.prefixes))
        return [int(c) for c in counts]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the plan."""
        return {"prefixes": list(self.prefixes), "weights": list(self.weights), "normalized": self.normalized,
                "split": self.split, "num_samples": self.num_samples, "seq_length": self.seq_length,
                "seed": self.seed, "targets": self.targets(), "built": self.built()}
