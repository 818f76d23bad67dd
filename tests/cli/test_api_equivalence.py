"""The command line and the Python API write the same report files.

``packing-theory audit`` is ``write_report(audit_corpus(open_corpus(...), ...), out)``: on the
same corpus and settings both write identical ``audit.json``, ``audit.md``,
``audit.html`` and ``documents.csv`` apart from the run id and the timings
(the JSON's ``run`` and ``seconds``, the page's run metadata); ``compare``
likewise. Before the option table the command line assembled its own
report from the old API's pieces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.reporting.page import strip_run_metadata


def _timeless(value: Any) -> Any:
    """A JSON document without its run entry and its timings."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("run", "seconds")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _text(path: Path, run_id: str) -> str:
    return strip_run_metadata(path.read_text()).replace(run_id, "RUN")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two data sources (directories) of plain-text documents, one per line."""
    root = tmp_path_factory.mktemp("corpus")
    for k, source in enumerate(("web", "code")):
        (root / source).mkdir()
        lines = ["word " * ((i * 7 + k * 3) % 61 + 1) for i in range(150)]
        (root / source / "part.txt").write_text("\n".join(lines) + "\n")
    return root


def _same_files(cli: Path, api: Path, kind: str, attachments: tuple[str, ...] = ()) -> None:
    a, b = json.loads((cli / f"{kind}.json").read_text()), json.loads((api / f"{kind}.json").read_text())
    assert _timeless(a) == _timeless(b)
    assert a["run"]["config_hash"] == b["run"]["config_hash"]  # one configuration, one hash
    assert a["run"]["tool"] == b["run"]["tool"] == f"packing-theory {kind}"
    for name in (f"{kind}.md", f"{kind}.html", *attachments):
        assert _text(cli / name, a["run"]["id"]) == _text(api / name, b["run"]["id"]), name


def test_audit_writes_what_write_report_of_audit_writes(corpus: Path, tmp_path: Path) -> None:
    argv = ["audit", "--data", str(corpus), "--format", "text", "--per-line", "--tokenizer", "whitespace",
            "--source-from", "dir", "--policy", "discard,trl-bfd", "--capacity", "32", "--min-buffer", "20",
            "--refill", "8", "--rows", "60", "--permutations", "3", "--documents", "--no-plots",
            "--no-progress", "--out", str(tmp_path / "cli")]
    assert main(argv) == 0
    opened = pt.open_corpus(str(corpus), format="text", per_line=True, tokenizer="whitespace",
                            source_from="dir")
    settings = pt.Settings(capacity=32, min_buffer=20, refill=8)
    result = pt.audit_corpus(opened, ["discard", "trl-bfd"], settings, horizon=pt.Budget("rows", 60),
                             permutations=3, documents=True)
    pt.write_report(result, tmp_path / "api")
    _same_files(tmp_path / "cli", tmp_path / "api", "audit", ("documents.csv",))
    doc = json.loads((tmp_path / "cli" / "audit.json").read_text())
    assert doc["sources"]["sources"] == ["code", "web"] or doc["sources"]["sources"] == ["web", "code"]
    assert doc["documents"]["file"] == "documents.csv"


def test_compare_writes_what_write_report_of_compare_writes(corpus: Path, tmp_path: Path) -> None:
    argv = ["compare", "--data", str(corpus), "--format", "text", "--per-line", "--seq-length", "24",
            "--policy", "discard,trl-bfd,olmo-truncate", "--min-buffer", "10", "--no-plots", "--no-progress",
            "--out", str(tmp_path / "cli")]
    assert main(argv) == 0
    opened = pt.open_corpus(str(corpus), format="text", per_line=True)
    result = pt.compare_corpus(opened, ["discard", "trl-bfd", "olmo-truncate"],
                               pt.Settings(seq_length=24, min_buffer=10))
    pt.write_report(result, tmp_path / "api")
    _same_files(tmp_path / "cli", tmp_path / "api", "compare")
    doc = json.loads((tmp_path / "cli" / "compare.json").read_text())
    widths = {p["packer"]: p["row_width"] for p in doc["packers"]}
    assert widths == {"discard": 25, "trl-bfd": 24, "olmo-truncate": 16}  # each framework's rule at L = 24
