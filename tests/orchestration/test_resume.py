"""A measurement resumed from its parts (``packing_theory/orchestration/resume.py``): a rerun after an
interruption replays only the packers not yet done, and its figures equal an uninterrupted run's."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.errors import InputError
from packing_theory.orchestration import Settings, measure
from packing_theory.orchestration.resume import RunParts, measurement_key
from packing_theory.registry import entries

NAMES = ["discard", "bestfit-pad", "trl-bfd", "foundry-concat-no_wrap", "seamless"]
SETTINGS = Settings(capacity=128, min_buffer=8)
measure_module = importlib.import_module("packing_theory.orchestration.measure")


def _lengths() -> np.ndarray:
    rng = np.random.default_rng(5)
    return np.maximum(1, np.rint(rng.lognormal(3.5, 1.0, 600))).astype(np.int64)


def _plain(m: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in m.runs]


class Stop(Exception):
    """The interruption."""


def _count_replays(monkeypatch: Any) -> list[str]:
    """The packers replayed from now on (every run and every peer's pass goes through ``_run_one``)."""
    replayed: list[str] = []
    real = measure_module._run_one

    def counted(task: Any, *args: Any) -> Any:
        replayed.append(task.name)
        return real(task, *args)

    monkeypatch.setattr(measure_module, "_run_one", counted)
    return replayed


def _interrupted(parts: Path, after: int) -> None:
    def progress(done: int) -> None:
        if done >= after:
            raise Stop

    with pytest.raises(Stop):
        measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=parts, progress=progress)


def test_a_rerun_replays_only_what_an_interruption_left_and_equals_an_uninterrupted_run(tmp_path: Path,
                                                                                       monkeypatch: Any
                                                                                       ) -> None:
    whole = measure(_lengths(), NAMES, SETTINGS, horizon="common")
    _interrupted(tmp_path / "parts", after=3)
    replayed = _count_replays(monkeypatch)
    resumed = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=tmp_path / "parts")
    assert _plain(resumed) == _plain(whole)
    assert resumed.horizon == whole.horizon and resumed.horizon_set_by == whole.horizon_set_by
    assert len(resumed.resumed) == 3  # the three packers finished before the interruption
    assert sorted(replayed) == sorted(set(NAMES) - set(resumed.resumed))  # the rest, and only the rest
    assert resumed.resume_problem is None
    again = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=tmp_path / "parts")
    assert sorted(again.resumed) == sorted(NAMES) and _plain(again) == _plain(whole)


def test_parts_of_another_corpus_or_setting_are_not_reused(tmp_path: Path) -> None:
    _interrupted(tmp_path / "parts", after=5)
    other = Settings(capacity=96, min_buffer=8)
    m = measure(_lengths(), NAMES, other, horizon="common", resume=tmp_path / "parts")
    assert m.resumed == () and _plain(m) == _plain(measure(_lengths(), NAMES, other, horizon="common"))
    changed = _lengths()
    changed[7] += 1
    m = measure(changed, NAMES, SETTINGS, horizon="common", resume=tmp_path / "parts")
    assert m.resumed == () and _plain(m) == _plain(measure(changed, NAMES, SETTINGS, horizon="common"))
    fewer = measure(_lengths(), NAMES[:2], SETTINGS, horizon="common", resume=tmp_path / "parts")
    assert _plain(fewer) == _plain(measure(_lengths(), NAMES[:2], SETTINGS, horizon="common"))


@pytest.mark.parametrize("damage", ["cut", "byte"])
def test_a_damaged_part_is_replayed(tmp_path: Path, damage: str) -> None:
    parts = tmp_path / "parts"
    whole = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=parts)
    runs = sorted(parts.glob("run-*.pkl"))
    assert len(runs) == len(NAMES)
    for f in [*parts.glob("*.pkl"), *parts.glob("*.json")]:  # every part damaged: nothing is read back
        data = bytearray(f.read_bytes())
        if damage == "cut":
            data = data[:40]
        else:  # one byte of the content flipped (a bad disk), its length unchanged
            data[len(data) * 2 // 3] ^= 0x5A
        f.write_bytes(bytes(data))
    leftover = parts / "run-0123456789abcdef.pkl.tmp-123"  # an interrupted write's leftover
    leftover.write_bytes(b"half")
    m = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=parts)
    assert m.resumed == () and _plain(m) == _plain(whole)
    assert not leftover.exists()


