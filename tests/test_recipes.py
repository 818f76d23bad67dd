"""CONTRIBUTING.md's recipes are true: a new streaming policy and a new peer, added to a copy of the package
exactly as the recipes say and nowhere else, are known to every command.

Each test copies ``packing_theory/`` into a temporary directory, makes the recipe's edits to the copy
(the worked examples are read from CONTRIBUTING.md itself), and runs a check script in a fresh process
whose ``sys.path`` starts with the copy: the registry, ``policies``, ``replay``, ``check``, ``compare``
and ``audit`` on the new packer, and, for the policy, the fast engine against the reference and the
compiled engine's clean refusal. If a file outside the recipe had to change (a list of policies written
out somewhere, a flag to declare), the new packer is missing or broken there and the script fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow  # a copy of the package and a fresh interpreter each (about 10 s)


def _code_after(heading: str) -> str:
    start = CONTRIBUTING.index("```python\n", CONTRIBUTING.index(heading)) + len("```python\n")
    return CONTRIBUTING[start : CONTRIBUTING.index("```\n", start)]


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "src" / "packing_theory"
    shutil.copytree(ROOT / "packing_theory", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _run(tmp_path: Path, script: str) -> dict[str, object]:
    env_path = str(tmp_path / "src")
    code = f"import sys; sys.path.insert(0, {env_path!r})\n" + textwrap.dedent(script)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


CHECKS = """
import contextlib, io, json, os
import numpy as np
import packing_theory
assert packing_theory.__file__.startswith({src!r}), packing_theory.__file__
from packing_theory.cli import main
from packing_theory.registry import build_packer, entry, names

NAME = {name!r}
lengths = np.array([5, 3, 90, 2, 7, 1, 40, 6, 4, 33, 8, 2] * 6, dtype=np.int64)
np.save("l.npy", lengths)
done = {{"registered": NAME in names(), "engines": list(entry(NAME).engines)}}

def run(*argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()

code, out, err = run("policies", "--json")
done["policies"] = code == 0 and any(r["policy"] == NAME for r in json.loads(out))
code, out, err = run("replay", "--lengths", "l.npy", "--policy", NAME, "--capacity", "16", "--json")
done["replay"] = (code, json.loads(out)["identity_holds"] if code == 0 else err)
code, out, err = run("check", "--lengths", "l.npy", "--policy", NAME, "--capacity", "16", "--json")
done["check"] = (code, err)
code, out, err = run("compare", "--lengths", "l.npy", "--policy", "discard," + NAME, "--capacity", "16",
                     "--min-buffer", "2", "--refill", "1", "--no-plots", "--out", "cmp")
packers = json.load(open("cmp/compare.json"))["packers"] if code == 0 else []
done["compare"] = (code, [p["packer"] for p in packers], err)
code, out, err = run("audit", "--lengths", "l.npy", "--policy", "discard," + NAME, "--capacity", "16",
                     "--min-buffer", "2", "--refill", "1", "--permutations", "0", "--no-plots",
                     "--out", "aud")
packers = json.load(open("aud/audit.json"))["packers"] if code == 0 else []
done["audit"] = (code, [p["packer"] for p in packers], err)
"""


def test_the_policy_recipe_touches_one_file_of_the_package(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    policies = pkg / "engine" / "policies.py"
    text = policies.read_text(encoding="utf-8")
    declaration = _code_after("### Worked example: a policy")
    name = declaration.split('"')[1]
    # the recipe's two edits: the name in the Policy literal, the declaration in STREAMING_POLICIES
    literal = text.index("Policy = Literal[")
    text = text[:literal] + f'Policy = Literal["{name}", ' + text[literal + len("Policy = Literal["):]
    end = text.index(')}\n"""Every streaming policy')
    text = text[:end].rstrip() + "\n" + declaration.rstrip() + "\n" + text[end:]
    policies.write_text(text, encoding="utf-8")
    done = _run(tmp_path, CHECKS.format(src=str(tmp_path / "src"), name=name) + """
from packing_theory import Packer, PackerConfig, ReferencePacker
from packing_theory.errors import InputError
rng = np.random.default_rng(0)
same = True
for _ in range(20):
    ls = rng.integers(1, 40, int(rng.integers(1, 60))).tolist()
    cfg = PackerConfig(capacity=16, min_buffer=3, refill=2, policy=NAME)
    same &= list(Packer(cfg).events(ls)) == list(ReferencePacker(cfg).events(ls))
done["fast_equals_reference"] = same
try:
    build_packer(NAME, capacity=16, engine="compiled")
    done["compiled"] = "built"
except InputError as exc:
    done["compiled"] = str(exc)
code, out, err = run("replay", "--lengths", "l.npy", "--policy", NAME, "--engine", "compiled")
done["replay_compiled"] = (code, err)
print(json.dumps(done))
""")
    assert done["registered"] and done["policies"]
    assert done["engines"] == ["fast", "reference"]  # no kernel branch: the compiled engine is not listed
    assert done["replay"] == [0, True]
    assert done["check"][0] in (0, 1), done["check"]  # out of the family: checked or not applicable, no crash
    assert done["compare"][:2] == [0, ["discard", name]], done["compare"]
    assert done["audit"][:2] == [0, ["discard", name]], done["audit"]
    assert done["fast_equals_reference"]
    assert f"policy '{name}' runs on the engines fast, reference" in str(done["compiled"])
    assert done["replay_compiled"][0] == 2 and "fast, reference" in done["replay_compiled"][1]


def test_the_peer_recipe_touches_two_files_of_the_package(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    module = "toy_nextfit"
    (pkg / "peers" / f"{module}.py").write_text(_code_after("### Worked example: a next-fit peer"),
                                                encoding="utf-8")
    init = pkg / "peers" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    start = text.index("PEER_MODULES: tuple[str, ...] = (")
    close = text.index(")", start + len("PEER_MODULES: tuple[str, ...] = ("))
    text = text[:close].rstrip().rstrip(",") + f', "{module}"' + text[close:]
    init.write_text(text, encoding="utf-8")
    done = _run(tmp_path, CHECKS.format(src=str(tmp_path / "src"), name="toy-next_fit") + """
code, out, err = run("replay", "--lengths", "l.npy", "--policy", NAME, "--capacity", "16",
                     "--peer-option", NAME + ":long_documents=raise")
done["refusal"] = (code, err)
print(json.dumps(done))
""")
    assert done["registered"] and done["policies"] and done["engines"] == []
    assert done["replay"] == [0, True]
    assert done["check"][0] == 0, done["check"]
    assert done["compare"][:2] == [0, ["discard", "toy-next_fit"]], done["compare"]
    assert done["audit"][:2] == [0, ["discard", "toy-next_fit"]], done["audit"]
    assert done["refusal"][0] == 2 and "long_documents='raise'" in done["refusal"][1]
