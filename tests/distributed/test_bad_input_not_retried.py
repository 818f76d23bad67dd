"""Bad input is not retried: reading a corrupt input again gives the same error.

Before the fix ``census --retries 1000000`` retried a task that raised
``InputError`` (invalid UTF-8) a million times; at the default a corrupt input
was read twice. Other errors are still retried.
"""

from __future__ import annotations

import pytest

import packing_theory as pt
from packing_theory.distributed.executors import TaskFailed, open_runner

CALLS: list[str] = []


def corrupt(kind: str) -> None:
    CALLS.append(kind)
    if kind == "input":
        raise pt.InputError("census input 'x.txt' is not valid utf-8")
    raise OSError("a flaky disk")


@pytest.mark.parametrize(("kind", "calls"), [("input", 1), ("os", 4)])
def test_only_errors_that_are_not_bad_input_are_retried(kind: str, calls: int) -> None:
    CALLS.clear()
    failed = pytest.raises(TaskFailed, match=f"after {calls} attempt")
    with open_runner("local", workers=1, retries=3) as runner, failed:
        runner.run(corrupt, [(kind,)], on_result=lambda i, v: None)
    assert len(CALLS) == calls
