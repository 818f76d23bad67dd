"""What a person sees on a report page: DOM rules checked in headless Chromium (stdlib only).

:func:`check_page` lays an open :class:`browser.Page` out at one viewport (``width`` x ``height`` CSS
pixels), scrolls it to the top-left and applies these rules; each finding is one human-readable line
that starts with its rule's name:

``off-screen`` / ``clipped`` / ``empty``
    Every visible **numeric cell** of every table shows its number. A numeric cell is a ``td`` or ``th``
    that has the class ``num``, or whose text (whitespace trimmed) matches :data:`NUMBER_PATTERN`: an
    optional ``~ ≈ < > ≤ ≥`` (and a space) and sign, digits (thousands grouped by ``,``, a space, a
    no-break or thin space), an optional decimal part and exponent, an optional unit (``%``, ``‰``,
    ``×`` or up to ten letters, optionally ``/letters``: ``12.5 %``, ``3 MiB``, ``40 tok/s``),
    optionally followed by one more such number in parentheses (``1,234 (5.6 %)``). Its text box (the
    box of its contents, not of the cell: a right-aligned number sits at the right of a wide cell) must
    lie within ``0 … innerWidth`` (``off-screen`` otherwise) and must not stick out sideways of the
    client box of an ancestor whose ``overflow-x`` is not ``visible`` (``clipped``: hidden or clipped,
    or behind a sideways scroll the reader has to find). A ``num`` cell with no text is ``empty``. Each
    finding names the table (its caption, else ``aria-label`` / ``data-caption``, else the heading above
    it), the row (the row's ``th[scope=row]``, else its first cell) and the column (the header cell
    above it, colspans counted). Vertical extent is not checked: scrolling down is how a page is read.
``answer``
    The answer card — the first element matching ``[data-answer], #answer`` — exists (when the caller
    requires it) and starts on the first screen (its top < the viewport height, non-zero size). A page
    without one gets no finding unless ``require_answer``; :attr:`PageCheck.skipped` says so.
``answer-width``
    Every answer card reads without sideways scrolling: its box and every element in it lie within
    ``0 … innerWidth`` (or inside an ancestor that clips them), no text in it is cut by a clipping
    ancestor, and no element in it scrolls sideways (``scrollWidth`` > ``clientWidth`` with
    ``overflow-x`` auto or scroll). Meant for a narrow viewport (390 px) but checked at every width.
``page-width``
    The document is no wider than the viewport (``scrollWidth`` ≤ ``innerWidth``): the page itself
    never scrolls sideways; the finding names the outermost elements that stick out.
``console`` / ``external request`` / ``failed load``
    No console error or uncaught exception, no request to anything but the page's own file and
    ``data:`` URIs, no failed load (recorded since the page was opened).

Visible means rendered: cells inside a closed ``<details>`` (outside its ``<summary>``), with
``display: none`` or ``visibility: hidden`` on themselves or an ancestor (a row a filter hid, say) are
skipped, by design: collapsed content is not on the screen until the reader opens it.

    with Chromium() as browser:
        page = browser.open(path.as_uri())
        for width, height in VIEWPORTS:
            print(check_page(page, width, height, require_answer=True).problems)

The rules only read the DOM: they know nothing of how a page is rendered, apart from the
``data-answer`` / ``#answer`` convention (``CONTRIBUTING.md``, *Report pages*).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browser import Page

__all__ = ["NUMBER_PATTERN", "VIEWPORTS", "PageCheck", "check_page", "save_screenshots",
           "visibility_problems"]

VIEWPORTS: tuple[tuple[int, int], ...] = ((1280, 800), (800, 1000), (390, 844))
"""The viewports a report page is checked and photographed at: a laptop, a narrow window (tables stack as
cards below 1,040 pixels) and a phone (CSS pixels)."""

_NUM = (r"(?:[~≈<>≤≥]\s?)?[+\-−±]?(?=\.?\d)(?:\d{1,3}(?:[, \u00a0\u2009\u202f]\d{3})+|\d*)"
        r"(?:\.\d+)?(?:[eE][+\-−]?\d+)?")
_UNIT = r"(?:\s?(?:%|‰|×|[A-Za-zµ]{1,10}(?:/[A-Za-z]{1,6})?))?"
NUMBER_PATTERN = rf"^{_NUM}{_UNIT}(?:\s*\(\s*{_NUM}{_UNIT}\s*\))?$"
"""The text of a numeric cell (a JavaScript and Python regular expression, matched on trimmed text)."""

_SCRIPT = r"""(function(opts){
window.scrollTo(0, 0);
var W = window.innerWidth, H = window.innerHeight, TOL = 1, NUM = new RegExp(opts.pattern);
var styles = new Map();
function cs(el){ var s = styles.get(el); if (!s) { s = getComputedStyle(el); styles.set(el, s); } return s; }
function shown(el){
  var closed = el.closest('details:not([open])');
  while (closed) {
    var sum = closed.querySelector(':scope > summary');
    if (!sum || !sum.contains(el)) return false;
    closed = closed.parentElement && closed.parentElement.closest('details:not([open])');
  }
  if (el.checkVisibility) return el.checkVisibility({visibilityProperty: true});
  return el.getClientRects().length > 0 && cs(el).visibility !== 'hidden';
}
function clean(t, n){
  t = (t || '').replace(/\s+/g, ' ').trim();
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}
function describe(el){
  var d = '<' + el.tagName.toLowerCase();
  if (el.id) d += '#' + el.id;
  if (el.classList.length) d += '.' + Array.from(el.classList).join('.');
  return d + '>';
}
function contentBox(el){
  var r = document.createRange(); r.selectNodeContents(el);
  var b = r.getBoundingClientRect();
  return (b.width || b.height) ? b : el.getBoundingClientRect();
}
function nodeBox(node){
  var r = document.createRange(); r.selectNodeContents(node);
  return r.getBoundingClientRect();
}
function clientX(a){  // the x range of a's client box (padding box: what it shows)
  var l = a.getBoundingClientRect().left + a.clientLeft;
  return [l, l + a.clientWidth];
}
function below(a){ return a && a !== document.body && a !== document.documentElement; }
function clipper(el, box){  // the nearest ancestor-or-self that hides part of box sideways
  for (var a = el; below(a); a = a.parentElement) {
    if (cs(a).overflowX === 'visible') continue;
    var c = clientX(a);
    if (box.left < c[0] - TOL || box.right > c[1] + TOL) return a;
  }
  return null;
}
function clips(el){  // some ancestor (below body) stops el from widening the page
  for (var a = el.parentElement; below(a); a = a.parentElement)
    if (cs(a).overflowX !== 'visible') return true;
  return false;
}
var headings = Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6'));
function caption(t, i){
  var c = t.caption && clean(t.caption.textContent, 80);
  if (c) return c;
  c = t.getAttribute('aria-label') || t.getAttribute('data-caption');
  if (c) return clean(c, 80);
  var h = null;
  headings.forEach(function(x){
    if (x.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING) h = x;
  });
  return h ? 'table ' + (i + 1) + ' under "' + clean(h.textContent, 60) + '"' : 'table ' + (i + 1);
}
function column(cell){  // colspans counted
  var i = 0;
  for (var c = cell.parentElement.firstElementChild; c && c !== cell; c = c.nextElementSibling)
    i += c.colSpan || 1;
  return i;
}
function headerRow(t){
  if (t.tHead && t.tHead.rows.length) return t.tHead.rows[t.tHead.rows.length - 1];
  var first = t.rows[0];
  return first && Array.from(first.cells).every(function(c){ return c.tagName === 'TH'; }) ? first : null;
}
function counts(texts){ var m = new Map(); texts.forEach(function(x){ m.set(x, (m.get(x) || 0) + 1); });
  return m; }
function labelOf(row){
  var th = row.querySelector(':scope > th[scope=row]');
  return row.cells.length ? clean((th || row.cells[0]).textContent, 50) : '';
}
function namer(t){  // names of t's rows and columns: [text, 1-based number, whether the text is unique]
  var hr = headerRow(t), heads = hr ? Array.from(hr.cells) : [];
  var headText = heads.map(function(h){ return clean(h.textContent, 50); }), headCount = counts(headText);
  var rows = Array.from(t.rows), labels = rows.map(labelOf), labelCount = counts(labels), at = new Map();
  rows.forEach(function(r, i){ at.set(r, i); });
  return {
    row: function(cell){
      var i = at.get(cell.parentElement), text = labels[i];
      return [text, i + 1, !!text && labelCount.get(text) === 1];
    },
    column: function(cell){
      var want = column(cell), i = 0, text = '';
      if (hr === cell.parentElement) text = clean(cell.textContent, 50);
      else for (var k = 0; k < heads.length; k++) {
        if (want < i + (heads[k].colSpan || 1)) { text = headText[k]; break; }
        i += heads[k].colSpan || 1;
      }
      return [text, want + 1, !!text && headCount.get(text) === 1];
    }
  };
}
var out = {width: W, height: H, cells: [], numeric: 0, hidden: 0, answer: null, cards: [], page: null};
Array.from(document.querySelectorAll('table')).forEach(function(t, ti){
  var name = caption(t, ti), names = namer(t);
  Array.from(t.querySelectorAll('td, th')).forEach(function(cell){
    if (cell.closest('table') !== t) return;
    var text = clean(cell.textContent, 40);
    if (!cell.classList.contains('num') && !NUM.test(text)) return;
    if (!shown(cell)) { out.hidden++; return; }
    out.numeric++;
    var where = {table: name, row: names.row(cell), column: names.column(cell), text: text};
    if (!text) { where.rule = 'empty'; out.cells.push(where); return; }
    var box = contentBox(cell), by = clipper(cell, box);
    where.x = [Math.round(box.left), Math.round(box.right)];
    if (by) { where.rule = 'clipped'; where.by = describe(by); where.visible = clientX(by).map(Math.round); }
    else if (box.left < -TOL || box.right > W + TOL) where.rule = 'off-screen';
    else return;
    out.cells.push(where);
  });
});
var cards = Array.from(document.querySelectorAll('[data-answer], #answer')).filter(function(c){
  return !(c.parentElement && c.parentElement.closest('[data-answer], #answer')); });
if (cards.length) {
  var r = cards[0].getBoundingClientRect();
  out.answer = {what: describe(cards[0]), top: Math.round(r.top), height: Math.round(r.height),
                shown: shown(cards[0])};
}
cards.forEach(function(card){
  var found = [], cr = card.getBoundingClientRect();
  if (cr.left < -TOL || cr.right > W + TOL)
    found.push('the card spans x ' + Math.round(cr.left) + '–' + Math.round(cr.right) + ' px');
  [card].concat(Array.from(card.querySelectorAll('*'))).forEach(function(el){
    if (!shown(el)) return;
    var b = el.getBoundingClientRect();
    if (el !== card && (b.right > W + TOL || b.left < -TOL) && !clips(el)
        && !(el.parentElement.getBoundingClientRect().right > W + TOL))
      found.push(describe(el) + ' spans x ' + Math.round(b.left) + '–' + Math.round(b.right)
                 + ' px (the page scrolls sideways)');
    var ox = cs(el).overflowX;
    if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + TOL)
      found.push(describe(el) + ' scrolls sideways (' + el.scrollWidth + ' px of content in '
                 + el.clientWidth + ' px)');
  });
  var walk = document.createTreeWalker(card, NodeFilter.SHOW_TEXT), node;
  while ((node = walk.nextNode())) {
    var p = node.parentElement, text = clean(node.textContent, 40);
    if (!text || !p || /^(SCRIPT|STYLE)$/.test(p.tagName) || !shown(p)) continue;
    var b = nodeBox(node), by = clipper(p, b);
    if (by) found.push('text "' + text + '" is cut by ' + describe(by));
    else if (b.left < -TOL || b.right > W + TOL)
      found.push('text "' + text + '" spans x ' + Math.round(b.left) + '–' + Math.round(b.right) + ' px');
  }
  out.cards.push({what: describe(card), found: found});
});
var sw = document.documentElement.scrollWidth;
if (sw > W + TOL) {
  var wide = [], seen = new Map();  // the outermost elements that stick out, alike ones counted once
  Array.from(document.body.querySelectorAll('*')).forEach(function(el){
    if (!shown(el) || clips(el)) return;
    var b = el.getBoundingClientRect(), up = el.parentElement, pb = up.getBoundingClientRect();
    if (!(b.right > W + TOL) || (pb.right > W + TOL && up !== document.body)) return;
    var what = describe(el) + (up === document.body ? '' : ' in ' + describe(up)), w = seen.get(what);
    if (!w) { w = {what: what, n: 0, right: 0}; seen.set(what, w); wide.push(w); }
    w.n++; w.right = Math.max(w.right, Math.round(b.right));
  });
  wide = wide.slice(0, 5).map(function(w){
    return (w.n > 1 ? w.n + ' × ' : '') + w.what + ' to x ' + w.right; });
  out.page = {scrollWidth: sw, wide: wide};
}
return out;
})"""


@dataclass
class PageCheck:
    """The findings of :func:`check_page` at one viewport.

    ``problems``: one line per finding (at most ``cells_per_table`` numeric cells per table in detail,
    then one line with the rest); ``counts``: findings per rule, every cell counted; ``skipped``: the
    rules not applied, and why; ``numeric_cells``: the visible numeric cells checked, ``hidden_cells``
    the numeric cells skipped as not visible.
    """

    viewport: tuple[int, int]
    problems: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)
    numeric_cells: int = 0
    hidden_cells: int = 0

    def _check(self) -> None:
        """Internal invariants: every counted finding has a line (or a summary line covering it)."""
        assert all(n > 0 for n in self.counts.values()), self.counts
        assert len(self.problems) <= sum(self.counts.values()), (self.problems, self.counts)
        assert bool(self.problems) == bool(self.counts), (self.problems, self.counts)


def _name(kind: str, text: str, number: int, alone: bool) -> str:
    """``row "web"``; ``row 3 ("web")`` when another row has that label too; ``row 3`` without one."""
    if alone:
        return f'{kind} "{text}"'
    return f'{kind} {number} ("{text}")' if text else f"{kind} {number}"


def _cell_line(size: str, cell: dict[str, Any]) -> str:
    where = f'table "{cell["table"]}", {_name("row", *cell["row"])}, {_name("column", *cell["column"])}'
    if cell["rule"] == "empty":
        return f"empty at {size}: {where}: a numeric cell with no text"
    left, right = cell["x"]
    if cell["rule"] == "clipped":
        lo, hi = cell["visible"]
        return (f'clipped at {size}: {where}: "{cell["text"]}" at x {left:,}–{right:,} px is cut by '
                f"{cell['by']}, which shows x {lo:,}–{hi:,} px (the reader must scroll it sideways)")
    return (f'off-screen at {size}: {where}: "{cell["text"]}" at x {left:,}–{right:,} px, outside the '
            f"viewport (0–{int(size.split('×')[0]):,} px)")


def check_page(page: Page, width: int, height: int, *, require_answer: bool = False,
               cells_per_table: int | None = 10) -> PageCheck:
    """Lay ``page`` out at ``width`` x ``height``, scroll it to the top-left and apply the module's rules.

    ``require_answer``: a page without ``[data-answer]`` / ``#answer`` is a finding (else the rule is
    skipped and :attr:`PageCheck.skipped` says so). ``cells_per_table``: numeric-cell findings listed
    per table before one summary line (``None``: all). Complexity: O(elements x depth) in the page.
    """
    if width < 1 or height < 1:
        raise ValueError(f"the viewport must be at least 1 x 1 CSS pixels, got {width} x {height}")
    page.set_viewport(width, height)
    raw = page.evaluate(f"{_SCRIPT}({json.dumps({'pattern': NUMBER_PATTERN})})")
    size = f"{width}×{height}"
    check = PageCheck((width, height), numeric_cells=raw["numeric"], hidden_cells=raw["hidden"])
    per_table: Counter[str] = Counter()
    rest: dict[str, Counter[str]] = {}
    for cell in raw["cells"]:
        check.counts[cell["rule"]] += 1
        per_table[cell["table"]] += 1
        if cells_per_table is None or per_table[cell["table"]] <= cells_per_table:
            check.problems.append(_cell_line(size, cell))
        else:
            rest.setdefault(cell["table"], Counter())[cell["rule"]] += 1
    for table, rules in rest.items():
        what = ", ".join(f"{n:,} {rule}" for rule, n in sorted(rules.items()))
        check.problems.append(f'{rules.most_common(1)[0][0]} at {size}: table "{table}": '
                              f"{sum(rules.values()):,} more numeric cells not shown ({what})")
    answer = raw["answer"]
    if answer is None:
        if require_answer:
            check.counts["answer"] += 1
            check.problems.append(f"answer at {size}: no answer card ([data-answer] or #answer) on the page")
        else:
            check.skipped.append("answer: the page has no [data-answer] or #answer element (rule skipped)")
    elif not answer["shown"] or answer["height"] <= 0:
        check.counts["answer"] += 1
        check.problems.append(f"answer at {size}: the answer card {answer['what']} is not displayed")
    elif answer["top"] >= height:
        check.counts["answer"] += 1
        check.problems.append(f"answer at {size}: the answer card {answer['what']} starts at y "
                              f"{answer['top']:,} px, below the first screen ({height:,} px)")
    for card in raw["cards"]:
        for found in card["found"]:
            check.counts["answer-width"] += 1
            check.problems.append(f"answer-width at {size}: in the answer card {card['what']}: {found}")
    if raw["page"] is not None:
        check.counts["page-width"] += 1
        wide = ", ".join(raw["page"]["wide"]) or "unknown"
        check.problems.append(f"page-width at {size}: the page is {raw['page']['scrollWidth']:,} px wide, it "
                              f"scrolls sideways (sticking out: {wide})")
    for rule, lines in (("console", page.errors), ("external request", page.external_requests),
                        ("failed load", page.failed)):
        for line in lines:
            check.counts[rule] += 1
            check.problems.append(f"{rule}: {line}")
    check._check()
    return check


def visibility_problems(page: Page, width: int, height: int, *, require_answer: bool = False) -> list[str]:
    """The findings of :func:`check_page` as lines (empty when a person sees every number)."""
    return check_page(page, width, height, require_answer=require_answer).problems


def save_screenshots(page: Page, directory: str | os.PathLike[str], stem: str,
                     viewports: tuple[tuple[int, int], ...] = VIEWPORTS) -> list[Path]:
    """Full-page PNGs of ``page`` at each viewport: ``DIRECTORY/STEM-WIDTHxHEIGHT.png``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for width, height in viewports:
        page.set_viewport(width, height)
        paths.append(page.full_screenshot(out / f"{stem}-{width}x{height}.png"))
    return paths
