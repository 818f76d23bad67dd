"""The ColumnStore: its disk form holds what its memory form holds, and its files load with numpy."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import packing_theory as pt
from packing_theory.audit.store import ColumnStore, out_of_core_store, read_npy_rows, runs
from packing_theory.engine.compiled import compiled_available
from packing_theory.errors import InputError, InputTypeError
from tests.audit.test_ledger import cases

OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 40)),
    st.tuples(st.just("write"), st.lists(st.integers(0, 200), max_size=12)),
    st.tuples(st.just("add"), st.sampled_from([0, 7, None])),
    st.tuples(st.just("widen"), st.just(0)),
    st.tuples(st.just("scatter"), st.integers(2, 5)),
), max_size=25)


def _apply(store: ColumnStore, ops: list[tuple[str, Any]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    store.add("a", np.int32)
    store.add("f", np.uint8)
    extra = 0
    for op, arg in ops:
        if op == "append":
            store.append({"a": rng.integers(-5, 5, arg), "f": rng.integers(0, 3, arg)})
        elif op == "write" and store.rows:
            ids = np.unique(np.asarray(arg, np.int64) % store.rows)
            store.write(ids, {"a": rng.integers(-9, 9, ids.size)})
        elif op == "add":
            store.add(f"x{extra}", np.int64, fill=arg)
            extra += 1
        elif op == "widen":
            store.widen("a", np.int64)
        elif op == "scatter" and store.rows:  # many runs: written through a mapping on disk
            ids = np.arange(0, store.rows, arg, dtype=np.int64)
            store.write(ids, {"a": rng.integers(-9, 9, ids.size), "f": rng.integers(0, 3, ids.size)})
        store._check()


@given(OPS, st.integers(0, 2**16))
def test_disk_holds_what_memory_holds(ops: list[tuple[str, Any]], seed: int) -> None:
    mem, disk = ColumnStore(), ColumnStore.temporary()
    _apply(mem, ops, seed)
    _apply(disk, ops, seed)
    assert mem.names == disk.names and mem.rows == disk.rows
    for name in mem.names:
        assert mem.dtype(name) == disk.dtype(name)
    a, b = mem.read(0, mem.rows), disk.read(0, disk.rows)
    for name in mem.names:
        assert np.array_equal(a[name], b[name]), name
    ids = np.arange(0, mem.rows, 3, dtype=np.int64)
    for name, col in mem.take(ids).items():
        assert np.array_equal(col, disk.take(ids)[name])
    assert [(s, {k: v.tolist() for k, v in c.items()}) for s, c in mem.blocks(7)] == \
        [(s, {k: v.tolist() for k, v in c.items()}) for s, c in disk.blocks(7)]
    disk.sync()
    assert disk.path is not None
    for name in disk.names:
        loaded = np.load(disk.path / f"{name}.npy", mmap_mode="r")
        assert np.array_equal(loaded, a[name]) and loaded.dtype == disk.dtype(name)
        if disk.rows:
            assert np.array_equal(read_npy_rows(disk.path / f"{name}.npy", 1, disk.rows), a[name][1:])
    disk.remove()
    assert not disk.path.exists()


def test_a_column_added_later_is_filled_with_a_constant_or_the_row_index(tmp_path: Path) -> None:
    s = ColumnStore(tmp_path / "cols")
    s.add("length", np.int32)
    s.append({"length": np.array([5, 3, 9])})
    s.add("source", np.int64, fill=None)
    s.add("pass_index", np.int32, fill=0)
    s.append({"length": np.array([4]), "source": np.array([10])})
    got = s.read(0, 4)
    assert got["source"].tolist() == [0, 1, 2, 10] and got["pass_index"].tolist() == [0, 0, 0, 0]
    s.close()
    assert np.load(tmp_path / "cols" / "source.npy").tolist() == [0, 1, 2, 10]
    assert s.read(3, 4)["length"].tolist() == [4]  # files reopen after close


def test_bad_use_is_refused_with_the_parameter_named(tmp_path: Path) -> None:
    s = ColumnStore()
    s.add("a", np.int32)
    s.append({"a": np.arange(4)})
    with pytest.raises(InputError, match="column must be one of a; got 'b'"):
        s.read(0, 1, ["b"])
    with pytest.raises(InputError, match=r"rows \[2, 9\) are outside the store's 4 rows"):
        s.read(2, 9)
    with pytest.raises(InputError, match="column 'a' exists already"):
        s.add("a", np.int64)
    with pytest.raises(InputError, match="a column name must be an identifier, got 'a b'"):
        s.add("a b", np.int64)
    with pytest.raises(InputTypeError, match="column 'z' must hold integers or booleans, got float64"):
        s.add("z", np.float64)
    with pytest.raises(InputError, match="column 'a': int32 does not widen to int16"):
        s.widen("a", np.int16)
    with pytest.raises(InputError, match=r"column 'a' \(int32\) cannot hold 0..4294967296: widen it first"):
        s.append({"a": np.array([0, 2**32])})
    with pytest.raises(InputError, match="take needs sorted distinct row ids below 4"):
        s.take(np.array([3, 1]))
    with pytest.raises(InputError, match="write of column 'a': 1 values for 2 rows"):
        s.write(np.array([0, 1]), {"a": np.array([1])})
    with pytest.raises(InputError, match="append needs 1-D columns of one length"):
        s.append({"a": np.int64(3)})
    (tmp_path / "x.npy").write_bytes(b"")
    with pytest.raises(InputError, match=r"already holds column files .*x\.npy.*give an empty directory"):
        ColumnStore(tmp_path)
    s._check()


def test_a_temporary_store_changes_owner_with_its_pickle() -> None:
    s = ColumnStore.temporary()
    s.add("a", np.int64)
    s.append({"a": np.arange(5)})
    path = s.path
    assert path is not None
    copy = pickle.loads(pickle.dumps(s))
    del s  # the pickled copy owns the directory now: dropping the original keeps it
    assert path.exists() and copy.read(0, 5)["a"].tolist() == [0, 1, 2, 3, 4]
    copy.remove()
    assert not path.exists()


def test_runs_and_the_out_of_core_threshold() -> None:
    assert runs(np.array([], np.int64)) == []
    assert runs(np.array([4, 5, 6, 8])) == [(4, 7, 0), (8, 9, 3)]
    assert out_of_core_store(4, threshold=4) is None
    big = out_of_core_store(5, threshold=4)
    assert big is not None and big.on_disk
    big.remove()


# --------------------------------------------------------------------------- out of core = in memory

def _account(events: list[Any], R: int, B: int, lengths: list[int], passes: int | None, *, store: bool,
             window: int, compiled: bool, batches: int) -> dict[str, Any]:
    """Ledger, rows, table and never-trained figures of one stream, in memory or with small-window stores."""
    from packing_theory.audit import Ledger
    from packing_theory.audit.documents import DocumentRows, document_table
    from packing_theory.audit.untrained import never_trained
    from packing_theory.engine.batches import batched

    stores = (ColumnStore(), ColumnStore()) if store else (None, None)
    ledger = Ledger(R, B, boundaries=(2, 4, 8, 16), exposure_bins=4, compiled=compiled, chunk=5,
                    store=stores[0], window=window)
    rows = DocumentRows(R, store=stores[1], window=window)
    stream = list(batched(events, batches)) if batches else events
    for item in stream:
        ledger.feed(item)
        rows.feed(item)
        ledger._check()
        rows._check()
    facts = rows.result()
    table = document_table(ledger, facts, lengths, passes=passes)
    table._check()
    return {"agg": ledger.result(), "arrays": ledger.arrays(), "protected": ledger.protected_occurrences(),
            "first": facts.first_row, "arrival": facts.arrival_row, "table": table.columns,
            "never": never_trained(ledger, lengths, passes=passes, rows=facts),
            "untrained": table.largest_untrained(5)}


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["agg"] == b["agg"] and a["never"] == b["never"] and a["untrained"] == b["untrained"]
    for key in ("arrays", "table"):
        assert a[key].keys() == b[key].keys()
        for col in a[key]:
            assert np.array_equal(a[key][col], b[key][col]), (key, col)
    for key in ("protected", "first", "arrival"):
        assert np.array_equal(a[key], b[key]), key


@given(st.data(), st.integers(1, 6), st.sampled_from([0, 1, 7]), st.booleans())
def test_every_policy_out_of_core_equals_in_memory(data: st.DataObject, window: int, batches: int,
                                                   compiled: bool) -> None:
    lengths, kwargs = data.draw(cases())
    compiled = compiled and compiled_available()
    events = pt.replay(lengths, **kwargs).events
    R, B, passes = kwargs["capacity"], kwargs["min_buffer"], kwargs["passes"]
    run = {"window": window, "compiled": compiled, "batches": batches}
    _same(_account(events, R, B, lengths, passes, store=False, **run),
          _account(events, R, B, lengths, passes, store=True, **run))


@given(st.sampled_from(["trl-bfd", "olmo-truncate", "megatron-gpt", "foundry-binpack", "axolotl-multipack",
                        "fewer-truncations", "seamless", "torchtune-split"]),
       st.lists(st.integers(1, 40), min_size=1, max_size=60), st.integers(1, 5), st.sampled_from([0, 9]))
def test_peers_out_of_core_equal_in_memory(name: str, lengths: list[int], window: int, batches: int) -> None:
    from hypothesis import assume

    from packing_theory.registry import entry

    try:
        peer = entry(name).build(16)
        events = list(peer.events(lengths))
    except InputError:
        assume(False)
        raise
    R = max(peer.capacity, 2)
    run = {"window": window, "compiled": False, "batches": batches}
    _same(_account(events, R, 3, lengths, None, store=False, **run),
          _account(events, R, 3, lengths, None, store=True, **run))


def test_a_table_on_disk_travels_in_a_pickle() -> None:
    """A worker's table (ledger and rows in temporary stores) pickled to the parent reads the same rows
    after the worker's copy is gone: the stores' directories change owner with the pickle."""
    import gc

    from packing_theory.audit import Ledger
    from packing_theory.audit.documents import DocumentRows, document_table

    lengths = np.random.default_rng(2).integers(1, 50, 400)
    packer = pt.Packer(capacity=16, min_buffer=4, refill=2)
    ledger = Ledger.for_packer(packer, store=ColumnStore.temporary(), window=16)
    rows = DocumentRows(16, store=ColumnStore.temporary(), window=16)
    _, facts = pt.feed_all(packer.stream(lengths), ledger, rows)
    table = document_table(ledger, facts, lengths)
    want = table.columns
    paths = [ledger.store.path, rows._w.store.path]  # type: ignore[union-attr]
    copy = pickle.loads(pickle.dumps(table))
    del table, ledger, rows, facts
    gc.collect()
    assert all(p is not None and p.exists() for p in paths)
    got = copy.columns
    assert all(np.array_equal(want[k], got[k]) for k in want)
    del copy
    gc.collect()
    assert not any(p is not None and p.exists() for p in paths)
