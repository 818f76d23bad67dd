"""Contrasts and declared contrast families: which comparisons a Bonferroni level covers (seed 000 §5.5).

Job: name one contrast (:class:`Contrast`), declare a *family* of them
explicitly — pairs of conditions, each an intervention and the control it is
compared with, times the strata of the declaration (:func:`declare_family`)
— and keep, with its reason, every declared stratum or contrast that cannot
be computed (:class:`Dropped`). The Bonferroni level follows from the number
of *declared* contrasts, so dropping one never silently changes it.
Imports: this package's population and windows modules.

Seed 000's confirmation family (§5.5) is eight contrasts: the two
interventions at each of two seeds, each against its *same-seed* baseline,
in the strata 4097–8192 and 8193–16384, each a tail-minus-prefix
interaction; at family level 0.95 its intervals use the quantiles
``0.05 / 16`` and ``1 − 0.05 / 16``, i.e. 99.375 % per contrast:

>>> pairs = [("random_crop_s43", "baseline_s43"), ("segmented_s43", "baseline_s43"),
...          ("random_crop_s44", "baseline_s44"), ("segmented_s44", "baseline_s44")]
>>> fam = family_of_pairs(pairs)
>>> fam.size, bonferroni_quantiles(0.95, fam.size)[2]
(8, 0.99375)
>>> fam.contrasts[0].name
'random_crop_s43 − baseline_s43, 4097–8192, tail − beginning'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError
from .population import Population
from .windows import KINDS

__all__ = [
    "SEED_000_FAMILY_STRATA",
    "Contrast",
    "ContrastFamily",
    "Dropped",
    "bonferroni_quantiles",
    "contrast_value",
    "declare_family",
    "family_from_dict",
    "family_of_pairs",
    "interaction_family",
    "parse_pair",
    "read_family",
    "read_family_document",
]

SEED_000_FAMILY_STRATA: tuple[str, ...] = ("4097–8192", "8193–16384")
"""The strata of seed 000 §5.5's declared confirmation family (tail minus prefix per intervention)."""


