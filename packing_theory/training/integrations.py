"""The ledger inside trainers we did not write: the Hugging Face ``Trainer`` and TRL's ``SFTTrainer``.

One line::

    trainer = SFTTrainer(..., callbacks=[ledger_callback(TrainingLedger("ledger.ptl", corpus))])

**Where the batch is read.** The callback registers a forward pre-hook on the
model (``register_forward_pre_hook(..., with_kwargs=True)``) when training
begins, so it sees exactly the keyword arguments the model is called with —
after the collator (TRL's packing and padding-free flattening, the
``position_ids`` and ``cu_seq_lens_q`` it derives, the labels it masks), after
the trainer moved them to the device, micro-batch by micro-batch, and only
for the batches actually trained on. The alternatives are more fragile:
wrapping the data collator sees batches that are prefetched or skipped
(``Trainer.get_batch_samples`` collates a whole accumulation window ahead;
``accelerate.skip_first_batches`` collates batches it then discards on
resume) and runs in dataloader worker processes; overriding
``compute_loss`` / ``training_step`` needs a subclass of each trainer. Only
calls made while ``model.training`` is true are recorded (evaluation is not).

**Steps.** ``on_step_end`` closes the optimizer step ``state.global_step - 1``
(0-based), so a resumed run numbers its steps as the uninterrupted run did.
``on_save`` flushes the ledger and writes its state (the digest chain and
the index's hints) into the checkpoint directory as
``training-ledger-rank{R}.json``; when the run resumes from a checkpoint, the
first ``on_step_begin`` loads that file from
``args.output_dir/checkpoint-{global_step}`` (where the trainer wrote it), and
the resumed ledger continues the same chain
(:mod:`~packing_theory.training.certificates`); without it the ledger starts
at the resumed step with a fresh chain (``verify_resume`` recomputes the chain
either way).

**Labels.** The ledger reads the labels the model is called with. The
``Trainer`` pops them before the call when it smooths labels
(``label_smoothing_factor > 0``) or computes the loss with a
``compute_loss_func``: the first is refused when training begins, the second
at the first call without labels (an :class:`~packing_theory.errors.InputError`
naming the keys the model received); record the collator's output with
:func:`~packing_theory.training.observe_batches` there.

**Ranks.** Give a factory ``ledger_callback(lambda rank, world: TrainingLedger(
f"ledger-{rank}.ptl", corpus, rank=rank, world_size=world))``: it is called
on ``on_train_begin`` with ``args.process_index`` and ``args.world_size``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from ..errors import InputError, import_optional
from .ledger import TrainingLedger

__all__ = ["STATE_FILE", "ledger_callback", "model_hook"]

STATE_FILE = "training-ledger-rank{rank}.json"
"""The ledger state's file name in a checkpoint directory."""

LedgerFactory = Callable[[int, int], TrainingLedger]


def model_hook(ledger: TrainingLedger, model: Any) -> Any:
    """Record every training-mode call of ``model`` into ``ledger``; return the hook's handle.

    ``handle.remove()`` stops it. Positional arguments are read as
    ``input_ids`` (then ``attention_mask``), keyword arguments by name.
    """

    def hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not getattr(module, "training", True):
            return
        batch = dict(kwargs)
        for name, value in zip(("input_ids", "attention_mask"), args, strict=False):
            batch.setdefault(name, value)
        ledger.observe(batch)

    return model.register_forward_pre_hook(hook, with_kwargs=True)


_CLASS: list[type] = []


def _callback_class() -> type:
    """The ``TrainerCallback`` subclass (built once, when transformers is first needed)."""
    if _CLASS:
        return _CLASS[0]
    transformers = import_optional("transformers", extra="training",
                                   purpose="the Hugging Face Trainer ledger callback")

    base: Any = transformers.TrainerCallback

    class LedgerCallback(base):  # type: ignore[misc]
        """Feed a :class:`TrainingLedger` from a Hugging Face / TRL trainer (see the module doc)."""

        def __init__(self, ledger: TrainingLedger | LedgerFactory) -> None:
            self._source = ledger
            self.ledger: TrainingLedger | None = ledger if isinstance(ledger, TrainingLedger) else None
            self._handle: Any = None
            self._loaded = False

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                           **kwargs: Any) -> None:
            if self.ledger is None:
                self.ledger = self._source(int(args.process_index), int(args.world_size))  # type: ignore[operator]
            if model is None:
                raise InputError("the trainer passed no model to on_train_begin: cannot observe its batches")
            if float(getattr(args, "label_smoothing_factor", 0.0) or 0.0) > 0:
                raise InputError(f"label_smoothing_factor={args.label_smoothing_factor}: the Trainer pops "
                                 "the labels before calling the model, so the ledger cannot see which "
                                 "positions reach the loss; record the collator's batches with "
                                 "observe_batches instead")
            if self._handle is None:
                self._handle = model_hook(self.ledger, model)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            ledger = self.ledger
            if ledger is None or self._loaded:
                return
            self._loaded = True
            if state.global_step > 0 and ledger.steps == 0:
                path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}",
                                    STATE_FILE.format(rank=ledger.rank))
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as fh:
                        ledger.load_state_dict(json.load(fh))
                else:
                    ledger.next_step = state.global_step

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.ledger is not None:
                self.ledger.end_step(state.global_step - 1)

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            ledger = self.ledger
            if ledger is None:
                return
            ledger.flush()
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            if os.path.isdir(folder):
                path = os.path.join(folder, STATE_FILE.format(rank=ledger.rank))
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(ledger.state_dict(), fh)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self._handle is not None:
                self._handle.remove()
                self._handle = None
            if self.ledger is not None:
                self.ledger.close()

    _CLASS.append(LedgerCallback)
    return LedgerCallback


def ledger_callback(ledger: TrainingLedger | LedgerFactory) -> Any:
    """A ``transformers.TrainerCallback`` that records what the model consumes (see the module doc).

    Args:
        ledger: the ledger, or ``factory(rank, world_size) -> TrainingLedger``
            called when training begins (one ledger per process).

    Raises:
        MissingDependency: transformers is not installed.
        InputTypeError: ``ledger`` is neither.
    """
    if not isinstance(ledger, TrainingLedger) and not callable(ledger):
        from ..errors import InputTypeError

        raise InputTypeError(f"ledger must be a TrainingLedger or a factory(rank, world_size), got "
                             f"{type(ledger).__name__}")
    return _callback_class()(ledger)
