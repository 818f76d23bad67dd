"""Axolotl YAML and TRL ``SFTConfig`` files mapped onto the ``axolotl-multipack`` and ``trl-*`` peers.

Axolotl (keys and defaults of ``axolotl.utils.schemas`` 0.19.0):

=================================  =================================================================
key                                becomes
=================================  =================================================================
``sample_packing: true``           ``axolotl-multipack`` (``false`` is refused: no packer to replay)
``sequence_len`` (512)             the sequence length; ``R = micro_batch_size * sequence_len``
``micro_batch_size`` (1)           knob ``micro_batch_size``
``multipack_real_batches``         knob ``multipack_real_batches`` (then ``R = sequence_len``)
``sample_packing_bin_size``        knob ``bin_size``
``sample_packing_group_size``      knob ``group_size``
``sample_packing_sequentially``    knob ``sequential``
``excess_length_strategy``         knob ``excess_length_strategy`` (default ``drop``)
``min_sample_len``                 knob ``min_sample_len``
``num_epochs`` (1)                 knob ``epochs`` (a fraction is refused)
``curriculum_sampling``            ``true``: sampler order = file order (knob ``seed=None``); otherwise
                                   torch's ``RandomSampler``, replayed with the peer's own permutation
                                   seeded by ``seed`` (42)
``max_steps``                      horizon: ``max_steps * gradient_accumulation_steps`` bins
``val_set_size`` > 0               refused (the split removes documents before packing)
=================================  =================================================================

TRL (``SFTConfig`` fields of trl 1.16.0, as its YAML/JSON dump writes them):

=================================  =================================================================
key                                becomes
=================================  =================================================================
``packing: true``                  ``trl-<packing_strategy>`` (``false`` is refused)
``packing_strategy`` (``bfd``)     ``trl-bfd`` / ``trl-bfd_split`` / ``trl-wrapped``
``max_length`` (1024)              ``R = max_length``
``dataset_num_proc`` > 1           refused (shards change the map batches the packer sees)
``shuffle_dataset: true``          refused (the shuffled order is not replayed)
``completion_only_loss``,          the examples' prompts are not trained: the doctor checks which
``assistant_only_loss``            examples keep a trained token
``max_steps`` > 0                  horizon: ``max_steps * per_device_train_batch_size *
                                   gradient_accumulation_steps`` rows
``dataloader_drop_last: true``     the trainer drops a final batch of fewer than
                                   ``per_device_train_batch_size`` rows
=================================  =================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.horizon import Budget
from ..registry import entry
from ._base import Keys, MappedConfig

__all__ = ["read_axolotl", "read_trl"]

_NOT_DATA = "not a setting of the data pipeline"


def read_axolotl(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map an Axolotl YAML (see the module doc).

    Raises:
        InputError: ``sample_packing`` off, a fractional ``num_epochs``, ``val_set_size`` > 0, or a bad value
            (naming the key).
    """
    k = Keys(doc, source)
    k.take("framework")
    packing = k.bool("sample_packing", False)
    if not packing:
        raise k.refuse("sample_packing", packing, "without sample packing Axolotl pads every row to its own "
                       "length; the replay models sample packing only (set sample_packing: true)")
    k.use("sample_packing", True, "axolotl-multipack")
    L = k.int("sequence_len", 512, 1)
    assert L is not None
    options: dict[str, Any] = {}
    mbs = k.int("micro_batch_size", 1, 1)
    real = k.bool("multipack_real_batches", False)
    options["micro_batch_size"] = mbs
    options["multipack_real_batches"] = bool(real)
    rule = "R = sequence_len" if real else f"R = micro_batch_size * sequence_len = {mbs} * {L}"
    k.use("sequence_len", L, rule)
    k.use("micro_batch_size", mbs, "knob micro_batch_size")
    for key, knob in (("sample_packing_bin_size", "bin_size"), ("sample_packing_group_size", "group_size"),
                      ("min_sample_len", "min_sample_len")):
        value = k.int(key, None, 0 if knob == "min_sample_len" else 1)
        if value is not None:
            options[knob] = value
            k.use(key, value, f"knob {knob}")
    sequential = k.bool("sample_packing_sequentially", None)
    if sequential is not None:
        options["sequential"] = sequential
        k.use("sample_packing_sequentially", sequential, "knob sequential (next fit)")
    strategy = k.take("excess_length_strategy", None)
    if strategy is not None:
        options["excess_length_strategy"] = strategy
        k.use("excess_length_strategy", strategy, "knob excess_length_strategy")
    epochs = k.take("num_epochs", 1)
    bad = not isinstance(epochs, (int, float)) or isinstance(epochs, bool)
    if bad or epochs < 1 or epochs != int(epochs):
        raise k.refuse("num_epochs", epochs, "the replay runs whole epochs (an integer >= 1)")
    options["epochs"] = int(epochs)
    k.use("num_epochs", epochs, f"knob epochs = {int(epochs)}")
    _axolotl_order(k, options)
    val = k.take("val_set_size", 0.0)
    if val:
        raise k.refuse("val_set_size", val, "the validation split removes documents before packing, which "
                       "the replay does not model: set 0, or give the training split as --data")
    accum = k.int("gradient_accumulation_steps", 1, 1)
    assert accum is not None and mbs is not None
    per_step = accum * (mbs if real else 1)
    steps = k.int("max_steps", None, 1)
    horizon = None
    if steps is not None:
        horizon = Budget("rows", steps * per_step)
        k.use("max_steps", steps, f"horizon {steps * per_step:,} bins (max_steps * "
              "gradient_accumulation_steps" + (" * micro_batch_size)" if real else ")"))
    k.use("gradient_accumulation_steps", accum, f"{per_step} bins per optimizer step")
    datasets = k.take("datasets", None)
    if datasets is not None:
        paths = [d.get("path", "?") if isinstance(d, Mapping) else str(d) for d in datasets]
        k.use("datasets", paths, f"{len(paths)} dataset(s), concatenated in this order; read from --data")
    k.ignore("pad_to_sequence_len", "the collator pads a bin to sequence_len; the replay counts a bin's "
             "unused capacity as padding either way")
    k.ignore("dataloader_drop_last", "the multipack sampler always drops an incomplete last batch")
    k.ignore("eval_sample_packing", "evaluation only")
    k.ignore("shuffle_merged_datasets", "the sampler draws its own order of the rows")
    used, ignored = k.finish(_NOT_DATA)
    cap = entry("axolotl-multipack").capacity_for(L, options)
    return MappedConfig("axolotl", source, "axolotl-multipack", L, cap, options, horizon, per_step,
                        used=used, ignored=ignored)


