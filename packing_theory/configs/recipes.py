"""LLM Foundry training YAML and torchtune recipe configs mapped onto their peers.

LLM Foundry (``llmfoundry`` 0.22.0 finetuning YAML; ``${...}`` interpolations resolved):

====================================  ==============================================================
key                                   becomes
====================================  ==============================================================
``train_loader.name: finetuning``     the finetuning dataloader (``text`` is refused)
``train_loader.dataset.packing_ratio``  a number: ``foundry-binpack`` with knob ``packing_ratio``
                                      (``null``: no packing, ``auto``: profiled — both refused)
``train_loader.dataset.max_seq_len``  ``R = max_seq_len`` (else the top-level ``max_seq_len``)
``...dataset.decoder_only_format``    must be true (the collator packs decoder-only examples)
``...dataset.max_leftover_bins_to_keep``  knob ``max_leftover_bins_to_keep``
``train_loader.drop_last``            knob ``drop_last``
``global_train_batch_size``           knob ``batch_size`` (one device: the device batch size)
``max_duration``                      ``Nba``: horizon ``N * batch_size`` rows; ``Ntok``: a token
                                      horizon; ``1ep``: the whole data (more epochs refused)
====================================  ==============================================================

torchtune (recipe config of torchtune 0.6.1):

====================================  ==============================================================
key                                   becomes
====================================  ==============================================================
``dataset.packed: true``              ``torchtune-next_fit``, or ``torchtune-split`` with
                                      ``split_across_pack: true`` (the default of
                                      ``text_completion_dataset``); ``false`` is refused
``tokenizer.max_seq_len``             ``R = max_seq_len``; the tokenizer also truncates every
                                      sample to it before packing
``dataset.max_packs`` (rare)          knob ``max_packs``
``batch_size``,                       rows per optimizer step; with ``max_steps_per_epoch`` the
``gradient_accumulation_steps``       horizon ``max_steps_per_epoch * batch_size * accumulation``
====================================  ==============================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..engine.horizon import Budget
from ..errors import InputError
from ._base import Keys, MappedConfig

__all__ = ["read_foundry", "read_torchtune"]

_NOT_DATA = "not a setting of the data pipeline"


def read_foundry(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map an LLM Foundry training YAML (see the module doc).

    Raises:
        InputError: a loader other than ``finetuning``, no or ``auto`` packing ratio, a non-decoder-only
            format, more than one epoch, or a bad value (naming the key).
    """
    k = Keys(doc, source)
    k.take("framework")
    name = k.take("train_loader.name", None)
    if name != "finetuning":
        raise k.refuse("train_loader.name", name, "only the finetuning dataloader packs (BinPackCollator); "
                       "the text dataloader truncates each sample and is not modelled")
    k.use("train_loader.name", name, "the finetuning dataloader")
    ratio = k.take("train_loader.dataset.packing_ratio", None)
    if ratio is None or ratio == "auto" or isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
        raise k.refuse("train_loader.dataset.packing_ratio", ratio, "give the packing ratio as a number "
                       "(null does not pack; 'auto' profiles a ratio: give the one it chose)")
    options: dict[str, Any] = {"packing_ratio": float(ratio)}
    k.use("train_loader.dataset.packing_ratio", ratio, "foundry-binpack, knob packing_ratio")
    L = k.int("train_loader.dataset.max_seq_len", None, 1)
    key = "train_loader.dataset.max_seq_len"
    top = k.int("max_seq_len", None, 1)
    if L is None:
        L, key = top, "max_seq_len"
    if L is None:
        raise InputError(f"{source}: max_seq_len is not given (train_loader.dataset.max_seq_len)")
    k.use(key, L, f"R = max_seq_len = {L}")
    if not k.bool("train_loader.dataset.decoder_only_format", False):
        raise k.refuse("train_loader.dataset.decoder_only_format", False,
                       "LLM Foundry packs decoder-only examples only (set true)")
    k.use("train_loader.dataset.decoder_only_format", True, "decoder-only examples (prompt + response)")
    leftovers = k.int("train_loader.dataset.max_leftover_bins_to_keep", None, 0)
    if leftovers is not None:
        options["max_leftover_bins_to_keep"] = leftovers
        k.use("train_loader.dataset.max_leftover_bins_to_keep", leftovers, "knob max_leftover_bins_to_keep")
    drop = k.bool("train_loader.drop_last", None)
    if drop is not None:
        options["drop_last"] = drop
        k.use("train_loader.drop_last", drop, "knob drop_last")
    batch = k.int("global_train_batch_size", None, 1)
    if batch is not None:
        options["batch_size"] = batch
        k.use("global_train_batch_size", batch, "knob batch_size (bins per collate call, one device)")
    rows = int(options.get("batch_size", 8))
    horizon = _foundry_duration(k, rows)
    if k.bool("train_loader.dataset.shuffle", None):
        k.ignore("train_loader.dataset.shuffle", "the loader's shuffle is not replayed: --data is read in "
                 "its order")
    k.ignore("train_loader.dataset.hf_name", "the data is read from --data")
    k.ignore("train_loader.dataset.split", "the data is read from --data")
    k.ignore("device_train_microbatch_size", "splits a batch for the backward pass; the rows do not change")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("foundry", source, "foundry-binpack", L, L, options, horizon, rows,
                        trainable="completion", used=used, ignored=ignored)


