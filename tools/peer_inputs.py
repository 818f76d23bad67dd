"""Generated inputs and canonical rows shared by the peer golden harness and its CI test.

Pure numpy + the library, so ``tests/test_peer_golden.py`` regenerates the
exact inputs that ``tools/peer_golden.py`` fed to the frameworks.

Inputs: ``inputs(seed, count, capacity, empty=...)`` yields ``count`` length
lists. Every list mixes heavy ties (lengths drawn from a 3-value palette),
the boundary lengths 1, L-1, L, L+1 and 3L, uniform lengths up to 3L, and
(with ``empty=True``) empty documents.

Canonical rows: document ``d`` (0-based input position) token ``p`` is
``token(d, p) = (d + 1) * 100_000 + p`` and padding is 0; a row is its list of
token ids padded to the row width on the framework's padding side. A
digest is the first 16 hex digits of the SHA-256 of the JSON of the rows
(plus, for TRL's bfd strategies, each row's ``seq_lengths``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["digest", "inputs", "inputs_sha256", "our_rows", "token"]


def token(d: int, p: int) -> int:
    """The token id of position ``p`` of document ``d``."""
    return (d + 1) * 100_000 + p


def inputs(seed: int, count: int, capacity: int, *, empty: bool, max_docs: int = 40,
           min_total: int = 0) -> Iterator[list[int]]:
    """``count`` length lists for row width ``capacity`` (see the module doc)."""
    rng = np.random.default_rng(seed)
    L = capacity
    special = [1, max(L - 1, 1), L, L + 1, 3 * L]
    for _ in range(count):
        n = int(rng.integers(1, max_docs + 1))
        palette = [int(x) for x in rng.integers(1, 3 * L + 1, size=3)]
        out: list[int] = []
        for _ in range(n):
            kind = int(rng.integers(0, 10))
            if kind < 4:
                out.append(palette[int(rng.integers(0, 3))])
            elif kind < 7:
                out.append(special[int(rng.integers(0, len(special)))])
            elif kind < 9 or not empty:
                out.append(int(rng.integers(1, 3 * L + 1)))
            else:
                out.append(0)
        while sum(out) < min_total:
            out.append(L)
        yield out


def inputs_sha256(lists: Sequence[Sequence[int]]) -> str:
    """SHA-256 of all generated lists (detects a change in the generator)."""
    return hashlib.sha256(json.dumps([list(map(int, x)) for x in lists]).encode()).hexdigest()


def digest(rows: Sequence[Sequence[Any]], seq_lengths: Sequence[Sequence[int]] | None = None) -> str:
    """First 16 hex digits of the SHA-256 of the canonical rows (and seq_lengths)."""
    payload: Any = [list(map(int, r)) for r in rows]
    if seq_lengths is not None:
        payload = [payload, [list(map(int, s)) for s in seq_lengths]]
    return hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode()).hexdigest()[:16]


def our_rows(packer: Any, lengths: Sequence[int]) -> tuple[list[list[int]], list[list[int]]]:
    """Our peer's canonical rows and per-row placement lengths (TRL's seq_lengths)."""
    from packing_theory.engine.events import Padding, Placement, Repeat

    width = packer.capacity
    rows: list[list[int]] = []
    seqs: list[list[int]] = []
    cur: list[int] = []
    seq: list[int] = []
    for ev in packer.events(list(lengths)):
        t = type(ev)
        if t is Placement or t is Repeat:
            d = ev.source
            cur.extend(token(d, p) for p in range(ev.start, ev.start + ev.length))
            if t is Placement:
                seq.append(ev.length)
        elif t is Padding:
            cur.extend([0] * ev.length)
        else:
            continue
        if len(cur) == width:
            rows.append(cur)
            seqs.append(seq)
            cur, seq = [], []
    assert not cur, "a row was left incomplete"
    return rows, seqs
