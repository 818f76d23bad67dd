"""The doctor on planted configs: each known problem found with its number, and nothing on a healthy one."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import packing_theory as pt
from packing_theory.cli import main
from packing_theory.configs import Thresholds, doctor
from packing_theory.configs.trainable import TrainableTokens
from packing_theory.invariant.starvation import starvation_bound


def _yaml(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def _kinds(report: Any) -> list[str]:
    return [f.kind for f in report.findings]


# nanochat PR #811: one conversation in five longer than the 1,025-token row
NANOCHAT = [300 + (i * 37) % 600 if i % 5 else 1500 + i for i in range(2000)]


def test_nanochat_buffer_clog_is_found_with_its_row_and_step(tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "sft.yaml", {"framework": "nanochat", "script": "chat_sft", "max_seq_len": 1024,
                                        "device_batch_size": 4, "total_batch_size": 4 * 1024 * 2})
    report = doctor(cfg, np.array(NANOCHAT))
    top = report.findings[0]
    # the replay, independently of the doctor
    rep = pt.replay(NANOCHAT, capacity=1025, min_buffer=100, refill=1, passes=2, policy="bestfit-pad")
    bound = starvation_bound(NANOCHAT, capacity=1025, min_buffer=100, refill=1, passes=2)
    assert rep.horizon.stop_reason == "starved" and bound is not None and bound.contains(rep.horizon.rows)
    s = rep.horizon.rows
    assert top.kind == "starvation" and top.detail["row"] == s and top.detail["step"] == s // 8
    assert f"from row {s:,}, optimizer step {s // 8:,} (8 rows a step)" in top.number
    assert top.documents == 100 and top.examples[0] == "document 0"  # the long ones: 0, 5, 10, ...
    assert "bfp_starvation" in top.rule and "PR #811" in top.rule
    assert report.headline().startswith("every row becomes padding: from row")


def test_starvation_after_the_horizon_is_checked_not_found(tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "sft.yaml", {"framework": "nanochat", "max_seq_len": 1024, "device_batch_size": 4,
                                        "total_batch_size": 4 * 1024 * 2, "num_iterations": 10})
    report = doctor(cfg, np.array(NANOCHAT))
    assert "starvation" not in _kinds(report)
    assert any(c.startswith("starvation: every row from row") and "after the horizon of 80 rows" in c
               for c in report.checked)
    # a horizon past the starvation: the all-padding rows up to it count as padding
    cfg = _yaml(tmp_path / "sft2.yaml", {"framework": "nanochat", "max_seq_len": 1024, "device_batch_size": 4,
                                         "total_batch_size": 4 * 1024 * 2, "num_iterations": 100})
    report = doctor(cfg, np.array(NANOCHAT))
    top = report.findings[0]
    s = top.detail["row"]
    assert top.kind == "starvation" and top.detail["all_padding_rows_to_horizon"] == 800 - s
    pad = next(f for f in report.findings if f.kind == "padding")
    assert pad.detail["positions"] == 800 * 1025 and pad.detail["all_padding_rows"] == 800 - s


def test_parcae_ignored_buffer_size_pads_two_thirds(tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "parcae.yaml", {"block_size": 2048, "micro_batch_size": 16,
                                           "world_batch_size": 256, "pack_sequences": True,
                                           "pack_buffer_size": 1000})
    report = doctor(cfg, np.full(1600, 683))
    assert _kinds(report) == ["padding"]
    f = report.findings[0]
    assert f.number == "66.7 % of the row positions are padding (2,185,600 of 3,278,400)"
    assert 3 * f.tokens == 2 * 1600 * 2049 and "never reads it" in f.rule and "parcae#8" in f.rule


def _trl_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    lengths = rng.integers(20, 120, 300)
    prompt = np.minimum(lengths - 1, rng.integers(5, 90, 300))
    return lengths, prompt


def test_trl_examples_left_with_no_trainable_token(tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    cfg = trl.SFTConfig(output_dir="out", use_cpu=True, bf16=False, report_to="none", packing=True,
                        max_length=64, completion_only_loss=True)
    path = tmp_path / "sft.json"
    path.write_text(cfg.to_json_string())
    lengths, prompt = _trl_data()
    report = doctor(path, lengths, prompt_lengths=prompt)
    f = next(f for f in report.findings if f.kind == "no-trainable")
    # by hand: bfd keeps the first 64 tokens, so an example trains nothing when its prompt reaches 64
    empty = np.flatnonzero(prompt >= 64)
    assert f.documents == empty.size > 0
    assert f.examples == tuple(f"document {i}" for i in empty[:10])
    assert f.tokens == 64 * empty.size  # each fills a whole truncated row of 64 positions ...
    assert "PR #6025" in f.rule
    # ... and without the prompt lengths the check says what it needs
    report = doctor(path, lengths)
    assert "no-trainable" not in _kinds(report)
    assert any("--prompt-lengths" in c for c in report.checked)


def test_axolotl_drop_last_losses(tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "axolotl.yaml", {"sample_packing": True, "sequence_len": 64, "micro_batch_size": 4,
                                            "multipack_real_batches": True, "curriculum_sampling": True})
    # by hand: rows of 40 tokens, one per bin of 64; batches of 4 bins in file order; 203 = 50 * 4 + 3, so
    # drop_last drops the bins of rows 200, 201, 202
    report = doctor(cfg, np.full(203, 40))
    f = next(f for f in report.findings if f.kind == "dropped-batches")
    assert (f.documents, f.tokens) == (3, 120)
    assert f.examples == ("document 200", "document 201", "document 202")
    assert "drop_last" in f.rule and "#2040" in f.rule
    assert f.number == ("3 documents (1.5 % of the 203 offered) are never trained: 120 tokens (1.5 % of the "
                        "8,120 tokens offered)")


def test_megatron_blend_realised_share_misses_its_weight(tmp_path: Path) -> None:
    path = tmp_path / "blend.args"
    path.write_text("--seq-length 64 --data-path 1 /d/short 1 /d/long --split 100 --train-samples 200")
    rng = np.random.default_rng(3)
    data = {"short": rng.integers(5, 30, 3000), "long": rng.integers(100, 400, 300)}
    report = doctor(path, data)
    assert _kinds(report) == ["blend"]
    f = report.findings[0]
    rows = {r["source"]: r for r in f.detail["sources"]}
    assert rows["short"]["samples"] == rows["long"]["samples"] == 100  # the greedy index: half each
    assert rows["short"]["document_share"] > 0.8 and rows["short"]["weight"] == 0.5
    assert f.severity == pytest.approx(rows["short"]["document_share"] - 0.5)
    assert "NVIDIA/Megatron-LM#547" in f.rule
    with pytest.raises(pt.InputError, match="no lengths for blend source 'long'"):
        doctor(path, {"short": data["short"]})


def test_healthy_config_finds_nothing(tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "sft.yaml", {"packing": True, "max_length": 64, "completion_only_loss": True})
    report = doctor(cfg, np.full(400, 16), prompt_lengths=np.full(400, 4))
    assert report.findings == () and not report.found
    assert report.headline().startswith("nothing found: 400 documents (6,400 tokens) replayed with trl-bfd")
    assert "Nothing found." in report.markdown()
    doc = report.to_dict()
    assert doc["found"] is False and doc["findings"] == [] and doc["mapping"].startswith("mapping used: trl")


def test_thresholds_decide(tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "parcae.yaml", {"block_size": 2048, "micro_batch_size": 16,
                                           "pack_sequences": True})
    assert doctor(cfg, np.full(160, 683), thresholds=Thresholds(padding=0.7)).findings == ()


# ----------------------------------------------------------------------------- the consumer


def test_trainable_tokens_against_a_naive_count() -> None:
    lengths, prompt = _trl_data()
    packer = pt.build_packer("trl-bfd", capacity=64)
    consumer = TrainableTokens(64, prompt)
    events = list(packer.events(lengths))
    for ev in events:
        consumer.feed(ev)
        consumer._check()
    got = consumer.result().trained
    want = np.zeros(lengths.size, np.int64)
    for ev in events:
        if isinstance(ev, pt.Placement):
            want[ev.source] += len(set(range(ev.start, ev.source_stop)) & set(range(prompt[ev.source],
                                                                                   lengths[ev.source])))
    assert got.tolist() == want.tolist()
    from packing_theory.engine.batches import batched

    (again,) = pt.feed_all(batched(events, 7), TrainableTokens(64, prompt))
    assert again.trained.tolist() == got.tolist()
    assert again.started.tolist() == consumer.result().started.tolist()
    with pytest.raises(pt.InputError, match=r"first_trainable\[1\] = -2 must be >= 0"):
        TrainableTokens(8, [1, -2])
    with pytest.raises(pt.InputError, match="needs the Horizon event"):
        TrainableTokens(8, [1]).result()


# ----------------------------------------------------------------------------- the command


def test_cli_exit_codes_and_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "ok.npy", np.full(400, 16))
    np.save(tmp_path / "parcae.npy", np.full(1600, 683))
    ok = _yaml(tmp_path / "ok.yaml", {"packing": True, "max_length": 64})
    bad = _yaml(tmp_path / "parcae.yaml", {"block_size": 2048, "micro_batch_size": 16,
                                           "pack_sequences": True})
    assert main(["doctor", "--config", str(ok), "--lengths", str(tmp_path / "ok.npy")]) == 0
    out = capsys.readouterr()
    assert "Nothing found." in out.out and out.err.startswith("mapping used: trl -> trl-bfd (R = 64)")
    assert main(["doctor", "--config", str(bad), "--lengths", str(tmp_path / "parcae.npy"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["found"] and doc["findings"][0]["kind"] == "padding" and doc["findings"][0]["rank"] == 1
    refused = _yaml(tmp_path / "nopack.yaml", {"framework": "trl", "packing": False})
    assert main(["doctor", "--config", str(refused), "--lengths", str(tmp_path / "ok.npy")]) == 2
    assert "nopack.yaml: packing: False — without packing" in capsys.readouterr().err
    assert main(["doctor", "--config", str(ok)]) == 2
    assert "give the corpus: --lengths FILE.npy or --data PATH" in capsys.readouterr().err


def test_cli_megatron_blend_reads_the_prefixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("megatron.core.datasets.indexed_dataset")
        from tests.configs.test_blend import _indexed
    rng = np.random.default_rng(4)
    _indexed(tmp_path, "short", [int(x) for x in rng.integers(5, 30, 400)])
    _indexed(tmp_path, "long", [int(x) for x in rng.integers(100, 400, 60)])
    path = tmp_path / "blend.args"
    path.write_text("--seq-length 64 --data-path 1 short 1 long --split 100 --train-samples 100")
    assert main(["doctor", "--config", str(path)]) == 2
    assert "--bos is required" in capsys.readouterr().err
    assert main(["doctor", "--config", str(path), "--bos", "included", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["kind"] for f in doc["findings"]] == ["blend"] and doc["documents"] == 460


# ------------------------------------------------- what the run never trained: the audit's one measurement


def _trl_horizon(tmp_path: Path, max_steps: int | None) -> tuple[Path, np.ndarray]:
    """A TRL bfd config whose max_steps horizon (2 rows a step) stops inside its one window of bins, and a
    corpus of one document in four longer than the row of 64 (truncated to it)."""
    doc: dict[str, Any] = {"packing": True, "packing_strategy": "bfd", "max_length": 64,
                           "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1}
    if max_steps is not None:
        doc["max_steps"] = max_steps
    rng = np.random.default_rng(11)
    lengths = np.where(np.arange(600) % 4 == 0, rng.integers(65, 300, 600), rng.integers(5, 60, 600))
    return _yaml(tmp_path / f"sft_{max_steps}.yaml", doc), lengths


def test_never_started_is_the_audits_measurement_split_by_cause(tmp_path: Path) -> None:
    path, lengths = _trl_horizon(tmp_path, 100)
    report = doctor(path, lengths)
    # the one measurement, run as audit runs it, independently of the doctor's replay
    run = pt.measure(lengths, ["trl-bfd"], pt.Settings(capacity=64), horizon=pt.Budget("rows", 200)).runs[0]
    nt, mine = run.never_trained, report.untrained
    assert mine is not None and nt.never_started.documents > 0
    for part in ("never_started", "dropped", "still_buffered", "partial_row", "never_reached"):
        assert getattr(mine, part) == getattr(nt, part), part
    assert (mine.offered_documents, mine.offered_tokens, mine.trained_tokens) == (
        nt.offered_documents, nt.offered_tokens, nt.trained_tokens)
    # the never-started findings split exactly those documents, each in one
    ns = [f for f in report.findings if f.kind in ("filtered", "dropped-batches", "never-started")]
    assert sum(f.documents for f in ns) == nt.never_started.documents
    assert sum(f.tokens for f in ns) == nt.never_started.tokens
    assert f"{nt.never_started.documents:,} documents never started" in report.untrained_text()
    assert f"tails of {nt.dropped.documents:,} documents that started were cut off" in report.untrained_text()
    assert next(f for f in report.findings if f.kind == "tails-cut").tokens == nt.dropped.tokens


def test_each_share_is_its_own_count_over_the_offered(tmp_path: Path) -> None:
    path, lengths = _trl_horizon(tmp_path, 100)
    report = doctor(path, lengths)
    # by hand from the packer's own placements: rows 0..199 are trained (max_steps 100 x 2 rows)
    placed = {ev.source for ev in pt.build_packer("trl-bfd", capacity=64).events(lengths)
              if isinstance(ev, pt.Placement) and ev.row < 200}
    never = [i for i in range(lengths.size) if i not in placed]
    tokens = int(lengths[never].sum())
    f = next(f for f in report.findings if f.kind == "never-started")
    assert (f.documents, f.tokens) == (len(never), tokens)
    assert f.examples == tuple(f"document {i}" for i in never[:10])
    offered = int(lengths.sum())
    assert report.tokens == offered and report.documents == lengths.size == 600
    assert f"({100 * len(never) / 600:.1f} % of the 600 offered)" in f.number  # of all 600
    assert f"({100 * tokens / offered:.1f} % of the {offered:,} tokens offered)" in f.number
    assert f.severity == report.offered_share(f) == tokens / offered
    md = report.markdown()
    assert "| share of the offered tokens |" in md and "share of the run" not in md
    assert f"| {tokens:,} | {100 * tokens / offered:.1f}% |" in md
    cut = next(f for f in report.findings if f.kind == "tails-cut")
    assert f"| {cut.tokens:,} | {100 * cut.tokens / offered:.1f}% |" in md


def test_documents_past_the_horizon_name_it_as_their_cause(tmp_path: Path) -> None:
    path, lengths = _trl_horizon(tmp_path, 100)
    f = next(f for f in doctor(path, lengths).findings if f.kind == "never-started")
    assert "after the horizon of 200 rows (max_steps = 100)" in f.rule
    assert "discards" not in f.rule and "dropped" not in f.title
    # without max_steps every document is started: no never-started finding
    free, _ = _trl_horizon(tmp_path, None)
    report = doctor(free, lengths)
    assert not {"never-started", "dropped-batches"} & set(_kinds(report))
    assert report.untrained is not None and report.untrained.never_started.documents == 0


def test_cli_doctor_agrees_with_audit_and_prints_plain_text(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path, lengths = _trl_horizon(tmp_path, 100)
    np.save(tmp_path / "l.npy", lengths)
    argv = ["--config", str(path), "--lengths", str(tmp_path / "l.npy")]
    assert main(["doctor", *argv, "--json"]) == 1
    mine = json.loads(capsys.readouterr().out)["untrained"]
    assert main(["audit", *argv, "--out", str(tmp_path / "audit")]) == 0
    capsys.readouterr()
    theirs = json.loads((tmp_path / "audit" / "audit.json").read_text())["packers"][0]["never_trained"]
    for key in ("never_started", "dropped", "never_reached", "offered_tokens", "trained_tokens", "documents"):
        assert mine[key] == theirs[key], key
    assert main(["doctor", *argv]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(f"from trl config {path}); 1 more finding")  # not sft\_100.yaml
    assert "\\_" not in out and "|" not in out and "**" not in out
    started = theirs["never_started"]["documents"]
    assert "never trained: trained " in out and f"{started:,} documents never started" in out


# ------------------------------------- a framework that truncates before packing: the same counts as audit's

TORCHTUNE = """\
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/tokenizer.model
  max_seq_len: 64
