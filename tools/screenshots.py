"""Write every report page the CLI makes, check it in headless Chromium, save its screenshots.

    python tools/screenshots.py                      # docs screenshots into docs/_static/screenshots/
    python tools/screenshots.py --small --artifacts DIR --only census
    python tools/screenshots.py --out DIR --keep R   # elsewhere; keep the reports in R

The pages are ``audit.html`` (``audit --demo``), ``compare.html`` (``compare --demo``),
``evaluate.html`` (``evaluate --demo``), ``census.html`` and ``contamination.html`` (``census`` and
``contamination`` on a few generated text files: they have no demo); ``--small`` runs each on the
smallest options that still write the page (seconds instead of minutes). Each report is written to
a temporary directory (or ``--keep``), opened from the file system in headless Chromium
(``tools/browser.py``, Debian's ``chromium``) and checked at 1280 x 800 and 390 x 844 for what a
person sees (``tools/page_check.py``: every number on screen, the answer card first, no sideways
scrolling, no console error or external request); the demos of audit, compare and evaluate are also
checked for a headline, their tables and plots, sorting and filtering
(:func:`browser.report_problems`). The first screen at 1280 x 800 is saved as ``--out/<page>.png``,
and with ``--artifacts`` the full page at both viewports as ``<page>-<W>x<H>.png``. Exit status 1
when a check fails (the screenshots are written all the same).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import Chromium, report_problems
from page_check import VIEWPORTS, PageCheck, check_page, save_screenshots

__all__ = ["DEMOS", "SMALL", "ReportRun", "check_demo_reports", "check_pages", "main", "write_demo_reports"]

ROOT = Path(__file__).resolve().parents[1]
DOCS_SHOTS = ROOT / "docs" / "_static" / "screenshots"


@dataclass(frozen=True)
class ReportRun:
    """One CLI run that writes a report page: its arguments (given the directory of generated inputs,
    without ``--out``), the page and JSON document it writes, the exit statuses that mean it ran."""

    argv: Callable[[Path], list[str]]
    page: str
    json: str
    ok: tuple[int, ...] = (0,)


_WORDS = ["token", "row", "packer", "source", "stream", "buffer", "window", "length", "document", "corpus",
          "shard", "epoch", "batch", "capacity", "refill", "policy", "trained", "started", "dropped", "mass",
          "prefix"]


def sample_texts(directory: Path) -> dict[str, Path]:
    """Two small text corpora (one document per line) and a reference set sharing three of their lines,
    written into ``directory`` (deterministic; a few kilobytes)."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = {name: [" ".join(_WORDS[(i * k + j * j) % len(_WORDS)] for j in range(4 + (i * k) % 40))
                    for i in range(30)] for name, k in (("web", 7), ("code", 11))}
    paths = {}
    for name, docs in lines.items():
        paths[name] = directory / f"{name}.txt"
        paths[name].write_text("\n".join(docs) + "\n", encoding="utf-8")
    paths["reference"] = directory / "reference.txt"
    paths["reference"].write_text("\n".join([lines["web"][5], lines["web"][17], lines["code"][9]]) + "\n",
                                  encoding="utf-8")
    return paths


def _census(d: Path) -> list[str]:
    texts = sample_texts(d)
    return ["census", "--text", str(texts["web"]), str(texts["code"]), "--per-line", "--workers", "1",
            "--no-progress"]


def _contamination(d: Path) -> list[str]:
    texts = sample_texts(d)
    return ["contamination", "--text", str(texts["web"]), str(texts["code"]), "--per-line",
            "--reference", str(texts["reference"]), "--reference-per-line", "--n", "8"]


_OTHERS = {
    "census": ReportRun(_census, "census.html", "census.json"),
    "contamination": ReportRun(_contamination, "contamination.html", "contamination.json", ok=(0, 1)),
}

DEMOS: dict[str, ReportRun] = {
    "audit": ReportRun(lambda d: ["audit", "--demo", "--no-progress"], "audit.html", "audit.json"),
    "compare": ReportRun(lambda d: ["compare", "--demo"], "compare.html", "compare.json"),
    "evaluate": ReportRun(lambda d: ["evaluate", "--demo"], "evaluate.html", "evaluate.json"),
    **_OTHERS,
}
"""page name -> the run that writes it, as a user first meets it (the full-size demos)."""