def _axolotl_order(k: Keys, options: dict[str, Any]) -> None:
    curriculum = k.bool("curriculum_sampling", None)
    seed = k.int("seed", None, 0)
    if curriculum:
        options["seed"] = None
        k.use("curriculum_sampling", True, "SequentialSampler: the rows in file order (knob seed=None)")
        if seed is not None:
            k.ignore("seed", "curriculum_sampling: no random order")
        return
    options["seed"] = 42 if seed is None else seed
    k.use("seed", options["seed"], "torch's RandomSampler order, replayed with the peer's own permutation "
          "stream (torch's is not reproduced: which rows share a bin, and which batch drop_last drops, can "
          "differ; the filter and the counts per epoch do not depend on the order)")


def read_trl(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map a TRL ``SFTConfig`` (see the module doc).

    Raises:
        InputError: ``packing`` off, an unknown ``packing_strategy``, ``dataset_num_proc`` > 1,
            ``shuffle_dataset`` on, or a bad value (naming the key).
    """
    k = Keys(doc, source)
    k.take("framework")
    packing = k.bool("packing", False)
    if not packing:
        raise k.refuse("packing", packing, "without packing TRL truncates and pads every example on its own; "
                       "the replay models packed datasets (set packing: true)")
    strategy = k.take("packing_strategy", "bfd")
    if strategy not in ("bfd", "bfd_split", "wrapped"):
        raise k.refuse("packing_strategy", strategy, "TRL 1.16.0 packs with bfd, bfd_split or wrapped")
    name = f"trl-{strategy}"
    k.use("packing", True, name)
    k.use("packing_strategy", strategy, name)
    L = k.int("max_length", 1024, 1)
    assert L is not None
    k.use("max_length", L, f"R = max_length = {L}")
    procs = k.int("dataset_num_proc", None, 1)
    if procs is not None and procs > 1:
        raise k.refuse("dataset_num_proc", procs, "the dataset is mapped in that many shards, each packed in "
                       "its own map batches; the replay packs one process's batches (use 1 or null)")
    if k.bool("shuffle_dataset", False):
        raise k.refuse("shuffle_dataset", True, "the dataset is shuffled before packing; the replay packs "
                       "--data in its order (shuffle the data yourself, or set false)")
    trainable = None
    for key in ("completion_only_loss", "assistant_only_loss"):
        flag = k.bool(key, None)
        if flag:
            trainable = "completion"
            k.use(key, True, "prompts are not trained: each example needs its first trained offset")
    bs = k.int("per_device_train_batch_size", 8, 1)
    accum = k.int("gradient_accumulation_steps", 1, 1)
    assert bs is not None and accum is not None
    steps = k.int("max_steps", -1, -1)
    horizon = None
    if steps is not None and steps > 0:
        horizon = Budget("rows", steps * bs * accum)
        k.use("max_steps", steps, f"horizon {steps * bs * accum:,} rows (max_steps * "
              "per_device_train_batch_size * gradient_accumulation_steps)")
    else:
        epochs = k.take("num_train_epochs", 3.0)
        k.use("num_train_epochs", epochs, "every epoch trains the same packed rows: the replay packs once")
    k.use("per_device_train_batch_size", bs, f"{bs * accum} rows per optimizer step")
    drop = None
    if k.bool("dataloader_drop_last", False):
        drop = bs
        k.use("dataloader_drop_last", True, f"a final batch of fewer than {bs} rows is not trained")
    k.ignore("padding_free", "the collator concatenates rows (no pad tokens); the bins' free space is "
             "counted as unused capacity either way")
    k.ignore("eval_packing", "evaluation only")
    k.ignore("truncation_mode", "not used with packing (the packer truncates or splits)")
    k.ignore("seed", "no shuffle before packing")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("trl", source, name, L, L, {}, horizon, bs * accum, trainable=trainable,
                        drop_last_rows=drop, used=used, ignored=ignored)
