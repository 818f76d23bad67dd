"""The exposure profile's arithmetic: relative-position bins of documents and their emitted counts.

A document of length ``L`` is cut into ``bins`` relative-position bins with
edges ``ceil(k L / bins)``, ``k = 0..bins``; the profile counts, per length
stratum and bin, the positions emitted against all positions that arrived.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .results import ExposureProfile
from .strata import stratum_index

__all__ = ["bin_edges", "exposure_profile", "whole_exposure"]

Int64Array = npt.NDArray[np.int64]


def bin_edges(L: Int64Array, bins: int) -> Int64Array:
    """Relative-position bin edges ``ceil(k L / bins)``, ``k = 0..bins``: shape ``(n, bins + 1)``."""
    k = np.arange(bins + 1, dtype=np.int64)
    return (k[None, :] * L[:, None] + bins - 1) // bins


def whole_exposure(counts: dict[int, int], boundaries: tuple[int, ...], bins: int) -> Int64Array:
    """Exposure ``(strata, bins)`` of whole-document placements counted by length in ``counts``."""
    out = np.zeros((len(boundaries) + 1, bins), dtype=np.int64)
    if counts:
        uniq = np.fromiter(sorted(counts), np.int64, len(counts))
        n = np.fromiter((counts[int(k)] for k in uniq), np.int64, len(counts))
        edges = bin_edges(uniq, bins)
        np.add.at(out, stratum_index(uniq, boundaries), (edges[:, 1:] - edges[:, :-1]) * n[:, None])
    return out


def exposure_profile(labels: list[str], boundaries: tuple[int, ...], uniq: Int64Array, ucnt: Int64Array,
                      expo: Int64Array, bins: int) -> ExposureProfile:
    """The emitted counts ``expo`` against all positions of the arrived lengths (``uniq`` with counts)."""
    S = len(labels)
    edges = bin_edges(uniq, bins)
    sizes = (edges[:, 1:] - edges[:, :-1]) * ucnt[:, None]
    positions = np.zeros((S, bins), dtype=np.int64)
    np.add.at(positions, stratum_index(uniq, boundaries), sizes)
    emitted = expo.reshape(S, bins)
    return ExposureProfile(bins, tuple(labels), tuple(tuple(int(v) for v in r) for r in emitted),
                           tuple(tuple(int(v) for v in r) for r in positions))
