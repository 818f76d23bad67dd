"""The declared mixture: per data source its sampling frequency α (seed 004), or a token target (seed 002).

Seed 004 defines a pretraining mixture as components ``(Q_s)`` with weights
``α_s``, a *sampling frequency* that need not equal the bytes stored per
source; seed 002 builds its mix to an equal 75,144,263-token target per
source. A declaration file says either, as JSON or YAML (YAML needs PyYAML)::

    {"alpha": {"web": 0.5, "code": 0.3, "books": 0.2}}
    {"tokens": {"web": 75144263, "code": 75144263}}      # α_s = target_s / Σ targets
    {"name": "mix-v1", "alpha": {...}}                   # an optional name for the report

α must be non-negative and sum to 1 (within 1e-6); a token target is a
non-negative integer and the targets must not all be zero.

>>> m = DeclaredMixture.from_document({"tokens": {"a": 300, "b": 100}})
>>> m.alpha, m.kind
({'a': 0.75, 'b': 0.25}, 'tokens')
>>> DeclaredMixture.from_document({"alpha": {"a": 0.5, "b": 0.6}})
Traceback (most recent call last):
packing_theory.InputError: mixture alpha sums to 1.1, not 1 (within 1e-06)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import is_int
from ..corpus.declaration import read_declaration
from ..errors import InputError

__all__ = ["ALPHA_TOLERANCE", "DeclaredMixture", "read_mixture"]

ALPHA_TOLERANCE = 1e-6
"""How far from 1 the declared α may sum."""


@dataclass(frozen=True)
class DeclaredMixture:
    """Per source its declared share α (summing to 1); ``targets`` when declared as token targets."""

    alpha: dict[str, float]
    kind: str  # "alpha" or "tokens"
    targets: dict[str, int] | None = None
    name: str = ""

    @classmethod
    def from_document(cls, doc: object, *, origin: str = "mixture") -> DeclaredMixture:
        """Validate a parsed declaration (see the module docstring).

        Raises:
            InputError: not an object, neither or both of ``alpha`` / ``tokens``, a bad value (naming
                the source), α not summing to 1, all targets zero, an unknown key.
        """
        if not isinstance(doc, Mapping):
            raise InputError(f"{origin} must be an object with 'alpha' or 'tokens', got {type(doc).__name__}")
        unknown = sorted(set(doc) - {"alpha", "tokens", "name"})
        if unknown:
            raise InputError(
                f"{origin} has unknown key(s) {unknown}; expected 'alpha' or 'tokens' (and 'name')"
            )
        if ("alpha" in doc) == ("tokens" in doc):
            raise InputError(f"{origin} must give exactly one of 'alpha' (shares) or 'tokens' (targets)")
        name = str(doc.get("name", ""))
        kind = "alpha" if "alpha" in doc else "tokens"
        values = doc[kind]
        if not isinstance(values, Mapping) or not values:
            raise InputError(f"{origin} {kind} must be a non-empty object source -> value")
        if kind == "tokens":
            targets: dict[str, int] = {}
            for source, v in values.items():
                if not is_int(v) or v < 0:
                    raise InputError(f"{origin} tokens[{source!r}] must be an integer >= 0, got {v!r}")
                targets[str(source)] = int(v)
            total = sum(targets.values())
            if total == 0:
                raise InputError(f"{origin} tokens are all zero: no source has a target")
            return cls({s: t / total for s, t in targets.items()}, kind, targets, name)
        alpha: dict[str, float] = {}
        for source, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"{origin} alpha[{source!r}] must be a number >= 0, got {v!r}")
            alpha[str(source)] = float(v)
        total_alpha = sum(alpha.values())
        if abs(total_alpha - 1.0) > ALPHA_TOLERANCE:
            raise InputError(f"{origin} alpha sums to {total_alpha:.6g}, not 1 (within {ALPHA_TOLERANCE:g})")
        return cls(alpha, kind, None, name)

    @property
    def sources(self) -> tuple[str, ...]:
        """The declared sources, sorted."""
        return tuple(sorted(self.alpha))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the declaration as read, α normalised)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "alpha": dict(sorted(self.alpha.items())),
            "targets": None if self.targets is None else dict(sorted(self.targets.items())),
        }


def read_mixture(path: str | os.PathLike[str]) -> DeclaredMixture:
    """Read a declared mixture file (JSON or YAML; see the module docstring)."""
    return DeclaredMixture.from_document(
        read_declaration(path, "mixture"), origin=f"mixture {os.fspath(path)!r}"
    )
