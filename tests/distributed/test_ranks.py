"""Per-rank audits without Dask: the merge's laws, and agreement with a naive serial replay."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory import feed_all
from packing_theory.audit import Ledger
from packing_theory.corpus import default_lengths, rank_stream, rank_stream_from_parquet
from packing_theory.distributed import (
    CensusOptions,
    ParquetSource,
    RanksSummary,
    RankSummary,
    RowGroups,
    audit_ranks,
    census_row_groups,
    length_row_groups,
    open_runner,
    run_census,
)
from packing_theory.engine.policies import PackerConfig
from packing_theory.engine.replay import make_packer
from tests.distributed_helpers import make_parquet


@st.composite
def rank_summaries(draw: st.DrawFn) -> list[RankSummary]:
    """Summaries of all ranks of one world (random counts and start rows)."""
    world = draw(st.integers(1, 7))
    out = []
    for r in range(world):
        rows = draw(st.integers(0, 50))
        starts = draw(st.lists(st.integers(0, rows), max_size=30))
        docs = len(starts) + draw(st.integers(0, 10))
        out.append(RankSummary.from_counts(rank=r, world_size=world, policy="discard", documents=docs,
                                           tokens=docs * 3, rows=rows, start_rows=starts,
                                           distinct_started=len(starts), settings=(("capacity", 8),)))
    return out


def fold(parts: list[RankSummary], world: int) -> RanksSummary:
    acc = RanksSummary.empty(world, "discard", (("capacity", 8),))
    for p in parts:
        acc = acc.merge(RanksSummary.of(p))
    return acc


@given(rank_summaries(), st.randoms(use_true_random=False))
def test_merge_is_associative_and_commutative(ranks: list[RankSummary], rnd: object) -> None:
    world = ranks[0].world_size
    reference = fold(ranks, world)
    reference._check()
    shuffled = list(ranks)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    cuts = sorted(rnd.sample(range(len(shuffled) + 1), k=min(3, len(shuffled) + 1)))  # type: ignore[attr-defined]
    groups = [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]
    partials = [fold(g, world) for g in groups]
    rnd.shuffle(partials)  # type: ignore[attr-defined]
    merged = RanksSummary.empty(world, "discard", (("capacity", 8),))
    for p in partials:
        merged = p.merge(merged)
    assert merged == reference and merged.complete
    assert merged.to_dict() == reference.to_dict()
    if len(partials) >= 3:
        a, b, c = partials[:3]
        assert a.merge(b).merge(c) == a.merge(b.merge(c))
    assert reference.started_any == sum(r.started for r in ranks)
    m = min(r.rows for r in ranks)
    assert reference.min_rows == m
    assert reference.started_at_min_rows == sum(int(r.starts_per_row[:m].sum()) for r in ranks)


def test_merge_refuses_overlaps_and_other_worlds() -> None:
    a = RankSummary.from_counts(rank=0, world_size=2, policy="discard", documents=2, tokens=4, rows=1,
                                start_rows=[0], distinct_started=1)
    b = RankSummary.from_counts(rank=0, world_size=3, policy="discard", documents=2, tokens=4, rows=1,
                                start_rows=[0], distinct_started=1)
    with pytest.raises(ValueError, match=r"rank\(s\) \[0\] appear in both"):
        RanksSummary.of(a).merge(RanksSummary.of(a))
    with pytest.raises(ValueError, match="different world_size: 2 and 3"):
        RanksSummary.of(a).merge(RanksSummary.of(b))
    with pytest.raises(TypeError, match="other must be a RanksSummary"):
        RanksSummary.of(a).merge(a)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="world_size must be >= 1, got 0"):
        RanksSummary.empty(0, "discard")
    with pytest.raises(ValueError, match=r"start_rows must lie in 0\.\.rows=1, got 5\.\.5"):
        RankSummary.from_counts(rank=0, world_size=1, policy="discard", documents=2, tokens=4, rows=1,
                                start_rows=[5], distinct_started=1)
    empty = RanksSummary.empty(2, "discard")
    assert empty.min_rows is None and empty.started_at_min_rows == 0 and not empty.complete


def naive_rank(lengths: np.ndarray, cfg: PackerConfig) -> tuple[int, int, int, np.ndarray]:
    """Rows, started occurrences, distinct sources started, and the sorted start rows, from the
    reference engine and the ledger's own first-target column (every placement holds a target when no
    document has length 1)."""
    led = Ledger.for_packer(cfg)
    feed_all(make_packer("reference", cfg).events(lengths), led)
    agg = led.result()
    first = led.first_targets()
    return (agg.rows, agg.started_sources, agg.distinct_sources_started,
            np.sort(first[first >= 0] // (cfg.capacity - 1)))


def test_ranks_equal_a_naive_serial_replay_of_each_rank() -> None:
    lengths = np.maximum(default_lengths(seed=0)[:6000], 2)
    cfg = PackerConfig(capacity=2049, min_buffer=40, rows=400, exhausted="drain")
    groups = [length_row_groups(lengths, 256)]
    summaries = audit_ranks(lengths, 3, cfg, policies=["discard", "continue"], row_group_size=256)
    for s in summaries:
        s._check()
        assert s.complete and s.identity_holds and s.documents == lengths.size
        for r in s.ranks:
            stream = rank_stream(groups, r.rank, 3)
            rows, started, distinct, start_rows = naive_rank(
                stream.lengths, replace(cfg, policy=s.policy, refill=stream.refill))
            assert (r.rows, r.started, r.distinct_started) == (rows, started, distinct)
            assert np.array_equal(r.starts_per_row, np.bincount(start_rows, minlength=r.rows + 1))
            assert r.documents == stream.lengths.size and r.row_groups == len(stream.row_groups)
    in_processes = audit_ranks(lengths, 3, cfg, policies=["discard", "continue"], row_group_size=256,
                               workers=2)
    assert in_processes == summaries


def test_uneven_ranks_truncate_to_the_shortest(tmp_path: Path) -> None:
    lengths = np.full(10 * 64, 100, dtype=np.int64)
    cfg = PackerConfig(capacity=257, min_buffer=8, exhausted="drain")
    (s,) = audit_ranks(lengths, 4, cfg, row_group_size=64)  # 10 groups: ranks 0, 1 get 3, ranks 2, 3 get 2
    assert [r.documents for r in s.ranks] == [192, 192, 128, 128]
    assert s.min_rows == min(r.rows for r in s.ranks) < max(r.rows for r in s.ranks)
    assert s.started_at_min_rows < sum(r.started for r in s.ranks)
    assert s.started_at_min_rows == sum(r.started_within(s.min_rows) for r in s.ranks)


def test_parquet_ranks_read_real_row_groups(tmp_path: Path) -> None:
    files = make_parquet(str(tmp_path), rows=150, row_group_size=25)
    cfg = PackerConfig(capacity=129, min_buffer=8, exhausted="drain")
    (s,) = audit_ranks(ParquetSource(tuple(files), "whitespace"), 3, cfg)
    for r in s.ranks:
        stream = rank_stream_from_parquet(files, "whitespace", r.rank, 3)  # type: ignore[arg-type]
        assert r.documents == stream.lengths.size and r.row_groups == len(stream.row_groups) == 4
        rows, started, _, _ = naive_rank(stream.lengths, replace(cfg, refill=stream.refill))
        assert (r.rows, r.started) == (rows, started)


def test_audit_ranks_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="world_size must be >= 1, got 0"):
        audit_ranks(np.array([3, 4]), 0)
    with pytest.raises(ValueError, match=r"streaming policies .* got 'trl-bfd'"):
        audit_ranks(np.array([3, 4]), 1, policies=["trl-bfd"])
    with pytest.raises(ValueError, match="row_group_size must be >= 1, got 0"):
        audit_ranks(np.array([3, 4]), 1, row_group_size=0)
    with pytest.raises(ValueError, match="rank 1 of world_size 2 receives no documents"):
        audit_ranks(np.array([3, 4]), 2, row_group_size=2)
    with pytest.raises(ValueError, match=r"ParquetSource\.paths is empty"):
        ParquetSource(())


def test_census_row_groups_replay_like_the_parquet_files(tmp_path: Path) -> None:
    files = make_parquet(str(tmp_path), rows=130, row_group_size=20)
    run_census(files, CensusOptions("parquet", "whitespace"), tmp_path / "c")
    groups = census_row_groups(tmp_path / "c")
    assert [len(f) for f in groups] == [7, 7] and [g.size for g in groups[0]] == [20] * 6 + [10]
    cfg = PackerConfig(capacity=129, min_buffer=8, exhausted="drain")
    from_census = audit_ranks(RowGroups(groups), 3, cfg)
    from_parquet = audit_ranks(ParquetSource(tuple(files), "whitespace"), 3, cfg)
    assert from_census == from_parquet
    with pytest.raises(ValueError, match="is not complete"):
        census_row_groups(tmp_path)
    with pytest.raises(ValueError, match=r"RowGroups\.files is empty"):
        RowGroups([])


def test_compiled_engine_batches_give_the_same_ranks() -> None:
    from packing_theory.engine.compiled import compiled_available

    if not compiled_available():
        pytest.skip("the compiled engine needs numba: pip install 'packing-theory[fast]'")
    lengths = default_lengths(seed=0)[:20000]
    cfg = PackerConfig(min_buffer=100, rows=900, exhausted="drain")
    fast = audit_ranks(lengths, 3, cfg, policies=["discard", "continue"], row_group_size=512)
    compiled = audit_ranks(lengths, 3, cfg, policies=["discard", "continue"], row_group_size=512,
                           engine="compiled")
    assert [s.to_dict()["ranks"] for s in fast] == [s.to_dict()["ranks"] for s in compiled]
    for a, b in zip(fast, compiled, strict=True):
        assert [r.starts_per_row.tolist() for r in a.ranks] == [r.starts_per_row.tolist() for r in b.ranks]


def test_rank_streams_are_built_when_their_task_is_submitted() -> None:
    from packing_theory.distributed.executors import LazyItems

    built: list[int] = []
    items = LazyItems(3, lambda i: (built.append(i) or i, 2))
    got: dict[int, int] = {}
    with open_runner("local", workers=1) as runner:
        runner.run(pow, items, on_result=got.__setitem__)
    assert got == {0: 0, 1: 1, 2: 4} and built == [0, 1, 2]
    with pytest.raises(IndexError, match="task index 3 out of range for 3 tasks"):
        items[3]


def naive_row_tokens(lengths: np.ndarray, cfg: PackerConfig) -> np.ndarray:
    """Source tokens per row from the reference engine's placement events, one event at a time."""
    from packing_theory.engine.events import Placement

    per: dict[int, int] = {}
    for ev in make_packer("reference", cfg).events(lengths):
        if isinstance(ev, Placement):
            per[ev.row] = per.get(ev.row, 0) + ev.length - int(ev.bos_inserted)
    out = np.zeros(max(per, default=-1) + 1, np.int64)
    for row, n in per.items():
        out[row] = n
    return out


