"""Progress bars for every command a person waits for (tqdm, a base dependency; only on a terminal).

tqdm is imported only when a bar is shown. A bar is shown when standard error
is a terminal, unless the command got ``--no-progress``.
"""

from __future__ import annotations

import importlib
import os
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

    def describe(self, text: str) -> None:
        """Show ``text`` as the bar's description (the stage a command is in)."""
        self._bar.set_description_str(text)

    def close(self) -> None:
        """Close the bar."""
        self._bar.close()


def progress_bar(desc: str, total: int | None, *, enabled: bool | None = None,
                 unit: str = "row") -> ProgressBar | None:
    """A :class:`ProgressBar` on standard error, or ``None``.

    By default (``enabled=None``) a bar is shown only when standard error is a
    terminal (and tqdm importable); ``enabled=False`` never shows one. ``total=None``
    shows a count and the elapsed time (a command whose stages have no size).

    >>> progress_bar("audit", 10, enabled=False) is None
    True
    """
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    try:
        tqdm = importlib.import_module("tqdm")
    except ImportError:
        return None
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):
        size = os.terminal_size((0, 0))
    # a terminal that reports no size (a bare pty) would hide the bar: give it one
    shape = {} if size.columns > 0 and size.lines > 0 else {"ncols": 100, "nrows": 24}
    return ProgressBar(tqdm.tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, **shape))
