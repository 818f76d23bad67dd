"""The natural-context assay and its prefix-region control (seed 000 §5.7) on a planted late-position effect.

Two synthetic models read the zone of the next target from the current
token (so they stay causal) and differ only at late source positions: the
intervention is better by ``DELTA`` nats at every target from position
``C - K + 1`` on, except in the final ``K`` targets, where it is better by
``DELTA - TAU`` only. The planted tail-minus-prefix interaction is therefore
``+TAU / ln 2`` BPB (one byte per token) against the prefix-region control,
while the complete beginning window, which holds ``C - K`` early targets
without any effect, dilutes the prefix delta and makes the full-window
diagnostic negative — the sign difference §5.7 warns about.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from packing_theory.evaluation import (
    NATURAL_CONTEXTS,
    WindowSpec,
    natural_context_assay,
    prefix_region_window,
    sample_population,
)
from packing_theory.evaluation.windows import natural_tail_window, scored_range, source_windows

R, C, K = 257, 256, 64  # seed 000's 2049, 2048, 512 scaled down by 8
ZONE = 1000  # ids per zone: early 1.., late-prefix, middle, final tail
DELTA, TAU = 0.30, 0.15
PLANTED = TAU / math.log(2)
TB = np.r_[0, np.ones(4 * ZONE, dtype=np.int64)]


def zone_of(p: np.ndarray, L: int) -> np.ndarray:
    """Zone of the target at source position ``p``: 0 early, 1 prefix region and on, 2 middle, 3 final K."""
    z = np.where(p >= C - K + 1, 1, 0)
    z = np.where(p > C, 2, z)
    return np.where(p >= L - K, 3, z)


def documents(seed: int, lengths: list[int]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for L in lengths:
        q = np.arange(L)
        ids = 1 + zone_of(q + 1, L) * ZONE + rng.integers(0, ZONE, size=L)  # token q announces target q + 1
        ids[0] = 0
        out.append(ids)
    return out


def models(seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    base = np.empty(4 * ZONE + 1)
    late = np.empty(4 * ZONE + 1)
    base[0] = late[0] = 3.0
    offsets = (0.0, -DELTA, -DELTA, -(DELTA - TAU))
    for z, off in enumerate(offsets):
        sl = slice(1 + z * ZONE, 1 + (z + 1) * ZONE)
        for table, extra in ((base, 0.0), (late, off)):
            noise = rng.uniform(-0.5, 0.5, ZONE)
            table[sl] = 3.0 + extra + noise - noise.mean()  # each zone's table mean is exact
    return {"base": lambda ids, seg, /: base[ids[:, :-1]], "late": lambda ids, seg, /: late[ids[:, :-1]]}


@pytest.fixture(scope="module")
def assay():
    rng = np.random.default_rng(7)
    lengths = [int(v) for v in np.r_[rng.integers(300, 512, 30), rng.integers(600, 1000, 100),
                                     rng.integers(1100, 2000, 100)]]
    pop = sample_population(documents(1, lengths), per_stratum=None, boundaries=(256, 512, 1024),
                            drop_internal_duplicates=False)
    # one draw: each control interval covers the planted value with about 95 % probability (model seeds 3
    # and 4 pass as well); the sign assertions have margins of many standard errors
    return natural_context_assay(pop, models(5), TB, baseline="base", contexts=(C // 2, C), targets=K,
                                 capacity=R, replicates=2000, seed=3)


def test_prefix_region_window_is_the_corresponding_region() -> None:
    doc = np.arange(3000)
    tail = natural_tail_window(doc, targets=512, context=2048)
    pre = prefix_region_window(doc, targets=512, context=2048)
    # same number of targets, same preceding-token counts (1,537 .. 2,048), at the start of the source
    assert pre.n_targets == tail.n_targets == 512
    assert pre.scored_positions == range(1537, 2049)
    def context_counts(w):
        return [p - w.source_offset + 1 for p in (w.scored_positions[0], w.scored_positions[-1])]

    assert context_counts(pre) == context_counts(tail) == [1537, 2048]
    assert not pre.synthetic_bos and pre.tokens[0] == 0
    pre._check()
    with pytest.raises(ValueError, match="needs a source of at least 2049 tokens"):
        prefix_region_window(np.arange(2048), targets=512, context=2048)
    with pytest.raises(ValueError, match="targets must be <= context"):
        prefix_region_window(doc, targets=600, context=512)


def test_natural_windows_only_from_the_strata_above_2_R_minus_1() -> None:
    spec = WindowSpec(kinds=("beginning", "tail", "natural-tail", "prefix-region"))
    assert spec.natural_threshold() == 4096 and NATURAL_CONTEXTS == (1024, 2048)
    for L, natural in ((2050, False), (4096, False), (4097, True), (9000, True)):
        kinds = {w.kind for w in source_windows(np.arange(L), spec)}
        assert ("natural-tail" in kinds) is natural and ("prefix-region" in kinds) is natural
        assert "tail" in kinds  # the reset-window tail still comes from every over-context source
        assert (scored_range(L, "prefix-region", spec) is not None) is natural
    with pytest.raises(ValueError, match="natural_above must be >= context"):
        WindowSpec(kinds=("prefix-region",), context=2048, natural_above=1000)


def test_control_and_full_window_diagnostic_give_different_signs(assay) -> None:
    wide = assay.cell(C, "late", ">1024")
    for cell in (wide, assay.cell(C, "late", "513–1024")):
        inter, full = cell.interaction, cell.full_window
        assert full is not None
        # the control's interaction recovers the planted value within its interval
        assert inter.interval.lo <= PLANTED <= inter.interval.hi
        assert inter.estimate > 0 and inter.interval.lo > 0
        # the earlier complete-prefix-window diagnostic gives the other sign, and misses the planted value
        assert full.estimate < 0 and full.interval.hi < 0
        assert not full.interval.lo <= PLANTED <= full.interval.hi
        # the parts (tolerances are several standard errors): prefix region -DELTA, natural tail
        # -(DELTA - TAU), complete beginning window -DELTA K / (R - 1)
        assert cell.prefix_region.estimate == pytest.approx(-DELTA / math.log(2), abs=0.03)
        assert cell.tail.estimate == pytest.approx(-(DELTA - TAU) / math.log(2), abs=0.03)
        assert full.parts[1] == pytest.approx(-DELTA * K / (R - 1) / math.log(2), abs=0.03)
        assert inter.interval.level == 0.95 and not inter.family  # exploratory, nominal


def test_each_context_has_its_own_control(assay) -> None:
    # at C = 128 the prefix region (positions 65..128) holds no planted effect: interaction = tail delta
    short = assay.cell(C // 2, "late", ">1024")
    assert short.prefix_region.estimate == pytest.approx(0.0, abs=0.03)
    assert short.interaction.estimate == pytest.approx(-(DELTA - TAU) / math.log(2), abs=0.03)
    assert assay.contexts == (C // 2, C)
    assert [s.context for s in assay.specs] == [C // 2, C]


def test_strata_below_the_threshold_have_no_natural_cell(assay) -> None:
    strata = {c.stratum for c in assay.cells}
    assert strata == {"513–1024", ">1024"}  # 257–512 is over-context but not above 2 (R - 1) = 512
    assert assay.dropped == ()
    d = assay.to_dict()
    assert d["fingerprints"][0]["windows"] > 0 and "must not be read from the full-window" in d["statement"]


def test_a_straddled_stratum_is_reported_as_dropped() -> None:
    lengths = [600, 700, 800, 900, 1100]
    pop = sample_population(documents(4, lengths), per_stratum=None, boundaries=(512, 1024),
                            drop_internal_duplicates=False)
    a = natural_context_assay(pop, models(5), TB, baseline="base", contexts=(C,), targets=K, capacity=R,
                              natural_above=750, replicates=50)
    assert [(d.what, d.name) for d in a.dropped] == [("stratum", "513–1024"), ("stratum", ">1024")]
    assert "only 2 of its 4 sources" in a.dropped[0].reason and "at least 2" in a.dropped[1].reason
    assert a.cells == ()
    with pytest.raises(ValueError, match="nothing to score"):
        natural_context_assay(pop, models(5), TB, baseline="base", contexts=(C,), targets=K, capacity=R,
                              natural_above=5000, replicates=50)
    with pytest.raises(ValueError, match="at least two models"):
        natural_context_assay(pop, {"base": models(5)["base"]}, TB, baseline="base")
