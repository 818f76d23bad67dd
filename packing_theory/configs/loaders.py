"""nanochat, autoresearch and Parcae settings mapped onto the streaming family and ``parcae-bestfit``.

The settings are the scripts' own argument names (nanochat's ``scripts/chat_sft.py``
and ``scripts/base_train.py`` flags with underscores, Parcae's launch YAML keys),
in a YAML or JSON file with ``framework:`` set.

nanochat (karpathy/nanochat@92d63d4):

============================  ====================================================================
key                           becomes
============================  ====================================================================
``script: chat_sft``          ``bestfit-pad``: ``sft_data_generator_bos_bestfit`` (buffer of
(default)                     ``buffer_size`` = 100 conversations, one fetched at a time: knobs
                              ``min_buffer=100, refill=1``); the loader cycles the data, so the
                              replay reads two passes
``script: base_train``        ``discard``: ``tokenizing_distributed_data_loader_with_state_bos_bestfit``
                              (``buffer_size`` 1,000, batches of ``tokenizer_batch_size`` 128)
``max_seq_len`` (2048)        ``R = max_seq_len + 1``
``device_batch_size`` (32),   rows per step on one rank: ``device_batch_size * total_batch_size /
``total_batch_size``,         (device_batch_size * max_seq_len * world_size)``
``world_size`` (1)            ``world_size > 1``: rank 0 reads every ``world_size``-th document
``num_iterations`` (-1)       ``> 0``: horizon ``num_iterations`` steps of rows
============================  ====================================================================

autoresearch: ``policy`` (``discard``, 228791f; ``continue``, PR #372),
``max_seq_len`` (2048), ``buffer_size`` (1000), ``refill`` (128),
``device_batch_size`` (64), ``total_batch_size`` (524,288), ``num_iterations``
(steps; the horizon).

Parcae (sandyresearch/parcae@dee8363, ``recpre/settings.py``):
``pack_sequences: true`` -> ``parcae-bestfit`` (``false`` is refused),
``block_size`` (2048) -> ``R = block_size + 1``, ``micro_batch_size`` (4) -> knob
``batch_size``; ``pack_buffer_size`` is listed as ignored because the collator
never reads it (sandyresearch/parcae#8); ``max_steps`` * ``world_batch_size``
(one device) or ``max_tokens`` / ``block_size`` is the horizon in rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.horizon import Budget
from ..registry import entry, names
from ._base import Keys, MappedConfig

__all__ = ["read_autoresearch", "read_nanochat", "read_parcae"]

_NOT_DATA = "not a setting of the data pipeline"


def _steps(k: Keys, L: int, device: int, total: int, world: int) -> int:
    per = device * L * world
    if total % per:
        raise k.refuse("total_batch_size", total, f"must be a multiple of device_batch_size * max_seq_len * "
                       f"world_size = {per} (the script asserts it)")
    return device * (total // per)


def read_nanochat(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map nanochat settings (see the module doc).

    Raises:
        InputError: an unknown script, a batch size the script refuses, or a bad value (naming the key).
    """
    k = Keys(doc, source)
    k.take("framework")
    script = k.take("script", "chat_sft")
    if script not in ("chat_sft", "base_train"):
        raise k.refuse("script", script, "nanochat's chat_sft (bestfit-pad) or base_train (bos_bestfit) "
                       "loader")
    sft = script == "chat_sft"
    L = k.int("max_seq_len", 2048, 1)
    device = k.int("device_batch_size", 32, 1)
    total = k.int("total_batch_size", 524288, 1)
    world = k.int("world_size", 1, 1)
    iters = k.int("num_iterations", -1, -1)
    assert L is not None and device is not None and total is not None
    assert world is not None and iters is not None
    B = k.int("buffer_size", 100 if sft else 1000, 1)
    policy = "bestfit-pad" if sft else "discard"
    options: dict[str, Any] = {"min_buffer": B}
    k.use("script", script, policy)
    k.use("buffer_size", B, f"knob min_buffer = {B}")
    if sft:
        options["refill"] = 1
        options["passes"] = 2
        k.use("refill", 1, "knob refill = 1 (refill_buffer fetches one conversation at a time)")
    else:
        refill = k.int("tokenizer_batch_size", 128, 1)
        options["refill"] = refill
        k.use("tokenizer_batch_size", refill, f"knob refill = {refill}")
    k.use("max_seq_len", L, f"R = max_seq_len + 1 = {L + 1}")
    per_step = _steps(k, L, device, total, world)
    k.use("device_batch_size", device, f"{per_step} rows per optimizer step on one rank")
    k.use("total_batch_size", total, f"gradient accumulation {per_step // device}")
    horizon = None
    if iters > 0:
        horizon = Budget("rows", iters * per_step)
        options["rows"] = iters * per_step
        k.use("num_iterations", iters, f"horizon {iters * per_step:,} rows (knob rows)")
    elif sft:
        k.use("num_iterations", iters, "nanochat stops once as many conversations were placed as the data "
              "holds; the loader cycles the data, so the replay reads two passes and stops where the stream "
              "runs dry or the buffer starves")
    else:
        k.use("num_iterations", iters, "no row budget: the replay runs to the end of the data")
    if world > 1:
        k.use("world_size", world, f"rank 0 reads documents 0, {world}, {2 * world}, ...")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("nanochat", source, policy, L, L + 1, options, horizon, per_step, rank_stride=world,
                        trainable="completion" if sft else None, used=used, ignored=ignored)


