"""The order ``measure`` submits its packers' tasks in: the per-event packers first on the compiled engine.

A pool takes tasks in submission order, so the slowest task submitted last runs
alone at the end (``benchmarks/bench_compare_scale.py``: ``parcae-bestfit``, a
peer without a columnar path, came last). The order must change no figure and
put every result under its own packer.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import numpy as np
import pytest

from packing_theory.engine.compiled import compiled_available
from packing_theory.engine.horizon import Budget
from packing_theory.orchestration import Settings, measure
from packing_theory.orchestration._tasks import per_event_first
from packing_theory.registry import entries

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the compiled engine needs numba")


class RecordingExecutor(Executor):
    """Runs each task at once, in this process, and records which packer it was for, in submission order."""

    def __init__(self) -> None:
        self.submitted: list[tuple[str, str]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        task_fn, task_args = args  # the runner submits _invoke(fn, args)
        first = task_args[0]
        phase = task_fn.__name__
        names = [first] if isinstance(first, str) else first if isinstance(first, list) else [first.name]
        self.submitted.extend((phase, n) for n in names)
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed back to the runner, as a pool would
            future.set_exception(exc)
        return future


def _per_event(name: str) -> bool:
    e = entries()[name]
    return not e.columnar if e.kind == "peer" else "compiled" not in e.engines


def _without_seconds(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "seconds"}


def lengths_of() -> np.ndarray:
    rng = np.random.default_rng(3)
    return np.maximum(1, np.rint(rng.lognormal(3.5, 1.0, 800))).astype(np.int64)


def test_the_compiled_engine_submits_the_per_event_packers_first_and_reports_in_order() -> None:
    names = list(entries())
    slow = [n for n in names if _per_event(n)]
    assert slow and names[: len(slow)] != slow  # the registry's order does not put them first already
    settings = Settings(capacity=128, min_buffer=8, engine="compiled")
    spy = RecordingExecutor()
    m = measure(lengths_of(), names, settings, horizon="common", executor=spy)
    streaming = [n for n in names if entries()[n].kind != "peer"]
    assert [n for fn, n in spy.submitted if fn == "reach_group"] == streaming  # one group: one worker
    assert {n for fn, n in spy.submitted if fn == "_pass_one"} == set(names) - set(streaming)
    for phase in ("_pass_one", "_run_one"):
        order = [n for fn, n in spy.submitted if fn == phase]
        assert order, phase
        k = sum(_per_event(n) for n in order)
        assert all(_per_event(n) for n in order[:k]) and not any(_per_event(n) for n in order[k:]), order
        assert order == sorted(order, key=lambda n: (not _per_event(n), names.index(n)))
    report = [r.packer for r in m.runs] + [n for n, _ in m.refused]
    assert sorted(report) == sorted(names)
    assert [r.packer for r in m.runs] == [n for n in names if n in {r.packer for r in m.runs}]  # report order
    assert [n for n, _ in m.refused] == [n for n in names if n in dict(m.refused)]
    assert m.horizon is not None and m.horizon_set_by == tuple(
        n for n in names if n in m.horizon_set_by)  # set_by in report order too
    in_process = measure(lengths_of(), names, settings, horizon="common")
    assert [_without_seconds(r.to_dict()) for r in m.runs] == [_without_seconds(r.to_dict())
                                                               for r in in_process.runs]


def test_each_result_lands_under_its_own_packer() -> None:
    """Each packer measured with the others (reordered) equals that packer measured alone at the same
    horizon."""
    names = [n for n in entries() if n in ("discard", "parcae-bestfit", "trl-bfd", "bestfit-pad", "seamless")]
    settings = Settings(capacity=128, min_buffer=8, engine="compiled")
    budget = Budget("rows", 40)
    together = measure(lengths_of(), names, settings, horizon=budget)
    assert [r.packer for r in together.runs] == names
    for run in together.runs:
        alone = measure(lengths_of(), [run.packer], settings, horizon=budget).runs[0]
        assert _without_seconds(run.to_dict()) == _without_seconds(alone.to_dict()), run.packer
    distinct = {(r.aggregates.mass.emitted_tokens, r.never_trained.never_started.documents)
                for r in together.runs}
    assert len(distinct) > 1  # the packers differ, so a swapped result would show


def test_other_engines_keep_the_given_order() -> None:
    names = ["discard", "parcae-bestfit", "bestfit-pad", "trl-bfd"]
    assert per_event_first(names, "fast") == names
    assert per_event_first(names, "reference") == names
    assert per_event_first(names, "compiled") == ["parcae-bestfit", "bestfit-pad", "discard", "trl-bfd"]