SMALL: dict[str, ReportRun] = {
    "audit": ReportRun(lambda d: ["audit", "--demo", "--scale", "0.01", "--permutations", "2",
                                  "--policy", "discard,continue,trl-bfd", "--no-progress"],
                       "audit.html", "audit.json"),
    "compare": ReportRun(lambda d: ["compare", "--demo", "--demo-documents", "5000"],
                         "compare.html", "compare.json"),
    "evaluate": ReportRun(lambda d: ["evaluate", "--demo", "--train-rows", "150", "--eval-candidates", "4000",
                                     "--per-stratum", "6", "--census-limit", "60", "--replicates", "300"],
                          "evaluate.html", "evaluate.json"),
    **_OTHERS,
}
"""The same pages from the smallest options that still write them (every packer in compare's table)."""


def write_demo_reports(workdir: Path, names: list[str] | None = None, *,
                       runs: dict[str, ReportRun] | None = None) -> dict[str, Path]:
    """Run each report (``python -m packing_theory.cli ... --out WORKDIR/<name>``, inputs generated in
    ``WORKDIR/inputs``); return their directories. ``runs``: :data:`DEMOS` (default) or :data:`SMALL`."""
    runs = DEMOS if runs is None else runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = {}
    for name in names or list(runs):
        run = runs[name]
        target = workdir / name
        done = subprocess.run([sys.executable, "-m", "packing_theory.cli", *run.argv(workdir / "inputs"),
                               "--out", str(target)], env=env, cwd=workdir, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if done.returncode not in run.ok:
            raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr.strip()}")
        out[name] = target
    return out


def check_demo_reports(reports: dict[str, Path], shots: Path | None) -> dict[str, list[str]]:
    """Open each report page; return its :func:`browser.report_problems` (empty lists when all is well),
    saving the top 1,400 px as ``SHOTS/report-<name>.png``."""
    problems = {}
    with Chromium(width=1280, height=1400) as browser:
        for name, directory in reports.items():
            page = browser.open((directory / DEMOS[name].page).resolve().as_uri())
            problems[name] = report_problems(page, directory, DEMOS[name].json)
            if shots is not None:
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(shots / f"report-{name}.png", height=1400)
    return problems


def check_pages(reports: dict[str, Path], *, require_answer: bool = True, docs: Path | None = None,
                artifacts: Path | None = None,
                cells_per_table: int | None = 10) -> dict[str, dict[tuple[int, int], PageCheck]]:
    """Open each report page and apply :func:`page_check.check_page` at each of :data:`VIEWPORTS`.

    ``docs``: save the first screen at 1280 x 800 as ``DOCS/<name>.png``; ``artifacts``: save full
    pages at both viewports as ``ARTIFACTS/<name>-<W>x<H>.png``.
    """
    found: dict[str, dict[tuple[int, int], PageCheck]] = {}
    with Chromium(width=1280, height=800) as browser:
        for name, directory in reports.items():
            page = browser.open((directory / DEMOS[name].page).resolve().as_uri())
            found[name] = {size: check_page(page, *size, require_answer=require_answer,
                                            cells_per_table=cells_per_table) for size in VIEWPORTS}
            if artifacts is not None:
                save_screenshots(page, artifacts, name)
            if docs is not None:
                docs.mkdir(parents=True, exist_ok=True)
                page.set_viewport(1280, 800)
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(docs / f"{name}.png")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", default=str(DOCS_SHOTS), help="docs screenshot directory (first screen)")
    parser.add_argument("--artifacts", default=None, help="also save full pages at both viewports here")
    parser.add_argument("--keep", default=None,
                        help="write the reports here (default: a temporary directory)")
    parser.add_argument("--only", action="append", choices=list(DEMOS), help="one page (repeatable)")
    parser.add_argument("--small", action="store_true", help="the smallest options that write each page")
    args = parser.parse_args(argv)
    names = args.only or list(DEMOS)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        reports = write_demo_reports(work, names, runs=SMALL if args.small else DEMOS)
        seen = check_pages(reports, docs=Path(args.out),
                           artifacts=Path(args.artifacts) if args.artifacts else None)
        legacy = {} if args.small else check_demo_reports(
            {n: p for n, p in reports.items() if n in ("audit", "compare", "evaluate")}, None)
    bad = 0
    for name in names:
        problems = list(legacy.get(name, []))
        for (width, height), check in seen[name].items():
            counts = ", ".join(f"{n:,} {rule}" for rule, n in sorted(check.counts.items())) or "ok"
            print(f"{name} at {width}×{height}: {counts} ({check.numeric_cells:,} numeric cells on screen)")
            problems += check.problems
        for line in problems:
            print(f"  {line}")
        bad += bool(problems)
    print(f"screenshots in {args.out}" + (f" and {args.artifacts}" if args.artifacts else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
