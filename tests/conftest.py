"""Shared test configuration: parallel workers by default, hypothesis profiles (``ci`` is the default)."""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import HealthCheck, Phase, settings

# A run started with SIGINT ignored (a background job of a non-interactive shell, ``nohup``) inherits
# SIG_IGN, so Ctrl-C would reach no test and no child. The tests of Ctrl-C need it as a terminal delivers
# it: Python's own handler here, hence SIG_DFL (and Python's handler again) in every child started after.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run the tests on pytest-xdist workers, one per CPU (``-n auto``), unless told otherwise.

    This is a hook rather than ``-n auto`` in ``addopts`` so that ``-p no:xdist`` (or a machine
    without pytest-xdist) still runs everything in one process: ``addopts`` would then hold an
    option nobody defines. ``-n 0`` or ``-p no:xdist`` run in this process, ``-n N`` on N
    workers; ``PYTEST_XDIST_AUTO_NUM_WORKERS`` sets the ``auto`` count. Tests are handed out one
    by one (``--dist loadgroup``), except that a module marked ``xdist_group`` (an expensive
    module fixture: the Coq build, a Dask cluster) runs on one worker, which builds it once.

    The hook runs before pytest-xdist's own ``pytest_cmdline_main`` (a conftest's hook is called
    before a plugin's of the same priority), which turns ``auto`` into the number of workers. Only
    the conftest of the directories named on the command line (or of ``testpaths``) is read this
    early, so ``python -m pytest --nbmake examples/notebooks`` stays in one process.
    """
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return
    if config.getoption("numprocesses", None) is None and not config.getoption("collectonly"):
        config.option.numprocesses = "auto"
    if config.getoption("dist", "no") == "no":  # unless --dist says otherwise; "no" again under -n 0
        config.option.dist = "loadgroup"  # like "load", but an xdist_group stays on one worker

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
# tools/mutation.py: few, derandomised examples, so that a mutant's verdict does not depend on a draw,
# and no shrinking (a failure is a kill; shrinking it only costs time)
settings.register_profile(
    "mutation", max_examples=20, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
