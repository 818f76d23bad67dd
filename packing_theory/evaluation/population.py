"""The evaluation population: length strata, seeded sampling, duplicate exclusion, support (seed 000 §3, §4).

Job: choose which tokenised sources an evaluation scores and say what that
population can and cannot speak for. Imports: numpy, the audit layer
(:func:`packing_theory.audit.stratum_index` and
:func:`~packing_theory.audit.stratum_labels` — the one stratum lookup of
the library — and the :class:`~packing_theory.audit.Aggregates` /
:class:`~packing_theory.audit.EvalPopulation` results the support statement
links to), and this package's windows module.

Protocol (seed 000 §4, "Evaluation populations")
------------------------------------------------
1. **Exact-duplicate exclusion.** A candidate whose hash is in ``exclude``
   (hashes of the training shards) is dropped; so is a later candidate
   repeating an earlier one's hash (an *internal* duplicate). Hashes are
   :func:`text_digest` of the text when text is available, else
   :func:`token_hash` of the token ids. Near duplicates are not audited.
2. **Strata** by BOS-inclusive length with :data:`EVAL_BOUNDARIES`
   ``= (128, 512, 1024, 2049, 4096, 8192, 16384)``: eight strata
   ``1–128, 129–512, 513–1024, 1025–2049, 2050–4096, 4097–8192, 8193–16384, >16384``.
3. **Sampling.** In each stratum at most ``per_stratum`` sources (seed 000:
   256), uniformly without replacement, with ``numpy.random.default_rng([seed, k])``
   for stratum ``k`` (seed 000's development draw used RNG 147018) —
   one independent stream per stratum, so one stratum's draw never shifts
   another's. ``per_stratum=None`` keeps every eligible source (a census).
   Population order is candidate order.

Text normalisation of :func:`text_digest`
-----------------------------------------
Unicode NFC (canonically equivalent spellings compare equal), ``\\r\\n`` and
``\\r`` become ``\\n``, and leading/trailing whitespace is stripped. Nothing
else: case, interior whitespace and punctuation are kept, so only exact
duplicates up to encoding and line-ending accidents match. The hash is
SHA-256 of the UTF-8 bytes of the normalised text.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit import Aggregates, EvalPopulation, stratum_index, stratum_labels
from ..audit.strata import EVALUATION_BOUNDARIES
from ..errors import InputError, InputTypeError
from .windows import Int64Array, Window, WindowSpec, as_document, source_windows

__all__ = [
    "DEFAULT_PER_STRATUM",
    "DEFAULT_SAMPLE_SEED",
    "EVAL_BOUNDARIES",
    "Population",
    "SupportStatement",
    "normalise_text",
    "sample_population",
    "support_statement",
    "text_digest",
    "token_hash",
]

EVAL_BOUNDARIES: tuple[int, ...] = EVALUATION_BOUNDARIES
"""Seed 000 §4's BOS-inclusive length boundaries of the evaluation diagnostic (eight strata);
the audit's :data:`~packing_theory.audit.strata.EVALUATION_BOUNDARIES`."""

DEFAULT_PER_STRATUM = 256
"""At most this many sources per stratum (seed 000 §4)."""

DEFAULT_SAMPLE_SEED = 147018
"""Seed 000's development sampling RNG (its confirmation draw used 147019)."""


def normalise_text(text: str) -> str:
    """The normalisation applied before :func:`text_digest` (see the module doc).

    >>> normalise_text("  Cafe\\u0301\\r\\nbar \\n")
    'Café\\nbar'
    """
    if not isinstance(text, str):
        raise InputTypeError(f"text must be a str, got {type(text).__name__}")
    t = unicodedata.normalize("NFC", text)
    return t.replace("\r\n", "\n").replace("\r", "\n").strip()


def text_digest(text: str) -> str:
    """SHA-256 (hex) of the UTF-8 bytes of :func:`normalise_text` ``(text)``.

    >>> text_digest("a\\r\\nb") == text_digest("a\\nb  ")
    True
    >>> text_digest("A") == text_digest("a")
    False
    """
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def token_hash(doc: npt.ArrayLike) -> str:
    """SHA-256 (hex) of a BOS-inclusive token-id sequence as little-endian ``int64``.

    For token shards, which hold no text: two documents match when every id,
    the BOS included, is equal.

    >>> token_hash([0, 5, 6]) == token_hash(np.array([0, 5, 6], dtype=np.uint16))
    True
    """
    d = as_document(doc)
    return hashlib.sha256(d.astype("<i8", copy=False).tobytes()).hexdigest()


