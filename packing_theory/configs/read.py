"""Read a framework's configuration file: detect the framework, map the file, give commands their settings.

:func:`read_config` is the one entry point: it loads the file
(:func:`~packing_theory.configs._base.load_document`), takes the framework
from a ``framework:`` key, from the caller, or from the file's distinctive
keys (:func:`detect_framework`), and maps it with that framework's reader.
:func:`config_settings` turns the result into what ``audit``, ``compare``,
``replay`` and ``check`` take (packer, row width, options, horizon, mixture)
with the mapping text they print.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..audit.declared import DeclaredMixture
from ..engine.horizon import Budget
from ..errors import InputError
from ._base import FRAMEWORKS, MappedConfig, load_document
from .hf import read_axolotl, read_trl
from .loaders import read_autoresearch, read_nanochat, read_parcae
from .megatron import read_megatron
from .recipes import read_foundry, read_torchtune

__all__ = ["READERS", "ConfigSettings", "config_settings", "detect_framework", "read_config"]

READERS: dict[str, Callable[[Mapping[str, Any], str], MappedConfig]] = {
    "axolotl": read_axolotl, "trl": read_trl, "foundry": read_foundry, "torchtune": read_torchtune,
    "megatron": read_megatron, "nanochat": read_nanochat, "autoresearch": read_autoresearch,
    "parcae": read_parcae,
}
"""The reader of each framework (:data:`~packing_theory.configs._base.FRAMEWORKS`)."""

_SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("megatron", ("_argv",)),
    ("axolotl", ("sample_packing", "sequence_len", "base_model", "pad_to_sequence_len")),
    ("trl", ("packing_strategy", "max_length", "completion_only_loss", "dataset_text_field", "packing")),
    ("foundry", ("train_loader", "max_duration", "global_train_batch_size")),
    ("torchtune", ("dataset._component_", "tokenizer._component_", "dataset.packed")),
    ("parcae", ("pack_sequences", "pack_buffer_size", "loader_block_size", "world_batch_size")),
    ("nanochat", ("device_batch_size", "total_batch_size", "num_iterations")),
    ("megatron", ("seq_length", "data_path", "train_iters", "global_batch_size", "train_samples")),
)


def _has(doc: Mapping[str, Any], key: str) -> bool:
    node: Any = doc
    for part in key.split("."):
        if isinstance(node, list) and len(node) == 1:
            node = node[0]
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def detect_framework(doc: Mapping[str, Any]) -> tuple[str, str]:
    """``(framework, why)`` from a ``framework:`` key or the most distinctive keys.

    >>> detect_framework({"sample_packing": True, "sequence_len": 8})
    ('axolotl', 'its keys sample_packing, sequence_len')
    >>> detect_framework({"framework": "trl"})
    ('trl', 'framework: trl')

    Raises:
        InputError: an unknown ``framework:`` value, or no framework's keys (or two frameworks' equally).
    """
    given = doc.get("framework")
    if given is not None:
        if given not in FRAMEWORKS:
            raise InputError(f"framework must be one of {', '.join(FRAMEWORKS)}; got {given!r}")
        return str(given), f"framework: {given}"
    scores = []
    for fw, keys in _SIGNS:
        hits = [k for k in keys if _has(doc, k)]
        if hits:
            scores.append((len(hits), fw, hits))
    if not scores:
        raise InputError(f"cannot tell the framework from the keys {sorted(doc)[:12]}: add framework: "
                         f"({', '.join(FRAMEWORKS)}) or name it")
    scores.sort(key=lambda s: -s[0])
    best = scores[0]
    tied = sorted({s[1] for s in scores if s[0] == best[0]})
    if len(tied) > 1:
        raise InputError(f"the keys fit {' and '.join(tied)} equally: add framework: to the file or name it")
    return best[1], f"its keys {', '.join(best[2])}"


def read_config(path: str | os.PathLike[str], framework: str | None = None) -> MappedConfig:
    """The file mapped onto a registered packer (see the module doc).

    Raises:
        FileNotFoundError: no such file.
        InputError: an unknown framework, a file that names another framework than ``framework``,
            a key or key combination the replay does not model (naming the key), or a bad value.
    """
    name = os.fspath(path)
    doc = load_document(name)
    if framework is not None:
        if framework not in FRAMEWORKS:
            raise InputError(f"framework must be one of {', '.join(FRAMEWORKS)}; got {framework!r}")
        declared = doc.get("framework")
        if declared is not None and declared != framework:
            raise InputError(f"{name} says framework: {declared}, but {framework!r} was asked")
        fw = framework
    else:
        fw = detect_framework(doc)[0]
    return READERS[fw](doc, name)


@dataclass(frozen=True)
class ConfigSettings:
    """What ``audit``, ``compare``, ``replay`` and ``check`` take from a framework config.

    Attributes:
        policies: the packer names (one per config).
        capacity: the row width ``R`` (``--capacity``).
        seq_length: the framework's sequence length (``--seq-length``).
        peer_options: the knobs as ``--peer-option KEY=VALUE`` strings, in the registry's spelling.
        options: the same knobs as values (for the library: ``build_packer(name, capacity, **options)``).
        horizon: the horizon, when the file implies one (``--rows`` / ``--tokens``).
        mixture: the declared mixture (``--mixture``), if any.
        pre_truncate: documents are cut to this length before packing (torchtune).
        rank_stride: rank 0 reads every ``rank_stride``-th document (nanochat with several ranks).
        train_split: Megatron's ``--split`` for one dataset: only its training split is replayed.
        text: ``"mapping used: ...; ignored keys: ..."`` to print.
        mapped: the full :class:`~packing_theory.configs.MappedConfig`.
    """

    policies: tuple[str, ...]
    capacity: int
    seq_length: int
    peer_options: tuple[str, ...]
    options: dict[str, Any]
    horizon: Budget | None
    mixture: DeclaredMixture | None
    pre_truncate: int | None
    rank_stride: int
    train_split: str | None
    text: str
    mapped: MappedConfig


def _spell(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def config_settings(path: str | os.PathLike[str], framework: str | None = None) -> ConfigSettings:
    """Read ``path`` and return the settings the commands need, with the mapping text to print.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "sft.json")
    >>> _ = open(p, "w").write('{"packing": true, "max_length": 512, "max_steps": 10}')
    >>> s = config_settings(p)
    >>> s.policies, s.capacity, s.horizon, s.peer_options
    (('trl-bfd',), 512, Budget(unit='rows', value=80), ())

    Raises:
        as :func:`read_config`.
    """
    m = read_config(path, framework)
    return ConfigSettings(
        policies=(m.packer,), capacity=m.capacity, seq_length=m.seq_length,
        peer_options=tuple(f"{k}={_spell(v)}" for k, v in m.options.items()), options=dict(m.options),
        horizon=m.horizon, mixture=m.mixture, pre_truncate=m.pre_truncate, rank_stride=m.rank_stride,
        train_split=m.train_split, text=m.mapping_text(), mapped=m)
