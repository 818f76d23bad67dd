"""The exit-code contract of every ``packing-theory`` command, in one place.

=====  ========================================================================
code   meaning
=====  ========================================================================
0      the command ran and found nothing (no violation, the identities hold,
       nothing corrupt)
1      the command ran and found something: an invariant violation, a broken
       mass identity, a corrupt shard found by a verifier
2      bad usage or bad input: one line on standard error naming the parameter
       or the file and the value
3      the command could not measure: an internal error, out of memory, an
       interrupt (SIGINT, SIGTERM, SIGHUP) or an environment failure (disk full,
       I/O error); one line, the traceback only with ``--debug``
=====  ========================================================================

An interrupt is status 3 however it reaches the command: a signal whose
exception Python swallowed (raised inside a ``__del__`` or an at-fork hook, as
while a process pool starts) is sent again once Python is out of that place,
so the command still stops at once with status 3 and one line, and a forked
worker that gets the signal before it resets its handlers just ends. Ctrl-C
*before* a command runs (while the package is imported or the arguments are
parsed) is one line and status 130, the shell's status for
SIGINT (:mod:`packing_theory._startup`).

Every command is run through :func:`run_command` by
:func:`packing_theory.cli.main`, so a new subcommand gets the contract by
construction: its ``run(args)`` returns 0 or 1 and raises for everything else.

How an exception maps to a status (:func:`classify`) depends on its class only
(:mod:`packing_theory.errors`), never on where it was raised:

* :class:`~packing_theory.errors.Finding` (an invariant violation, a broken
  identity) is status 1;
* :class:`~packing_theory.errors.InputError` (bad input or usage, naming the
  parameter and the value; its subclasses ``InputTypeError`` and
  ``MissingDependency``) and ``UnicodeDecodeError`` (an input that is not
  text in its encoding) are status 2;
* ``OSError`` is status 2 (a missing file, a permission, a directory where a
  file was expected...) except for environment failures — no space left, a
  quota, an I/O error, no memory, a broken pipe — which are status 3;
* :class:`~packing_theory.errors.NotMeasured` is status 3, except that a task
  that failed because of bad input (its cause classifies as status 2) is
  reported as that bad input;
* ``MemoryError``, ``KeyboardInterrupt``, :class:`Terminated` and every other
  exception — a ``ValueError`` from numpy included — are status 3: an input
  reached code that did not validate it, which is a bug of ours.
"""

from __future__ import annotations

import _thread
import errno
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import IntEnum
from types import FrameType
from typing import TextIO

from ..errors import Finding, InputError, NotMeasured

__all__ = [
    "EPILOG",
    "ExitCode",
    "Terminated",
    "classify",
    "one_line",
    "run_command",
    "signals_as_exceptions",
]


class ExitCode(IntEnum):
    """The four exit statuses of every command."""

    OK = 0
    """Ran and found nothing."""
    FOUND = 1
    """Ran and found something (violation, broken identity, corrupt shard)."""
    USAGE = 2
    """Bad usage or bad input."""
    FAILED = 3
    """Could not measure (internal error, out of memory, interrupted)."""


