"""The one report model rendered twice: the Markdown and the page say the same, escape user text, show
numbers in words a person reads, and load nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from packing_theory.errors import InputError, InputTypeError
from packing_theory.reporting import (
    Amount,
    Attachment,
    Bars,
    Column,
    Plot,
    PlotFile,
    Report,
    Section,
    Table,
    Text,
    stage_report,
    write_report,
)
from packing_theory.reporting.markdown import md_escape, render_markdown
from packing_theory.reporting.page import png_without_run, render_page, strip_run_metadata, tiny_png
from packing_theory.reporting.publish import report_config, report_file_names
from packing_theory.reporting.writer import ReportWriter

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>|**bold**|[link](http://x)"


class Demo:
    """A small report with every kind of block (and a hostile name in a cell)."""

    kind = "demo"
    title = "Demo report"

    def __init__(self, name: str = "web") -> None:
        self.name = name

    def headline(self) -> str:
        return f"3 of 4 tokens trained (75.0%); source {self.name}"

    def to_dict(self, run: Any = None) -> dict[str, Any]:
        return {"schema": "demo", "version": 1, "run": run, "settings": {"k": 1}, "seconds": {"total": 0.5}}

    def sections(self) -> list[Section]:
        table = Table(
            "Per source",
            (
                Column("source"),
                Column("tokens", "tokens", "trained"),
                Column("share", "share"),
                Column("Δ", "delta"),
            ),
            ((self.name, 1_234_567, 0.25, -0.00123), ("code", Amount(30, 0.5), None, 0.5)),
            key="t",
        )
        bars = Bars(
            "Tokens",
            "tokens",
            ("trained", "never started"),
            (("discard", (3, 1)),),
            terms=("trained", "never started"),
        )
        return [
            Section("answer", "The answer", (Text("Plain <words>."), bars, table), answer=True),
            Section("more", "More", (Text("folded"), Plot("p.png", "a plot")), collapsed=True),
        ]

    def plots(self) -> list[PlotFile]:
        return [PlotFile("p.png", draw=lambda path, meta: Path(path).write_bytes(tiny_png()))]

    def attachments(self) -> list[Attachment]:
        return [Attachment("rows.csv", lambda path, run: Path(path).write_text(f"# run {run}\na,b\n"))]


def test_a_demo_is_a_report() -> None:
    assert isinstance(Demo(), Report)
    assert report_file_names(Demo()) == ("demo.html", "demo.json", "demo.md", "p.png", "rows.csv")


def test_numbers_are_shown_in_words_with_their_units() -> None:
    md = render_markdown(Demo())
    assert "| web | 1,234,567 | 25.0% | -0.00123 |" in md
    assert "| code | 30 (50.0%) | — | +0.50000 |" in md
    page = render_page(Demo())
    assert 'data-v="1234567.0">1,234,567</td>' in page and ">25.0%</td>" in page
    assert "trained: <b>3</b> (75.0%)" in page and "never started: <b>1</b> (25.0%)" in page


def test_user_text_is_escaped_in_both_documents() -> None:
    md = render_markdown(Demo(HOSTILE))
    assert "<script" not in md and "<img" not in md and "[link](" not in md
    table_rows = [r for r in md.splitlines() if r.startswith("| ")]
    assert len({r.replace("\\|", "").count("|") for r in table_rows}) == 1  # no cell broke the table
    page = render_page(Demo(HOSTILE))
    assert "<script>alert" not in page and "<img src=x" not in page and "&lt;script&gt;" in page
    assert md_escape("a\nb") == "a b"


def test_the_page_loads_nothing_and_is_readable_without_script() -> None:
    page = render_page(Demo(), plots={"p.png": tiny_png()})
    body = page.split("<body", 1)[1]
    assert "http" not in body.split("<script>")[0].replace('content="default-src', "")
    assert "default-src 'none'" in page
    no_script = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert "1,234,567" in no_script and 'id="answer"' in no_script and "data-answer" in no_script
    assert 'data-name="p.png"><img' in page  # the plot, embedded


def test_glossary_terms_are_on_hover_and_listed() -> None:
    page = render_page(Demo())
    assert re.search(
        r'<th scope="col" title="tokens in the rows the trainer receives[^"]*">tokens</th>', page
    )
    assert '<dt id="g-never-started">never started</dt>' in page and '<dt id="g-trained">trained</dt>' in page


def test_two_runs_of_one_report_differ_only_in_run_metadata() -> None:
    a = render_page(Demo(), run={"id": "RUN-1", "config_hash": "sha256:a", "tool": "t"})
    b = render_page(Demo(), run={"id": "RUN-2", "config_hash": "sha256:a", "tool": "t"})
    assert a != b and strip_run_metadata(a) == strip_run_metadata(b)


def test_write_report_writes_every_file_as_one_run(tmp_path: Path) -> None:
    files = write_report(Demo(), tmp_path / "rep", plots=True)
    names = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert names == [
        ".packing-theory-manifest.json",
        "demo.html",
        "demo.json",
        "demo.md",
        "p.png",
        "rows.csv",
    ]
    doc = json.loads(files.json.read_text())
    run_id = doc["run"]["id"]
    for name in ("demo.md", "demo.html", "rows.csv"):
        assert run_id in (tmp_path / "rep" / name).read_text(), name
    assert (
        doc["run"]["config_hash"]
        == files.json.parent.joinpath(".packing-theory-manifest.json")
        .read_text()
        .split('"config_hash": "')[1]
        .split('"')[0]
    )
    assert "![a plot](p.png)" in files.markdown.read_text()


def test_the_config_hash_comes_from_the_report_wherever_it_is_written(tmp_path: Path) -> None:
    a = write_report(Demo(), tmp_path / "a")
    with ReportWriter(
        tmp_path / "b", names=report_file_names(Demo()), config={"argv": ["x"]}, tool="packing-theory demo"
    ) as w:
        stage_report(w, Demo(), plots=False)
        w.commit()
    ja = json.loads(a.json.read_text())["run"]
    jb = json.loads((tmp_path / "b" / "demo.json").read_text())["run"]
    assert ja["config_hash"] == jb["config_hash"] and ja["id"] != jb["id"]
    assert report_config(Demo()) == {"kind": "demo", "settings": {"k": 1}, "corpus": None, "horizon": None}


def test_a_plot_not_drawn_is_said_in_both_documents(tmp_path: Path) -> None:
    class NoPlot(Demo):
        def plots(self) -> list[PlotFile]:
            return [PlotFile("p.png", note="nothing to draw: no row was emitted")]

    files = write_report(NoPlot(), tmp_path / "rep", plots=True)
    assert "Not drawn: p.png: nothing to draw: no row was emitted" in files.markdown.read_text()
    assert files.html is not None and "nothing to draw: no row was emitted" in files.html.read_text()
    assert not (tmp_path / "rep" / "p.png").exists()


def test_bad_blocks_are_refused_naming_what_is_wrong() -> None:
    with pytest.raises(InputError, match="row 0 has 1 cells for 2 columns"):
        Table("t", (Column("a"), Column("b")), (("x",),))
    with pytest.raises(InputError, match="negative value"):
        Bars("b", "tokens", ("x",), (("p", (-1,)),))
    with pytest.raises(InputError, match="has 1 values for 2 parts"):
        Bars("b", "tokens", ("x", "y"), (("p", (1,)),))
    with pytest.raises(InputError, match="Column kind must be one of"):
        Column("a", "money")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="needs exactly one of draw and note"):
        PlotFile("p.png")
    with pytest.raises(InputError, match="glossary term must be one of"):
        render_page(
            type(
                "R",
                (Demo,),
                {
                    "sections": lambda self: [
                        Section("a", "A", (Table("t", (Column("a", term="nonsense"),), (("x",),)),))
                    ]
                },
            )()
        )


def test_stage_report_refuses_what_is_not_a_report(tmp_path: Path) -> None:
    with (
        pytest.raises(InputTypeError, match="report must implement"),
        ReportWriter(tmp_path / "rep", names=(), config={}) as w,
    ):
        stage_report(w, object())  # type: ignore[arg-type]


def _png_with_run(run_id: str) -> bytes:
    import struct
    import zlib

    from packing_theory.reporting import PNG_RUN_KEY

    base = tiny_png()
    body = PNG_RUN_KEY.encode("latin-1") + b"\x00" + run_id.encode()
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    return base[:-12] + chunk + base[-12:]  # before IEND


def test_png_without_run_drops_only_the_run_chunk() -> None:
    data = _png_with_run("RUN-9")
    assert b"RUN-9" in data
    out = png_without_run(data)
    assert b"RUN-9" not in out and out == tiny_png()
    with pytest.raises(InputError, match="not a PNG"):
        png_without_run(b"not a png")
    page = render_page(Demo(), plots={"p.png": data})
    assert "RUN-9" not in page  # the page names the run once, in its provenance


def test_docs_url_makes_glossary_links() -> None:
    page = render_page(Demo(), docs_url="https://example.invalid/docs/")
    assert 'href="https://example.invalid/docs/never_trained.html#never-trained"' in page
    assert "docs/never_trained.rst" in render_page(Demo())


def test_glossary_terms_point_at_real_doc_sections() -> None:
    from packing_theory.reporting.glossary import GLOSSARY, glossary_for

    docs = Path(__file__).resolve().parents[2] / "docs"
    for t in GLOSSARY:
        text = (docs / f"{t.page}.rst").read_text(encoding="utf-8")
        assert f"\n{t.section}\n" in text, (t.term, t.page, t.section)
    assert [t.term for t in glossary_for({})] == []
