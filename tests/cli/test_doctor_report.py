"""``packing-theory doctor``: its report is on the one report model, and ``--out DIR`` writes it.

The doctor reads the user's own config and corpus end to end (``--config FILE
--data DATA``, text read with a tokenizer), prints the report as Markdown or
JSON, and with ``--out`` writes ``doctor.json``, ``doctor.md`` and
``doctor.html`` through the locked report writer: the page, the Markdown and
the JSON say the same findings, and ``verify_report`` checks the directory.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from packing_theory.cli import main
from packing_theory.configs import DoctorReport, doctor
from packing_theory.reporting import Report, verify_report
from packing_theory.reporting.markdown import md_escape, render_markdown


def _parcae(tmp_path: Path) -> Path:
    """Parcae with blocks of 2,048: documents of 683 tokens leave two thirds of a row as padding."""
    path = tmp_path / "parcae.yaml"
    path.write_text(yaml.safe_dump({"block_size": 2048, "micro_batch_size": 16, "pack_sequences": True}))
    return path


def test_the_doctor_report_is_a_report_with_its_answer_first(tmp_path: Path) -> None:
    report = doctor(_parcae(tmp_path), np.full(1600, 683))
    assert isinstance(report, Report) and isinstance(report, DoctorReport) and report.kind == "doctor"
    sections = list(report.sections())
    assert sections[0].answer and sum(s.answer for s in sections) == 1
    assert [s.key for s in sections] == ["answer", "findings", "mapping", "checked"]
    doc = report.to_dict({"id": "RUN", "config_hash": "sha256:x", "tool": "t"})
    assert doc["kind"] == "doctor" and doc["run"]["id"] == "RUN" and doc["found"] is True
    assert doc["findings"][0]["kind"] == "padding" and doc["corpus"]["documents"] == 1600
    json.dumps(doc)  # plain JSON: no numpy value left
    md = report.markdown()
    assert md == render_markdown(report) and md.splitlines()[0] == md_escape(report.headline())
    assert "66.7 % of the row positions are padding" in md
    assert report.plots() == [] and report.attachments() == []
    healthy = doctor(_parcae(tmp_path), np.full(100, 2049))
    assert not healthy.found and "Nothing found." in healthy.markdown()


def test_doctor_reads_config_and_data_end_to_end_and_writes_its_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": "w " * n}) + "\n"
                                                 for n in [700, 30, 682, 682, 1500] * 40))
    config = _parcae(tmp_path)
    out = tmp_path / "report"
    argv = ["doctor", "--config", str(config), "--data", str(tmp_path / "docs.jsonl"), "--tokenizer",
            "whitespace"]
    assert main([*argv, "--out", str(out), "--json"]) == 1
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    err = captured.err.strip().splitlines()
    assert err[0].startswith("mapping used: parcae -> parcae-bestfit (R = 2,049)")
    on_disk = json.loads((out / "doctor.json").read_text())
    found = len(on_disk["findings"])
    assert err[-1].startswith(f"doctor: {found} finding(s); wrote ") and len(err) == 2
    assert on_disk["findings"][0]["kind"] == "padding"
    assert on_disk == printed and on_disk["run"]["tool"] == "packing-theory doctor"
    assert on_disk["documents"] == 200 and on_disk["data"].startswith("jsonl")
    check = verify_report(out)
    assert check.ok and set(check.files) >= {"doctor.json", "doctor.md", "doctor.html"}
    md = (out / "doctor.md").read_text()
    assert md.splitlines()[0] == md_escape(on_disk["headline"]) and on_disk["run"]["id"] in md
    page = (out / "doctor.html").read_text()
    assert on_disk["findings"][0]["title"] in page
    # without --out nothing is written; standard output is plain text (the path's underscores unescaped),
    # the Markdown only when asked
    assert "_" in on_disk["headline"] and md_escape(on_disk["headline"]) != on_disk["headline"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == on_disk["headline"] and "\\_" not in out and "| rank |" not in out
    assert main([*argv, "--markdown"]) == 1
    assert capsys.readouterr().out.startswith(md_escape(on_disk["headline"]))
    assert main([*argv, "--force"]) == 2
    assert "--force applies to --out" in capsys.readouterr().err
    assert main([*argv, "--json", "--markdown"]) == 2
    assert "give one of --json and --markdown" in capsys.readouterr().err


def test_the_doctor_report_stays_apart_from_its_inputs(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``doctor --out`` takes the rule of every report (``audit``, ``census``, ``contamination``): an
    ``--out`` that is (or is inside) an input directory is exit 2 with one line before anything is
    written, ``--force`` or not. Before the fix ``--data cj --out cj`` wrote ``cj/doctor.*`` into the
    corpus, and the next doctor run failed reading ``cj/doctor.html`` as a document."""
    corpus = tmp_path / "corpus"
    (corpus / "web").mkdir(parents=True)
    (corpus / "web" / "docs.jsonl").write_text("".join(json.dumps({"text": "w " * n}) + "\n"
                                                       for n in [700, 30, 682] * 20))
    before = sorted(p.relative_to(corpus) for p in corpus.rglob("*"))
    argv = ["doctor", "--config", str(_parcae(tmp_path)), "--data", str(corpus), "--tokenizer", "whitespace"]
    cases = [([str(corpus)], "is the input directory"), ([str(corpus / "web"), "--force"],
                                                         "is inside the input directory")]
    for out, where in cases:
        assert main([*argv, "--out", *out]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"the report directory {out[0]!r} {where} {str(corpus)!r}" in err[0], err
        assert "choose an --out outside the inputs" in err[0]
        assert sorted(p.relative_to(corpus) for p in corpus.rglob("*")) == before
    assert main([*argv, "--out", str(tmp_path / "rep")]) == 1 and verify_report(tmp_path / "rep").ok
