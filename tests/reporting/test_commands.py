"""Every report-writing command — audit, compare, evaluate, census — in real processes.

Each command must: refuse a second concurrent run into its ``--out`` (exit 2,
before computing), never write through a symlink or outside ``--out``, never
replace a file it did not write without ``--force``, check ``--out`` before
computing, leave no stale PNG after ``--no-plots``, remove its lock file after
a run, and leave either the previous complete report or the new one after a
full disk or a SIGKILL.

No test here depends on timing: a run is paused at a known point (inside its
commit, or between two renames of the swap) by a harness that patches the
library in the child process, and the test waits for a file the child writes
when it gets there.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.distributed.census import CENSUS_FILES
from packing_theory.evaluation.report import REPORT_FILES as EVALUATE_FILES
from packing_theory.orchestration import AUDIT_FILES, COMPARE_FILES
from packing_theory.reporting import (
    LOCK_NAME,
    REPORT_MANIFEST_NAME,
    matplotlib_available,
    recover,
    verify_report,
)

ROOT = str(Path(pt.__file__).resolve().parent.parent)

HARNESS = r"""
import importlib, json, os, sys, time
spec = json.loads(os.environ["PT_HARNESS"])

def wait_for_go():
    open(spec["ready"], "w").close()
    deadline = time.monotonic() + 300
    while not os.path.exists(spec["go"]) and time.monotonic() < deadline:
        time.sleep(0.02)

if spec.get("pause") == "commit":  # staged, not yet swapped: the lock is held
    from packing_theory.reporting import writer
    real_commit = writer.ReportWriter.commit
    def commit(self):
        wait_for_go()
        return real_commit(self)
    writer.ReportWriter.commit = commit
if spec.get("pause") == "swap":  # after the first report file was renamed into place
    real_replace = os.replace
    def replace(src, dst):
        real_replace(src, dst)
        if ".packing-theory-staging-" in os.fspath(src) and not os.fspath(dst).endswith("manifest.json"):
            wait_for_go()
    os.replace = replace
for target in spec.get("forbid", ()):  # the computation must not start
    module, attr = target.split(":")
    def forbidden(*args, _target=target, **kwargs):
        with open(spec["marker"], "a") as fh:
            fh.write(_target + "\n")
        raise RuntimeError("computed before --out was checked")
    setattr(importlib.import_module(module), attr, forbidden)
