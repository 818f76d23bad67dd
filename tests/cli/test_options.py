"""One option vocabulary: every option of every command comes from the one table, with one meaning.

Before the table (11 commands, 112 options): ``--documents`` was an output file in
``audit`` and a count in ``compare``; ``--peer-option`` was ``KEY=VALUE`` in four
commands and ``POLICY:KEY=VALUE`` in one; ``--workers`` defaulted to 1, 1 and 0;
help texts named options their command refused and the project's source
documents; ``--capacity`` meant every packer's row width in ``audit`` and the
streaming width in ``compare``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from packing_theory.cli import COMMANDS, SUMMARIES, build_parser, main
from packing_theory.cli._options import COPIED_CONSTANTS, OPTIONS, option_for
from packing_theory.cli._types import float_range, int_range

KEYS = ("type", "default", "nargs", "choices", "metavar", "dest", "const", "help")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(load=True)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


PARSERS = _parsers()


def _own_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_of_every_command_comes_from_the_table(command: str) -> None:
    for action in _own_actions(PARSERS[command]):
        if action.option_strings:
            opt = option_for(action.option_strings[0])  # KeyError: an option that is not on the table
            assert tuple(action.option_strings) == opt.flags, (command, opt.flags)
        else:
            opt = OPTIONS[action.dest]
        kwargs = opt.kwargs(command)
        for key in KEYS:
            if key in kwargs:
                assert getattr(action, key) == kwargs[key], (command, opt.name, key)
        if opt.action is None:  # a value of its type, stored
            assert type(action).__name__ == "_StoreAction", (command, opt.name)


def test_one_name_has_one_type_and_meaning_everywhere() -> None:
    seen: dict[str, tuple[object, ...]] = {}
    for command, parser in PARSERS.items():
        for action in _own_actions(parser):
            for flag in action.option_strings:
                # --out's default and help name the command: the one per-command default
                key = (action.type, action.nargs, action.choices, action.metavar, action.dest, action.const,
                       *((action.default, action.help) if flag != "--out" else ()))
                assert seen.setdefault(flag, key) == key, (command, flag)
    assert {"--policy", "--capacity", "--workers", "--documents", "--peer-option", "--column"} <= set(seen)
    policy = option_for("--policy")
    assert policy.action == "extend" and policy.metavar == "P[,P...]"  # a list in every command
    workers = option_for("--workers")
    assert workers.default == 1


def _help_texts(parser: argparse.ArgumentParser) -> list[str]:
    texts = [parser.description or "", parser.epilog or ""]
    texts += [a.help for a in parser._actions if a.help and a.help != argparse.SUPPRESS]
    texts += [g.title or "" for g in parser._action_groups]
    return texts


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_a_help_text_names_is_accepted_by_that_command(command: str) -> None:
    parser = PARSERS[command]
    named = {m for text in _help_texts(parser) for m in re.findall(r"--[a-z][a-z-]+", text)}
    assert named  # every command's help names at least --debug (the exit-status epilog)
    missing = sorted(n for n in named if n not in parser._option_string_actions)
    assert not missing, (command, missing)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_help_text_names_the_project_s_sources_or_an_issue(command: str) -> None:
    text = " ".join([SUMMARIES.get(command, ""), *_help_texts(PARSERS[command])])
    for word in (r"seed[ -]?0\d\d", r"\bissue\b"):
        assert not re.search(word, text, re.IGNORECASE), (command, word)


def test_the_copied_constants_are_the_library_s() -> None:
    for name, (where, value) in COPIED_CONSTANTS.items():
        module, expression = where.split(":")
        mod = importlib.import_module(module)
        names = {n: getattr(mod, n) for n in getattr(mod, "__all__", ())}  # a lazy package's exports too
        assert eval(expression, {**vars(mod), **names}) == value, name


@pytest.mark.parametrize("name", sorted(n for n, o in OPTIONS.items() if isinstance(o.type, int_range)))
def test_every_ranged_option_refuses_a_value_below_its_range_naming_it(name: str) -> None:
    rng = OPTIONS[name].type
    assert isinstance(rng, int_range)
    below = f"^{re.escape(rng.option)} must be >= {rng.minimum}"
    with pytest.raises(argparse.ArgumentTypeError, match=below):
        rng(str(rng.minimum - 1))
    assert rng(str(rng.minimum)) == rng.minimum
    if rng.maximum is not None:
        with pytest.raises(argparse.ArgumentTypeError, match="must be <="):
            rng(str(rng.maximum + 1))


def test_a_float_range_refuses_nan_and_its_open_ends() -> None:
    level = OPTIONS["level"].type
    assert isinstance(level, float_range)
    for text in ("nan", "0", "1", "inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="--level must be a number in"):
            level(text)
    assert level("0.5") == 0.5


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("options") / "l.npy"
    np.save(path, np.random.default_rng(0).integers(1, 40, 300))
    return path


@pytest.mark.parametrize("command", ["replay", "check", "explain"])
def test_a_command_that_replays_one_packer_refuses_more(command: str, lengths: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, *(["3"] if command == "explain" else []), "--lengths", str(lengths), "--policy",
            "discard", "--policy", "continue"]
    assert main(argv) == 2
    assert "--policy takes one packer here, got 2: discard, continue" in capsys.readouterr().err


def test_compare_capacity_is_every_packer_s_row_width(lengths: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before: ``compare --capacity 9`` gave the streaming policies 9 and a peer 8."""
    assert main(["compare", "--lengths", str(lengths), "--capacity", "9", "--min-buffer", "4", "--policy",
                 "discard,trl-bfd,megatron-gpt", "--no-plots", "--out", str(tmp_path / "c"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["packer"]: p["row_width"] for p in doc["packers"]} == {
        "discard": 9, "trl-bfd": 9, "megatron-gpt": 9}
    # every packer: one whose framework packs only powers of two is refused, named, pointing at --seq-length
    assert main(["compare", "--lengths", str(lengths), "--capacity", "9", "--no-plots",
                 "--out", str(tmp_path / "d")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--capacity 9 is not a row width olmo-truncate packs" in line and "--seq-length" in line
    assert not (tmp_path / "d").exists()


def test_the_old_column_spellings_are_the_same_option(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"body": "w " * n}) + "\n" for n in range(1, 30)))
    outs = []
    for flag in ("--column", "--field", "--text-column"):
        assert main(["replay", "--data", str(tmp_path / "d.jsonl"), flag, "body", "--tokenizer", "whitespace",
                     "--capacity", "8", "--min-buffer", "2", "--json"]) == 0
        out = capsys.readouterr()
        assert [ln for ln in out.err.splitlines() if not ln.startswith("data:")] == []  # printing nothing
        doc = json.loads(out.out)
        doc.pop("seconds")
        outs.append(doc)
    assert outs[0] == outs[1] == outs[2] and outs[0]["documents"] == 29


def test_peer_options_apply_to_every_measured_packer_that_takes_them(
        lengths: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["compare", "--lengths", str(lengths), "--seq-length", "16", "--min-buffer", "4", "--no-plots",
            "--json", "--out", str(tmp_path / "c")]
    assert main([*base, "--policy", "discard,trl-bfd,trl-wrapped,megatron-gpt", "--window", "7",
                 "--peer-option", "trl-wrapped:window=3"]) == 0
    options = {p["packer"]: p["options"] for p in json.loads(capsys.readouterr().out)["packers"]}
    assert options["trl-bfd"]["window"] == 7 and options["trl-wrapped"]["window"] == 3
    assert "window" not in options["megatron-gpt"]
    assert main([*base, "--policy", "discard,megatron-gpt", "--window", "7"]) == 2
    assert "--window applies to trl-bfd" in capsys.readouterr().err


def test_workers_capped_by_the_cpus_and_the_tasks_say_so(lengths: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``audit --workers 100000`` started 60-111 processes. The cap is a note to a person at a
    terminal; a script reading standard error gets the one summary line."""
    argv = ["compare", "--lengths", str(lengths), "--policy", "discard,continue", "--capacity", "16",
            "--min-buffer", "4", "--workers", "100000", "--no-plots"]
    assert main([*argv, "--out", str(tmp_path / "piped")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compare: ") and "--workers" not in err[0]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main([*argv, "--out", str(tmp_path / "terminal")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    cpus = os.cpu_count() or 1
    runs = min(cpus, 2)
    assert err[0].startswith(f"compare: --workers 100000: {runs} process") and f"{cpus} CPU" in err[0]
    assert "2 tasks" in err[0]
    assert err[-1].startswith("compare: ") and "wrote" in err[-1]


def test_explain_numbers_documents_by_their_raw_index_under_a_funnel(
        lengths: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: with a funnel, explain numbered documents after it while labels and masks number the raw
    corpus."""
    (tmp_path / "funnel.json").write_text(json.dumps({"stages": [
        {"name": "drop-some", "kind": "any", "ids": list(range(0, 300, 3))}]}))
    common = ["--lengths", str(lengths), "--funnel", str(tmp_path / "funnel.json"), "--capacity", "16",
              "--min-buffer", "4", "--json"]
    assert main(["explain", "7", *common]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert kept["document"] == 7 and kept["length"] == int(np.load(lengths)[7])
    assert main(["explain", "6", *common]) == 0
    out = capsys.readouterr()
    removed = json.loads(out.out)
    assert removed["document"] == 6 and removed["stage"] == "drop-some"
    assert removed["fate"] == "removed by drop-some"  # as documents.csv writes it
    assert "removed by the cleaning funnel at stage 'drop-some'" in out.err
    assert main(["explain", "300", *common]) == 2
    assert "DOC 300 is not a raw index of the 300 documents (0..299)" in capsys.readouterr().err
    assert main(["explain", "--index", "300", *common]) == 2
    assert "--index 300 is not a raw index of the 300 documents (0..299)" in capsys.readouterr().err


@pytest.mark.parametrize("doc", ["", "  "])
def test_explain_refuses_an_empty_document(doc: str, lengths: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Before: ``explain ""`` explained document 0."""
    assert main(["explain", doc, "--lengths", str(lengths)]) == 2
    assert "DOC must be a document's raw index or its name" in capsys.readouterr().err


def test_compare_refuses_the_old_documents_count_with_a_hint(lengths: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--demo", "--documents", "5"]) == 2
    assert "--demo-documents" in capsys.readouterr().err


def test_an_unknown_option_names_its_command(lengths: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The top parser reported a command's unknown option as 'packing-theory: error: ...'."""
    assert main(["audit", "--lengths", str(lengths), "--bogus"]) == 2
    assert capsys.readouterr().err.startswith("packing-theory audit: error: unrecognized arguments: --bogus")


def test_compare_documents_says_compare_writes_no_document_table(lengths: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Without --demo the hint spoke only of compare --demo's --demo-documents."""
    assert main(["compare", "--lengths", str(lengths), "--documents"]) == 2
    assert "compare writes no per-document table (audit --documents does)" in capsys.readouterr().err


@pytest.mark.parametrize("policy", ["discard,,continue", "discard,", ",discard"])
def test_an_empty_packer_name_is_refused(policy: str, lengths: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """'discard,,continue' was read as discard and continue without a word."""
    assert main(["replay", "--lengths", str(lengths), "--policy", policy]) == 2
    assert f"--policy {policy!r} has an empty name between its commas" in capsys.readouterr().err


def test_a_missing_path_of_files_from_names_the_list_and_its_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """It said "--data 'nonexist.jsonl' does not exist", an option the user never gave."""
    (tmp_path / "a.jsonl").write_text('{"text": "hello"}\n')
    listing = tmp_path / "list.txt"
    listing.write_text(f"# inputs\n{tmp_path / 'a.jsonl'}\n\n{tmp_path / 'gone.jsonl'}\n")
    assert main(["replay", "--files-from", str(listing), "--min-buffer", "1"]) == 2
    assert (f"--files-from {str(listing)!r} line 4: {str(tmp_path / 'gone.jsonl')!r} does not exist"
            in capsys.readouterr().err)


def test_a_framework_option_its_constructor_refuses_names_the_packer_and_the_option(
        lengths: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'window must be >= 1, got -3' named neither trl-bfd nor --peer-option."""
    assert main(["replay", "--lengths", str(lengths), "--policy", "trl-bfd", "--peer-option",
                 "trl-bfd:window=-3"]) == 2
    assert ("trl-bfd's options (window=-3; from --peer-option or their own flags): window must be >= 1"
            in capsys.readouterr().err)
