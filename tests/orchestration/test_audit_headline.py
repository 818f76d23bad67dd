"""The audit's headline states, per packer, the quantity that differs between them; its shares stand beside
their own quantities; its counts say what they count (documents or occurrences, one stream or the ranks)."""

from __future__ import annotations

import numpy as np

from packing_theory.engine.horizon import Budget
from packing_theory.orchestration import Settings, audit_corpus
from packing_theory.orchestration.answer import RANKED, documents_not_trained
from packing_theory.orchestration.audit_report import rank_headline
from packing_theory.reporting.model import percent


def _lengths(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(4, 1.2, n).astype(np.int64) + 1, 1, 3000)


def test_each_packer_is_headlined_by_its_documents_with_no_token_trained() -> None:
    """An offline packer that never reads the late documents has them "never reached", not "never
    started": the headline's per-packer figure is the count compare ranks by, whatever the label."""
    lengths = _lengths(5, 600)
    packers = ["discard", "trl-bfd", "foundry-concat-wrap"]
    res = audit_corpus(lengths, packers, Settings(capacity=65, min_buffer=16, refill=4), permutations=0,
                       horizon=Budget("tokens", 6000))
    runs = res.measurement.runs
    headline = res.headline()
    assert RANKED[0].label == "documents with no token trained"
    said = headline.split(f"; {RANKED[0].label}: ")[1].split(", ")
    assert len(said) == len(runs)
    for run, words in zip(runs, said, strict=True):
        nt = run.never_trained
        count = documents_not_trained(run)
        held = nt.never_started.tokens + nt.never_reached.tokens + nt.partial_row_only_tokens
        assert words == f"{run.packer} {count:,} ({percent(held / nt.offered_tokens)} of the tokens)"
    # the quantity differs from "never started" where a packer never read a document
    assert any(r.never_trained.never_reached.documents for r in runs)
    assert any(documents_not_trained(r) != r.never_trained.never_started.documents for r in runs)
    assert "never started:" not in headline and "the others never started" not in headline


def test_with_several_passes_the_headline_counts_occurrences_and_distinct_documents() -> None:
    lengths = _lengths(7, 400)
    res = audit_corpus(lengths, ["discard"], Settings(capacity=65, min_buffer=16, refill=4, passes=2),
                       permutations=0, documents=True)
    (run,) = res.measurement.runs
    table = run.documents
    assert table is not None
    started = np.asarray(table.column("started"))
    arrived = np.asarray(table.column("occurrence")) >= 0
    doc = np.asarray(table.column("document"))
    never = arrived & ~started
    distinct = len(set(doc[never].tolist()) - set(doc[started].tolist()))
    nt = run.never_trained
    assert nt.never_started.documents == int(never.sum()) > distinct == nt.never_started_distinct > 0
    assert (f"{nt.never_started.documents:,} occurrences never started (" in res.headline())
    assert f"; {distinct:,} distinct documents never started in any pass)" in res.headline()
    assert " documents never started" not in res.headline().split("distinct")[0]


def test_one_pass_counts_documents_and_no_distinct_count() -> None:
    res = audit_corpus(_lengths(7, 400), ["discard"], Settings(capacity=65, min_buffer=16, refill=4),
                       permutations=0)
    nt = res.measurement.runs[0].never_trained
    assert nt.never_started_distinct is None
    assert f"{nt.never_started.documents:,} documents never started (" in res.headline()


def test_the_theorem_is_not_applied_when_the_buffer_never_held_b() -> None:
    lengths = _lengths(3, 90)  # fewer documents than B: no selection is ever made
    res = audit_corpus(lengths, ["discard"], Settings(capacity=65, min_buffer=100, refill=4),
                       permutations=0)
    headline = res.headline()
    assert "the theorem does not apply: the buffer never held B = 100 documents" in headline
    assert "predicts" not in headline
    ok = audit_corpus(lengths, ["discard"], Settings(capacity=65, min_buffer=16, refill=4), permutations=0)
    assert "the theorem predicts ≥" in ok.headline()


def test_stratum_retention_counts_trained_tokens_only() -> None:
    """The unfinished row's tokens are emitted, never trained: each stratum's retention leaves them out,
    and the strata's trained tokens add up to the packer's."""
    res = audit_corpus(_lengths(36, 500), ["discard"], Settings(capacity=65, min_buffer=16, refill=4),
                       permutations=0)
    (run,) = res.measurement.runs
    nt, strata = run.never_trained, run.aggregates.strata
    assert nt.partial_row.tokens > 0
    assert sum(s.partial_row_tokens for s in strata) == nt.partial_row.tokens
    assert sum(s.trained_tokens for s in strata) == nt.trained_tokens
    hit = [s for s in strata if s.partial_row_tokens]
    assert hit and all(s.retention == (s.emitted_tokens - s.partial_row_tokens) / s.arrived_tokens
                       and s.retention < s.emitted_tokens / s.arrived_tokens for s in hit)


def test_the_rank_headline_says_what_lockstep_ranks_train() -> None:
    ranks = {"world_size": 2, "passes": 1, "policies": {"discard": {
        "global": {"documents": 4400, "tokens": 7559245, "never_started_anywhere": 1998, "min_rows": 390,
                   "started_at_min_rows": 2014, "trained_tokens_at_min_rows": 1598220},
        "ranks": [{"rank": 0, "rows": 502}, {"rank": 1, "rows": 390}]}}}
    assert rank_headline(ranks) == (
        "with --world-size 2, discard trains 390 rows on each rank (ranks step in lockstep: rank 0 has 502, "
        "rank 1 has 390), 1,598,220 of the 7,559,245 tokens offered (21.1%); 2,386 of the 4,400 documents "
        "have no token trained then; 1,998 documents never started on any rank")
    assert rank_headline(None) == "" and rank_headline({"world_size": 2, "policies": {}}) == ""
