"""The per-occurrence table's width: the bytes per occurrence the docs state, from the columns' dtypes."""

from __future__ import annotations

import numpy as np

from packing_theory.audit.table import BYTES_PER_OCCURRENCE, SourceTable


def _bytes_per_occurrence(t: SourceTable) -> int:
    return sum(getattr(t, name).dtype.itemsize for name in SourceTable._FIXED + SourceTable._LAZY
               if getattr(t, name) is not None)


def test_a_table_without_first_targets_holds_the_stated_bytes_per_occurrence() -> None:
    t = SourceTable(keep_first_targets=False)
    t.grow(5000)
    assert t.first_inv is None
    assert _bytes_per_occurrence(t) == BYTES_PER_OCCURRENCE == 13
    assert t.nbytes() == BYTES_PER_OCCURRENCE * t.cap


def test_first_targets_add_eight_bytes_and_wide_lengths_widen_three_columns() -> None:
    t = SourceTable()
    t.grow(10)
    assert _bytes_per_occurrence(t) == BYTES_PER_OCCURRENCE + 8
    t.widen(2**31)  # a length past int32: length, emitted and discarded become int64
    assert _bytes_per_occurrence(t) == BYTES_PER_OCCURRENCE + 8 + 3 * 4
    assert all(getattr(t, c).dtype == np.int64 for c in ("length", "emitted", "discarded"))
