"""What every command does with its options once parsed: the packers, the settings, the horizon, the workers.

The options themselves are in :mod:`packing_theory.cli._options`; this module
turns them into the library's values — :func:`packers_from_args` (``--policy``),
:func:`settings_from_args` (one :class:`~packing_theory.orchestration.measure.Settings`
for every packer: the row width, the streaming knobs, each framework packer's
options), :func:`horizon_from_args` (``--rows | --targets | --tokens |
--natural-end | --common-horizon``) and :func:`workers_from_args`. Nothing
heavy is imported at module level: the functions import the library when called.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..engine.horizon import Budget
    from ..orchestration.settings import Settings

__all__ = [
    "check_executor",
    "counted",
    "emit_json",
    "horizon_from_args",
    "note",
    "packers_from_args",
    "settings_from_args",
    "with_row_progress",
    "workers_from_args",
]


def counted(n: int, noun: str) -> str:
    """``n`` with ``noun``, plural unless ``n`` is 1: ``counted(1, "document") == "1 document"``,
    ``counted(4400, "document") == "4,400 documents"``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def note(command: str, message: str) -> None:
    """An informational line on standard error, on a terminal only.

    Every command ends with exactly one summary line; what it decided on the
    way (a detected format, how BOS is counted) is recorded in its report and
    shown as a note only to a person watching a terminal.
    """
    if sys.stderr.isatty():
        print(f"{command}: {message}", file=sys.stderr)


def emit_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON on standard output."""
    json.dump(payload, sys.stdout, indent=2)
    sys.stdout.write("\n")


def with_row_progress(events: Iterable[Any], bar: Callable[[int], None] | None) -> Iterator[Any]:
    """``events`` unchanged, telling ``bar`` the rows begun so far.

    Without a bar this is ``iter(events)`` itself: no layer between the packer and its consumers.
    """
    if bar is None:
        return iter(events)
    return _row_progress(events, bar)


def _row_progress(events: Iterable[Any], bar: Callable[[int], None]) -> Iterator[Any]:
    from ..engine.batches import EventBatch
    from ..engine.events import Placement

    for ev in events:
        if type(ev) is Placement and ev.offset == 0:
            bar(ev.row + 1)
        elif type(ev) is EventBatch and ev.placement.row.size:
            bar(int(ev.placement.row.max()) + 1)
        yield ev


def packers_from_args(args: argparse.Namespace, default: Sequence[str], *, one: bool = False) -> list[str]:
    """The ``--policy`` packers (``default`` without it), each once; ``one``: the command replays one packer.

    >>> packers_from_args(argparse.Namespace(policy=["discard", "discard"]), ["discard"])
    Traceback (most recent call last):
    packing_theory.InputError: --policy names 'discard' twice
    >>> packers_from_args(argparse.Namespace(policy=["discard", "continue"]), ["discard"], one=True)
    Traceback (most recent call last):
    packing_theory.InputError: --policy takes one packer here, got 2: discard, continue
    """
    chosen = list(getattr(args, "policy", None) or default)
    for k, name in enumerate(chosen):
        if name in chosen[:k]:
            raise InputError(f"--policy names {name!r} twice")
    if one and len(chosen) != 1:
        raise InputError(f"--policy takes one packer here, got {len(chosen)}: {', '.join(chosen)}")
    return chosen


def horizon_from_args(args: argparse.Namespace, default: Budget | str | None) -> Budget | str | None:
    """``--rows`` / ``--targets`` / ``--tokens`` as a budget, ``"natural"``, ``"common"``, else
    ``default``."""
    from ..engine.horizon import Budget

    for unit in ("rows", "targets", "tokens"):
        value = getattr(args, unit, None)
        if value is not None:
            return Budget(unit, value)
    if getattr(args, "natural_end", False):
        return "natural"
    if getattr(args, "common_horizon", False):
        return "common"
    return default


def settings_from_args(args: argparse.Namespace, packers: Sequence[str]) -> Settings:
    """One :class:`~packing_theory.orchestration.measure.Settings` for ``packers`` from the options.

    ``--capacity`` is every packer's row width, ``--seq-length`` each packer's by
    its framework's rule (neither: ``L = 2048``); the streaming knobs, ``--seed``,
    ``--max-wait`` and each framework packer's options (:mod:`packing_theory.cli._packers`)
    are checked against the packers measured: an option none of them takes is refused.

    Raises:
        InputError: an option no measured packer takes, a row width a packer's framework refuses
            (naming the packer and suggesting ``--seq-length``).
    """
    from ..orchestration.settings import Settings
    from ._packers import build_one, check_streaming_options, check_width, peer_options

    check_streaming_options(args, packers)
    given: dict[str, Any] = {}
    for key in ("min_buffer", "refill", "passes", "max_wait"):
        value = getattr(args, key, None)
        if value is not None:
            given[key] = value
    if getattr(args, "drain", False):
        given["exhausted"] = "drain"
    if getattr(args, "seed", None) is not None:
        given["seed"] = args.seed
    settings = Settings(capacity=getattr(args, "capacity", None),
                        seq_length=getattr(args, "seq_length", None),
                        peer_options=peer_options(args, packers), engine=getattr(args, "engine", "fast"),
                        **given)
    for name in packers:
        check_width(settings, name)
        if name in settings.peer_options:  # a framework's constructor checks its options: bad input, now
            try:
                build_one(settings, name)
            except InputError as exc:  # name the options the user gave, and where they are given
                given_options = ", ".join(f"{k}={v}" for k, v in settings.peer_options[name].items()
                                          if k != "framework_version")
                raise InputError(f"{name}'s options ({given_options}; from --peer-option or their own "
                                 f"flags): {exc}") from exc
    return settings


def check_executor(args: argparse.Namespace) -> None:
    """Refuse a bad ``--executor`` spec, or a Dask one without dask installed, before anything runs."""
    from ..distributed.executors import import_distributed, parse_executor_spec

    if parse_executor_spec(args.executor) != "local":
        import_distributed()


def workers_from_args(command: str, args: argparse.Namespace, tasks: int) -> int:
    """``--workers`` (0: one per CPU), saying so (a :func:`note`) when the CPUs or the tasks cap it.

    The task runner (:func:`~packing_theory.distributed.executors.open_runner`) applies the cap
    (:func:`~packing_theory.distributed.pool_rules.pool_size`, the one rule); this says what it will run.
    """
    from ..distributed.pool_rules import pool_size

    requested = int(args.workers)
    if getattr(args, "executor", "local") != "local" or requested <= 1:
        return requested
    _, why = pool_size(requested, tasks)
    if why is not None:
        note(command, why)  # a note, on a terminal: the last line stays the command's one
    return requested
    cpus = os.cpu_count() or 1
    runs = max(1, min(requested, cpus, tasks))
    if runs < requested:
        why = [f"{cpus} CPU{'s' if cpus != 1 else ''}"] if cpus < requested else []
        if tasks < min(requested, cpus):
            why.append(f"at most {tasks} task{'s' if tasks != 1 else ''} at a time")
        note(command, f"--workers {requested}: running {runs} process{'es' if runs != 1 else ''} "
                      f"({', '.join(why)})")  # a note, on a terminal: the last line stays the command's one
    return requested
