"""The start-up guard (:mod:`packing_theory._startup`): installed in the command line's process only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from packing_theory import _startup

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("argv", "orig", "expected"), [
    (["/venv/bin/packing-theory", "audit"], ["/venv/bin/python", "/venv/bin/packing-theory", "audit"], True),
    (["-m", "audit"], ["python", "-m", "packing_theory.cli", "audit"], True),
    (["-m", "audit"], ["python", "-O", "-X", "dev", "-m", "packing_theory.cli", "audit"], True),
    (["-m", "x"], ["python", "-m", "packing_theory", "x"], True),
    (["-m"], ["python", "-m", "pytest", "-m", "packing_theory.cli"], False),  # pytest's own -m option
    (["/venv/bin/pytest", "tests"], ["python", "/venv/bin/pytest", "tests"], False),
    (["-c"], ["python", "-c", "import packing_theory"], False),
    ([], [], False),
])
def test_is_command_line(argv: list[str], orig: list[str], expected: bool) -> None:
    assert _startup.is_command_line(argv, orig) is expected


def test_a_library_process_keeps_its_sigint_handler() -> None:
    assert not _startup.IS_COMMAND_LINE and not _startup.guard_installed()
    code = ("import signal, packing_theory; "
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "True", out.stderr


def test_the_command_line_runs_its_command_with_python_s_sigint_handler(tmp_path: Path) -> None:
    """The guard ends with the start-up: inside the command Ctrl-C is the contract's KeyboardInterrupt."""
    (tmp_path / "probe.py").write_text(
        "import signal\n"
        "from packing_theory import _startup\n"
        "def register(sub):\n"
        "    p = sub.add_parser('probe')\n"
        "    p.set_defaults(run=lambda args: print(_startup.IS_COMMAND_LINE, _startup.guard_installed(),\n"
        "                   signal.getsignal(signal.SIGINT) is not signal.default_int_handler) or 0)\n")
    code = ("import sys; sys.argv[0] = '-m'; sys.orig_argv = ['python', '-m', 'packing_theory.cli']; "
            "import packing_theory._startup as s; guarded = s.guard_installed(); "
            "import packing_theory.cli as cli; cli.COMMANDS['probe'] = 'probe'; "
            "print(guarded); sys.exit(cli.main(['probe']))")
    path = [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    # guarded while starting; inside the command: no guard, the contract's own (non-default) handler
    assert out.stdout.split() == ["True", "True", "False", "True"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
