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
    replayed: list[str] = []
    real = measure_module._run_one

    def counted(task: Any, *args: Any) -> Any:
        replayed.append(task.name)
        return real(task, *args)

    monkeypatch.setattr(measure_module, "_run_one", counted)
    resumed = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=tmp_path / "parts")
    assert _plain(resumed) == _plain(whole)
    assert resumed.horizon == whole.horizon and resumed.horizon_set_by == whole.horizon_set_by
    assert len(resumed.resumed) == 3  # the three packers finished before the interruption
    assert sorted(replayed) == sorted(set(NAMES) - set(resumed.resumed))  # the rest, and only the rest
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


def test_a_damaged_part_is_replayed(tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    whole = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=parts)
    runs = sorted(parts.glob("run-*.pkl"))
    assert len(runs) == len(NAMES)
    runs[0].write_bytes(runs[0].read_bytes()[:40])  # cut short
    (parts / "run-x.pkl.tmp-123").write_bytes(b"half")  # an interrupted write's leftover
    m = measure(_lengths(), NAMES, SETTINGS, horizon="common", resume=parts)
    assert len(m.resumed) == len(NAMES) - 1 and _plain(m) == _plain(whole)
    assert not (parts / "run-x.pkl.tmp-123").exists()


def test_resume_errors_name_the_parameter(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="resume keeps runs without per-document tables; got documents=True"):
        measure(_lengths(), NAMES[:1], SETTINGS, documents=True, resume=tmp_path / "p")
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="resume must be a directory, got the file"):
        measure(_lengths(), NAMES[:1], SETTINGS, resume=tmp_path / "f")


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
    assert parts.written == ["discard"]
    later = RunParts(tmp_path / "p", key)
    assert later.load("discard", None) == ("run", None) and later.reused == ["discard"]
    later._check()
    assert RunParts(tmp_path / "p", "0" * 64).load("discard", None) is None  # another measurement's key
    parts._check()
