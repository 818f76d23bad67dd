"""The self-contained HTML page of a report: the answer first, then the details, readable by a person.

:func:`render_page` lays out a :class:`~packing_theory.reporting.model.Report`'s
sections (the same blocks the Markdown is rendered from):

* the **headline** and the **answer card** (the section marked ``answer``) on
  the first screen: stacked bars of what happened to the tokens, drawn as
  inline SVG with every number written beside its part, and the tables the
  report puts there;
* every other section in order, details folded (``collapsed``) into
  ``<details>`` a reader opens on demand;
* tables with labels in words (each column's glossary meaning on hover),
  numbers right-aligned with thousands separators, sortable by a click and
  filtered by typed text when long — and readable without JavaScript;
* the PNG plots embedded where the sections place them;
* at phone width every table becomes one line per cell, labelled by its column;
* the run's provenance (schema, run id, config hash, timings) and the
  glossary of the terms the page uses.

The page loads nothing (no network, no font, no CDN: a Content-Security-Policy
forbids it) and fits its width: text cells wrap, numbers never leave the
screen at 1280 px, and at phone width every table becomes one line per cell.
Run metadata (run id, timings) sits in elements of class ``run-meta``
(:func:`strip_run_metadata`), so two runs of one configuration give the same
page otherwise.

Complexity: O(size of the sections + size of the plots).

>>> from packing_theory.reporting.model import Bars, Section, Text
>>> class R:
...     kind, title = "demo", "Demo"
...     def headline(self): return "3 rows."
...     def to_dict(self, run=None): return {"schema": "demo", "version": 1}
...     def sections(self): return [Section("answer", "Answer", (Bars("tokens", "tokens", ("trained", "lost"),
...                                     (("discard", (3, 1)),)),), answer=True)]
>>> page = render_page(R())
>>> "data-answer" in page and "<svg" in page and "trained: <b>3</b> (75.0%)" in page
True
>>> "http" not in page.split("<body")[1]
True
"""

from __future__ import annotations

import base64
import html
import re
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from .glossary import Term, term
from .manifest import PNG_RUN_KEY
from .model import (
    Amount,
    Bars,
    Block,
    Column,
    Plot,
    Report,
    Section,
    Table,
    Text,
    cell_sort_value,
    cell_text,
    percent,
    walk_blocks,
)

__all__ = ["FILTER_ROWS", "PALETTE", "png_without_run", "render_page", "strip_run_metadata"]

FILTER_ROWS = 10
"""Tables with more rows than this get a filter box."""

PALETTE: tuple[str, ...] = ("#0072b2", "#d55e00", "#e69f00", "#cc79a7", "#f0e442", "#999999", "#56b4e9",
                            "#009e73", "#bbbbbb")
"""The bars' colours, part by part (Okabe and Ito's palette, distinguishable with colour-blindness)."""

_PROVENANCE = ("schema", "version", "generator", "run", "seconds")

_CSS = """
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;
padding:0 1em 3em;color:#1b1b1b;background:#fff}
h1{font-size:1.5em;margin:.7em 0 .3em}h2{font-size:1.2em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:1em 0 .3em}
p.headline{font-size:1.1em;background:#eef5fb;border-left:4px solid #0072b2;padding:.5em .8em;margin:.3em 0}
nav{font-size:13px;margin:.4em 0;display:flex;flex-wrap:wrap;gap:.15em .9em}
section.answer{border:1px solid #cfd8e3;border-radius:6px;padding:.2em .9em .6em;margin:.6em 0}
section.answer h2{border:0;margin-top:.4em}
table{border-collapse:collapse;margin:.4em 0 .8em;font-size:13px;max-width:100%}
caption{text-align:left;font-weight:600;padding:.2em 0}
th,td{border:1px solid #d4d4d4;padding:.2em .45em;vertical-align:top;text-align:left}
th{background:#f3f3f3;cursor:pointer;user-select:none;font-weight:600}
th[title]{text-decoration:underline dotted #888}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td{overflow-wrap:anywhere}td:first-child{min-width:min(10em,30vw)}td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.num:has(span.q){white-space:normal}span.q{white-space:nowrap}
tbody tr:nth-child(even){background:#fafafa}
p.note{font-size:13px;color:#444;margin:.2em 0 .8em}
div.bar{margin:.5em 0 .9em}div.bar-label{font-weight:600}
div.bar svg{display:block;width:100%;height:22px;margin:.2em 0}
ul.legend{list-style:none;padding:0;margin:.1em 0;font-size:13px;display:flex;flex-wrap:wrap;gap:.15em 1.2em}
ul.legend li{white-space:nowrap}span.sw{display:inline-block;width:.8em;height:.8em;margin-right:.3em;
vertical-align:-.05em;border:1px solid #555}
figure{margin:.6em 0 1.2em}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:13px;color:#444}p.empty-plot{font-style:italic;color:#5a5a5a;border:1px dashed #bbb;
padding:.6em}input.filter{margin:.4em 0 0;padding:.2em .4em;width:22em;max-width:100%}
details{margin:.3em 0 .8em}summary{cursor:pointer;font-weight:600}dt{font-weight:600}
dd{margin:0 0 .5em 1.5em}
@media (max-width:1040px){
 table,tbody,tr,td{display:block;border:0}thead{display:none}caption{display:block}
 tr{border-top:1px solid #d4d4d4;padding:.2em 0}
 td{padding:.05em 0;text-align:left}td.num{text-align:left;white-space:normal}
 td::before{content:attr(data-label) ": ";font-weight:600}
 ul.legend li{white-space:normal}
}
"""

