"""Every report page the CLI writes, checked for what a person sees (``tools/page_check.py``).

Each page — audit, compare, evaluate on their demos (the smallest options that still write them),
census and contamination on a few generated text files — is opened in headless Chromium at
1280 x 800 and 390 x 844 and must show every number of its tables on screen, start with an answer
card (``[data-answer]`` or ``#answer``) readable without sideways scrolling, never scroll sideways
itself, and log no error nor load anything. Full-page screenshots of both viewports go to
``$PACKING_THEORY_ARTIFACTS/pages`` when it is set. Without chromium these tests skip (a failure
under ``PACKING_THEORY_REQUIRE_CHROMIUM=1``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tool_modules import load_tool

screenshots = load_tool("screenshots")

SLOW = {"audit", "compare", "evaluate"}  # about 10 s each (their demos); census and contamination: 4 s


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else [])
                                  for n in screenshots.SMALL])
def test_a_person_sees_every_number_of_the_page(chromium: str, tmp_path: Path, name: str) -> None:
    reports = screenshots.write_demo_reports(tmp_path, [name], runs=screenshots.SMALL)
    artifacts = os.environ.get("PACKING_THEORY_ARTIFACTS")
    checks = screenshots.check_pages(reports, require_answer=True,
                                     artifacts=Path(artifacts) / "pages" if artifacts else None)
    assert set(checks[name]) == {(1280, 800), (390, 844)}
    assert all(check.numeric_cells > 0 for check in checks[name].values())  # the rule had cells to check
    found = {f"{w}×{h}": dict(check.counts) for (w, h), check in checks[name].items() if check.problems}
    lines = [line for check in checks[name].values() for line in check.problems]
    assert not found, f"{name}.html: {found}\n" + "\n".join(lines[:40])

