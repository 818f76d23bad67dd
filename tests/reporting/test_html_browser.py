"""The HTML reports of ``audit --demo``, ``compare --demo`` and ``evaluate --demo`` in headless Chromium.

Zero console errors, zero external requests or failed loads, the headline, a table for every list of
records, every plot shown, sorting and filtering working (``tools/browser.py``). Without a chromium
binary these tests skip, unless ``PACKING_THEORY_REQUIRE_CHROMIUM=1`` (set by ``.ci/run``) makes that a
failure. Screenshots go to ``$PACKING_THEORY_ARTIFACTS`` when it is set (CI keeps them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tool_modules import load_tool

browser = load_tool("browser")


def test_the_checker_sees_errors_and_external_requests(chromium: str, tmp_path: Path) -> None:
    """A page that logs an error and loads an image from elsewhere is caught (the checks can fail)."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><p id="headline">h</p><img src="http://127.0.0.1:9/x.png">'
                   '<script>console.error("boom")</script></body></html>', encoding="utf-8")
    with browser.Chromium(chromium) as b:
        page = b.open(bad.as_uri())
    assert any("boom" in e for e in page.errors)
    assert page.external_requests == ["http://127.0.0.1:9/x.png"]
    assert page.failed


@pytest.mark.slow
def test_demo_reports_open_clean_in_chromium(chromium: str, tmp_path: Path) -> None:
    screenshots = load_tool("screenshots")
    reports = screenshots.write_demo_reports(tmp_path, ["audit", "compare", "evaluate"])
    artifacts = os.environ.get("PACKING_THEORY_ARTIFACTS")
    shots = Path(artifacts) if artifacts else tmp_path / "shots"
    problems = screenshots.check_demo_reports(reports, shots)
    assert problems == {"audit": [], "compare": [], "evaluate": []}
    for name in reports:
        assert (shots / f"report-{name}.png").stat().st_size > 10_000


def test_a_wide_sources_audit_fits_a_narrow_window(chromium: str, tmp_path: Path) -> None:
    """Five sources with a declared mixture make the audit's tables about 1,000 pixels wide; in an
    800-pixel window the page scrolled sideways (found by a review). Below 1,040 pixels a table's rows
    stack as cards, so nothing sticks out and every number stays on the page."""
    import json

    import numpy as np

    from packing_theory.cli import main

    rng = np.random.default_rng(4)
    names = ["books", "chat", "code", "pdf", "web"]
    lengths = np.maximum(1, rng.lognormal(6, 1.3, 3000)).astype(np.int64)
    np.save(tmp_path / "l.npy", lengths)
    (tmp_path / "labels.txt").write_text("".join(names[i % 5] + "\n" for i in range(lengths.size)))
    (tmp_path / "mix.json").write_text(json.dumps({"alpha": {n: 0.2 for n in names}}))
    assert main(["audit", "--lengths", str(tmp_path / "l.npy"), "--labels", str(tmp_path / "labels.txt"),
                 "--mixture", str(tmp_path / "mix.json"), "--policy", "discard,trl-bfd", "--permutations",
                 "0", "--no-plots", "--no-progress", "--out", str(tmp_path / "rep")]) == 0
    with browser.Chromium(chromium, width=800, height=1000) as b:
        page = b.open((tmp_path / "rep" / "audit.html").as_uri())
        wide = page.evaluate("document.documentElement.scrollWidth")
        tables = page.evaluate("document.querySelectorAll('table').length")
    assert tables >= 3 and wide <= 800
