"""An autoresearch-style best-fit loader with the protected-set monitor embedded.

``make_dataloader`` below is our own transcription of the shape of
autoresearch's ``make_dataloader`` (commit 228791f): a Python list of
BOS-prefixed token lists as the document buffer, a ``while len(doc_buffer) <
buffer_size`` refill from 128-document tokenizer batches before every
selection, the largest document that fits the remaining row, else the shortest
document cropped to fill the row. Rows are plain lists (no torch).

Embedding the monitor takes three lines, marked ``# monitor``: build an
:class:`~packing_theory.invariant.InvariantMonitor`, wrap the buffer list in a
:class:`~packing_theory.invariant.MonitoredBuffer` (same ``len``/index/``pop``
/``extend`` interface), and, for lossless continuation, put the suffix back with
``keep`` instead of ``insert``.

Run ``python examples/autoresearch_monitored_loader.py``: it packs a synthetic
heavy-tailed corpus for a few hundred rows with ``discard`` and ``continue``
(no violation), then with a deliberately wrong oldest-first fallback, which the
monitor stops at the first protected document it would have cropped.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from typing import Any

from packing_theory.invariant import InvariantMonitor, InvariantViolation, MonitoredBuffer

BOS = 0


def synthetic_documents(n: int, seed: int = 0) -> list[list[int]]:
    """``n`` BOS-prefixed token lists with log-normal lengths (median ~400, ~7% above 2049)."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        length = max(1, round(rng.lognormvariate(6.0, 1.1)))
        docs.append([BOS] + [1 + (i + j) % 8191 for j in range(length - 1)])
    return docs


def make_dataloader(
    documents: Sequence[list[int]],
    B: int,
    T: int,
    *,
    buffer_size: int = 1000,
    tokenizer_batch_size: int = 128,
    suffix: str = "discard",
    fallback: str = "shortest",
    monitor: InvariantMonitor | None = None,
) -> Iterator[tuple[list[list[int]], list[list[int]], int]]:
    """Yield ``(inputs, targets, epoch)``: ``B`` rows of ``T`` tokens each, best-fit packed.

    ``suffix="continue"`` keeps a cropped document's suffix in place (PR #372);
    ``fallback="oldest"`` is a deliberate bug (crop the oldest document instead
    of the shortest) for the monitor to catch.
    """
    row_capacity = T + 1

    def document_batches() -> Iterator[tuple[Sequence[list[int]], int]]:
        epoch = 1
        while True:
            for i in range(0, len(documents), tokenizer_batch_size):
                yield documents[i : i + tokenizer_batch_size], epoch
            epoch += 1

    batches = document_batches()
    doc_buffer: Any = [] if monitor is None else MonitoredBuffer(monitor)  # monitor
    epoch = 1

    def refill_buffer() -> None:
        nonlocal epoch
        doc_batch, epoch = next(batches)
        doc_buffer.extend(doc_batch)

    while True:
        rows: list[list[int]] = []
        for _ in range(B):
            row: list[int] = []
            pos = 0
            while pos < row_capacity:
                # Ensure the buffer has documents.
                while len(doc_buffer) < buffer_size:
                    refill_buffer()
                remaining = row_capacity - pos

                # Find the largest document that fits entirely.
                best_idx = -1
                best_len = 0
                for i, doc in enumerate(doc_buffer):
                    doc_len = len(doc)
                    if doc_len <= remaining and doc_len > best_len:
                        best_idx = i
                        best_len = doc_len

                if best_idx >= 0:
                    doc = doc_buffer.pop(best_idx)
                    row.extend(doc)
                    pos += len(doc)
                else:
                    # Nothing fits: crop the shortest document to fill the row.
                    if fallback == "oldest":
                        idx = 0
                    else:
                        idx = min(range(len(doc_buffer)), key=lambda i: len(doc_buffer[i]))
                    doc = doc_buffer.pop(idx)
                    row.extend(doc[:remaining])
                    if suffix == "continue":
                        rest = doc[remaining:]
                        if monitor is None:
                            doc_buffer.insert(idx, rest)
                        else:
                            doc_buffer.keep(idx, rest)  # monitor: same occurrence, same position
                    pos += remaining
            rows.append(row)
        inputs = [r[:-1] for r in rows]
        targets = [r[1:] for r in rows]
        yield inputs, targets, epoch


def run(steps: int, *, suffix: str, fallback: str = "shortest", buffer_size: int = 200,
        documents: Sequence[list[int]] | None = None, on_violation: Any = "record") -> InvariantMonitor:
    """Pack ``steps`` batches of 8 rows under a monitor and return it."""
    T = 2048
    docs = synthetic_documents(3000) if documents is None else documents
    monitor = InvariantMonitor(capacity=T + 1, min_buffer=buffer_size, on_violation=on_violation)  # monitor
    loader = make_dataloader(docs, 8, T, buffer_size=buffer_size, suffix=suffix, fallback=fallback,
                             monitor=monitor)
    for inputs, targets, _epoch in itertools.islice(loader, steps):
        assert all(len(r) == T for r in inputs) and all(len(r) == T for r in targets)
    return monitor


def main() -> None:
    """Run the demonstration and print what the monitor saw."""
    docs = synthetic_documents(3000)
    for suffix in ("discard", "continue"):
        mon = run(60, suffix=suffix, documents=docs)
        r = mon.result()
        print(f"{suffix:>8}: {r.selections_checked} selections checked, {r.long_arrivals} long arrivals, "
              f"|K| = {r.protected_size} ({r.protected_mass} protected tokens), violations: {r.violations}")
    try:
        run(60, suffix="discard", fallback="oldest", documents=docs, on_violation="raise")
    except InvariantViolation as exc:
        print(f"  oldest: stopped by the monitor -> {exc.violation.describe()}")
    else:  # pragma: no cover - would mean the bug went unnoticed
        raise SystemExit("the oldest-first bug was not detected")


if __name__ == "__main__":
    main()
