"""Report rendering: JSON schema stability, Markdown sections, PNG plots, progress bar."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.orchestration import AuditResult, run_audit
from packing_theory.rendering.audit import (
    PAPER_5_1,
    PLOT_FILES,
    POLICY_KEYS,
    SCHEMA,
    SCHEMA_VERSION,
    TOP_LEVEL_KEYS,
    render_markdown,
    report_dict,
    write_plots,
    write_report,
)
from packing_theory.reporting import matplotlib_available, progress_bar


@pytest.fixture(scope="module")
def result() -> AuditResult:
    rng = np.random.default_rng(1)
    lengths = np.maximum(1, rng.lognormal(3.2, 1.3, 4000)).astype(np.int64)
    evals = np.maximum(1, rng.lognormal(3.2, 1.3, 800)).astype(np.int64)
    cfg = pt.PackerConfig(capacity=64, min_buffer=40, refill=16, rows=900)
    return run_audit(lengths, cfg, policies=["discard", "continue", "segment-first"], permutations=4,
                     eval_lengths=evals, eval_targets=63 * 200, eval_prefixes=(63 * 20, 63 * 100),
                     corpus_label="lognormal test corpus", eval_label="lognormal eval")


def test_json_schema_keys_are_stable(result: AuditResult) -> None:
    doc = report_dict(result)
    assert tuple(doc) == TOP_LEVEL_KEYS
    assert (doc["schema"], doc["version"]) == (SCHEMA, SCHEMA_VERSION) == ("packing-theory/audit", 3)
    assert doc["run"] is None  # a document built outside a ReportWriter has no run
    assert [tuple(p) for p in doc["policies"]] == [POLICY_KEYS] * 3
    p0 = doc["policies"][0]
    assert set(p0["mass"]) == {"arrived_tokens", "added_bos", "emitted_tokens", "emitted_added_bos",
                               "discarded_tokens", "buffered_tokens", "buffered_added_bos", "identity_holds",
                               "filtered_tokens", "padding_tokens", "repeated_tokens",
                               "unused_capacity_tokens"}
    assert set(p0["sources"]) == {"arrived", "started", "never_started", "fully_emitted", "distinct_started",
                                  "conservation_violations", "filtered"}
    assert set(p0["protected"]) == {"members", "long_arrivals", "tokens", "started_members",
                                    "buffered_tokens", "share_of_arrived", "share_of_buffered"}
    assert set(p0["horizon"]) == {"asked", "unit", "stopped_at_row", "reason", "partial_row_tokens",
                                  "exhausted_at_row"}
    assert p0["horizon"]["asked"] == 900 and p0["horizon"]["unit"] == "rows"
    assert {"tokens", "documents", "share", "never_started", "dropped", "still_buffered", "never_reached",
            "offered_tokens", "mass"} <= set(p0["never_trained"])
    assert isinstance(doc["headline"], str) and doc["headline"].startswith("discard ")
    assert len(p0["strata"]) == len(doc["strata"]["labels"]) == 9
    assert doc["strata"]["boundaries"] == [32, 128, 512, 1024, 2049, 4096, 8192, 16384]
    assert {"retention", "never_started_sources", "label"} <= set(p0["strata"][0])
    assert set(doc["startup"][0]) == {"policy", "permutations", "seed", "delays", "min", "median", "max"}
    assert set(doc["evaluation"]) == {"corpus", "populations"}
    assert {"zero_inclusion", "prefixes", "verdict", "population", "included"} <= set(
        doc["evaluation"]["populations"][0])
    # JSON-serialisable and round-trips
    assert json.loads(json.dumps(doc)) == doc
    assert report_dict(result, reference=PAPER_5_1)["reference"]["discard"]["crop_events"] == 225_735


def test_markdown_has_the_required_sections(result: AuditResult) -> None:
    md = render_markdown(result, reference=PAPER_5_1)
    for needle in ("# Source-inclusion audit", "emitted tokens", "discarded tokens", "buffered tokens",
                   "mass identity", "sources started", "sources never started", "protected / buffered mass",
                   "startup delay", "over permutations", "## Retention of loaded source tokens",
                   "## Evaluation population", "Verdict", "paper §5.1", "33–128", ">16384"):
        assert needle in md, needle
    assert md.count("\n") < 85  # about one screen: the headline, horizon and terms sections add ~15 lines
    assert "| discard | continue | segment-first |" in md
    # every table row has as many cells as its header
    for block in md.split("\n\n"):
        rows = [r for r in block.splitlines() if r.startswith("|")]
        if rows:
            assert len({r.count("|") for r in rows}) == 1, block


@pytest.mark.skipif(not matplotlib_available(), reason="matplotlib (the plots extra) is not installed")
def test_pngs_written(result: AuditResult, tmp_path: Path) -> None:
    files = write_report(result, tmp_path / "rep", reference=PAPER_5_1)
    assert [p.name for p in files.plots] == list(PLOT_FILES)
    for p in files.plots:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert p.stat().st_size > 5000
    assert json.loads(files.json.read_text())["schema"] == SCHEMA
    md = files.markdown.read_text()
    assert "[exposure_profile.png](exposure_profile.png)" in md


def test_missing_matplotlib_gives_a_clear_message(result: AuditResult, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert not matplotlib_available()
    with pytest.raises(ImportError, match=r"packing-theory\[plots\]"):
        write_plots(result, tmp_path)
    files = write_report(result, tmp_path / "noplots", plots=False)
    assert files.plots == () and files.markdown.exists()


def test_write_report_refuses_a_file_as_directory(result: AuditResult, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        write_report(result, f, plots=False)


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


def test_markdown_states_each_peers_row_width_and_sequence_length() -> None:
    """A peer audited at ``--capacity R`` runs at row width R; the report names that sequence length."""
    lengths = np.random.default_rng(3).integers(1, 200, 600)
    cfg = pt.PackerConfig(capacity=129, min_buffer=8, refill=4)
    res = run_audit(lengths, cfg, policies=["discard", "trl-bfd", "megatron-gpt"], permutations=0)
    corpus_line = next(line for line in render_markdown(res).splitlines() if line.startswith("Corpus"))
    assert "trl-bfd at row width 129 = sequence length 129" in corpus_line
    assert "megatron-gpt at row width 129 = sequence length 128" in corpus_line
    assert "discard at" not in corpus_line
    streaming_only = run_audit(lengths, cfg, policies=["discard"], permutations=0)
    assert "Peers" not in render_markdown(streaming_only)
