"""One self-contained HTML page per report, built from the report's JSON document and its plots.

:func:`render_html` knows no report kind: it lays out any JSON document of
this library (``audit.json``, ``compare.json``, ``evaluate.json``,
``census.json``, ``contamination.json``) as

* the **headline** (the document's ``"headline"`` string when it has one,
  else the caller's fallback sentence, usually the command's summary),
* one section per top-level entry: scalars and nested objects as a
  two-column table, every **list of records** (a list of JSON objects) as a
  table that sorts when a header is clicked and, when it has more than
  :data:`FILTER_ROWS` rows, filters on typed text; a short list of wide
  records is shown transposed (one column per record),
* the **plots** embedded as ``data:`` URIs beside the section they
  illustrate (or the sentence saying why a plot has nothing to show),
* the run's **parameters and provenance** (schema, generator, run id, config
  hash, timings) and a **glossary** of the terms the document uses, each
  with the documentation page that defines it.

The page loads nothing: no network, no CDN, no font; a small inline script
does the sorting and filtering. The bytes depend only on the document and
the plots, apart from the run metadata (run id, timings), which sits in
elements of class ``run-meta`` so that two runs can be compared
(:func:`strip_run_metadata`). The run-id text chunk of each embedded PNG is
removed for the same reason (the page names the run once).

Complexity: O(size of the document + size of the plots).

>>> page = render_html({"schema": "demo", "policies": [{"policy": "a", "rows": 3}]},
...                    title="Demo", headline="3 rows.")
>>> "<h1>Demo</h1>" in page and 'class="sortable' in page and "http" not in page.split("<body")[1]
True
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, InputTypeError
from .glossary import glossary_for
from .manifest import PNG_RUN_KEY

__all__ = [
    "FILTER_ROWS",
    "PROVENANCE_KEYS",
    "Figure",
    "png_without_run",
    "render_html",
    "strip_run_metadata",
    "write_html",
]

FILTER_ROWS = 10
"""Tables with more rows than this get a filter box."""

PROVENANCE_KEYS: tuple[str, ...] = ("schema", "version", "generator", "run", "seconds")
"""Top-level entries shown under *Parameters and provenance* instead of as sections."""

_TRANSPOSE_RECORDS = 6  # a list of at most this many records ...
_TRANSPOSE_COLUMNS = 12  # ... with more columns than this is shown one column per record
_INLINE_LIST = 12  # lists of scalars longer than this are summarised
_PROSE = 60  # a column holding a longer string is printed as sentences below its table


@dataclass(frozen=True, slots=True)
class Figure:
    """A plot of a report: its PNG bytes, or the sentence saying why there is nothing to draw.

    ``section`` names the top-level JSON entry the plot illustrates (it is shown
    there); ``None`` puts it under *Plots*.
    """

    name: str
    png: bytes | None = None
    note: str | None = None
    section: str | None = None

    def __post_init__(self) -> None:
        if (self.png is None) == (self.note is None):
            raise InputError(f"Figure {self.name!r} needs exactly one of png and note")


# --------------------------------------------------------------------------- PNG text chunks


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


def _tiny_png() -> bytes:
    """A valid 1x1 PNG (for doctests and tests of the page without matplotlib)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


