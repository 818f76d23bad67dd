"""Framework config files, written as each framework writes them, mapped onto the registered peers.

Where the framework's own config class installs here it writes (or validates)
the file: TRL's ``SFTConfig`` (dumped to YAML and JSON), Axolotl 0.19.0's
``AxolotlInputConfig`` (installed without its dependencies; the YAML is
validated by it). LLM Foundry, torchtune and Megatron-LM's argument parser do
not install here: their files are written as their documentation shows them.
Each mapping is compared with a hand mapping, and the mapped packer's rows with
the committed peer golden digests of the framework's own code
(``tests/data/peer_golden``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from packing_theory.configs import config_settings, detect_framework, read_config
from packing_theory.engine.horizon import Budget
from packing_theory.errors import InputError
from packing_theory.registry import entry
from tests.peers.test_golden import METAS, inputs_mod

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "peer_golden"
CHECKED = 150  # golden inputs replayed per fixture here (the peer tests replay all of them)


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc) if path.suffix == ".yaml" else json.dumps(doc))
    return path


def _row_goldens_match(packer: Any, fixture: str) -> None:
    meta = METAS[GOLDEN / f"{fixture}.json"]
    g = meta["gen"]
    lists = list(inputs_mod.inputs(g["seed"], meta["count"], meta["seq_length"], empty=g["empty"],
                                   min_total=g.get("min_total", 0)))[:CHECKED]
    for lengths, want in zip(lists, meta["digests"], strict=False):
        try:
            rows, seqs = inputs_mod.our_rows(packer, lengths)
            got = inputs_mod.digest(rows, seqs if meta["seq_lengths"] else None)
        except ValueError:
            got = "error"
        assert got == want, lengths


def _trainer_goldens_match(framework: str, cfg: dict[str, Any], fixture: str) -> None:
    meta = METAS[GOLDEN / f"{fixture}.json"]
    assert cfg == meta["config"]  # the mapped options are the fixture's configuration
    for lengths, want in list(zip(meta["streams"], meta["digests"], strict=True))[:CHECKED]:
        assert inputs_mod.our_trainer_view(framework, cfg, lengths) == want


# ----------------------------------------------------------------------------- TRL


def _sft_config(**kw: Any) -> Any:
    trl = pytest.importorskip("trl")
    return trl.SFTConfig(output_dir="out", use_cpu=True, bf16=False, report_to="none", **kw)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_trl_sft_config_dump(tmp_path: Path, suffix: str) -> None:
    cfg = _sft_config(packing=True, max_length=8, max_steps=5, per_device_train_batch_size=2,
                      gradient_accumulation_steps=3, completion_only_loss=True)
    path = tmp_path / f"sft{suffix}"
    text = cfg.to_json_string()
    path.write_text(yaml.safe_dump(json.loads(text)) if suffix == ".yaml" else text)
    m = read_config(path)
    assert (m.framework, m.packer, m.capacity, m.seq_length, m.options) == ("trl", "trl-bfd", 8, 8, {})
    assert m.horizon == Budget("rows", 5 * 2 * 3) and m.rows_per_step == 6 and m.trainable == "completion"
    assert {u.key for u in m.used} >= {"packing", "packing_strategy", "max_length", "max_steps"}
    ignored = dict(m.ignored)
    assert "learning_rate" in ignored and "padding_free" in ignored
    _row_goldens_match(m.build(), "trl-bfd__L8_w1000")


@pytest.mark.parametrize("strategy", ["bfd_split", "wrapped"])
def test_trl_strategies(tmp_path: Path, strategy: str) -> None:
    cfg = _sft_config(packing=True, max_length=8, packing_strategy=strategy)
    m = read_config(_write(tmp_path / "sft.json", json.loads(cfg.to_json_string())))
    assert m.packer == f"trl-{strategy}" and m.horizon is None
    _row_goldens_match(m.build(), f"trl-{strategy}__L8_w1000")


@pytest.mark.parametrize(("change", "key"), [
    ({"packing": False}, "packing: False"),
    ({"packing": True, "dataset_num_proc": 4}, "dataset_num_proc: 4"),
    ({"packing": True, "shuffle_dataset": True}, "shuffle_dataset: True"),
])
def test_trl_refusals_name_the_key(tmp_path: Path, change: dict[str, Any], key: str) -> None:
    cfg = _sft_config(**change)
    path = _write(tmp_path / "sft.json", json.loads(cfg.to_json_string()))
    with pytest.raises(InputError, match=f"sft.json: {key} — "):
        read_config(path)


# ----------------------------------------------------------------------------- Axolotl


def _axolotl(tmp_path: Path, **kw: Any) -> Path:
    doc = {"base_model": "tiny", "datasets": [{"path": "data.jsonl", "type": "completion"}],
           "sample_packing": True, "sequence_len": 16, "micro_batch_size": 1,
           "gradient_accumulation_steps": 1, "num_epochs": 1, "learning_rate": 1e-4, "output_dir": "out",
           **kw}
    schema = pytest.importorskip("axolotl.utils.schemas.config")
    schema.AxolotlInputConfig(**doc)  # the file is a valid Axolotl 0.19.0 config
    return _write(tmp_path / "axolotl.yaml", doc)


def _trainer_cfg(m: Any) -> dict[str, Any]:
    opts = entry(m.packer).options(m.options)
    cfg = {("version" if k == "framework_version" else k): v for k, v in opts.items()
           if k not in ("orders", "num_count_samples")}
    return {**cfg, "L": m.seq_length}


def test_axolotl_sequential_order(tmp_path: Path) -> None:
    m = read_config(_axolotl(tmp_path, curriculum_sampling=True))
    assert (m.packer, m.capacity, m.options["seed"]) == ("axolotl-multipack", 16, None)
    _trainer_goldens_match("axolotl", _trainer_cfg(m), "axolotl-0.19.0-c00")


def test_axolotl_bins_groups_and_seed(tmp_path: Path) -> None:
    m = read_config(_axolotl(tmp_path, seed=11, sample_packing_bin_size=2, sample_packing_group_size=7,
                             max_steps=3, gradient_accumulation_steps=2))
    assert m.options == {"micro_batch_size": 1, "multipack_real_batches": False, "bin_size": 2,
                         "group_size": 7, "epochs": 1, "seed": 11}
    assert m.horizon == Budget("rows", 6) and m.rows_per_step == 2
    _trainer_goldens_match("axolotl", _trainer_cfg(m), "axolotl-0.19.0-c03")


def test_axolotl_micro_batch_widens_the_row(tmp_path: Path) -> None:
    m = read_config(_axolotl(tmp_path, micro_batch_size=4))
    assert (m.seq_length, m.capacity) == (16, 64)
    m = read_config(_axolotl(tmp_path, micro_batch_size=4, multipack_real_batches=True))
    assert m.capacity == 16


@pytest.mark.parametrize(("change", "key"), [({"sample_packing": False}, "sample_packing: False"),
                                             ({"val_set_size": 0.1}, "val_set_size: 0.1"),
                                             ({"num_epochs": 1.5}, "num_epochs: 1.5")])
def test_axolotl_refusals(tmp_path: Path, change: dict[str, Any], key: str) -> None:
    with pytest.raises(InputError, match=f"axolotl.yaml: {key} — "):
        read_config(_axolotl(tmp_path, **change))


# ----------------------------------------------------------------------------- LLM Foundry


FOUNDRY = """\
max_seq_len: 8
global_train_batch_size: 2
device_train_microbatch_size: 1
max_duration: 3ba
train_loader:
  name: finetuning
  dataset:
    hf_name: tatsu-lab/alpaca
    split: train
    max_seq_len: ${max_seq_len}
    decoder_only_format: true
    packing_ratio: 2.0
    shuffle: true
  drop_last: false
  num_workers: 8
