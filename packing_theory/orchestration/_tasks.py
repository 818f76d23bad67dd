"""What a measurement's tasks run besides a packer's run: building a packer, its stream, how the lengths
reach the workers, and the common horizon's reach passes (:mod:`~packing_theory.orchestration.measure`).

Every function here is top level, so that a local pool or a Dask worker can run it by reference.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._allocator import release_freed_memory
from ..distributed.executors import TaskFailed
from ..engine.horizon import Budget
from ..engine.policies import PackerConfig
from ..engine.replay import make_packer
from ..errors import InputError, InputTypeError
from ..peers import PeerPacker
from ..registry import PackerEntry, entries
from ._reach import ReachBound, bounded_reach, placed_tokens
from .settings import Settings

__all__ = [
    "MappedLengths",
    "NoRows",
    "build_packer_for",
    "lengths_of",
    "per_event_first",
    "reach_group",
    "reach_one",
    "shared_lengths",
    "stream_of",
]

Int64Array = npt.NDArray[np.int64]


class NoRows(InputError):
    """A packer whose framework's row width, for these settings, leaves no room for a target."""


def build_packer_for(name: str, settings: Settings, budget: Budget | None
                     ) -> tuple[Any, PackerEntry, dict[str, Any]]:
    """Packer ``name`` built for one measurement, its entry, and every knob it runs with (defaults too)."""
    e = entries()[name]
    width = settings.width(e)
    if width < 2:  # the accounting needs a BOS and one more position per row
        raise NoRows(
            f"{name} packs rows of {width} token(s) ({e.row_width.rule}); rows of at least 2 "
            "tokens are needed"
        )
    knobs = settings.knobs(e)
    if e.kind == "peer":
        packer = e.build(width, **knobs)
        return packer, e, packer.options()
    engine = settings.engine if settings.engine in e.engines else "fast"
    rows = budget.streaming_rows(width) if budget is not None else None
    config = PackerConfig(capacity=width, policy=name, rows=rows, **knobs)  # type: ignore[arg-type]
    return make_packer(engine, config), e, e.options(knobs)


def stream_of(packer: Any, arr: Int64Array, engine: str) -> Any:
    """The packer's stream: batches on the compiled engine (a columnar peer's columns), else single events."""
    if engine != "compiled":
        return packer.events(arr) if isinstance(packer, PeerPacker) else packer.stream(arr)
    if isinstance(packer, PeerPacker):
        return packer.batches(arr) if packer.columnar else packer.events(arr)
    return packer.stream(arr)


def per_event_first(names: Sequence[str], engine: str) -> list[str]:
    """``names`` in the order their tasks are submitted: on the compiled engine, the packers that still
    run event by event in Python first (a peer without a columnar path, a policy without a compiled
    engine), then the rest, each group in its given order.

    A pool takes the tasks in this order; a long task submitted last leaves the other workers idle
    while it runs alone (at 1 M lognormal documents, ``parcae-bestfit``'s reach was 38 % of the whole
    reach pass, and it came last). The order changes no figure: every task is independent, and the
    results are put back in report order.

    >>> per_event_first(["discard", "trl-bfd", "parcae-bestfit", "bestfit-pad"], "compiled")
    ['parcae-bestfit', 'bestfit-pad', 'discard', 'trl-bfd']
    >>> per_event_first(["discard", "parcae-bestfit"], "fast")
    ['discard', 'parcae-bestfit']
    """
    if engine != "compiled":  # every packer runs event by event: nothing tells them apart
        return list(names)
    table = entries()

    def per_event(name: str) -> bool:
        e = table[name]
        return not e.columnar if e.kind == "peer" else "compiled" not in e.engines

    return sorted(names, key=lambda n: not per_event(n))


@dataclass(frozen=True)
class MappedLengths:
    """The lengths of a task as the ``.npy`` file they are read from (pickled as its name, not its data):
    a local pool's workers map the same file instead of each receiving a copy."""

    path: str
    offset: int
    size: int

    def array(self) -> Int64Array:
        return np.memmap(self.path, dtype=np.int64, mode="r", offset=self.offset, shape=(self.size,))