def _foundry_duration(k: Keys, rows: int) -> Budget | None:
    duration = k.take("max_duration", None)
    if duration is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*(ba|tok|ep)\s*", str(duration))
    if m is None:
        raise k.refuse("max_duration", duration, "give it in batches (Nba), tokens (Ntok) or 1ep")
    n, unit = int(m.group(1)), m.group(2)
    if unit == "ep":
        if n != 1:
            raise k.refuse("max_duration", duration, "the replay runs one epoch of the collator (its shuffle "
                           "is not replayed)")
        k.use("max_duration", duration, "the whole data, once")
        return None
    if unit == "tok":
        k.use("max_duration", duration, f"a horizon of {n:,} tokens")
        return Budget("tokens", n)
    k.use("max_duration", duration, f"horizon {n * rows:,} rows (batches * global_train_batch_size)")
    return Budget("rows", n * rows)


def _dataset(k: Keys) -> str:
    """The key of torchtune's dataset mapping (``dataset`` or its single list entry)."""
    ds = k.doc.get("dataset")
    if isinstance(ds, list):
        if len(ds) != 1:
            raise k.refuse("dataset", f"{len(ds)} datasets", "a ConcatDataset of several datasets is not "
                           "modelled: give one dataset")
        k.doc = {**k.doc, "dataset": ds[0]}
    return "dataset"


def read_torchtune(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map a torchtune recipe config (see the module doc).

    Raises:
        InputError: no packing, no ``tokenizer.max_seq_len``, several datasets, or a bad value (naming the
            key).
    """
    k = Keys(doc, source)
    k.take("framework")
    ds = _dataset(k)
    if not k.bool(f"{ds}.packed", False):
        raise k.refuse(f"{ds}.packed", k.take(f"{ds}.packed", False), "without packing every sample is its "
                       "own row; the replay models PackedDataset (set packed: true)")
    component = str(k.take(f"{ds}._component_", ""))
    default_split = component.endswith("text_completion_dataset")
    split = k.bool(f"{ds}.split_across_pack", default_split)
    name = "torchtune-split" if split else "torchtune-next_fit"
    k.use(f"{ds}.packed", True, name)
    k.use(f"{ds}.split_across_pack", split, name + ("" if k.has(f"{ds}.split_across_pack")
                                                    else f" (the default of {component or 'the builder'})"))
    L = k.int("tokenizer.max_seq_len", None, 1)
    if L is None:
        raise InputError(f"{source}: tokenizer.max_seq_len is required when packing (PackedDataset packs "
                         "to it)")
    k.use("tokenizer.max_seq_len", L, f"R = max_seq_len = {L}; the tokenizer truncates every sample to it")
    options: dict[str, Any] = {}
    max_packs = k.int(f"{ds}.max_packs", None, 0)
    if max_packs is not None:
        options["max_packs"] = max_packs
        k.use(f"{ds}.max_packs", max_packs, "knob max_packs")
    batch = k.int("batch_size", 1, 1)
    accum = k.int("gradient_accumulation_steps", 1, 1)
    assert batch is not None and accum is not None
    per_step = batch * accum
    horizon = None
    steps = k.int("max_steps_per_epoch", None, 1)
    epochs = k.int("epochs", 1, 1)
    if epochs != 1:
        raise k.refuse("epochs", epochs, "the replay packs one epoch (the sampler's shuffle is not replayed)")
    if steps is not None:
        horizon = Budget("rows", steps * per_step)
        k.use("max_steps_per_epoch", steps, f"horizon {steps * per_step:,} packs")
    k.use("batch_size", batch, f"{per_step} packs per optimizer step")
    k.ignore("shuffle", "the sampler's shuffle is not replayed: --data is read in its order")
    k.ignore(f"{ds}.source", "the data is read from --data")
    k.ignore("tokenizer._component_", "the data is read from --data (lengths in tokens)")
    k.ignore("tokenizer.path", "the data is read from --data (lengths in tokens)")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("torchtune", source, name, L, L, options, horizon, per_step, pre_truncate=L,
                        used=used, ignored=ignored)