@pytest.mark.parametrize("policy", ["discard", "requeue-bos"])
def test_tokens_trained_in_lockstep_equal_a_naive_count_of_placements(policy: str) -> None:
    """Each rank's tokens per row are its placements' source tokens (an inserted BOS is not one); what the
    ranks train in lockstep is the sum of their first ``min_rows`` rows."""
    lengths = np.maximum(default_lengths(seed=1)[:3000], 2)
    cfg = PackerConfig(capacity=257, min_buffer=24, exhausted="stop", policy=policy)
    (s,) = audit_ranks(lengths, 3, cfg, policies=[policy], row_group_size=200)
    groups = [length_row_groups(lengths, 200)]
    m = s.min_rows
    assert m is not None and m < max(r.rows for r in s.ranks)
    expected = 0
    for r in s.ranks:
        stream = rank_stream(groups, r.rank, 3)
        naive = naive_row_tokens(stream.lengths, replace(cfg, refill=stream.refill))
        assert r.tokens_per_row is not None
        assert np.array_equal(r.tokens_per_row[: naive.size], naive[: r.rows + 1])
        assert r.trained_within(m) == int(naive[:m].sum())
        expected += int(naive[:m].sum())
    assert s.trained_at_min_rows == expected > 0
    assert s.to_dict()["global"]["trained_tokens_at_min_rows"] == expected
    bare = RankSummary.from_counts(rank=0, world_size=1, policy=policy, documents=2, tokens=4, rows=1,
                                   start_rows=[0], distinct_started=1)
    assert bare.trained_within(1) is None and RanksSummary.of(bare).trained_at_min_rows is None
