"""The exit-code contract: 0 nothing found, 1 something found, 2 bad usage/input, 3 could not measure."""

from __future__ import annotations

import argparse
import errno
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import COMMANDS, build_parser, main
from packing_theory.cli._exit import EPILOG, ExitCode, Terminated, classify, run_command
from packing_theory.errors import Finding, InputError, InputTypeError, MissingDependency, NotMeasured
from tests.signal_helpers import wait_until_caught

SMALL = ["--capacity", "16", "--min-buffer", "4", "--refill", "2"]


@pytest.fixture()
def lengths_file(tmp_path: Path) -> Path:
    path = tmp_path / "l.npy"
    np.save(path, np.arange(1, 60, dtype=np.int64) % 23 + 1)
    return path


def stderr_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def test_codes_are_the_documented_ones() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3]
    for word in ("0 = ran and found nothing", "1 = ran and found something", "2 = bad usage",
                 "3 = could not measure", "--debug"):
        assert word in EPILOG


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_documents_the_contract(command: str, capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert " ".join(EPILOG.split()) in text
    assert "--debug" in text


def test_top_level_help_and_usage_errors_return_a_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "Exit status" in capsys.readouterr().out
    assert main([]) == 2
    assert "COMMAND" in stderr_line(capsys)
    assert main(["nosuchcommand"]) == 2
    assert "nosuchcommand" in stderr_line(capsys)
    assert main(["replay"]) == 2  # --lengths is required
    assert "--lengths" in stderr_line(capsys)


def test_a_future_command_gets_the_contract_by_construction(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A subcommand module registered in COMMANDS is wrapped without doing anything itself."""
    import types

    mod = types.ModuleType("packing_theory_fake_command")

    def register(sub: Any) -> None:
        p = sub.add_parser("fake", help="a fake command")
        p.add_argument("--what", default="ok")
        p.set_defaults(run=run)

    def run(args: argparse.Namespace) -> int:
        if args.what == "bad":
            raise InputError("--what must not be 'bad'")
        if args.what == "foreign":  # a plain ValueError is not one of ours: an input we did not validate
            raise ValueError("raised by third-party code")
        if args.what == "finding":
            raise Finding("the identity is broken")
        if args.what == "unmeasured":
            raise NotMeasured("shard 3 was not read")
        if args.what == "bug":
            return {}["missing"]  # type: ignore[no-any-return]
        return 1 if args.what == "found" else 0

    mod.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(COMMANDS, "fake", mod.__name__)
    assert "fake" in build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert main(["fake"]) == 0
    assert main(["fake", "--what", "found"]) == 1
    assert main(["fake", "--what", "bad"]) == 2
    assert stderr_line(capsys) == "packing-theory fake: error: --what must not be 'bad'"
    assert main(["fake", "--what", "foreign"]) == 3
    assert "internal error: ValueError: raised by third-party code" in stderr_line(capsys)
    assert main(["fake", "--what", "bug"]) == 3
    assert "internal error: KeyError: 'missing'" in stderr_line(capsys)
    assert main(["fake", "--what", "finding"]) == 1
    assert stderr_line(capsys) == "packing-theory fake: found: the identity is broken"
    assert main(["fake", "--what", "unmeasured"]) == 3
    assert stderr_line(capsys) == "packing-theory fake: could not measure: shard 3 was not read"
    assert main(["fake", "--what", "bug", "--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("packing-theory fake: internal")
    assert main(["--debug", "fake", "--what", "bug"]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_false_npy_header_is_bad_input_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    """A header claiming 2**40 elements: before the fix, a MemoryError traceback with status 1."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<i8", "fortran_order": False, "shape": (2**40,)})
    path = tmp_path / "huge.npy"
    path.write_bytes(buf.getvalue() + b"\x01" * 64)
    for command in (["replay"], ["check"], ["bounds"], ["audit", "--no-plots", "--out", str(tmp_path / "o")]):
        assert main([*command, "--lengths", str(path)]) == 2
        line = stderr_line(capsys)
        assert "huge.npy" in line and "claims shape (1099511627776,)" in line


