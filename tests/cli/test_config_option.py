"""``--config FILE`` on ``audit``, ``compare``, ``replay``, ``check``: a framework's own config as options.

Each config is written the way its framework writes or documents it (the
fixtures of ``tests/configs/test_read.py``: TRL's ``SFTConfig`` dumped, an
Axolotl YAML validated by Axolotl's own schema, LLM Foundry and torchtune
YAMLs as their docs show them, a Megatron argument list, nanochat /
autoresearch / Parcae settings). The command given the config prints the
mapping and the options it stands for, and writes the same JSON as the same
command given those options by hand. An option that disagrees with the config
is refused naming both; a config the mapper refuses, an unknown framework,
a Megatron blend and a rank stride are bad input (exit 2, one line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from packing_theory.cli import main
from tests.configs.test_read import FOUNDRY, TORCHTUNE, _axolotl, _sft_config, _write

N_DOCS = 400


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config_option") / "lengths.npy"
    np.save(path, np.random.default_rng(5).integers(1, 30, N_DOCS))
    return path


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("run", "seconds")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, list[str]]:
    status = main(argv)
    out = capsys.readouterr()
    doc = json.loads(out.out) if out.out.strip() else None
    command = f"{argv[0]}: "  # a framework's own log lines (axolotl's validation warnings) are not ours
    return status, _timeless(doc), [line for line in out.err.strip().splitlines() if line.startswith(command)]


def _trl(tmp_path: Path) -> Path:
    cfg = _sft_config(packing=True, max_length=8, max_steps=5, per_device_train_batch_size=2,
                      gradient_accumulation_steps=3)
    path = tmp_path / "sft.yaml"
    path.write_text(yaml.safe_dump(json.loads(cfg.to_json_string())))
    return path


def _foundry(tmp_path: Path) -> Path:
    pytest.importorskip("omegaconf")
    path = tmp_path / "finetune.yaml"
    path.write_text(FOUNDRY)
    return path


def _torchtune(tmp_path: Path) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(TORCHTUNE.replace("  packed: True", "  packed: True\n  split_across_pack: True"))
    return path


def _megatron(tmp_path: Path) -> Path:
    path = tmp_path / "pretrain.sh"
    path.write_text("python pretrain_gpt.py \\\n  --seq-length 8 --data-path /data/web_text_document \\\n"
                    "  --micro-batch-size 2 --train-iters 4 --global-batch-size 8 --lr 3e-4\n")
    return path


def _nanochat(tmp_path: Path) -> Path:
    return _write(tmp_path / "sft.yaml", {"framework": "nanochat", "script": "chat_sft", "max_seq_len": 16,
                                          "device_batch_size": 2, "total_batch_size": 2 * 16 * 2,
                                          "num_iterations": 10, "buffer_size": 20, "embedding_lr": 0.3})


def _autoresearch(tmp_path: Path) -> Path:
    return _write(tmp_path / "ar.yaml", {"framework": "autoresearch", "policy": "continue", "max_seq_len": 16,
                                         "buffer_size": 30, "refill": 8, "device_batch_size": 2,
                                         "total_batch_size": 64, "num_iterations": 5})


def _parcae(tmp_path: Path) -> Path:
    return _write(tmp_path / "parcae.yaml", {"block_size": 16, "micro_batch_size": 2,
                                             "world_batch_size": 4, "pack_sequences": True,
                                             "pack_buffer_size": 1000, "max_steps": 3})


CONFIGS = {  # framework: (writer, the options the config stands for)
    "trl": (_trl, "--policy trl-bfd --seq-length 8 --rows 30"),
    "axolotl": (lambda p: _axolotl(p, seed=11, sample_packing_bin_size=2, max_steps=3,
                                   gradient_accumulation_steps=2),
                "--policy axolotl-multipack --seq-length 16 "
                "--peer-option axolotl-multipack:micro_batch_size=1 "
                "--peer-option axolotl-multipack:multipack_real_batches=false "
                "--peer-option axolotl-multipack:bin_size=2 --peer-option axolotl-multipack:epochs=1 "
                "--peer-option axolotl-multipack:seed=11 --rows 6"),
    "foundry": (_foundry, "--policy foundry-binpack --seq-length 8 "
                          "--peer-option foundry-binpack:packing_ratio=2.0 "
                          "--peer-option foundry-binpack:drop_last=false "
                          "--peer-option foundry-binpack:batch_size=2 --rows 6"),
    "torchtune": (_torchtune, "--policy torchtune-split --seq-length 8 --rows 40; every document truncated "
                              "to 8 tokens first"),
    "megatron": (_megatron, "--policy megatron-gpt --seq-length 8 --peer-option megatron-gpt:seed=1234 "
                            "--peer-option megatron-gpt:num_samples=32 --rows 32; only the documents of "
                            "--split 969, 30, 1's training split"),
    "nanochat": (_nanochat, "--policy bestfit-pad --seq-length 16 --min-buffer 20 --refill 1 --passes 2 "
                            "--rows 40"),
    "autoresearch": (_autoresearch, "--policy continue --seq-length 16 --min-buffer 30 --refill 8 --rows 20"),
    "parcae": (_parcae, "--policy parcae-bestfit --seq-length 16 --peer-option parcae-bestfit:batch_size=2 "
                        "--rows 12"),
}


@pytest.mark.parametrize("framework", list(CONFIGS))
def test_replay_with_a_config_is_replay_with_its_options(framework: str, lengths: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    writer, options = CONFIGS[framework]
    config = writer(tmp_path)
    status, doc, err = _run(["replay", "--config", str(config), "--lengths", str(lengths), "--json"], capsys)
    assert status == 0, err
    assert err[0].startswith(f"replay: mapping used: {framework} -> ") and "ignored keys: " in err[0]
    assert err[1] == f"replay: the same as {options}" and len(err) == 2  # one block, then the JSON
    data = lengths
    if framework == "torchtune":  # the tokenizer truncates every sample to max_seq_len before packing
        options = options.split(";")[0]
        data = tmp_path / "truncated.npy"
        raw = np.load(lengths)
        assert (raw > 8).any()
        np.save(data, np.minimum(raw, 8))
    if framework == "megatron":  # the default --split 969,30,1: the training split is the first 96.9 %
        options = options.split(";")[0]
        data = tmp_path / "train_split.npy"
        np.save(data, np.load(lengths)[: round(0.969 * N_DOCS)])
    by_hand = _run(["replay", *options.split(), "--lengths", str(data), "--json"], capsys)
    assert (status, doc) == by_hand[:2]
    assert doc["documents"] == (388 if framework == "megatron" else N_DOCS) and doc["rows"] > 0


@pytest.mark.parametrize("framework", ["trl", "nanochat"])
def test_audit_with_a_config_writes_the_report_of_its_options(framework: str, lengths: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    writer, options = CONFIGS[framework]
    config = writer(tmp_path)
    common = ["--lengths", str(lengths), "--permutations", "2", "--no-plots", "--no-progress", "--json"]
    status, doc, err = _run(["audit", "--config", str(config), *common, "--out", str(tmp_path / "a")], capsys)
    assert status == 0, err
    assert err[1] == f"audit: the same as {options}" and len(err) == 3  # the block, the summary line
    by_hand = _run(["audit", *options.split(), *common, "--out", str(tmp_path / "b")], capsys)
    assert (status, doc) == by_hand[:2]
    on_disk = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert _timeless(on_disk) == doc and [p["packer"] for p in doc["packers"]] == [options.split()[1]]


def test_a_config_without_a_horizon_runs_to_the_natural_end(lengths: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _sft_config(packing=True, max_length=8)
    config = _write(tmp_path / "sft.json", json.loads(cfg.to_json_string()))
    common = ["--lengths", str(lengths), "--no-plots", "--no-progress", "--json"]
    status, doc, err = _run(["compare", "--config", str(config), *common, "--out", str(tmp_path / "a")],
                            capsys)
    assert status == 0 and err[1] == "compare: the same as --policy trl-bfd --seq-length 8 --natural-end"
    assert doc == _run(["compare", "--policy", "trl-bfd", "--seq-length", "8", "--natural-end", *common,
                        "--out", str(tmp_path / "b")], capsys)[1]
    # a horizon given by hand is kept: the config names none
    assert main(["replay", "--config", str(config), "--lengths", str(lengths), "--rows", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3


def test_compare_measures_other_packers_beside_the_config_s(lengths: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = _nanochat(tmp_path)
    status, doc, err = _run(["compare", "--config", str(config), "--policy", "bestfit-pad,discard",
                             "--lengths", str(lengths), "--no-plots", "--no-progress", "--json", "--out",
                             str(tmp_path / "c")], capsys)
    assert status == 0, err
    assert [p["packer"] for p in doc["packers"]] == ["bestfit-pad", "discard"]
    assert doc["settings"]["min_buffer"] == 20 and doc["settings"]["passes"] == 2


def test_check_with_a_config(lengths: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer, options = CONFIGS["autoresearch"]
    config = writer(tmp_path)
    status, doc, _ = _run(["check", "--config", str(config), "--lengths", str(lengths), "--json"], capsys)
    assert status == 0 and doc["policy"] == "continue" and doc["min_buffer"] == 30
    assert (status, doc) == _run(["check", *options.split(), "--lengths", str(lengths), "--json"], capsys)[:2]
    # a framework's packer: check says the proposition does not apply (the config's horizon is not used)
    status, doc, _ = _run(["check", "--config", str(_trl(tmp_path)), "--lengths", str(lengths), "--json"],
                          capsys)
    assert status == 0 and doc["policy"] == "trl-bfd" and doc["in_family"] is False


@pytest.mark.parametrize(("extra", "message"), [
    (["--capacity", "4096"], "--capacity 4096 conflicts with --config {cfg}'s max_length: 2048 (R = "
                             "max_length = 2048): drop --capacity or change the config"),
    (["--seq-length", "1024"], "--seq-length 1024 conflicts with --config {cfg}'s max_length: 2048"),
    (["--policy", "discard"], "--policy discard conflicts with --config {cfg}'s packing: true (trl-bfd)"),
    (["--rows", "7"], "--rows 7 conflicts with --config {cfg}'s max_steps: 5 (horizon 10 rows"),
    (["--natural-end"], "--natural-end conflicts with --config {cfg}'s max_steps: 5"),
    (["--peer-option", "trl-bfd:window=5", "--config-knob"], ""),
])
def test_an_option_that_disagrees_with_the_config_is_refused_naming_both(
        extra: list[str], message: str, lengths: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    if "--config-knob" in extra:  # a knob the config does not set: the option stands
        doc = _sft_config(packing=True, max_length=2048, max_steps=5, per_device_train_batch_size=2)
        config = _write(tmp_path / "sft.json", json.loads(doc.to_json_string()))
        assert main(["replay", "--config", str(config), "--lengths", str(lengths), *extra[:2], "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["options"]["window"] == 5
        return
    cfg = _write(tmp_path / "sft.json", json.loads(_sft_config(
        packing=True, max_length=2048, max_steps=5, per_device_train_batch_size=2).to_json_string()))
    assert main(["replay", "--config", str(cfg), "--lengths", str(lengths), *extra]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()  # refused before the mapping is printed
    assert message.format(cfg=cfg) in line, line
    assert main(["replay", "--config", str(cfg), "--lengths", str(lengths), "--capacity", "2048",
                 "--json"]) == 0  # an option that agrees stands
    assert json.loads(capsys.readouterr().out)["capacity"] == 2048


def test_knob_conflicts_name_the_config_key(lengths: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cases = [(_nanochat(tmp_path), ["--min-buffer", "50"], "--min-buffer 50 conflicts with --config {cfg}'s "
                                                          "buffer_size: 20 (knob min_buffer = 20)"),
             (_axolotl(tmp_path, seed=11), ["--seed", "3"],
              "--seed 3 conflicts with --config {cfg}'s seed: 11"),
             (_axolotl(tmp_path, seed=11), ["--peer-option", "seed=4"],
              "--peer-option seed=4 conflicts with --config {cfg}'s seed: 11")]
    for cfg, extra, message in cases:
        assert main(["replay", "--config", str(cfg), "--lengths", str(lengths), *extra]) == 2
        err = capsys.readouterr().err
        assert message.format(cfg=cfg) in err, err


def test_bad_configs_and_frameworks_are_exit_2(lengths: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    trl = _write(tmp_path / "sft.json", json.loads(_sft_config(packing=False).to_json_string()))
    nope = _write(tmp_path / "nope.yaml", {"framework": "nope", "max_length": 8})
    blend = tmp_path / "blend.args"
    blend.write_text("--seq-length 16 --data-path 0.3 /d/web 0.7 /d/code --train-iters 10 "
                     "--global-batch-size 4")
    ranks = _write(tmp_path / "ranks.yaml", {"framework": "nanochat", "max_seq_len": 16,
                                             "device_batch_size": 2, "total_batch_size": 128,
                                             "world_size": 2})
    base = ["--lengths", str(lengths)]
    cases = [
        (["replay", "--config", str(trl), *base], f"{trl}: packing: False — "),
        (["audit", "--config", str(nope), *base],
         "framework must be one of axolotl, trl, foundry, torchtune, megatron, nanochat, autoresearch, "
         "parcae; got 'nope'"),
        (["compare", "--config", str(trl), "--framework", "nope", *base],
         "argument --framework: invalid choice: 'nope'"),
        (["replay", "--config", str(trl), "--framework", "axolotl", *base],
         f"{trl}: sample_packing: False — "),
        (["check", "--framework", "trl", *base], "--framework trl names the framework of --config"),
        (["replay", "--config", str(blend), *base], "a Megatron blend draws its samples from 2 datasets"),
        (["replay", "--config", str(ranks), *base], "rank 0 reads one document in 2"),
        (["audit", "--config", str(ranks), "--demo"], "--demo brings its own corpus and settings"),
        (["replay", "--config", str(tmp_path / "none.yaml"), *base], "argument --config: no such file"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, (argv, err)


@pytest.mark.parametrize("framework", ["trl", "torchtune", "megatron", "nanochat"])
def test_explain_with_a_config_says_what_audit_s_documents_csv_says(
        framework: str, lengths: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One document of each fate in audit's table, explained with the same config: the same row (torchtune
    truncates first, Megatron's default --split 969,30,1 removes the last 3.1 %, nanochat runs two
    passes). Before, ``explain`` had no ``--config``."""
    import csv

    config = CONFIGS[framework][0](tmp_path)
    common = ["--config", str(config), "--lengths", str(lengths)]
    assert main(["audit", *common, "--documents", "documents.csv", "--no-plots", "--no-progress",
                 "--permutations", "0", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    with open(tmp_path / "a" / "documents.csv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["pass"] in ("0", "-1")]
    first: dict[str, dict[str, str]] = {}
    for r in rows:
        first.setdefault(r["fate"], r)
    assert "trained" in first and len(first) >= 2, sorted(first)
    split = "removed by --split 969, 30, 1 (outside the training split)"
    assert (framework == "megatron") == (split in first)
    longest = int(np.argmax(np.load(lengths)))  # torchtune: longer than the 8 tokens the config truncates to
    for row in [*first.values(), next(r for r in rows if r["document"] == str(longest))]:
        assert main(["explain", "--index", row["document"], *common, "--json"]) == 0, row
        got = json.loads(capsys.readouterr().out)
        columns = ["document", "length", "fate"] + ([] if row["pass"] == "-1" else [
            "first_row", "emitted", "partial_row", "discarded", "filtered", "buffered", "never_reached"])
        assert {c: str(got[c]) for c in columns} == {c: row[c] for c in columns}, row
