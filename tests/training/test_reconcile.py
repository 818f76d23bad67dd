"""Planted faults between the packer and the loss, each caught and named; no alarm on the correct run."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from packing_theory.audit.declared import DeclaredMixture
from packing_theory.corpus.labels import SourceLabels
from packing_theory.engine.events import Placement, Repeat
from packing_theory.errors import InputError, NotMeasured
from packing_theory.peers.megatron import megatron_index
from packing_theory.training import (
    CLASSES,
    CertificateFile,
    Schedule,
    certify,
    compare_ranks,
    index_fingerprint,
    reconcile,
    verify_resume,
)
from packing_theory.training.merge import iter_steps
from packing_theory.training.reconcile import _Coverage
from tests.training.simulate import random_docs, replay_rows, run_ledger, step_batches

DOCS = random_docs(300, seed=1, low=2, high=40)
R = 32


def first_span(rows: list[list[Any]]) -> tuple[int, int, int]:
    """The first document span of ``rows`` (written out from the events, not by the library's merge)."""
    ev = next(e for row in rows for e in row if type(e) in (Placement, Repeat))
    return ev.source, ev.start, ev.length


@pytest.mark.parametrize(("layout", "policy"), [("hf", "trl-bfd"), ("padding_free", "trl-bfd"),
                                               ("shifted", "discard"), ("hf", "continue")])
def test_correct_run_reconciles(layout: str, policy: str) -> None:
    opts = {} if policy.startswith("trl") else {"min_buffer": 8, "refill": 4}
    rows = replay_rows(policy, DOCS, R, **opts)
    sched = Schedule(rows_per_step=4)
    steps = range(len(rows) // 4)
    buf, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, steps, layout=layout, micro=2),
                        ignore_index=-1 if layout == "shifted" else -100, check=True)
    # nanochat predicts every position but a row's first; our records none of a piece's first positions
    unit = "row" if layout == "shifted" else "sequence"
    res = reconcile(buf, DOCS, policy, capacity=R, options=opts, schedule=sched, unit=unit)
    assert res.reconciled and res.exit_code == 0 and res.divergence is None
    assert res.records == len(steps) and res.differing == 0
    assert res.trained_mismatch == 0
    want: dict[int, int] = {}
    for row in rows[: 4 * len(steps)]:
        for e in row:
            if type(e) is Placement:
                first = e.offset == 0 if unit == "row" else True
                want[e.source] = want.get(e.source, 0) + e.length - first
    assert res.trained_by_document == dict(sorted(want.items()))
    assert set(res.never_trained) == {d for d, t in want.items() if t == 0}
    assert f"every step equals the {policy} replay" in res.headline()
    assert res.to_dict()["reconciled"] is True and "# Training reconciliation" in res.markdown()


def _resumed(resume_at: int, source: Any) -> tuple[io.BytesIO, io.BytesIO, list[list[Any]], Schedule]:
    rows = replay_rows("discard", DOCS, R, min_buffer=8, refill=4)
    sched = Schedule(rows_per_step=2)
    first, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, range(resume_at)))
    n = len(rows) // 2
    second, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, range(resume_at, n), source=source))
    return first, second, rows, sched


def test_resume_that_skips_a_batch_is_named() -> None:
    first, second, rows, sched = _resumed(5, lambda s: s + 1)
    res = reconcile([first, second], DOCS, "discard", capacity=R, options={"min_buffer": 8, "refill": 4},
                    schedule=sched)
    d = res.divergence
    assert d is not None and d.cls == "skipped" and (d.step, d.rank) == (5, 0)
    assert d.document == first_span([rows[r] for r in sched.rows(5, 0)])[0]
    assert res.exit_code == 1 and "skipped" in res.headline()


def test_resume_that_repeats_a_batch_is_named() -> None:
    first, second, rows, sched = _resumed(5, lambda s: s - 1)
    res = reconcile([first, second], DOCS, "discard", capacity=R, options={"min_buffer": 8, "refill": 4},
                    schedule=sched)
    d = res.divergence
    assert d is not None and d.cls == "duplicated" and (d.step, d.rank) == (5, 0)
    assert d.document == first_span([rows[r] for r in sched.rows(4, 0)])[0]


def test_certificates_name_the_first_step_of_a_bad_resume(tmp_path: Any) -> None:
    rows = replay_rows("discard", DOCS, R, min_buffer=8, refill=4)
    sched = Schedule(rows_per_step=2)
    n = len(rows) // 2
    whole, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, range(n)))
    ref = tmp_path / "ref.cert"
    assert certify(whole, ref) == n
    good_a, good_b, *_ = _resumed(5, None)
    assert verify_resume(ref, good_a, good_b).equal
    for source in (lambda s: s + 1, lambda s: s - 1):
        bad_a, bad_b, *_ = _resumed(5, source)
        check = verify_resume(ref, bad_a, bad_b)
        assert not check.equal and check.divergence is not None
        assert (check.resume_step, check.divergence.step, check.divergence.rank) == (5, 5, 0)
        assert "step 5 of rank 0 differs" in check.headline()


