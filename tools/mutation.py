"""Mutation testing of the core subpackages (engine, invariant, audit): planted bugs and mutmut.

Usage (from the repository root, in an environment with the ``test`` and
``mutation`` extras)::

    python tools/mutation.py planted                 # the five planted weak-spot bugs: each must fail a test
    python tools/mutation.py run [TARGET ...]        # mutmut over the targets (default: every target)
    python tools/mutation.py report [--markdown]     # score per module and subpackage, and the survivors

``planted`` copies the package and the tests to a scratch directory, applies
one planted bug at a time (the five known weak spots) and runs the
module's own test files (each weak spot is pinned there by a hand-computed or brute-force test); it
fails unless every planted bug makes a test fail (and the unplanted copy
passes). It takes about a minute.

``run`` runs mutmut 3 once per *target* (one module and the test files that
exercise it; see :data:`TARGETS`) in its own work directory
``.mutation/<target>/`` (ignored by git). Work directories persist: a rerun
re-synchronises the sources and tests, and mutmut re-tests only the mutants
of functions whose code, or whose tests, changed. Hypothesis runs under the
``mutation`` profile of ``tests/conftest.py`` (20 derandomised examples), so a
verdict does not depend on a random draw. Set ``MUTATION_CHILDREN`` to the
number of parallel workers (default 2).

``report`` reads mutmut's result files and prints killed / total per module
and per subpackage, and the surviving mutants by name (``python -m mutmut show
NAME`` inside the target's work directory shows the diff). A mutant counts as
killed when a test failed or it timed out; ``no tests`` mutants (code no
selected test reaches) count as survivors.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
CHILDREN = int(os.environ.get("MUTATION_CHILDREN", "2"))


@dataclass(frozen=True)
class Target:
    """One mutmut run: the module mutated and the test files that exercise it."""

    name: str
    module: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()
    """Restrict the run to these functions (``Class.method`` or ``function``); empty: the whole module."""

    def patterns(self) -> list[str]:
        """mutmut name patterns of the mutants in scope (empty: all)."""
        dotted = self.module[:-3].replace("/", ".")
        out = []
        for f in self.functions:
            cls, _, meth = f.rpartition(".")
            sep = "\u01c1"  # mutmut's class separator in mutant names
            mangled = f"x{sep}{cls}{sep}{meth}" if cls else f"x_{meth}"
            out.append(f"{dotted}.{mangled}__mutmut_*")
        return out


TARGETS: tuple[Target, ...] = (
    Target("engine.policies", "packing_theory/engine/policies.py",
           ("tests/engine/test_policies.py", "tests/engine/test_refill.py", "tests/engine/test_engines.py",
            "tests/test_errors.py")),
    Target("invariant.monitor", "packing_theory/invariant/monitor.py",
           ("tests/invariant/test_monitor.py", "tests/invariant/test_protected.py")),
    Target("audit.population", "packing_theory/audit/population.py",
           ("tests/audit/test_population.py", "tests/audit/test_ledger.py")),
    Target("audit.accounting", "packing_theory/audit/accounting.py",
           ("tests/audit/test_ledger.py", "tests/engine/test_events.py"),
           ("ChunkAccounts._new_row", "ChunkAccounts._buffered_accounted", "ChunkAccounts._flush")),
    Target("audit.series", "packing_theory/audit/series.py",
           ("tests/audit/test_ledger.py", "tests/audit/test_stream.py"),
           ("SeriesSampler.sample_marks", "SeriesSampler.sample_batch", "SeriesSampler.thin")),
    Target("audit.ledger", "packing_theory/audit/ledger.py",
           ("tests/audit/test_ledger.py", "tests/engine/test_events.py"),
           ("Ledger._finish", "Ledger._protected_mass")),
)
"""The scoped targets: the modules holding the five known weak spots (for the ledger and its
accounting, the functions of the sampled series and the horizon: the whole modules take hours here)."""


@dataclass(frozen=True)
class Planted:
    """A deliberate bug: replace ``old`` by ``new`` in ``module``; ``tests`` must then fail."""

    name: str
    module: str
    old: str
    new: str
    tests: tuple[str, ...]


PLANTED: tuple[Planted, ...] = (
    Planted("segment-first chunk size", "packing_theory/engine/policies.py",
            "    text = capacity - 1\n", "    text = max(1, capacity - 2)\n",
            ("tests/engine/test_policies.py", "tests/engine/test_engines.py")),
    Planted("random-span window range", "packing_theory/engine/policies.py",
            "a = 1 + rng.randrange(length - m + 1)", "a = 1 + rng.randrange(length - m)",
            ("tests/engine/test_policies.py", "tests/engine/test_engines.py")),
    Planted("sampled buffered-mass series", "packing_theory/audit/accounting.py",
            "return (self._arrived_tokens + self._added_bos - self._emitted_tokens",
            "return (self._arrived_tokens - self._emitted_tokens",
            ("tests/audit/test_ledger.py",)),
    Planted("monitor end-of-stream check", "packing_theory/invariant/monitor.py",
            "        for v in protected_violations(ev.buffered, self.protected, capacity=self.capacity):\n",
            "        for v in ():\n",
            ("tests/invariant/test_monitor.py", "tests/invariant/test_protected.py")),
    Planted("evaluation population clipping", "packing_theory/audit/population.py",
            "k = min(first + n, targets) - first", "k = min(first + n, targets - 1) - first",
            ("tests/audit/test_population.py",)),
)


def _pytest(cwd: Path, tests: tuple[str, ...], profile: str) -> tuple[int, str]:
    env = {**os.environ, "HYPOTHESIS_PROFILE": profile, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
           "-o", "addopts=", "--rootdir", str(cwd), *tests]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()[-1:][0] if (
        proc.stdout + proc.stderr).strip() else ""


def _copy_tree(dst: Path) -> None:
    """Copy the package, its tests and what they read into ``dst``, rewriting only changed files."""
    for rel in ("packing_theory", "tests", "examples", "docs"):
        src = ROOT / rel
        for path in src.rglob("*"):
            if "__pycache__" in path.parts or path.is_dir():
                continue
            out = dst / path.relative_to(ROOT)
            data = path.read_bytes()
            if not out.exists() or out.read_bytes() != data:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
        for path in (dst / rel).rglob("*"):  # files removed from the repository
            if path.is_file() and "__pycache__" not in path.parts and not (
                    ROOT / path.relative_to(dst)).exists():
                path.unlink()


def planted() -> int:
    """Apply each planted bug in a scratch copy; every one must make a test fail."""
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pt-planted-") as tmp:
        scratch = Path(tmp)
        _copy_tree(scratch)
        where = "import packing_theory; print(packing_theory.__file__)"
        probe = subprocess.run([sys.executable, "-c", where], cwd=scratch, capture_output=True, text=True,
                               check=True).stdout.strip()
        if not probe.startswith(str(scratch)):
            print(f"the scratch copy is not the package imported ({probe}); aborting")
            return 2
        for bug in PLANTED:
            path = scratch / bug.module
            original = path.read_text()
            if original.count(bug.old) != 1:
                print(f"FAIL  {bug.name}: the code to mutate is not found exactly once in {bug.module}")
                failures += 1
                continue
            t0 = time.perf_counter()
            clean, _ = _pytest(scratch, bug.tests, "mutation")
            path.write_text(original.replace(bug.old, bug.new))
            try:
                code, last = _pytest(scratch, bug.tests, "mutation")
            finally:
                path.write_text(original)
            dt = time.perf_counter() - t0
            if clean != 0:
                print(f"FAIL  {bug.name}: the unplanted tests fail ({clean})")
                failures += 1
            elif code == 0:
                print(f"FAIL  {bug.name}: survived {' '.join(bug.tests)}")
                failures += 1
            else:
                print(f"ok    {bug.name}: killed ({last}) [{dt:.0f} s]")
    print(f"planted bugs killed: {len(PLANTED) - failures} / {len(PLANTED)}")
    return 1 if failures else 0


def _pyproject(target: Target) -> str:
    tests = ", ".join(json.dumps(t) for t in target.tests)
    return f"""[tool.pytest.ini_options]
