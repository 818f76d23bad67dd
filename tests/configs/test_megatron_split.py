"""Megatron's ``--split`` on one dataset: only the training split is replayed, as megatron-core builds it.

The dataset is written with megatron-core's own ``IndexedDatasetBuilder`` and
split by its own ``BlendedMegatronDatasetBuilder`` (``GPTDataset`` over one
prefix, no weights). Before the fix the mapping said ``--split`` was applied
but the single-dataset path replayed every document: the validation and test
documents were reported trained (``audit --config``) and counted offered
(``doctor``).
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.configs import doctor, read_config
from packing_theory.configs.blend import train_split_range
from packing_theory.configs.megatron import split_stage_name
from packing_theory.errors import InputError
from tests.configs.test_blend import _helpers, _indexed, _Tokenizer

L, SAMPLES, SEED = 16, 60, 1234


def _megatron_train(prefix: str, split: str) -> Any:
    """megatron-core's training ``GPTDataset`` of one prefix under ``split`` (``SAMPLES`` samples)."""
    _helpers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
        from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    cfg = GPTDatasetConfig(random_seed=SEED, sequence_length=L, blend=([prefix], None), split=split,
                           path_to_cache=None, tokenizer=_Tokenizer(), reset_position_ids=False,
                           reset_attention_mask=False, eod_mask_loss=False)
    return BlendedMegatronDatasetBuilder(GPTDataset, [SAMPLES, 5, 5], lambda: True, cfg).build()[0]


def _dataset(tmp_path: Path, split: str) -> tuple[str, list[int], Path]:
    _helpers()  # megatron-core writes the dataset (and torch, its tensors): without them, skipped
    pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    lengths = [int(x) for x in rng.integers(3, 3 * L, size=1000)]  # each split holds documents
    prefix = _indexed(tmp_path, "wiki_text_document", lengths)
    args = tmp_path / "megatron.args"
    args.write_text(f"--seq-length {L} --data-path {prefix} --split {split.replace(' ', '')} "
                    f"--train-samples {SAMPLES} --seed {SEED}\n")
    return prefix, lengths, args


@pytest.mark.parametrize("split", ["50,25,25", "969,30,1"])
def test_only_the_training_split_is_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             split: str) -> None:
    prefix, lengths, args = _dataset(tmp_path, split)
    train = _megatron_train(prefix, split)
    begin, end = int(train.indices[0]), int(train.indices[-1]) + 1
    assert train_split_range(split, len(lengths)) == (begin, end) and end < len(lengths)
    # the documents megatron-core's first SAMPLES training samples hold
    theirs = {int(d) for j in range(SAMPLES) for d in train._query_document_sample_shuffle_indices(j)[1]}
    assert theirs <= set(range(begin, end))

    argv = ["audit", "--config", str(args), "--framework", "megatron", "--data", prefix + ".idx", "--bos",
            "included", "--out", str(tmp_path / "audit"), "--documents", "documents.csv"]
    assert main(argv) in (0, 1)
    err = capsys.readouterr().err
    assert f"only the documents of --split {split}'s training split" in err
    with open(tmp_path / "audit" / "documents.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    outside = {int(r["document"]) for r in rows if r["fate"] == f"removed by {split_stage_name(split)}"}
    assert outside == set(range(len(lengths))) - set(range(begin, end))
    started = {int(r["document"]) for r in rows if r["started"] == "true"}
    assert started == theirs  # exactly the documents Megatron's samples hold
    assert {int(r["document"]) for r in rows} == set(range(len(lengths)))  # every raw document has its row
    nt = json.loads((tmp_path / "audit" / "audit.json").read_text())["packers"][0]["never_trained"]

    report = doctor(read_config(args, "megatron"), np.asarray(lengths))
    assert report.documents == end - begin and report.tokens == sum(lengths[begin:end])
    assert report.untrained is not None  # the same measurement as audit's
    assert report.untrained.offered_documents == nt["offered_documents"]  # occurrences, over the epochs
    assert report.untrained.offered_tokens == nt["offered_tokens"]
    assert report.untrained.never_started.documents == nt["never_started"]["documents"]
    note = next(c for c in report.checked if c.startswith("split:"))
    assert (f"--split {split} trains documents [{begin:,}, {end:,}) of {len(lengths):,}; the other "
            f"{len(lengths) - end + begin:,} ({sum(lengths) - sum(lengths[begin:end]):,} tokens) are outside "
            "the training split") in note


def test_the_whole_dataset_or_an_empty_training_split(tmp_path: Path) -> None:
    _, lengths, args = _dataset(tmp_path, "100,0,0")
    report = doctor(read_config(args, "megatron"), np.asarray(lengths))
    assert report.documents == len(lengths) and not any(c.startswith("split:") for c in report.checked)
    args.write_text(f"--seq-length {L} --data-path x --split 0,1,0 --train-samples 5\n")
    with pytest.raises(InputError, match=r"megatron.args: split: '0,1,0' — the training split is empty: "
                                         "Megatron builds no training dataset"):
        read_config(args, "megatron")


EXPLAINED = ("name", "length", "fate")
"""``documents.csv`` columns every explanation carries (a replayed document's: also :data:`REPLAYED`)."""
REPLAYED = ("first_row", "emitted", "partial_row", "discarded", "filtered", "buffered", "never_reached")


def test_explain_with_the_config_agrees_with_audit_s_documents_csv(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``explain --config`` applies what ``audit --config`` applies: a document outside the training split
    is removed by ``--split``, one inside it has its ``documents.csv`` row. Before, ``explain`` had no
    ``--config`` (exit 2), and given the options by hand it replayed every document of the dataset."""
    split = "50,25,25"
    prefix, lengths, args = _dataset(tmp_path, split)
    begin, end = train_split_range(split, len(lengths))
    common = ["--config", str(args), "--framework", "megatron", "--data", prefix + ".idx", "--bos",
              "included"]
    assert main(["audit", *common, "--out", str(tmp_path / "audit"), "--documents", "documents.csv",
                 "--no-plots"]) in (0, 1)
    capsys.readouterr()
    with open(tmp_path / "audit" / "documents.csv", newline="", encoding="utf-8") as fh:
        rows = {int(r["document"]): r for r in csv.DictReader(fh) if r["pass"] in ("0", "-1")}
    started = [d for d, r in rows.items() if r["started"] == "true"]
    unstarted = [d for d, r in rows.items() if r["pass"] == "0" and r["started"] == "false"]
    assert started and unstarted
    chosen = [end, len(lengths) - 1, started[0], started[-1], unstarted[0]]
    assert rows[chosen[0]]["fate"] == rows[chosen[1]]["fate"] == f"removed by {split_stage_name(split)}"
    for document in chosen:
        assert main(["explain", "--index", str(document), *common, "--json"]) == 0, document
        out = capsys.readouterr()
        assert f"; only the documents of --split {split}'s training split" in out.err  # the mapping
        got, want = json.loads(out.out), rows[document]
        assert got["document"] == document
        replayed = want["pass"] == "0"
        for column in EXPLAINED + (REPLAYED if replayed else ()):
            assert str(got[column]) == want[column], (document, column, got[column], want[column])
        if not replayed:
            assert (f"document {document} ({want['name']}, length {int(want['length']):,}): outside the "
                    f"training split of the config's --split {split} (Megatron trains documents "
                    f"{begin:,}..{end - 1:,} of this dataset)") in out.err
    # the same document by its name, as documents.csv writes it
    assert main(["explain", rows[started[0]]["name"], *common]) == 0
    assert capsys.readouterr().out.startswith(f"document {started[0]} ({rows[started[0]]['name']}, length ")
