"""Where tasks run: in this process, in local processes, on any executor, or on a Dask cluster.

A *task* is a picklable function and its arguments; a :class:`TaskRunner`
runs a list of them and hands every result to the caller **as it completes**
(so a census can write each shard's part before the next one finishes), after
the caller's ``accept`` check. What each runner does when something breaks:

====================  ==================================================================
runner                failure handling
====================  ==================================================================
in-process            a task that raises, or whose result fails ``accept``, is rerun up
                      to ``retries`` times
local processes       the same; a worker process that dies (``BrokenProcessPool``)
                      breaks the pool and fails every task in flight: those rerun one
                      at a time on a fresh pool, so the task that breaks a pool alone
                      is the one that fails (after one such rerun) and the others complete
any ``Executor``      the same on the given executor; when it breaks, the rest runs on a
                      fresh ``ProcessPoolExecutor`` owned by the runner
``dask.distributed``  ``client.submit(..., pure=False, retries=retries)``: the scheduler
                      reruns a task whose worker died, and ``retries`` reruns a task that
                      raised; attempts are read back from the scheduler's story of the key;
                      no worker for ``no_worker_wait_s`` (all died, none joined) fails the run
====================  ==================================================================

Every task's :class:`TaskRecord` names the worker that produced the accepted
result (``tcp://host:port`` on Dask, ``host/pid N`` for processes) and the
attempts it took. ``dask`` is imported only when a Dask executor is asked for;
without it the error names ``pip install "packing-theory[distributed]"``.

>>> parse_executor_spec("local"), parse_executor_spec("dask://10.0.0.5:8786")
('local', 'tcp://10.0.0.5:8786')
>>> with open_runner("local", workers=1) as runner:
...     out = {}
...     records = runner.run(pow, [(2, 3), (3, 2)], on_result=lambda i, v: out.__setitem__(i, v))
>>> out, [r.attempts for r in records]
({0: 8, 1: 9}, [1, 1])
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from .._checks import check_int
from ..errors import InputError, InputTypeError, NotMeasured
from .dask_client import (
    CONNECT_TIMEOUT_S,
    DASK_INSTALL_HINT,
    connect_dask,
    dask_attempts,
    dask_completed,
    default_no_worker_wait,
    import_distributed,
    is_dask_client,
    quiet_client_log,
    scheduler_gone,
)
from .pool_rules import bad_input, local_workers, pool_size
from .pools import default_signals, start_pool, stop_pool

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DASK_INSTALL_HINT",
    "LazyItems",
    "ResultRejected",
    "TaskFailed",
    "TaskRecord",
    "TaskRunner",
    "bad_input",
    "connect_dask",
    "default_signals",
    "import_distributed",
    "is_dask_client",
    "local_workers",
    "open_executor",
    "open_runner",
    "parse_executor_spec",
    "worker_identity",
]

Accept = Callable[[int, Any], None]
OnResult = Callable[[int, Any], None]


class LazyItems:
    """Task arguments built on demand: ``make(i)`` is called when task ``i`` is submitted (again on a retry).

    A pool keeps at most ``workers`` tasks in flight, so only their arguments
    exist at once (e.g. one rank's stream each instead of every rank's).
    """

    def __init__(self, n: int, make: Callable[[int], tuple[Any, ...]]) -> None:
        self.n = check_int("n", n, 0)
        self.make = make

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        if not 0 <= i < self.n:
            raise IndexError(f"task index {i} out of range for {self.n} tasks")
        return self.make(i)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return (self.make(i) for i in range(self.n))


Items = Sequence[tuple[Any, ...]] | LazyItems


class ResultRejected(NotMeasured):
    """A task's result failed the caller's ``accept`` check; the attempt counts as failed and is rerun."""


class TaskFailed(NotMeasured):
    """A task failed on every attempt (names the task, its attempts and the last error).

    The last error is the ``__cause__``; the command line reports a bad input found by a
    worker (an :class:`~packing_theory.errors.InputError` cause) as bad input, exit 2.
    """


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """Who ran task ``index``: the accepted result came from ``worker`` on attempt ``attempts``."""

    index: int
    worker: str
    attempts: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"worker": self.worker, "attempts": self.attempts}


def parse_executor_spec(spec: str) -> str:
    """``"local"`` -> ``"local"``; ``"dask://HOST:PORT"`` -> ``"tcp://HOST:PORT"`` (the scheduler address).

    Raises:
        ValueError: anything else, naming ``--executor`` and the value.
    """
    if not isinstance(spec, str):
        raise InputTypeError(f"executor must be a str, got {type(spec).__name__} {spec!r}")
    if spec == "local":
        return spec
    bad = InputError(f"--executor must be local or dask://HOST:PORT, got {spec!r}")
    if not spec.startswith("dask://"):
        raise bad
    host, sep, port = spec[len("dask://"):].rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
        raise bad
    return f"tcp://{host}:{int(port)}"


def worker_identity() -> str:
    """Where this code runs: the Dask worker's address inside a Dask task, else ``host/pid N``."""
    if "distributed" in sys.modules:  # never import dask just to ask
        with contextlib.suppress(ImportError, ValueError, AttributeError):
            from distributed import get_worker

            return str(get_worker().address)
    return f"{socket.gethostname()}/pid {os.getpid()}"