def read_autoresearch(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map autoresearch settings (see the module doc).

    Raises:
        InputError: a policy other than ``discard`` / ``continue``, or a bad value (naming the key).
    """
    k = Keys(doc, source)
    k.take("framework")
    policy = k.take("policy", "discard")
    if not (isinstance(policy, str) and policy in names("streaming") and entry(policy).in_family):
        raise k.refuse("policy", policy, "autoresearch's loader is a family member: discard (228791f) or "
                       "continue (PR #372)")
    L = k.int("max_seq_len", 2048, 1)
    B = k.int("buffer_size", 1000, 1)
    refill = k.int("refill", 128, 1)
    device = k.int("device_batch_size", 64, 1)
    total = k.int("total_batch_size", 524288, 1)
    iters = k.int("num_iterations", None, 1)
    assert L is not None and device is not None and total is not None
    options: dict[str, Any] = {"min_buffer": B, "refill": refill}
    k.use("policy", policy, policy)
    k.use("buffer_size", B, f"knob min_buffer = {B}")
    k.use("refill", refill, f"knob refill = {refill}")
    k.use("max_seq_len", L, f"R = max_seq_len + 1 = {L + 1}")
    per_step = _steps(k, L, device, total, 1)
    k.use("device_batch_size", device, f"{per_step} rows per optimizer step")
    horizon = None
    if iters is not None:
        horizon = Budget("rows", iters * per_step)
        options["rows"] = iters * per_step
        k.use("num_iterations", iters, f"horizon {iters * per_step:,} rows (knob rows)")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("autoresearch", source, policy, L, L + 1, options, horizon, per_step,
                        used=used, ignored=ignored)


def read_parcae(doc: Mapping[str, Any], source: str) -> MappedConfig:
    """Map a Parcae launch YAML (see the module doc).

    Raises:
        InputError: ``pack_sequences`` off, several training data entries, or a bad value (naming the key).
    """
    k = Keys(doc, source)
    k.take("framework")
    if not k.bool("pack_sequences", False):
        raise k.refuse("pack_sequences", k.take("pack_sequences", False), "without packing Parcae pads every "
                       "document on its own (generic_collate_fn), which is not modelled")
    block = k.int("block_size", 2048, 1)
    micro = k.int("micro_batch_size", 4, 1)
    assert block is not None and micro is not None
    k.use("pack_sequences", True, "parcae-bestfit (BestFitPackingCollator)")
    k.use("block_size", block, f"R = block_size + 1 = {block + 1}")
    k.use("micro_batch_size", micro, f"knob batch_size = {micro} (documents and rows per collate call)")
    k.ignore("pack_buffer_size", "BestFitPackingCollator stores buffer_size and never reads it: documents "
             "arrive one DataLoader batch per batch of rows (sandyresearch/parcae#8)")
    train = k.take("data_config.train_data", None)
    if isinstance(train, list) and len(train) > 1:
        raise k.refuse("data_config.train_data", f"{len(train)} entries", "Parcae raises 'Not exported' for "
                       "several training data entries")
    world = k.int("world_batch_size", 2048, 1)
    assert world is not None
    steps = k.int("max_steps", None, 1)
    tokens = k.int("max_tokens", 0, 0)
    horizon = None
    if steps is not None:
        horizon = Budget("rows", steps * world)
        k.use("max_steps", steps, f"horizon {steps * world:,} rows (max_steps * world_batch_size, one "
              "device)")
    elif tokens:
        horizon = Budget("rows", tokens // block)
        k.use("max_tokens", tokens, f"horizon {tokens // block:,} rows (max_tokens / block_size)")
    k.use("world_batch_size", world, f"{world} rows per optimizer step on one device")
    for flag in ("add_bos", "add_eos"):
        k.ignore(flag, "the BOS/EOS tokens are counted in the --data lengths")
    used, ignored = k.finish(_NOT_DATA)
    return MappedConfig("parcae", source, "parcae-bestfit", block, block + 1, {"batch_size": micro}, horizon,
                        world, used=used, ignored=ignored)
