"""The common horizon as ``measure`` finds it: the streaming packers' bounded reaches, then one pass per peer
that is both its run and its reach (``packing_theory/orchestration/measure.py``).

Whatever path found it, the horizon is the fewest placed tokens any packer reaches at its natural end, the
packers that set it are those that reach exactly that, and every packer's figures are those of a
measurement asked for that horizon outright.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.engine.horizon import Budget
from packing_theory.orchestration import Settings, measure
from packing_theory.orchestration._reach import placed_tokens
from packing_theory.orchestration._tasks import MappedLengths, lengths_of, shared_lengths
from packing_theory.registry import build_packer


def _lengths_of(seed: int, n: int = 500) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.maximum(1, np.rint(rng.lognormal(3.5, 1.0, n))).astype(np.int64)


def _plain(m: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in m.runs]


SETTINGS = Settings(capacity=128, min_buffer=8)


@pytest.mark.parametrize("names", [
    ["discard", "continue", "trl-bfd", "foundry-concat-no_wrap"],  # a peer may reach fewest
    ["bestfit-pad", "discard", "trl-bfd", "seamless"],  # a streaming packer sets it (the peers' runs kept)
    ["trl-bfd", "axolotl-multipack", "foundry-binpack"],  # no streaming packer: the peers' reaches first
])
def test_the_common_horizon_is_the_smallest_full_reach_and_runs_equal_that_horizon_asked(
        names: list[str]) -> None:
    arr = _lengths_of(4)
    m = measure(arr, names, SETTINGS, horizon="common")
    widths = {r.packer: r.row_width for r in m.runs}
    reach = {n: placed_tokens(build_packer(n, capacity=widths[n], **({"min_buffer": 8} if n in (
        "discard", "continue", "bestfit-pad") else {})).events(arr), widths[n]) for n in names}
    assert m.horizon == Budget("tokens", min(reach.values()))
    assert m.horizon_set_by == tuple(n for n in names if reach[n] == min(reach.values()))
    asked = measure(arr, names, SETTINGS, horizon=m.horizon)
    assert _plain(m) == _plain(asked)


def test_a_peer_that_sets_the_horizon_is_found_and_every_run_is_cut_there() -> None:
    names = ["discard", "continue", "trl-bfd", "foundry-concat-no_wrap"]
    for seed in range(20):  # a corpus where a peer reaches fewer tokens than every streaming packer
        arr = _lengths_of(seed)
        m = measure(arr, names, SETTINGS, horizon="common")
        if any(n in ("trl-bfd", "foundry-concat-no_wrap") for n in m.horizon_set_by):
            break
    else:
        pytest.fail("no corpus of the 20 drawn has a peer setting the horizon")
    assert _plain(m) == _plain(measure(arr, names, SETTINGS, horizon=m.horizon))
    assert all(r.horizon.reason in ("budget reached", "stream ended") for r in m.runs)


def test_a_local_pool_gets_the_lengths_as_a_file(tmp_path: Path) -> None:
    arr = _lengths_of(1, 70_000)
    with shared_lengths(arr, "processes") as shared:  # in memory: written once to a temporary file
        assert isinstance(shared, MappedLengths)
        assert np.array_equal(lengths_of(shared), arr)
        written = Path(shared.path)
        assert written.is_file()
    assert not written.exists()  # removed after
    np.save(tmp_path / "l.npy", arr)
    mapped = np.load(tmp_path / "l.npy", mmap_mode="r")
    with shared_lengths(mapped, "processes") as shared:  # already a file: that file, no copy
        assert isinstance(shared, MappedLengths) and shared.path == str(tmp_path / "l.npy")
        assert np.array_equal(lengths_of(shared), arr)
    with shared_lengths(mapped[1:], "processes") as shared:  # a view of the file: copied, not misread
        assert isinstance(shared, MappedLengths) and shared.path != str(tmp_path / "l.npy")
        assert np.array_equal(lengths_of(shared), arr[1:])
    for kind in ("inprocess", "dask", "executor"):  # one process, or workers that may not see this disk
        with shared_lengths(arr, kind) as shared:
            assert shared is arr
    small = arr[:100]
    with shared_lengths(small, "processes") as shared:
        assert shared is small


def test_a_pool_of_two_measures_what_one_process_measures(tmp_path: Path) -> None:
    arr = _lengths_of(2, 70_000)  # past the size from which the pool reads the lengths from a file
    names = ["discard", "bestfit-pad", "trl-bfd", "foundry-concat-no_wrap"]
    np.save(tmp_path / "l.npy", arr)
    one = measure(arr, names, SETTINGS, horizon="common")
    two = measure(np.load(tmp_path / "l.npy", mmap_mode="r"), names, SETTINGS, horizon="common", workers=2)
    assert _plain(one) == _plain(two) and one.horizon == two.horizon
    assert one.horizon_set_by == two.horizon_set_by
