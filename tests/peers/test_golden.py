"""Our peers against committed golden digests of the frameworks' own packing code (``tools/peer_golden.py``).

``tests/data/peer_golden`` holds two kinds of fixture (``tools/peer_inputs.py``
defines both digests):

* **row digests** (TRL 1.16.0, ai2-olmo-core 3.0.0, megatron-core 0.16.1,
  llm-foundry 0.22.0): a fixture names a policy, its options, the framework's
  sequence length and the input generator; the harness ran the framework on
  every generated input and stored one digest of its rows per input. Here the
  same inputs are regenerated (their SHA-256 must match) and our peer's rows
  must give the same digests.
* **trainer-view digests** (torchtune 0.6.1 ``PackedDataset``, axolotl 0.19.0 /
  0.12.2 ``MultipackBatchSampler`` with the long-row filter, NeMo 3.0.0 / 2.0.0
  ``sequence_packing_utils``): a fixture holds 1,000 streams and, per stream,
  a digest of every row the framework emitted (document ids, token ids,
  position ids, ``seq_lens`` / ``seq_start_id``) or that it raised. Here every
  stream is replayed with our peer: the trainer view (``trainer_rows``), the
  token rows built from our *events* and the mass identity must all agree.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from packing_theory import Ledger
from packing_theory.engine import SummaryAccumulator
from packing_theory.engine.rows import token_rows as _token_rows
from tests.golden_params import first_of_each_group, fixture_params

TOOLS = Path(__file__).resolve().parents[2] / "tools"
FIXTURES = sorted((Path(__file__).resolve().parents[1] / "data" / "peer_golden").glob("*.json"))


def _tools_module(name: str) -> Any:
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


inputs_mod = _tools_module("peer_inputs")
METAS = {p: json.loads(p.read_text()) for p in FIXTURES}
ROW_FIXTURES = [p for p, m in METAS.items() if "gen" in m]
TRAINER_FIXTURES = [p for p, m in METAS.items() if "streams" in m]


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


def test_fixtures_of_both_kinds_cover_every_framework_peer() -> None:
    assert len(ROW_FIXTURES) + len(TRAINER_FIXTURES) == len(FIXTURES)
    covered = {m["policy"] for p, m in METAS.items() if p in ROW_FIXTURES}
    assert covered >= {"trl-bfd", "trl-bfd_split", "trl-wrapped", "olmo-truncate", "olmo-fragment",
                       "megatron-gpt", "foundry-concat-wrap", "foundry-concat-no_wrap", "foundry-binpack"}
    assert all(METAS[p]["count"] >= 1000 and len(METAS[p]["digests"]) == METAS[p]["count"]
               for p in ROW_FIXTURES)
    frameworks = [METAS[p]["framework"] for p in TRAINER_FIXTURES]
    assert {f: frameworks.count(f) for f in set(frameworks)} == {"torchtune": 11, "axolotl": 9, "nemo": 12}
    assert all(len(METAS[p]["streams"]) == len(METAS[p]["digests"]) >= 1000 for p in TRAINER_FIXTURES)


# ----------------------------------------------------------------------------- row digests


def _row_digest(meta: dict[str, Any], lengths: list[int]) -> str:
    from packing_theory import build_packer

    opts = dict(meta["options"])
    if meta["policy"] == "megatron-gpt" and isinstance(opts.get("num_samples"), str):
        per_epoch = max((sum(lengths) - 1) // meta["seq_length"], 1)
        opts["num_samples"] = max(1, int(float(opts["num_samples"]) * per_epoch))
    if meta["policy"] == "megatron-gpt":
        opts["samples"] = "index"  # the digests cover every sample of the index (len(GPTDataset))
    try:
        packer = build_packer(meta["policy"], seq_length=meta["seq_length"], **opts)
        rows, seqs = inputs_mod.our_rows(packer, lengths)
    except ValueError:
        return "error"
    if meta["policy"].startswith("olmo"):  # OLMo-core finds documents by their EOS token id (1)
        rows = [[1 if t and t % 100_000 == lengths[t // 100_000 - 1] - 1 else t for t in r] for r in rows]
    return inputs_mod.digest(rows, seqs if meta["seq_lengths"] else None)


@pytest.mark.parametrize("path", fixture_params(ROW_FIXTURES, first_of_each_group(ROW_FIXTURES)))
def test_rows_match_framework(path: Path) -> None:
    meta = METAS[path]
    g = meta["gen"]
    lists = list(inputs_mod.inputs(g["seed"], meta["count"], meta["seq_length"], empty=g["empty"],
                                   min_total=g.get("min_total", 0)))
    assert inputs_mod.inputs_sha256(lists) == meta["inputs_sha256"], "the input generator changed"
    mismatches = [i for i, (lengths, want) in enumerate(zip(lists, meta["digests"], strict=True))
                  if _row_digest(meta, lengths) != want]
    assert not mismatches, f"{len(mismatches)} inputs differ, first {lists[mismatches[0]]}"


# ----------------------------------------------------------------------------- trainer-view digests


def rows_by_source(peer: Any, lengths: Sequence[int], docs: Sequence[Sequence[int]],
                   pad: int) -> list[list[int]]:
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


def cross_check(framework: str, peer: Any, cfg: dict[str, Any], lengths: list[int]) -> None:
    """Our trainer view agrees with the token rows built from our own events."""
    docs = [inputs_mod.document(d, n) for d, n in enumerate(lengths)]
    if framework == "torchtune":
        rows = peer.trainer_rows(docs)
        assert list(_token_rows(peer, docs, pad_id=cfg["padding_idx"])) == [r["tokens"] for r in rows]
    elif framework == "nemo":
        rows = peer.trainer_rows(docs)
        assert list(_token_rows(peer, docs, pad_id=cfg["pad_id"])) == [r["inputs"] for r in rows]
    else:
        got = rows_by_source(peer, lengths, docs, -1)
        if cfg["epochs"] == 1:
            assert list(_token_rows(peer, docs, pad_id=-1)) == got
        flat = [b for epoch in peer.schedule(lengths) for batch in epoch for b in batch]
        assert len(got) == len(flat)
        for row, pieces in zip(got, flat, strict=True):
            want = [t for p in pieces for t in docs[p.source][: p.length]]
            assert row == want + [-1] * (peer.capacity - len(want))


@pytest.mark.parametrize("path", fixture_params(TRAINER_FIXTURES, first_of_each_group(TRAINER_FIXTURES)))
def test_trainer_view_matches_framework(path: Path) -> None:
    meta = METAS[path]
    framework, cfg = meta["framework"], meta["config"]
    assert meta["token_base"] == inputs_mod.TOKEN_BASE
    raised = agreed = 0
    for k, (lengths, want) in enumerate(zip(meta["streams"], meta["digests"], strict=True)):
        got = inputs_mod.our_trainer_view(framework, cfg, lengths)
        assert got == want, f"stream {k}: lengths {lengths}"
        if want == "ValueError":
            raised += 1
            continue
        peer = inputs_mod.trainer_peer(framework, cfg)
        cross_check(framework, peer, cfg, lengths)
        check_mass(peer, lengths, ledger=k % 25 == 0)
        agreed += 1
    assert agreed + raised == len(meta["streams"]) and agreed >= len(meta["streams"]) // 2