def _merged_spans(rows: list[list[Any]]) -> list[tuple[int, int, int]]:
    """Spans of consecutive rows, pieces of one document at consecutive offsets joined within a row."""
    out: list[tuple[int, int, int]] = []
    for row in rows:
        prev: tuple[int, int] | None = None
        for e in row:
            if type(e) not in (Placement, Repeat):
                prev = None
                continue
            if prev is not None and out and out[-1][0] == e.source and prev == (e.source, e.start):
                out[-1] = (e.source, out[-1][1], out[-1][2] + e.length)
            else:
                out.append((e.source, e.start, e.length))
            prev = (e.source, e.start + e.length)
    return out


def test_a_rank_with_another_shuffle_seed_is_named() -> None:
    opts = {"num_samples": 40}
    right = replay_rows("megatron-gpt", DOCS, R, seed=1234, **opts)
    wrong = replay_rows("megatron-gpt", DOCS, R, seed=99, **opts)
    sched = Schedule(world_size=2, rows_per_step=2)
    steps = range(10)
    l0, _ = run_ledger(DOCS, step_batches(right, DOCS, R, sched, 0, steps), rank=0, world_size=2)
    l1, _ = run_ledger(DOCS, step_batches(wrong, DOCS, R, sched, 1, steps), rank=1, world_size=2)
    res = reconcile([l0, l1], DOCS, "megatron-gpt", capacity=R, options={"seed": 1234, **opts},
                    schedule=sched)
    d = res.divergence
    assert d is not None and d.cls in CLASSES and (d.step, d.rank) == (0, 1)
    got = _merged_spans([wrong[r] for r in sched.rows(0, 1)])
    want = _merged_spans([right[r] for r in sched.rows(0, 1)])
    def tokens(span: tuple[int, int, int]) -> list[int]:
        return DOCS[span[0]][span[1] : span[1] + span[2]].tolist()

    i = next(i for i, (a, b) in enumerate(zip(got, want, strict=False)) if tokens(a) != tokens(b))
    assert d.observed is not None and tokens(d.observed) == tokens(got[i]) and d.expected == want[i]
    # before training: the ranks' Megatron indices disagree, and rank 1 is named
    lengths = DOCS.lengths()
    fps = [index_fingerprint(megatron_index(lengths, R - 1, seed, 40)) for seed in (1234, 99)]
    assert compare_ranks(fps).differing == (1,)
    # the correct pair of ranks reconciles
    l1_ok, _ = run_ledger(DOCS, step_batches(right, DOCS, R, sched, 1, steps), rank=1, world_size=2)
    assert reconcile([l0, l1_ok], DOCS, "megatron-gpt", capacity=R, options={"seed": 1234, **opts},
                     schedule=sched).reconciled


def test_a_collator_that_truncates_documents_is_named() -> None:
    rows = replay_rows("trl-bfd", DOCS, R)
    sched = Schedule(rows_per_step=4)
    steps = range(len(rows) // 4)

    def truncate(step: int, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if step < 3:
            return batch
        cut = batch["position_ids"] >= 5
        out = dict(batch)
        out["attention_mask"] = np.where(cut, 0, batch["attention_mask"])
        out["labels"] = np.where(cut, -100, batch["labels"])
        return out

    buf, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, steps), edit=truncate)
    res = reconcile(buf, DOCS, "trl-bfd", capacity=R, schedule=sched)
    d = res.divergence
    spans = _merged_spans([rows[r] for r in sched.rows(3, 0)])
    cut = next(s for s in spans if s[2] > 5)
    assert d is not None and d.cls == "truncated" and (d.step, d.rank, d.document) == (3, 0, cut[0])
    assert d.observed == (cut[0], 0, 5) and d.expected == cut


def test_fully_masked_examples_are_named_and_never_trained() -> None:
    rows = replay_rows("trl-bfd", DOCS, R)
    sched = Schedule(rows_per_step=4)
    steps = range(len(rows) // 4)
    lengths = DOCS.lengths()
    rng = np.random.default_rng(7)
    prompt = np.minimum(rng.integers(1, 12, size=len(DOCS)), lengths - 1)  # a completion survives...
    masked = rng.random(len(DOCS)) < 0.1
    prompt[masked] = lengths[masked]  # ...except where truncation left the prompt alone
    buf, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, steps, prompt=prompt))
    res = reconcile(buf, DOCS, "trl-bfd", capacity=R, schedule=sched)
    order = [(s, e.source) for s in steps for r in sched.rows(s, 0) for e in rows[r] if type(e) is Placement]
    first = next((s, doc) for s, doc in order if masked[doc] and lengths[doc] >= 2)
    d = res.divergence
    assert d is not None
    assert (d.cls, d.step, d.rank, d.document) == ("fully masked", first[0], 0, first[1])
    consumed = {doc for _, doc in order}
    assert set(res.never_trained) == {doc for doc in consumed if masked[doc] and lengths[doc] >= 2} | {
        doc for doc in consumed if lengths[doc] == 1}
    assert "fully masked" in res.markdown()