def bonferroni_quantiles(level: float, family_size: int) -> tuple[float, float, float]:
    """Lower and upper quantile levels and the per-contrast coverage for a family of ``family_size``.

    >>> bonferroni_quantiles(0.95, 8)
    (0.003125, 0.996875, 0.99375)
    >>> bonferroni_quantiles(0.95, 1)
    (0.025, 0.975, 0.95)
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"level must be a number in (0, 1), got {level!r}")
    m = check_int("family_size", family_size, 1)
    alpha = (1.0 - float(level)) / m
    # round away binary noise so 0.95 / 8 reports as 0.99375 exactly
    lo = round(alpha / 2, 15)
    return lo, round(1.0 - lo, 15), round(1.0 - alpha, 15)


@dataclass(frozen=True, slots=True)
class Contrast:
    """One contrast: ``model`` minus ``baseline`` BPB on ``kind`` windows of one stratum.

    With ``minus`` set it is an *interaction*: the ``kind`` delta minus the
    ``minus`` delta (seed 000's "tail minus prefix": ``kind="tail",
    minus="beginning"``; the natural-context assay's ``kind="natural-tail",
    minus="prefix-region"``). ``baseline=None`` means the comparison's baseline.

    >>> Contrast("seg", "4097–8192", "tail", "beginning").name
    'seg − baseline, 4097–8192, tail − beginning'
    """

    model: str
    stratum: str
    kind: str = "tail"
    minus: str | None = None
    baseline: str | None = None

    def __post_init__(self) -> None:
        for name, value in (("kind", self.kind), ("minus", self.minus)):
            if value is not None and value not in KINDS:
                raise InputError(f"{name} must be a window kind among {', '.join(KINDS)}; got {value!r}")
        if "census" in (self.kind, self.minus):
            raise InputError("census results are reported without sampling intervals; use census_summary")
        if self.minus == self.kind:
            raise InputError(f"an interaction needs two different kinds, got {self.kind!r} twice")

    @property
    def name(self) -> str:
        """A readable name."""
        what = self.kind if self.minus is None else f"{self.kind} − {self.minus}"
        return f"{self.model} − {self.baseline or 'baseline'}, {self.stratum}, {what}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"model": self.model, "baseline": self.baseline, "stratum": self.stratum, "kind": self.kind,
                "minus": self.minus, "name": self.name}


_V = TypeVar("_V", float, npt.NDArray[np.float64])


def contrast_value(bpb: Callable[[str, str], _V], model: str, baseline: str, kind: str,
                   minus: str | None = None) -> tuple[_V, _V, _V]:
    """The arithmetic of every contrast: ``(estimate, first part, second part)`` from ``bpb(model, kind)``.

    A delta is ``bpb(model, kind) − bpb(baseline, kind)``, with the two BPBs
    as its parts; an interaction is the ``kind`` delta minus the ``minus``
    delta, with the two deltas as its parts. ``bpb`` returns floats (a table of
    published scores) or arrays (bootstrap replicates): the bootstrap and the
    reproduction of published figures run this same function.

    >>> table = {("seg", "tail"): 0.9, ("base", "tail"): 1.0, ("seg", "beginning"): 1.2,
    ...          ("base", "beginning"): 1.1}
    >>> [round(v, 6) for v in contrast_value(lambda m, k: table[m, k], "seg", "base", "tail", "beginning")]
    [-0.2, -0.1, 0.1]
    """
    d1 = bpb(model, kind) - bpb(baseline, kind)
    if minus is None:
        return d1, bpb(model, kind), bpb(baseline, kind)
    d2 = bpb(model, minus) - bpb(baseline, minus)
    return d1 - d2, d1, d2


def interaction_family(models: Sequence[str], strata: Sequence[str], kind: str = "tail",
                       minus: str = "beginning", baseline: str | None = None) -> tuple[Contrast, ...]:
    """One ``kind − minus`` interaction per model and stratum, all against one baseline.

    >>> len(interaction_family(["a", "b"], ["4097–8192", "8193–16384"]))
    4
    """
    return tuple(Contrast(m, s, kind, minus, baseline) for m in models for s in strata)


@dataclass(frozen=True, slots=True)
class Dropped:
    """A declared stratum or contrast that could not be computed, and why.

    Attributes:
        what: ``"stratum"`` or ``"contrast"``.
        name: the stratum label or the contrast's :attr:`Contrast.name`.
        reason: one sentence.
    """

    what: str
    name: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"what": self.what, "name": self.name, "reason": self.reason}


def parse_pair(text: str) -> tuple[str, str]:
    """``"A:B"`` (``A`` minus ``B``: an intervention and its control) as ``(A, B)``.

    >>> parse_pair("segmented_s43:baseline_s43")
    ('segmented_s43', 'baseline_s43')
    >>> parse_pair("a")
    Traceback (most recent call last):
    packing_theory.InputError: --contrast must be MODEL:BASELINE (model minus baseline), got 'a'
    """
    a, sep, b = str(text).partition(":")
    if not sep or not a or not b or ":" in b:
        raise InputError(f"--contrast must be MODEL:BASELINE (model minus baseline), got {text!r}")
    if a == b:
        raise InputError(f"--contrast {text!r} compares {a!r} with itself")
    return a, b


def _check_pairs(pairs: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for i, p in enumerate(pairs):
        if isinstance(p, str) or len(p) != 2 or not all(isinstance(v, str) and v for v in p):
            raise InputError(f"pairs[{i}] must be (model, baseline), two non-empty names; got {p!r}")
        if p[0] == p[1]:
            raise InputError(f"pairs[{i}] compares {p[0]!r} with itself")
        out.append((p[0], p[1]))
    if len(set(out)) != len(out):
        raise InputError(f"pairs must not repeat, got {out}")
    return tuple(out)


@dataclass(frozen=True)
class ContrastFamily:
    """A declared family: its computable contrasts, the pairs it came from, and what was dropped.

    :attr:`size` — the number of *declared* contrasts, dropped ones included —
    is the ``m`` of the Bonferroni adjustment, so a contrast that cannot be
    computed never widens or narrows the others' intervals unannounced.

    Attributes:
        contrasts: the contrasts to compute, in declaration order.
        pairs: ``(model, baseline)`` pairs of the declaration (exploratory cells follow them).
        dropped: declared strata and contrasts that cannot be computed, with reasons.
        declared: declared contrasts (``None``: computable plus dropped contrasts).
    """

    contrasts: tuple[Contrast, ...]
    pairs: tuple[tuple[str, str], ...] = ()
    dropped: tuple[Dropped, ...] = ()
    declared: int | None = None
    _size: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cs = tuple(self.contrasts)
        for c in cs:
            if not isinstance(c, Contrast):
                raise InputTypeError(f"family members must be Contrast, got {type(c).__name__}")
        if len(set(cs)) != len(cs):
            raise InputError("family contrasts must not repeat")
        object.__setattr__(self, "contrasts", cs)
        object.__setattr__(self, "pairs", _check_pairs(self.pairs))
        object.__setattr__(self, "dropped", tuple(self.dropped))
        n_dropped = sum(1 for d in self.dropped if d.what == "contrast")
        size = len(cs) + n_dropped if self.declared is None else check_int("declared", self.declared, 0)
        if size < len(cs) + n_dropped:
            raise InputError(f"declared={size} is fewer than the {len(cs)} kept and {n_dropped} dropped "
                             f"contrasts")
        object.__setattr__(self, "_size", size)

    @property
    def size(self) -> int:
        """Declared contrasts: the Bonferroni ``m``."""
        return self._size

    def drop(self, contrast: Contrast, reason: str) -> ContrastFamily:
        """This family without ``contrast``, which is reported as dropped for ``reason`` (size unchanged)."""
        kept = tuple(c for c in self.contrasts if c != contrast)
        if len(kept) == len(self.contrasts):
            raise InputError(f"contrast {contrast.name!r} is not in the family")
        return ContrastFamily(kept, self.pairs, (*self.dropped, Dropped("contrast", contrast.name, reason)),
                              self.size)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"size": self.size, "pairs": [list(p) for p in self.pairs],
                "contrasts": [c.to_dict() for c in self.contrasts],
                "dropped": [d.to_dict() for d in self.dropped]}


def family_of_pairs(pairs: Sequence[Sequence[str]], strata: Sequence[str] = SEED_000_FAMILY_STRATA,
                    kind: str = "tail", minus: str | None = "beginning") -> ContrastFamily:
    """Every pair in every stratum, without a population (nothing is dropped): ``len(pairs) × len(strata)``.

    Contrasts are ordered pair by pair, strata inside (seed 000 §5.5's table order).
    """
    ps = _check_pairs(pairs)
    labels = _check_strata(strata)
    return ContrastFamily(tuple(Contrast(a, s, kind, minus, b) for a, b in ps for s in labels), ps)


def _check_strata(strata: Sequence[str]) -> tuple[str, ...]:
    if isinstance(strata, str):
        raise InputTypeError(f"strata must be a sequence of stratum labels, got the string {strata!r}")
    labels = tuple(strata)
    if len(set(labels)) != len(labels):
        raise InputError(f"strata must not repeat, got {labels}")
    return labels


def declare_family(population: Population, pairs: Sequence[Sequence[str]],
                   strata: Sequence[str] = SEED_000_FAMILY_STRATA, kind: str = "tail",
                   minus: str | None = "beginning") -> ContrastFamily:
    """The family of every pair in every stratum, dropping (with a reason) strata of fewer than 2 sources.

    A label that is not one of the population's strata is an error (a typo
    is not a dropped stratum). :func:`~packing_theory.evaluation.compare`
    drops, with a reason, any further contrast whose windows are not paired.

    >>> import numpy as np
    >>> from packing_theory.evaluation import sample_population
    >>> pop = sample_population([np.zeros(5000, dtype=int) + i for i in range(3)], per_stratum=None,
    ...                         drop_internal_duplicates=False)
    >>> fam = declare_family(pop, [("b", "a"), ("c", "a")])
    >>> fam.size, len(fam.contrasts), fam.dropped[0].reason
    (4, 2, 'stratum 8193–16384 has 0 sources in the population; a paired bootstrap interval needs at least 2')
    """
    fam = family_of_pairs(pairs, strata, kind, minus)
    for s in fam.contrasts:
        population.stratum_of(s.stratum)
    for label in dict.fromkeys(c.stratum for c in fam.contrasts):
        n = population.sampled[population.stratum_of(label)]
        if n >= 2:
            continue
        why = (f"stratum {label} has {n} source{'' if n == 1 else 's'} in the population; a paired "
               f"bootstrap interval needs at least 2")
        dropped = ContrastFamily(fam.contrasts, fam.pairs, (*fam.dropped, Dropped("stratum", label, why)),
                                 fam.size)
        for c in [c for c in fam.contrasts if c.stratum == label]:
            dropped = dropped.drop(c, f"its stratum was dropped: {why}")
        fam = dropped
    return fam


def family_from_dict(doc: Mapping[str, Any], population: Population | None = None) -> ContrastFamily:
    """A family from a JSON document (a *family file*).

    Either ``{"pairs": [["A", "B"], ...], "strata": [...], "kind": "tail", "minus": "beginning"}``
    (``strata``, ``kind`` and ``minus`` optional, seed 000's by default) or
    ``{"contrasts": [{"model": "A", "baseline": "B", "stratum": "...", "kind": "tail", "minus":
    "beginning"}, ...]}``. With a population, pair families drop strata of
    fewer than 2 sources (:func:`declare_family`).

    >>> family_from_dict({"pairs": [["b", "a"]], "strata": ["4097–8192"]}).size
    1
    """
    if not isinstance(doc, Mapping):
        raise InputError(f"a family file must hold a JSON object, got {type(doc).__name__}")
    unknown = set(doc) - {"pairs", "strata", "kind", "minus", "contrasts"}
    if unknown:
        raise InputError(f"family file: unknown keys {sorted(unknown)} (expected pairs, strata, kind, minus "
                         f"or contrasts)")
    if ("pairs" in doc) == ("contrasts" in doc):
        raise InputError("family file: give exactly one of 'pairs' or 'contrasts'")
    if "contrasts" in doc:
        items = doc["contrasts"]
        if not isinstance(items, list):
            raise InputError("family file: 'contrasts' must be a list of objects")
        cs: list[Contrast] = []
        for i, c in enumerate(items):
            if not isinstance(c, Mapping) or not {"model", "baseline", "stratum"} <= set(c):
                raise InputError(f"family file: contrasts[{i}] needs model, baseline and stratum; got {c!r}")
            cs.append(Contrast(str(c["model"]), str(c["stratum"]), str(c.get("kind", "tail")),
                               None if c.get("minus") is None else str(c["minus"]), str(c["baseline"])))
        pairs = tuple(dict.fromkeys((c.model, str(c.baseline)) for c in cs))
        return ContrastFamily(tuple(cs), pairs)
    kw: dict[str, Any] = {k: doc[k] for k in ("strata", "kind", "minus") if k in doc}
    pairs_doc = doc["pairs"]
    if not isinstance(pairs_doc, list):
        raise InputError("family file: 'pairs' must be a list of [model, baseline] lists")
    if population is None:
        return family_of_pairs(pairs_doc, **kw)
    return declare_family(population, pairs_doc, **kw)


def read_family_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object of a family file (see :func:`family_from_dict`)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"--family {os.fspath(path)!r} is not a readable JSON file: {exc}") from exc
    if not isinstance(doc, dict):
        raise InputError(f"--family {os.fspath(path)!r} must hold a JSON object, got {type(doc).__name__}")
    return doc


def read_family(path: str | os.PathLike[str], population: Population | None = None) -> ContrastFamily:
    """:func:`family_from_dict` of a JSON file."""
    return family_from_dict(read_family_document(path), population)