import packing_theory.cli
sys.exit(packing_theory.cli.main(spec["argv"]))
"""


@dataclass(frozen=True)
class Command:
    """How one command is run here, and what its report holds."""

    name: str
    argv: Callable[[Path], list[str]]  # inputs directory -> argv without --out
    names: tuple[str, ...]  # every file its report may hold
    user_file: str  # a report-named file a user might own
    computation: str  # "module:attr" that starts the work (must not run before --out is checked)

    @property
    def main_json(self) -> str:
        return f"{self.name}.json"

    @property
    def plots(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if n.endswith(".png"))


def _lengths(d: Path) -> str:
    path = d / "lengths.npy"
    if not path.exists():
        rng = np.random.default_rng(4)
        np.save(path, np.maximum(1, rng.lognormal(2.6, 1.2, 2000)).astype(np.int64))
    return str(path)


def _evaluation(d: Path) -> list[str]:
    """An evaluation shard, token byte lengths and two models (``evalmodels.py`` in ``d``, on the path)."""
    from packing_theory.corpus import write_shard

    rng = np.random.default_rng(3)
    docs = []
    for _ in range(60):
        doc = rng.integers(1, 16, size=int(rng.choice([rng.integers(2, 120), rng.integers(130, 500)])))
        doc[0] = 0
        docs.append(doc.tolist())
    write_shard(d / "eval.bin", docs, vocab=16)
    np.save(d / "tb.npy", np.r_[0, 1 + np.arange(15) % 3])
    (d / "evalmodels.py").write_text(
        "import numpy as np\n"
        "_P = np.r_[1e-6, np.full(15, (1 - 1e-6) / 15)]\n"
        "_Q = np.r_[1e-6, np.linspace(1, 2, 15) / np.linspace(1, 2, 15).sum() * (1 - 1e-6)]\n"
        "def flat(input_ids, segment_ids, /):\n    return -np.log(_P[input_ids[:, 1:]])\n"
        "def tilted(input_ids, segment_ids, /):\n    return -np.log(_Q[input_ids[:, 1:]])\n")
    return ["evaluate", "--sources", str(d / "eval.bin"), "--token-bytes", str(d / "tb.npy"),
            "--model", "flat=evalmodels:flat", "--model", "tilted=evalmodels:tilted", "--capacity", "129",
            "--context", "64", "--stride", "16", "--natural-targets", "32", "--replicates", "50",
            "--family-strata", "129–512"]


def _texts(d: Path) -> list[str]:
    paths = [d / "a.txt", d / "b.txt"]
    paths[0].write_text("hello world\nsecond document here\n")
    paths[1].write_text("x\ny y\n")
    return [str(p) for p in paths]


COMMANDS = {c.name: c for c in (
    Command("audit", lambda d: ["audit", "--lengths", _lengths(d), "--capacity", "32", "--min-buffer", "20",
                                "--refill", "8", "--rows", "200", "--permutations", "2", "--no-progress",
                                "--policy", "discard,trl-bfd"],
            AUDIT_FILES, "audit.md", "packing_theory.cli.audit:audit_corpus"),
    Command("compare", lambda d: ["compare", "--lengths", _lengths(d), "--capacity", "32",
                                  "--min-buffer", "4", "--refill", "4", "--policy", "discard,trl-bfd"],
            COMPARE_FILES, "compare.md", "packing_theory.cli.compare:compare_corpus"),
    Command("evaluate", _evaluation, EVALUATE_FILES, "evaluate.md",
            "packing_theory.evaluation.pipeline:evaluate_models"),
    Command("census", lambda d: ["census", "--text", *_texts(d), "--per-line", "--workers", "1"],
            CENSUS_FILES, "lengths.npy", "packing_theory.distributed.census:open_runner"),
)}
NAMES = sorted(COMMANDS)
WITH_PLOTS = [n for n in NAMES if COMMANDS[n].plots]
# The crash tests (SIGKILL, full disk) exercise the writer every command shares; the default run kills
# audit, the slow step (CI) every command. The refusals are each command's own code: every command, always.
AUDIT_DEFAULT = [pytest.param(n, marks=() if n == "audit" else pytest.mark.slow) for n in NAMES]
needs_plots = pytest.mark.skipif(not matplotlib_available(), reason="matplotlib (plots extra) missing")


def _env(inputs: Path, spec: dict[str, Any] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, str(inputs), env.get("PYTHONPATH", "")])  # inputs: models
    if spec is not None:
        env["PT_HARNESS"] = json.dumps(spec)
    return env


def run(argv: list[str], inputs: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a fresh process (no patch)."""
    # cwd: not the repository, whose packing_theory ``-m`` would import before ROOT's
    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=_env(inputs), cwd=inputs, timeout=600)


def harness(argv: list[str], tmp: Path, inputs: Path, *, cwd: Path | None = None,
            **spec: Any) -> subprocess.Popen[str]:
    """The command in a fresh process with the library patched as ``spec`` says (see ``HARNESS``);
    its pause and marker files are in ``tmp``."""
    spec = {"argv": argv, "ready": str(tmp / "ready"), "go": str(tmp / "go"), "marker": str(tmp / "marker"),
            **spec}
    for name in ("ready", "go"):
        Path(spec[name]).unlink(missing_ok=True)
    return subprocess.Popen([sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(inputs, spec), cwd=cwd or tmp)


def wait_ready(proc: subprocess.Popen[str], tmp: Path) -> None:
    """Until the paused child says it got there (or it died: then fail with its output)."""
    deadline = time.monotonic() + 300
    while not (tmp / "ready").exists():
        if proc.poll() is not None:
            pytest.fail(f"the paused run exited {proc.returncode} first: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the paused run never reached its pause point")
        time.sleep(0.02)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def check_one_run(out: Path, cmd: Command) -> str:
    """``out`` holds one complete run: every file intact, carrying its id; no lock left. The run id."""
    check = verify_report(out, names=cmd.names)
    assert check.ok, check.problems
    assert check.run_id is not None
    assert json.loads((out / cmd.main_json).read_text())["run"]["id"] == check.run_id
    assert not (out / LOCK_NAME).exists()
    return check.run_id


def snapshot(d: Path, skip: Path) -> dict[str, bytes]:
    """Every file under ``d`` except those under ``skip``, with its content."""
    return {str(p): p.read_bytes() for p in d.rglob("*") if p.is_file() and skip not in p.parents}


@pytest.fixture()
def inputs(tmp_path: Path) -> Path:
    d = tmp_path / "inputs"
    d.mkdir()
    return d


# --------------------------------------------------------------------------- one run at a time


@pytest.mark.parametrize("name", NAMES)
def test_a_second_run_into_the_same_out_is_refused_while_the_first_holds_it(name: str, inputs: Path,
                                                                            tmp_path: Path) -> None:
    """Before the fix two concurrent compare (or evaluate) runs both exited 0 into one directory."""
    cmd = COMMANDS[name]
    out = tmp_path / "rep"
    argv = [*cmd.argv(inputs), "--out", str(out)]
    first = harness(argv, tmp_path, inputs, pause="commit")
    try:
        wait_ready(first, tmp_path)
        assert (out / LOCK_NAME).exists()  # honoured while running
        assert f"pid {first.pid}" in (out / LOCK_NAME).read_text()
        other = tmp_path / "second"
        other.mkdir()
        second = harness(argv, other, inputs, forbid=[cmd.computation])  # a real run, told never to compute
        _, err = second.communicate(timeout=300)
        assert second.returncode == 2, err
        assert "is being written by another run" in one_line(err) and f"pid {first.pid}" in err
        assert not (other / "marker").exists()  # refused before computing
    finally:
        (tmp_path / "go").touch()
        _, err1 = first.communicate(timeout=300)
    assert first.returncode == 0, err1
    check_one_run(out, cmd)  # the first run's report, whole; its lock file removed


# --------------------------------------------------------------------------- --out checked first


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["empty", "a file", "below a file", "a report file is a directory"])
def test_a_bad_out_is_refused_before_computing(name: str, kind: str, inputs: Path, tmp_path: Path) -> None:
    """Before the fix compare and evaluate found a bad --out only after the computation, and
    ``--out ''`` wrote into the current directory."""
    cmd = COMMANDS[name]
    plain = tmp_path / "plain-file"
    plain.write_text("x")
    out = {"empty": "", "a file": str(plain), "below a file": str(plain / "sub"),
           "a report file is a directory": str(tmp_path / "rep")}[kind]
    if kind == "a report file is a directory":
        (tmp_path / "rep" / cmd.main_json).mkdir(parents=True)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = harness([*cmd.argv(inputs), "--out", out], tmp_path, inputs, cwd=cwd, forbid=[cmd.computation])
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    line = one_line(err)
    assert repr(out) in line or str(plain) in line
    assert not (tmp_path / "marker").exists()
    assert plain.read_text() == "x"
    assert not list(cwd.iterdir())


