"""An empty chunk of a length stream is empty whatever its dtype, on every engine.

Before the fix the compiled engine refused ``np.array([])`` (float64, the dtype
numpy gives an empty list) inside a :class:`LengthChunks` stream, where the
pure Python engines read it as no lengths.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.engine.batches import LengthChunks, unbatched
from packing_theory.engine.compiled import CompiledPacker, compiled_available

CHUNKS: list[Any] = [[5, 3, 9], [], [4, 6, 2], np.array([]), [7, 8]]


@pytest.mark.skipif(not compiled_available(), reason="numba is not installed")
def test_an_empty_float_chunk_is_no_lengths() -> None:
    config = pt.PackerConfig(capacity=8, min_buffer=2, refill=1)
    want = list(pt.Packer(config).events(LengthChunks(CHUNKS)))
    got = list(unbatched(CompiledPacker(config).stream(LengthChunks(CHUNKS))))
    assert got == want
    with pytest.raises(TypeError, match="integer dtype"):  # a non-empty float chunk is still refused
        list(CompiledPacker(config).stream(LengthChunks([[5, 3], np.array([2.0])])))
