"""What a trainer consumed, proven against the replay: a ledger, a bad resume caught, certificates.

A corpus is packed by TRL's best-fit decreasing (``trl-bfd``, replayed by the
library); a stand-in trainer consumes four rows per optimizer step in the
Hugging Face layout, once correctly and once resumed from a checkpoint that
serves the wrong batch. The ledger records both runs; ``reconcile`` says the
first run equals the replay and names the second run's first divergence;
the certificates say the same about the resume. With torch / transformers /
TRL installed, replace the stand-in by ``callbacks=[ledger_callback(ledger)]``
(see docs/training.rst). Runs in a few seconds; writes only to a temporary
directory.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from packing_theory.adapters import pack_rows
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.rows import group_rows
from packing_theory.registry import build_packer
from packing_theory.training import Schedule, TrainingLedger, certify, reconcile, verify_resume

CAPACITY, ROWS_PER_STEP, STEPS = 64, 4, 20


def train(ledger: TrainingLedger, rows: list, corpus: TokenDocuments, batches: list[int], first: int) -> None:
    """Consume ``batches`` (indices of 4-row batches) as steps ``first, first + 1, ...``."""
    for step, batch in enumerate(batches, first):
        part = rows[ROWS_PER_STEP * batch : ROWS_PER_STEP * (batch + 1)]
        f = pack_rows(part, corpus, CAPACITY).fields("row")
        ledger.observe({"input_ids": f["input_ids"], "labels": f["labels"], "position_ids": f["position_ids"],
                        "attention_mask": (f["segment_ids"] > 0).astype(np.int64)})
        ledger.end_step(step)
    ledger.close()


def main() -> None:
    rng = np.random.default_rng(0)
    corpus = TokenDocuments.from_lists([[1, *rng.integers(4, 10**6, size=int(n)).tolist()]
                                        for n in rng.integers(1, 90, size=600)])
    rows = list(group_rows(build_packer("trl-bfd", CAPACITY).events(corpus.lengths()), CAPACITY))
    schedule = Schedule(rows_per_step=ROWS_PER_STEP)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        train(TrainingLedger(out / "whole.ptl", corpus), rows, corpus, list(range(STEPS)), 0)
        report = reconcile(out / "whole.ptl", corpus, "trl-bfd", capacity=CAPACITY, schedule=schedule,
                           unit="sequence")
        print("uninterrupted run:", report.headline())
        certify(out / "whole.ptl", out / "whole.cert")

        # interrupted after step 7; the resumed loader skips one batch
        train(TrainingLedger(out / "first.ptl", corpus), rows, corpus, list(range(8)), 0)
        train(TrainingLedger(out / "resumed.ptl", corpus), rows, corpus, list(range(9, STEPS + 1)), 8)
        bad = reconcile([out / "first.ptl", out / "resumed.ptl"], corpus, "trl-bfd", capacity=CAPACITY,
                        schedule=schedule)
        print("resumed run:", bad.headline())
        check = verify_resume(out / "whole.cert", out / "first.ptl", out / "resumed.ptl")
        print("certificates:", check.headline())
        assert report.reconciled and bad.divergence is not None and bad.divergence.cls == "skipped"


if __name__ == "__main__":
    main()