@pytest.mark.parametrize(
    ("exc", "code", "needle"),
    [
        (MemoryError("Unable to allocate 8 TiB"), 3, "out of memory"),
        (KeyboardInterrupt(), 3, "interrupted"),
        (Terminated(15), 3, "SIGTERM"),
        (OSError(errno.ENOSPC, "No space left on device"), 3, "could not complete"),
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), 3, "could not complete"),
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "x.npy"), 2, "x.npy"),
        (PermissionError(errno.EACCES, "Permission denied", "out"), 2, "Permission denied"),
        (InputError("--out 'x' is locked"), 2, "locked"),
        (AssertionError("invariant"), 3, "internal error: AssertionError"),
        (InputTypeError("capacity must be an int, got str '8'"), 2, "capacity must be an int"),
        (MissingDependency("PNG plots: matplotlib is not installed"), 2, "matplotlib"),
        (Finding("violation"), 1, "found: violation"),
        (NotMeasured("reference split loaded 0 rows"), 3, "could not measure"),
        (ValueError("from numpy"), 3, "internal error: ValueError"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), 2, "utf-8"),
        (ZeroDivisionError("division by zero"), 3, "internal error"),
        (RecursionError("deep"), 3, "internal error"),
    ],
)
def test_classification(exc: BaseException, code: int, needle: str, capsys: pytest.CaptureFixture[str]
                        ) -> None:
    def boom() -> int:
        raise exc

    assert run_command("x", boom) == code
    line = stderr_line(capsys)
    assert line.startswith("packing-theory x: ") and needle in line


def test_a_failed_task_is_classified_by_its_cause() -> None:
    """A worker's bad input reaches the parent as the cause of TaskFailed: still bad input (2)."""
    from packing_theory.distributed.executors import TaskFailed

    try:
        raise TaskFailed("census 2 failed after 1 attempt: texts[0] is empty") from InputError("empty")
    except TaskFailed as exc:
        assert classify(exc) == (ExitCode.USAGE, "error: census 2 failed after 1 attempt: texts[0] is empty")
    try:
        raise TaskFailed("rank 1 failed after 2 attempts") from KeyError("x")
    except TaskFailed as exc:
        assert classify(exc)[0] == ExitCode.FAILED


def test_library_exceptions_are_standard_ones_too() -> None:
    """InputError is a ValueError, InputTypeError a TypeError; a Finding is never an AssertionError."""
    import packing_theory as pt

    assert issubclass(pt.InputError, ValueError) and issubclass(pt.InputTypeError, TypeError)
    assert issubclass(pt.MissingDependency, ImportError)
    assert not issubclass(pt.InvariantViolation, AssertionError)
    assert issubclass(pt.InvariantViolation, pt.Finding)
    for cls in (pt.InputError, pt.InputTypeError, pt.MissingDependency, pt.NotMeasured, pt.Finding):
        assert issubclass(cls, pt.PackingTheoryError)
    with pytest.raises(pt.InputTypeError, match="capacity must be an int"):
        pt.PackerConfig(capacity="8")  # type: ignore[arg-type]


def test_no_traceback_inspection_in_the_cli() -> None:
    """The exit status depends on the exception's class only (no frame or file-path reading)."""
    import inspect

    import packing_theory.cli._exit as exit_module

    source = inspect.getsource(exit_module)
    for needle in ("tb_frame", "co_filename", "__traceback__.tb", "_RemoteTraceback", "extract_tb"):
        assert needle not in source


def test_value_errors_from_third_party_code_are_internal_errors() -> None:
    """numpy raising on an input we did not validate is our bug, not the user's (status 3)."""
    try:
        np.zeros(-1)
    except ValueError as exc:
        assert classify(exc)[0] == ExitCode.FAILED
    import packing_theory as pt

    try:
        pt.PackerConfig(capacity=1)
    except ValueError as exc:
        assert classify(exc) == (ExitCode.USAGE, "error: capacity must be >= 2, got 1")


def test_messages_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def boom() -> int:
        raise InputError("first line\nsecond line\n\n  third")

    assert run_command("x", boom) == 2
    assert stderr_line(capsys) == "packing-theory x: error: first line second line third"


