"""Reports written safely: validated first, locked, staged and swapped in as one unit."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.orchestration import AUDIT_FILES as REPORT_FILES
from packing_theory.orchestration.audit_plots import PLOT_FILES
from packing_theory.orchestration.audit_report import SCHEMA_VERSION
from packing_theory.reporting import (
    LOCK_NAME,
    PNG_CONFIG_KEY,
    PNG_RUN_KEY,
    REPORT_MANIFEST_NAME,
    ReportBusy,
    ReportError,
    ReportWriter,
    matplotlib_available,
    png_text,
    recover,
    verify_report,
)
from tests.signal_helpers import wait_until_caught

needs_plots = pytest.mark.skipif(not matplotlib_available(), reason="matplotlib (plots extra) missing")
SMALL = ["--capacity", "32", "--min-buffer", "20", "--refill", "8", "--rows", "200", "--permutations", "2",
         "--no-progress"]


@pytest.fixture()
def lengths_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    path = tmp_path / "lengths.npy"
    np.save(path, np.maximum(1, rng.lognormal(2.6, 1.2, 2000)).astype(np.int64))
    return path


def audit(lengths: Path, out: Path, *extra: str) -> int:
    return main(["audit", "--lengths", str(lengths), "--out", str(out), *SMALL, *extra])


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def run_ids(out: Path) -> set[str]:
    """The run id of every report file in ``out`` (JSON entry, Markdown line, PNG text chunk)."""
    ids = {json.loads((out / "audit.json").read_text())["run"]["id"]}
    md = (out / "audit.md").read_text()
    ids.add(md.rsplit("Run `", 1)[1].split("`", 1)[0])
    ids |= {png_text(out / name)[PNG_RUN_KEY] for name in PLOT_FILES if (out / name).exists()}
    return ids


# --------------------------------------------------------------------------- one unit


@needs_plots
def test_every_file_carries_the_run_id_and_config_hash(lengths_file: Path, tmp_path: Path) -> None:
    """Before the fix no file said which run wrote it."""
    out = tmp_path / "rep"
    assert audit(lengths_file, out) == 0
    doc = json.loads((out / "audit.json").read_text())
    run = doc["run"]
    assert doc["version"] == SCHEMA_VERSION and run["tool"] == "packing-theory audit"
    assert run_ids(out) == {run["id"]}
    assert run["config_hash"] in (out / "audit.md").read_text()
    assert {png_text(out / n)[PNG_CONFIG_KEY] for n in PLOT_FILES} == {run["config_hash"]}
    check = verify_report(out, names=REPORT_FILES)
    assert check.ok, check.problems
    # a small corpus gets the per-document table as CSV by default (no Parquet)
    assert check.run_id == run["id"]
    assert set(check.files) == set(REPORT_FILES) - {"documents.parquet", "source_mixture.png"}
    assert not [e for e in os.listdir(out) if e.startswith(".packing-theory-staging")]


def test_same_options_same_config_hash(lengths_file: Path, tmp_path: Path) -> None:
    hashes = []
    for k in range(2):
        assert audit(lengths_file, tmp_path / f"r{k}", "--no-plots") == 0
        hashes.append(json.loads((tmp_path / f"r{k}" / "audit.json").read_text())["run"])
    assert hashes[0]["config_hash"] == hashes[1]["config_hash"] and hashes[0]["id"] != hashes[1]["id"]
    assert audit(lengths_file, tmp_path / "r2", "--no-plots", "--permutation-seed", "7") == 0
    assert json.loads((tmp_path / "r2" / "audit.json").read_text())["run"]["config_hash"] != hashes[0][
        "config_hash"]


def test_json_on_stdout_is_the_same_run(lengths_file: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert audit(lengths_file, out, "--no-plots", "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["run"] == json.loads((out / "audit.json").read_text())["run"]


# --------------------------------------------------------------------------- --out checked first


@pytest.mark.parametrize("kind", ["file", "below-a-file", "lock-symlink", "report-dir"])
def test_bad_out_is_refused_before_computing(kind: str, lengths_file: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix a bad --out was reported only after the whole computation."""
    import packing_theory.cli.audit as cli_audit

    def no_audit(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the audit ran before --out was checked")

    monkeypatch.setattr(cli_audit, "audit_corpus", no_audit)
    f = tmp_path / "plain-file"
    f.write_text("x")
    out = {"file": f, "below-a-file": f / "sub", "lock-symlink": tmp_path / "d",
           "report-dir": tmp_path / "e"}[kind]
    if kind == "lock-symlink":
        out.mkdir()
        (out / LOCK_NAME).symlink_to(f)
    if kind == "report-dir":
        (out / "audit.md").mkdir(parents=True)
    assert audit(lengths_file, out, "--no-plots") == 2
    line = one_line(capsys)
    assert str(out) in line or str(f) in line
    assert f.read_text() == "x"


def test_a_failed_run_into_a_new_directory_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "new"
    bad = tmp_path / "bad.npy"
    np.save(bad, np.array([3, 0, 2]))
    assert main(["audit", "--lengths", str(bad), "--out", str(out), "--no-plots"]) == 2
    assert not out.exists()


# --------------------------------------------------------------------------- ownership, stale files, links


def test_files_this_tool_did_not_write_are_refused_without_force(lengths_file: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix an existing audit.md was replaced without a word."""
    out = tmp_path / "rep"
    out.mkdir()
    (out / "audit.md").write_text("my notes\n")
    assert audit(lengths_file, out, "--no-plots") == 2
    assert "audit.md exists and is not written by packing-theory; pass --force" in one_line(capsys)
    assert (out / "audit.md").read_text() == "my notes\n"
    assert audit(lengths_file, out, "--no-plots", "--force") == 0
    assert verify_report(out).ok


def test_an_edited_report_is_not_overwritten(lengths_file: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert audit(lengths_file, out, "--no-plots") == 0
    assert audit(lengths_file, out, "--no-plots") == 0  # our own files: replaced freely
    capsys.readouterr()
    with open(out / "audit.md", "a") as fh:
        fh.write("my comment\n")
    assert audit(lengths_file, out, "--no-plots") == 2
    assert "audit.md exists and is changed since packing-theory wrote it" in one_line(capsys)
    assert "my comment" in (out / "audit.md").read_text()


@needs_plots
def test_stale_plots_are_removed(lengths_file: Path, tmp_path: Path) -> None:
    """Before the fix the previous run's PNGs survived a --no-plots run."""
    out = tmp_path / "rep"
    assert audit(lengths_file, out) == 0
    assert all((out / n).exists() for n in PLOT_FILES)
    assert audit(lengths_file, out, "--no-plots") == 0
    assert not any((out / n).exists() for n in PLOT_FILES)
    check = verify_report(out, names=REPORT_FILES)
    assert check.ok and set(check.files) == {"audit.html", "audit.json", "audit.md", "documents.csv"}


def test_a_symlinked_report_file_is_never_followed(lengths_file: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix the symlink's target was overwritten."""
    out = tmp_path / "rep"
    out.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("do not touch\n")
    (out / "audit.json").symlink_to(target)
    capsys.readouterr()
    assert audit(lengths_file, out, "--no-plots") == 2
    assert "audit.json exists and is a symlink" in one_line(capsys)
    assert audit(lengths_file, out, "--no-plots", "--force") == 0
    assert target.read_text() == "do not touch\n"
    assert not (out / "audit.json").is_symlink() and verify_report(out).ok


def test_unrelated_files_are_left_alone(lengths_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    out.mkdir()
    (out / "README.txt").write_text("mine\n")
    assert audit(lengths_file, out, "--no-plots") == 0
    assert (out / "README.txt").read_text() == "mine\n"


# --------------------------------------------------------------------------- the lock


def test_a_held_lock_fails_fast(lengths_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """The contender asks for the lock without waiting (``LOCK_NB``) and is refused at once: the check is
    on the flag, not on a clock (a blocking request fails the test instead of waiting for the holder)."""
    import fcntl

    import packing_theory.cli.audit as cli_audit

    out = tmp_path / "rep"
    with ReportWriter(out, names=REPORT_FILES, config={}) as holder:
        monkeypatch.setattr(cli_audit, "audit_corpus", lambda *a, **k: pytest.fail("ran while locked"))
        requests: list[int] = []
        real_flock = fcntl.flock

        def flock(fd: int, operation: int) -> None:
            requests.append(operation)
            if not operation & fcntl.LOCK_NB:
                pytest.fail(f"a blocking flock request ({operation}) would wait for the holder")
            real_flock(fd, operation)

        monkeypatch.setattr(fcntl, "flock", flock)
        assert audit(lengths_file, out, "--no-plots") == 2
        monkeypatch.setattr(fcntl, "flock", real_flock)
        assert requests, "the contender never asked for the lock"
        line = one_line(capsys)
        assert "is being written by another run" in line and holder.run_id in line
        with pytest.raises(ReportBusy):
            ReportWriter(out, names=REPORT_FILES, config={}).open()


def test_writer_api(tmp_path: Path) -> None:
    out = tmp_path / "w"
    with pytest.raises(ValueError, match="plain names"):
        ReportWriter(out, names=["../x"], config={})
    w = ReportWriter(out, names=["a.md", "b.json"], config={"x": 1}, tool="test")
    with pytest.raises(ValueError, match="open"):
        w.path("a.md")
    with w:
        with pytest.raises(ValueError, match="not a file of this report"):
            w.write_text("c.md", "no")
        w.write_text("a.md", f"run {w.run_id}\n")
        w.write_json("b.json", {"run": {"id": w.run_id}})
        assert not (out / "a.md").exists()  # staged, not visible before the commit
        paths = w.commit()
    assert sorted(p.name for p in paths) == ["a.md", "b.json"]
    manifest = json.loads((out / REPORT_MANIFEST_NAME).read_text())
    assert manifest["run_id"] == w.run_id and manifest["tool"] == "test" and set(manifest["files"]) == {
        "a.md", "b.json"}
    with ReportWriter(out, names=["a.md", "b.json"], config={"x": 1}) as w2:
        w2.write_text("a.md", f"run {w2.run_id}\n")
        w2.commit()
    assert not (out / "b.json").exists()  # ours, not rewritten: stale, removed
    assert verify_report(out, names=["a.md", "b.json"]).ok


def test_an_uncommitted_run_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "w"
    with ReportWriter(out, names=["a.md"], config={}) as w:
        w.write_text("a.md", f"run {w.run_id}\n")
        w.commit()
    before = (out / "a.md").read_text()
    with pytest.raises(RuntimeError), ReportWriter(out, names=["a.md"], config={}) as w:
        w.write_text("a.md", "half\n")
        raise RuntimeError("the computation failed")
    assert (out / "a.md").read_text() == before and verify_report(out).ok


def test_a_file_slipped_in_during_the_run_is_not_replaced(tmp_path: Path) -> None:
    out = tmp_path / "w"
    with ReportWriter(out, names=["a.md"], config={}) as w:
        w.write_text("a.md", "new\n")
        (out / "a.md").write_text("someone else's\n")
        with pytest.raises(ReportError, match="created or changed by something else during this run"):
            w.commit()
    assert (out / "a.md").read_text() == "someone else's\n"


# --------------------------------------------------------------------------- interrupts inside the commit


def test_an_interrupt_during_the_swap_is_delivered_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    out = tmp_path / "w"
    names = ["a.md", "b.md", "c.md"]
    real_replace = os.replace
    calls = []

    def replace_then_interrupt(src: Any, dst: Any) -> None:
        calls.append(dst)
        real_replace(src, dst)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)  # lands between the first and the second rename

    with ReportWriter(out, names=names, config={}) as w:
        for n in names:
            w.write_text(n, f"run {w.run_id}\n")
        monkeypatch.setattr(os, "replace", replace_then_interrupt)
        with pytest.raises(KeyboardInterrupt):
            w.commit()
        monkeypatch.undo()
    check = verify_report(out, names=names)
    assert check.ok and check.run_id == w.run_id and len(calls) == 4  # 3 files + the manifest


def test_a_kill_during_the_swap_is_completed_by_the_next_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """A SIGKILL between two renames (simulated): the journal lets the next run finish the swap."""
    out = tmp_path / "w"
    names = ["a.md", "b.md"]
    with ReportWriter(out, names=names, config={}) as old:
        for n in names:
            old.write_text(n, f"run {old.run_id}\n")
        old.commit()
    real_replace = os.replace

    class Killed(BaseException):
        pass

    def die_after_first(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        raise Killed

    w = ReportWriter(out, names=names, config={})
    w.open()
    for n in names:
        w.write_text(n, f"run {w.run_id}\n")
    monkeypatch.setattr(os, "replace", die_after_first)
    with pytest.raises(Killed):
        w.commit()
    monkeypatch.undo()
    assert w._lock is not None and w._lock._fd is not None
    os.close(w._lock._fd)  # the process died: the kernel releases the lock, nothing else is cleaned up
    assert not verify_report(out, names=names).ok  # mixed until recovered
    assert recover(out) == [f"completed the interrupted commit of run {w.run_id}"]
    check = verify_report(out, names=names)
    assert check.ok and check.run_id == w.run_id


# --------------------------------------------------------------------------- real processes and signals


def _audit_process(lengths: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "packing_theory.cli", "audit", "--lengths", str(lengths), "--out", str(out),
            "--capacity", "64", "--min-buffer", "40", "--refill", "16", "--rows", "1500",
            "--permutations", "1", "--no-progress", *extra]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.fixture()
def bigger_lengths(tmp_path: Path) -> Path:
    rng = np.random.default_rng(9)
    path = tmp_path / "bigger.npy"
    np.save(path, np.maximum(1, rng.lognormal(3.0, 1.3, 30_000)).astype(np.int64))
    return path


@needs_plots
@pytest.mark.slow  # five real audits per signal; the paused SIGKILLs of test_commands.py stay default
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_audits_leave_the_old_report_or_the_new_one(sig: int, bigger_lengths: Path,
                                                                tmp_path: Path) -> None:
    """Interrupts at spread-out moments, real processes: never a mixed or truncated report (a SIGKILL
    at chosen points of the commit, and a second run while one holds the directory, are in
    ``tests/reporting/test_commands.py`` for every report-writing command)."""
    out = tmp_path / "rep"
    base = _audit_process(bigger_lengths, out)
    assert base.wait(timeout=300) == 0
    t0 = time.perf_counter()
    full = _audit_process(bigger_lengths, out)
    assert full.wait(timeout=300) == 0
    duration = time.perf_counter() - t0
    outcomes = []
    for fraction in (0.45, 0.7, 0.95):  # mid-computation, plotting, around the swap
        old = verify_report(out, names=REPORT_FILES)
        assert old.ok
        proc = _audit_process(bigger_lengths, out)
        wait_until_caught(proc, signal.SIGTERM)  # inside main(): an interrupt is handled, not a traceback
        time.sleep(duration * fraction)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=300)
        # 3: interrupted inside main(); 0 or killed by the signal: it landed after main() returned
        assert proc.returncode in (0, 3, -sig), err
        assert "Traceback" not in err
        new = verify_report(out, names=REPORT_FILES)
        assert new.ok, new.problems
        assert run_ids(out) == {new.run_id}
        for name in ("audit.json",):
            json.loads((out / name).read_text())  # never truncated
        outcomes.append("old" if new.run_id == old.run_id else "new")
    assert set(outcomes) <= {"old", "new"}


# --------------------------------------------------------------------------- the lock file, the journal


def test_the_lock_file_is_gone_after_a_run_and_the_lock_stays_exclusive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A contender that opened the lock file just before its holder unlinked it must not believe it
    holds the directory (it would share it with the next run, which creates a new lock file)."""
    from packing_theory.reporting import DirectoryLock

    holder = DirectoryLock(str(tmp_path))
    holder.acquire("holder")
    holder._check()
    stale = os.open(tmp_path / LOCK_NAME, os.O_RDWR)  # the contender's open, racing the release
    holder.release()
    assert not (tmp_path / LOCK_NAME).exists()
    contender = DirectoryLock(str(tmp_path))
    opens = [stale]
    real_open = contender._open
    monkeypatch.setattr(contender, "_open", lambda: opens.pop() if opens else real_open())
    contender.acquire("contender")  # locks the unlinked file first, notices, retries on the path
    contender._check()
    assert (tmp_path / LOCK_NAME).read_text() == "contender\n"
    with pytest.raises(ReportBusy, match=r"\(contender\)"):
        DirectoryLock(str(tmp_path)).acquire("third")
    contender.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_killed_run_leaves_a_lock_file_that_the_next_run_takes(tmp_path: Path) -> None:
    out = tmp_path / "w"
    out.mkdir()
    (out / LOCK_NAME).write_text("pid 1, run dead\n")  # what a SIGKILL leaves: a file, no lock
    with ReportWriter(out, names=["a.md"], config={}) as w:
        assert f"run {w.run_id}" in (out / LOCK_NAME).read_text()
        w.write_text("a.md", f"run {w.run_id}\n")
        w.commit()
    assert not (out / LOCK_NAME).exists() and verify_report(out).ok


@pytest.mark.parametrize("stale", [
    {"../victim": ""}, {"/ABS": ""}, {"notes.txt": ""}, {"../victim": "SHA"}, {"sub/notes.txt": "SHA"},
    {".packing-theory-manifest.json": "SHA"},
])
def test_a_crafted_journal_deletes_nothing(stale: dict[str, str], tmp_path: Path) -> None:
    """Before the fix a staging journal naming ``../victim``, an absolute path or an unrelated file
    with an empty digest made the next run (or recover()) delete them."""
    from packing_theory.reporting.files import sha256_file

    out = tmp_path / "w"
    with ReportWriter(out, names=["a.md"], config={}) as w:
        w.write_text("a.md", f"run {w.run_id}\n")
        w.commit()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (out / "sub").mkdir()
    for p in (out / "notes.txt", out / "sub" / "notes.txt"):
        p.write_text("precious\n")
    digest = sha256_file(str(victim))[0]
    entries = {k.replace("/ABS", str(victim)): v.replace("SHA", digest) for k, v in stale.items()}
    staging = out / ".packing-theory-staging-crafted"
    staging.mkdir()
    manifest = json.loads((out / REPORT_MANIFEST_NAME).read_text())
    (staging / ".journal.json").write_text(json.dumps({"manifest": manifest, "stale": entries}))
    done = recover(out)
    assert len(done) == 1 and "journal is not valid" in done[0] and "nothing was applied" in done[0]
    assert victim.read_text() == "precious\n"
    assert (out / "notes.txt").read_text() == (out / "sub" / "notes.txt").read_text() == "precious\n"
    assert not staging.exists() and verify_report(out).ok


def test_a_journal_removes_only_files_that_still_hold_what_it_recorded(tmp_path: Path) -> None:
    """A stale report file edited after the journal was written is left in place."""
    out = tmp_path / "w"
    names = ["a.md", "b.md"]
    with ReportWriter(out, names=names, config={}) as w:
        for n in names:
            w.write_text(n, f"run {w.run_id}\n")
        w.commit()
    from packing_theory.reporting.journal import apply_journal, entry_digest, journal_problem

    staging = out / ".packing-theory-staging-x"
    staging.mkdir()
    manifest = json.loads((out / REPORT_MANIFEST_NAME).read_text())
    manifest["files"] = {"a.md": manifest["files"]["a.md"]}
    journal = {"manifest": manifest, "stale": {"b.md": entry_digest(str(out / "b.md"))}}
    assert journal_problem(journal) is None
    (out / "b.md").write_text("edited by hand\n")
    apply_journal(str(out), str(staging), journal)
    assert (out / "b.md").read_text() == "edited by hand\n"


def test_a_directory_holding_another_kind_of_report_is_refused(tmp_path: Path) -> None:
    """Before the fix a census into an audit report directory took over its manifest, so the next
    audit refused its own files."""
    out = tmp_path / "w"
    with ReportWriter(out, names=["audit.md"], config={}, tool="packing-theory audit") as w:
        w.write_text("audit.md", f"run {w.run_id}\n")
        w.commit()
    with pytest.raises(ReportError, match=r"holds another kind of report \(audit.md, written by "
                                          r"packing-theory audit\); choose another directory"):
        ReportWriter(out, names=["census.json"], config={}).open()
    assert verify_report(out, names=["audit.md"]).ok
    assert recover(out) == []  # recover() accepts any report


@pytest.mark.parametrize("outdir", ["", "a\x00b"])
def test_an_empty_or_nul_out_is_refused_at_once(outdir: str) -> None:
    with pytest.raises(ReportError, match="report directory must be a non-empty path"):
        ReportWriter(outdir, names=["a.md"], config={})


def test_a_full_disk_while_committing_leaves_the_old_report(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest and the journal are written before the first rename: no space for them, no swap."""
    from packing_theory.reporting import journal as journal_module

    out = tmp_path / "w"
    with ReportWriter(out, names=["a.md"], config={}) as old:
        old.write_text("a.md", f"run {old.run_id}\n")
        old.commit()
    real = journal_module.write_new
    calls: list[str] = []

    def no_space(path: str, data: bytes) -> None:
        calls.append(os.path.basename(path))
        if len(calls) == 2:  # the journal, after the staged manifest
            with open(path, "wb") as fh:
                fh.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(journal_module, "write_new", no_space)
    with pytest.raises(OSError, match="No space left"), ReportWriter(out, names=["a.md"], config={}) as w:
        w.write_text("a.md", f"run {w.run_id}\n")
        w.commit()
    assert calls == [REPORT_MANIFEST_NAME, ".journal.json"]
    check = verify_report(out, names=["a.md"])
    assert check.ok and check.run_id == old.run_id  # untouched, no staging directory left


def test_a_report_stays_apart_from_its_inputs(tmp_path: Path) -> None:
    from packing_theory.reporting.writer import inputs_problem

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.txt").write_text("x")
    out = tmp_path / "rep"
    with ReportWriter(out, names=["r.json"], config={}) as w:
        w.write_text("r.json", "{}")
        w.commit()
    assert inputs_problem(out, [data, data / "a.txt"], ["r.json"]) is None
    assert "is inside the input directory" in str(inputs_problem(data / "sub" / "rep", [data], ["r.json"]))
    assert "is the input directory" in str(inputs_problem(data, [data], ["r.json"]))
    assert "is the report's own r.json" in str(inputs_problem(out, [out / "r.json"], ["r.json"]))
    os.link(out / "r.json", tmp_path / "hard.json")  # a hard link is the same file
    assert "is the report's own r.json" in str(inputs_problem(out, [tmp_path / "hard.json"], ["r.json"]))
    (out / "parts").mkdir()
    (out / "parts" / "p.json").write_text("{}")
    assert "own parts" in str(inputs_problem(out, [out / "parts" / "p.json"], ["r.json"], owned=["parts"]))
    assert inputs_problem(tmp_path, [data / "a.txt"], ["r.json"]) is None  # an input below the report dir
    with pytest.raises(ReportError, match=r"is the report's own r\.json"), \
            ReportWriter(out, names=["r.json"], config={}, force=True, inputs=[out / "r.json"]):
        pass
