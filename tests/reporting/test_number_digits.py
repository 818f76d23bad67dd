"""A ranked number column shows as many significant digits as tell its distinct values apart."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory.corpus import default_lengths
from packing_theory.errors import InputError
from packing_theory.orchestration import Settings, compare_corpus
from packing_theory.orchestration.compare_report import compare_sections
from packing_theory.reporting.model import Column, Table, cell_text, distinct_digits

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(st.lists(finite, max_size=12))
def test_distinct_values_read_differently(values: list[float]) -> None:
    d = distinct_digits(values)
    assert 4 <= d <= 17
    column = Column("x", "number", digits=d)
    shown = {v: cell_text(column, v) for v in values}
    assert len(set(shown.values())) == len(shown)  # distinct values, distinct texts
    if d > 4:  # no fewer digits would do
        assert len({f"{v:.{d - 1}g}" for v in set(values)}) < len(set(values))


def test_the_reviewers_prefix_bias_values_differ_on_the_page() -> None:
    """Two packers were ranked 18 and 20 on prefix bias 0.039598 and 0.039604, both shown as 0.0396."""
    values = [0.039598, 0.039604]
    old = Column("prefix bias", "number")
    assert cell_text(old, values[0]) == cell_text(old, values[1]) == "0.0396"
    new = Column("prefix bias", "number", digits=distinct_digits(values))
    assert [cell_text(new, v) for v in values] == ["0.039598", "0.039604"]


@pytest.mark.parametrize("digits", [0, 18, True, 2.5])
def test_bad_digits_are_refused_naming_them(digits: object) -> None:
    with pytest.raises(InputError, match=r"Column digits must be an int in 1\.\.17"):
        Column("x", "number", digits=digits)  # type: ignore[arg-type]


def test_the_ranking_table_gives_each_number_column_its_distinguishing_digits() -> None:
    cmp = compare_corpus(default_lengths()[:3000], ["discard", "continue", "trl-bfd", "megatron-gpt"],
                         Settings(capacity=512, min_buffer=50))
    (table,) = [b for s in compare_sections(cmp) for b in s.blocks
                if isinstance(b, Table) and b.key == "ranking"]
    numbered = [i for i, column in enumerate(table.columns) if column.kind == "number"]
    assert numbered, "the ranking table has a number column (prefix bias)"
    for i in numbered:
        column = table.columns[i]
        values = [row[i] for row in table.rows]
        assert column.digits == distinct_digits(values)
        numbers = {v for v in values if isinstance(v, float) and math.isfinite(v)}
        assert len({cell_text(column, v) for v in numbers}) == len(numbers)
