"""The checker of what a person sees on a page (``tools/page_check.py``), on small hand-written pages.

Each rule is shown to catch the page it is about (a wide table that pushes a number off-screen, a
scroll box that hides one, an answer card below the fold, a card that scrolls sideways on a phone)
and to pass a clean page, at the laptop (1280 x 800) and phone (390 x 844) viewports. Without a
chromium binary the browser tests skip (a failure under ``PACKING_THEORY_REQUIRE_CHROMIUM=1``).
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tool_modules import load_tool

browser = load_tool("browser")
page_check = load_tool("page_check")

LAPTOP, NARROW, PHONE = page_check.VIEWPORTS

HEAD = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<style>body{margin:0 auto;max-width:1200px;padding:0 16px;font:15px sans-serif}"
        "td,th{border:1px solid #ccc;padding:2px 6px}td.num{text-align:right}</style></head><body>")
CARD = ('<section data-answer><h2>What was not trained</h2><p>discard: 12.5 % of the tokens were never '
        "started: 1,234 documents.</p></section>")
SMALL_TABLE = ('<table><caption>per source</caption><thead><tr><th>source</th><th>tokens</th>'
               '<th>share</th></tr></thead><tbody>'
               '<tr><th scope="row">web</th><td class="num">1,234</td><td>12.5 %</td></tr>'
               '<tr><th scope="row">code</th><td class="num">56</td><td>0.4 %</td></tr></tbody></table>')
# the number column follows a column stretched by an unbreakable run of text, as a long array does
LONG = ", ".join(str(i) for i in range(400))
WIDE_TABLE = ('<table><caption>per packer</caption><thead><tr><th>packer</th><th>lengths</th>'
              '<th>never started</th></tr></thead><tbody><tr><td>discard</td>'
              f'<td style="white-space:nowrap">{LONG}</td>'
              '<td>4,321 (3.2 %)</td></tr></tbody></table>')


@pytest.fixture(scope="module")
def session(chromium: str) -> Iterator[Any]:
    """One browser for the module (each page opens in a tab of its own)."""
    with browser.Chromium(chromium) as b:
        yield b


def open_page(session: Any, tmp_path: Path, body: str, name: str = "page.html") -> Any:
    path = tmp_path / name
    path.write_text(HEAD + body + "</body></html>", encoding="utf-8")
    return session.open(path.as_uri(), settle=0.1)


@pytest.mark.parametrize("text", ["0", "12", "1,234", "1 234 567", "1\u202f234", "-3.5", "−0.25", ".5",
                                  "1.5e-06", "12.5 %", "12.5%", "3 MiB", "40 tok/s", "2×", "~1,000",
                                  "≤ 4", "1,234 (5.6 %)", "0.1285"])
def test_number_pattern_accepts_numbers(text: str) -> None:
    assert re.fullmatch(page_check.NUMBER_PATTERN, text)


@pytest.mark.parametrize("text", ["", "discard", "—", "yes", "129–512", "1.2.3", "a1", "2026-12-06",
                                  "1,23", "12 345 words more", "2 values: 1, 2", "sha256:ab12", "(3)", "%"])
def test_number_pattern_refuses_other_text(text: str) -> None:
    assert not re.fullmatch(page_check.NUMBER_PATTERN, text)


def test_page_check_invariants_hold_and_catch_a_broken_record() -> None:
    page_check.PageCheck((390, 844), problems=["answer at 390×844: …"], counts=Counter(answer=1))._check()
    with pytest.raises(AssertionError):  # a counted finding without its line
        page_check.PageCheck((390, 844), counts=Counter(clipped=3))._check()
    with pytest.raises(AssertionError):  # more lines than findings
        page_check.PageCheck((390, 844), problems=["a", "b"], counts=Counter(clipped=1))._check()


def test_a_clean_page_passes_at_every_viewport(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, "<h1>Audit</h1>" + CARD + SMALL_TABLE)
    for width, height in page_check.VIEWPORTS:
        check = page_check.check_page(page, width, height, require_answer=True)
        assert check.problems == [], (width, check.problems)
        assert check.numeric_cells == 4  # two class="num" cells, two by their text (12.5 %, 0.4 %)
        assert check.skipped == []


def test_a_wide_table_that_pushes_a_number_off_screen_is_caught(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, CARD + WIDE_TABLE)
    check = page_check.check_page(page, *LAPTOP)
    assert check.counts["off-screen"] == 1
    (line,) = [p for p in check.problems if p.startswith("off-screen")]
    assert line.startswith('off-screen at 1280×800: table "per packer", row "discard", '
                           'column "never started": "4,321 (3.2 %)" at x ')
    left = int(re.search(r"at x ([\d,]+)", line)[1].replace(",", ""))  # type: ignore[index]
    assert left > 1280
    assert check.counts["page-width"] == 1  # the table widens the page itself


def test_a_scroll_box_that_hides_a_number_is_caught(session: Any, tmp_path: Path) -> None:
    body = CARD + f'<div class="scroll" style="overflow:auto">{WIDE_TABLE}</div>'
    page = open_page(session, tmp_path, body)
    check = page_check.check_page(page, *LAPTOP)
    assert dict(check.counts) == {"clipped": 1}  # the box keeps the page narrow but hides the number
    (line,) = check.problems
    assert line.startswith('clipped at 1280×800: table "per packer", row "discard", column "never started": '
                           '"4,321 (3.2 %)"')
    assert "cut by <div.scroll>, which shows x 40–1,240 px" in line


def test_hidden_cells_are_skipped_and_opened_ones_checked(session: Any, tmp_path: Path) -> None:
    body = (CARD + f"<details><summary>closed</summary>{WIDE_TABLE}</details>"
            f'<div style="display:none">{WIDE_TABLE}</div>'
            f'<details open><summary>open</summary><div style="overflow:hidden">{WIDE_TABLE}</div></details>')
    check = page_check.check_page(open_page(session, tmp_path, body), *LAPTOP)
    assert check.hidden_cells == 2
    assert dict(check.counts) == {"clipped": 1}
    assert "cut by <div>" in check.problems[0]


def test_an_empty_numeric_cell_is_caught(session: Any, tmp_path: Path) -> None:
    body = CARD + SMALL_TABLE.replace('<td class="num">56</td>', '<td class="num"> </td>')
    (line,) = page_check.check_page(open_page(session, tmp_path, body), *LAPTOP).problems
    assert line == ('empty at 1280×800: table "per source", row "code", column "tokens": '
                    "a numeric cell with no text")


def test_the_findings_per_table_are_capped_but_all_counted(session: Any, tmp_path: Path) -> None:
    rows = "".join(f'<tr><td>p{i}</td><td style="white-space:nowrap">{LONG}</td><td class="num">{i}</td></tr>'
                   for i in range(7))
    page = open_page(session, tmp_path, CARD + f"<table><caption>many</caption><tbody>{rows}</tbody></table>")
    check = page_check.check_page(page, *LAPTOP, cells_per_table=3)
    assert check.counts["off-screen"] == 7
    cells = [p for p in check.problems if p.startswith("off-screen")]
    assert len(cells) == 4
    assert 'table "many", row "p2", column 3: "2" at x ' in cells[2]  # no header row: the column's number
    assert cells[3] == 'off-screen at 1280×800: table "many": 4 more numeric cells not shown (4 off-screen)'


def test_a_name_two_rows_or_columns_share_comes_with_its_number(session: Any, tmp_path: Path) -> None:
    """A transposed table whose records share a label (two columns "segment-first") is told apart."""
    table = ("<table><caption>cells</caption><thead><tr><th>field</th><th>segment-first</th>"
             "<th>segment-first</th></tr></thead><tbody>"
             f'<tr><td>note</td><td style="white-space:nowrap">{LONG}</td><td>x</td></tr>'
             '<tr><td>context</td><td class="num">1,024</td><td class="num">2,048</td></tr>'
             '<tr><td>context</td><td class="num">1,024</td><td class="num">4,096</td></tr></tbody></table>')
    check = page_check.check_page(open_page(session, tmp_path, CARD + table), *LAPTOP)
    assert check.counts["off-screen"] == 4  # columns 2 (right-aligned in the stretched column) and 3
    cells = [p for p in check.problems if "column 3" in p]
    assert len(cells) == 2
    assert cells[0].startswith('off-screen at 1280×800: table "cells", row 3 ("context"), '
                               'column 3 ("segment-first"): "2,048" at x ')
    assert cells[1].startswith('off-screen at 1280×800: table "cells", row 4 ("context"), '
                               'column 3 ("segment-first"): "4,096" at x ')


def test_an_answer_card_below_the_fold_is_caught(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, '<div style="height:1500px">intro</div>' + CARD)
    (line,) = page_check.check_page(page, *LAPTOP, require_answer=True).problems
    assert re.fullmatch(r"answer at 1280×800: the answer card <section> starts at y 1,5\d\d px, "
                        r"below the first screen \(800 px\)", line)


def test_a_missing_answer_card_is_a_finding_only_when_required(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, SMALL_TABLE)
    loose = page_check.check_page(page, *LAPTOP)
    assert loose.problems == []
    assert loose.skipped == ["answer: the page has no [data-answer] or #answer element (rule skipped)"]
    strict = page_check.check_page(page, *LAPTOP, require_answer=True)
    assert strict.problems == ["answer at 1280×800: no answer card ([data-answer] or #answer) on the page"]
    hidden_card = CARD.replace("<section data-answer>", '<section id="answer" hidden>')
    hidden = open_page(session, tmp_path, hidden_card)
    (line,) = page_check.check_page(hidden, *LAPTOP, require_answer=True).problems
    assert line == "answer at 1280×800: the answer card <section#answer> is not displayed"


def test_a_card_that_scrolls_sideways_on_a_phone_is_caught(session: Any, tmp_path: Path) -> None:
    bar = ('<div data-answer><p>What was not trained</p><div class="bar" style="width:700px;display:flex">'
           '<span style="flex:1">trained 87.5 %</span><span>never started 12.5 %</span></div></div>')
    page = open_page(session, tmp_path, bar)
    assert page_check.check_page(page, *LAPTOP, require_answer=True).problems == []
    check = page_check.check_page(page, *PHONE, require_answer=True)
    assert check.counts["page-width"] == 1 and check.counts["answer-width"] >= 2
    assert any(p.startswith("answer-width at 390×844: in the answer card <div>: <div.bar> spans x 16–716 px")
               for p in check.problems)
    assert any('text "never started 12.5 %"' in p for p in check.problems)
    assert any(p.startswith("page-width at 390×844: the page is 716 px wide") for p in check.problems)


def test_a_card_that_hides_its_text_in_a_scroll_box_is_caught(session: Any, tmp_path: Path) -> None:
    card = ('<div data-answer style="overflow-x:auto"><p style="white-space:nowrap">discard never started '
            "1,234 documents of the web source, 12.5 % of its tokens, the longest first</p></div>")
    check = page_check.check_page(open_page(session, tmp_path, card), *PHONE, require_answer=True)
    assert "page-width" not in check.counts  # the box keeps the page narrow ...
    scrolls = r"in the answer card <div>: <div> scrolls sideways \(\d+ px of content in 358 px\)"
    assert any(re.search(scrolls, p) for p in check.problems)  # ... but the card must be scrolled to be read
    assert any('is cut by <div>' in p for p in check.problems)


def test_console_errors_and_external_requests_are_findings(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, CARD + '<img src="http://127.0.0.1:9/x.png" alt="">'
                     '<script>console.error("boom")</script>')
    check = page_check.check_page(page, *LAPTOP)
    assert check.counts["console"] >= 1 and check.counts["external request"] == 1
    assert "external request: http://127.0.0.1:9/x.png" in check.problems
    assert any(p.startswith("console: ") and "boom" in p for p in check.problems)


def test_a_bad_viewport_is_refused(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, CARD)
    with pytest.raises(ValueError, match="the viewport must be at least 1 x 1 CSS pixels, got 0 x 800"):
        page_check.check_page(page, 0, 800)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_screenshots_are_full_pages_at_every_viewport(session: Any, tmp_path: Path) -> None:
    page = open_page(session, tmp_path, CARD + '<div style="height:2000px"></div>' + SMALL_TABLE)
    paths = page_check.save_screenshots(page, tmp_path / "shots", "clean")
    assert [p.name for p in paths] == ["clean-1280x800.png", "clean-800x1000.png", "clean-390x844.png"]
    (w1, h1), (w2, h2), (w3, h3) = (_png_size(p) for p in paths)
    assert (w1, w2, w3) == (1280, 800, 390)
    assert h1 > 2000 and h3 > h2 >= h1  # the whole page, taller where the text wraps
