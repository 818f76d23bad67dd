"""Generated inputs, canonical rows and digests shared by the peer golden harness and its CI tests.

Pure numpy + the library, so ``tests/peers/test_golden.py`` regenerates the
exact inputs that ``tools/peer_golden.py`` fed to the frameworks and
recomputes our side of every digest. Two kinds of fixtures (see
``tools/peer_golden.py``):

**Row digests** (TRL, OLMo-core, Megatron, LLM Foundry).
``inputs(seed, count, seq_length, empty=...)`` yields ``count`` length lists.
Every list mixes heavy ties (lengths drawn from a 3-value palette), the
boundary lengths 1, L-1, L, L+1 and 3L, uniform lengths up to 3L, and (with
``empty=True``) empty documents. Canonical rows: document ``d`` (0-based input
position) token ``p`` is ``token(d, p) = (d + 1) * 100_000 + p`` and padding
is 0; a row is its list of token ids padded to the row width on the
framework's padding side. A digest is the first 16 hex digits of the SHA-256
of the JSON of the rows (plus, for TRL's bfd strategies, each row's
``seq_lengths``): :func:`digest`.

**Trainer-view digests** (torchtune, Axolotl, NeMo). :func:`streams` draws
length streams (specials 0, 1, 2, L-1, L, L+1, 3L, heavy ties); document
``d`` holds tokens ``document(d, n) = (d+1) * TOKEN_BASE + p``; a digest
(:func:`parts_digest`) covers everything the framework emitted row by row
(which document, which token range, which position ids), or is
``"ValueError"`` where the framework raised.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = [
    "TOKEN_BASE", "digest", "document", "inputs", "inputs_sha256", "our_rows", "parts_digest", "streams",
    "token", "trainer_streams",
]

TOKEN_BASE = 1_000_000
"""Trainer-view fixtures: document ``d`` token ``p`` is ``(d + 1) * TOKEN_BASE + p``."""


def token(d: int, p: int) -> int:
    """The token id of position ``p`` of document ``d``."""
    return (d + 1) * 100_000 + p


def inputs(seed: int, count: int, seq_length: int, *, empty: bool, max_docs: int = 40,
           min_total: int = 0) -> Iterator[list[int]]:
    """``count`` length lists for the framework's sequence length ``seq_length`` (see the module doc)."""
    rng = np.random.default_rng(seed)
    L = seq_length
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


def document(d: int, n: int) -> list[int]:
    """Trainer-view fixtures: synthetic document ``d`` of ``n`` tokens."""
    return [(d + 1) * TOKEN_BASE + p for p in range(n)]


def parts_digest(parts: Iterable[Sequence[int] | str]) -> str:
    """Trainer-view digest: SHA-256 (16 hex digits) over tagged int64 arrays and string markers."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            h.update(b"|" + part.encode())
        else:
            h.update(b"#" + str(len(part)).encode() + b":")
            h.update(np.asarray(part, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def streams(rng: random.Random, L: int, count: int, *, max_len: int | None = None) -> list[list[int]]:
    """Trainer-view length streams: specials 0, 1, 2, L-1, L, L+1, 3L, heavy ties, random lengths.

    ``max_len`` redraws longer lengths uniformly in ``1..max_len``.
    """
    specials = [0, 1, 2, L - 1, L, L + 1, 3 * L]
    out = []
    for k in range(count):
        n = rng.choice([0, 1, 2, 3, 5, 8, 13, 21, 34, 60])
        kind = k % 4
        ties = [rng.randint(1, 2 * L) for _ in range(rng.randint(1, 3))]
        s = []
        for _ in range(n):
            r = rng.random()
            if kind == 0 or r < 0.25:
                v = rng.choice(specials)
            elif kind == 1 or r < 0.5:
                v = rng.choice(ties)
            else:
                v = rng.randint(1, 2 * L)
            if max_len is not None and v > max_len:
                v = rng.randint(1, max_len)
            s.append(v)
        out.append(s)
    return out


def trainer_streams(framework: str, c: int, cfg: dict[str, Any], count: int) -> list[list[int]]:
    """The streams of trainer-view configuration ``c`` of ``framework`` (what its fixture stores)."""
    rng = random.Random(f"{framework}-{c}")
    L = cfg["L"]
    if framework == "torchtune" and not cfg["split_across_pack"]:
        ss = streams(rng, L, count, max_len=L)
        for s in ss[::40]:  # a few streams hold an over-long sample: the framework raises
            s.append(L + 1)
        return ss
    if framework == "nemo":
        # NeMo 2.0.0's histogram stops one length short: keep most of its streams packable
        ss = streams(rng, L, count, max_len=L + 1 if cfg.get("version", "3.0.0") != "2.0.0" else L)
        for s in ss[::50]:
            s.append(L + 2)
        if cfg.get("version") == "2.0.0":
            for s in ss[1::20]:  # seq_len == pack_size: packable in 3.0.0, not in 2.0.0
                s.append(L + 1)
        return ss
    return streams(rng, L, count)


def trainer_peer(framework: str, cfg: dict[str, Any]) -> Any:
    """Our peer for trainer-view configuration ``cfg`` (``cfg["L"]`` is the framework's sequence length)."""
    from packing_theory import build_packer

    L = cfg["L"]
    if framework == "torchtune":
        name = "torchtune-split" if cfg["split_across_pack"] else "torchtune-next_fit"
        return build_packer(name, seq_length=L, padding_idx=cfg["padding_idx"], max_packs=cfg["max_packs"])
    if framework == "axolotl":
        opts = {("framework_version" if k == "version" else k): v for k, v in cfg.items() if k != "L"}
        return build_packer("axolotl-multipack", seq_length=L, **opts)
    if framework == "nemo":
        return build_packer(f"nemo-{cfg['algorithm']}", seq_length=L, seed=cfg["seed"], pad_id=cfg["pad_id"],
                            framework_version=cfg.get("version", "3.0.0"))
    raise KeyError(framework)


def our_trainer_view(framework: str, cfg: dict[str, Any], lengths: Sequence[int]) -> str:
    """Our side of a trainer-view digest for one stream (``"ValueError"`` where our peer refuses it)."""
    docs = [document(d, n) for d, n in enumerate(lengths)]
    parts: list[Any] = []
    try:
        peer = trainer_peer(framework, cfg)
        if framework == "torchtune":
            for r in peer.trainer_rows(docs):
                parts += ["pack", r["tokens"], r["labels"], r["input_pos"], r["seq_lens"]]
        elif framework == "nemo":
            for r in peer.trainer_rows(docs):
                parts += ["pack", r["input_ids"], r["seq_start_id"], r["inputs"]]
        else:
            kept, _ = peer.keep(lengths)
            schedule = peer.schedule(lengths)
            if not kept:
                return parts_digest(["empty"])
            for e, epoch in enumerate(schedule):
                parts.append(f"epoch{e}")
                for batch in epoch:
                    parts.append("batch")
                    for pieces in batch:
                        tokens = [t for p in pieces for t in docs[p.source][: p.length]]
                        pos = [q for p in pieces for q in range(p.length)]
                        parts += ["bin", [p.source for p in pieces], tokens, pos]
    except ValueError:
        return "ValueError"
    return parts_digest(parts)