dataset:
  _component_: torchtune.datasets.text_completion_dataset
  packed: true
batch_size: 4
epochs: 1
max_steps_per_epoch: 10
"""


def test_truncation_before_packing_counts_only_started_documents(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """torchtune truncates every document to max_seq_len before packing. Before the fix the tails-cut
    finding counted every document longer than that, started or not ("cut from 917 started documents" where
    267 started), over the tokens read, while the never-trained line used the offered tokens."""
    path = tmp_path / "tt.yaml"
    path.write_text(TORCHTUNE)
    rng = np.random.default_rng(3)
    raw = np.where(np.arange(400) % 3 == 0, rng.integers(65, 400, 400), rng.integers(5, 60, 400))
    report = doctor(path, raw)
    offered_lengths = np.minimum(raw, 64)
    offered, read = int(offered_lengths.sum()), int(raw.sum())
    # by hand from the packer's own placements: the 40 rows of max_steps_per_epoch 10 x batch_size 4
    placed = {ev.source for ev in pt.build_packer("torchtune-split", capacity=64).events(offered_lengths)
              if isinstance(ev, pt.Placement) and ev.row < 40}
    cut = sorted(d for d in placed if raw[d] > 64)
    assert 0 < len(cut) < int(np.count_nonzero(raw > 64))  # some long documents never started
    f = next(f for f in report.findings if f.kind == "tails-cut")
    tokens = int((raw[cut] - 64).sum())
    assert (f.documents, f.tokens) == (len(cut), tokens)
    assert f.number == (f"{tokens:,} tokens ({100 * tokens / read:.1f} % of the {read:,} tokens read) are "
                        f"cut from {len(cut):,} of the {len(placed):,} documents that started")
    assert f.severity == report.offered_share(f) == tokens / read
    assert (report.tokens, report.read_tokens) == (offered, read)
    ns = next(f for f in report.findings if f.kind == "never-started")
    assert f"of the {offered:,} tokens offered)" in ns.number and ns.severity == ns.tokens / offered
    text = report.text()
    assert f"{report.documents:,} documents, {offered:,} tokens offered, {read:,} read before" in text
    # the same config through audit: the same offered tokens, started and never-started documents
    np.save(tmp_path / "l.npy", raw)
    assert main(["audit", "--config", str(path), "--lengths", str(tmp_path / "l.npy"), "--out",
                 str(tmp_path / "audit")]) in (0, 1)
    capsys.readouterr()
    theirs = json.loads((tmp_path / "audit" / "audit.json").read_text())["packers"][0]["never_trained"]
    assert report.untrained is not None
    assert theirs["offered_tokens"] == offered == report.untrained.offered_tokens
    assert theirs["never_started"]["documents"] == report.untrained.never_started.documents == ns.documents
