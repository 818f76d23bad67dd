"""Certificate files, their comparison, resume verification gaps, data-index fingerprints, rank checks."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from packing_theory.adapters import LoaderState
from packing_theory.errors import InputError
from packing_theory.peers.megatron import megatron_index
from packing_theory.training import (
    CertificateFile,
    Schedule,
    certify,
    compare_certificates,
    compare_ranks,
    index_fingerprint,
    verify_resume,
)
from packing_theory.training.certificates import ChainDivergence
from tests.training.simulate import random_docs, replay_rows, run_ledger, step_batches

DOCS = random_docs(80, seed=2)


def _write(path: Path, blocks: np.ndarray, first: int = 0) -> None:
    cf = CertificateFile.create(path, blocks.shape[1], first)
    for b in blocks:
        cf.append(b)
        cf._check()
    cf.close()
    with CertificateFile.open(path) as again:
        again._check()


def test_compare_names_the_first_differing_step_and_rank(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=(300, 3, 32), dtype=np.uint8)
    _write(tmp_path / "a", a)
    _write(tmp_path / "b", a)
    assert compare_certificates(tmp_path / "a", tmp_path / "b", block_steps=7) is None
    b = a.copy()
    b[123, 2, 5] ^= 1
    b[200, 0, 0] ^= 1
    _write(tmp_path / "b", b)
    assert compare_certificates(tmp_path / "a", tmp_path / "b", block_steps=7) == ChainDivergence(123, 2,
                                                                                                 "differs")
    _write(tmp_path / "c", a[:250])
    assert compare_certificates(tmp_path / "a", tmp_path / "c") == ChainDivergence(250, 0, "missing in B")
    _write(tmp_path / "d", a[1:], first=1)
    assert compare_certificates(tmp_path / "d", tmp_path / "a") == ChainDivergence(0, 0, "missing in A")
    _write(tmp_path / "e", a[:, :2])
    with pytest.raises(InputError, match="certificates for 3 and 2 ranks cannot be compared"):
        compare_certificates(tmp_path / "a", tmp_path / "e")


def test_damaged_certificate_files_are_refused(tmp_path: Path) -> None:
    _write(tmp_path / "a", np.zeros((4, 2, 32), np.uint8))
    data = (tmp_path / "a").read_bytes()
    (tmp_path / "t").write_bytes(data[:-1])
    with pytest.raises(InputError, match="truncated or not closed"):
        CertificateFile.open(tmp_path / "t")
    (tmp_path / "n").write_bytes(b"nope")
    with pytest.raises(InputError, match="is not a certificate file"):
        CertificateFile.open(tmp_path / "n")
    cf = CertificateFile.create(tmp_path / "x", 2)
    with pytest.raises(InputError, match=r"a certificate block must be \(2, 32\), got \(3, 32\)"):
        cf.append(np.zeros((3, 32), np.uint8))
    cf.close()


def test_verify_resume_names_a_step_no_ledger_recorded(tmp_path: Path) -> None:
    rows = replay_rows("trl-bfd", DOCS, 24)
    sched = Schedule(rows_per_step=2)
    whole, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 0, range(10)))
    certify(whole, tmp_path / "ref")
    first, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 0, range(4)))
    late, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 0, range(6, 10)))
    check = verify_resume(tmp_path / "ref", first, late)
    assert check.divergence == ChainDivergence(4, 0, "missing from the ledgers")
    short, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 0, range(4, 8)))
    assert verify_resume(tmp_path / "ref", first, short).divergence == ChainDivergence(
        8, 0, "missing from the ledgers")
    ok, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 0, range(4, 10)))
    res = verify_resume(tmp_path / "ref", first, ok)
    assert res.equal and res.steps == 10 and res.to_dict()["equal"] is True
    empty, _ = run_ledger(DOCS, iter(()))
    with pytest.raises(InputError, match="the resumed ledger records no step"):
        verify_resume(tmp_path / "ref", first, empty)


def test_certify_fills_steps_no_rank_recorded(tmp_path: Path) -> None:
    rows = replay_rows("trl-bfd", DOCS, 24)
    sched = Schedule(world_size=2, rows_per_step=1)
    r0, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 0, range(0, 3)), rank=0, world_size=2)
    r1, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, sched, 1, range(5, 6)), rank=1, world_size=2)
    assert certify([r0, r1], tmp_path / "c") == 6
    with CertificateFile.open(tmp_path / "c") as cf:
        (_, block), = list(cf.blocks())
    recorded = block.any(axis=2)
    assert recorded.tolist() == [[True, False]] * 3 + [[False, False]] * 2 + [[False, True]]


def _state(**change: object) -> LoaderState:
    base: dict[str, object] = dict(policy={"name": "discard"}, rows=0, batches=0, events=0, epoch=1,
                                   last_source=-1, engine=None, cursor=None, documents={"n_docs": 3},
                                   extra={"rank": 0})
    base.update(change)
    return LoaderState(**base)  # type: ignore[arg-type]


def test_index_fingerprints() -> None:
    sizes = np.array([5, 3, 9, 2, 7])
    seed1, seed1_again, seed2 = (index_fingerprint(megatron_index(sizes, 4, s, None)) for s in (1, 1, 2))
    assert seed1 == seed1_again != seed2
    assert index_fingerprint(_state()) == index_fingerprint(_state(extra={"rank": 1}))  # rank-specific
    assert index_fingerprint(_state()) != index_fingerprint(_state(policy={"name": "continue"}))
    assert index_fingerprint(_state()) != index_fingerprint(_state(documents={"n_docs": 4}))
    assert index_fingerprint([1, 2, 3]) == index_fingerprint(np.array([1, 2, 3], dtype=np.int32))
    assert index_fingerprint([1, 2, 3]) != index_fingerprint([1, 3, 2])
    assert index_fingerprint({"a": 1}) != index_fingerprint({"a": 2})
    with pytest.raises(InputError, match="cannot fingerprint a float"):
        index_fingerprint(1.5)
    with pytest.raises(InputError, match="must hold integers, got dtype float64"):
        index_fingerprint([1.5, 2.0])


def test_compare_ranks() -> None:
    agree = compare_ranks({0: "a", 1: "a"})
    assert agree.agree and "all 2 ranks hold the same data index" in agree.headline()
    bad = compare_ranks(["a", "b", "a", "c"])
    assert bad.differing == (1, 3) and "ranks 1, 3 hold another data index than rank 0" in bad.headline()
    assert bad.to_dict()["differing"] == [1, 3]
    with pytest.raises(InputError, match=r"ranks 0..n-1, got ranks \[0, 2\]"):
        compare_ranks({0: "a", 2: "a"})
    with pytest.raises(InputError, match="no fingerprint given"):
        compare_ranks([])


def test_certify_a_file_object_and_a_path_alike(tmp_path: Path) -> None:
    rows = replay_rows("trl-bfd", DOCS, 24)
    buf, _ = run_ledger(DOCS, step_batches(rows, DOCS, 24, Schedule(), 0, range(5)))
    (tmp_path / "l.ptl").write_bytes(buf.getvalue())
    certify(io.BytesIO(buf.getvalue()), tmp_path / "a")
    certify(tmp_path / "l.ptl", tmp_path / "b")
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
