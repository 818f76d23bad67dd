"""The one matplotlib loader of every report's plots (the ``plots`` extra, imported only when plotting).

matplotlib is imported only by :func:`pyplot`, with the non-interactive
``Agg`` backend (no display needed, same pixels everywhere). A command that
will plot calls :func:`require_matplotlib` *before* computing, so a missing
extra is refused at once rather than after the work.

>>> require_matplotlib(False)  # no plots asked: nothing to check
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

from ..errors import MissingDependency, import_optional

__all__ = ["PALETTE", "color", "matplotlib_available", "pyplot", "require_matplotlib", "save_figure"]

PALETTE: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
                            "#000000")
"""The Okabe–Ito colour-blind-safe palette; every plot takes its colours from here (:func:`color`)."""


def color(i: int) -> str:
    """The ``i``-th colour of :data:`PALETTE` (cycling: a plot with more series uses small multiples).

    >>> color(0), color(8)
    ('#0072B2', '#0072B2')
    """
    return PALETTE[i % len(PALETTE)]

_PURPOSE = "PNG plots (or pass --no-plots)"


def matplotlib_available() -> bool:
    """Whether matplotlib can be imported (the ``plots`` extra), without importing it."""
    return importlib.util.find_spec("matplotlib") is not None


def require_matplotlib(plots: bool) -> None:
    """Refuse ``plots=True`` at once when matplotlib is missing.

    Raises:
        MissingDependency: the message names the extra and ``--no-plots``.
    """
    if plots and not matplotlib_available():
        raise MissingDependency("PNG plots: matplotlib is not installed "
                                "(pip install 'packing-theory[plots]', or pass --no-plots)")


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the ``Agg`` backend.

    Raises:
        MissingDependency: matplotlib is not installed (the message names the extra).
    """
    mpl = import_optional("matplotlib", extra="plots", purpose=_PURPOSE)
    mpl.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def save_figure(fig: Any, path: str | os.PathLike[str], *, metadata: Mapping[str, str] | None = None,
                dpi: int = 100) -> None:
    """Lay out ``fig``, save it as a PNG at ``path`` with ``metadata`` as text chunks, and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, metadata=dict(metadata or {}))
    pyplot().close(fig)
