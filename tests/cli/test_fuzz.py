"""Fuzzing the command line in-process: corrupted inputs and option combinations.

Every outcome must be exit status 0, 1 or 2 with no traceback (a status-2
message is one line), and every successful run must satisfy the mass
identity. Targets: ``.npy`` files (valid, hand-made headers, byte-level
corruption), seed-002 token shards, the report manifest and an interrupted
run's staging directory, plain text, and option combinations of ``replay``,
``check``, ``bounds`` and ``audit``.

The whole module is marked ``slow``: ``python -m pytest -m slow`` (CI's slow step) runs it.
Sizes: ``FUZZ_EXAMPLES`` inputs per target in CI; ``PACKING_THEORY_SLOW=1``
multiplies them by 10. Set ``PACKING_THEORY_FUZZ_REPORT=path`` to write the
number of inputs each target ran (``docs/reliability.rst``, "The fuzz suite"; in one process:
``-p no:xdist``).

A replay without ``--rows``/``--targets`` runs until the stream is spent,
which for a ``continue`` replay of a document of 2**62 tokens is 2**62 / R
rows: the fuzz always passes a small budget, since it looks for crashes, not
for long runs that were asked for.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packing_theory.cli import main
from packing_theory.corpus import write_shard
from packing_theory.reporting import REPORT_MANIFEST_NAME
from packing_theory.testing import scaled_examples

# A search for crashes (about 700 command runs in-process, ~55 s): CI's slow step runs it
pytestmark = pytest.mark.slow

SLOW = os.environ.get("PACKING_THEORY_SLOW") == "1"
FUZZ_EXAMPLES = {"npy": 120, "npy_header": 120, "shards": 100, "manifest": 50, "text": 80, "options": 200}
COUNTS: Counter[str] = Counter()


def fuzz(target: str) -> Any:
    n = scaled_examples(FUZZ_EXAMPLES[target]) * (10 if SLOW else 1)
    return settings(max_examples=n, deadline=None, derandomize=not SLOW, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    path = os.environ.get("PACKING_THEORY_FUZZ_REPORT")
    if path and os.environ.get("PYTEST_XDIST_WORKER"):  # each worker would overwrite the others' counts
        pytest.fail("PACKING_THEORY_FUZZ_REPORT counts the inputs of one process: run with -p no:xdist")
    yield
    if path:
        Path(path).write_text(json.dumps(dict(sorted(COUNTS.items())), indent=2) + "\n")


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    COUNTS[f"{argv[0]} exit {status}"] += 1
    return status, out.getvalue(), err.getvalue()


def assert_contract(status: int, err: str, argv: list[str]) -> None:
    assert status in (0, 1, 2), (status, argv, err)
    assert "Traceback" not in err, (argv, err)
    if status == 2:
        lines = [ln for ln in err.strip().splitlines() if ln]
        assert len(lines) == 1, (argv, err)
        assert ": error:" in lines[0], (argv, err)


def assert_replay_identity(out: str) -> None:
    s = json.loads(out)
    assert s["identity_holds"] is True
    assert s["consumed_tokens"] + s["added_bos_tokens"] == (
        s["emitted_tokens"] + s["discarded_tokens"] + s["filtered_tokens"] + s["buffered_tokens"])


def assert_audit_identity(out: str) -> None:
    doc = json.loads(out)
    for p in doc["packers"]:
        m = p["mass"]
        assert m["identity_holds"] is True
        assert m["arrived_tokens"] + m["added_bos"] == (
            m["emitted_tokens"] + m["discarded_tokens"] + m["filtered_tokens"] + m["buffered_tokens"])
        assert p["sources"]["conservation_violations"] == 0


REPLAY = ["--capacity", "64", "--min-buffer", "8", "--refill", "4", "--rows", "60"]
AUDIT = ["--capacity", "64", "--min-buffer", "8", "--refill", "4", "--rows", "60", "--permutations", "1",
         "--no-plots", "--no-progress", "--json"]
EVAL = ("--eval-targets", "630")  # only with an evaluation stream: alone it is refused (exit 2)


def drive(kind: str, path: str, workdir: str, extra: tuple[str, ...] = ()) -> None:
    """Run the commands that read ``path`` (a ``--lengths`` file or a shard) and check the contract."""
    runs: list[list[str]]
    audit_extra = (*extra, *EVAL) if any(a.startswith("--eval-") for a in extra) else extra
    if kind == "lengths":
        runs = [["replay", "--lengths", path, *REPLAY, "--json", *extra],
                ["check", "--lengths", path, *REPLAY, "--json", *extra],
                ["bounds", "--lengths", path, "--json"],
                ["audit", "--lengths", path, "--out", os.path.join(workdir, "o"), *AUDIT, *audit_extra]]
    else:
        runs = [["audit", f"--{kind}", path, "--out", os.path.join(workdir, "o"), *AUDIT, *audit_extra]]
    for argv in runs:
        status, out, err = run_cli(argv)
        assert_contract(status, err, argv)
        if status == 0 and argv[0] == "replay":
            assert_replay_identity(out)
        if status in (0, 1) and argv[0] == "audit":
            assert_audit_identity(out)


# --------------------------------------------------------------------------- byte-level corruption


@st.composite
def corrupted(draw: st.DrawFn, base: bytes) -> bytes:
    """``base`` with up to three edits: truncation, bit flips, overwritten / inserted / appended bytes."""
    data = bytearray(base)
    n_edits = draw(st.sampled_from([0, 0, 1, 1, 2, 3]))  # a third of the inputs stay intact
    for op in draw(st.lists(st.sampled_from(["truncate", "flip", "overwrite", "insert", "append", "int"]),
                            min_size=n_edits, max_size=n_edits)):
        at = draw(st.integers(0, max(0, len(data))))
        if op == "truncate":
            del data[at:]
        elif op == "flip" and data:
            i = min(at, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[at : at + len(chunk)] = chunk
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "append":
            data += draw(st.binary(min_size=1, max_size=16))
        elif op == "int" and len(data) >= 4:  # a plausible-looking integer field, e.g. a count claim
            i = min(at, len(data) - 4)
            value = draw(st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1, 10**6, 2**20, 7]))
            data[i : i + 4] = struct.pack("<I", value)
    return bytes(data)


_VALID = st.integers(1, 300)
LENGTH_VALUES = st.one_of(_VALID, _VALID, _VALID, _VALID, _VALID, _VALID, st.integers(-3, 0),
                          st.integers(1, 2**63 - 1),
                          st.sampled_from([2049, 2050, 2**31, 2**53, 2**62, 2**63 - 1]))
"""Mostly valid lengths (so that replays run), sometimes non-positive or huge ones."""


def npy_bytes(values: list[int], dtype: str) -> bytes:
    buf = io.BytesIO()
    arr = np.array(values, dtype=np.int64)
    if dtype != "<i8":
        arr = arr.astype(dtype, casting="unsafe") if np.dtype(dtype).kind in "iufb" else arr
    np.save(buf, arr)
    return buf.getvalue()


@fuzz("npy")
@given(values=st.one_of(st.lists(_VALID, min_size=1, max_size=40), st.lists(LENGTH_VALUES, max_size=40)),
       dtype=st.sampled_from(["<i8", "<i8", "<i8", "<i4", "<u2", "<u8", ">i8", "<f8", "|b1", "|i1"]),
       data=st.data(), policy=st.sampled_from(["discard", "continue", "requeue-bos", "segment-first",
                                                "random-span"]))
def test_fuzz_npy_files(values: list[int], dtype: str, data: st.DataObject, policy: str) -> None:
    COUNTS["npy"] += 1
    raw = data.draw(corrupted(npy_bytes(values, dtype)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "l.npy")
        Path(path).write_bytes(raw)
        drive("lengths", path, d, ("--policy", policy))


@st.composite
def npy_headers(draw: st.DrawFn) -> bytes:
    """Hand-made headers: any descr, shape and version, with any amount of data after them."""
    descr = draw(st.sampled_from(["<i8", "<i4", "|u1", "<u8", ">i2", "<f4", "|O", "|b1", "<U3", "V8", "zz",
                                  "<i16", "[('a', '<i4')]"]))
    shape = draw(st.one_of(
        st.tuples(st.integers(-2, 2**62)),
        st.tuples(st.integers(0, 5), st.integers(0, 5)),
        st.just(()),
        st.tuples(st.sampled_from([2**40, 2**63, 10**30, 3])),
        st.sampled_from(["(3,)", "None", "(1.5,)", "'x'"]),
    ))
    fortran = draw(st.sampled_from(["False", "True", "1", "'no'"]))
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
    if draw(st.booleans()):
        text = text.replace("'shape'", "'shap'")
    version = draw(st.sampled_from([(1, 0), (2, 0), (3, 0), (9, 9)]))
    body = text.encode("latin-1")
    pad = 16 - (10 + len(body) + 1) % 16
    body += b" " * pad + b"\n"
    size_field = struct.pack("<H", len(body)) if version == (1, 0) else struct.pack("<I", len(body))
    payload = draw(st.binary(max_size=80))
    return b"\x93NUMPY" + bytes(version) + size_field + body + payload


@fuzz("npy_header")
@given(raw=npy_headers())
def test_fuzz_npy_headers(raw: bytes) -> None:
    COUNTS["npy_header"] += 1
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "h.npy")
        Path(path).write_bytes(raw)
        drive("lengths", path, d)


@st.composite
def shard_bytes(draw: st.DrawFn) -> bytes:
    docs = draw(st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=30), min_size=0, max_size=25))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.bin")
        write_shard(path, docs, vocab=8)
        base = Path(path).read_bytes()
    if draw(st.booleans()):  # rewrite the header's claims
        vocab, n_docs, n_tokens, flags = struct.unpack("<IIII", base[:16])
        n_docs = draw(st.sampled_from([n_docs, n_docs + 1, 0, 2**32 - 1, 10**6]))
        n_tokens = draw(st.sampled_from([n_tokens, n_tokens - 1, 0, 2**32 - 1]))
        vocab = draw(st.sampled_from([vocab, 0, 1, 2**16, 2**16 + 1]))
        base = struct.pack("<IIII", vocab, n_docs, max(0, n_tokens), flags) + base[16:]
    return bytes(draw(corrupted(base)))


@fuzz("shards")
@given(raw=shard_bytes(), second=st.booleans())
def test_fuzz_shards(raw: bytes, second: bool) -> None:
    COUNTS["shards"] += 1
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.bin")
        Path(path).write_bytes(raw)
        if second:  # a good shard beside the corrupt one
            good = os.path.join(d, "good.bin")
            write_shard(good, [[1, 2, 3]] * 20, vocab=8)
            drive("shards", good, d, ("--eval-shards", path))
        drive("shards", path, d)


# --------------------------------------------------------------------------- the report manifest


@st.composite
def manifest_states(draw: st.DrawFn) -> dict[str, bytes | None]:
    """A report directory after a real run, with its manifest / files / staging corrupted."""
    edits: dict[str, bytes | None] = {}
    target = draw(st.sampled_from([REPORT_MANIFEST_NAME, "audit.json", "audit.md", "staging-journal",
                                   "staging-file", "lock"]))
    content = draw(st.one_of(
        st.none(),  # deleted
        st.binary(max_size=64),
        st.sampled_from([b"{}", b"[]", b"null", b'{"schema": "packing-theory/report-manifest", "files": 3}',
                         b'{"schema": "packing-theory/report-manifest", "files": {"../x": {"sha256": "0"}}}',
                         b'{"manifest": {"files": {}}, "stale": {}}',
                         b'{"manifest": {"files": {"audit.md": {}}, "run_id": "x"}, '
                         b'"stale": {"audit.json": ""}}']),
    ))
    edits[target] = content
    return edits


@fuzz("manifest")
@given(edits=manifest_states(), force=st.booleans())
def test_fuzz_report_manifest(edits: dict[str, bytes | None], force: bool) -> None:
    COUNTS["manifest"] += 1
    with tempfile.TemporaryDirectory() as d:
        lengths = os.path.join(d, "l.npy")
        np.save(lengths, np.arange(1, 200, dtype=np.int64) % 90 + 1)
        out = os.path.join(d, "o")
        argv = ["audit", "--lengths", lengths, "--out", out, *AUDIT, *(["--force"] if force else [])]
        status, _, err = run_cli(argv)
        assert status == 0, err
        for target, content in edits.items():
            if target.startswith("staging"):
                staging = os.path.join(out, ".packing-theory-staging-fuzz")
                os.mkdir(staging)
                name = ".journal.json" if target == "staging-journal" else "audit.md"
                if content is not None:
                    Path(staging, name).write_bytes(content)
                continue
            path = os.path.join(out, target if target != "lock" else ".packing-theory.lock")
            if content is None:
                Path(path).unlink(missing_ok=True)  # a finished run leaves no lock file
            else:
                Path(path).write_bytes(content)
        status, out_text, err = run_cli(argv)
        assert_contract(status, err, argv)
        if status == 0:
            assert_audit_identity(out_text)


# --------------------------------------------------------------------------- text


TEXT_PIECES = st.sampled_from(["a", "word ", "\n", "\r\n", "\r", " ", "\t", "é", "😀", "\u2028", "\x00",
                               "\n\n", "long" * 50])


@fuzz("text")
@given(pieces=st.lists(TEXT_PIECES, max_size=80), raw_tail=st.binary(max_size=6),
       tokenizer=st.sampled_from(["bytes", "chars", "whitespace", "json:dumps", "nosuchmod:x", "os:sep",
                                  "builtins:len", "builtins:list", "", ":"]),
       per_line=st.booleans(), files=st.integers(1, 3))
def test_fuzz_text(pieces: list[str], raw_tail: bytes, tokenizer: str, per_line: bool, files: int) -> None:
    COUNTS["text"] += 1
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for k in range(files):
            p = os.path.join(d, f"t{k}.txt")
            Path(p).write_bytes("".join(pieces[k::files]).encode("utf-8") + (raw_tail if k == 0 else b""))
            paths.append(p)
        argv = ["audit", "--text", *paths, "--tokenizer", tokenizer, "--out", os.path.join(d, "o"), *AUDIT]
        if per_line:
            argv.append("--per-line")
        status, out, err = run_cli(argv)
        assert_contract(status, err, argv)
        if status in (0, 1):
            assert_audit_identity(out)


# --------------------------------------------------------------------------- options


_GOOD_INT = st.integers(2, 300).map(str)
INT_TEXT = st.one_of(_GOOD_INT, _GOOD_INT, _GOOD_INT, _GOOD_INT,
                     st.sampled_from(["0", "-1", "1", "1.5", "x", "", "1e3", "10**9", "99999999999999999999",
                                      str(2**63), str(10**12)]))
"""Mostly valid integer options, sometimes malformed or out of range."""
REFILL_TEXT = st.one_of(INT_TEXT, st.lists(st.integers(-1, 40), min_size=1, max_size=4).map(
    lambda v: ",".join(map(str, v))), st.sampled_from(["1,,2", ",", "3,x"]))
POLICY_TEXT = st.sampled_from(["discard", "continue", "requeue-bos", "segment-first", "random-span",
                               "discard,continue", "bogus", "discard,discard", ""])


@st.composite
def option_sets(draw: st.DrawFn) -> tuple[str, list[str]]:
    command = draw(st.sampled_from(["replay", "check", "bounds", "audit"]))
    opts: list[str] = []

    def maybe(flag: str, value: st.SearchStrategy[str]) -> None:
        if draw(st.sampled_from([False, False, True])):
            opts.extend([flag, draw(value)])

    if command == "bounds":
        if draw(st.booleans()):
            maybe("--counts", st.sampled_from(["16384=789,32768=196", "4096=1", "x", "100=5", "4096=-1",
                                               "4096=1,4096=2", ""]))
        maybe("--thresholds", st.sampled_from(["4096,8192", "x", "", "1", str(2**70)]))
        maybe("--min-buffer", INT_TEXT)
        maybe("--capacity", INT_TEXT)
        return command, opts
    maybe("--capacity", st.one_of(INT_TEXT, st.sampled_from(["100000000", str(10**18)])))
    maybe("--min-buffer", st.one_of(INT_TEXT, st.sampled_from([str(10**12)])))
    maybe("--refill", REFILL_TEXT)
    maybe("--passes", st.one_of(st.integers(-1, 3).map(str), st.sampled_from(["x", ""])))
    maybe("--seed", st.one_of(INT_TEXT, st.sampled_from([str(-(2**70))])))
    if command == "audit":
        maybe("--policy", POLICY_TEXT)
        maybe("--permutations", st.integers(-1, 2).map(str))
        maybe("--eval-targets", st.sampled_from(["0", "1", "630", "x", "-5"]))
        maybe("--eval-prefixes", st.sampled_from(["63", "0", "x", "10000000", ""]))
        maybe("--engine", st.sampled_from(["fast", "reference", "slow"]))
    else:
        maybe("--policy", st.sampled_from(["discard", "continue", "requeue-bos", "segment-first",
                                           "random-span", "bogus"]))
        maybe("--engine", st.sampled_from(["fast", "reference", "slow"]))
    budget = draw(st.sampled_from(["rows", "rows", "rows", "targets", "targets", "both", "bad"]))
    small = str(draw(st.integers(-1, 60)))
    if budget == "rows":
        opts += ["--rows", small]
    elif budget == "targets":
        opts += ["--targets", str(draw(st.integers(-1, 3000)))]
    elif budget == "both":
        opts += ["--rows", small, "--targets", small]
    else:
        opts += ["--rows", "x"]
    if draw(st.booleans()):
        opts.append("--drain")
    return command, opts


@fuzz("options")
@given(spec=option_sets(), lengths=st.lists(st.integers(1, 5000), min_size=1, max_size=60))
def test_fuzz_options(spec: tuple[str, list[str]], lengths: list[int]) -> None:
    COUNTS["options"] += 1
    command, opts = spec
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "l.npy")
        np.save(path, np.array(lengths, dtype=np.int64))
        argv = [command]
        if command != "bounds" or "--counts" not in opts:
            argv += ["--lengths", path]
        argv += opts
        if command == "audit":
            argv += ["--out", os.path.join(d, "o"), "--no-plots", "--no-progress", "--json"]
        if command in ("replay", "check"):
            argv.append("--json")
        status, out, err = run_cli(argv)
        assert_contract(status, err, argv)
        if status == 0 and command == "replay":
            assert_replay_identity(out)
        if status in (0, 1) and command == "audit":
            assert_audit_identity(out)