# --------------------------------------------------------------------------- not ours, not followed


@pytest.mark.parametrize("name", NAMES)
def test_a_symlinked_report_file_is_never_followed(name: str, inputs: Path, tmp_path: Path) -> None:
    """Before the fix ``compare.json -> ../victim`` overwrote the victim outside --out."""
    cmd = COMMANDS[name]
    out = tmp_path / "rep"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("do not touch\n")
    (out / cmd.main_json).symlink_to(Path("..") / "victim")
    argv = [*cmd.argv(inputs), "--out", str(out), *(["--no-plots"] if cmd.plots else [])]
    before = snapshot(tmp_path, out)
    proc = run(argv, inputs)
    assert proc.returncode == 2, proc.stderr
    assert f"{cmd.main_json} exists and is a symlink; pass --force" in one_line(proc.stderr)
    proc = run([*argv, "--force"], inputs)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "do not touch\n"
    assert not (out / cmd.main_json).is_symlink()
    check_one_run(out, cmd)
    assert snapshot(tmp_path, out) == before  # nothing written outside --out


@pytest.mark.parametrize("name", NAMES)
def test_a_file_it_did_not_write_is_kept_without_force(name: str, inputs: Path, tmp_path: Path) -> None:
    """Before the fix a user's own compare.md / evaluate.md was overwritten without a word."""
    cmd = COMMANDS[name]
    out = tmp_path / "rep"
    out.mkdir()
    (out / cmd.user_file).write_bytes(b"my notes\n")
    (out / "README.txt").write_text("mine\n")
    argv = [*cmd.argv(inputs), "--out", str(out), *(["--no-plots"] if cmd.plots else [])]
    proc = run(argv, inputs)
    assert proc.returncode == 2, proc.stderr
    assert (f"{cmd.user_file} exists and is not written by packing-theory; pass --force"
            in one_line(proc.stderr))
    assert (out / cmd.user_file).read_bytes() == b"my notes\n"
    proc = run([*argv, "--force"], inputs)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # without --json nothing on standard output
    assert (out / cmd.user_file).read_bytes() != b"my notes\n"
    first = check_one_run(out, cmd)
    proc = run([*argv, "--json"], inputs)  # its own files: replaced freely
    assert proc.returncode == 0, proc.stderr
    second = check_one_run(out, cmd)
    assert second != first
    assert (out / "README.txt").read_text() == "mine\n"  # not a report file: left alone
    # one line at the end, naming the report (compare used to print its whole Markdown); --json: the JSON
    line = one_line(proc.stderr)
    assert line.startswith(f"{name}: ") and f"wrote {out}/" in line and line.endswith(f"(run {second})")
    assert json.loads(proc.stdout)["run"]["id"] == second


