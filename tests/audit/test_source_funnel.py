"""The funnel joined to a packer: from raw through each stage to trained, with a reconciliation that fails
on a planted inconsistency (naming the stage and the source)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from packing_theory.audit.ledger import Ledger
from packing_theory.audit.source_funnel import funnel_table
from packing_theory.audit.source_series import MixtureSeries
from packing_theory.audit.sources import source_accounts
from packing_theory.corpus.funnel import Funnel, FunnelResult
from packing_theory.corpus.labels import SourceLabels
from packing_theory.engine.consumers import feed_all
from packing_theory.engine.packer import Packer
from packing_theory.errors import InputError

R = 64


def _run(funnel: FunnelResult | None, policy: str = "continue") -> dict[str, Any]:
    rng = np.random.default_rng(4)
    raw = np.where(rng.random(300) < 0.2, rng.integers(R + 1, 200, 300), rng.integers(1, 60, 300))
    labels = SourceLabels.from_strings(rng.choice(["chat", "code", "pdf"], 300).tolist(), origin="raw")
    if funnel is None:
        f = Funnel.from_document({"stages": [
            {"name": "quality", "kind": "filter", "mask": (rng.random(300) < 0.1).astype(int).tolist()},
            {"name": "dedup", "kind": "dedup", "ids": [3, 5, 8, 13, 21, 34]}]})
        funnel = f.apply(raw)
    kept_labels = labels.subset(funnel.keep)
    packer = Packer(capacity=R, min_buffer=4, refill=3, policy=policy)
    ledger = Ledger.for_packer(packer)
    _, series = feed_all(packer.stream(raw[funnel.keep]), ledger, MixtureSeries(kept_labels))
    arrays = ledger.arrays()
    accounts = source_accounts(arrays, kept_labels, series)
    return {"raw": raw, "labels": labels, "funnel": funnel, "arrays": arrays, "series": series,
            "accounts": accounts}


def _table(run: dict[str, Any], **changes: Any) -> Any:
    args = {k: run[k] for k in ("funnel", "labels", "raw", "accounts", "arrays", "series")}
    args.update(changes)
    return funnel_table(args["funnel"], args["labels"], args["raw"], args["accounts"], args["arrays"],
                        args["series"])


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    return _run(None)


def test_the_funnel_from_raw_to_trained_reconciles_and_matches_a_naive_count(run: dict[str, Any]) -> None:
    t = _table(run)
    assert t.reconciles, t.problems
    assert t.steps == ("raw", "quality", "dedup", "arrived", "started")
    assert run["series"].unfinished.size  # the run ends with an unfinished row
    f, labels, raw, arr = run["funnel"], run["labels"], run["raw"], run["arrays"]
    kept_ids = np.flatnonzero(f.keep)
    arrived_raw = set(kept_ids[arr["source"][arr["arrived"]]].tolist())
    first = run["series"].first_row
    began = {int(kept_ids[arr["source"][o]]) for o in range(first.size)
             if 0 <= first[o] < run["series"].rows}
    for s, name in enumerate(labels.names):
        row = t.source(name)
        mine = labels.codes == s
        alive = mine.copy()
        want = [int(mine.sum())]
        for st in f.stages:
            alive &= ~st.removed
            want.append(int(alive.sum()))
        want += [sum(1 for d in arrived_raw if labels.codes[d] == s),
                 sum(1 for d in began if labels.codes[d] == s)]
        assert list(row.documents) == want
        assert list(row.removed_documents) == [want[0] - want[1], want[1] - want[2]]
        assert row.tokens[0] == int(raw[mine].sum())
        acc = next(a for a in run["accounts"] if a.source == name)
        assert row.trained_tokens == acc.trained_tokens
        assert row.unfinished_row_tokens == acc.unfinished_row_tokens
        assert row.documents[3] == acc.documents - acc.never_reached and row.documents[4] == acc.started
    d = t.to_dict()
    assert d["reconciles"] and d["sources"]["pdf"]["steps"][-1] == "started" and d["problems"] == []
    assert t.headline().startswith("documents raw 300 → quality ") and t.headline().endswith("reconciles.")
    assert t.markdown()[0].startswith("| source | raw | quality | dedup | arrived | started | trained tokens")


def test_a_tampered_stage_mask_fails_naming_the_stage_and_the_source(run: dict[str, Any]) -> None:
    f = run["funnel"]
    removed = f.stages[1].removed.copy()
    victim = int(np.flatnonzero(f.stages[0].removed)[0])  # removed by quality already
    removed[victim] = True
    bad = replace(f, stages=(f.stages[0], replace(f.stages[1], removed=removed)))
    t = _table(run, funnel=bad)
    source = run["labels"].names[run["labels"].codes[victim]]
    assert not t.reconciles and not t.source(source).reconciles
    assert any(p.stage == "dedup" and p.source == source and "did not reach it" in p.message
               for p in t.problems)
    assert all(s.reconciles for s in t.sources if s.source != source)


def test_tampered_accounts_or_ledger_columns_fail_naming_the_source(run: dict[str, Any]) -> None:
    acc = list(run["accounts"])
    acc[1] = replace(acc[1], trained_tokens=acc[1].trained_tokens + 1)
    t = _table(run, accounts=tuple(acc))
    (p,) = t.problems
    assert p.source == acc[1].source and "the accounts' trained_tokens" in p.message
    assert "recomputed trained tokens (the ledger's emitted, less the unfinished row)" in p.message
    arrays = dict(run["arrays"])
    occ = int(np.flatnonzero(arrays["arrived"] & (arrays["emitted"] > 0))[0])
    arrays["emitted"] = arrays["emitted"].copy()
    arrays["emitted"][occ] -= 1
    doc = int(np.flatnonzero(run["funnel"].keep)[arrays["source"][occ]])
    name = run["labels"].names[run["labels"].codes[doc]]
    assert [(p.source, "recomputed trained tokens" in p.message) for p in _table(run, arrays=arrays).problems
            ] == [(name, True)]
    arrays = dict(run["arrays"])
    arrays["length"] = arrays["length"].copy()
    arrays["length"][occ] += 5
    problems = _table(run, arrays=arrays).problems
    assert any(p.source == name and "1 arrival(s) with another length than their raw document" in p.message
               for p in problems)


def test_without_a_funnel_and_bad_inputs() -> None:
    r = _run(Funnel.from_document({"stages": [{"name": "none", "ids": []}]}).apply(np.ones(300, np.int64)))
    with pytest.raises(InputError, match="the funnel was applied to 300 documents, the corpus has 299"):
        _table(r, raw=r["raw"][:299], labels=r["labels"].subset(np.arange(300) < 299))
    plain = _run(None)
    t = funnel_table(None, plain["labels"].subset(plain["funnel"].keep), plain["raw"][plain["funnel"].keep],
                     plain["accounts"], plain["arrays"], plain["series"])
    assert t.steps == ("raw", "arrived", "started") and t.reconciles, t.problems