@pytest.mark.parametrize("status", [5, -1, None, True, "0"])
def test_a_command_returning_a_non_status_is_an_internal_error(status: object,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command("x", lambda: status) == 3  # type: ignore[arg-type,return-value]
    assert "internal error" in stderr_line(capsys)


def test_system_exit_inside_a_command() -> None:
    def leave(code: object) -> Any:
        def f() -> int:
            raise SystemExit(code)
        return f

    assert run_command("x", leave(1)) == 1
    assert run_command("x", leave(None)) == 0
    assert run_command("x", leave(7), stderr=io.StringIO()) == 3


def test_violation_is_status_1_and_clean_run_status_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    path = tmp_path / "l.npy"
    np.save(path, np.array([9, 3, 9, 2, 12, 5, 1, 1, 7, 30] * 5, dtype=np.int64))
    base = ["check", "--lengths", str(path), "--capacity", "4", "--min-buffer", "3", "--refill", "1"]
    assert main([*base, "--policy", "discard"]) == 0
    assert main([*base, "--policy", "requeue-bos"]) == 1


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the signal mask from /proc (Linux)")
def test_sigterm_in_a_real_process_is_status_3_without_traceback(tmp_path: Path) -> None:
    """A long replay terminated by SIGTERM once its handler is installed: one line, status 3."""
    import signal

    path = tmp_path / "big.npy"
    np.save(path, (np.arange(3_000_000, dtype=np.int64) % 3000) + 1)
    proc = subprocess.Popen([sys.executable, "-m", "packing_theory.cli", "replay", "--lengths", str(path),
                             "--passes", "50"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until_caught(proc, signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "interrupted (terminated by SIGTERM)" in err
    assert len(err.strip().splitlines()) == 1


class _RaisesSignalWhenCollected:
    """Sends ``signum`` to this process from ``__del__``: the handler's exception is "unraisable" there."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        import signal

        signal.raise_signal(self.signum)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_an_interrupt_python_swallows_is_still_status_3_on_one_line(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A signal handled inside ``__del__`` (or an at-fork hook, as while a pool forks its workers) raises
    where Python can only print "Exception ignored" and go on: before the fix the command then finished
    and returned 0, after a traceback."""
    import signal

    signum = getattr(signal, name)

    def body() -> int:
        _RaisesSignalWhenCollected(signum)  # collected at once: __del__ runs the handler
        return 0

    assert run_command("x", body) == 3
    line = stderr_line(capsys)
    assert "Exception ignored" not in line
    expected = "interrupted (SIGINT)" if name == "SIGINT" else "interrupted (terminated by SIGTERM)"
    assert line == f"packing-theory x: {expected}; nothing more was measured"


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_an_interrupt_python_swallows_stops_the_command_at_once(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix the swallowed interrupt was only reported when the command ended by itself: a long
    replay ran on for minutes after SIGTERM. Now the signal is sent again and stops the body where it is."""
    import signal
    import time

    steps: list[int] = []

    def body() -> int:
        _RaisesSignalWhenCollected(getattr(signal, name))  # swallowed in __del__
        for i in range(6000):  # 60 s of work if nothing stops it
            steps.append(i)
            time.sleep(0.01)
        return 0

    assert run_command("x", body) == 3
    assert len(steps) < 6000, "the command ran to its end after the interrupt"
    expected = "interrupted (SIGINT)" if name == "SIGINT" else "interrupted (terminated by SIGTERM)"
    assert stderr_line(capsys) == f"packing-theory x: {expected}; nothing more was measured"
    from packing_theory.cli._exit import _Handler

    assert not any(isinstance(signal.getsignal(s), _Handler) for s in (signal.SIGTERM, signal.SIGINT))


def test_an_interrupt_swallowed_just_before_signals_are_held_still_stops_the_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A report's files are written with the signals held back: a swallowed signal sent again then is
    held and handed on after the block, not dropped (before, the command ran on to its end)."""
    import signal
    import time

    from packing_theory.reporting.files import signals_held

    steps: list[int] = []

    def body() -> int:
        _RaisesSignalWhenCollected(signal.SIGTERM)
        with signals_held():
            time.sleep(0.05)  # the signal is sent again in here
        for i in range(6000):
            steps.append(i)
            time.sleep(0.01)
        return 0

    assert run_command("x", body) == 3
    assert not steps, "the command went on after the signals were handed on"
    assert stderr_line(capsys) == ("packing-theory x: interrupted (terminated by SIGTERM); "
                                   "nothing more was measured")


def test_a_signal_as_the_handlers_are_put_back_is_not_lost(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A Ctrl-C that lands just after the block's handlers are put back raises in the restored handler;
    before, the retry around the restore swallowed it and the command returned 0."""
    import signal

    from packing_theory.cli import _exit

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    restore = _exit._restore
    sent: list[int] = []

    def restore_then_interrupt(*args: Any) -> None:
        restore(*args)
        if not sent:
            sent.append(1)
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(_exit, "_restore", restore_then_interrupt)
    try:
        assert run_command("x", lambda: 0) == 3
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sent and stderr_line(capsys) == "packing-theory x: interrupted (SIGINT); nothing more was measured"


def test_an_interrupt_turned_into_another_error_is_reported_as_the_interrupt(
        capsys: pytest.CaptureFixture[str]) -> None:
    import signal

    def body() -> int:
        try:
            signal.raise_signal(signal.SIGTERM)
        except BaseException as exc:  # a library that wraps whatever it catches
            raise RuntimeError("worker pool failed") from exc
        return 0

    assert run_command("x", body) == 3
    assert stderr_line(capsys) == ("packing-theory x: interrupted (terminated by SIGTERM); "
                                   "nothing more was measured")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_process_forked_under_the_handlers_ends_by_the_signal_without_an_exception() -> None:
    """A pool worker forked inside a command and signalled before its initializer ran: before the fix the
    inherited handler raised Terminated in the worker (a traceback per worker)."""
    import os
    import signal

    from packing_theory.cli._exit import signals_as_exceptions

    with signals_as_exceptions():
        pid = os.fork()
        if pid == 0:  # the child: whatever happens, never return into pytest
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                os._exit(0)
            except BaseException:
                os._exit(7)
        _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux: the ppid field of /proc/*/stat)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _census_inputs(tmp_path: Path) -> list[str]:
    names = []
    for i in range(40):
        (tmp_path / f"t{i}.txt").write_text(("lorem ipsum dolor " * 4000 + "\n") * 20)
        names.append(f"t{i}.txt")
    return names


_SPAWN_THEN_SIGNAL = """
import signal, sys
import concurrent.futures.process as pool
spawn, sent = pool.ProcessPoolExecutor._spawn_process, []
def spawn_then_signal(self):
    spawn(self)
    if not sent:
        sent.append(True)
        signal.raise_signal(getattr(signal, sys.argv[1]))
pool.ProcessPoolExecutor._spawn_process = spawn_then_signal
from packing_theory.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="a pool forks its workers")
@pytest.mark.parametrize("command", ["audit", "census"])
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_between_two_forks_of_the_pool_ends_the_command(command: str, name: str,
                                                                 tmp_path: Path) -> None:
    """The signal arrives right after the pool's first worker is forked, before the next (a deterministic
    stand-in for a Ctrl-C or SIGTERM during pool start-up). Before the fix the interrupt left a worker the
    pool did not know of, which the interpreter waited for at exit: the line was printed, then the
    process hung (SIGTERM: more than 60 s once in 8 tries; Ctrl-C: a traceback once in 6)."""
    import os
    import signal

    if command == "audit":
        np.save(tmp_path / "l.npy", np.array([5, 9, 3, 12, 40, 2, 7] * 20, dtype=np.int64))
        argv = ["audit", "--lengths", "l.npy", "--capacity", "16", "--min-buffer", "2", "--workers", "2",
                "--no-plots", "--out", "rep"]
    else:
        argv = ["census", "--text", *_census_inputs(tmp_path)[:4], "--workers", "2", "--out", "rep"]
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _SPAWN_THEN_SIGNAL, name, *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=120)  # bounds the hang; a run takes seconds
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the command hung after the interrupt (a pool worker left behind)")
    expected = "interrupted (SIGINT)" if name == "SIGINT" else "interrupted (terminated by SIGTERM)"
    assert proc.returncode == 3, err
    assert err.strip().splitlines() == [f"packing-theory {command}: {expected}; nothing more was measured"]
    assert not (tmp_path / "rep" / "census.json").exists() and not (tmp_path / "rep" / "audit.json").exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc (Linux)")
@pytest.mark.parametrize("command", ["audit", "census"])
def test_sigterm_while_the_worker_pool_starts_is_status_3_on_one_line(command: str, tmp_path: Path) -> None:
    """SIGTERM to the whole process group as soon as the pool's first worker exists, then again until the
    command ends: status 3 and one line, whatever the signals interrupt (a fork, an at-fork hook, a
    worker's start, the pool's shutdown). Before the fix a signal handled in logging's at-fork hook was
    swallowed ("Exception ignored ... Terminated", then the report and status 0)."""
    import os
    import signal
    import time

    if command == "audit":
        np.save(tmp_path / "big.npy", (np.arange(2_000_000, dtype=np.int64) % 3000) + 1)
        argv = ["audit", "--lengths", "big.npy", "--workers", "2", "--no-plots", "--no-progress",
                "--out", "rep"]
    else:
        argv = ["census", "--text", *_census_inputs(tmp_path), "--workers", "2", "--out", "rep"]
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "packing_theory.cli", *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None and not _children(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.001)
    assert proc.poll() is None, "the command ended before its pool started"
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.strip().splitlines() == [f"packing-theory {command}: interrupted (terminated by SIGTERM); "
                                        "nothing more was measured"]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the mappings from /proc (Linux)")
def test_ctrl_c_while_the_command_starts_is_one_line(tmp_path: Path) -> None:
    """SIGINT every 5 ms from the moment the package starts importing (numpy's library is mapped) until the
    process ends: during the imports and the argument parsing it is one line and status 130; once the
    command runs, the contract's status 3. Before the fix: a KeyboardInterrupt traceback."""
    import os
    import signal
    import time

    np.save(tmp_path / "big.npy", (np.arange(3_000_000, dtype=np.int64) % 3000) + 1)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "packing_theory.cli", "replay", "--lengths", "big.npy",
                             "--passes", "50"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if "numpy" in maps.read_text():
                break
        except OSError:
            break
        time.sleep(0.001)
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(0.005)
    _, err = proc.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, err
    assert (proc.returncode, lines[0]) in {
        (130, "packing-theory: interrupted (SIGINT) while starting; nothing was run"),
        (3, "packing-theory replay: interrupted (SIGINT); nothing more was measured"),
    }