def _check_boundaries(boundaries: Sequence[int]) -> tuple[int, ...]:
    labels = stratum_labels(boundaries)  # validates
    assert len(labels) == len(tuple(boundaries)) + 1
    return tuple(int(b) for b in boundaries)


@dataclass(frozen=True, eq=False)
class Population:
    """The sources an evaluation scores, with how they were chosen.

    Attributes:
        boundaries: stratum boundaries (:data:`EVAL_BOUNDARIES` by default).
        labels: stratum labels.
        candidates: documents offered.
        indices: candidate index of each population source (increasing).
        lengths: BOS-inclusive length of each population source.
        strata: stratum of each population source.
        documents: token ids of each population source (read-only ``int64``).
        offered: candidates per stratum.
        excluded_training: candidates per stratum dropped as exact duplicates of training data.
        excluded_internal: candidates per stratum dropped as repeats of an earlier candidate.
        eligible: candidates per stratum left after the exclusions.
        per_stratum: the sampling cap (``None``: every eligible source).
        seed: the sampling seed.
        hash_kind: ``"token"``, ``"text"`` (caller's hashes) or ``"none"`` (no exclusion ran).
    """

    boundaries: tuple[int, ...]
    labels: tuple[str, ...]
    candidates: int
    indices: Int64Array
    lengths: Int64Array
    strata: Int64Array
    documents: tuple[Int64Array, ...]
    offered: tuple[int, ...]
    excluded_training: tuple[int, ...]
    excluded_internal: tuple[int, ...]
    eligible: tuple[int, ...]
    per_stratum: int | None
    seed: int | None
    hash_kind: str

    @property
    def n_sources(self) -> int:
        """Sources in the population."""
        return int(self.indices.size)

    @property
    def sampled(self) -> tuple[int, ...]:
        """Population sources per stratum."""
        return tuple(int(v) for v in np.bincount(self.strata, minlength=len(self.labels)))

    @property
    def census_strata(self) -> tuple[str, ...]:
        """Labels of non-empty strata whose every eligible source is in the population.

        Their contrasts are census values for that finite set (seed 000 §4):
        a sampling interval there targets the hypothetical wider population only.
        """
        return tuple(lab for lab, s, e in zip(self.labels, self.sampled, self.eligible, strict=True)
                     if e > 0 and s == e)

    def stratum_of(self, label: str) -> int:
        """Index of the stratum labelled ``label``."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise InputError(f"stratum must be one of {', '.join(self.labels)}; got {label!r}") from None

    def windows(self, spec: WindowSpec | None = None) -> tuple[Window, ...]:
        """Every window ``spec`` asks for, source by source (``Window.source`` = population index)."""
        sp = WindowSpec() if spec is None else spec
        out: list[Window] = []
        for s, doc in enumerate(self.documents):
            out.extend(source_windows(doc, sp, source=s))
        return tuple(out)

    def fingerprint(self) -> str:
        """SHA-256 of the population: each source's candidate index, length and token ids, in order."""
        h = hashlib.sha256()
        for i, d in zip(self.indices.tolist(), self.documents, strict=True):
            h.update(np.asarray([i, d.size], dtype="<i8").tobytes())
            h.update(d.astype("<i8", copy=False).tobytes())
        return h.hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (sources per stratum, how they were chosen, the fingerprint)."""
        return {"boundaries": list(self.boundaries), "labels": list(self.labels),
                "candidates": self.candidates, "offered": list(self.offered),
                "excluded_training": list(self.excluded_training),
                "excluded_internal": list(self.excluded_internal), "eligible": list(self.eligible),
                "sampled": list(self.sampled), "census_strata": list(self.census_strata),
                "per_stratum": self.per_stratum, "seed": self.seed, "hash_kind": self.hash_kind,
                "sources": self.n_sources, "tokens": int(self.lengths.sum()),
                "sources_sha256": self.fingerprint()}

    def _check(self) -> None:
        """Assert the internal invariants (counts, order, strata, lengths)."""
        S = len(self.labels)
        n = self.n_sources
        assert len(self.boundaries) + 1 == S
        assert self.lengths.shape == self.strata.shape == (n,) and len(self.documents) == n
        assert (np.diff(self.indices) > 0).all() and (n == 0 or 0 <= self.indices[0] <= self.indices[-1]
                                                       < self.candidates)
        assert (stratum_index(self.lengths, self.boundaries) == self.strata).all()
        assert all(int(d.size) == int(L) for d, L in zip(self.documents, self.lengths, strict=True))
        for s in range(S):
            assert self.offered[s] == self.excluded_training[s] + self.excluded_internal[s] + self.eligible[s]
            cap = self.eligible[s] if self.per_stratum is None else min(self.per_stratum, self.eligible[s])
            assert self.sampled[s] == cap
        assert sum(self.offered) == self.candidates


def sample_population(
    documents: Sequence[npt.ArrayLike],
    *,
    per_stratum: int | None = DEFAULT_PER_STRATUM,
    seed: int = DEFAULT_SAMPLE_SEED,
    boundaries: Sequence[int] = EVAL_BOUNDARIES,
    hashes: Sequence[str] | None = None,
    exclude: Collection[str] = (),
    drop_internal_duplicates: bool = True,
) -> Population:
    """Exclude exact duplicates, stratify by length and sample (see the module doc).

    Args:
        documents: BOS-inclusive token-id sequences (random access; only the
            chosen ones are copied).
        per_stratum: the cap per stratum (``None``: keep every eligible source).
        seed: sampling seed (one ``default_rng([seed, k])`` stream per stratum ``k``).
        boundaries: stratum boundaries.
        hashes: one hash per document (e.g. :func:`text_digest` of its text);
            default :func:`token_hash` of each document when an exclusion runs.
        exclude: hashes of training documents (exact-duplicate exclusion).
        drop_internal_duplicates: drop a document repeating an earlier one's hash.

    Complexity: O(total tokens) when hashing token ids, else O(documents),
    plus copying the chosen documents.

    Raises:
        ValueError: no documents, a mismatched ``hashes`` length, a bad cap or
            bad boundaries; ``TypeError`` for non-integer documents.

    >>> docs = [[0] + [1] * (L - 1) for L in (3, 3, 200, 150, 3000)]
    >>> pop = sample_population(docs, per_stratum=1, seed=0)
    >>> pop.sampled[:5], pop.excluded_internal[:2], pop.lengths.tolist()
    ((1, 1, 0, 0, 1), (1, 0), [3, 150, 3000])
    """
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
        raise InputTypeError(f"documents must be a sequence of token-id sequences, got "
                             f"{type(documents).__name__}")
    n = len(documents)
    if n == 0:
        raise InputError("documents is empty: a population needs at least one candidate")
    bounds = _check_boundaries(boundaries)
    bad_cap = (isinstance(per_stratum, bool) or not isinstance(per_stratum, (int, np.integer))
               or per_stratum < 1)
    if per_stratum is not None and bad_cap:
        raise InputError(f"per_stratum must be an int >= 1 or None, got {per_stratum!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be an int >= 0, got {seed!r}")
    if hashes is not None and len(hashes) != n:
        raise InputError(f"hashes must have one entry per document: {len(hashes)} hashes for {n} documents")
    excl = exclude if isinstance(exclude, (set, frozenset, dict)) else frozenset(exclude)
    need_hash = bool(excl) or drop_internal_duplicates
    kind = "text" if hashes is not None else ("token" if need_hash else "none")
    lengths = np.empty(n, dtype=np.int64)
    computed: list[str] = []
    for i in range(n):  # one pass: each document is read once (lazy sequences generate on access)
        doc = as_document(documents[i], name=f"documents[{i}]")
        lengths[i] = doc.size
        if kind == "token":
            computed.append(token_hash(doc))
    hs: Sequence[str] | None = hashes if hashes is not None else (computed if kind == "token" else None)
    strata = stratum_index(lengths, bounds)
    S = len(bounds) + 1
    keep = np.ones(n, dtype=np.bool_)
    ex_train = np.zeros(S, dtype=np.int64)
    ex_int = np.zeros(S, dtype=np.int64)
    if hs is not None:
        seen: set[str] = set()
        for i, h in enumerate(hs):
            if h in excl:
                keep[i] = False
                ex_train[strata[i]] += 1
            elif drop_internal_duplicates and h in seen:
                keep[i] = False
                ex_int[strata[i]] += 1
            seen.add(h)
    chosen: list[Int64Array] = []
    for k in range(S):
        idx = np.flatnonzero(keep & (strata == k))
        if per_stratum is not None and idx.size > per_stratum:
            rng = np.random.default_rng([int(seed), k])
            idx = np.sort(rng.choice(idx, size=int(per_stratum), replace=False))
        chosen.append(idx.astype(np.int64))
    sel = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    docs = tuple(as_document(documents[int(i)], name=f"documents[{int(i)}]") for i in sel)
    offered = np.bincount(strata, minlength=S)
    eligible = np.bincount(strata[keep], minlength=S)
    pop = Population(
        boundaries=bounds, labels=tuple(stratum_labels(bounds)), candidates=n, indices=sel,
        lengths=lengths[sel], strata=strata[sel], documents=docs,
        offered=tuple(int(v) for v in offered), excluded_training=tuple(int(v) for v in ex_train),
        excluded_internal=tuple(int(v) for v in ex_int), eligible=tuple(int(v) for v in eligible),
        per_stratum=None if per_stratum is None else int(per_stratum), seed=int(seed), hash_kind=kind,
    )
    return pop


# --------------------------------------------------------------------------- support statement


def _bounds_from_labels(labels: Sequence[str]) -> list[int | None]:
    """Upper bounds of strata labelled ``lo–hi`` ... ``>b`` (as :func:`stratum_labels` writes them)."""
    out: list[int | None] = []
    for lab in labels:
        try:
            if lab.startswith(">"):
                int(lab[1:])
                out.append(None)
            else:
                out.append(int(lab.split("–")[1]))
        except (ValueError, IndexError):
            raise InputError(f"cannot read stratum label {lab!r} (expected 'lo–hi' or '>b')") from None
    return out


def _merge(counts: Sequence[int], his: Sequence[int | None], bounds: tuple[int, ...],
           what: str) -> tuple[int, ...]:
    """Add per-stratum ``counts`` with upper bounds ``his`` (``None``: unbounded) into ``bounds``' strata.

    A finer stratum lies in the evaluation stratum of its upper bound (found
    with :func:`~packing_theory.audit.stratum_index`); the unbounded one in the last.
    """
    theirs = {int(h) for h in his if h is not None}
    missing = [b for b in bounds if b not in theirs]
    if missing:
        raise InputError(f"{what} strata cannot be mapped onto the evaluation strata: boundaries "
                         f"{missing} are not among its boundaries {sorted(theirs)}")
    last = len(bounds)
    where = stratum_index([h if h is not None else bounds[-1] + 1 for h in his], bounds)
    out = np.zeros(last + 1, dtype=np.int64)
    np.add.at(out, where, np.asarray(counts, dtype=np.int64))
    return tuple(int(v) for v in out)


@dataclass(frozen=True, slots=True)
class SupportStatement:
    """Which evaluation strata the training run or the official evaluation stream could not reach.

    Attributes:
        labels: the evaluation strata.
        evaluated: population sources per stratum.
        training_policy: the training replay's policy (``None`` without a training audit).
        training_arrived: training occurrences that arrived, per evaluation stratum.
        training_started: of those, started (at least one token in a row).
        never_started: strata with arrived training sources but none started.
        not_arrived: strata with no training arrival within the budget.
        official_targets: the official evaluation budget (``None`` without one).
        official_included: official-stream sources scored within that budget, per stratum.
        official_zero_inclusion: strata present in the official stream with none scored
            (seed 000 §3: reweighting its rows cannot identify their loss).
    """

    labels: tuple[str, ...]
    evaluated: tuple[int, ...]
    training_policy: str | None = None
    training_arrived: tuple[int, ...] | None = None
    training_started: tuple[int, ...] | None = None
    never_started: tuple[str, ...] = ()
    not_arrived: tuple[str, ...] = ()
    official_targets: int | None = None
    official_included: tuple[int, ...] | None = None
    official_zero_inclusion: tuple[str, ...] = ()

    @property
    def statement(self) -> str:
        """The support statement in words."""
        parts: list[str] = []
        if self.training_started is not None:
            if self.never_started:
                detail = ", ".join(
                    f"{lab} (0 of {self.training_arrived[self.labels.index(lab)]:,} arrived)"  # type: ignore[index]
                    for lab in self.never_started)
                parts.append(f"The training run ({self.training_policy}) never started a source of stratum "
                             f"{detail}: no token of those sources reached a row, so the model saw no "
                             f"text of "
                             f"that length class, and evaluation there measures transfer to it.")
            else:
                parts.append(f"The training run ({self.training_policy}) started at least one source in "
                             f"every stratum it received.")
            if self.not_arrived:
                parts.append(f"No training source of stratum {', '.join(self.not_arrived)} arrived within "
                             f"the training budget.")
        if self.official_targets is not None:
            if self.official_zero_inclusion:
                parts.append(f"The official evaluation stream scores no source of stratum "
                             f"{', '.join(self.official_zero_inclusion)} within {self.official_targets:,} "
                             f"targets: reweighting its rows cannot identify their loss (two loss "
                             f"assignments "
                             f"agreeing on every scored row can differ there), while this population samples "
                             f"them directly.")
            else:
                parts.append(f"Every stratum present in the official evaluation stream has a source scored "
                             f"within {self.official_targets:,} targets.")
        if not parts:
            parts.append("No training or official-evaluation audit was supplied, so no support statement can "
                         "be made.")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the statement."""
        return {"labels": list(self.labels), "evaluated": list(self.evaluated),
                "training_policy": self.training_policy,
                "training_arrived": None if self.training_arrived is None else list(self.training_arrived),
                "training_started": None if self.training_started is None else list(self.training_started),
                "never_started": list(self.never_started), "not_arrived": list(self.not_arrived),
                "official_targets": self.official_targets,
                "official_included": None if self.official_included is None else list(self.official_included),
                "official_zero_inclusion": list(self.official_zero_inclusion),
                "statement": self.statement}


