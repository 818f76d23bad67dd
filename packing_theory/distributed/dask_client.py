"""The Dask side of the task runners: connecting to a scheduler, waiting for results, reading attempts.

Kept apart from :mod:`packing_theory.distributed.executors` (the runners) so that
each stays under 600 lines; ``dask.distributed`` is imported only when a Dask
executor is used (:func:`import_distributed`).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from typing import Any

from ..errors import InputError, import_optional

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DASK_INSTALL_HINT",
    "DASK_POLL_S",
    "NO_WORKER_WAIT_S",
    "connect_dask",
    "dask_attempts",
    "dask_completed",
    "dask_workers",
    "default_no_worker_wait",
    "import_distributed",
    "is_dask_client",
    "quiet_client_log",
    "scheduler_gone",
]

DASK_INSTALL_HINT = "pip install 'packing-theory[distributed]'"
"""What to install for the Dask executor (named in the ImportError)."""


def import_distributed() -> Any:
    """The ``distributed`` module, or :class:`~packing_theory.errors.MissingDependency` naming the extra."""
    return import_optional("distributed", extra="distributed", purpose="the dask executor")


def is_dask_client(obj: object) -> bool:
    """Whether ``obj`` is a ``dask.distributed.Client`` (checked without importing dask)."""
    return any(c.__module__.startswith("distributed.") and c.__name__ == "Client" for c in type(obj).__mro__)


CONNECT_TIMEOUT_S = 20.0
"""How long :func:`connect_dask` waits for a Dask scheduler before giving up (seconds)."""

NO_WORKER_WAIT_S = 120.0
"""How long a Dask run waits while the scheduler has no worker before it fails (seconds).

A scheduler whose workers all died (and none was restarted or joined) keeps
the tasks waiting for a worker forever; the run checks every
:data:`DASK_POLL_S` seconds and gives up, as "could not measure" naming the
executor, once it has seen no worker for this long. A run whose workers are
alive but slow waits as long as it takes.
"""

def default_no_worker_wait() -> float:
    """:data:`NO_WORKER_WAIT_S` as it is now (read when a runner is made, so a test may lower it)."""
    return NO_WORKER_WAIT_S


DASK_POLL_S = 1.0
"""How often a Dask run looks at the scheduler's workers while no task completes (seconds)."""

_IDLE_S = 0.05  # how long the wait for a result sleeps between looks at the queue


def connect_dask(address: str, *, timeout: float = CONNECT_TIMEOUT_S) -> Any:
    """A ``dask.distributed.Client`` connected to ``address`` (``tcp://HOST:PORT``), or a one-line error.

    The TCP port is tried first (a closed port or an unknown host fails at
    once); the client's handshake then runs in a daemon thread with a deadline,
    since a port held by another service (an HTTP server, say) can leave it
    waiting forever. A half-built client is closed, never left to its
    ``__del__``.

    Raises:
        ValueError: the scheduler cannot be reached within ``timeout`` seconds,
            naming ``--executor`` and the address.
        ImportError: dask is not installed (naming the extra).
    """
    import threading

    distributed = import_distributed()
    spec = "dask://" + address[len("tcp://"):]
    host, _, port = address[len("tcp://"):].rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise InputError(f"--executor {spec}: cannot reach a Dask scheduler ({exc})") from None
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = distributed.Client(address, set_as_default=False, timeout=timeout)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        if box.pop("abandoned", False) and "client" in box:
            with contextlib.suppress(Exception):
                box["client"].close(timeout=1)

    thread = threading.Thread(target=connect, name="packing-theory-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive():
        box["abandoned"] = True
        raise InputError(f"--executor {spec}: no Dask scheduler answered within {timeout:g} s "
                         "(is it a Dask scheduler's address?)")
    if "error" in box:
        failure = box["error"]
        raise InputError(f"--executor {spec}: cannot connect to a Dask scheduler "
                         f"({type(failure).__name__}: {' '.join(str(failure).split())[:200]})") from None
    return box["client"]


def scheduler_gone(client: Any) -> str | None:
    """Why ``client`` can no longer reach its scheduler (``None``: it still can).

    A client whose scheduler died tries to reconnect for a while (``distributed``'s
    connect timeout) and then closes itself; from then on every call fails.
    """
    status = str(getattr(client, "status", "running"))
    return None if status in ("running", "connecting", "newly-created") else f"the client is {status}"


def dask_workers(client: Any) -> int:
    """How many workers the scheduler has now (0 when it cannot tell)."""
    try:
        return len(client.scheduler_info().get("workers", {}))
    except Exception:  # a scheduler that went away or does not answer counts as no worker
        return 0


def dask_attempts(client: Any, key: str) -> int:
    """How often the scheduler started ``key`` (its story's transitions to ``processing``); at least 1."""
    try:
        story = client.story(key)
    except Exception:  # an older scheduler without stories: count what we know
        return 1
    starts = sum(1 for entry in story if len(entry) >= 4 and entry[0] == "scheduler" and entry[1] == key
                 and entry[3] == "processing")
    return max(starts, 1)


def dask_completed(queue: Any, client: Any, *, no_worker_wait_s: float, spec: str,
                   error: type[Exception]) -> Iterator[Any]:
    """Yield the futures of the ``distributed.as_completed`` ``queue`` as they finish, with a bounded wait.

    The caller may ``queue.add`` futures while iterating. While none is ready the
    scheduler's workers are counted every :data:`DASK_POLL_S` seconds; after
    ``no_worker_wait_s`` seconds in which it had no worker (all died, none joined:
    the tasks would wait forever) ``error`` is raised naming ``spec``, and at once
    when the client has lost its scheduler (:func:`scheduler_gone`). Workers that
    are alive but slow are waited for as long as it takes.

    Raises:
        error: no worker for ``no_worker_wait_s`` seconds, or no scheduler, naming the executor.
    """
    poll = min(DASK_POLL_S, no_worker_wait_s)
    next_poll = time.monotonic() + poll
    alone_since: float | None = None
    while not queue.is_empty():
        if queue.has_ready():
            alone_since = None
            yield next(queue)
            continue
        time.sleep(_IDLE_S)
        now = time.monotonic()
        if now < next_poll:
            continue
        next_poll = now + poll
        gone = scheduler_gone(client)
        if gone is not None:
            raise error(f"executor {spec}: the Dask scheduler went away ({gone}) while {queue.count()} "
                        "task(s) waited")
        if dask_workers(client) > 0:
            alone_since = None
            continue
        alone_since = now if alone_since is None else alone_since
        if now - alone_since >= no_worker_wait_s:
            raise error(f"executor {spec}: the Dask scheduler has had no worker for {no_worker_wait_s:g} s "
                        f"(all died or none joined) while {queue.count()} task(s) waited for one")


@contextlib.contextmanager
def quiet_client_log() -> Iterator[None]:
    """Within the block, ``distributed``'s client logs only critical records.

    A client whose scheduler died logs "Failed to reconnect to scheduler ...,
    closing client" at ERROR level before the run fails with its own one line;
    a command line prints one line. Used only for a client the runner connected
    itself (a ``dask://`` spec), never for one a caller passed in.
    """
    import logging

    logger = logging.getLogger("distributed.client")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