EPILOG = (
    "Exit status: 0 = ran and found nothing; 1 = ran and found something (a violation, a broken "
    "identity, a corrupt shard); 2 = bad usage or bad input (one line naming the parameter or file); "
    "3 = could not measure (internal error, out of memory, interrupted; --debug prints the traceback)."
)
"""The ``--help`` epilog every subcommand carries."""


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM or SIGHUP while a command runs (status 3).

    A ``BaseException`` so that ``except Exception`` blocks do not swallow it and
    ``finally`` blocks (removing a report's staging directory, releasing a lock) run.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


_ENVIRONMENT_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EIO", "ENOMEM", "EPIPE") if hasattr(errno, name)
)


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (whitespace runs collapsed), cut at ``limit`` characters.

    >>> one_line("a\\n  b\\tc")
    'a b c'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def classify(exc: BaseException) -> tuple[ExitCode, str]:
    """The exit status for ``exc`` and the one-line message (without the command prefix).

    >>> from packing_theory.errors import InputError
    >>> classify(InputError("--capacity must be >= 2, got 1"))
    (<ExitCode.USAGE: 2>, 'error: --capacity must be >= 2, got 1')
    >>> classify(ValueError("cannot reshape array"))[0]  # from code that did not validate its input
    <ExitCode.FAILED: 3>
    >>> classify(MemoryError())[0]
    <ExitCode.FAILED: 3>
    >>> classify(KeyError("x"))
    (<ExitCode.FAILED: 3>, "internal error: KeyError: 'x' (a bug; --debug prints the traceback)")
    """
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.FAILED, "interrupted (SIGINT); nothing more was measured"
    if isinstance(exc, Terminated):
        return ExitCode.FAILED, f"interrupted ({exc}); nothing more was measured"
    if isinstance(exc, MemoryError):
        detail = one_line(str(exc))
        return ExitCode.FAILED, ("out of memory" + (f" ({detail})" if detail else "")
                                 + "; use a smaller input or budget, or a machine with more memory")
    if isinstance(exc, Finding):
        return ExitCode.FOUND, "found: " + (one_line(str(exc)) or type(exc).__name__)
    if isinstance(exc, (InputError, UnicodeDecodeError)):
        return ExitCode.USAGE, "error: " + (one_line(str(exc)) or type(exc).__name__)
    if isinstance(exc, OSError):
        message = one_line(str(exc)) or type(exc).__name__
        if isinstance(exc, BrokenPipeError) or exc.errno in _ENVIRONMENT_ERRNOS:
            return ExitCode.FAILED, f"could not complete: {message}"
        return ExitCode.USAGE, "error: " + message
    if isinstance(exc, NotMeasured):
        cause = exc.__cause__
        if cause is not None and classify(cause)[0] == ExitCode.USAGE:
            return ExitCode.USAGE, "error: " + one_line(str(exc))
        return ExitCode.FAILED, "could not measure: " + (one_line(str(exc)) or type(exc).__name__)
    detail = one_line(str(exc))
    what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return ExitCode.FAILED, f"internal error: {what} (a bug; --debug prints the traceback)"


_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")


class _Handler:
    """The signal handler of :func:`signals_as_exceptions`, with the flag :func:`_redeliver_later` reads:
    whether its block still runs."""

    def __init__(self, owner: int, received: list[int]) -> None:
        self.owner = owner
        self.received = received
        self.active = True
        """Whether its block still runs (set under :data:`_REDELIVERY` as the block ends)."""

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self.owner:  # a forked worker that has not reset its handlers yet: just end
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.received.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)


