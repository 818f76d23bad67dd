"""Ctrl-C while the ``packing-theory`` command starts: one line and status 130, never a traceback.

The command's contract (:mod:`packing_theory.cli._exit`) takes over once a
command runs: an interrupt is then status 3. Before that — while Python imports
the package and the subcommands, and while ``argparse`` reads the arguments —
nothing of the contract is in place, and Ctrl-C would print a
``KeyboardInterrupt`` traceback. So the package's first import statement
(``from . import _startup``) installs :func:`interrupted_while_starting` as the
SIGINT handler (:func:`install_guard`, called when this module is imported), **only in
the process of the command line** (:func:`is_command_line`: ``packing-theory
...`` or ``python -m packing_theory.cli ...``); a library user's or a test's
process keeps its handler. Nothing has been written before a command runs, so
the handler writes its line and ends the process at once (``os._exit(130)``,
the shell's status for SIGINT).

Python's own start-up, before the package's first line, is outside this
package's reach.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

__all__ = [
    "COMMAND",
    "IS_COMMAND_LINE",
    "MODULES",
    "STARTING_LINE",
    "guard_installed",
    "install_guard",
    "interrupted_while_starting",
    "is_command_line",
]

COMMAND = "packing-theory"
"""The console script's name."""

MODULES = ("packing_theory", "packing_theory.cli", "packing_theory.cli.__main__")
"""The ``python -m`` module names that run the command."""

STARTING_LINE = b"packing-theory: interrupted (SIGINT) while starting; nothing was run\n"
"""What :func:`interrupted_while_starting` writes on standard error."""


def is_command_line(argv: list[str] | None = None, orig_argv: list[str] | None = None) -> bool:
    """Whether this process is the ``packing-theory`` command line.

    True for the console script (``argv[0]`` is ``.../packing-theory``) and for
    ``python [options] -m packing_theory.cli ...`` (while ``-m`` locates the module,
    ``sys.argv[0]`` is ``'-m'`` and ``sys.orig_argv`` names the module).

    >>> is_command_line(["/venv/bin/packing-theory", "audit"], ["python", "/venv/bin/packing-theory"])
    True
    >>> is_command_line(["-m", "audit"], ["python", "-X", "dev", "-m", "packing_theory.cli", "audit"])
    True
    >>> is_command_line(["-m"], ["python", "-m", "pytest"])
    False
    """
    args = sys.argv if argv is None else argv
    orig = list(getattr(sys, "orig_argv", [])) if orig_argv is None else orig_argv
    if args and os.path.basename(args[0]) == COMMAND:
        return True
    if not args or args[0] != "-m":
        return False
    modules = [orig[i + 1] for i, a in enumerate(orig[:-1]) if a == "-m"]
    return bool(modules) and modules[0] in MODULES


def interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    """The start-up SIGINT handler: one line on standard error, then ``os._exit(130)``."""
    try:
        os.write(2, STARTING_LINE)
    finally:
        os._exit(130)


def guard_installed() -> bool:
    """Whether :func:`interrupted_while_starting` is the SIGINT handler now."""
    return signal.getsignal(signal.SIGINT) is interrupted_while_starting


def install_guard() -> bool:
    """Install the start-up handler if this is the command line's main thread with Python's SIGINT handler.

    Returns whether it is installed. A handler someone else installed is left alone.
    """
    if threading.current_thread() is not threading.main_thread() or not is_command_line():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, interrupted_while_starting)
    return True


IS_COMMAND_LINE = is_command_line()
"""Whether this process is the command line (decided when the package is first imported)."""

install_guard()
