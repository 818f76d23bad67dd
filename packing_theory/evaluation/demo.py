"""The ``packing-theory evaluate --demo`` pipeline: two packing policies, two n-gram models, one protocol.

Job: build the demo's inputs and run :func:`~packing_theory.evaluation.pipeline.evaluate_models`
on them. Imports: the engine (:class:`~packing_theory.Packer`,
:class:`~packing_theory.PackerConfig`), the corpus layer
(:func:`~packing_theory.corpus.default_lengths`), the audit layer
(:func:`~packing_theory.audit.audit_lengths`,
:func:`~packing_theory.audit.evaluation_population`) and this package.

What the demo does
------------------
1. **Token ids.** The calibrated default corpus gives lengths only
   (``default_lengths(0)`` for training, ``default_lengths(1)`` for
   evaluation). Every document's ids come from :class:`~packing_theory.evaluation.synthetic.PlantedProcess`:
   words of an *early* lexicon, with *late* words appearing from source
   position 1,536 and dominating after 5,632 — a planted position effect.
2. **Training.** For each policy (default ``discard`` and ``segment-first``)
   the engine packs the training stream at R = 2049, B = 1000, refill 128
   for ``train_rows`` rows (:meth:`Packer.token_rows`), and a trigram add-k
   :class:`~packing_theory.evaluation.ngram.NGramModel` is fitted on those
   rows. ``discard`` never emits a source position at or beyond R, so its
   model rarely sees late words; ``segment-first`` emits every position of
   every document it starts. A :class:`~packing_theory.audit.Ledger` replay
   of the same configuration gives the sources each run started (support).
3. **Population.** The first ``eval_candidates`` evaluation documents —
   among which ``planted_duplicates`` evenly spaced candidates are replaced by
   exact copies of loaded training documents — minus exact duplicates of the
   training documents the runs loaded (token hashes) and internal repeats,
   stratified with seed 000's boundaries and
   sampled ``per_stratum`` per stratum with RNG 147018; beginning and tail
   windows (R = 2049), and the natural-context assay (natural tails and their
   prefix-region control, K = 512, at C = 1,024 and 2,048) from the sources
   above 4,096 tokens.
4. **Census.** Every retained source among the first ``census_candidates``
   evaluation documents, scored with document-local windows (C = 2048, S = 512).
5. **Official stream.** :func:`~packing_theory.audit.evaluation_population`
   of the evaluation stream under ``discard`` at ``official_targets``
   targets says which strata a budgeted official score cannot contain.
6. **Ranking check.** The first ``ranking_rows`` rows of that official
   stream, scored by every model (:func:`~packing_theory.evaluation.ranking.row_statistics`),
   checked at prefixes of 1/80, 1/10 and 1/2 of the rows — the proportions of
   seed 000 §5.6's 0.262 M, 2.10 M and 10.49 M of 20.97 M targets — against
   ``ranking_subsets`` uniform row subsets.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit import Aggregates, audit_lengths, evaluation_population
from ..engine import POLICIES, Packer, PackerConfig
from ..errors import InputError
from .family import SEED_000_FAMILY_STRATA, bonferroni_quantiles, family_from_dict
from .natural import NATURAL_CONTEXTS
from .ngram import NGramModel
from .pipeline import EvaluationRun, default_family, evaluate_models
from .population import DEFAULT_SAMPLE_SEED, sample_population, token_hash
from .ranking import DEFAULT_SUBSETS, RowStatistics, row_statistics
from .synthetic import LazyDocuments, PlantedProcess
from .windows import WindowSpec

__all__ = ["DEMO_POLICIES", "DemoConfig", "run_demo", "train_model"]

DEMO_POLICIES: tuple[str, ...] = ("discard", "segment-first")
"""The two packing policies whose models the demo compares (baseline first)."""


@dataclass(frozen=True)
class DemoConfig:
    """Sizes and seeds of the demo (defaults: the ``evaluate --demo`` run)."""

    policies: tuple[str, ...] = DEMO_POLICIES
    capacity: int = 2049
    min_buffer: int = 1000
    refill: int = 128
    train_rows: int = 3000
    eval_candidates: int = 20_000
    per_stratum: int = 64
    sample_seed: int = DEFAULT_SAMPLE_SEED
    census_candidates: int = 1000
    natural_targets: int = 512
    context: int = 2048
    stride: int = 512
    order: int = 3
    k: float = 0.01
    replicates: int = 10_000
    bootstrap_seed: int = 0
    official_targets: int = 1_048_576
    planted_duplicates: int = 8
    natural_contexts: tuple[int, ...] = NATURAL_CONTEXTS
    family: dict[str, Any] | None = None  # a family document (see family_from_dict)
    family_strata: tuple[str, ...] = SEED_000_FAMILY_STRATA
    ranking_rows: int = 640
    ranking_subsets: int = DEFAULT_SUBSETS
    level: float = 0.95
    batch_size: int = 16
    process: PlantedProcess = field(default_factory=PlantedProcess)

    def __post_init__(self) -> None:
        if len(self.policies) < 2:
            raise InputError(f"the demo compares at least two policies, got {self.policies}")
        for p in self.policies:
            if p not in POLICIES:
                raise InputError(f"policy must be one of {', '.join(POLICIES)}; got {p!r}")
        if len(set(self.policies)) != len(self.policies):
            raise InputError(f"policies must not repeat, got {self.policies}")
        if isinstance(self.planted_duplicates, bool) or not isinstance(self.planted_duplicates, int) \
                or not 0 <= self.planted_duplicates < self.eval_candidates:
            raise InputError(f"planted_duplicates must be an int in 0..eval_candidates-1, "
                             f"got {self.planted_duplicates!r}")
        for name in ("train_rows", "eval_candidates", "per_stratum", "census_candidates", "replicates",
                     "official_targets", "ranking_rows", "ranking_subsets", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be an int >= 1, got {v!r}")
        bonferroni_quantiles(self.level, 1)  # the level is a number in (0, 1)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        d = asdict(self)
        d["policies"] = list(self.policies)
        d["natural_contexts"] = list(self.natural_contexts)
        d["family_strata"] = list(self.family_strata)
        d["process"] = {k: v for k, v in asdict(self.process).items() if not k.startswith("_")}
        return d


def _training_documents(process: PlantedProcess, lengths: npt.NDArray[np.int64],
                        hashes: dict[str, int]) -> Iterator[npt.NDArray[np.int32]]:
    for i, L in enumerate(lengths.tolist()):
        doc = process.document(int(L), stream=0, index=i)
        hashes.setdefault(token_hash(doc), i)
        yield doc


def train_model(config: DemoConfig, policy: str, lengths: npt.NDArray[np.int64],
                hashes: dict[str, int]) -> tuple[NGramModel, Aggregates, dict[str, Any]]:
    """Pack the training stream under ``policy``, fit the n-gram model, audit the same replay.

    Records the token hash of every training document the packer loaded in
    ``hashes`` (hash -> first training index).
    """
    cfg = PackerConfig(capacity=config.capacity, min_buffer=config.min_buffer, refill=config.refill,
                       policy=policy, rows=config.train_rows)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    docs = _training_documents(config.process, lengths, hashes)
    rows = np.asarray(list(Packer(cfg).token_rows(docs)), dtype=np.int32)  # type: ignore[arg-type]
    model = NGramModel(config.process.vocab_size, order=config.order, k=config.k).fit(rows)
    digest = hashlib.sha256(rows.astype("<i4").tobytes()).hexdigest()
    agg = audit_lengths(lengths, cfg)
    info = {"policy": policy, "rows": int(rows.shape[0]), "targets": int(rows.shape[0] * (rows.shape[1] - 1)),
            "rows_sha256": digest, "sources_started": agg.started_sources,
            "sources_arrived": agg.arrived_sources, **model.describe(),
            "seconds": time.perf_counter() - t0}
    return model, agg, info


def official_rows(config: DemoConfig, candidates: LazyDocuments,
                  models: dict[str, NGramModel]) -> tuple[RowStatistics, tuple[int, ...]]:
    """Row statistics of every model on the first ``ranking_rows`` official rows, and the prefixes."""
    cfg = PackerConfig(capacity=config.capacity, min_buffer=config.min_buffer, refill=config.refill,
                       policy="discard", rows=config.ranking_rows)
    rows = np.asarray(list(Packer(cfg).token_rows(iter(candidates))), dtype=np.int64)  # type: ignore[arg-type]
    n = int(rows.shape[0])
    if n < 4:
        raise InputError(f"the official stream holds {n} rows: too few for a ranking check (raise "
                         f"eval_candidates)")
    stats = row_statistics(rows, models, config.process.token_bytes)
    per_row = config.capacity - 1
    prefixes = tuple(dict.fromkeys(max(1, n // d) * per_row for d in (80, 10, 2)))
    return stats, prefixes


def run_demo(config: DemoConfig | None = None, *,
             progress: Callable[[str], None] | None = None) -> EvaluationRun:
    """Run the demo end to end (see the module doc) and return the :class:`EvaluationRun`."""
    from ..corpus import default_lengths

    cfg = config or DemoConfig()
    say = progress or (lambda _msg: None)
    t_all = time.perf_counter()
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    train_lengths = default_lengths(seed=0)
    eval_lengths = default_lengths(seed=1)[: cfg.eval_candidates]
    seconds["lengths"] = time.perf_counter() - t0
    hashes: dict[str, int] = {}
    models: dict[str, NGramModel] = {}
    training: dict[str, Aggregates] = {}
    info: dict[str, dict[str, Any]] = {}
    for policy in cfg.policies:
        say(f"training: pack {cfg.train_rows:,} rows under {policy} and fit a {cfg.order}-gram model")
        t0 = time.perf_counter()
        models[policy], training[policy], info[policy] = train_model(cfg, policy, train_lengths, hashes)
        seconds[f"train:{policy}"] = time.perf_counter() - t0
    say(f"population: {cfg.eval_candidates:,} candidates, at most {cfg.per_stratum} per stratum")
    t0 = time.perf_counter()
    # plant exact copies of loaded training documents among the candidates: the exclusion must find them
    loaded = 1 + max(hashes.values())
    D = cfg.planted_duplicates
    copies = {(k + 1) * (cfg.eval_candidates // (D + 1)): (0, (k + 1) * (loaded // (D + 1)))
              for k in range(D)}
    eval_lengths = eval_lengths.copy()
    for j, (_, i) in copies.items():
        eval_lengths[j] = train_lengths[i]
    candidates = LazyDocuments(cfg.process, eval_lengths, stream=1, copies=copies)
    population = sample_population(candidates, per_stratum=cfg.per_stratum, seed=cfg.sample_seed,
                                   exclude=hashes.keys())
    census_docs = LazyDocuments(cfg.process, eval_lengths[: cfg.census_candidates], stream=1,
                                copies={j: c for j, c in copies.items() if j < cfg.census_candidates})
    census_pop = sample_population(census_docs, per_stratum=None, seed=cfg.sample_seed, exclude=hashes.keys())
    official = evaluation_population(
        eval_lengths, PackerConfig(capacity=cfg.capacity, min_buffer=cfg.min_buffer, refill=cfg.refill,
                                   policy="discard"),
        targets=cfg.official_targets, prefixes=())
    seconds["population"] = time.perf_counter() - t0
    say(f"official stream: {cfg.ranking_rows:,} rows for the ranking check")
    t0 = time.perf_counter()
    stats, prefixes = official_rows(cfg, candidates, models)
    seconds["official_rows"] = time.perf_counter() - t0
    spec = WindowSpec(kinds=("beginning", "tail"), capacity=cfg.capacity,
                      natural_targets=cfg.natural_targets, context=cfg.context, stride=cfg.stride)
    baseline = cfg.policies[0]
    run = evaluate_models(
        population, models, cfg.process.token_bytes, baseline=baseline, spec=spec,
        family=(family_from_dict(cfg.family, population) if cfg.family is not None
                else default_family(population, list(models), baseline, cfg.family_strata)),
        replicates=cfg.replicates, level=cfg.level, batch_size=cfg.batch_size,
        bootstrap_seed=cfg.bootstrap_seed, census_population=census_pop,
        census_spec=WindowSpec(kinds=("census",), context=cfg.context, stride=cfg.stride),
        training=training, official=official, progress=say, natural_contexts=cfg.natural_contexts,
        ranking=stats, ranking_prefixes=prefixes, ranking_subsets=cfg.ranking_subsets,
    )
    seconds.update(run.seconds)
    seconds["total"] = time.perf_counter() - t_all
    settings = {**run.settings, "demo": cfg.to_dict(),
                "training_stream": "default_lengths(seed=0), planted token ids (stream 0)",
                "evaluation_stream": (f"default_lengths(seed=1)[:{cfg.eval_candidates}], "
                                      f"planted token ids (stream 1)"),
                "training_documents_hashed": len(hashes), "planted_duplicates": sorted(copies)}
    return replace(run, model_info=info, settings=settings, seconds=seconds)
