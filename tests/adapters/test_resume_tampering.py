"""A tampered checkpoint is refused on the direct resume path (no embedded ledger or monitor).

Before the fix the direct path (``PackedStream(..., resume=state)`` without a
ledger or monitor, the default ``make_dataloader`` setup) trusted the saved
engine state: a dropped buffered span, a span longer than its document or
pointing at another document, a cursor moved ahead, edited ``rows`` /
``events`` / ``engine.row`` / ``next_occurrence`` were all accepted and training
continued on other rows. Each edit below is refused, and the message names the
field — by its checksum as written, and by the consistency checks when the
editor also recomputed the checksums.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.adapters import LoaderState, PackedStream
from packing_theory.adapters.state import field_checksums
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.policies import POLICIES, STREAMING_POLICIES
from packing_theory.engine.state import EngineState, check_state

LENGTHS = [5, 13, 3, 9, 4, 6, 2, 7, 11, 3, 8, 6, 2, 10, 4]
KW: dict[str, Any] = {"capacity": 8, "min_buffer": 4, "refill": 2, "passes": 2}


def store() -> TokenDocuments:
    texts = [[1000 + s] + [s * 100 + j for j in range(1, n)] for s, n in enumerate(LENGTHS)]
    return TokenDocuments.from_lists(texts)


def saved(policy: str, rows: int = 9) -> dict[str, Any]:
    s = PackedStream(store(), policy=policy, **KW)
    assert s.skip_rows(rows) == rows
    doc: dict[str, Any] = json.loads(s.state().to_json())
    assert len(doc["engine"]["buffer"]) >= 3 and doc["engine"]["next_occurrence"] > 3
    return doc


def drop_last_span(d: dict[str, Any]) -> None:
    d["engine"]["buffer"].pop()


def longer_span(d: dict[str, Any]) -> None:
    d["engine"]["buffer"][0][3] += 1


def other_document(d: dict[str, Any]) -> None:
    span = d["engine"]["buffer"][0]
    span[1] = (span[1] + 1) % len(LENGTHS)


def cursor_ahead(d: dict[str, Any]) -> None:
    d["engine"]["cursor"][1] += 10


def rows(d: dict[str, Any]) -> None:
    d["rows"] += 1


def events(d: dict[str, Any]) -> None:
    d["events"] = 3


def engine_row(d: dict[str, Any]) -> None:
    d["engine"]["row"] += 1


def next_occurrence(d: dict[str, Any]) -> None:
    d["engine"]["next_occurrence"] += 1


def duplicated_span(d: dict[str, Any]) -> None:
    d["engine"]["buffer"].append(d["engine"]["buffer"][0])


def swapped_spans(d: dict[str, Any]) -> None:
    buf = d["engine"]["buffer"]
    buf[0], buf[1] = buf[1], buf[0]


# edit -> (the field the checksum names, what the consistency checks name)
EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "drop_last_span": (drop_last_span, "engine.buffer", "engine.buffer holds"),
    "longer_span": (longer_span, "engine.buffer", r"engine.buffer\[0\]"),
    "other_document": (other_document, "engine.buffer", r"engine.buffer\[0\] says source"),
    "cursor_ahead": (cursor_ahead, "engine.cursor", "engine.cursor"),
    "rows": (rows, "rows", "rows is"),
    "events": (events, "events", "events is 3"),
    "engine_row": (engine_row, "engine.row", "engine.row"),
    "next_occurrence": (next_occurrence, "engine.next_occurrence", "engine.next_occurrence is"),
    "duplicated_span": (duplicated_span, "engine.buffer", "repeats occurrence"),
    "swapped_spans": (swapped_spans, "engine.buffer", "out of arrival order"),
}


def resume(doc: dict[str, Any], policy: str) -> PackedStream:
    return PackedStream(store(), policy=policy, resume=LoaderState.from_json(json.dumps(doc)), **KW)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_field_is_named_by_its_checksum(edit: str) -> None:
    doc = saved("discard")
    change, field, _ = EDITS[edit]
    change(doc)
    with pytest.raises(pt.InputError, match=f"field '{field}' does not match its recorded checksum"):
        resume(doc, "discard")


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_with_recomputed_checksums_fails_the_consistency_checks(edit: str) -> None:
    """``continue`` keeps every token, so even a dropped span breaks the mass identity."""
    doc = saved("continue")
    change, _, message = EDITS[edit]
    change(doc)
    doc["checksums"] = field_checksums(doc)
    with pytest.raises(pt.InputError, match=f"cannot resume: .*{message}"):
        resume(doc, "continue")


def test_the_untouched_state_resumes_directly_and_exactly() -> None:
    for policy in (p for p in POLICIES if not STREAMING_POLICIES[p].pads):  # bestfit-pad starves on LENGTHS
        doc = saved(policy)
        full = [r for b in PackedStream(store(), policy=policy, **KW) for r in b.input_ids.tolist()]
        s = resume(doc, policy)
        assert s._run_base == doc["events"]  # the direct path: no replay from the start
        assert full[9:] == [r for b in s for r in b.input_ids.tolist()]


def test_a_state_without_checksums_is_checked_by_replay() -> None:
    """An older checkpoint (no checksums) takes the replay path, which compares the engine state."""
    doc = saved("discard")
    del doc["checksums"]
    assert resume(doc, "discard").rows == 9
    drop_last_span(doc)
    with pytest.raises(pt.InputError, match="does not reach the saved engine state"):
        resume(doc, "discard")


@pytest.mark.parametrize("engine", [pt.Packer, pt.ReferencePacker])
def test_the_engines_refuse_an_unreachable_state(engine: Any) -> None:
    config = pt.PackerConfig(policy="continue", **KW)
    run = engine(config).run(LENGTHS)
    run.request_state()
    events = list(run)
    state = run.state
    assert state is not None and events
    check_state(state, np.asarray(LENGTHS), config)
    doc = json.loads(state.to_json())
    doc["next_occurrence"] += 2
    bad = EngineState.from_json(json.dumps(doc))
    with pytest.raises(pt.InputError, match=r"engine\.next_occurrence is"):
        list(engine(config).events(LENGTHS, resume=bad))


@pytest.mark.parametrize("text", ["[" * 100_000, '{"format": ' * 100_000,
                                  '{"a": ' + "[" * 200 + "]" * 200 + "}"])
def test_a_state_nested_past_any_real_state_is_bad_input(text: str) -> None:
    """Before the fix a deeply nested document was a RecursionError (exit 3)."""
    deep = r"(is not valid JSON: nested too deeply|nests deeper)"
    with pytest.raises(pt.InputError, match="loader state " + deep):
        LoaderState.from_json(text)
    with pytest.raises(pt.InputError, match="engine state " + deep):
        EngineState.from_json(text)
