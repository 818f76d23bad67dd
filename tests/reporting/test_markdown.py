"""User text in a report renders as its own characters: never HTML, a link or a formula."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory.cli import main
from packing_theory.reporting.markdown import csv_cell, md_escape, table

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
           "![i](http://e/x.png)", "a|b", "*web*", "`code`", "line\nbreak", "&amp;"]


def _rendered_text(markdown: str) -> str:
    """What a reader sees: the text of the HTML that markdown-it renders (tags stripped, entities read)."""
    import html
    import re

    md = pytest.importorskip("markdown_it").MarkdownIt("commonmark").enable("table")
    page = md.render(markdown)
    assert "<script" not in page and "<img" not in page and "<a " not in page and "<em>" not in page
    return html.unescape(re.sub(r"<[^>]+>", "", page)).strip()


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_names_render_as_their_characters(text: str) -> None:
    shown = " ".join(text.split("\n"))
    assert _rendered_text(md_escape(text)) == shown
    cells = _rendered_text("\n".join(table(["source", "n"], [[md_escape(text), "1"]], "lr"))).splitlines()
    assert shown in [c.strip() for c in cells] and cells[-1] == "1"  # one cell, the row intact


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30))
def test_md_escape_is_one_inert_line(text: str) -> None:
    out = md_escape(text)
    assert "\n" not in out and "\r" not in out and "<" not in out
    assert all(out[i - 1] == "\\" for i, ch in enumerate(out) if ch in "[]*_`|" and i > 0) or not out


@pytest.mark.parametrize(("value", "expected"), [
    ('=HYPERLINK("http://x","y").txt', '\'=HYPERLINK("http://x","y").txt'), ("+1", "'+1"), ("-x", "'-x"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("plain.txt", "plain.txt"), (-5, -5), (1.5, 1.5)])
def test_csv_cell_never_starts_a_formula(value: object, expected: object) -> None:
    assert csv_cell(value) == expected


def test_an_audit_report_shows_hostile_names_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix labels and mixture names went raw into audit.md (``<script>``, ``<img onerror>``),
    and a file named ``=HYPERLINK(...).txt`` became a documents.csv cell starting with ``=``."""
    names = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]
    (tmp_path / "labels.txt").write_text("\n".join(names[i % 2] for i in range(6)) + "\n")
    (tmp_path / "mix.json").write_text(json.dumps({"alpha": {names[0]: 0.5, names[1]: 0.5}}))
    texts = []
    for i in range(6):
        name = f"=HYPERLINK(\"e\",\"{i}\").txt" if i == 0 else f"t{i}.txt"
        (tmp_path / name).write_text("word " * (3 + 4 * i))
        texts.append(name)
    monkeypatch.chdir(tmp_path)  # the names as given: the first starts with '='
    code = main(["audit", "--text", *texts, "--capacity", "16", "--min-buffer", "2", "--labels",
                 str(tmp_path / "labels.txt"), "--mixture", str(tmp_path / "mix.json"), "--no-plots",
                 "--documents", "documents.csv", "--out", str(tmp_path / "rep")])
    assert code in (0, 1)
    md = (tmp_path / "rep" / "audit.md").read_text()
    assert "<script>" not in md and "<img" not in md and "&lt;script>" in md
    rows = list(csv.reader(io.StringIO((tmp_path / "rep" / "documents.csv").read_text())))
    cells = [c for row in rows[1:] for c in row]
    assert not any(c.startswith(("=", "+", "@")) for c in cells)
    assert any(c.startswith("'=HYPERLINK(") for c in cells)
