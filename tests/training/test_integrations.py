"""The ledger inside real libraries: TRL's packing and collator, a plain torch loop, the HF / TRL trainers.

The fast tests build the batches with the libraries themselves (TRL's
``pack_dataset`` and ``DataCollatorForLanguageModeling`` exactly as ``SFTTrainer``
configures them; a torch ``DataLoader``); the trainer runs (a tiny Llama built
from a config, CPU) are marked slow.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from packing_theory.corpus.documents import TokenDocuments
from packing_theory.training import (
    Schedule,
    TrainingLedger,
    certify,
    model_hook,
    observe_batches,
    reconcile,
    verify_resume,
)
from tests.training.hf_helpers import tiny_llama, tiny_tokenizer, token_lists

DOCS = token_lists(120, seed=3)
CORPUS = TokenDocuments.from_lists(DOCS)
L = 48


def _trl_batches(strategy: str, per_batch: int) -> list[dict[str, Any]]:
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    packed = trl.pack_dataset(datasets.Dataset.from_dict({"input_ids": DOCS}), L, strategy=strategy)
    collate = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=strategy != "wrapped")
    rows = [packed[i] for i in range(len(packed))]
    return [collate(rows[i : i + per_batch]) for i in range(0, len(rows) - per_batch + 1, per_batch)]


@pytest.mark.parametrize("strategy", ["bfd", "bfd_split", "wrapped"])
def test_trl_collator_batches_reconcile_with_the_replay(tmp_path: Path, strategy: str) -> None:
    """TRL packs and collates; the ledger's per-document trained targets equal the trl-* replay's."""
    batches = _trl_batches(strategy, 2)
    ledger = TrainingLedger(tmp_path / "l.ptl", CORPUS)
    for _ in observe_batches(batches, ledger, accumulation=2):
        ledger._check()
    ledger.close()
    res = reconcile(tmp_path / "l.ptl", CORPUS, f"trl-{strategy}", capacity=L,
                    schedule=Schedule(rows_per_step=4))
    assert res.reconciled, res.headline()
    assert res.trained_mismatch == 0 and res.records == (len(batches) + 1) // 2  # the last step: one batch
    if strategy != "bfd_split":  # bfd_split packs a long document's fragments into several rows
        consumed = res.trained_by_document
        unit = 1 if strategy != "wrapped" else 0
        assert all(t <= min(len(DOCS[d]), L) - unit for d, t in consumed.items())


def test_a_plain_torch_loop(tmp_path: Path) -> None:
    """A torch DataLoader of nanochat-style rows, a model called with keyword arguments, hooked."""
    torch = pytest.importorskip("torch")
    from packing_theory.adapters import pack_rows
    from tests.training.simulate import replay_rows

    rows = replay_rows("continue", CORPUS, 17, min_buffer=8, refill=4)[:24]
    full = pack_rows(rows, CORPUS, 17).shifted()
    pairs = zip(full["input_ids"], full["targets"], strict=True)
    data = [(torch.tensor(x), torch.tensor(y)) for x, y in pairs]
    loader = torch.utils.data.DataLoader(data, batch_size=3)
    emb = torch.nn.Embedding(512, 8)
    head = torch.nn.Linear(8, 512)
    opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.1)

    class Model(torch.nn.Module):  # type: ignore[misc]
        def forward(self, input_ids: Any, labels: Any) -> Any:
            logits = head(emb(input_ids))
            flat = logits[:, :-1].reshape(-1, 512)
            return torch.nn.functional.cross_entropy(flat, labels[:, 1:].reshape(-1), ignore_index=-100)

    by_loader = TrainingLedger(tmp_path / "a.ptl", CORPUS, ignore_index=-1)
    by_hook = TrainingLedger(tmp_path / "b.ptl", CORPUS)
    model = Model()
    handle = model_hook(by_hook, model)
    for step, (x, y) in enumerate(observe_batches(loader, by_loader)):
        row = torch.cat([x, y[:, -1:]], dim=1)
        loss = model(input_ids=row, labels=row)
        loss.backward()
        opt.step()
        opt.zero_grad()
        by_hook.end_step(step)
    handle.remove()
    model.eval()
    model(input_ids=row, labels=row)  # evaluation: not recorded
    by_loader.close()
    by_hook.close()
    for path in ("a.ptl", "b.ptl"):
        res = reconcile(tmp_path / path, CORPUS, "continue", capacity=17,
                        options={"min_buffer": 8, "refill": 4}, schedule=Schedule(rows_per_step=3))
        assert res.reconciled and res.records == 8 and res.trained_mismatch == 0, res.headline()


def _sft_run(tmp_path: Path, name: str, strategy: str, *, max_steps: int, resume: str | None = None,
             save_steps: int | None = None, ledger: TrainingLedger | None = None) -> TrainingLedger:
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from packing_theory.training import ledger_callback

    tmp_path.mkdir(parents=True, exist_ok=True)
    ledger = ledger or TrainingLedger(tmp_path / f"{name}.ptl", CORPUS)
    packing = strategy != "none"  # "none": padding-free without packing (max_length is then not enforced)
    args = trl.SFTConfig(
        output_dir=str(tmp_path / "out"), max_steps=max_steps, per_device_train_batch_size=2,
        gradient_accumulation_steps=2, packing=packing, packing_strategy=strategy if packing else "bfd",
        padding_free=not packing, max_length=L if packing else None, report_to=[], use_cpu=True,
        logging_steps=1000, save_strategy="steps" if save_steps else "no", save_steps=save_steps or 500,
        train_sampling_strategy="sequential", dataloader_num_workers=0, seed=0, disable_tqdm=True)
    trainer = trl.SFTTrainer(model=tiny_llama(), args=args,
                             train_dataset=datasets.Dataset.from_dict({"input_ids": DOCS}),
                             processing_class=tiny_tokenizer(), callbacks=[ledger_callback(ledger)])
    trainer.train(resume_from_checkpoint=resume)
    return ledger


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["bfd", "wrapped"])
def test_sft_trainer_consumes_the_trl_replay(tmp_path: Path, strategy: str) -> None:
    """A real SFTTrainer run with packing: every step equals the trl replay, trained targets included."""
    pytest.importorskip("transformers")
    ledger = _sft_run(tmp_path, "run", strategy, max_steps=6)
    assert ledger.steps == 6
    res = reconcile(tmp_path / "run.ptl", CORPUS, f"trl-{strategy}", capacity=L,
                    schedule=Schedule(rows_per_step=4))
    assert res.reconciled and res.records == 6, res.headline()
    assert res.trained_mismatch == 0


@pytest.mark.slow
def test_sft_trainer_padding_free_without_packing(tmp_path: Path) -> None:
    """Padding-free, no packing: each example is one sequence; all but its first token trained, once."""
    pytest.importorskip("transformers")
    _sft_run(tmp_path, "pf", "none", max_steps=5)
    res = reconcile(tmp_path / "pf.ptl", CORPUS, "trl-bfd", capacity=max(len(d) for d in DOCS), options={
        "window": 1}, schedule=Schedule(rows_per_step=4))  # window 1: one document per row, in order
    assert res.reconciled and res.trained_mismatch == 0, res.headline()
    assert res.trained_by_document == {d: len(DOCS[d]) - 1 for d in range(20)}


@pytest.mark.slow
def test_sft_trainer_resume_consumes_what_the_uninterrupted_run_did(tmp_path: Path) -> None:
    """Interrupted after step 4 (checkpoint at 3), resumed from the checkpoint: the certificates agree."""
    pytest.importorskip("transformers")
    _sft_run(tmp_path / "a", "whole", "bfd", max_steps=6)
    certify(tmp_path / "a" / "whole.ptl", tmp_path / "ref.cert")
    _sft_run(tmp_path / "b", "first", "bfd", max_steps=4, save_steps=3)
    resumed = _sft_run(tmp_path / "b", "second", "bfd", max_steps=6,
                       resume=str(tmp_path / "b" / "out" / "checkpoint-3"))
    assert resumed.next_step == 6
    check = verify_resume(tmp_path / "ref.cert", tmp_path / "b" / "first.ptl", tmp_path / "b" / "second.ptl")
    assert check.resume_step == 3 and check.equal, check.headline()
    # the resumed ledger loaded the checkpoint's chain: its own last digest is the uninterrupted run's
    from packing_theory.training import CertificateFile

    with CertificateFile.open(tmp_path / "ref.cert") as cf:
        (_, block), = list(cf.blocks())
    assert bytes(block[-1, 0]) == resumed.digest


def test_ledger_callback_refuses_what_it_cannot_observe(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from packing_theory.errors import InputError, InputTypeError
    from packing_theory.training import ledger_callback

    with pytest.raises(InputTypeError, match="ledger must be a TrainingLedger or a factory"):
        ledger_callback(3)  # type: ignore[arg-type]
    made: list[tuple[int, int]] = []

    def factory(rank: int, world: int) -> TrainingLedger:
        made.append((rank, world))
        return TrainingLedger(tmp_path / f"l{rank}.ptl", CORPUS, rank=rank, world_size=world)

    cb = ledger_callback(factory)
    assert cb.ledger is None  # built when training begins, for the process's rank
    args = SimpleNamespace(process_index=1, world_size=2, label_smoothing_factor=0.1,
                           output_dir=str(tmp_path))
    with pytest.raises(InputError, match=r"label_smoothing_factor=0\.1: the Trainer pops the labels"):
        cb.on_train_begin(args, SimpleNamespace(global_step=0), None, model=tiny_llama())
    assert made == [(1, 2)] and cb.ledger.rank == 1
