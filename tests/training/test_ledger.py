"""The observing ledger: the token path equals our records' pieces, the chain, resume state, errors."""

from __future__ import annotations

import io
from typing import Any

import pytest

from packing_theory.adapters import pack_rows
from packing_theory.errors import InputError, InputTypeError
from packing_theory.training import TrainingLedger, iter_steps
from packing_theory.training.batch import batch_rows
from packing_theory.training.format import FLAG_AMBIGUOUS, FLAG_BOS_INSERTED
from packing_theory.training.ledger import CHAIN_SEED, step_digest
from tests.training.simulate import batch_of, random_docs, replay_rows

DOCS = random_docs(120, seed=5, low=2, high=45, vocab=10**9)
R = 24


def content(span: tuple[int, ...]) -> list[int]:
    doc, start, length, _, flags = span
    if flags & FLAG_BOS_INSERTED:
        return [int(DOCS[doc][0]), *DOCS[doc][start : start + length - 1].tolist()]
    return DOCS[doc][start : start + length].tolist()


def _spans(buf: io.BytesIO) -> list[list[tuple[int, ...]]]:
    return [[tuple(s) for s in rec.spans.tolist()] for rec in iter_steps(buf)]


@pytest.mark.parametrize(("policy", "options"), [
    ("trl-bfd", {}), ("trl-wrapped", {}), ("continue", {"min_buffer": 6, "refill": 3}),
    ("requeue-bos", {"min_buffer": 6, "refill": 3}), ("segment-first", {"min_buffer": 6, "refill": 3}),
    ("megatron-gpt", {"num_samples": 30}), ("torchtune-split", {}),
])
@pytest.mark.parametrize("layout", ["hf", "padding_free"])
def test_token_path_equals_the_records(policy: str, options: dict[str, Any], layout: str) -> None:
    """The same rows observed by content (any library's batch) and through our pieces give one ledger."""
    rows = replay_rows(policy, DOCS, R, **options)[:40]
    by_tokens, by_pieces = io.BytesIO(), io.BytesIO()
    a = TrainingLedger(by_tokens, DOCS, k=3, stride=4, chunk_spans=50)
    b = TrainingLedger(by_pieces, DOCS, k=3, stride=4, chunk_spans=50)
    for step in range(0, len(rows), 4):
        batch = pack_rows(rows[step : step + 4], DOCS, R)
        a.observe(batch_of(batch, layout))
        b.observe(batch)
        for ledger in (a, b):
            ledger.end_step()
            ledger._check()
    a.close()
    b.close()
    for got, want in zip(_spans(by_tokens), _spans(by_pieces), strict=True):
        for g, w in zip(got, want, strict=True):
            if g[4] & FLAG_AMBIGUOUS:  # several documents hold it: the same tokens
                assert content(g) == content(w)
                assert g[3] == w[3]
            else:
                assert g == w


def test_the_chain_and_resume_state() -> None:
    rows = replay_rows("trl-bfd", DOCS, R)
    batches = [batch_of(pack_rows(rows[i : i + 2], DOCS, R), "hf") for i in range(0, 20, 2)]
    whole = TrainingLedger(io.BytesIO(), DOCS)
    digests = []
    for b in batches:
        whole.observe(b)
        digests.append(whole.end_step())
    # recomputed from the file: the same chain
    buf = io.BytesIO()
    again = TrainingLedger(buf, DOCS)
    for b in batches:
        again.observe(b)
        again.end_step()
    again.close()
    d = CHAIN_SEED
    for rec, want in zip(iter_steps(buf), digests, strict=True):
        d = step_digest(d, rec.spans)
        assert d == want
    # interrupted after 4 steps, resumed from its state: the chain continues
    first = TrainingLedger(io.BytesIO(), DOCS)
    for b in batches[:4]:
        first.observe(b)
        first.end_step()
    state = first.state_dict()
    second = TrainingLedger(io.BytesIO(), DOCS)
    second.load_state_dict(state)
    assert second.next_step == 4
    for b in batches[4:]:
        second.observe(b)
        last = second.end_step()
    assert last == digests[-1]
    second._check()


def test_empty_steps_and_explicit_numbers() -> None:
    buf = io.BytesIO()
    ledger = TrainingLedger(buf, DOCS)
    ledger.end_step(3)
    with pytest.raises(InputError, match="step must be >= 4, got 2"):
        ledger.end_step(2)
    ledger.close()
    (rec,) = list(iter_steps(buf))
    assert (rec.step, rec.consumed, rec.spans.size) == (3, False, 0)


def test_bad_batches_and_states() -> None:
    ledger = TrainingLedger(io.BytesIO(), DOCS, rank=1, world_size=2)
    with pytest.raises(InputError, match="batch has no 'labels' or 'targets'"):
        ledger.observe({"input_ids": [[0, 1]]})
    with pytest.raises(InputError, match=r"batch\['labels'\] has shape \(1, 3\), input_ids \(1, 2\)"):
        ledger.observe({"input_ids": [[0, 1]], "labels": [[0, 1, 2]]})
    with pytest.raises(InputTypeError, match=r"mapping .* or an \(inputs, targets\) tuple"):
        ledger.observe(7)
    with pytest.raises(InputError, match="not a packing-theory/training-ledger-state"):
        ledger.load_state_dict({"format": "x"})
    other = TrainingLedger(io.BytesIO(), DOCS, rank=0).state_dict()
    with pytest.raises(InputError, match="ledger state of rank 0 loaded into rank 1"):
        ledger.load_state_dict(other)
    foreign = TrainingLedger(io.BytesIO(), random_docs(5), rank=1, world_size=2).state_dict()
    with pytest.raises(InputError, match="another corpus"):
        ledger.load_state_dict(foreign)
    with pytest.raises(InputError, match="rank must be <= 1, got 2"):
        TrainingLedger(io.BytesIO(), DOCS, rank=2, world_size=2)


def test_padding_and_masked_counts() -> None:
    buf = io.BytesIO()
    ledger = TrainingLedger(buf, [[0, 5, 6, 7], [0, 8, 9]], k=2, pad_id=1)
    ledger.observe({"input_ids": [[0, 5, 6, 7, 0, 8, 9, 1, 1]],
                    "labels": [[-100, 5, -100, 7, -100, 8, 9, -100, -100]]})
    ledger.observe(([[0, 5, 6, 7]], [[5, 6, 7, -100]]))  # shifted, the last target masked: 4 positions
    ledger.end_step()
    ledger.close()
    (rec,) = list(iter_steps(buf))
    for view in batch_rows({"input_ids": [[0, 5, 6, 7, 0, 8, 9, 1, 1]],
                            "labels": [[-100, 5, -100, 7, -100, 8, 9, -100, -100]]}, pad_id=1):
        view._check()
        assert view.pad.tolist() == [False] * 7 + [True] * 2
    assert rec.rows[["micro", "positions", "padding", "masked", "targets"]].tolist() == [
        (0, 9, 2, 2, 4), (1, 4, 0, 0, 3)]
    assert rec.spans[["doc", "start", "length", "targets"]].tolist() == [
        (0, 0, 4, 2), (1, 0, 3, 2), (0, 0, 4, 3)]
