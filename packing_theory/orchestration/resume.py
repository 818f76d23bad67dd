"""A measurement's finished parts on disk, so that a rerun after an interruption redoes only the rest.

:func:`~packing_theory.orchestration.measure.measure` with ``resume=DIR``
writes, as they finish, the common horizon it found (``horizon-*.json``) and
each packer's run (``run-*.pkl``) into ``DIR``; a later call with the same
corpus, settings and options reads them back instead of replaying again
(``packing-theory compare`` keeps them in ``--out/parts``, as ``census``
does). Every file carries the key it was made under:

* the measurement's key (:func:`measurement_key`): a SHA-256 of the lengths'
  bytes, the settings, whether per-document tables were kept, who each document
  is and the per-source plan, and this package's version;
* with the packers measured (for the horizon, which depends on them all), or
  the horizon itself (for one packer's run, which depends only on it).

A part whose key differs is ignored (and replaced once that packer is
measured again), so a changed corpus, option or package version never reuses
a figure; the report of a resumed measurement equals that of an uninterrupted
one (``tests/orchestration/test_resume.py``). Files are written whole or not at
all (:func:`~packing_theory.distributed.parts.atomic_write`). A run is stored
with :mod:`pickle`: read parts only from a directory you own, as you would run
code from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._version import __version__
from ..engine.horizon import Budget
from ..errors import InputError

__all__ = ["RunParts", "measurement_key"]

_CHUNK = 1 << 22


def measurement_key(lengths: npt.NDArray[np.int64], settings: Any, *, documents: bool, identity: Any,
                    sources: Any) -> str:
    """What a measurement's figures depend on, as a SHA-256 hex digest (see the module doc).

    Complexity: O(documents) to hash the lengths (read in chunks: a memory-mapped file stays on disk).
    """
    h = hashlib.sha256()
    h.update(f"packing_theory {__version__}\n".encode())
    h.update(f"documents {lengths.size}\n".encode())
    for at in range(0, lengths.size, _CHUNK):
        h.update(np.ascontiguousarray(lengths[at:at + _CHUNK], dtype=np.int64).tobytes())
    h.update(json.dumps(settings.to_dict(), sort_keys=True, default=str).encode())
    h.update(f"\ntables {documents}\n".encode())
    for extra in (identity, sources):
        h.update(hashlib.sha256(pickle.dumps(extra, protocol=4)).digest())
    return h.hexdigest()


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _budget(b: Budget | None) -> list[object] | None:
    return None if b is None else [b.unit, b.value]


class RunParts:
    """The parts of one measurement in ``directory`` (created if missing), under ``key``.

    Args:
        directory: where the parts are kept.
        key: :func:`measurement_key` of the measurement.

    Raises:
        InputError: ``directory`` exists and is not a directory.
    """

    def __init__(self, directory: str | os.PathLike[str], key: str) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise InputError(f"resume must be a directory, got the file {str(directory)!r}")
        self.directory.mkdir(parents=True, exist_ok=True)
        from ..distributed.parts import remove_partial_parts

        remove_partial_parts(str(self.directory))  # an interrupted write's leftovers (one writer: ours)
        self.key = key
        self.reused: list[str] = []
        """Packers whose run was read back, in the order asked."""
        self.written: list[str] = []
        """Packers whose run was written by this measurement."""
        self._check()

    def _check(self) -> None:
        """Assert the parts' invariants."""
        assert self.directory.is_dir(), self.directory
        assert len(self.key) == 64 and all(c in "0123456789abcdef" for c in self.key), self.key
        assert len(set(self.reused)) == len(self.reused), self.reused  # a packer is read back once
        assert len(set(self.written)) == len(self.written), self.written

    # ----------------------------------------------------------------- the horizon

    def _horizon_path(self, packers: Sequence[str]) -> Path:
        return self.directory / f"horizon-{_digest(list(packers))}.json"

    def horizon(self, packers: Sequence[str]) -> tuple[Budget | None, tuple[str, ...], dict[str, str]] | None:
        """The common horizon of ``packers`` found before (the budget, who set it, the refusals met on the
        way), or ``None``."""
        try:
            doc = json.loads(self._horizon_path(packers).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("key") != self.key or doc.get("packers") != list(packers):
            return None
        b = doc["budget"]
        budget = None if b is None else Budget(str(b[0]), int(b[1]))  # type: ignore[arg-type]
        return budget, tuple(doc["set_by"]), {str(k): str(v) for k, v in doc["refused"].items()}

    def save_horizon(self, packers: Sequence[str], budget: Budget | None, set_by: Sequence[str],
                     refused: dict[str, str]) -> None:
        """Keep the common horizon of ``packers``."""
        from ..distributed.parts import atomic_write

        doc = {"key": self.key, "packers": list(packers), "budget": _budget(budget), "set_by": list(set_by),
               "refused": dict(refused)}
        atomic_write(str(self._horizon_path(packers)), (json.dumps(doc, indent=1) + "\n").encode())

    # ----------------------------------------------------------------- one packer's run

    def _run_path(self, packer: str, budget: Budget | None, kind: str) -> Path:
        return self.directory / f"{kind}-{_digest([packer, _budget(budget)])}.pkl"

    def load(self, packer: str, budget: Budget | None, kind: str = "run") -> Any:
        """The value kept for ``packer`` at ``budget`` (``kind`` ``"run"``: its run or its refusal;
        ``"pass"``: a peer's pass that found its reach too; ``"reach"``: streaming reaches), or ``None``."""
        try:
            doc = pickle.loads(self._run_path(packer, budget, kind).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
            return None
        if (not isinstance(doc, dict) or doc.get("key") != self.key or doc.get("packer") != packer
                or doc.get("budget") != _budget(budget) or doc.get("kind") != kind):
            return None
        if kind != "reach":  # a run, or a peer's pass that made its run
            self.reused.append(packer)
        return doc["value"]

    def save(self, packer: str, budget: Budget | None, value: object, kind: str = "run") -> None:
        """Keep ``value`` (for ``kind`` see :meth:`load`)."""
        from ..distributed.parts import atomic_write

        doc = {"key": self.key, "packer": packer, "budget": _budget(budget), "kind": kind, "value": value}
        data = pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(str(self._run_path(packer, budget, kind)), data)
        if kind == "run" and packer not in self.reused:
            self.written.append(packer)