# --------------------------------------------------------------------------- cells


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _is_records(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def _run_meta(key: str) -> bool:
    """Whether the entry ``key`` (dotted) is run metadata: the run entry and timings."""
    return key == "run" or key.startswith("run.") or "seconds" in key


def _fmt(v: Any) -> str:
    """The text of a scalar cell (thousands separators, 4 significant decimals)."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:,.4g}" if abs(v) >= 1 else f"{v:.4g}"
    return str(v)


def _cell(v: Any, *, meta: bool = False) -> str:
    """One ``<td>``: numbers right-aligned with their value in ``data-v`` (for sorting)."""
    if _is_scalar(v):
        text = html.escape(_fmt(v))
        if meta:
            text = f'<span class="run-meta">{text}</span>'
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return f'<td class="num"{"" if meta else f" data-v={chr(34)}{v!r}{chr(34)}"}>{text}</td>'
        return f"<td>{text}</td>"
    if isinstance(v, list) and all(_is_scalar(x) for x in v):
        if len(v) > _INLINE_LIST:
            return f"<td>{len(v):,} values: {html.escape(', '.join(_fmt(x) for x in v[:4]))}, …</td>"
        return f"<td>{html.escape(', '.join(_fmt(x) for x in v))}</td>"
    text = json.dumps(v, ensure_ascii=False, sort_keys=False)
    if len(text) > 160:
        text = text[:157] + "…"
    return f"<td><code>{html.escape(text)}</code></td>"


def _flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects become dotted columns; lists of records are left out (they get their own tables)."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(_flatten(v, key + "."))
        elif _is_records(v):
            continue
        else:
            out[key] = v
    return out


def _label(record: Mapping[str, Any], i: int) -> str:
    """A record's name: its first short string field (``policy``, ``model``, ``label``...)."""
    for v in record.values():
        if isinstance(v, str) and 0 < len(v) <= 40:
            return v
    return f"#{i + 1}"


# --------------------------------------------------------------------------- tables


class _Page:
    """Accumulates the page body and numbers the tables."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.tables = 0

    def add(self, text: str) -> None:
        self.parts.append(text)

    def table(self, header: Sequence[str], rows: Iterable[Sequence[str]], *, caption: str) -> None:
        rows = list(rows)
        self.tables += 1
        tid = f"t{self.tables}"
        filt = len(rows) > FILTER_ROWS
        if filt:
            what = html.escape(caption)
            self.add(f'<input class="filter" type="search" data-table="{tid}" placeholder="filter {what}" '
                     f'aria-label="filter {what}">')
        heads = "".join(f'<th scope="col" tabindex="0">{html.escape(h)}</th>' for h in header)
        body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
        self.add(f'<table id="{tid}" class="sortable{" filterable" if filt else ""}" '
                 f'data-caption="{html.escape(caption)}"><caption>{html.escape(caption)}</caption>'
                 f"<thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>")

    def records(self, records: Sequence[Mapping[str, Any]], caption: str) -> None:
        flat = [_flatten(r) for r in records]
        columns: list[str] = []
        for r in flat:
            columns += [k for k in r if k not in columns]
        prose = [c for c in columns if any(isinstance(r.get(c), str) and len(r[c]) > _PROSE for r in flat)]
        columns = [c for c in columns if c not in prose]
        if len(records) <= _TRANSPOSE_RECORDS and len(columns) > _TRANSPOSE_COLUMNS:
            names = [_label(r, i) for i, r in enumerate(records)]
            self.table(["field", *names],
                       ([f"<td>{html.escape(c)}</td>", *(_cell(r.get(c), meta=_run_meta(c)) for r in flat)]
                        for c in columns), caption=caption)
        else:
            self.table(columns, ([_cell(r.get(c), meta=_run_meta(c)) for c in columns] for r in flat),
                       caption=caption)
        for c in prose:  # sentences read better below the table than in a tall cell
            self.add(f'<dl class="prose"><dt>{html.escape(caption)} › {html.escape(c)}</dt>'
                     + "".join(f"<dd><b>{html.escape(_label(rec, i))}</b>: {html.escape(_fmt(r.get(c)))}</dd>"
                               for i, (rec, r) in enumerate(zip(records, flat, strict=True)))
                     + "</dl>")
        for i, rec in enumerate(records):  # nested lists of records: one table each, folded
            for k, v in rec.items():
                if _is_records(v):
                    self.add(f"<details><summary>{html.escape(caption)} › {html.escape(_label(rec, i))} › "
                             f"{html.escape(k)} ({len(v):,} rows)</summary>")
                    self.records(v, f"{caption} › {_label(rec, i)} › {k}")
                    self.add("</details>")

    def value(self, key: str, value: Any) -> None:
        """Render one top-level entry."""
        if _is_records(value):
            self.records(value, key)
        elif isinstance(value, Mapping) and len(value) >= 2 and all(isinstance(v, Mapping) and v
                                                                    for v in value.values()):
            self.records([{"name": k, **v} for k, v in value.items()], key)  # one record per named object
        elif isinstance(value, Mapping):
            flat = _flatten(value)
            if flat:
                self.table(["name", "value"], ([f"<td>{html.escape(k)}</td>", _cell(v, meta=_run_meta(k))]
                                               for k, v in flat.items()), caption=key)
            for k, v in value.items():
                if _is_records(v):
                    self.records(v, f"{key} › {k}")
                elif isinstance(v, Mapping) and k not in {f.split(".")[0] for f in flat}:
                    self.value(f"{key} › {k}", v)
        elif isinstance(value, list) and all(_is_scalar(x) for x in value):
            self.table(["#", "value"], ([_cell(i), _cell(x)] for i, x in enumerate(value)), caption=key)
        else:
            self.add(f"<p>{_cell(value)[4:-5]}</p>")


# --------------------------------------------------------------------------- the page

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;
padding:0 1.2em 3em;color:#1b1b1b;background:#fff}
h1{font-size:1.6em;margin:.8em 0 .3em}h2{font-size:1.25em;margin:1.6em 0 .4em;border-bottom:1px solid #ddd}
p.headline{font-size:1.15em;background:#eef5fb;border-left:4px solid #0072b2;padding:.6em .9em}
nav a{margin-right:.8em}table{border-collapse:collapse;margin:.4em 0 1em;font-size:13px}
caption{text-align:left;font-weight:600;padding:.2em 0}th,td{border:1px solid #d4d4d4;padding:.2em .5em;
vertical-align:top}th{background:#f3f3f3;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td{white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafafa}
figure{margin:.6em 0 1.2em}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:13px;color:#444}p.empty-plot{font-style:italic;color:#5a5a5a;border:1px dashed #bbb;
padding:.6em}input.filter{margin:.4em 0 0;padding:.2em .4em;width:22em}dt{font-weight:600}
dd{margin:0 0 .5em 1.5em}
dl.prose dd{margin-bottom:.25em;font-size:13px}.scroll{overflow-x:auto}
details{margin:.2em 0 .6em}code{font-size:12px}
"""

_SCRIPT = """
(function(){
function key(td){var v=td.getAttribute('data-v');if(v!==null&&v!==''&&!isNaN(+v))return[0,+v];
return[1,td.textContent.trim().toLowerCase()];}
function cmp(a,b){if(a[0]!==b[0])return a[0]-b[0];return a[1]<b[1]?-1:a[1]>b[1]?1:0;}
document.querySelectorAll('table.sortable').forEach(function(t){
 var ths=t.tHead.rows[0].cells;
 Array.prototype.forEach.call(ths,function(th,i){
  function sort(){var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
   Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
   th.setAttribute('aria-sort',dir===1?'ascending':'descending');
   var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
   rows.sort(function(a,b){return dir*cmp(key(a.cells[i]),key(b.cells[i]));});
   rows.forEach(function(r){body.appendChild(r);});}
  th.addEventListener('click',sort);
  th.addEventListener('keydown',function(e){if(e.key==='Enter'){sort();}});});});
document.querySelectorAll('input.filter').forEach(function(inp){
 var t=document.getElementById(inp.getAttribute('data-table'));
 inp.addEventListener('input',function(){var q=inp.value.toLowerCase();
  Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
   r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});
})();
"""


def _figure(fig: Figure) -> str:
    alt = html.escape(fig.name.rsplit(".", 1)[0].replace("_", " "))
    if fig.png is None:
        return (f'<figure class="plot" data-name="{html.escape(fig.name)}"><p class="empty-plot">'
                f"{html.escape(fig.note or '')}</p><figcaption>{html.escape(fig.name)}: not drawn"
                "</figcaption></figure>")
    data = base64.b64encode(png_without_run(fig.png)).decode("ascii")
    return (f'<figure class="plot" data-name="{html.escape(fig.name)}"><img alt="{alt}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(fig.name)}</figcaption></figure>')


def _provenance(doc: Mapping[str, Any], page: _Page) -> None:
    rows = []
    for key in PROVENANCE_KEYS:
        if key not in doc or doc[key] is None:
            continue
        value = doc[key]
        flat = _flatten(value) if isinstance(value, Mapping) else {"": value}
        for k, v in flat.items():
            name = f"{key}.{k}" if k else key
            rows.append([f"<td>{html.escape(name)}</td>", _cell(v, meta=_run_meta(name))])
    page.table(["name", "value"], rows, caption="provenance")


def render_html(doc: Mapping[str, Any], *, title: str, headline: str, figures: Sequence[Figure] = (),
                docs_url: str | None = None) -> str:
    """The self-contained page of ``doc`` (see the module docstring); deterministic in its inputs.

    Args:
        doc: the report's JSON document (a mapping of JSON values).
        title: the page's title and first heading.
        headline: the sentence shown first when ``doc`` has no ``"headline"`` string.
        figures: the plots, each shown in its ``section`` (or under *Plots*).
        docs_url: the base URL of the built documentation; the glossary links
            ``PAGE.html#ANCHOR`` under it (default: the ``PACKING_THEORY_DOCS_URL``
            environment variable; without either, the glossary names the page).

    Raises:
        InputTypeError: ``doc`` is not a mapping.
    """
    if not isinstance(doc, Mapping):
        raise InputTypeError(f"doc must be a mapping (a report's JSON document), got {type(doc).__name__}")
    head = doc.get("headline")
    shown = head if isinstance(head, str) and head.strip() else headline
    docs_url = docs_url if docs_url is not None else os.environ.get("PACKING_THEORY_DOCS_URL")
    shown_keys = [k for k in doc
                  if k not in PROVENANCE_KEYS and k != "headline" and doc[k] not in (None, [], {})]
    overview = [k for k in shown_keys if _is_scalar(doc[k]) or (
        isinstance(doc[k], list) and all(_is_scalar(x) for x in doc[k]) and len(doc[k]) <= _INLINE_LIST)]
    sections = [k for k in shown_keys if k not in overview]
    placed = {f.section for f in figures if f.section in sections}
    page = _Page()
    nav = (["overview"] if overview else []) + sections + (
        ["plots"] if any(f.section not in placed for f in figures) else [])
    page.add("<nav>" + "".join(f'<a href="#s-{_anchor(s)}">{html.escape(s)}</a>'
                               for s in [*nav, "provenance", "glossary"]) + "</nav>")
    if overview:
        page.add('<section id="s-overview"><h2>overview</h2>')
        page.table(["name", "value"], ([f"<td>{html.escape(k)}</td>", _cell(doc[k])] for k in overview),
                   caption="overview")
        page.add("</section>")
    for key in sections:
        page.add(f'<section id="s-{_anchor(key)}"><h2>{html.escape(key)}</h2><div class="scroll">')
        page.value(key, doc[key])
        page.add("</div>")
        for f in figures:
            if f.section == key:
                page.add(_figure(f))
        page.add("</section>")
    rest = [f for f in figures if f.section not in placed]
    if rest:
        page.add('<section id="s-plots"><h2>plots</h2>' + "".join(_figure(f) for f in rest) + "</section>")
    page.add('<section id="s-provenance"><h2>Parameters and provenance</h2>')
    _provenance(doc, page)
    page.add("</section>")
    page.add('<section id="s-glossary"><h2>Glossary</h2><dl>')
    for term in glossary_for(doc):
        where = f"{term.page}.html#{term.anchor}"
        ref = (f'<a href="{html.escape(docs_url.rstrip("/") + "/" + where)}">{html.escape(where)}</a>'
               if docs_url else f"<code>docs/{html.escape(term.page)}.rst</code>, section “"
               f"{html.escape(term.section)}”")
        page.add(f'<dt id="g-{_anchor(term.term)}">{html.escape(term.term)}</dt>'
                 f"<dd>{html.escape(term.meaning)} (see {ref})</dd>")
    page.add("</dl></section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>"
            f"<h1>{html.escape(title)}</h1><p class=\"headline\" id=\"headline\">{html.escape(shown)}</p>\n"
            + "\n".join(page.parts) + f"\n<script>{_SCRIPT}</script></body></html>\n")


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


_RUN_META = re.compile(r'<span class="run-meta">.*?</span>', re.S)


def strip_run_metadata(page: str) -> str:
    """``page`` with the run metadata (run id, timings) blanked: equal for two runs of one config.

    >>> strip_run_metadata('a<span class="run-meta">1.5</span>b')
    'a<span class="run-meta"></span>b'
    """
    return _RUN_META.sub('<span class="run-meta"></span>', page)


def write_html(writer: Any, name: str, doc: Mapping[str, Any], *, title: str, headline: str,
               plots: Sequence[tuple[str, str | None]] = (), sections: Mapping[str, str] | None = None
               ) -> Path:
    """Stage ``name`` (the page of ``doc``) in an open :class:`~packing_theory.reporting.ReportWriter`.

    ``plots``: ``(file name, note)`` pairs: a plot with no note is read from the
    staging directory (write the PNGs first); one with a note is shown as that
    sentence. ``sections`` maps a plot's file name to the JSON entry it illustrates.
    """
    figures = []
    for plot, note in plots:
        section = (sections or {}).get(plot)
        if note is None:
            figures.append(Figure(plot, png=Path(writer.path(plot)).read_bytes(), section=section))
        else:
            figures.append(Figure(plot, note=note, section=section))
    path: Path = writer.write_text(name, render_html(doc, title=title, headline=headline, figures=figures))
    return path