optimizer:
  name: decoupled_adamw
  lr: 1.0e-5
"""


def test_foundry_finetuning_yaml(tmp_path: Path) -> None:
    pytest.importorskip("omegaconf")
    path = tmp_path / "finetune.yaml"
    path.write_text(FOUNDRY)
    m = read_config(path)
    assert (m.framework, m.packer, m.capacity) == ("foundry", "foundry-binpack", 8)
    assert m.options == {"packing_ratio": 2.0, "drop_last": False, "batch_size": 2}
    assert m.horizon == Budget("rows", 6)
    assert "optimizer" in dict(m.ignored) and "train_loader.dataset.shuffle" in dict(m.ignored)
    _row_goldens_match(m.build(), "foundry-binpack__L8_b2_r2.0_kNone_right")
    path.write_text(FOUNDRY.replace("packing_ratio: 2.0", "packing_ratio: auto"))
    with pytest.raises(InputError, match=r"train_loader\.dataset\.packing_ratio: 'auto' — "):
        read_config(path)


# ----------------------------------------------------------------------------- torchtune


TORCHTUNE = """\
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/tokenizer.model
  max_seq_len: 8
dataset:
  _component_: torchtune.datasets.alpaca_dataset
  packed: True
batch_size: 2
gradient_accumulation_steps: 4
epochs: 1
max_steps_per_epoch: 5
shuffle: True
"""


@pytest.mark.parametrize(("text", "fixture"), [
    (TORCHTUNE, "torchtune-0.6.1-c00"),
    (TORCHTUNE.replace("  packed: True", "  packed: True\n  split_across_pack: True"), "torchtune-0.6.1-c05"),
    (TORCHTUNE.replace("alpaca_dataset", "text_completion_dataset"), "torchtune-0.6.1-c05"),
])
def test_torchtune_recipe(tmp_path: Path, text: str, fixture: str) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    m = read_config(path)
    assert m.capacity == 8 and m.pre_truncate == 8 and m.horizon == Budget("rows", 5 * 2 * 4)
    cfg = {"split_across_pack": m.packer == "torchtune-split", "L": 8, **entry(m.packer).options(m.options)}
    del cfg["framework_version"]
    _trainer_goldens_match("torchtune", cfg, fixture)


# ----------------------------------------------------------------------------- Megatron


@pytest.mark.parametrize("form", ["args", "yaml"])
def test_megatron_arguments(tmp_path: Path, form: str) -> None:
    if form == "args":
        path = tmp_path / "pretrain.sh"
        path.write_text("python pretrain_gpt.py \\\n  --seq-length 8 --data-path /data/web_text_document \\\n"
                        "  --micro-batch-size 2 --lr 3e-4  # a comment\n")
    else:
        path = _write(tmp_path / "megatron.yaml", {"seq_length": 8, "data_path": ["/data/web_text_document"],
                                                   "micro_batch_size": 2, "lr": 3e-4})
    m = read_config(path)
    assert (m.framework, m.packer, m.seq_length, m.capacity, m.options) == ("megatron", "megatron-gpt", 8, 9,
                                                                            {"seed": 1234})
    assert "lr" in dict(m.ignored) and "micro_batch_size" in dict(m.ignored)
    _row_goldens_match(m.build(), "megatron-gpt__L8_s1234_nNone")


def test_megatron_blend_declares_the_mixture(tmp_path: Path) -> None:
    path = tmp_path / "blend.args"
    path.write_text("--seq-length 16 --data-path 0.3 /d/web 0.7 /d/code --split 90,10,0 "
                    "--train-iters 10 --global-batch-size 4 --seed 7")
    m = read_config(path)
    assert m.blend is not None and m.blend.num_samples == 40 and m.horizon == Budget("rows", 40)
    assert m.mixture is not None and m.mixture.alpha == pytest.approx({"web": 0.3, "code": 0.7})
    assert m.blend.targets() == [12, 28] and m.blend.built() == [13, 29] and m.rows_per_step == 4
    path.write_text("--seq-length 16 --data-path 0.3 /d/web 0.7 /d/code")
    with pytest.raises(InputError, match="a weighted blend needs --train-samples"):
        read_config(path)
    path.write_text("--seq-length 16 --data-path /d/web --mock-data")
    with pytest.raises(InputError, match="mock_data: True — "):
        read_config(path)


# ----------------------------------------------------------------------------- nanochat, Parcae


def test_nanochat_sft_settings(tmp_path: Path) -> None:
    path = _write(tmp_path / "sft.yaml", {"framework": "nanochat", "script": "chat_sft", "max_seq_len": 1024,
                                          "device_batch_size": 4, "total_batch_size": 4 * 1024 * 2,
                                          "num_iterations": 10, "embedding_lr": 0.3})
    m = read_config(path)
    assert (m.packer, m.capacity) == ("bestfit-pad", 1025)
    assert m.options == {"min_buffer": 100, "refill": 1, "passes": 2, "rows": 80}
    assert m.rows_per_step == 8 and m.horizon == Budget("rows", 80) and dict(m.ignored) == {
        "embedding_lr": "not a setting of the data pipeline"}


def test_parcae_launch_yaml_lists_the_unread_buffer_size(tmp_path: Path) -> None:
    path = _write(tmp_path / "parcae.yaml", {"block_size": 2048, "micro_batch_size": 16,
                                             "world_batch_size": 256, "pack_sequences": True,
                                             "pack_buffer_size": 1000, "max_steps": 4})
    m = read_config(path)
    assert (m.framework, m.packer, m.capacity, m.options) == ("parcae", "parcae-bestfit", 2049,
                                                              {"batch_size": 16})
    assert "never reads it" in dict(m.ignored)["pack_buffer_size"] and m.horizon == Budget("rows", 1024)


# ----------------------------------------------------------------------------- detection, settings


def test_detection_and_explicit_framework(tmp_path: Path) -> None:
    assert detect_framework({"pack_sequences": True, "micro_batch_size": 4})[0] == "parcae"
    with pytest.raises(InputError, match="cannot tell the framework"):
        detect_framework({"lr": 1})
    with pytest.raises(InputError, match="framework must be one of axolotl, trl"):
        detect_framework({"framework": "nope"})
    path = _write(tmp_path / "x.json", {"framework": "trl", "packing": True})
    with pytest.raises(InputError, match="says framework: trl, but 'axolotl' was asked"):
        read_config(path, "axolotl")


def test_config_settings_for_the_commands(tmp_path: Path) -> None:
    path = _write(tmp_path / "sft.yaml", {"framework": "nanochat", "max_seq_len": 64, "device_batch_size": 2,
                                          "total_batch_size": 128, "num_iterations": 3})
    s = config_settings(path)
    assert s.policies == ("bestfit-pad",) and (s.capacity, s.seq_length) == (65, 64)
    assert s.peer_options == ("min_buffer=100", "refill=1", "passes=2", "rows=6")
    assert s.text.startswith("mapping used: nanochat -> bestfit-pad (R = 65): ")
    assert s.text.endswith("ignored keys: none")


def test_autoresearch_settings(tmp_path: Path) -> None:
    path = _write(tmp_path / "ar.yaml", {"framework": "autoresearch", "policy": "continue",
                                         "num_iterations": 953})
    m = read_config(path)
    assert (m.packer, m.capacity, m.rows_per_step) == ("continue", 2049, 256)
    assert m.options == {"min_buffer": 1000, "refill": 128, "rows": 953 * 256}
    path = _write(tmp_path / "ar.yaml", {"framework": "autoresearch", "policy": "requeue-bos"})
    with pytest.raises(InputError, match="policy: 'requeue-bos' — autoresearch's loader is a family member"):
        read_config(path)