def test_shares_per_source_against_the_declared_mixture() -> None:
    rows = replay_rows("trl-bfd", DOCS, R)
    sched = Schedule(rows_per_step=4)
    steps = range(len(rows) // 4)
    buf, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, steps))
    names = ["web" if i % 3 else "code" for i in range(len(DOCS))]
    labels = SourceLabels.from_strings(names, origin="test")
    mix = DeclaredMixture.from_document({"alpha": {"web": 0.5, "code": 0.3, "books": 0.2}})
    res = reconcile(buf, DOCS, "trl-bfd", capacity=R, schedule=sched, labels=labels, mixture=mix,
                    unit="sequence")
    assert res.sources is not None and res.mixture is not None
    by = {s.source: s for s in res.sources}
    targets = {"web": 0, "code": 0}
    positions = {"web": 0, "code": 0}
    docs: dict[str, set[int]] = {"web": set(), "code": set()}
    for rec in iter_steps(buf):  # written out from the ledger's own spans
        for doc, length, t in zip(rec.spans["doc"].tolist(), rec.spans["length"].tolist(),
                                  rec.spans["targets"].tolist(), strict=True):
            targets[names[doc]] += t
            positions[names[doc]] += length
            docs[names[doc]].add(doc)
    assert {k: (by[k].targets, by[k].positions, by[k].documents) for k in targets} == {
        k: (targets[k], positions[k], len(docs[k])) for k in targets}
    assert all(s.targets == s.expected_targets for s in res.sources)  # the replay's, by the sequence rule
    reading = {x.source: x for x in res.mixture.documents.shares}
    consumed = len(docs["web"]) + len(docs["code"])
    assert reading["web"].share == pytest.approx(len(docs["web"]) / consumed)
    assert (reading["books"].count, reading["books"].declared) == (0, 0.2)
    assert res.mixture.documents.declared and not res.mixture.tokens.declared
    web = {x.source: x for x in res.mixture.tokens.shares}["web"]
    assert web.share == pytest.approx(positions["web"] / sum(positions.values()))
    md = res.markdown()
    assert "| books |" in md and "## Sources" in md and res.to_dict()["mixture"]["documents"]["declared"]


def test_coverage_keeps_disjoint_intervals() -> None:
    """The consumed-offsets record that decides duplicated / skipped, against a set of offsets."""
    cov = _Coverage()
    rng = np.random.default_rng(0)
    seen: dict[int, set[int]] = {}
    for _ in range(300):
        doc, start, length = int(rng.integers(0, 4)), int(rng.integers(0, 40)), int(rng.integers(1, 8))
        bos = int(rng.random() < 0.2 and start > 0)
        probe = (doc, int(rng.integers(0, 40)), int(rng.integers(1, 8)), 0, 0)
        want = bool(seen.get(doc, set()) & set(range(probe[1], probe[1] + probe[2])))
        assert cov.overlaps(probe) == want
        cov.add((doc, start, length, 0, bos))
        seen.setdefault(doc, set()).update(range(start, start + length - bos))
        cov._check()


def test_bad_inputs_are_refused() -> None:
    rows = replay_rows("trl-bfd", DOCS, R)
    sched = Schedule(rows_per_step=4)
    buf, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, range(2)))
    other = random_docs(10, seed=3)
    with pytest.raises(InputError, match="another corpus"):
        reconcile(buf, other, "trl-bfd", capacity=R, schedule=sched)
    two, _ = run_ledger(DOCS, step_batches(rows, DOCS, R, Schedule(world_size=2, rows_per_step=2), 1,
                                           range(2)), rank=1, world_size=2)
    with pytest.raises(InputError, match="rank 1, the schedule has world_size 1"):
        reconcile(two, DOCS, "trl-bfd", capacity=R)
    empty, _ = run_ledger(DOCS, iter(()))
    with pytest.raises(NotMeasured, match="no step"):
        reconcile(empty, DOCS, "trl-bfd", capacity=R)
    with pytest.raises(InputError, match="takes no option 'windows'"):
        reconcile(buf, DOCS, "trl-bfd", capacity=R, options={"windows": 3})


def test_certificate_file_round_trip(tmp_path: Any) -> None:
    rows = replay_rows("trl-bfd", DOCS, R)
    sched = Schedule(rows_per_step=4)
    buf, ledger = run_ledger(DOCS, step_batches(rows, DOCS, R, sched, 0, range(5)))
    path = tmp_path / "c.cert"
    assert certify(buf, path) == 5
    with CertificateFile.open(path) as cf:
        (first, block), = list(cf.blocks())
    assert first == 0 and block.shape == (5, 1, 32)
    assert bytes(block[-1, 0]) == ledger.digest  # the ledger's own chain, recomputed from its file