_SCRIPT = """
(function(){
function key(td){var v=td.getAttribute('data-v');if(v!==null&&v!==''&&!isNaN(+v))return[0,+v];
return[1,td.textContent.trim().toLowerCase()];}
function cmp(a,b){if(a[0]!==b[0])return a[0]-b[0];return a[1]<b[1]?-1:a[1]>b[1]?1:0;}
document.querySelectorAll('table.sortable').forEach(function(t){
 var ths=t.tHead.rows[0].cells;
 Array.prototype.forEach.call(ths,function(th,i){
  th.setAttribute('tabindex','0');
  function sort(){var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
   Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
   th.setAttribute('aria-sort',dir===1?'ascending':'descending');
   var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
   rows.sort(function(a,b){return dir*cmp(key(a.cells[i]),key(b.cells[i]));});
   rows.forEach(function(r){body.appendChild(r);});}
  th.addEventListener('click',sort);
  th.addEventListener('keydown',function(e){if(e.key==='Enter'){sort();}});});});
document.querySelectorAll('input.filter').forEach(function(inp){
 var t=document.getElementById(inp.getAttribute('data-table'));inp.hidden=false;
 inp.addEventListener('input',function(){var q=inp.value.toLowerCase();
  Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
   r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});
})();
"""


def png_without_run(data: bytes) -> bytes:
    """``data`` with the ``tEXt`` chunk holding the run id (:data:`PNG_RUN_KEY`) removed.

    Raises:
        InputError: ``data`` is not a PNG.

    >>> png_without_run(b"GIF89a")
    Traceback (most recent call last):
    packing_theory.InputError: not a PNG file (it does not start with the PNG signature)
    """
    sig = b"\x89PNG\r\n\x1a\n"
    if not data.startswith(sig):
        raise InputError("not a PNG file (it does not start with the PNG signature)")
    out, pos, key = [sig], len(sig), PNG_RUN_KEY.encode("latin-1") + b"\x00"
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        end = pos + 12 + length
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if not (kind == b"tEXt" and body.startswith(key)):
            out.append(data[pos:end])
        pos = end
    return b"".join(out)