@needs_plots
@pytest.mark.parametrize("name", WITH_PLOTS)
def test_no_plots_leaves_no_stale_png(name: str, inputs: Path, tmp_path: Path) -> None:
    """Before the fix a --no-plots compare left the previous run's PNGs beside the new JSON."""
    cmd = COMMANDS[name]
    out = tmp_path / "rep"
    proc = run([*cmd.argv(inputs), "--out", str(out)], inputs)
    assert proc.returncode == 0, proc.stderr
    assert any((out / n).exists() for n in cmd.plots)
    check_one_run(out, cmd)
    proc = run([*cmd.argv(inputs), "--out", str(out), "--no-plots"], inputs)
    assert proc.returncode == 0, proc.stderr
    assert not [n for n in cmd.plots if (out / n).exists()]
    check_one_run(out, cmd)


# --------------------------------------------------------------------------- SIGKILL


@pytest.mark.parametrize("name", AUDIT_DEFAULT)
@pytest.mark.parametrize("where", ["commit", "swap"])
def test_a_sigkill_leaves_the_old_report_or_the_new_one(name: str, where: str, inputs: Path,
                                                        tmp_path: Path) -> None:
    """Killed with everything staged (old report stays) or between two renames of the swap (the
    journal completes it): never a mixed or truncated report once recovered."""
    cmd = COMMANDS[name]
    out = tmp_path / "rep"
    argv = [*cmd.argv(inputs), "--out", str(out), *(["--no-plots"] if cmd.plots else [])]
    proc = run(argv, inputs)
    assert proc.returncode == 0, proc.stderr
    old = check_one_run(out, cmd)
    victim = harness(argv, tmp_path, inputs, pause=where)
    wait_ready(victim, tmp_path)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)
    for name_ in cmd.names:  # whatever is there is complete
        if name_.endswith(".json") and (out / name_).exists():
            json.loads((out / name_).read_text())
    check = verify_report(out, names=cmd.names)
    if where == "commit":  # nothing swapped: the old files, beside the dead run's staging directory
        assert check.run_id == old
        assert [p for p in check.problems if "staging directory" not in p] == []
    else:  # half swapped: the manifest still names the old run, the files disagree
        assert not check.ok
    done = recover(out)
    assert len(done) == 1 and ("removed" if where == "commit" else "completed") in done[0]
    new = check_one_run(out, cmd)
    assert (new == old) == (where == "commit")
    proc = run(argv, inputs)  # and the next run works as usual
    assert proc.returncode == 0, proc.stderr
    assert check_one_run(out, cmd) not in (old, new)


# --------------------------------------------------------------------------- a full disk


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path, free_pages: int) -> Path:
    """Fill ``disk`` completely, then give back ``free_pages`` pages of 4 KiB."""
    filler = disk / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - free_pages * 4096))
    return filler


@pytest.mark.slow  # five runs of each command on a filled tmpfs; the in-process ENOSPC test of
# tests/reporting/test_writer.py stays in the default run
@pytest.mark.parametrize("name", NAMES)
def test_a_full_disk_leaves_the_old_report_whole(name: str, inputs: Path, tmp_path: Path) -> None:
    """A tmpfs filled to leave half the report's pages, or about all of them (the data files fit, then
    the manifest, then the journal): the previous complete report, or the new one — never a truncated
    file (before the fix compare left 4 KB of invalid JSON)."""
    cmd = COMMANDS[name]
    with tmpfs(tmp_path / "disk", "4m") as disk:
        out = disk / "rep"
        argv = [*cmd.argv(inputs), "--out", str(out)]
        proc = run(argv, inputs)
        assert proc.returncode == 0, proc.stderr
        current = check_one_run(out, cmd)
        manifest = json.loads((out / REPORT_MANIFEST_NAME).read_text())
        pages = sum(-(-f["bytes"] // 4096) for f in manifest["files"].values()) + 1
        for free in sorted({pages // 2, pages, pages + 2}):
            filler = fill(disk, free)
            proc = run(argv, inputs)
            filler.unlink()
            assert proc.returncode in (0, 3), proc.stderr
            if proc.returncode == 3:
                assert "could not complete" in one_line(proc.stderr) and "No space left" in proc.stderr
                assert check_one_run(out, cmd) == current  # untouched
            else:
                current = check_one_run(out, cmd)
            assert not [e for e in os.listdir(out) if e.startswith(".packing-theory-staging")]
        proc = run(argv, inputs)
        assert proc.returncode == 0, proc.stderr
        assert check_one_run(out, cmd) != current