def support_statement(population: Population, training: Aggregates | None = None,
                      official: EvalPopulation | None = None) -> SupportStatement:
    """Link the population's strata to a training audit and an official-evaluation audit.

    ``training`` is a :class:`~packing_theory.audit.Ledger` result
    (:class:`~packing_theory.audit.Aggregates`) of the training replay;
    ``official`` is :func:`packing_theory.audit.evaluation_population` of the
    official evaluation stream. Their strata must refine the population's
    (every evaluation boundary is one of theirs: the audit's default
    boundaries ``32, 128, ..., 16384`` refine :data:`EVAL_BOUNDARIES`);
    counts are added up into the evaluation strata.

    Raises:
        ValueError: strata that do not refine the population's.
    """
    labels = population.labels
    bounds = population.boundaries
    kw: dict[str, Any] = {}
    if training is not None:
        his = [row.hi for row in training.strata]
        arrived = _merge([row.arrived_sources for row in training.strata], his, bounds, "training")
        started = _merge([row.started_sources for row in training.strata], his, bounds, "training")
        kw.update(training_policy=training.policy or "training", training_arrived=arrived,
                  training_started=started,
                  never_started=tuple(lab for lab, a, s in zip(labels, arrived, started, strict=True)
                                      if a > 0 and s == 0),
                  not_arrived=tuple(lab for lab, a, e in zip(labels, arrived, population.sampled, strict=True)
                                    if a == 0 and e > 0))
    if official is not None:
        his_o = _bounds_from_labels(official.labels)
        pop_o = _merge(official.population, his_o, bounds, "official evaluation")
        inc_o = _merge(official.included, his_o, bounds, "official evaluation")
        kw.update(official_targets=official.targets, official_included=inc_o,
                  official_zero_inclusion=tuple(lab for lab, p, i in zip(labels, pop_o, inc_o, strict=True)
                                                if p > 0 and i == 0))
    return SupportStatement(labels=labels, evaluated=population.sampled, **kw)
