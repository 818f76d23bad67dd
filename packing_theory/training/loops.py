"""The ledger around a plain training loop: a torch ``DataLoader``, a nanochat-style generator, DDP ranks.

One line::

    for inputs, targets in observe_batches(loader, ledger):   # nanochat: TrainingLedger(..., ignore_index=-1)
        loss = model(inputs, targets); loss.backward(); opt.step()

:func:`observe_batches` records each batch as it hands it to the loop
(whatever it holds: a Hugging Face dict, ``(inputs, targets)``,
``(inputs, targets, state)``, a :class:`~packing_theory.adapters.PackedBatch`)
and closes an optimizer step every ``accumulation`` batches, when the loop
asks for the next batch (the previous one has been trained on). When the loop
stops early, a step whose micro-batches were all handed out is closed; when
the batches run out, the last, shorter step is closed too.

Ranks: each process writes its own ledger (``rank=`` / ``world_size=``);
:func:`~packing_theory.training.merge_ledgers` merges the files after the
run. :func:`gather_fingerprints` compares the ranks' data indices before
training (``torch.distributed.all_gather_object``; imported on call).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from .._checks import check_int
from ..errors import import_optional
from .certificates import RankAgreement, compare_ranks, index_fingerprint
from .ledger import TrainingLedger

__all__ = ["gather_fingerprints", "observe_batches"]

T = TypeVar("T")


def observe_batches(batches: Iterable[T], ledger: TrainingLedger, *, accumulation: int = 1) -> Iterator[T]:
    """Yield ``batches`` unchanged, recording each in ``ledger`` (see the module doc).

    Args:
        batches: a ``DataLoader``, a generator, any iterable of batches.
        ledger: the rank's ledger.
        accumulation: micro-batches per optimizer step.

    Batches are observed before they are yielded: a loader that reuses one
    buffer (nanochat's, autoresearch's) is read before it is overwritten.
    """
    k = check_int("accumulation", accumulation, 1)
    held = 0
    exhausted = False
    try:
        for batch in batches:
            if held == k:
                ledger.end_step()
                held = 0
            ledger.observe(batch)
            held += 1
            yield batch
        exhausted = True
    finally:
        if held and (held == k or exhausted):
            ledger.end_step()


def gather_fingerprints(index: Any) -> RankAgreement:
    """Every rank's :func:`~packing_theory.training.index_fingerprint` of ``index``, compared with rank 0's.

    Call it on every rank of an initialised ``torch.distributed`` process
    group, before training; every rank gets the same answer.
    """
    dist = import_optional("torch.distributed", extra="torch", purpose="comparing the ranks' data indices")
    mine = index_fingerprint(index)
    out: list[Any] = [None] * int(dist.get_world_size())
    dist.all_gather_object(out, mine)
    return compare_ranks([str(f) for f in out])
