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
