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
    assert set(checks[name]) == {(1280, 800), (800, 1000), (390, 844)}
    assert all(check.numeric_cells > 0 for check in checks[name].values())  # the rule had cells to check
    found = {f"{w}×{h}": dict(check.counts) for (w, h), check in checks[name].items() if check.problems}
    lines = [line for check in checks[name].values() for line in check.problems]
    assert not found, f"{name}.html: {found}\n" + "\n".join(lines[:40])



def test_a_long_unbreakable_name_in_the_first_column_stays_on_screen(chromium: str, tmp_path: Path) -> None:
    """A path or URL with no space (a reference file deep in a temporary folder) wraps inside its cell
    at both viewports instead of widening the page, while short first-column names are not split."""
    from packing_theory.reporting import Column, Section, Table, Text, write_report

    browser = load_tool("browser")
    page_check = load_tool("page_check")
    long_name = "/" + "/".join(f"folder{i:02d}_with_a_long_name" for i in range(12)) + "/reference.txt"

    class Paths:
        kind, title = "paths", "Paths"

        def headline(self) -> str:
            return "2 references read"

        def to_dict(self, run: object = None) -> dict[str, object]:
            return {"schema": "paths", "version": 1, "run": run}

        def sections(self) -> list[Section]:
            table = Table("References", (Column("reference"), Column("rows", "count")),
                          ((long_name, 3), ("short.txt", 12)))
            return [Section("answer", "The answer", (Text("2 references read."), table), answer=True)]

        def plots(self) -> list[object]:
            return []

        def attachments(self) -> list[object]:
            return []

    write_report(Paths(), tmp_path)  # type: ignore[arg-type]
    with browser.Chromium(chromium) as session:
        page = session.open((tmp_path / "paths.html").as_uri(), settle=0.1)
        for width, height in page_check.VIEWPORTS:
            check = page_check.check_page(page, width, height, require_answer=True)
            assert not check.problems, check.problems
        page.set_viewport(*page_check.VIEWPORTS[0])
        lines = page.evaluate("(()=>{const td=[...document.querySelectorAll('td')].find(t=>t.textContent==="
                              "'short.txt');const r=document.createRange();r.selectNodeContents(td);"
                              "return r.getClientRects().length;})()")
        assert lines == 1
