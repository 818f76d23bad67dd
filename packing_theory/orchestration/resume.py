"""A measurement's finished parts on disk, so that a rerun after an interruption redoes only the rest.

:func:`~packing_theory.orchestration.measure.measure` with ``resume=DIR``
writes, as they finish, the common horizon it found (``horizon-*.json``) and
each packer's run (``run-*.pkl``) into ``DIR``; a later call with the same
corpus, settings and options reads them back instead of replaying again
(``packing-theory compare`` keeps them in ``--out/compare-parts`` until its
report is written). Every file carries the key it was made under:

* the measurement's key (:func:`measurement_key`): a SHA-256 of the lengths'
  bytes, the settings, whether per-document tables were kept, who each document
  is and the per-source plan, and this package's version;
* with the packers measured (for the horizon, which depends on them all), or
  the horizon itself (for one packer's run, which depends only on it).

A part whose key differs is ignored (and replaced once that packer is
measured again), so a changed corpus, option or package version never reuses
a figure; the report of a resumed measurement equals that of an uninterrupted
one (``tests/orchestration/test_resume.py``). Files are written whole or not at
all (:func:`~packing_theory.distributed.parts.atomic_write`) and carry the
SHA-256 of their content: a damaged part is replayed, never read. Only this
module's own files (``horizon-*``, ``reach-*``, ``pass-*``, ``run-*``) are
ever removed from the directory. A run is stored with :mod:`pickle`: read
parts only from a directory you own, as you would run code from it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._version import __version__
from ..engine.horizon import Budget
from ..errors import InputError

__all__ = ["RunParts", "measurement_key", "remove_parts"]

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


_OURS = re.compile(r"(horizon|reach|pass|run)-[0-9a-f]{16}\.(json|pkl)(\.tmp-[0-9]+)?\Z")
"""The files :class:`RunParts` writes (and, with ``.tmp-PID``, a write an interruption left)."""

_MAGIC = b"packing-theory resume-file format-1 "
"""What every file of :class:`RunParts` starts with: this module's file format (version 1), then the
SHA-256 of the content."""


def _sealed(data: bytes) -> bytes:
    return _MAGIC + hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def _unsealed(blob: bytes) -> bytes | None:
    """The content of a part file, or ``None`` when it is not whole (its SHA-256 does not match)."""
    head, sep, data = blob.partition(b"\n")
    digest = hashlib.sha256(data).hexdigest().encode()
    if not sep or not head.startswith(_MAGIC) or head[len(_MAGIC):] != digest:
        return None
    return data


def remove_parts(directory: str | os.PathLike[str]) -> None:
    """Remove the part files :class:`RunParts` writes from ``directory``, then the directory if that left it
    empty; anything else there is left as it is."""
    d = Path(directory)
    if d.is_symlink() or not d.is_dir():
        return
    for f in d.iterdir():
        if _OURS.match(f.name) and f.is_file() and not f.is_symlink():
            f.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # something else is in it: not ours to remove
        d.rmdir()


class RunParts:
    """The parts of one measurement in ``directory`` (created if missing), under ``key``.

    Args:
        directory: where the parts are kept.
        key: :func:`measurement_key` of the measurement.

    A part that cannot be written (a full disk, a read-only directory) is not fatal: the measurement
    goes on without keeping more, and :attr:`problem` says why.

    Raises:
        InputError: ``directory`` exists and is not a directory (or is a link).
    """

    def __init__(self, directory: str | os.PathLike[str], key: str) -> None:
        self.directory = Path(directory)
        if self.directory.is_symlink() or (self.directory.exists() and not self.directory.is_dir()):
            raise InputError(f"resume must be a directory, got {str(directory)!r}, which is not one")
        self.key = key
        self.problem: str | None = None
        """Why parts stopped being kept (``None``: every part was written)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for f in self.directory.iterdir():  # an interrupted write's leftovers (ours only)
                if _OURS.match(f.name) and ".tmp-" in f.name and f.is_file():
                    f.unlink(missing_ok=True)
        except OSError as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        self._check()

    def _check(self) -> None:
        """Assert the parts' invariants."""
        assert self.problem is not None or self.directory.is_dir(), self.directory
        assert len(self.key) == 64 and all(c in "0123456789abcdef" for c in self.key), self.key

    def _write(self, path: Path, data: bytes) -> None:
        if self.problem is not None:
            return
        from ..distributed.parts import atomic_write

        try:
            atomic_write(str(path), _sealed(data))
        except OSError as exc:
            self.problem = f"{type(exc).__name__}: {exc}"

    def _read(self, path: Path) -> bytes | None:
        try:
            return _unsealed(path.read_bytes())
        except OSError:
            return None

    # ----------------------------------------------------------------- the horizon

    def _horizon_path(self, packers: Sequence[str]) -> Path:
        return self.directory / f"horizon-{_digest(list(packers))}.json"

    def horizon(self, packers: Sequence[str]) -> tuple[Budget | None, tuple[str, ...], dict[str, str]] | None:
        """The common horizon of ``packers`` found before (the budget, who set it, the refusals met on the
        way), or ``None``."""
        data = self._read(self._horizon_path(packers))
        try:
            doc = json.loads(data) if data is not None else None
            if not isinstance(doc, dict) or doc.get("key") != self.key or doc.get("packers") != list(packers):
                return None
            b = doc["budget"]
            budget = None if b is None else Budget(str(b[0]), int(b[1]))  # type: ignore[arg-type]
            return budget, tuple(doc["set_by"]), {str(k): str(v) for k, v in doc["refused"].items()}
        except Exception:  # a part made otherwise: not this measurement's
            return None

    def save_horizon(self, packers: Sequence[str], budget: Budget | None, set_by: Sequence[str],
                     refused: dict[str, str]) -> None:
        """Keep the common horizon of ``packers``."""
        doc = {"key": self.key, "packers": list(packers), "budget": _budget(budget), "set_by": list(set_by),
               "refused": dict(refused)}
        self._write(self._horizon_path(packers), (json.dumps(doc, indent=1) + "\n").encode())

    # ----------------------------------------------------------------- one packer's run

    def _run_path(self, packer: str, budget: Budget | None, kind: str) -> Path:
        return self.directory / f"{kind}-{_digest([packer, _budget(budget)])}.pkl"

    def load(self, packer: str, budget: Budget | None, kind: str = "run") -> Any:
        """The value kept for ``packer`` at ``budget`` (``kind`` ``"run"``: its run or its refusal;
        ``"pass"``: a peer's pass that found its reach too; ``"reach"``: streaming reaches), or ``None``."""
        data = self._read(self._run_path(packer, budget, kind))
        if data is None:
            return None
        try:
            doc = pickle.loads(data)
            if (not isinstance(doc, dict) or doc.get("key") != self.key or doc.get("packer") != packer
                    or doc.get("budget") != _budget(budget) or doc.get("kind") != kind):
                return None
            return doc["value"]
        except Exception:  # a part of another version of this package, or not a part: replayed
            return None

    def save(self, packer: str, budget: Budget | None, value: object, kind: str = "run") -> None:
        """Keep ``value`` (for ``kind`` see :meth:`load`)."""
        doc = {"key": self.key, "packer": packer, "budget": _budget(budget), "kind": kind, "value": value}
        self._write(self._run_path(packer, budget, kind), pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL))
