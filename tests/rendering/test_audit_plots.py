"""Audit plots on any input: each plot shows data or is replaced by a sentence (Markdown and HTML)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from packing_theory import PackerConfig
from packing_theory.orchestration import run_audit
from packing_theory.rendering.audit import never_trained_documents, write_report
from packing_theory.rendering.audit_plots import PLOT_FILES, PLOT_SECTIONS, plot_notes
from packing_theory.reporting import matplotlib_available

needs_plots = pytest.mark.skipif(not matplotlib_available(),
                                 reason="matplotlib (the plots extra) not installed")


def _finite(n_short: int, n_long: int, seed: int = 0) -> np.ndarray:
    """A small corpus that runs dry long before the default row budget."""
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([rng.integers(20, 500, n_short), rng.integers(700, 3000, n_long)])
    rng.shuffle(lengths)
    return lengths.astype(np.int64)


CONFIG = PackerConfig(capacity=513, min_buffer=64, refill=16, rows=100_000)


def test_no_long_document_means_a_startup_sentence() -> None:
    res = run_audit(_finite(400, 0), CONFIG, policies=["discard"], permutations=2)
    notes = plot_notes(res)
    assert set(notes) == {"startup_delay.png"}
    assert "no document longer than R = 513" in notes["startup_delay.png"]


def test_long_documents_that_never_start_are_named_in_the_sentence() -> None:
    res = run_audit(_finite(400, 30), CONFIG, policies=["discard"], permutations=2)
    assert res.policies[0].first_over_capacity_target is None  # B - 1 = 63 > 30: none starts
    why = plot_notes(res)["startup_delay.png"]
    assert "none of the corpus's 30 documents longer than R = 513 started" in why


def test_a_run_without_rows_has_no_buffered_curve() -> None:
    res = run_audit([5, 6, 7], PackerConfig(capacity=8, min_buffer=10, refill=1), policies=["discard"],
                    permutations=0)
    assert "buffered_mass.png" in plot_notes(res)


def test_sections_name_real_entries_of_the_json() -> None:
    from packing_theory.rendering.audit import TOP_LEVEL_KEYS

    assert set(PLOT_SECTIONS) == set(PLOT_FILES)
    assert set(PLOT_SECTIONS.values()) <= set(TOP_LEVEL_KEYS)


@needs_plots
def test_small_finite_corpus_every_plot_shows_data_or_a_sentence(tmp_path: Path) -> None:
    """A few thousand documents that run dry early: each plot is a PNG or a sentence, in both documents."""
    res = run_audit(_finite(3000, 40), CONFIG, policies=["discard", "continue", "segment-first"],
                    permutations=3)
    assert res.policies[0].stop_reason == "exhausted"
    files = write_report(res, tmp_path / "rep")
    drawn = {p.name for p in files.plots}
    notes = plot_notes(res)
    assert drawn | set(notes) == set(PLOT_FILES) and not drawn & set(notes)
    assert "buffered_mass.png" in drawn  # a run of a few hundred rows draws a curve
    assert len(res.policies[0].series) > 50
    md = files.markdown.read_text(encoding="utf-8")
    assert files.html is not None
    page = files.html.read_text(encoding="utf-8")
    for name in drawn:
        assert f"({name})" in md and f'data-name="{name}"><img' in page
    for name, why in notes.items():
        assert f"Not drawn: {name}: {why}" in md and why in page


@needs_plots
def test_no_long_documents_the_startup_plot_is_not_written(tmp_path: Path) -> None:
    res = run_audit(_finite(400, 0), CONFIG, policies=["discard"], permutations=2)
    files = write_report(res, tmp_path / "rep")
    assert not (tmp_path / "rep" / "startup_delay.png").exists()
    assert {p.name for p in files.plots} == set(PLOT_FILES) - {"startup_delay.png"}
    assert files.html is not None and 'class="empty-plot"' in files.html.read_text(encoding="utf-8")


def test_the_page_lists_exactly_the_never_trained_documents_largest_first() -> None:
    """The HTML page's table: every document with no emitted token, with its name, largest first."""
    rng = np.random.default_rng(5)
    lengths = np.clip(rng.lognormal(4, 1.2, 600).astype(np.int64) + 1, 1, 3000)
    names = [f"doc{i}.txt" for i in range(lengths.size)]
    res = run_audit(lengths, PackerConfig(capacity=65, min_buffer=16, refill=4), permutations=0,
                    documents=True, document_names=names)
    (table,) = res.document_tables
    fate = table.column("fate")
    expected = {int(d) for d, f in zip(table.column("document"), fate, strict=True)
                if f in ("never started", "never reached")}
    page = never_trained_documents(res)
    got = page["never_trained_documents"]
    assert {r["document"] for r in got} == expected and len(expected) >= 15
    assert all(r["name"] == f"doc{r['document']}.txt" for r in got)
    assert [r["length"] for r in got] == sorted((r["length"] for r in got), reverse=True)
    short = never_trained_documents(res, limit=5)
    assert len(short["never_trained_documents"]) == 5
    assert f"the 5 largest of {len(expected):,} shown" in short["never_trained_documents_note"]
