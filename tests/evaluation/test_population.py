"""Population: strata from the audit, seeded sampling without replacement, duplicate exclusion, support."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from packing_theory.audit import audit_lengths, evaluation_population, stratum_index, stratum_labels
from packing_theory.evaluation import (
    EVAL_BOUNDARIES,
    normalise_text,
    sample_population,
    support_statement,
    text_digest,
    token_hash,
)


def docs_with_lengths(lengths: list[int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for L in lengths:
        d = rng.integers(1, 1000, size=L)
        d[0] = 0
        out.append(d)
    return out


def test_strata_are_the_audits_with_seed_000_boundaries() -> None:
    lengths = [1, 128, 129, 512, 513, 1024, 1025, 2049, 2050, 4096, 4097, 8192, 8193, 16384, 16385]
    pop = sample_population(docs_with_lengths(lengths), per_stratum=None)
    pop._check()
    assert pop.labels == tuple(stratum_labels(EVAL_BOUNDARIES))
    assert pop.labels == ("1–128", "129–512", "513–1024", "1025–2049", "2050–4096", "4097–8192",
                          "8193–16384", ">16384")
    assert np.array_equal(pop.strata, stratum_index(lengths, EVAL_BOUNDARIES))
    assert pop.sampled == (2, 2, 2, 2, 2, 2, 2, 1)
    assert set(pop.census_strata) == set(pop.labels)


def test_sampling_caps_each_stratum_without_replacement_and_is_seeded() -> None:
    rng = np.random.default_rng(5)
    lengths = [int(v) for v in rng.integers(2, 3000, size=400)]
    docs = docs_with_lengths(lengths)
    a = sample_population(docs, per_stratum=10, seed=147018)
    a._check()
    b = sample_population(docs, per_stratum=10, seed=147018)
    c = sample_population(docs, per_stratum=10, seed=147019)
    assert np.array_equal(a.indices, b.indices) and not np.array_equal(a.indices, c.indices)
    assert len(set(a.indices.tolist())) == a.n_sources
    eligible = np.bincount(stratum_index(lengths, EVAL_BOUNDARIES), minlength=8)
    assert a.sampled == tuple(int(min(10, e)) for e in eligible)
    assert a.census_strata == tuple(lab for lab, e in zip(a.labels, eligible, strict=True) if 0 < e <= 10)
    for i, d in zip(a.indices.tolist(), a.documents, strict=True):
        assert np.array_equal(d, docs[i]) and not d.flags.writeable


def test_sampling_is_uniform_within_a_stratum() -> None:
    docs = docs_with_lengths([200] * 20)  # one stratum of 20 sources, 5 drawn each time
    counts: Counter[int] = Counter()
    seeds = 2000
    for seed in range(seeds):
        counts.update(sample_population(docs, per_stratum=5, seed=seed,
                                        drop_internal_duplicates=False).indices.tolist())
    freq = np.array([counts[i] for i in range(20)]) / seeds
    # each source has inclusion probability 1/4; binomial sd at 2000 draws is ~0.0097
    assert np.all(np.abs(freq - 0.25) < 0.045), freq


def test_one_strata_draw_does_not_shift_another() -> None:
    long_docs = docs_with_lengths([5000] * 30, seed=1)
    short_docs = docs_with_lengths([50] * 40, seed=2)
    a = sample_population(short_docs + long_docs, per_stratum=7, seed=3)
    b = sample_population(short_docs[:25] + long_docs, per_stratum=7, seed=3)
    pick = lambda pop: [d.tobytes() for d, L in zip(pop.documents, pop.lengths, strict=True) if L == 5000]  # noqa: E731
    assert pick(a) == pick(b)


def test_text_normalisation_and_hashes() -> None:
    assert normalise_text("e\u0301\r\nx\r") == "\u00e9\nx"
    assert text_digest("  doc\r\n") == text_digest("doc") == text_digest("doc\n")
    assert text_digest("Doc") != text_digest("doc")
    assert text_digest("a  b") != text_digest("a b")  # interior whitespace is kept: exact duplicates only
    assert token_hash([0, 1, 2]) == token_hash(np.array([0, 1, 2], dtype=np.uint16))
    assert token_hash([0, 1, 2]) != token_hash([0, 2, 1])
    with pytest.raises(TypeError, match="must be a str"):
        normalise_text(b"bytes")  # type: ignore[arg-type]


def test_exact_duplicates_of_training_and_repeats_are_excluded() -> None:
    texts = ["alpha", "beta\r\n", "gamma", "beta", "delta", "Alpha"]
    docs = docs_with_lengths([3, 3, 200, 3, 3000, 3])
    hashes = [text_digest(t) for t in texts]
    train = {text_digest(t) for t in ("alpha", "delta ")}
    pop = sample_population(docs, per_stratum=None, hashes=hashes, exclude=train)
    pop._check()
    assert pop.indices.tolist() == [1, 2, 5]  # alpha, delta: training; the second beta: a repeat
    assert pop.excluded_training == (1, 0, 0, 0, 1, 0, 0, 0)
    assert pop.excluded_internal == (1, 0, 0, 0, 0, 0, 0, 0)
    assert pop.hash_kind == "text"
    # token hashes by default
    docs2 = [np.array([0, 4, 5]), np.array([0, 4, 5]), np.array([0, 9])]
    p2 = sample_population(docs2, per_stratum=None, exclude={token_hash([0, 9])})
    assert p2.indices.tolist() == [0] and p2.hash_kind == "token"
    p3 = sample_population(docs2, per_stratum=None, drop_internal_duplicates=False)
    assert p3.indices.tolist() == [0, 1, 2] and p3.hash_kind == "none"


def test_population_input_errors() -> None:
    with pytest.raises(ValueError, match="documents is empty"):
        sample_population([])
    with pytest.raises(TypeError, match="documents must be a sequence"):
        sample_population(iter([[0, 1]]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="per_stratum must be an int >= 1 or None, got 0"):
        sample_population([[0, 1]], per_stratum=0)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        sample_population([[0, 1]], seed=-1)
    with pytest.raises(ValueError, match="one entry per document"):
        sample_population([[0, 1]], hashes=["a", "b"])
    with pytest.raises(ValueError, match=r"documents\[1\] is empty"):
        sample_population([[0, 1], []])
    with pytest.raises(TypeError, match=r"documents\[0\] must hold integer token ids"):
        sample_population([[0.5, 1.0]])
    with pytest.raises(ValueError, match="strictly increasing"):
        sample_population([[0, 1]], boundaries=(10, 5))
    with pytest.raises(ValueError, match="stratum must be one of"):
        sample_population([[0, 1]]).stratum_of("2–3")


def test_population_check_catches_corruption() -> None:
    import dataclasses

    pop = sample_population(docs_with_lengths([10, 300, 3000]), per_stratum=None)
    pop._check()
    with pytest.raises(AssertionError):
        dataclasses.replace(pop, eligible=(9, 9, 9, 9, 9, 9, 9, 9))._check()
    with pytest.raises(AssertionError):
        dataclasses.replace(pop, strata=pop.strata[::-1])._check()


def test_support_statement_links_training_and_official_audits() -> None:
    # training: R = 8, B = 4; the three longest sources are protected and never start
    train = [3, 40, 5, 2, 6, 4, 50, 3, 5, 2] * 2 + [60]
    agg = audit_lengths(train, capacity=8, min_buffer=4, refill=2, policy="discard",
                        ledger_kwargs={"boundaries": (8, 16, 45)})
    pop = sample_population(docs_with_lengths([3, 7, 30, 44, 70]), per_stratum=None, boundaries=(8, 45))
    official = evaluation_population([3, 40, 5, 2, 6, 4] * 4, capacity=8, min_buffer=3, refill=2, targets=21,
                                     prefixes=(), boundaries=(8, 16, 45))
    sup = support_statement(pop, training=agg, official=official)
    assert sup.labels == ("1–8", "9–45", ">45")
    assert sup.training_arrived is not None and sup.training_started is not None
    assert sup.training_arrived[2] == 3 and sup.training_started[2] == 0
    assert sup.never_started == (">45",)
    assert sup.official_zero_inclusion == ("9–45",)
    text = sup.statement
    assert "never started a source of stratum >45 (0 of 3 arrived)" in text
    assert "scores no source of stratum 9–45" in text
    assert sup.to_dict()["statement"] == text
    bare = support_statement(pop)
    assert "no support statement" in bare.statement


def test_support_statement_needs_refining_strata() -> None:
    agg = audit_lengths([3, 40, 5, 2, 6], capacity=8, min_buffer=2, refill=2,
                        ledger_kwargs={"boundaries": (8, 16)})
    pop = sample_population(docs_with_lengths([3, 30]), per_stratum=None, boundaries=(10,))
    with pytest.raises(ValueError, match=r"boundaries \[10\] are not among"):
        support_statement(pop, training=agg)


def test_population_fingerprint_follows_the_chosen_tokens() -> None:
    docs = docs_with_lengths([10, 300, 3000, 40])
    a = sample_population(docs, per_stratum=None)
    assert a.fingerprint() == sample_population(docs, per_stratum=None).fingerprint()
    assert a.to_dict()["sources_sha256"] == a.fingerprint()
    docs[2] = docs[2].copy()
    docs[2][1500] += 1
    assert sample_population(docs, per_stratum=None).fingerprint() != a.fingerprint()
