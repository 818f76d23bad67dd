"""A small headless-Chromium driver (the DevTools protocol over ``--remote-debugging-pipe``, stdlib only).

Used by the browser test of the HTML reports (``tests/reporting/test_html_browser.py``) and by
``tools/screenshots.py``. It opens a page, records every console error, uncaught exception, log
error (a blocked or failed load is one), request and failed load, evaluates JavaScript and takes
screenshots. Chromium is Debian's ``chromium`` package (``apt-get install -y chromium``);
:func:`find_chromium` looks for it on ``PATH`` (or ``$CHROMIUM``).

    with Chromium() as browser:
        page = browser.open("file:///tmp/rep/audit.html")
        page.errors, page.requests, page.evaluate("document.title")
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Chromium", "Page", "find_chromium", "local_url", "report_problems"]

LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")
"""Request URLs that are not external (the page itself, its data: URIs)."""


def find_chromium() -> str | None:
    """The Chromium binary: ``$CHROMIUM`` or the first of chromium / chromium-browser /
    google-chrome on ``PATH``; ``None`` when there is none."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env if shutil.which(env) or os.path.exists(env) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def local_url(url: str) -> bool:
    """Whether ``url`` is the page's own file or an embedded resource (no network)."""
    return url.startswith(LOCAL_SCHEMES)


@dataclass
class Page:
    """What one page did: errors, requests, failed loads; :meth:`evaluate` and :meth:`screenshot`."""

    browser: Chromium
    session: str
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def external_requests(self) -> list[str]:
        """Requests to anything but the page's file and its data: URIs."""
        return [u for u in self.requests if not local_url(u)]

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (an exception in it raises ``RuntimeError``)."""
        out = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                     "awaitPromise": True}, self.session)
        if "exceptionDetails" in out:
            raise RuntimeError(f"page script failed: {out['exceptionDetails'].get('text')} "
                               f"{out['exceptionDetails'].get('exception', {}).get('description', '')}")
        return out["result"].get("value")

    def set_viewport(self, width: int, height: int, *, settle: float = 0.2) -> None:
        """Lay the page out in a ``width`` x ``height`` CSS-pixel viewport
        (``Emulation.setDeviceMetricsOverride``, device scale 1, not mobile: the layout viewport is
        exactly ``width`` wide), then let its scripts run for ``settle`` seconds (a resize handler, say)
        and collect what they logged."""
        self.browser.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                                 "deviceScaleFactor": 1, "mobile": False},
                          self.session)
        self.refresh(settle)

    def refresh(self, settle: float = 0.0) -> None:
        """Record the console errors, requests and failed loads that arrived since the last look."""
        end = time.monotonic() + settle
        while True:
            self.browser.call("Runtime.evaluate", {"expression": "1"}, self.session)  # pending events
            if time.monotonic() >= end:
                break
            time.sleep(0.05)
        self.browser._collect(self)

    def full_screenshot(self, path: str | os.PathLike[str], *, max_height: int = 16384) -> Path:
        """Save a PNG of the whole page at the current viewport (its full scroll width and height, the
        height cut at ``max_height`` CSS pixels: a taller capture is beyond what Chromium renders at once)."""
        self.evaluate("window.scrollTo(0, 0)")
        width, full = self.evaluate("[document.documentElement.scrollWidth, "
                                    "document.documentElement.scrollHeight]")
        clip = {"x": 0, "y": 0, "width": width, "height": min(full, max_height), "scale": 1}
        data = self.browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                            "clip": clip}, self.session)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out

    def screenshot(self, path: str | os.PathLike[str], *, height: int | None = None) -> Path:
        """Save a PNG of the page's top ``height`` CSS pixels (default: the viewport) to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if height is not None:
            width = self.evaluate("document.documentElement.scrollWidth")
            full = self.evaluate("document.documentElement.scrollHeight")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": width, "height": min(height, full), "scale": 1})
        data = self.browser.call("Page.captureScreenshot", params, self.session)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out