markers = ["slow: longer property runs"]

[tool.mutmut]
source_paths = ["packing_theory"]
also_copy = ["examples/", "docs/"]
only_mutate = [{json.dumps(target.module)}]
pytest_add_cli_args_test_selection = [{tests}]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts="]
use_git_change_detection = false
timeout_multiplier = 2.0
timeout_constant = 3.0
"""


def _mutmut(work: Path, names: list[str]) -> int:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(CHILDREN), *names]
    return subprocess.run(cmd, cwd=work, env=env, check=False, stdout=subprocess.DEVNULL).returncode


def _in_scope(target: Target, name: str) -> bool:
    return not target.functions or any(fnmatch.fnmatch(name, p) for p in target.patterns())


def _pending(target: Target) -> list[str]:
    """What to pass to ``mutmut run``: nothing (every unjudged mutant), or the unjudged mutants in scope.

    mutmut re-runs every mutant it is given by name, so a scoped target passes
    only the names without a verdict (its patterns on the first run).
    """
    if not target.functions:
        return []
    verdicts = collect().get(target.module)
    if verdicts is None:
        return target.patterns()
    return [n for n, s in verdicts.items() if s == "not checked" and _in_scope(target, n)]


def run(names: list[str]) -> int:
    """mutmut over each named target (all by default), each in its own persistent work directory.

    First the mutants without a verdict (new, or in functions that changed), then
    the earlier survivors again, against the current tests.
    """
    chosen = [t for t in TARGETS if not names or t.name in names]
    unknown = sorted(set(names) - {t.name for t in TARGETS})
    if unknown:
        print(f"unknown targets {unknown}; choose from {[t.name for t in TARGETS]}")
        return 2
    status = 0
    for target in chosen:
        work = WORK / target.name
        work.mkdir(parents=True, exist_ok=True)
        _copy_tree(work)
        (work / "pyproject.toml").write_text(_pyproject(target))
        t0 = time.perf_counter()
        code = _mutmut(work, _pending(target))
        verdicts = {n: s for n, s in collect().get(target.module, {}).items() if _in_scope(target, n)}
        # survivors, and timeouts (confirmed as kills by a failing test, or not)
        survivors = [name for name, s in verdicts.items() if s in ("survived", "no tests", "timeout")]
        if code == 0 and survivors:
            _copy_tree(work)  # tests written while the first pass ran
            code = _mutmut(work, survivors)
        print(f"{target.name}: mutmut exited {code} after {time.perf_counter() - t0:.0f} s")
        status = status or code
    return status


_STATUS = {1: "killed", 3: "killed", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout",
           255: "timeout", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped"}


def collect() -> dict[str, dict[str, str]]:
    """``module -> {mutant name: status}`` from every target's result files."""
    out: dict[str, dict[str, str]] = {}
    for target in TARGETS:
        meta = WORK / target.name / "mutants" / (target.module + ".meta")
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        out[target.module] = {k: _STATUS.get(v, "not checked" if v is None else f"exit {v}")
                              for k, v in codes.items()}
    return out


