"""Megatron-LM arguments (an argument list, or a YAML of the same destinations) mapped onto ``megatron-gpt``.

==================================  ================================================================
argument                            becomes
==================================  ================================================================
``--seq-length L``                  ``R = L + 1`` (a sample holds ``L + 1`` tokens)
``--data-path P`` / ``w1 P1 ...``   one prefix: ``megatron-gpt`` over it; weights and prefixes: a
                                    blend (:class:`~packing_theory.configs.blend.MegatronBlend`), the
                                    normalised weights the declared mixture
``--train-data-path``               the same, for the training split only (``--split`` is then 1)
``--split`` (``969, 30, 1``)        each dataset's training documents (the first book-ends): only
                                    they are replayed, one dataset or a blend; the others are
                                    outside the training split
``--train-samples N`` or            ``N`` samples drawn: knob ``num_samples`` (one prefix), the
``--train-iters I`` x               blend's ``N``, and the horizon ``N`` rows
``--global-batch-size G``
``--seed`` (1234)                   knob ``seed``
``--mock-data``                     refused (no data to replay)
==================================  ================================================================

The file is Megatron-LM's own command line (``pretrain_gpt.py`` arguments,
shell quoting and line continuations allowed) or a YAML whose keys are the
arguments' destinations (``seq_length``, ``data_path``, ...), as Megatron-LM's
``--yaml-cfg`` writes them. The megatron-core wheel ships no argument parser
(that is Megatron-LM's ``megatron/training/arguments.py``), so the argument
names and defaults are those its documentation gives.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..audit.declared import DeclaredMixture
from ..engine.horizon import Budget
from ..errors import InputError
from ._base import Keys, MappedConfig
from .blend import MegatronBlend, split_bookends, train_split_range

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..corpus.funnel import FunnelResult

__all__ = ["read_megatron", "source_name", "split_stage_name", "train_split_funnel"]

_NOT_DATA = "not a setting of the data pipeline"
DEFAULT_SPLIT = "969, 30, 1"


def source_name(prefix: str) -> str:
    """A blend source's name: the prefix's file name (``/data/web_text_document`` -> ``web_text_document``).
    """
    return os.path.basename(prefix.rstrip("/")) or prefix


def split_stage_name(split: str) -> str:
    """The name of the stage that removes a dataset's documents outside ``--split``'s training split."""
    return f"--split {split} (outside the training split)"


def train_split_funnel(split: str, lengths: npt.ArrayLike,
                       funnel: FunnelResult | None = None) -> FunnelResult | None:
    """``funnel`` (or none) followed by Megatron's ``--split``: a stage removing the raw documents outside
    the training split ``[round(lo * n), round(hi * n))``
    (:func:`~packing_theory.configs.blend.train_split_range`),
    so that a report names them *removed by* it, not *never started*; ``None`` when every document is in it.
    O(n).

    >>> r = train_split_funnel("50,25,25", [3, 4, 5, 6])
    >>> r.keep.tolist(), r.stages[0].stage.name
    ([True, True, False, False], '--split 50,25,25 (outside the training split)')
    """
    import numpy as np

    from ..corpus.funnel import FunnelResult, FunnelStage
    from ..lengths import validate_lengths

    arr = validate_lengths(lengths)
    begin, end = train_split_range(split, int(arr.size))
    if (begin, end) == (0, int(arr.size)):
        return funnel
    outside = np.ones(arr.size, np.bool_)
    outside[begin:end] = False
    stage = FunnelStage(split_stage_name(split), "any", "ids", f"raw documents outside [{begin}, {end})",
                        {"split": split, "training documents": [begin, end]})
    return (funnel or FunnelResult.nothing_removed(arr)).then(stage, outside, arr)


def _data_path(k: Keys, key: str) -> tuple[list[str], list[float] | None]:
    raw = k.take(key)
    items = [str(x) for x in (raw if isinstance(raw, list) else str(raw).split())]
    if len(items) == 1:
        return items, None
    if len(items) % 2:
        raise k.refuse(key, raw, "give one prefix, or weight-prefix pairs")
    try:
        weights = [float(w) for w in items[0::2]]
    except ValueError as exc:
        raise k.refuse(key, raw, f"a weight is not a number ({exc})") from exc
    return items[1::2], weights


def read_megatron(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map Megatron-LM arguments (see the module doc).

    Raises:
        InputError: no ``--seq-length`` or ``--data-path``, ``--mock-data``, a bad weight or a bad value
            (naming the argument).
    """
    args = doc.get("_argv", doc)
    k = Keys({str(a).replace("-", "_"): _typed(v) for a, v in args.items()}, source)
    k.take("framework")
    if k.take("mock_data", False):
        raise k.refuse("mock_data", True, "mock data has no documents to replay")
    L = k.int("seq_length", None, 1)
    if L is None:
        raise InputError(f"{source}: --seq-length is required")
    k.use("seq_length", L, f"R = seq_length + 1 = {L + 1}")
    key = "train_data_path" if k.has("train_data_path") else "data_path"
    if not k.has(key):
        raise InputError(f"{source}: --data-path (or --train-data-path) is required")
    prefixes, weights = _data_path(k, key)
    split = str(k.take("split", DEFAULT_SPLIT)) if key == "data_path" else "1"
    n = _num_samples(k)
    seed = k.int("seed", 1234, 0)
    assert seed is not None
    options: dict[str, Any] = {"seed": seed}
    k.use("seed", seed, "knob seed")
    horizon = None if n is None else Budget("rows", n)
    lo, hi = split_bookends(split)
    if hi <= lo:
        raise k.refuse("split", split, "the training split is empty: Megatron builds no training dataset")
    blend = mixture = None
    if weights is None and len(prefixes) == 1:
        k.use(key, prefixes, "one dataset: megatron-gpt over its training split")
        if n is not None:
            options["num_samples"] = n
    else:
        if weights is None:
            raise k.refuse(key, prefixes, "several prefixes without weights blend by dataset size; give "
                           "weights")
        if n is None:
            raise InputError(f"{source}: a weighted blend needs --train-samples or --train-iters with "
                             "--global-batch-size (Megatron requires a size with weights)")
        blend = MegatronBlend(tuple(prefixes), tuple(weights), split, n, L, seed)
        names = [source_name(p) for p in prefixes]
        if len(set(names)) != len(names):
            raise k.refuse(key, prefixes, "two prefixes share a file name; rename one")
        mixture = DeclaredMixture.from_document({"alpha": dict(zip(names, blend.normalized, strict=True)),
                                                 "name": f"megatron {key}"}, origin=f"{source} --{key}")
        shares = ", ".join(f"{nm} {w:.4g}" for nm, w in zip(names, blend.normalized, strict=True))
        k.use(key, list(zip(weights, prefixes, strict=True)),
              f"a blend of {len(prefixes)} datasets, declared sample shares {shares}")
    k.use("split", split, f"each dataset's training split: documents [round({lo:.6g} * n), "
          f"round({hi:.6g} * n)) of its n are replayed; the others are outside the training split")
    k.ignore("micro_batch_size", "splits a batch for the forward pass; the samples do not change")
    for flag in ("reset_position_ids", "reset_attention_mask", "eod_mask_loss"):
        k.ignore(flag, "what the model sees of a sample (attention, positions, loss mask), not which tokens")
    per_step = k.int("global_batch_size", None, 1)
    if per_step is not None and not any(u.key == "global_batch_size" for u in k.used):
        k.use("global_batch_size", per_step, "samples per optimizer step")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("megatron", source, "megatron-gpt", L, L + 1, options, horizon, per_step,
                        mixture=mixture, blend=blend, train_split=split if blend is None else None, used=used,
                        ignored=ignored)


def _typed(value: Any) -> Any:
    """An argument list's string as the int or float it spells (lists and other values unchanged)."""
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _num_samples(k: Keys) -> int | None:
    samples = k.int("train_samples", None, 1)
    iters = k.int("train_iters", None, 1)
    gbs = k.int("global_batch_size", None, 1)
    if samples is not None:
        if iters is not None:
            raise k.refuse("train_iters", iters, "give --train-samples or --train-iters, not both")
        k.use("train_samples", samples, f"{samples:,} samples drawn (the horizon)")
        return samples
    if iters is None:
        return None
    if gbs is None:
        raise InputError(f"{k.source}: --train-iters needs --global-batch-size to count the samples")
    k.use("train_iters", iters, f"{iters * gbs:,} samples drawn (train_iters * global_batch_size)")
    k.use("global_batch_size", gbs, "samples per iteration")
    return iters * gbs