class Chromium:
    """A headless Chromium process driven over its DevTools pipe (file descriptors 3 and 4)."""

    def __init__(self, binary: str | None = None, *, width: int = 1280, height: int = 1600,
                 timeout: float = 60.0) -> None:
        found = binary or find_chromium()
        if found is None:
            raise FileNotFoundError("no chromium binary found (apt-get install -y chromium, or set CHROMIUM)")
        self.binary = found
        self.width, self.height, self.timeout = width, height, timeout
        self._id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        self._profile = tempfile.mkdtemp(prefix="pt-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # in the child: its DevTools pipe is fd 3 (commands in) and fd 4 (replies out)
            cmd_in, replies_out = os.dup(to_chrome_r), os.dup(from_chrome_w)  # neither is 3 nor 4 now
            os.dup2(cmd_in, 3)  # dup2 makes 3 and 4 inheritable: they survive the exec
            os.dup2(replies_out, 4)

        args = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                f"--user-data-dir={self._profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
                f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

    # ------------------------------------------------------------------ protocol

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError(f"chromium closed its DevTools pipe (exit status {self.proc.poll()})")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def _wait(self, method: str, session: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            for i, ev in enumerate(self._events):
                if ev.get("method") == method and ev.get("sessionId") == session:
                    del self._events[i]
                    return
            self._events.append(self._read(deadline))

    # ------------------------------------------------------------------ pages

    def open(self, url: str, *, settle: float = 0.5) -> Page:
        """Load ``url`` in a new tab, wait for its load event (and ``settle`` seconds), return the page."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", {}, session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height,
                                                         "deviceScaleFactor": 1, "mobile": False}, session)
        page = Page(self, session, url)
        self.call("Page.navigate", {"url": url}, session)
        self._wait("Page.loadEventFired", session, self.timeout)
        page.refresh(settle)
        return page

    def _collect(self, page: Page) -> None:
        keep = []
        for ev in self._events:
            if ev.get("sessionId") != page.session:
                keep.append(ev)
                continue
            method, p = ev.get("method"), ev.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                page.errors.append("console: " + " ".join(str(a.get("value", a.get("description", "")))
                                                          for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                what = d.get("exception", {}).get("description", "")
                page.errors.append(f"exception: {d.get('text')} {what}")
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                page.errors.append(f"log: {e.get('text')} {e.get('url', '')}".strip())
            elif method == "Network.requestWillBeSent":
                page.requests.append(p.get("request", {}).get("url", ""))
            elif method == "Network.loadingFailed":
                page.failed.append(f"{p.get('errorText')} ({p.get('blockedReason', '')})")
        self._events = keep

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(OSError):
                    self._send({"id": 0, "method": "Browser.close", "params": {}})
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._to_chrome, self._from_chrome):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SORT_CHECK = """(function(){
 var ts = document.querySelectorAll('table.sortable');
 for (var t of ts) {
  var rows = t.tBodies[0].rows; if (rows.length < 3) continue;
  var heads = t.tHead.rows[0].cells;
  for (var i = 0; i < heads.length; i++) {
   var vals = Array.from(rows).map(function(r){ return r.cells[i] && r.cells[i].getAttribute('data-v'); });
   if (vals.some(function(v){ return v === null; }) || new Set(vals).size < 3) continue;
   var col = function(){ return Array.from(t.tBodies[0].rows).map(function(r){
     return +r.cells[i].getAttribute('data-v'); }); };
   heads[i].click(); var up = col();
   heads[i].click(); var down = col();
   return {table: t.dataset.caption, column: heads[i].textContent, rows: up.length,
           ascending: up.every(function(v, k){ return k === 0 || up[k - 1] <= v; }),
           descending: down.every(function(v, k){ return k === 0 || down[k - 1] >= v; })};
  }
 }
 return null;
})()"""

_FILTER_CHECK = """(function(){
 var inp = document.querySelector('input.filter'); if (!inp) return null;
 var t = document.getElementById(inp.getAttribute('data-table'));
 var first = t.tBodies[0].rows[0].cells[0].textContent;
 inp.value = first; inp.dispatchEvent(new Event('input'));
 var shown = Array.from(t.tBodies[0].rows).filter(function(r){ return r.style.display !== 'none'; }).length;
 inp.value = ''; inp.dispatchEvent(new Event('input'));
 return {table: t.dataset.caption, rows: t.tBodies[0].rows.length, shown: shown};
})()"""


def report_problems(page: Page, report_dir: str | os.PathLike[str], json_name: str) -> list[str]:
    """Everything wrong with a report page: errors, external requests, failed loads, a missing headline,
    a list-of-records entry of the JSON without its table, a PNG of the directory not shown, sorting or
    filtering that does not work. Empty when the page is right."""
    root = Path(report_dir)
    doc = json.loads((root / json_name).read_text(encoding="utf-8"))
    problems = [f"error: {e}" for e in page.errors]
    problems += [f"external request: {u}" for u in page.external_requests]
    problems += [f"failed load: {f}" for f in page.failed]
    headline = page.evaluate("(document.getElementById('headline') || {}).textContent || ''")
    if not headline.strip():
        problems.append("no headline")
    if isinstance(doc.get("headline"), str) and doc["headline"] not in headline:
        problems.append("the JSON's headline is not the page's")
    captions = set(page.evaluate("Array.from(document.querySelectorAll('table')).map(t => t.dataset.caption)"
                                 ))
    for key, value in doc.items():
        records = isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        if records and key not in captions:
            problems.append(f"no table for the JSON entry {key!r}")
    for png in sorted(root.glob("*.png")):
        img = f"document.querySelector('figure[data-name=\"{png.name}\"] img')"
        width = page.evaluate(f"(function(){{var i = {img}; return i ? i.naturalWidth : -1;}})()")
        if not width or width < 1:
            problems.append(f"plot {png.name} not shown (naturalWidth {width})")
    sort = page.evaluate(_SORT_CHECK)
    if not sort or not (sort["ascending"] and sort["descending"]):
        problems.append(f"sorting a table does not work: {sort}")
    filt = page.evaluate(_FILTER_CHECK)
    if filt is not None and not 1 <= filt["shown"] < filt["rows"]:
        problems.append(f"filtering a table does not work: {filt}")
    return problems