def _invoke(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, str]:
    """Run one task and say where it ran (executes inside the worker)."""
    return fn(*args), worker_identity()


class TaskRunner:
    """Run tasks on one executor with retries and result checks (see the module docstring).

    Args:
        kind: ``"inprocess"``, ``"processes"``, ``"executor"`` or ``"dask"``.
        target: the executor (``None`` in-process or for an owned pool) or the Dask client.
        workers: pool size for an owned process pool.
        retries: extra attempts per task (a task runs at most ``1 + retries`` times).
        spec: how the executor was named, recorded in manifests.
        no_worker_wait_s: a Dask run that has had no worker (all died, none joined)
            for this long fails with :class:`TaskFailed` naming the executor
            (``None``: :data:`~packing_theory.distributed.dask_client.NO_WORKER_WAIT_S`,
            read when the runner is made).

    Use :func:`open_runner` to build one; :meth:`close` shuts down what it owns.
    """

    def __init__(self, kind: str, target: Any, *, workers: int, retries: int, spec: str,
                 no_worker_wait_s: float | None = None) -> None:
        if kind not in ("inprocess", "processes", "executor", "dask"):
            raise InputError(f"kind must be inprocess, processes, executor or dask, got {kind!r}")
        self.kind = kind
        self.spec = spec
        self.workers = check_int("workers", workers, 1)
        self.retries = check_int("retries", retries, 0)
        wait_s = default_no_worker_wait() if no_worker_wait_s is None else no_worker_wait_s
        if isinstance(wait_s, bool) or not isinstance(wait_s, (int, float)) or not 0 < wait_s < float("inf"):
            raise InputError(f"no_worker_wait_s must be a finite number of seconds > 0, got {wait_s!r}")
        self.no_worker_wait_s = float(wait_s)
        """How long a Dask run waits while the scheduler has no worker before it gives up."""
        self._target = target
        self._owned: ProcessPoolExecutor | None = None
        self.fresh_pools = 0
        """Pools started after one broke (for the record)."""
        self._names: Callable[[int], str] | None = None
        self._check()

    def _check(self) -> None:
        """Assert the runner's invariants."""
        assert self.kind in ("inprocess", "processes", "executor", "dask")
        assert self.workers >= 1 and self.retries >= 0 and self.fresh_pools >= 0
        assert (self._target is None) == (self.kind in ("inprocess", "processes"))
        assert self.kind != "dask" or is_dask_client(self._target)
        assert self._owned is None or self.kind in ("processes", "executor")

    def close(self, *, now: bool = False) -> None:
        """Shut down the process pool this runner owns (a given executor or client is left running);
        ``now``: at once, its processes terminated (:func:`stop_pool`)."""
        if self._owned is not None:
            stop_pool(self._owned, now=now)
            self._owned = None

    def __enter__(self) -> TaskRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, fn: Callable[..., Any], items: Items, *,
            on_result: OnResult, accept: Accept | None = None, label: str = "task",
            names: Callable[[int], str] | None = None) -> list[TaskRecord]:
        """Run ``fn(*items[i])`` for every ``i``; call ``on_result(i, value)`` for each accepted result.

        ``accept(i, value)`` raising :class:`ResultRejected` rejects a result (it counts
        as a failed attempt). Results are delivered in completion order; the
        records come back in task order. Every task runs to the end before a
        failure is raised, so the others' results are delivered.

        ``names(i)`` names task ``i`` in a failure message (e.g. the file it
        reads); by default ``"{label} {i}"``. An exception raised by
        ``on_result`` stops the run at once: no further task is submitted.

        Raises:
            TaskFailed: some task failed on every attempt (the first such task is named).
        """
        if not items:
            return []
        self._names = names
        if self.kind == "inprocess":
            return self._run_inprocess(fn, items, on_result, accept, label)
        if self.kind == "dask":
            return self._run_dask(fn, items, on_result, accept, label)
        return self._run_pool(fn, items, on_result, accept, label)

    # ------------------------------------------------------------------ in this process

    def _run_inprocess(self, fn: Callable[..., Any], items: Items, on_result: OnResult,
                       accept: Accept | None, label: str) -> list[TaskRecord]:
        records: list[TaskRecord] = []
        failures: list[tuple[str, BaseException]] = []
        for i, args in enumerate(items):
            for attempt in range(1, self.retries + 2):
                try:
                    value, where = _invoke(fn, args)
                    if accept is not None:
                        accept(i, value)
                except Exception as exc:  # a task may raise anything; retried, then reported
                    if attempt > self.retries or bad_input(exc):
                        failures.append(_failure(label, i, attempt, exc, self._names))
                        break
                    continue
                on_result(i, value)
                records.append(TaskRecord(i, where, attempt))
                break
        _raise_failures(failures)
        return records

    # ------------------------------------------------------------------ process pools and executors

    def _pool(self, tasks: int) -> Executor:
        """The pool to submit to; an owned one is made with ``min(workers, tasks)`` processes."""
        if self.kind == "executor" and self._owned is None and self.fresh_pools == 0:
            return self._target  # type: ignore[no-any-return]
        if self._owned is None:
            size = max(1, min(self.workers, tasks))  # no process without a task to run
            self._owned = start_pool(size)
            self._check()  # a new pool is a mutation of the runner's state
        return self._owned

    def _replace_pool(self) -> None:
        if self._owned is not None:
            self._owned.shutdown(wait=False, cancel_futures=True)
            self._owned = None
        self.fresh_pools += 1
        self._check()

    def _run_pool(self, fn: Callable[..., Any], items: Items, on_result: OnResult,
                  accept: Accept | None, label: str) -> list[TaskRecord]:
        """Tasks on a pool, at most ``workers`` in flight on an owned pool (all at once on a given one).

        A pool that breaks fails every task in flight, not only the one whose
        process died: those tasks become *suspects* and rerun one at a time on a
        fresh pool, so the culprit is the one that breaks a pool alone (it fails
        after ``max(retries, 1)`` such reruns) and the others complete.
        """
        attempts = [0] * len(items)
        done: dict[int, TaskRecord] = {}
        failures: list[tuple[str, BaseException]] = []
        queue = deque(range(len(items)))
        suspects: deque[int] = deque()

        def settle(i: int, future: Future[tuple[Any, str]], broken: list[tuple[int, BaseException]]) -> None:
            """Deliver a finished task's result, or requeue / fail / mark it broken."""
            try:
                value, where = future.result()
                if accept is not None:
                    accept(i, value)
            except BrokenExecutor as exc:  # BrokenProcessPool included
                broken.append((i, exc))
                return
            except Exception as exc:  # a task may raise anything; retried (not bad input), then reported
                if attempts[i] <= self.retries and not bad_input(exc):
                    queue.append(i)
                else:
                    failures.append(_failure(label, i, attempts[i], exc, self._names))
                return
            on_result(i, value)
            done[i] = TaskRecord(i, where, attempts[i])

        while queue or suspects:
            alone = bool(suspects)
            pool = self._pool(1 if alone else len(queue))
            window = 1 if alone else (self.workers if pool is self._owned else len(items))
            source = suspects if alone else queue
            in_flight: dict[Future[tuple[Any, str]], int] = {}
            broken: list[tuple[int, BaseException]] = []
            refused = False  # the pool broke between two submissions
            while (source or in_flight) and not broken and not refused:
                while source and len(in_flight) < window:
                    i = source.popleft()
                    try:
                        future = pool.submit(_invoke, fn, items[i])
                    except BrokenExecutor:
                        source.appendleft(i)  # never ran: not an attempt
                        refused = True
                        break
                    attempts[i] += 1
                    in_flight[future] = i
                if not in_flight:
                    break
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    i = in_flight.pop(future)
                    settle(i, future, broken)
                if alone and not broken:
                    break  # one suspect cleared: take the next one alone
            if not broken and not refused:
                continue
            for future, i in in_flight.items():  # the rest of the broken pool's tasks
                wait([future])
                settle(i, future, broken)
            self._replace_pool()
            for i, error in sorted(broken, key=lambda pair: pair[0]):
                if not alone:
                    suspects.append(i)  # in flight when a process died: rerun alone to find the culprit
                elif attempts[i] <= max(self.retries, 1):
                    suspects.append(i)
                else:
                    failures.append(_failure(label, i, attempts[i], error, self._names))
        _raise_failures(failures)
        return [done[i] for i in sorted(done)]

    # ------------------------------------------------------------------ dask

    def _run_dask(self, fn: Callable[..., Any], items: Items, on_result: OnResult,
                  accept: Accept | None, label: str) -> list[TaskRecord]:
        distributed = import_distributed()
        client = self._target
        token = secrets.token_hex(4)
        attempts = [0] * len(items)
        extra = [0] * len(items)  # attempts under earlier keys (a rejected result gets a new key)
        done: dict[int, TaskRecord] = {}
        failures: list[tuple[str, BaseException]] = []

        def submit(i: int) -> Any:
            attempts[i] += 1
            key = f"packing-theory-{label}-{token}-{i}-{attempts[i]}"
            try:
                return client.submit(_invoke, fn, items[i], pure=False, retries=self.retries, key=key)
            except Exception as exc:  # ClosedClientError, CommClosedError: the scheduler is gone
                raise TaskFailed(f"executor {self.spec}: cannot submit {label} {i} to the Dask scheduler "
                                 f"({scheduler_gone(client) or type(exc).__name__}: {exc})") from exc

        index: dict[str, int] = {}
        futures = []
        for i in range(len(items)):
            future = submit(i)
            index[future.key] = i
            futures.append(future)
        queue = distributed.as_completed(futures, loop=client.loop)
        for future in dask_completed(queue, client, no_worker_wait_s=self.no_worker_wait_s, spec=self.spec,
                                     error=TaskFailed):
            i = index[future.key]
            tries = dask_attempts(client, future.key)
            try:  # the scheduler already reran it: after a worker died, and `retries` times after an error
                value, where = future.result()
            except Exception as exc:  # KilledWorker, or the task's own error
                gone = scheduler_gone(client)
                if gone is not None:
                    raise TaskFailed(f"executor {self.spec}: the Dask scheduler went away ({gone})") from exc
                failures.append(_failure(label, i, extra[i] + tries, exc, self._names, where=_DASK_WHERE))
                continue
            try:
                if accept is not None:
                    accept(i, value)
            except ResultRejected as exc:  # a result that fails its check: resubmitted under a new key
                extra[i] += tries
                if attempts[i] <= self.retries:
                    again = submit(i)
                    index[again.key] = i
                    queue.add(again)
                else:
                    failures.append(_failure(label, i, extra[i], exc, self._names))
                continue
            on_result(i, value)
            done[i] = TaskRecord(i, where, extra[i] + tries)
        _raise_failures(failures)
        return [done[i] for i in sorted(done)]


