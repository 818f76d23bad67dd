"""The trainer's side of the audit: what a training run actually consumed, proven against the replay.

Everything else in the library says what a packer *would* emit. This
subpackage watches a trainer — ours or another library's — and records what
its model *consumed*, step by step and rank by rank, then proves it against
the library's replay:

* :class:`TrainingLedger` — the observer: per optimizer step and rank, every
  row's document spans (raw corpus index, offset, positions, trained
  targets), padding and masked labels, streamed to a compact binary file
  (:mod:`~packing_theory.training.format`), with a chain of BLAKE2b-256
  digests; document identity from our records or, for any other library's
  batches, from a prefix/anchor index of the corpus
  (:class:`~packing_theory.training.index.DocumentIndex`);
* :func:`reconcile` — the ledger against the replay of a registered packer:
  every step equal, or the first divergence (step, rank, row, document) and
  its class; per-document trained targets and per-source shares against the
  declared mixture (:class:`Reconciliation`);
* :mod:`~packing_theory.training.certificates` — the digest chain on disk,
  :func:`verify_resume` (a resumed run consumed exactly what the
  uninterrupted run did), :func:`index_fingerprint` / :func:`compare_ranks`
  (every rank holds the same data index before training);
* integrations (each imports its library inside the function that needs
  it): :func:`~packing_theory.training.integrations.ledger_callback` for the
  Hugging Face ``Trainer`` and TRL's ``SFTTrainer``,
  :func:`~packing_theory.training.loops.observe_batches` for a torch
  ``DataLoader`` or a nanochat-style ``(inputs, targets)`` generator.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .certificates import (
        CertificateFile,
        RankAgreement,
        ResumeCheck,
        certify,
        compare_certificates,
        compare_ranks,
        index_fingerprint,
        verify_resume,
    )
    from .index import DocumentIndex
    from .integrations import ledger_callback, model_hook
    from .ledger import TrainingLedger
    from .loops import gather_fingerprints, observe_batches
    from .merge import iter_steps, merge_ledgers
    from .reconcile import reconcile
    from .result import CLASSES, Divergence, Reconciliation, SourceConsumption
    from .schedule import Schedule
    from .tokens import read_token_corpus, write_token_corpus

__all__ = [
    "CLASSES",
    "CertificateFile",
    "Divergence",
    "DocumentIndex",
    "RankAgreement",
    "Reconciliation",
    "ResumeCheck",
    "Schedule",
    "SourceConsumption",
    "TrainingLedger",
    "certify",
    "compare_certificates",
    "compare_ranks",
    "gather_fingerprints",
    "index_fingerprint",
    "iter_steps",
    "ledger_callback",
    "merge_ledgers",
    "model_hook",
    "observe_batches",
    "read_token_corpus",
    "reconcile",
    "verify_resume",
    "write_token_corpus",
]

lazy_package(__name__, {
    ".certificates": ("CertificateFile", "RankAgreement", "ResumeCheck", "certify", "compare_certificates",
                      "compare_ranks", "index_fingerprint", "verify_resume"),
    ".index": ("DocumentIndex",),
    ".integrations": ("ledger_callback", "model_hook"),
    ".ledger": ("TrainingLedger",),
    ".loops": ("gather_fingerprints", "observe_batches"),
    ".merge": ("iter_steps", "merge_ledgers"),
    ".reconcile": ("reconcile",),
    ".result": ("CLASSES", "Divergence", "Reconciliation", "SourceConsumption"),
    ".schedule": ("Schedule",),
    ".tokens": ("read_token_corpus", "write_token_corpus"),
})