def tiny_png() -> bytes:
    """A valid 1x1 PNG (for doctests and tests of the page without matplotlib)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


class _Builder:
    """Accumulates the page body, numbers its tables and collects the glossary terms it uses."""

    def __init__(self, plots: Mapping[str, bytes | str]) -> None:
        self.parts: list[str] = []
        self.tables = 0
        self.terms: dict[str, Term] = {}
        self.plots = plots

    def add(self, text: str) -> None:
        self.parts.append(text)

    def _th(self, c: Column) -> str:
        if c.term:
            t = term(c.term)
            self.terms[t.term] = t
            return f'<th scope="col" title="{_e(t.meaning)}">{_e(c.label)}</th>'
        return f'<th scope="col">{_e(c.label)}</th>'

    def table(self, t: Table) -> None:
        self.tables += 1
        tid = f"t-{_anchor(t.key)}" if t.key else f"t{self.tables}"
        if len(t.rows) > FILTER_ROWS:
            what = _e(t.caption or "rows")
            self.add(f'<input class="filter" type="search" data-table="{tid}" '
                     f'placeholder="filter these rows" aria-label="filter {what}" hidden>')
        head = "".join(self._th(c) for c in t.columns)
        body = []
        for row in t.rows:
            cells = []
            for c, v in zip(t.columns, row, strict=True):
                text, label = _e(cell_text(c, v)), _e(c.label)
                if isinstance(v, Amount) and v.share is not None:
                    # the count and its share each stay whole; a narrow column puts the share under its count
                    count, _, share = text.partition(" ")
                    text = f'<span class="q">{count}</span> <span class="q">{share}</span>'
                if c.numeric:
                    sort = cell_sort_value(v)
                    data = f' data-v="{sort!r}"' if sort is not None else ""
                    cells.append(f'<td class="num" data-label="{label}"{data}>{text}</td>')
                else:
                    cells.append(f'<td data-label="{label}">{text}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        caption = f"<caption>{_e(t.caption)}</caption>" if t.caption else ""
        self.add(f'<table id="{tid}" class="sortable">{caption}<thead><tr>{head}</tr></thead>'
                 f"<tbody>{''.join(body)}</tbody></table>")
        for extra in (t.note, t.more):
            if extra:
                self.add(f'<p class="note">{_e(extra)}</p>')

    def bars(self, b: Bars) -> None:
        if b.caption:
            self.add(f"<h3>{_e(b.caption)}</h3>")
        terms = b.terms or (None,) * len(b.parts)
        for name in terms:
            if name:
                self.terms[name] = term(name)
        for label, values in b.bars:
            total = sum(values)
            rects, x = [], 0.0
            for i, v in enumerate(values):
                if v <= 0 or total <= 0:
                    continue
                w = 1000.0 * v / total
                rects.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="20" '
                             f'fill="{PALETTE[i % len(PALETTE)]}"><title>{_e(b.parts[i])}: {v:,} '
                             f"{_e(b.unit)} ({percent(v / total)})</title></rect>")
                x += w
            items = []
            for i, v in enumerate(values):
                if v <= 0:
                    continue
                name = terms[i]
                hover = f' title="{_e(term(name).meaning)}"' if name else ""
                items.append(f'<li{hover}><span class="sw" style="background:{PALETTE[i % len(PALETTE)]}">'
                             f"</span>{_e(b.parts[i])}: <b>{v:,}</b> ({percent(v / total)})</li>")
            aria = "; ".join(f"{p}: {v:,} {b.unit}" for p, v in zip(b.parts, values, strict=True) if v > 0)
            self.add(f'<div class="bar"><div class="bar-label">{_e(label)} — {total:,} {_e(b.unit)}</div>'
                     '<svg viewBox="0 0 1000 20" preserveAspectRatio="none" role="img" '
                     f'aria-label="{_e(aria)}">'
                     f'{"".join(rects)}</svg><ul class="legend">{"".join(items)}</ul></div>')
        if b.note:
            self.add(f'<p class="note">{_e(b.note)}</p>')

    def plot(self, p: Plot) -> None:
        data = self.plots.get(p.name)
        if data is None:
            return
        if isinstance(data, str):
            self.add(f'<figure class="plot" data-name="{_e(p.name)}"><p class="empty-plot">{_e(data)}</p>'
                     f"<figcaption>{_e(p.name)}: not drawn</figcaption></figure>")
            return
        b64 = base64.b64encode(png_without_run(data)).decode("ascii")
        alt = _e(p.caption or p.name.rsplit(".", 1)[0].replace("_", " "))
        self.add(f'<figure class="plot" data-name="{_e(p.name)}"><img alt="{alt}" '
                 f'src="data:image/png;base64,{b64}"><figcaption>{_e(p.caption or p.name)}</figcaption>'
                 "</figure>")

    def blocks(self, blocks: Sequence[Block], depth: int) -> None:
        for b in blocks:
            if isinstance(b, Section):
                self.section(b, depth)
            elif isinstance(b, Text):
                self.add(f"<p>{_e(b.text)}</p>")
            elif isinstance(b, Table):
                self.table(b)
            elif isinstance(b, Bars):
                self.bars(b)
            elif isinstance(b, Plot):
                self.plot(b)

    def section(self, s: Section, depth: int) -> None:
        h = f"h{min(depth, 6)}"
        sid = "answer" if s.answer else f"s-{_anchor(s.key)}"
        extra = ' class="answer" data-answer' if s.answer else ""
        if s.collapsed:
            self.add(f'<details id="{sid}"><summary>{_e(s.title)}</summary>')
            self.blocks(s.blocks, depth + 1)
            self.add("</details>")
            return
        self.add(f'<section id="{sid}"{extra}><{h}>{_e(s.title)}</{h}>')
        self.blocks(s.blocks, depth + 1)
        self.add("</section>")


def _provenance(doc: Mapping[str, Any]) -> str:
    rows = []

    def flat(prefix: str, v: Any) -> None:
        if isinstance(v, Mapping):
            for k, x in v.items():
                flat(f"{prefix}.{k}" if prefix else str(k), x)
        else:
            meta = prefix == "run" or prefix.startswith("run.") or "seconds" in prefix
            text = _e("—" if v is None else (f"{v:,.3f}" if isinstance(v, float) else v))
            if meta:
                text = f'<span class="run-meta">{text}</span>'
            rows.append(f'<tr><td data-label="name">{_e(prefix)}</td><td data-label="value">{text}</td></tr>')

    for key in _PROVENANCE:
        if doc.get(key) is not None:
            flat(key, doc[key])
    return ('<table class="provenance"><thead><tr><th scope="col">name</th><th scope="col">value</th></tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def render_page(report: Report, *, run: Mapping[str, str] | None = None,
                plots: Mapping[str, bytes | str] | None = None, docs_url: str | None = None) -> str:
    """The page of ``report`` (see the module doc); deterministic in its inputs.

    ``plots`` maps a plot's file name to its PNG bytes, or to the sentence
    saying why it was not drawn; a :class:`~packing_theory.reporting.model.Plot`
    block whose name is absent is left out. ``docs_url``: the base URL of the
    built documentation (the glossary links its pages; default: the pages'
    source files are named).
    """
    doc = report.to_dict(run)
    sections = list(report.sections())
    b = _Builder(plots or {})
    nav = [f'<a href="#{"answer" if s.answer else "s-" + _anchor(s.key)}">{_e(s.title)}</a>'
           for s in sections]
    nav += ['<a href="#s-provenance">Parameters and provenance</a>', '<a href="#s-glossary">Glossary</a>']
    for s in sections:
        b.section(s, 2)
    for blk in walk_blocks(sections):  # terms named by columns inside folded sections too
        if isinstance(blk, Table):
            for c in blk.columns:
                if c.term:
                    b.terms[c.term] = term(c.term)
    glossary = []
    for t in sorted(b.terms.values(), key=lambda t: t.term.lower()):
        where = f"{t.page}.html#{t.anchor}"
        ref = (f'<a href="{_e(docs_url.rstrip("/") + "/" + where)}">{_e(where)}</a>' if docs_url
               else f"<code>docs/{_e(t.page)}.rst</code>, section “{_e(t.section)}”")
        glossary.append(f'<dt id="g-{_anchor(t.term)}">{_e(t.term)}</dt><dd>{_e(t.meaning)} (see {ref})</dd>')
    body = "\n".join(b.parts)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
            f"<title>{_e(report.title)}</title><style>{_CSS}</style></head>\n<body>"
            f"<h1>{_e(report.title)}</h1><p class=\"headline\" id=\"headline\">{_e(report.headline())}</p>\n"
            f"<nav>{''.join(nav)}</nav>\n{body}\n"
            '<details id="s-provenance"><summary>Parameters and provenance</summary>'
            f"{_provenance(doc)}</details>\n"
            f'<details id="s-glossary" open><summary>Glossary</summary><dl>{"".join(glossary)}</dl></details>'
            f"\n<script>{_SCRIPT}</script></body></html>\n")


_RUN_META = re.compile(r'<span class="run-meta">.*?</span>', re.S)


def strip_run_metadata(page: str) -> str:
    """``page`` with the run metadata (run id, timings) blanked: equal for two runs of one config.

    >>> strip_run_metadata('a<span class="run-meta">1.5</span>b')
    'a<span class="run-meta"></span>b'
    """
    return _RUN_META.sub('<span class="run-meta"></span>', page)
