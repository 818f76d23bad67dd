"""The command line with peer policies: replay --json, check, audit, policies, compare."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from packing_theory import build_packer
from packing_theory.cli import main
from packing_theory.engine.policies import POLICIES
from packing_theory.peers import peer_policies

KEYS = ("rows", "emitted_tokens", "discarded_tokens", "padding_tokens", "filtered_sources",
        "sources_started", "sources_never_started", "consumed_sources", "consumed_tokens", "identity_holds")


@pytest.fixture
def lengths_file(tmp_path: Path) -> Path:
    path = tmp_path / "l.npy"
    np.save(path, np.array([5, 3, 9, 2, 700, 20, 1, 40, 33, 16, 17, 15] * 3, dtype=np.int64))
    return path


@pytest.mark.parametrize("name", list(peer_policies()))
def test_replay_json_every_peer(name: str, lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", "--lengths", str(lengths_file), "--policy", name, "--capacity", "16", "--json"]
    try:  # some frameworks refuse a document longer than the sequence length (their own rule)
        list(build_packer(name, capacity=16).events(np.load(lengths_file)))
    except ValueError as exc:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(exc) in err and "700" in err
        return
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(k in out for k in KEYS) and out["capacity"] == 16  # the row width, for every packer
    assert out["identity_holds"] is True and out["row_identity_holds"] is True
    assert out["options"] == build_options(name)
    assert out["consumed_tokens"] == int(np.load(lengths_file).sum()) * (out["consumed_sources"] // 36)
    assert out["sources_never_started"] == out["consumed_sources"] - out["sources_started"]


def test_check_on_a_peer_is_not_applicable(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--lengths", str(lengths_file), "--policy", "trl-bfd", "--capacity", "16",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "outside the family: not applicable" and "best-fit" in out["reason"]
    argv = ["check", "--lengths", str(lengths_file), "--policy", "megatron-gpt", "--capacity", "16"]
    assert main(argv) == 0
    assert "outside the family: not applicable" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--policy", "trl-bfd", "--seed", "3"], "--seed: policy 'trl-bfd' takes no option 'seed'"),
    (["--policy", "trl-bfd", "--epochs", "2"], "takes no option 'epochs'"),
    (["--policy", "megatron-gpt", "--peer-option", "windows=3"], "takes no option 'windows'"),
    (["--policy", "trl-bfd", "--peer-option", "window"], "must be POLICY:KEY=VALUE"),
    (["--policy", "trl-bfd", "--peer-option", "megatron-gpt:seed=3"],
     "'megatron-gpt', which is not measured"),
    (["--policy", "trl-bfd", "--peer-option", "trl-bfd:windows=3"], "takes no option 'windows'"),
    (["--policy", "olmo-truncate"], "power of two"),
    (["--policy", "trl-bfd", "--framework-version", "0.1"], "framework_version"),
    (["--policy", "trl-bfd", "--passes", "2"], "--passes: policy 'trl-bfd' takes no option 'passes'"),
    (["--policy", "trl-bfd,discard"], "--policy takes one packer here, got 2"),
])
def test_bad_peer_options(argv: list[str], message: str, lengths_file: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--lengths", str(lengths_file), "--capacity", "2049", *argv]) == 2
    assert message in capsys.readouterr().err


def test_unknown_policy_is_a_usage_error(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--lengths", str(lengths_file), "--policy", "nope-nope"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope-nope'" in err and "trl-bfd" in err


def test_peer_options_reach_the_constructor(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["replay", "--lengths", str(lengths_file), "--capacity", "16", "--json"]
    main([*base, "--policy", "trl-bfd", "--window", "1"])
    one = json.loads(capsys.readouterr().out)
    main([*base, "--policy", "trl-bfd", "--peer-option", "window=none"])
    whole = json.loads(capsys.readouterr().out)
    assert one["rows"] > whole["rows"]  # per-document windows cannot pack documents together
    main([*base, "--policy", "megatron-gpt", "--seed", "7"])
    main([*base, "--policy", "megatron-gpt", "--seed", "8"])
    a, b = capsys.readouterr().out.split("}\n{")
    assert json.loads(a + "}")["sources_started"] >= 1 and json.loads("{" + b)["sources_started"] >= 1


def test_policies_lists_every_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policies", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    names = [row["policy"] for row in table]
    assert names[:2] == ["discard", "continue"] and set(peer_policies()) <= set(names)
    trl = next(r for r in table if r["policy"] == "trl-bfd")
    assert trl["knobs"]["window"]["default"] == 1000 and trl["knobs"]["window"]["type"] == "int | None"
    assert trl["in_family"] is False and trl["status"] == "outside the family: not applicable"
    megatron = next(r for r in table if r["policy"] == "megatron-gpt")
    assert megatron["row_width"].startswith("R = sequence_length + 1") and megatron["engines"] == []
    bw = next(r for r in table if r["policy"] == "bounded-wait")
    assert bw["engines"] == ["fast", "compiled", "reference"] and bw["knobs"]["max_wait"]["default"] == 16


def test_audit_accepts_peers(lengths_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    assert main(["audit", "--lengths", str(lengths_file), "--policy", "discard,trl-bfd,megatron-gpt",
                 "--capacity", "16", "--min-buffer", "4", "--refill", "2", "--permutations", "2",
                 "--no-plots", "--no-progress", "--out", str(out)]) == 0
    report = json.loads((out / "audit.json").read_text())
    assert [p["packer"] for p in report["packers"]] == ["discard", "trl-bfd", "megatron-gpt"]
    assert all(p["mass"]["identity_holds"] for p in report["packers"])


def test_compare_small_corpus(lengths_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", "--lengths", str(lengths_file), "--seq-length", "16", "--min-buffer", "4",
                 "--refill", "2", "--no-plots", "--out", str(out),
                 "--peer-option", "trl-bfd:window=2"]) == 0
    report = json.loads((out / "compare.json").read_text())
    names = [c["packer"] for c in report["packers"]]
    refused = {r["packer"]: r["reason"] for r in report["refused"]}
    # every peer is either a column or refused by its framework's rule, with the framework's message
    assert set(peer_policies()) == set(names) - set(POLICIES) | set(refused) and "discard" in names
    assert not set(names) & set(refused)
    for name, reason in refused.items():
        with pytest.raises(ValueError) as exc:
            list(build_packer(name, capacity=16).events(np.load(lengths_file)))
        assert reason == str(exc.value)
    assert "bounded-wait" in names and by_costs(report, "bounded-wait")["discarded_tokens"] == 0
    by = {c["packer"]: c for c in report["packers"]}
    assert "its own theorem" in by["bounded-wait"]["verdict"] and not by["bounded-wait"]["in_family"]
    assert by["trl-bfd"]["options"] == {"window": 2, "framework_version": "1.16.0"}  # defaults recorded
    assert by["discard"]["in_family"] and by["discard"]["verdict"].startswith("family member")
    assert "shrunk counterexample" in by["requeue-bos"]["verdict"]
    assert by["trl-bfd"]["verdict"].startswith("outside the family: not applicable")
    assert by["olmo-truncate"]["row_width"] == 16 and by["discard"]["row_width"] == 17  # L = 16, each rule
    assert all(c["mass"]["identity_holds"] for c in report["packers"])
    md = (out / "compare.md").read_text()
    assert "| trl-bfd |" in md and "never started" in md
    assert "## Costs" in md
    assert refused and all(f"{name}".replace("_", "\\_") + " refused this corpus by its framework's own rule"
                           in md for name in refused)


def build_options(name: str) -> dict[str, object]:
    from packing_theory.registry import entry

    return entry(name).options()


def by_costs(report: dict[str, object], name: str) -> dict[str, object]:
    packers = report["packers"]
    assert isinstance(packers, list)
    return next(c["costs"] for c in packers if c["packer"] == name)


def test_compare_demo_prefix(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert main(["compare", "--demo", "--demo-documents", "3000",
                 "--policy", "discard,trl-bfd,foundry-concat-wrap",
                 "--no-plots", "--out", str(out), "--json"]) == 0
    report = json.loads((out / "compare.json").read_text())
    assert report["corpus"]["documents"] == 3000 and len(report["packers"]) == 3


def test_compare_rejects_bad_peer_option(lengths_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--lengths", str(lengths_file), "--policy", "discard",
                 "--peer-option", "trl-bfd:window=2"]) == 2
    assert "--peer-option names 'trl-bfd', which is not measured here" in capsys.readouterr().err


def test_seq_length_maps_onto_each_packers_row_width(lengths_file: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    base = ["replay", "--lengths", str(lengths_file), "--seq-length", "16", "--json"]
    for argv, width in ((["--policy", "megatron-gpt"], 17), (["--policy", "trl-bfd"], 16),
                        (["--policy", "olmo-truncate"], 16),
                        (["--policy", "discard", "--min-buffer", "4"], 17)):
        assert main([*base, *argv]) == 0
        assert json.loads(capsys.readouterr().out)["capacity"] == width, argv
    assert main(["replay", "--lengths", str(lengths_file), "--capacity", "16", "--seq-length", "16"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_streaming_option_the_policy_does_not_take_is_refused(lengths_file: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--lengths", str(lengths_file), "--policy", "discard", "--seed", "3"]) == 2
    assert "--seed: policy 'discard' takes no option 'seed' (it takes: min_buffer" in capsys.readouterr().err
    assert main(["replay", "--lengths", str(lengths_file), "--policy", "random-span", "--seed", "3",
                 "--min-buffer", "4", "--json"]) == 0


def test_audit_passes_each_packer_only_the_options_it_takes(lengths_file: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    base = ["audit", "--lengths", str(lengths_file), "--capacity", "16", "--min-buffer", "4", "--refill", "2",
            "--permutations", "2", "--no-plots", "--no-progress"]
    assert main([*base, "--policy", "bounded-wait,trl-bfd", "--max-wait", "3", "--peer-option", "window=2",
                 "--out", str(tmp_path / "a")]) == 0
    report = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert [p["packer"] for p in report["packers"]] == ["bounded-wait", "trl-bfd"]
    assert report["packers"][1]["options"]["window"] == 2
    capsys.readouterr()
    peer = base[:base.index("--refill")] + base[base.index("--refill") + 2:]
    assert main([*peer, "--policy", "trl-bfd", "--passes", "2", "--out", str(tmp_path / "b")]) == 2
    assert "--passes: policy 'trl-bfd' takes no option 'passes'" in capsys.readouterr().err
    assert main([*base, "--policy", "trl-bfd", "--out", str(tmp_path / "b")]) == 2  # --refill: no packer here
    assert "--refill: policy 'trl-bfd' takes no option 'refill'" in capsys.readouterr().err
    assert main([*base, "--policy", "discard,trl-bfd", "--peer-option", "windows=2",
                 "--out", str(tmp_path / "c")]) == 2
    assert "--peer-option windows: no packer takes an option 'windows'" in capsys.readouterr().err
    assert main([*base, "--policy", "discard,trl-bfd", "--peer-option", "trl-bfd:windows=2",
                 "--out", str(tmp_path / "c")]) == 2
    assert "--peer-option windows: policy 'trl-bfd' takes no option 'windows'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--lengths", "{lengths}", "--policy", "discard,trl-bfd,discard"], "--policy names 'discard' twice"),
    (["--lengths", "{lengths}", "--policy", "discard,bogus"], "argument --policy: invalid choice: 'bogus'"),
    (["--demo", "--demo-documents", "0"], "--demo-documents must be >= 1, got 0"),
    (["--lengths", "{lengths}", "--demo-documents", "5"], "--demo-documents 5 applies to --demo"),
])
def test_compare_refuses_bad_packers_before_computing(argv: list[str], message: str, lengths_file: Path,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before the fix ``--policy discard,discard`` compared discard twice."""
    import packing_theory.cli.compare as cli_compare

    monkeypatch.setattr(cli_compare, "compare_corpus", lambda *a, **k: pytest.fail("compared"))
    out = tmp_path / "cmp"
    argv = [a.format(lengths=lengths_file) for a in argv]
    assert main(["compare", *argv, "--no-plots", "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()  # a directory made for a refused run is removed
