"""What an audit says: its JSON keys, its sections (Markdown and page from the same blocks), its plots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.orchestration import PAPER_5_1, AuditResult, EvalStream, Settings, audit_corpus
from packing_theory.orchestration.audit_plots import PLOT_FILES, audit_plot_files, plot_notes
from packing_theory.orchestration.audit_report import SCHEMA, SCHEMA_VERSION, TOP_LEVEL_KEYS
from packing_theory.reporting import Table, matplotlib_available, progress_bar, write_report
from packing_theory.reporting.markdown import render_markdown
from packing_theory.reporting.model import walk_blocks

needs_plots = pytest.mark.skipif(
    not matplotlib_available(), reason="matplotlib (the plots extra) not installed"
)


@pytest.fixture(scope="module")
def result() -> AuditResult:
    rng = np.random.default_rng(1)
    lengths = np.maximum(1, rng.lognormal(3.2, 1.3, 4000)).astype(np.int64)
    evals = np.maximum(1, rng.lognormal(3.2, 1.3, 800)).astype(np.int64)
    return audit_corpus(
        lengths,
        ["discard", "continue", "segment-first"],
        Settings(capacity=64, min_buffer=40, refill=16),
        horizon=pt.Budget("rows", 900),
        permutations=4,
        evaluation=EvalStream(evals, 63 * 200, (63 * 20, 63 * 100), "lognormal eval"),
        label="lognormal test corpus",
        documents=True,
    )


def test_json_keys_are_stable(result: AuditResult) -> None:
    doc = result.to_dict()
    assert tuple(doc) == TOP_LEVEL_KEYS
    assert (doc["schema"], doc["version"]) == (SCHEMA, SCHEMA_VERSION) == ("packing-theory/audit", 5)
    assert doc["run"] is None  # a document built outside a writer has no run
    p0 = doc["packers"][0]
    assert p0["packer"] == "discard" and p0["row_width"] == 64
    assert p0["horizon"]["asked"] == 900 and p0["horizon"]["unit"] == "rows"
    assert doc["horizon"]["rule"] == "asked" and doc["horizon"]["value"] == 900
    assert len(p0["strata"]) == 9
    assert doc["settings"]["boundaries"] == [32, 128, 512, 1024, 2049, 4096, 8192, 16384]
    assert set(doc["startup"][0]) == {"policy", "permutations", "seed", "delays", "min", "median", "max"}
    assert set(doc["evaluation"]) == {"corpus", "populations"}
    assert doc["documents"]["file"] == "documents.csv"
    assert json.loads(json.dumps(doc)) == doc
    assert doc["headline"].startswith("discard reached the horizon of 900 rows:")


def test_markdown_and_page_come_from_the_same_sections(result: AuditResult) -> None:
    md = render_markdown(result)
    for needle in (
        "# Source-inclusion audit",
        "## The answer",
        "What happened to the tokens offered",
        "## Per packer",
        "Token mass",
        "The protected set",
        "## By original length",
        "## Startup delay over random orders",
        "## Evaluation population",
        "## Documents not trained",
        "33–128",
        ">16384",
    ):
        assert needle in md, needle
    for block in md.split("\n\n"):  # every table row has as many cells as its header
        rows = [r for r in block.splitlines() if r.startswith("|")]
        if rows:
            assert len({r.replace("\\|", "").count("|") for r in rows}) == 1, block
    tables = [b for s in result.sections() for b in walk_blocks([s]) if isinstance(b, Table)]
    assert all(t.caption.split(" (")[0] in md or not t.caption for t in tables)


def test_the_answer_card_decomposes_every_packers_tokens(result: AuditResult) -> None:
    answer = result.sections()[0]
    assert answer.answer
    bars = next(b for b in answer.blocks if isinstance(b, pt.reporting.Bars))
    for (name, values), run in zip(bars.bars, result.measurement.runs, strict=True):
        assert name == run.packer and sum(values) == run.never_trained.offered_tokens
        assert values[0] == run.never_trained.trained_tokens


def test_the_never_started_documents_are_the_largest_ones_by_raw_index() -> None:
    rng = np.random.default_rng(5)
    lengths = np.clip(rng.lognormal(4, 1.2, 600).astype(np.int64) + 1, 1, 3000)
    corpus = pt.Corpus.from_lengths(lengths, names=[f"doc{i}.txt" for i in range(lengths.size)])
    res = audit_corpus(
        corpus, ["discard"], Settings(capacity=65, min_buffer=16, refill=4), permutations=0, documents=True
    )
    table = res.measurement.runs[0].documents
    assert table is not None
    expected = sorted(
        (
            (int(n), int(d))
            for d, n, f in zip(
                table.column("document"), table.column("length"), table.column("fate"), strict=True
            )
            if f == "never started"
        ),
        key=lambda t: (-t[0], t[1]),
    )
    card = next(b for b in res.sections()[0].blocks if isinstance(b, Table) and b.key == "never-started")
    assert [(row[3], row[0]) for row in card.rows] == expected[:10] and len(expected) >= 10
    assert all(row[1] == f"doc{row[0]}.txt" for row in card.rows)
    assert f"documents never started: discard {len(expected):,}" in card.more


def test_the_documents_section_counts_what_it_says() -> None:
    """Its counts are the table's: pairs with no token trained (never started, never reached, or placed only
    in the unfinished last row: the count compare ranks by), pairs cut."""
    from packing_theory.orchestration.answer import documents_not_trained

    rng = np.random.default_rng(36)  # a seed whose last, unfinished row holds a whole document
    lengths = np.clip(rng.lognormal(4, 1.2, 500).astype(np.int64) + 1, 1, 3000)
    res = audit_corpus(lengths, ["discard"], Settings(capacity=65, min_buffer=16, refill=4), permutations=0,
                       documents=True)
    run = res.measurement.runs[0]
    table = run.documents
    assert table is not None and run.horizon.partial_row_tokens > 0
    fate = list(table.column("fate"))
    emitted = np.asarray(table.column("emitted"))
    section = next(s for s in res.sections() if s.key == "documents")
    text = next(b for b in section.blocks if not isinstance(b, Table)).text
    in_partial = [f for f, e, s in zip(fate, emitted.tolist(), table.column("started"), strict=True)
                  if s and e == 0]
    assert in_partial and set(in_partial) == {"never trained (unfinished row)"}
    gone = sum(f in ("never started", "never reached", "never trained (unfinished row)") for f in fate)
    assert gone == documents_not_trained(run) > sum(f in ("never started", "never reached") for f in fate)
    assert text.startswith(f"{gone:,} (document, packer) pairs have no token trained (never started, never "
                           "reached, or placed only in the unfinished last row")
    assert f"{run.never_trained.dropped.documents:,} more pairs started and had tails cut off" in text


def test_a_funnel_keeps_every_document_by_its_raw_index_and_name() -> None:
    from packing_theory.corpus.funnel import Funnel

    lengths = np.array([5, 4000, 6, 3000, 7, 2500, 8, 2000] * 8)
    drop = [i for i in range(lengths.size) if i % 8 == 1]  # every 4000-token document
    corpus = pt.Corpus.from_lengths(
        lengths,
        names=[f"f{i}" for i in range(lengths.size)],
        funnel=Funnel.from_document({"stages": [{"name": "q", "kind": "filter", "ids": drop}]}),
    )
    res = audit_corpus(
        corpus, ["discard"], Settings(capacity=64, min_buffer=4, refill=2), permutations=0, documents=True
    )
    card = next(b for b in res.sections()[0].blocks if isinstance(b, Table) and b.key == "never-started")
    for raw, name, _, n, _ in card.rows:
        assert name == f"f{raw}" and lengths[raw] == n and raw not in drop


@needs_plots
def test_pngs_written(result: AuditResult, tmp_path: Path) -> None:
    files = write_report(result, tmp_path / "rep", plots=True)
    assert [p.name for p in files.plots] == list(PLOT_FILES)
    for p in files.plots:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
    assert json.loads(files.json.read_text())["schema"] == SCHEMA
    assert (
        "![Which positions of long documents were trained on](exposure_profile.png)"
        in files.markdown.read_text()
    )
    assert (tmp_path / "rep" / "documents.csv").exists()


def test_missing_matplotlib_gives_a_clear_message(
    result: AuditResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert not matplotlib_available()
    with pytest.raises(ImportError, match=r"packing-theory\[plots\]"):
        write_report(result, tmp_path / "plots", plots=True)
    files = write_report(result, tmp_path / "noplots")
    assert files.plots == () and files.markdown.exists()


def test_write_report_refuses_a_file_as_directory(result: AuditResult, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        write_report(result, f)


def test_the_reference_stands_beside_this_audits_figures() -> None:
    res = audit_corpus(
        [3, 40, 5, 50, 2, 60, 4, 70] * 30,
        ["discard"],
        Settings(capacity=8, min_buffer=4, refill=2),
        permutations=0,
        reference=PAPER_5_1,
    )
    ref = next(s for s in res.sections() if s.key == "reference")
    rows = {(r[0], r[1]): r for b in ref.blocks if isinstance(b, Table) for r in b.rows}
    assert rows[("discard", "crop events")][2] == 225_735
    assert rows[("discard", "crop events")][3] == res.measurement.runs[0].aggregates.crop_events


def _finite(n_short: int, n_long: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([rng.integers(20, 500, n_short), rng.integers(700, 3000, n_long)])
    rng.shuffle(lengths)
    return lengths.astype(np.int64)


SETTINGS = Settings(capacity=513, min_buffer=64, refill=16)


def test_no_long_document_means_a_startup_sentence() -> None:
    res = audit_corpus(_finite(400, 0), ["discard"], SETTINGS, permutations=2)
    notes = plot_notes(res)
    assert set(notes) == {"startup_delay.png"}
    assert "no document longer than R = 513" in notes["startup_delay.png"]
    assert {p.name: p.note for p in audit_plot_files(res) if p.note} == notes


def test_long_documents_that_never_start_are_named_in_the_sentence() -> None:
    res = audit_corpus(_finite(400, 30), ["discard"], SETTINGS, permutations=2)
    assert res.measurement.runs[0].aggregates.first_over_capacity_target is None  # B - 1 = 63 > 30
    assert (
        "none of the corpus's 30 documents longer than R = 513 started"
        in plot_notes(res)["startup_delay.png"]
    )


def test_a_run_without_rows_has_no_buffered_curve() -> None:
    res = audit_corpus([5, 6, 7], ["discard"], Settings(capacity=8, min_buffer=10, refill=1), permutations=0)
    assert "buffered_mass.png" in plot_notes(res)


@needs_plots
def test_every_plot_shows_data_or_a_sentence_in_both_documents(tmp_path: Path) -> None:
    res = audit_corpus(_finite(3000, 40), ["discard", "continue", "segment-first"], SETTINGS, permutations=3)
    files = write_report(res, tmp_path / "rep", plots=True)
    drawn = {p.name for p in files.plots}
    notes = plot_notes(res)
    assert drawn | set(notes) == set(PLOT_FILES) and not drawn & set(notes)
    md = files.markdown.read_text(encoding="utf-8")
    assert files.html is not None
    page = files.html.read_text(encoding="utf-8")
    for name in drawn:
        assert f"({name})" in md and f'data-name="{name}"><img' in page
    for name, why in notes.items():
        assert f"Not drawn: {name}: {why}" in md and why in page


def test_progress_bar_off_when_not_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress_bar("x", 10, enabled=False) is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert progress_bar("x", 10) is None
    pytest.importorskip("tqdm")
    bar = progress_bar("x", 10, enabled=True)
    assert bar is not None
    bar(4)
    bar(10)
    bar.close()
