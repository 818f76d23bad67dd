"""Our torchtune, Axolotl and NeMo peers against digests of the frameworks' own output.

``tests/data/peer_golden/part_b/{torchtune,axolotl,nemo}-*.json`` were written by
``tools/peer_golden_b.py``, which ran torchtune 0.6.1 ``PackedDataset``, axolotl
0.19.0 / 0.12.2 ``MultipackBatchSampler`` (with the long-row filter) and NeMo
3.0.0 / 2.0.0 ``sequence_packing_utils`` on 1,000 generated length streams per
configuration. Each stream's digest covers every row the framework emitted
(document ids, token ids, position ids, ``seq_lens`` / ``seq_start_id``) or
records that it raised. Here every stream is replayed with our peer: the
trainer view (:meth:`trainer_rows`), the token rows built from our *events*
(:func:`packing_theory.engine.rows.token_rows`) and the mass identity of the
event stream must all agree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory import Ledger, SummaryAccumulator
from packing_theory.engine.rows import token_rows as _token_rows
from packing_theory.peers.axolotl import AxolotlMultipack
from packing_theory.peers.nemo import NemoFirstFit, NemoFirstFitDecreasing, NemoFirstFitShuffle
from packing_theory.peers.torchtune import TorchtuneNextFit, TorchtuneSplit

DATA = Path(__file__).parent / "data" / "peer_golden" / "part_b"  # part A's goldens sit one level up
FIXTURES = sorted(p for p in DATA.glob("*.json") if p.name.startswith(("torchtune-", "axolotl-", "nemo-")))
NEMO = {
    "first_fit": NemoFirstFit,
    "first_fit_decreasing": NemoFirstFitDecreasing,
    "first_fit_shuffle": NemoFirstFitShuffle,
}


def digest(parts: Iterable[Sequence[int] | str]) -> str:
    """The harness's digest: SHA-256 (16 hex digits) over tagged int64 arrays and markers."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            h.update(b"|" + part.encode())
        else:
            h.update(b"#" + str(len(part)).encode() + b":")
            h.update(np.asarray(part, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def documents(lengths: Sequence[int], base: int) -> list[list[int]]:
    return [[(d + 1) * base + p for p in range(n)] for d, n in enumerate(lengths)]


def check_mass(peer: Any, lengths: Sequence[int], ledger: bool) -> None:
    """Mass and row identities through the summary (and optionally the ledger, with _check())."""
    acc = SummaryAccumulator(peer.capacity)
    led = Ledger(capacity=max(peer.capacity, 2), min_buffer=1) if ledger else None
    for ev in peer.events(lengths):
        acc.feed(ev)
        if led is not None:
            led.feed(ev)
            led._flush()
            led._check()
    acc._check()
    s = acc.result()
    assert s.identity_holds() and s.row_identity_holds(peer.capacity)
    if led is not None:
        agg = led.result()
        assert agg.mass.identity_holds and agg.conservation_violations == 0


def rows_by_source(
    peer: Any, lengths: Sequence[int], docs: Sequence[Sequence[int]], pad: int
) -> list[list[int]]:
    """Token rows from the events, looking tokens up by *source* (an epoch repeats the dataset)."""
    rows: list[list[int]] = []
    row: list[int] = []
    for ev in peer.events(lengths):
        kind = type(ev).__name__
        if kind in ("Placement", "Repeat"):
            row.extend(docs[ev.source][ev.start : ev.start + ev.length])
        elif kind == "Padding":
            row.extend([pad] * ev.length)
        else:
            continue
        if len(row) == peer.capacity:
            rows.append(row)
            row = []
    assert row == []
    return rows


def torchtune_case(cfg: dict[str, Any], lengths: list[int], docs: list[list[int]]) -> tuple[Any, str]:
    cls = TorchtuneSplit if cfg["split_across_pack"] else TorchtuneNextFit
    peer = cls(cfg["L"], padding_idx=cfg["padding_idx"], max_packs=cfg["max_packs"])
    rows = peer.trainer_rows(docs)
    assert list(_token_rows(peer, docs, pad_id=cfg["padding_idx"])) == [r["tokens"] for r in rows]
    parts: list[Any] = []
    for r in rows:
        parts += ["pack", r["tokens"], r["labels"], r["input_pos"], r["seq_lens"]]
    return peer, digest(parts)


def axolotl_case(cfg: dict[str, Any], lengths: list[int], docs: list[list[int]]) -> tuple[Any, str]:
    opts = {("framework_version" if k == "version" else k): v for k, v in cfg.items() if k != "L"}
    peer = AxolotlMultipack(cfg["L"], **opts)
    kept, _ = peer.keep(lengths)
    schedule = peer.schedule(lengths)
    rows = rows_by_source(peer, lengths, docs, -1)
    if cfg["epochs"] == 1:
        assert list(_token_rows(peer, docs, pad_id=-1)) == rows
    flat = [b for epoch in schedule for batch in epoch for b in batch]
    assert len(rows) == len(flat)
    for row, pieces in zip(rows, flat, strict=False):
        want = [t for p in pieces for t in docs[p.source][: p.length]]
        assert row == want + [-1] * (peer.capacity - len(want))
    if not kept:
        return peer, digest(["empty"])
    parts: list[Any] = []
    for e, epoch in enumerate(schedule):
        parts.append(f"epoch{e}")
        for batch in epoch:
            parts.append("batch")
            for pieces in batch:
                tokens = [t for p in pieces for t in docs[p.source][: p.length]]
                pos = [q for p in pieces for q in range(p.length)]
                parts += ["bin", [p.source for p in pieces], tokens, pos]
    return peer, digest(parts)


def nemo_case(cfg: dict[str, Any], lengths: list[int], docs: list[list[int]]) -> tuple[Any, str]:
    peer = NEMO[cfg["algorithm"]](
        cfg["L"], seed=cfg["seed"], pad_id=cfg["pad_id"], framework_version=cfg.get("version", "3.0.0")
    )
    rows = peer.trainer_rows(docs)
    assert list(_token_rows(peer, docs, pad_id=cfg["pad_id"])) == [r["inputs"] for r in rows]
    parts: list[Any] = []
    for r in rows:
        parts += ["pack", r["input_ids"], r["seq_start_id"], r["inputs"]]
    return peer, digest(parts)


CASES = {"torchtune": torchtune_case, "axolotl": axolotl_case, "nemo": nemo_case}


def test_fixtures_present() -> None:
    names = {p.name.split("-")[0] for p in FIXTURES}
    assert names == {"torchtune", "axolotl", "nemo"}
    assert len(FIXTURES) == 11 + 9 + 12
    for path in FIXTURES:
        meta = json.loads(path.read_text())
        assert len(meta["streams"]) == len(meta["digests"]) >= 1000


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_peer_matches_framework(path: Path) -> None:
    meta = json.loads(path.read_text())
    cfg, base = meta["config"], meta["token_base"]
    case = CASES[meta["framework"]]
    raised = agreed = 0
    for k, (lengths, want) in enumerate(zip(meta["streams"], meta["digests"], strict=False)):
        docs = documents(lengths, base)
        if want == "ValueError":
            with pytest.raises(ValueError):
                case(cfg, lengths, docs)
            raised += 1
            continue
        peer, got = case(cfg, lengths, docs)
        assert got == want, f"stream {k}: lengths {lengths}"
        check_mass(peer, lengths, ledger=k % 25 == 0)
        agreed += 1
    assert agreed + raised == len(meta["streams"]) and agreed >= len(meta["streams"]) // 2
