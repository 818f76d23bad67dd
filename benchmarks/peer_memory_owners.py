"""Which structures hold a framework packer's measurement memory: a tracemalloc breakdown by owning line.

Method: ``measure(L, ["bestfit-pad", PEER], Settings(engine="compiled"),
horizon="common")`` in this process under ``tracemalloc`` (6 frames per
allocation). Between the items of every ``feed_all`` (the consumers'
feeding), a snapshot is taken whenever the traced memory exceeds the largest
snapshot so far by 8 %; the largest one is broken down by the innermost
``packing_theory`` frame of each allocation (``other``: no such frame within
the 6 kept, e.g. numpy or numba internals called deep below). Printed: the
tracemalloc peak (which can fall between two items, inside a peer or a
consumer) and the largest snapshot, both in bytes per document, and the
owners above 1 byte per document. Slow (a minute or more per 500,000
documents): run it on a few hundred thousand documents.

Run: ``python benchmarks/peer_memory_owners.py LENGTHS.npy PEER``.
"""

from __future__ import annotations

import collections
import importlib
import sys
import tracemalloc
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np


def owners(snapshot: tracemalloc.Snapshot) -> collections.Counter[str]:
    """Bytes of ``snapshot`` by owner: the innermost ``packing_theory`` line of each allocation's traceback
    (``"other"`` when none of its frames is the package's)."""
    out: collections.Counter[str] = collections.Counter()
    for stat in snapshot.statistics("traceback"):
        ours = [f for f in stat.traceback if "packing_theory" in f.filename]
        key = f"{ours[-1].filename.split('packing_theory/')[-1]}:{ours[-1].lineno}" if ours else "other"
        out[key] += stat.size
    return out


def main() -> None:
    measure_module = importlib.import_module("packing_theory.orchestration.measure")
    from packing_theory.orchestration.settings import Settings

    lengths = np.load(sys.argv[1], mmap_mode="r")
    peer = sys.argv[2]
    best: dict[str, Any] = {"current": 0, "snapshot": None, "where": ""}

    def maybe(where: str) -> None:
        current = tracemalloc.get_traced_memory()[0]
        if current > best["current"] * 1.08:
            best.update(current=current, snapshot=tracemalloc.take_snapshot(), where=where)

    feed_all = measure_module.feed_all

    def watched(events: Iterable[Any], *consumers: Any) -> Any:
        def items() -> Iterator[Any]:
            for i, e in enumerate(events):
                maybe(f"feed item {i}")
                yield e
            maybe("feed end")

        out = feed_all(items(), *consumers)
        maybe("after the results")
        return out

    setattr(measure_module, "feed_all", watched)  # noqa: B010 - the module attribute measure() calls
    tracemalloc.start(6)
    measure_module.measure(lengths, ["bestfit-pad", peer], Settings(engine="compiled"), horizon="common")
    peak = tracemalloc.get_traced_memory()[1]
    n = lengths.size
    print(f"{peer}: N={n:,} tracemalloc peak {peak / 2**20:.0f} MiB = {peak / n:.0f} B/doc; largest snapshot "
          f"({best['where']}): {best['current'] / 2**20:.0f} MiB = {best['current'] / n:.0f} B/doc")
    for key, size in owners(best["snapshot"]).most_common(30):
        if size > n:
            print(f"  {size / n:7.1f} B/doc  {size / 2**20:7.1f} MiB  {key}")


if __name__ == "__main__":
    main()
