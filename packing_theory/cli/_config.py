"""``--config FILE``: a framework's training config as the options of ``audit``, ``compare``, ``replay``,
``check``, ``explain``.

:func:`apply_config` reads the config with
:func:`packing_theory.configs.config_settings` (``--framework`` where its
framework cannot be detected) and sets the options it maps to, as if they had
been typed: ``--policy`` (the config's packer), ``--seq-length`` (the
framework's sequence length; the packer's row width follows from it),
the streaming knobs (``--min-buffer``, ``--refill``, ``--passes``,
``--seed``, ``--max-wait``, ``--drain``), every framework knob as
``--peer-option PACKER:KEY=VALUE``, and the horizon (``--rows`` / ``--tokens``;
a config that implies none runs to the packer's natural end, the trainer
reading every row: ``--natural-end`` where the command's default is
another). An option also given on the command line stays only if it
agrees with the config (``--capacity`` with the config's row width,
``--policy`` naming the config's packer, ...); a conflict is refused naming
both, before anything is printed or read. Then the mapping (every key used and
what it became, every key ignored and why) and the options it stands for are
printed on standard error as one block.

What no option says is applied or refused here: a framework that truncates
every document before packing (torchtune) has the corpus truncated the same
way (:func:`truncate_corpus`, the corpus's label says how many); Megatron's
``--split`` for one dataset keeps only the training split's documents, the others
removed by a stage of the corpus's funnel (:func:`split_corpus`: a report names
them *removed by* ``--split ...``, not *never started*); a Megatron
blend (several datasets, read from the config) and a rank that reads every
``W``-th document (nanochat's ``world_size``) are refused, pointing at
``packing-theory doctor``, which replays them.

Nothing heavy is imported at module level.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..configs import ConfigSettings
    from ..orchestration.corpus import Corpus

__all__ = ["CONFIG_COMMANDS", "apply_config", "split_corpus", "truncate_corpus"]

CONFIG_COMMANDS = ("audit", "compare", "replay", "check", "explain")
"""The commands that take ``--config`` as options (``doctor`` takes it as its subject)."""

_STREAMING_FLAGS = {"min_buffer": "--min-buffer", "refill": "--refill", "passes": "--passes",
                    "seed": "--seed", "max_wait": "--max-wait"}
_PEER_FLAGS = {"window": "--window", "epochs": "--epochs", "framework_version": "--framework-version",
               "seed": "--seed"}
_HORIZONS = (("rows", "--rows"), ("targets", "--targets"), ("tokens", "--tokens"),
             ("natural_end", "--natural-end"), ("common_horizon", "--common-horizon"))


def _where(cs: ConfigSettings, *needles: str) -> str:
    """``FILE's KEY: VALUE (what it became)`` of the first key used that is one of ``needles`` or whose
    result mentions one."""
    import json

    for use in cs.mapped.used:
        if any(n in use.became or use.key.rsplit(".", 1)[-1] == n for n in needles):
            value = json.dumps(use.to_dict()["value"])
            value = value if len(value) <= 60 else value[:57] + "..."
            return f"{cs.mapped.source}'s {use.key}: {value} ({use.became})"
    return f"{cs.mapped.source} ({cs.mapped.framework} -> {cs.mapped.packer})"


def _conflict(flag: str, given: Any, cs: ConfigSettings, *needles: str) -> InputError:
    shown = flag if given is True else f"{flag} {_spell(given)}"
    return InputError(f"{shown} conflicts with --config {_where(cs, *needles)}: drop {flag} or change the "
                      "config")


def _spell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _refuse_unmodelled(cs: ConfigSettings) -> None:
    m = cs.mapped
    if m.blend is not None:
        raise InputError(f"--config {_where(cs, 'blend')}: a Megatron blend draws its samples from "
                         f"{len(m.blend.prefixes)} datasets that the config names, and this command reads "
                         "one corpus; `packing-theory doctor --config FILE` replays the blend from its "
                         "datasets")
    if cs.rank_stride > 1:
        raise InputError(f"--config {_where(cs, 'rank 0 reads')}: the trainer's rank 0 reads one document "
                         f"in {cs.rank_stride}, and this command replays the whole corpus as one stream; "
                         "`packing-theory doctor --config FILE` replays rank 0's documents")


def _packers(args: argparse.Namespace, cs: ConfigSettings) -> None:
    (packer,) = cs.policies
    given = list(getattr(args, "policy", None) or [])
    if given and packer not in given:
        raise _conflict("--policy", given, cs, packer)
    if not given:
        args.policy = [packer]


def _width(args: argparse.Namespace, cs: ConfigSettings, set_it: list[str]) -> None:
    if args.capacity is not None:
        if args.capacity != cs.capacity:
            raise _conflict("--capacity", args.capacity, cs, "R =")
    elif args.seq_length is not None:
        if args.seq_length != cs.seq_length:
            raise _conflict("--seq-length", args.seq_length, cs, "R =")
    else:
        args.seq_length = cs.seq_length
        set_it.append(f"--seq-length {cs.seq_length}")


def _streaming_knobs(args: argparse.Namespace, cs: ConfigSettings, set_it: list[str]) -> None:
    for key, value in cs.options.items():
        if key == "rows":  # the horizon
            continue
        if key == "exhausted":
            if value == "drain":
                args.drain = True
                set_it.append("--drain")
            continue
        flag = _STREAMING_FLAGS.get(key)
        if flag is None:
            raise InputError(f"--config {_where(cs, key)}: no option of this command sets the knob {key!r}")
        attr = key
        given = getattr(args, attr, None)
        if given is not None and _normal(given) != _normal(value):
            raise _conflict(flag, given, cs, f"knob {key}", key)
        setattr(args, attr, value)
        set_it.append(f"{flag} {_spell(value)}")


def _normal(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(value) if len(value) != 1 else value[0]
    return value


def _peer_knobs(args: argparse.Namespace, cs: ConfigSettings, set_it: list[str]) -> None:
    from ..registry import entry
    from ._types import PeerOption

    (packer,) = cs.policies
    e = entry(packer)
    for text in cs.peer_options:
        key, _, spelled = text.partition("=")
        value = cs.options[key]
        knob = e.knob(key)
        if knob.parse(spelled) != value:
            raise InputError(f"--config {_where(cs, key)}: the knob {key} = {value!r} has no command-line "
                             "spelling")
        flag = _PEER_FLAGS.get(key)
        given = getattr(args, key, None) if flag is not None else None
        if given is not None and knob.parse(str(given)) != value:
            raise _conflict(flag or key, given, cs, f"knob {key}", key)
        for item in getattr(args, "peer_option", None) or ():
            if item.key == key and item.policy in (None, packer) and knob.parse(item.value) != value:
                shown = f"{item.policy}:{key}" if item.policy else key
                raise _conflict("--peer-option", f"{shown}={item.value}", cs, f"knob {key}", key)
        args.peer_option = [*(getattr(args, "peer_option", None) or []), PeerOption(packer, key, spelled)]
        set_it.append(f"--peer-option {packer}:{key}={spelled}")


def _horizon(args: argparse.Namespace, command: str, cs: ConfigSettings, set_it: list[str]) -> None:
    given = [(attr, flag) for attr, flag in _HORIZONS if getattr(args, attr, None) not in (None, False)]
    if cs.horizon is None:
        if not given and command in ("audit", "compare", "explain"):  # replay and check end there anyway
            args.natural_end = True
            set_it.append("--natural-end")
        return
    unit, value = cs.horizon.unit, cs.horizon.value
    for attr, flag in given:
        if attr != unit or getattr(args, attr) != value:
            raise _conflict(flag, getattr(args, attr), cs, "horizon")
    setattr(args, unit, value)
    set_it.append(f"--{unit} {value}")


def apply_config(args: argparse.Namespace, command: str) -> None:
    """Set the options ``--config`` maps to (see the module doc); nothing without ``--config``.

    Raises:
        InputError: ``--framework`` without ``--config``; the config refused by its reader (naming the
            key); an option that conflicts with the config (naming both); a blend or a rank stride.
    """
    if getattr(args, "config", None) is None:
        if getattr(args, "framework", None) is not None:
            raise InputError(f"--framework {args.framework} names the framework of --config; give --config "
                             "FILE")
        return
    from ..configs import config_settings
    from ..registry import entry

    if getattr(args, "demo", False):
        raise InputError("--config replays your framework's settings on your corpus; --demo brings its own "
                         "corpus and settings: drop one")
    cs = config_settings(args.config, args.framework)
    _refuse_unmodelled(cs)
    (packer,) = cs.policies
    peer = entry(packer).kind == "peer"
    if cs.mixture is not None and getattr(args, "mixture", None) is not None:
        raise _conflict("--mixture", args.mixture, cs, "mixture", "shares")
    set_it = [f"--policy {packer}"]
    _packers(args, cs)
    _width(args, cs, set_it)
    if peer:
        _peer_knobs(args, cs, set_it)
    else:
        _streaming_knobs(args, cs, set_it)
    if not (command == "check" and peer):  # check does not replay a framework's packer
        _horizon(args, command, cs, set_it)
    also = []
    if cs.mixture is not None:
        args.mixture = cs.mixture
        also.append("the config's declared mixture")
    args.pre_truncate = cs.pre_truncate
    if cs.pre_truncate is not None:
        also.append(f"every document truncated to {cs.pre_truncate:,} tokens first")
    args.train_split = cs.train_split
    if cs.train_split is not None:
        also.append(f"only the documents of --split {cs.train_split}'s training split")
    print(f"{command}: {cs.text}\n{command}: the same as {' '.join(set_it)}{''.join('; ' + a for a in also)}",
          file=sys.stderr)


def truncate_corpus(corpus: Corpus, limit: int | None) -> Corpus:
    """``corpus`` with every document cut to ``limit`` tokens (the framework's rule before packing).

    The raw index, names, sources, funnel and mixture are kept; the label says how many documents were cut.
    ``limit`` ``None``: ``corpus`` itself.
    """
    if limit is None:
        return corpus
    from dataclasses import replace

    import numpy as np

    from ..lengths import exact_sum

    raw = corpus.raw_lengths
    over = raw > limit
    cut = int(np.count_nonzero(over))
    if not cut:
        return corpus
    tokens = exact_sum(raw[over] - limit)
    label = (f"{corpus.label}; {cut:,} document(s) truncated to {limit:,} tokens before packing, as the "
             f"config's framework does ({tokens:,} tokens cut)")
    return replace(corpus, raw_lengths=np.minimum(raw, limit), label=label,
                   options={**corpus.options, "pre_truncate": limit})


def split_corpus(corpus: Corpus, split: str | None) -> Corpus:
    """``corpus`` with the documents outside Megatron's ``--split`` training split removed, by a stage after
    its funnel (:func:`~packing_theory.configs.megatron.train_split_funnel`); the label says how many.
    ``split`` ``None``, or every document in the training split: ``corpus`` itself.

    Raises:
        InputError: the split removes every document the funnel kept.
    """
    if split is None:
        return corpus
    from dataclasses import replace

    from ..configs.megatron import split_stage_name, train_split_funnel

    funnel = train_split_funnel(split, corpus.raw_lengths, corpus.funnel)
    if funnel is None or funnel is corpus.funnel:
        return corpus
    out = funnel.stages[-1]
    if not funnel.keep.any():
        raise InputError(f"--config --split {split}: its training split holds none of the "
                         f"{corpus.lengths.size:,} documents replayed")
    label = (f"{corpus.label}; {out.removed_documents:,} document(s) ({out.removed_tokens:,} tokens) outside "
             f"the training split of --split {split}, as Megatron's builder splits them")
    return replace(corpus, funnel=funnel, label=label,
                   options={**corpus.options, "train_split": split, "split_stage": split_stage_name(split)})