def lengths_of(arr: Int64Array | MappedLengths) -> Int64Array:
    return arr.array() if isinstance(arr, MappedLengths) else arr


@contextlib.contextmanager
def shared_lengths(arr: Int64Array, kind: str) -> Iterator[Int64Array | MappedLengths]:
    """``arr`` as a local pool's tasks should receive it: the file of a read-only memory-mapped ``.npy``
    (the whole file, as ``numpy.load(..., mmap_mode="r")`` maps it; a copy-on-write map may differ from its
    file), else a temporary ``.npy`` written once (removed after) — not one
    pickled copy per task. In this process, on a given executor or a Dask cluster (whose workers may not
    see this machine's disk), the array itself."""
    if kind != "processes" or arr.size < SHARE_FROM:
        yield arr
        return
    if (isinstance(arr, np.memmap) and isinstance(arr.base, mmap.mmap) and arr.filename and arr.mode == "r"
            and arr.dtype == np.int64 and arr.ndim == 1 and arr.flags.c_contiguous):
        yield MappedLengths(str(arr.filename), int(arr.offset), int(arr.size))
        return
    with tempfile.TemporaryDirectory(prefix="packing-theory-lengths-") as d:
        path = os.path.join(d, "lengths.npy")
        np.save(path, np.ascontiguousarray(arr, dtype=np.int64))
        mapped = np.load(path, mmap_mode="r")
        yield MappedLengths(path, int(mapped.offset), int(mapped.size))
        del mapped


SHARE_FROM = 1 << 16
"""Documents from which a local pool's tasks get the lengths as a file rather than a pickled copy."""


def reach_one(name: str, arr: Int64Array | MappedLengths, settings: Settings) -> tuple[int, str | None]:
    """The tokens packer ``name`` places in complete rows to its natural end, or its framework's refusal."""
    release_freed_memory()  # as every task: from what is live, not the previous task's high-water mark
    arr = lengths_of(arr)
    packer, _, _ = build_packer_for(name, settings, None)  # bad options were refused before any task
    try:
        return placed_tokens(stream_of(packer, arr, settings.engine), packer.capacity), None
    except ValueError as exc:
        if entries()[name].kind != "peer":
            raise
        return 0, str(exc)


def reach_group(names: Sequence[str], arr: Int64Array | MappedLengths, settings: Settings,
                 bound_path: str | None) -> dict[str, tuple[int, bool]]:
    """The reaches of streaming packers ``names``, replayed in turn and each stopped once it passes a
    smaller finished reach (:func:`~packing_theory.orchestration._reach.bounded_reach`, the bound shared
    with the other groups through ``bound_path``)."""
    release_freed_memory()
    arr = lengths_of(arr)
    packers = {n: build_packer_for(n, settings, None)[0] for n in names}
    return bounded_reach({n: stream_of(p, arr, settings.engine) for n, p in packers.items()},
                         {n: p.capacity for n, p in packers.items()}, ReachBound(bound_path))


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """A task that failed on the user's input raises that input error, not the runner's wrapper."""
    try:
        yield
    except TaskFailed as exc:
        if isinstance(exc.__cause__, (InputError, InputTypeError)):
            raise exc.__cause__ from None
        raise


def check_packers(packers: Sequence[str], settings: Settings) -> list[str]:
    if isinstance(packers, str) or not isinstance(packers, Sequence):
        raise InputTypeError(f"packers must be a sequence of packer names, got {type(packers).__name__}")
    table = entries()
    names = list(packers)
    if not names:
        raise InputError("packers must name at least one packer, got []")
    for n in names:
        if n not in table:
            raise InputError(f"packers must be among {', '.join(table)}; got {n!r}")
    if len(set(names)) != len(names):
        raise InputError(f"packers must not repeat, got {names}")
    for n in settings.peer_options:
        if n not in names or table[n].kind != "peer":
            raise InputError(
                f"peer_options names {n!r}, which is not a measured peer (measured: {', '.join(names)})"
            )
    return names