def test_a_part_that_cannot_be_written_leaves_the_measurement_whole(tmp_path: Path, monkeypatch: Any) -> None:
    from packing_theory.distributed import parts as parts_module

    def full_disk(path: str, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(parts_module, "atomic_write", full_disk)
    m = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=tmp_path / "parts")
    assert _plain(m) == _plain(measure(_lengths(), NAMES, SETTINGS, horizon="common"))
    assert m.resume_problem is not None and "No space left on device" in m.resume_problem


def test_when_a_peer_sets_the_horizon_only_what_was_read_back_counts_as_resumed(tmp_path: Path,
                                                                                 monkeypatch: Any) -> None:
    names = ["discard", "continue", "trl-bfd", "foundry-concat-no_wrap", "axolotl-multipack"]
    for seed in range(30):  # a corpus where a peer reaches fewer tokens than every streaming packer
        rng = np.random.default_rng(seed)
        arr = np.maximum(1, np.rint(rng.lognormal(3.5, 1.0, 500))).astype(np.int64)
        whole = measure(arr, names, SETTINGS, horizon="common")
        if any(entries()[n].kind == "peer" for n in whole.horizon_set_by):
            break
    else:
        pytest.fail("no corpus of the 30 drawn has a peer setting the horizon")

    def progress(done: int) -> None:
        if done >= 1:
            raise Stop

    with pytest.raises(Stop):
        measure(arr, names, SETTINGS, horizon="common", resume=tmp_path / "p", progress=progress)
    replayed = _count_replays(monkeypatch)
    resumed = measure(arr, names, SETTINGS, horizon="common", resume=tmp_path / "p")
    assert _plain(resumed) == _plain(whole)
    assert not set(resumed.resumed) & set(replayed)  # read back or replayed, never both
    assert set(resumed.resumed) | set(replayed) >= {r.packer for r in whole.runs}


def test_a_copy_on_write_map_is_measured_as_it_is_in_memory(tmp_path: Path) -> None:
    arr = np.maximum(1, np.rint(np.random.default_rng(8).lognormal(3.5, 1.0, 70_000))).astype(np.int64)
    np.save(tmp_path / "l.npy", arr)
    edited = np.load(tmp_path / "l.npy", mmap_mode="c")
    edited[:5000] = 300  # changed in this process only, not in the file
    names = ["discard", "trl-bfd"]
    two = measure(edited, names, SETTINGS, horizon="natural", workers=2)
    one = measure(np.array(edited), names, SETTINGS, horizon="natural")
    assert _plain(two) == _plain(one)
    assert two.corpus.tokens == int(np.asarray(edited).sum()) != int(arr.sum())


def test_resume_errors_name_the_parameter(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="resume keeps runs without per-document tables; got documents=True"):
        measure(_lengths(), NAMES[:1], SETTINGS, documents=True, resume=tmp_path / "p")
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match=r"resume must be a directory, got '.*f', which is not one"):
        measure(_lengths(), NAMES[:1], SETTINGS, resume=tmp_path / "f")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match=r"resume must be a directory, got '.*link', which is not one"):
        measure(_lengths(), NAMES[:1], SETTINGS, resume=tmp_path / "link")


def test_the_key_follows_what_the_figures_depend_on(tmp_path: Path) -> None:
    arr = _lengths()
    key = measurement_key(arr, SETTINGS, documents=False, identity=None, sources=None)
    assert key == measurement_key(arr.copy(), SETTINGS, documents=False, identity=None, sources=None)
    assert key != measurement_key(arr[:-1], SETTINGS, documents=False, identity=None, sources=None)
    assert key != measurement_key(arr, Settings(capacity=128, min_buffer=9), documents=False, identity=None,
                                  sources=None)
    assert key != measurement_key(arr, SETTINGS, documents=True, identity=None, sources=None)
    parts = RunParts(tmp_path / "p", key)
    parts._check()
    assert parts.load("discard", None) is None and parts.horizon(["discard"]) is None
    parts.save("discard", None, ("run", None))
    later = RunParts(tmp_path / "p", key)
    assert later.load("discard", None) == ("run", None)
    later._check()
    assert RunParts(tmp_path / "p", "0" * 64).load("discard", None) is None  # another measurement's key
    parts._check()
