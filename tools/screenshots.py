"""Run the three demo reports, check them in headless Chromium, save their screenshots.

    python tools/screenshots.py                      # screenshots into docs/_static/
    python tools/screenshots.py --out DIR --keep R   # elsewhere; keep the reports in R

For each of ``audit --demo``, ``compare --demo`` and ``evaluate --demo`` the report is
written to a temporary directory (or ``--keep``), opened from the file system in headless
Chromium (``tools/browser.py``, Debian's ``chromium``) and checked: no console error, no
external request or failed load, the headline, a table for every list of records, every
plot shown, sorting and filtering working (:func:`browser.report_problems`). Then the top
of the page is saved as ``report-<command>.png``. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import Chromium, report_problems

__all__ = ["DEMOS", "check_demo_reports", "main", "write_demo_reports"]

ROOT = Path(__file__).resolve().parents[1]

DEMOS: dict[str, tuple[list[str], str, str]] = {
    "audit": (["audit", "--demo"], "audit.html", "audit.json"),
    "compare": (["compare", "--demo"], "compare.html", "compare.json"),
    "evaluate": (["evaluate", "--demo"], "evaluate.html", "evaluate.json"),
}
"""command -> (arguments, HTML page, JSON document)."""


def write_demo_reports(workdir: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Run each demo (``python -m packing_theory.cli ... --out WORKDIR/<command>``); return their
    directories."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = {}
    for name in names or list(DEMOS):
        args, _, _ = DEMOS[name]
        target = workdir / name
        subprocess.run([sys.executable, "-m", "packing_theory.cli", *args, "--out", str(target)],
                       check=True, env=env, cwd=workdir, stdout=subprocess.DEVNULL)
        out[name] = target
    return out


def check_demo_reports(reports: dict[str, Path], shots: Path | None) -> dict[str, list[str]]:
    """Open each report page; return its problems (empty lists when all is well), saving screenshots."""
    problems = {}
    with Chromium(width=1280, height=1400) as browser:
        for name, directory in reports.items():
            _, page_name, json_name = DEMOS[name]
            page = browser.open((directory / page_name).resolve().as_uri())
            problems[name] = report_problems(page, directory, json_name)
            if shots is not None:
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(shots / f"report-{name}.png", height=1400)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "_static"), help="screenshot directory")
    parser.add_argument("--keep", default=None,
                        help="write the reports here (default: a temporary directory)")
    parser.add_argument("--only", action="append", choices=list(DEMOS), help="one demo (repeatable)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        found = check_demo_reports(write_demo_reports(work, args.only), Path(args.out))
    bad = 0
    for name, problems in found.items():
        print(f"{name}: {'ok' if not problems else '; '.join(problems)}")
        bad += bool(problems)
    print(f"screenshots in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
