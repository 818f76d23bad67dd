"""The self-contained HTML page: generic layout of any report document, plots, determinism, errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from packing_theory.errors import InputError, InputTypeError
from packing_theory.reporting import ReportWriter
from packing_theory.reporting.glossary import GLOSSARY, glossary_for
from packing_theory.reporting.html import (
    FILTER_ROWS,
    Figure,
    _tiny_png,
    png_without_run,
    render_html,
    strip_run_metadata,
    write_html,
)
from packing_theory.reporting.manifest import PNG_RUN_KEY

DOC = {
    "schema": "packing-theory/demo", "version": 1, "run": {"id": "RUN-1", "config_hash": "sha256:x"},
    "corpus": "demo corpus", "documents": 12,
    "policies": [{"policy": "discard", "never_started": 3, "mass": {"emitted_tokens": 10}},
                 {"policy": "continue", "never_started": 0, "mass": {"emitted_tokens": 12}}],
    "seconds": {"replay": 1.25},
}


def _png_with_run(run_id: str) -> bytes:
    import struct
    import zlib

    base = _tiny_png()
    body = PNG_RUN_KEY.encode("latin-1") + b"\x00" + run_id.encode()
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    return base[:-12] + chunk + base[-12:]  # before IEND


def test_page_is_self_contained_with_headline_tables_and_glossary() -> None:
    page = render_html(DOC, title="Demo", headline="fallback headline.")
    assert '<p class="headline" id="headline">fallback headline.</p>' in page
    assert page.count("<table") >= 3  # overview, policies, provenance
    assert "never_started" in page and "mass.emitted_tokens" in page  # nested objects are dotted columns
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing loaded from elsewhere
    assert "default-src 'none'" in page
    assert 'id="g-never-started"' in page  # the glossary names the terms the document uses


def test_document_headline_wins_over_the_fallback() -> None:
    page = render_html({**DOC, "headline": "12 documents, 3 never trained."}, title="T", headline="other")
    assert "12 documents, 3 never trained." in page and ">other<" not in page


def test_long_record_lists_get_a_filter_and_short_wide_ones_are_transposed() -> None:
    rows = [{"name": f"doc{i}", "length": i} for i in range(FILTER_ROWS + 1)]
    page = render_html({"documents": rows}, title="T", headline="h")
    assert 'class="filter"' in page and "filterable" in page
    wide = [{"policy": p, **{f"k{j}": j for j in range(20)}} for p in ("a", "b")]
    page = render_html({"policies": wide}, title="T", headline="h")
    assert "<th scope=\"col\" tabindex=\"0\">field</th>" in page  # one column per record
    assert re.search(r"<thead><tr>(<th[^>]*>[^<]*</th>){3}</tr></thead>", page)  # field, a, b


def test_numbers_carry_their_value_for_sorting() -> None:
    page = render_html(DOC, title="T", headline="h")
    assert '<td class="num" data-v="3">3</td>' in page


def test_figures_embed_as_data_uris_or_say_why_not() -> None:
    figs = [Figure("a.png", png=_tiny_png(), section="policies"), Figure("b.png", note="nothing to plot.")]
    page = render_html(DOC, title="T", headline="h", figures=figs)
    assert page.count('src="data:image/png;base64,') == 1
    assert '<p class="empty-plot">nothing to plot.</p>' in page
    assert page.index('data-name="a.png"') < page.index('id="s-provenance"')
    with pytest.raises(InputError, match="exactly one of png and note"):
        Figure("c.png")


def test_run_metadata_is_the_only_difference_between_two_runs() -> None:
    a = render_html(DOC, title="T", headline="h", figures=[Figure("a.png", png=_png_with_run("RUN-1"))])
    other = {**DOC, "run": {"id": "RUN-2", "config_hash": "sha256:x"}, "seconds": {"replay": 9.5}}
    b = render_html(other, title="T", headline="h", figures=[Figure("a.png", png=_png_with_run("RUN-2"))])
    assert a != b
    assert strip_run_metadata(a) == strip_run_metadata(b)


def test_png_without_run_drops_only_the_run_chunk() -> None:
    data = _png_with_run("RUN-9")
    assert b"RUN-9" in data
    out = png_without_run(data)
    assert b"RUN-9" not in out and out == _tiny_png()
    with pytest.raises(InputError, match="not a PNG"):
        png_without_run(b"not a png")


def test_bad_document_is_refused() -> None:
    with pytest.raises(InputTypeError, match="doc must be a mapping"):
        render_html([1, 2], title="T", headline="h")  # type: ignore[arg-type]


def test_docs_url_makes_glossary_links() -> None:
    page = render_html(DOC, title="T", headline="h", docs_url="https://example.invalid/docs/")
    assert 'href="https://example.invalid/docs/audit.html#what-each-quantity-means"' in page
    page = render_html(DOC, title="T", headline="h", docs_url="")
    assert "docs/audit.rst" in page


def test_glossary_terms_point_at_real_doc_sections() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    for term in GLOSSARY:
        text = (docs / f"{term.page}.rst").read_text(encoding="utf-8")
        assert f"\n{term.section}\n" in text, (term.term, term.page, term.section)
    assert [t.term for t in glossary_for({})] == []


def test_write_html_reads_staged_plots_through_the_writer(tmp_path: Path) -> None:
    out = f"{tmp_path}/rep"
    with ReportWriter(out, names=["r.html", "p.png"], config={}) as w:
        w.write_bytes("p.png", _png_with_run(w.run_id))
        write_html(w, "r.html", {"x": [{"a": 1}]}, title="T", headline="h",
                   plots=[("p.png", None), ("q.png", "no data.")])
        w.commit()
    page = Path(out, "r.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "no data." in page


def test_an_object_of_named_objects_is_one_record_each() -> None:
    doc = {"models": {"a": {"bpb": 1.5, "order": 3}, "b": {"bpb": 1.25, "order": 4}}}
    page = render_html(doc, title="T", headline="h")
    assert re.search(r"<thead><tr><th[^>]*>name</th><th[^>]*>bpb</th><th[^>]*>order</th></tr></thead>", page)
    assert '<td class="num" data-v="1.25">1.25</td>' in page
