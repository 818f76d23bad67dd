"""A progress bar for long replays (tqdm, the ``progress`` extra, only on a terminal)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["ProgressBar", "progress_bar"]

class ProgressBar:
    """A row-count progress callback around a tqdm bar; call it with absolute rows, then :meth:`close`."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._last = 0

    def __call__(self, rows: int) -> None:
        """Advance the bar to ``rows``."""
        if rows > self._last:
            self._bar.update(rows - self._last)
            self._last = rows

    def close(self) -> None:
        """Close the bar."""
        self._bar.close()


def progress_bar(desc: str, total: int | None, *, enabled: bool | None = None,
                 unit: str = "row") -> ProgressBar | None:
    """A :class:`ProgressBar` on standard error, or ``None``.

    By default (``enabled=None``) a bar is shown only when standard error is a
    terminal and tqdm is installed; ``enabled=False`` never shows one.

    >>> progress_bar("audit", 10, enabled=False) is None
    True
    """
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    try:
        tqdm = importlib.import_module("tqdm")
    except ImportError:
        return None
    return ProgressBar(tqdm.tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False))