def report(markdown: bool) -> int:
    """Print killed / checked per module and subpackage (timeouts shown apart), and the survivors."""
    results = collect()
    if not results:
        print("no mutmut results yet: run `python tools/mutation.py run` first")
        return 1
    per_pkg: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    lines = []
    survivors = []
    scope = {t.module: t for t in TARGETS}
    for module, statuses in sorted(results.items()):
        judged = {n: s for n, s in statuses.items()
                  if _in_scope(scope[module], n) and s not in ("not checked", "skipped")}
        failed = sum(s == "killed" for s in judged.values())
        timeout = sum(s == "timeout" for s in judged.values())
        pkg = module.split("/")[1]
        for i, v in enumerate((failed, timeout, len(judged))):
            per_pkg[pkg][i] += v
        lines.append((module, failed, timeout, len(judged), len(statuses)))
        survivors += [(n, s) for n, s in sorted(judged.items()) if s not in ("killed", "timeout")]

    def score(f: int, t: int, c: int) -> str:
        return f"{(f + t) / c:.1%}" if c else "-"

    if markdown:
        print("| module | killed by a test | timeout | checked | generated | score |")
        print("|---|---:|---:|---:|---:|---:|")
        for module, f, t, c, n in lines:
            print(f"| `{module}` | {f} | {t} | {c} | {n} | {score(f, t, c)} |")
        for pkg, (f, t, c) in sorted(per_pkg.items()):
            print(f"| **{pkg}** | {f} | {t} | {c} | | {score(f, t, c)} |")
    else:
        for module, f, t, c, n in lines:
            print(f"{module:40s} killed {f:5d} + timeout {t:4d} / {c:5d} checked ({n} generated)"
                  f"  {score(f, t, c)}")
        for pkg, (f, t, c) in sorted(per_pkg.items()):
            print(f"{pkg:40s} killed {f:5d} + timeout {t:4d} / {c:5d} checked  {score(f, t, c)}")
    print(f"\nsurvivors ({len(survivors)}):")
    for name, s in survivors:
        print(f"  {name}  [{s}]")
    return 0


def main(argv: list[str]) -> int:
    """Dispatch the subcommands."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "planted":
        return planted()
    if command == "run":
        return run(rest)
    if command == "report":
        return report("--markdown" in rest)
    if command == "clean":
        shutil.rmtree(WORK, ignore_errors=True)
        return 0
    print(f"unknown command {command!r}; see --help")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
