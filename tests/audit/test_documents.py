"""documents.csv and documents.parquet: the same rows, each tied to its report's run."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory import Packer, PackerConfig, feed_all
from packing_theory._arrays import INT32
from packing_theory.audit import Ledger
from packing_theory.audit.documents import DOCUMENT_COLUMNS, DocumentRows, document_table, write_documents
from packing_theory.audit.rows import FilteredReasons
from packing_theory.engine.horizon import Budget
from packing_theory.engine.policies import POLICIES
from packing_theory.errors import InputError, InputTypeError

LENGTHS = [5, 30, 3, 41, 2, 7, 9, 60, 4, 12] * 3


def _table():  # type: ignore[no-untyped-def]
    ledger, rows = Ledger(16, 4), DocumentRows(16)
    feed_all(Packer(PackerConfig(capacity=16, min_buffer=4, refill=2)).events(LENGTHS), ledger, rows)
    return document_table(ledger, rows.result(), LENGTHS, names=[f"doc{i}" for i in range(len(LENGTHS))])


def test_csv_and_parquet_hold_the_same_rows_and_the_run(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    table = _table()
    write_documents(tmp_path / "d.csv", [table], run_id="run-1")
    write_documents(tmp_path / "d.parquet", [table], run_id="run-1")
    with open(tmp_path / "d.csv", encoding="utf-8", newline="") as f:
        from_csv = list(csv.DictReader(f))
    parquet = pq.read_table(tmp_path / "d.parquet")
    assert parquet.column_names == [*DOCUMENT_COLUMNS, "run"]
    assert parquet.schema.metadata[b"run"] == b"run-1"
    from_parquet = parquet.to_pylist()
    assert len(from_csv) == len(from_parquet) == len(table) == len(LENGTHS)
    for c_row, p_row in zip(from_csv, from_parquet, strict=True):
        assert c_row["run"] == p_row["run"] == "run-1"
        assert c_row == {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in p_row.items()}


def test_without_a_run_there_is_no_run_column(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_documents(tmp_path / "d.parquet", [_table()])
    assert "run" not in pq.read_table(tmp_path / "d.parquet").column_names
    write_documents(tmp_path / "d.csv", [_table()])
    header = (tmp_path / "d.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.split(",") == list(DOCUMENT_COLUMNS)


def test_another_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"--documents must end in \.csv or \.parquet, got .*d\.tsv"):
        write_documents(tmp_path / "d.tsv", [_table()])


@given(lengths=st.lists(st.integers(1, 30), min_size=1, max_size=40), rows=st.none() | st.integers(0, 15),
       size=st.integers(1, 9), policy=st.sampled_from(POLICIES))
def test_document_rows_without_per_occurrence_rows_keep_the_partial_row(
        lengths: list[int], rows: int | None, size: int, policy: str) -> None:
    from packing_theory.engine.batches import batched

    packer = Packer(capacity=8, min_buffer=3, refill=2, policy=policy, rows=rows, exhausted="drain")
    events = list(packer.stream(lengths))
    full, lean, lean_batches = DocumentRows(8), DocumentRows(8, per_occurrence=False), DocumentRows(8, False)
    feed_all(events, full, lean)
    feed_all(batched(events, size), lean_batches)
    lean._check()
    a, b, c = full.result(), lean.result(), lean_batches.result()
    assert b == c
    assert b.first_row.size == b.arrival_row.size == 0
    assert np.array_equal(a.partial_placements, b.partial_placements)
    assert a.filtered_reason == b.filtered_reason
    with pytest.raises(InputTypeError, match="per_occurrence must be a bool, got str 'no'"):
        DocumentRows(8, per_occurrence="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [5, 50])
def test_listing_the_reports_documents_costs_the_same_at_any_corpus_size(limit: int) -> None:
    """The report lists the largest never-started documents: rows read = the rows listed, no column
    built, whatever the corpus size (``DocumentTable.builds`` counts the work)."""
    from packing_theory.orchestration import Settings, audit_corpus
    from packing_theory.orchestration.answer import never_started_documents
    from packing_theory.orchestration.audit_sections import documents_section

    costs = []
    for n in (2_000, 40_000):
        lengths = np.random.default_rng(n).integers(1, 60, n)  # B - 1 = 63 never start (seed 000 §3)
        res = audit_corpus(lengths, ["discard"], Settings(capacity=16, min_buffer=64, refill=2),
                           horizon=Budget("rows", n // 20), documents=True, permutations=0)
        (run,) = res.measurement.runs
        table = run.documents
        assert table is not None and table.builds == {"columns": 0, "rows": 0}  # building read no row
        listed, pairs = never_started_documents(res.measurement.runs, limit=limit)
        assert listed is not None and len(listed.rows) == limit and pairs > limit
        section = documents_section(res)
        assert section is not None
        costs.append(dict(table.builds))
        # the same documents a whole-column computation finds
        fate, length = table.column("fate"), table.column("length")
        idx = np.flatnonzero(fate == "never started")
        order = idx[np.lexsort((idx, -length[idx]))][:limit]
        assert [r[0] for r in listed.rows] == table.column("document")[order].tolist()
    # the answer's rows, then the section's (never started and never reached, DOCUMENTS_SHOWN at most)
    assert costs[0] == costs[1]
    assert costs[0]["columns"] == 0 and costs[0]["rows"] <= limit + 200


def test_a_row_costs_one_row_and_a_column_is_counted() -> None:
    table = _table()
    table.row(3)
    table.row(-1)
    assert table.builds == {"columns": 0, "rows": 2}
    table.column("fate")
    assert table.builds["columns"] == 1
    with pytest.raises(InputError, match="row 30 is outside the table's 30 rows"):
        table.row(30)
    with pytest.raises(InputError, match="column must be one of packer, document"):
        table.column("nope")
    with pytest.raises(InputError, match=r"total needs an integer column of .*; got 'fate'"):
        table.total("fate")


def test_csv_quotes_names_as_the_csv_module_does(tmp_path: Path) -> None:
    """Names with commas, quotes, newlines and percent signs read back as written; a run id with ``%``."""
    names = [f'a,b{i}' if i % 4 == 0 else f'say "x{i}"' if i % 4 == 1 else f"50%{i}\nnew" if i % 4 == 2
             else f"plain{i}" for i in range(len(LENGTHS))]
    ledger, rows = Ledger(16, 4), DocumentRows(16)
    feed_all(Packer(PackerConfig(capacity=16, min_buffer=4, refill=2)).events(LENGTHS), ledger, rows)
    table = document_table(ledger, rows.result(), LENGTHS, names=names)
    write_documents(tmp_path / "d.csv", [table], run_id="run%d-1")
    with open(tmp_path / "d.csv", encoding="utf-8", newline="") as f:
        got = list(csv.DictReader(f))
    assert [r["name"] for r in got] == names and {r["run"] for r in got} == {"run%d-1"}
    assert [int(r["emitted"]) for r in got] == table.column("emitted").tolist()


@pytest.mark.parametrize("fates", [("never started",), ("never reached",),
                                   ("never started", "never reached")])
def test_largest_untrained_by_fate_equals_whole_columns(fates: tuple[str, ...],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import packing_theory.audit.documents as documents

    lengths = np.random.default_rng(4).integers(1, 70, 3000)
    packer = Packer(capacity=16, min_buffer=6, refill=2, rows=300)
    ledger, rows = Ledger.for_packer(packer), DocumentRows.for_packer(packer)
    _, facts = feed_all(packer.stream(lengths), ledger, rows)
    monkeypatch.setattr(documents, "UNTRAINED_KEPT", 3)  # a larger limit makes it look again
    table = document_table(ledger, facts, lengths)
    fate, length = table.column("fate"), table.column("length")
    idx = np.flatnonzero(np.isin(fate, fates))
    order = idx[np.lexsort((idx, -length[idx]))]
    for limit in (2, 40):
        got, count = table.largest_untrained(limit, fates)
        assert count == idx.size and [r["document"] for r in got] == order[:limit].tolist()
        assert all(r["fate"] in fates for r in got)
    with pytest.raises(InputError, match=r"fates must be among never started, never reached, never trained "
                                         r"\(unfinished row\); got \['trained'\]"):
        table.largest_untrained(3, ("trained",))


def test_filtered_reasons_are_columns_that_read_as_the_dict() -> None:
    r = FilteredReasons()
    want: dict[int, str] = {}
    for o, why in [(5, "too long"), (1, "empty"), (5, "dropped"), (9, "too long")]:
        r.add(o, why)
        want[o] = why
    r.add_all(np.array([3, 1]), np.array([1, 0], np.uint8), ("a", "empty"))
    want.update({3: "empty", 1: "a"})
    assert r == want and dict(r) == want and len(r) == 4 and r.get(2) is None and r[1] == "a"
    assert r.nbytes() == 6 * 5 and r._code.typecode == "B" and r._occ.typecode == "i"
    r._check()
    with pytest.raises(KeyError):
        r[4]
    wide = FilteredReasons()
    wide.add(int(INT32.max), "x")
    assert wide._occ.typecode == "i"
    wide.add(int(INT32.max) + 1, "y")
    assert wide._occ.typecode == "q" and dict(wide) == {int(INT32.max): "x", int(INT32.max) + 1: "y"}
    many = FilteredReasons()
    for i in range(300):
        many.add(i, f"reason {i}")
    assert many._code.typecode == "i" and many[299] == "reason 299" and many[0] == "reason 0"
    many._check()