@contextmanager
def signals_as_exceptions(received: list[int] | None = None) -> Iterator[list[int]]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` and SIGINT ``KeyboardInterrupt``.

    Each signal's number is appended to ``received`` (a new list unless given; it
    is what the block yields), so that the caller sees an interrupt whose exception
    was swallowed: a signal that arrives while Python runs a ``__del__`` method, a
    weakref callback or an at-fork hook (e.g. ``logging``'s while a process pool
    forks its workers) raises there, and Python prints "Exception ignored" and
    carries on (see :func:`run_command`).

    A process forked inside the block (a pool worker, before its initializer
    resets the handlers) that gets one of these signals ends by the signal's
    default action, without an exception or a traceback.

    Outside the main thread (where handlers cannot be installed) nothing changes.
    On exit the previous handlers are restored — Python's own SIGINT handler in
    place of the start-up guard of :mod:`packing_theory._startup` (the command has
    started) — except in the command line's own process after an interrupt: the
    process is ending with status 3, so further signals are ignored rather than
    printing a second line or a traceback.
    """
    from .._startup import IS_COMMAND_LINE, interrupted_while_starting

    got = received if received is not None else []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    global _current
    handler, outer = _Handler(os.getpid(), got), _current
    previous: dict[int, object] = {}
    for name in _SIGNAL_NAMES:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, handler)
    _current = handler
    try:
        yield got
    finally:
        late: BaseException | None = None
        while True:
            seen = len(got)
            try:
                with _REDELIVERY:
                    handler.active = False
                    _current = outer
                    _restore(previous, bool(got) and IS_COMMAND_LINE, interrupted_while_starting)
                break
            except (Terminated, KeyboardInterrupt) as exc:  # awaiting the lock or putting the handlers back
                if len(got) == seen:  # raised by a handler put back already, not this block's: the caller's
                    late = exc
        if late is not None:
            raise late


def _restore(previous: dict[int, object], ignore: bool, startup_guard: object) -> None:
    """Put back the handlers of :func:`signals_as_exceptions` (ignore the signals instead with ``ignore``)."""
    for sig, old in previous.items():
        if ignore:
            signal.signal(sig, signal.SIG_IGN)
        elif old is startup_guard:
            signal.signal(sig, signal.default_int_handler)
        else:
            signal.signal(sig, old)  # type: ignore[arg-type]


_REDELIVERY = threading.Lock()
"""Held while :func:`signals_as_exceptions` ends its block and while a swallowed signal is sent again, so
that it is sent only while the block runs."""

_current: _Handler | None = None
"""The handler of the innermost :func:`signals_as_exceptions` block running in this process."""


def _redeliver_later(signum: int, delay: float = 0.01) -> None:
    """Send ``signum`` to this process again from a thread, ``delay`` seconds from now, if the block of
    :func:`signals_as_exceptions` that got it still runs then (its handler, or a
    :func:`~packing_theory.reporting.files.signals_held` block within it that hands the signal on
    to it, then raises in the main thread where it is by then; a later command never gets an earlier
    command's signal).

    A bare ``_thread`` thread: ``threading.Thread.start`` waits for the thread to start, and a signal
    handled in that wait would break it.
    """
    handler = _current
    if handler is None:
        return

    def send() -> None:
        time.sleep(delay)
        with _REDELIVERY:
            if handler.active:
                os.kill(os.getpid(), signum)

    _thread.start_new_thread(send, ())


@contextmanager
def _quiet_unraisable(debug: bool) -> Iterator[None]:
    """Within the block, an interrupt swallowed as "Exception ignored" prints nothing (unless ``debug``) and
    is delivered again, so that the command stops at once rather than at its end.

    Python swallows the handler's exception where it cannot propagate (a
    ``__del__``, a generator closed as it is collected, a weakref callback, an
    at-fork hook) and calls this hook from there; the hook sends the same signal
    again a moment later (:func:`_redeliver_later`), when the main thread is back
    in the command's own code, where the handler's exception propagates. Should
    it land in another such place, it is sent again. :func:`run_command` reports
    the interrupt once, on one line; any other unraisable exception goes to the
    previous hook.
    """
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        try:
            exc = unraisable.exc_value
            if isinstance(exc, (Terminated, KeyboardInterrupt)):
                _redeliver_later(exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT))
                if not debug:
                    return
            previous(unraisable)
        except Terminated as late:  # the signal sent again landed in this hook: once more, a moment later
            _redeliver_later(late.signum)
        except KeyboardInterrupt:
            _redeliver_later(int(signal.SIGINT))

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _interrupt_line(signum: int) -> str:
    if signum == signal.SIGINT:
        return classify(KeyboardInterrupt())[1]
    return classify(Terminated(signum))[1]


def _silence_stdout() -> None:
    """After a broken pipe, point standard output at /dev/null so that the final flush is quiet."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def run_command(
    name: str,
    func: Callable[[], int],
    *,
    debug: bool = False,
    stderr: TextIO | None = None,
) -> int:
    """Run ``func`` (a command body returning 0 or 1) under the exit-code contract.

    Returns the status. Every exception becomes one line on ``stderr``
    (``packing-theory NAME: ...``) and the status of :func:`classify`; with
    ``debug`` the traceback is printed first. A status outside 0–3 returned
    by ``func`` is itself an internal error (3).
    """
    err = stderr if stderr is not None else sys.stderr
    received: list[int] = []
    try:
        with _quiet_unraisable(debug), signals_as_exceptions(received):
            status = func()
    except SystemExit as exc:  # a library called sys.exit(): keep a contract status, else it is a bug
        if received:  # ... after it caught the interrupt
            print(f"packing-theory {name}: {_interrupt_line(received[0])}", file=err)
            return int(ExitCode.FAILED)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else ExitCode.FAILED)
        if code in tuple(ExitCode):
            return int(code)
        print(f"packing-theory {name}: internal error: exit status {exc.code!r} outside 0-3", file=err)
        return int(ExitCode.FAILED)
    except BaseException as exc:  # the contract: every failure becomes one line and a status
        code, line = classify(exc)
        if received and not isinstance(exc, (KeyboardInterrupt, Terminated)):
            code, line = ExitCode.FAILED, _interrupt_line(received[0])  # what the interrupt turned into
        if isinstance(exc, BrokenPipeError):
            _silence_stdout()
        if debug:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=err)
        print(f"packing-theory {name}: {line}", file=err)
        return int(code)
    if received:  # the interrupt's exception was swallowed ("Exception ignored") and the command went on
        print(f"packing-theory {name}: {_interrupt_line(received[0])}", file=err)
        return int(ExitCode.FAILED)
    if not isinstance(status, int) or isinstance(status, bool) or status not in tuple(ExitCode):
        print(f"packing-theory {name}: internal error: the command returned {status!r}, not a status 0-3",
              file=err)
        return int(ExitCode.FAILED)
    return int(status)
