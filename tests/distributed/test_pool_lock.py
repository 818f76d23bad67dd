"""A pool worker that outlives its killed run does not keep the run's report directory locked.

A forked worker shares the command's lock descriptor; ``flock`` belongs to that shared open file, so a
run killed with SIGKILL while a worker was busy left the directory locked until the worker ended, and the
rerun that should resume was refused (``packing_theory/reporting/lock.py``, ``close_inherited_locks``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from packing_theory.reporting.lock import DirectoryLock

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_that_outlives_a_killed_run_does_not_keep_its_report_locked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "run.py"
    script.write_text(
        "import os, time\n"
        "from packing_theory.reporting.lock import DirectoryLock\n"
        "from packing_theory.distributed.pools import start_pool\n"
        f"lock = DirectoryLock({str(out)!r})\n"
        "lock.acquire('the killed run')\n"
        "pool = start_pool(1)\n"
        "worker = pool.submit(os.getpid).result()  # started and initialized\n"
        "pool.submit(time.sleep, 120)  # busy when its run is killed\n"
        "print(worker, flush=True)\n"
        "time.sleep(120)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    worker = 0
    try:
        assert run.stdout is not None
        worker = int(run.stdout.readline())
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
        os.kill(worker, 0)  # the worker lives on (it would raise ProcessLookupError otherwise)
        rerun = DirectoryLock(str(out))
        rerun.acquire("the rerun")  # before: ReportBusy, held by the orphaned worker's copy
        assert rerun.held
        rerun.release()
    finally:
        run.kill()
        if worker:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)
