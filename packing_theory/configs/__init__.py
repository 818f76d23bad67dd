"""Framework configuration files in: Axolotl, TRL, LLM Foundry, torchtune, Megatron, nanochat, Parcae.

A user holds their framework's own configuration; :func:`read_config` maps it
onto the registered packer that replays that framework
(:mod:`packing_theory.registry`), with every key it used and what it became,
and every key it ignored and why (:class:`MappedConfig`). A key combination
the replay does not model is refused with an ``InputError`` naming the key.
:func:`config_settings` gives ``audit``, ``compare``, ``replay`` and ``check``
the settings they need; :func:`doctor` replays a config on a corpus and ranks
what it finds (``packing-theory doctor``).

=============  ====================================================================
module         job
=============  ====================================================================
``_base``      :class:`MappedConfig`, the key tracker, the file loader
``hf``         Axolotl and TRL
``recipes``    LLM Foundry and torchtune
``megatron``   Megatron-LM arguments
``blend``      Megatron's data blend (``BlendedDataset``'s index, replayed)
``loaders``    nanochat, autoresearch, Parcae
``read``       framework detection, :func:`read_config`, :func:`config_settings`
``trainable``  a consumer: the trainable tokens each document keeps in trained rows
``doctor``     :func:`doctor`: the findings, ranked (``blend_doctor``: a blend's realised shares)
``report``     :class:`DoctorReport`, :class:`DoctorFinding`, :class:`Thresholds`
=============  ====================================================================

Imports: the registry, peers, corpus, engine, audit and invariant layers; never the layers above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from ._base import FRAMEWORKS, KeyUse, MappedConfig
    from .blend import MegatronBlend, blending_indices
    from .doctor import doctor
    from .read import ConfigSettings, config_settings, detect_framework, read_config
    from .report import DoctorFinding, DoctorReport, Thresholds

__all__ = [
    "FRAMEWORKS",
    "ConfigSettings",
    "DoctorFinding",
    "DoctorReport",
    "KeyUse",
    "MappedConfig",
    "MegatronBlend",
    "Thresholds",
    "blending_indices",
    "config_settings",
    "detect_framework",
    "doctor",
    "read_config",
]

lazy_package(__name__, {
    "._base": ("FRAMEWORKS", "KeyUse", "MappedConfig"),
    ".blend": ("MegatronBlend", "blending_indices"),
    ".doctor": ("doctor",),
    ".read": ("ConfigSettings", "config_settings", "detect_framework", "read_config"),
    ".report": ("DoctorFinding", "DoctorReport", "Thresholds"),
})
