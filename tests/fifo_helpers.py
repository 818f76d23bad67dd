"""Call something that must refuse a FIFO without reading it, bounding the hang if it reads instead."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest


def raised_within(fn: Callable[..., Any], *args: Any, fifos: Sequence[str | Path] = (),
                  timeout: float = 30.0) -> BaseException | None:
    """Call ``fn(*args)`` in a thread and return what it raised (``None``: nothing).

    A call still running after ``timeout`` seconds is blocked on a FIFO (waiting for a writer): each
    of ``fifos`` is then opened for writing and closed at once, so that the reader sees an empty file
    and the thread ends, and the test fails. ``timeout`` only bounds a hang; the test never measures
    time.
    """
    box: dict[str, BaseException | None] = {"error": None}

    def call() -> None:
        try:
            fn(*args)
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=call, name="fifo-reader", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(timeout)
        pytest.fail(f"{getattr(fn, '__name__', fn)} waited on a FIFO instead of refusing it")
    return box["error"]