_DASK_WHERE = ("on a Dask worker, which reads every input itself: it must be readable there at the same "
               "absolute path")


def _failure(label: str, i: int, attempts: int, exc: BaseException,
             names: Callable[[int], str] | None = None, where: str = "") -> tuple[str, BaseException]:
    detail = " ".join(str(exc).split())[:300]
    what = f"{label} {i}" if names is None else names(i)
    hint = f" ({where})" if where and isinstance(exc, (FileNotFoundError, PermissionError)) else ""
    return f"{what} failed after {attempts} attempt(s): {type(exc).__name__}: {detail}{hint}", exc


def _raise_failures(failures: list[tuple[str, BaseException]]) -> None:
    """Raise :class:`TaskFailed` for the first failure (its exception as the cause), if any."""
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        message, cause = failures[0]
        raise TaskFailed(message + more) from cause


@contextlib.contextmanager
def open_runner(executor: object = "local", *, workers: int = 1, retries: int = 1) -> Iterator[TaskRunner]:
    """A :class:`TaskRunner` for ``executor``, closed (owned pools and clients) on exit.

    Args:
        executor: an open :class:`TaskRunner` (used as is), ``None`` or ``"local"``
            (``workers=1``: in this process; ``workers > 1``: a ``ProcessPoolExecutor``
            of that size; ``workers=0``: one process per CPU), ``"dask://HOST:PORT"`` (a ``dask.distributed``
            client connected for the block), a ``dask.distributed.Client``, or any
            :class:`concurrent.futures.Executor`.
        workers: local pool size (``>= 0``).
        retries: extra attempts per task.

    Raises:
        ValueError: a malformed executor string, ``workers < 0``.
        TypeError: an executor of another type.
        ImportError: a Dask executor without dask installed (naming the extra).
    """
    if isinstance(executor, TaskRunner):  # already open: the caller closes it
        yield executor
        return
    workers = check_int("workers", workers, 0) or (os.cpu_count() or 1)
    retries = check_int("retries", retries, 0)
    client = None
    if executor is None or isinstance(executor, str):
        spec = "local" if executor is None else executor
        address = parse_executor_spec(spec)
        if address == "local":
            kind = "inprocess" if workers == 1 else "processes"  # processes asked for: isolated on 1 CPU too
            workers = local_workers(workers)
            runner = TaskRunner(kind, None, workers=workers, retries=retries,
                                spec="local" if kind == "inprocess" else f"local, {workers} processes")
        else:
            client = connect_dask(address)
            runner = TaskRunner("dask", client, workers=workers, retries=retries, spec=spec)
    elif is_dask_client(executor):
        runner = TaskRunner("dask", executor, workers=workers, retries=retries,
                            spec=f"dask {getattr(executor.scheduler, 'address', '?')}")  # type: ignore[attr-defined]
    elif isinstance(executor, Executor):
        runner = TaskRunner("executor", executor, workers=workers, retries=retries,
                            spec=type(executor).__name__)
    else:
        raise InputTypeError(f"executor must be 'local', 'dask://HOST:PORT', a dask.distributed.Client or a "
                             f"concurrent.futures.Executor, got {type(executor).__name__}")
    try:
        with quiet_client_log() if client is not None else contextlib.nullcontext():
            yield runner
    except BaseException:  # an interrupt or an error: stop the processes now, never wait for their tasks
        runner.close(now=True)
        raise
    finally:
        runner.close()
        if client is not None:
            with contextlib.suppress(Exception):  # a client whose scheduler died is closed already
                client.close()


