"""The declared mixture: per source its sampling frequency α (seed 004), its token target (seed 002), or both.

Seed 004 defines a pretraining mixture as components ``(Q_s)`` with weights
``α_s``, a *sampling frequency of documents* ("first sample a source ``s``
with probability ``α_s``, then sample a document from ``Q_s``") that need not
equal the bytes stored per source; seed 002 builds its mix to a *token
target* per source (75,144,263 tokens each). They are two different
declarations, and the audit sets each against its own reading: α against
the share of documents started, token targets against the share of trained
tokens (:func:`~packing_theory.audit.sources.realised_mixture`). A
declaration file gives either or both, as JSON or YAML (YAML needs PyYAML)::

    {"alpha": {"web": 0.5, "code": 0.3, "books": 0.2}}             # documents: sampling frequency
    {"tokens": {"web": 75144263, "code": 75144263}}                # trained tokens: targets
    {"name": "mix-v1", "alpha": {...}, "tokens": {...}}            # both (same sources), and a name

α must be non-negative and sum to 1 (within 1e-6); a token target is a
non-negative integer and the targets must not all be zero; with both, they
name the same sources. Every error names the key.

>>> m = DeclaredMixture.from_document({"tokens": {"a": 300, "b": 100}})
>>> m.alpha, m.target_shares, m.kind
(None, {'a': 0.75, 'b': 0.25}, 'tokens')
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

_KEYS = ("alpha", "tokens", "name")


@dataclass(frozen=True)
class DeclaredMixture:
    """A declared mixture: α per source (summing to 1), token targets per source, or both.

    Attributes:
        alpha: the sampling frequency of documents per source (seed 004), or ``None``.
        targets: the token target per source (seed 002), or ``None``.
        name: an optional name for the report.
    """

    alpha: dict[str, float] | None
    targets: dict[str, int] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.alpha is None and self.targets is None:
            raise InputError("a declared mixture needs 'alpha' (sampling frequencies) or 'tokens' (targets)")

    @classmethod
    def from_document(cls, doc: object, *, origin: str = "mixture") -> DeclaredMixture:
        """Validate a parsed declaration (see the module docstring).

        Raises:
            InputError: not an object, neither ``alpha`` nor ``tokens``, a bad value (naming the key
                and the source), α not summing to 1, all targets zero, ``alpha`` and ``tokens`` naming
                different sources, an unknown key.
        """
        if not isinstance(doc, Mapping):
            raise InputError(f"{origin} must be an object with 'alpha' or 'tokens', got {type(doc).__name__}")
        unknown = sorted(str(k) for k in set(doc) - set(_KEYS))
        if unknown:
            raise InputError(
                f"{origin} has unknown key(s) {unknown}; expected 'alpha' and/or 'tokens' (and 'name')"
            )
        if "alpha" not in doc and "tokens" not in doc:
            raise InputError(f"{origin} must give 'alpha' (sampling frequencies of documents, summing to 1), "
                             "'tokens' (token targets), or both")
        name = doc.get("name", "")
        if not isinstance(name, str):
            raise InputError(f"{origin} name must be a string, got {name!r}")
        alpha = _alpha(doc["alpha"], origin) if "alpha" in doc else None
        targets = _targets(doc["tokens"], origin) if "tokens" in doc else None
        if alpha is not None and targets is not None and set(alpha) != set(targets):
            only_a, only_t = sorted(set(alpha) - set(targets)), sorted(set(targets) - set(alpha))
            side = (f"{only_a} in 'alpha' but not in 'tokens'" if only_a
                    else f"{only_t} in 'tokens' but not in 'alpha'")
            raise InputError(f"{origin}: source(s) {side}; 'alpha' and 'tokens' must name the same sources "
                             "(give 0 to a source with none)")
        return cls(alpha, targets, name)

    @property
    def kind(self) -> str:
        """``"alpha"``, ``"tokens"`` or ``"alpha+tokens"``: what was declared."""
        return "+".join(k for k, v in (("alpha", self.alpha), ("tokens", self.targets)) if v is not None)

    @property
    def target_shares(self) -> dict[str, float] | None:
        """Each source's token target over the sum of the targets (``None`` without targets)."""
        if self.targets is None:
            return None
        total = sum(self.targets.values())
        return {s: t / total for s, t in self.targets.items()}

    @property
    def sources(self) -> tuple[str, ...]:
        """The declared sources, sorted."""
        return tuple(sorted({*(self.alpha or {}), *(self.targets or {})}))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the declaration as read, and the targets' shares)."""
        shares = self.target_shares
        return {
            "name": self.name,
            "kind": self.kind,
            "alpha": None if self.alpha is None else dict(sorted(self.alpha.items())),
            "targets": None if self.targets is None else dict(sorted(self.targets.items())),
            "target_shares": None if shares is None else dict(sorted(shares.items())),
        }


def _entries(values: object, key: str, origin: str) -> dict[str, Any]:
    """The ``source -> value`` entries of ``key``, names as strings (a YAML key ``7`` is source ``'7'``)."""
    if not isinstance(values, Mapping) or not values:
        raise InputError(f"{origin} {key} must be a non-empty object source -> value, got {values!r}"[:300])
    out: dict[str, Any] = {}
    for source, v in values.items():
        if isinstance(source, bool) or not isinstance(source, (str, int)) or not str(source).strip():
            raise InputError(f"{origin} {key} has a source name {source!r}: give a non-empty string")
        if str(source) in out:
            raise InputError(f"{origin} {key} names source {str(source)!r} twice")
        out[str(source)] = v
    return out


def _alpha(values: object, origin: str) -> dict[str, float]:
    alpha: dict[str, float] = {}
    for source, v in _entries(values, "alpha", origin).items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise InputError(f"{origin} alpha[{source!r}] must be a number >= 0, got {v!r}")
        alpha[source] = float(v)
    total = sum(alpha.values())
    if abs(total - 1.0) > ALPHA_TOLERANCE:
        raise InputError(f"{origin} alpha sums to {total:.6g}, not 1 (within {ALPHA_TOLERANCE:g})")
    return alpha


def _targets(values: object, origin: str) -> dict[str, int]:
    targets: dict[str, int] = {}
    for source, v in _entries(values, "tokens", origin).items():
        if not is_int(v) or v < 0:
            raise InputError(f"{origin} tokens[{source!r}] must be an integer >= 0, got {v!r}")
        targets[source] = int(v)
    if sum(targets.values()) == 0:
        raise InputError(f"{origin} tokens are all zero: no source has a target")
    return targets


def read_mixture(path: str | os.PathLike[str]) -> DeclaredMixture:
    """Read a declared mixture file (JSON or YAML; see the module docstring)."""
    return DeclaredMixture.from_document(
        read_declaration(path, "mixture"), origin=f"mixture {os.fspath(path)!r}"
    )
