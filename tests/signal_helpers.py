"""Wait for a child process to be ready for a signal, by its handler rather than by a clock."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest


def wait_until_caught(proc: subprocess.Popen[str], signum: int, timeout: float = 300.0) -> None:
    """Block until ``proc`` has installed a handler for ``signum`` (Linux: ``SigCgt`` of /proc/PID/status).

    The readiness signal is the handler itself, not elapsed time: on a loaded machine the child may
    still be importing after any fixed delay, and a signal before the handler kills it outright (or,
    for SIGINT, raises ``KeyboardInterrupt`` with a traceback). ``timeout`` only bounds a hang.
    """
    deadline = time.monotonic() + timeout
    status = Path(f"/proc/{proc.pid}/status")
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the process ended before it installed its signal handler"
        caught = next(line for line in status.read_text().splitlines() if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) >> (signum - 1) & 1:
            return
        time.sleep(0.02)
    pytest.fail(f"no handler for signal {signum} after {timeout} s")