@contextlib.contextmanager
def open_executor(spec: str = "local", *, workers: int = 1, retries: int = 1,
                  tasks: int | None = None) -> Iterator[Executor | None]:
    """An :class:`~concurrent.futures.Executor` for :func:`~packing_theory.orchestration.run_audit`.

    ``"local"``: ``None`` for ``workers=1`` (in this process), else a
    ``ProcessPoolExecutor`` (``workers=0``: one per CPU) of at most one process
    per CPU and, given ``tasks``, per task (:func:`~packing_theory.distributed.pool_rules.pool_size`);
    ``"dask://HOST:PORT"``: the connected client's ``get_executor(pure=False, retries=retries)``.

    Raises:
        ValueError: a malformed spec or ``workers < 0``.
        ImportError: a Dask spec without dask installed.
    """
    address = parse_executor_spec(spec)
    workers = check_int("workers", workers, 0) or (os.cpu_count() or 1)
    if address == "local":
        asked = workers
        workers = pool_size(workers, tasks)[0]
        pool = start_pool(workers) if asked > 1 else None
        try:
            yield pool
        except BaseException:  # an interrupt or an error: stop the processes now, never wait for their tasks
            if pool is not None:
                stop_pool(pool, now=True)
            raise
        if pool is not None:
            stop_pool(pool)
        return
    client = connect_dask(address)
    try:
        yield client.get_executor(pure=False, retries=check_int("retries", retries, 0))
    finally:
        client.close()
