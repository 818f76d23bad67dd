"""Every report-writing command writes its report.html through the writer; two runs give the same page
apart from the run metadata (run id, timings)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.reporting import matplotlib_available, verify_report
from packing_theory.reporting.page import strip_run_metadata

needs_plots = pytest.mark.skipif(not matplotlib_available(),
                                 reason="matplotlib (the plots extra) not installed")


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("html") / "lengths.npy"
    lengths = np.concatenate([rng.integers(1, 1500, 4000), rng.integers(2100, 6000, 40)])
    np.save(path, lengths.astype(np.int64))
    return path


@needs_plots
@pytest.mark.parametrize(("command", "page"), [
    (["audit", "--policy", "discard,continue", "--permutations", "2"], "audit.html"),
    (["compare", "--policy", "discard,trl-bfd,megatron-gpt"], "compare.html"),
])
def test_two_runs_same_page_but_the_run_metadata(command: list[str], page: str, lengths: Path,
                                                 tmp_path: Path) -> None:
    pages = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main([*command, "--lengths", str(lengths), "--out", str(out), "--no-progress"]) == 0
        check = verify_report(out)
        assert check.ok and page in check.files  # in the manifest, with its digest
        pages.append((out / page).read_text(encoding="utf-8"))
    assert pages[0] != pages[1]  # the run ids differ
    assert strip_run_metadata(pages[0]) == strip_run_metadata(pages[1])
    assert pages[0].count("data:image/png;base64,") >= 2


def test_census_writes_a_page(tmp_path: Path) -> None:
    for i in range(2):
        (tmp_path / f"t{i}.txt").write_text("one document\n" * (i + 2), encoding="utf-8")
    out = tmp_path / "census"
    assert main(["census", "--text", str(tmp_path / "t0.txt"), str(tmp_path / "t1.txt"), "--workers", "1",
                 "--out", str(out), "--no-progress"]) == 0
    page = (out / "census.html").read_text(encoding="utf-8")
    assert "2 input file(s)" in page and 'class="sortable' in page
    assert verify_report(out).ok
