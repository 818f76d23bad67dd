"""What a framework packer's run holds at its peak: a tracemalloc breakdown by owning line, taken at the peak.

Method: ``measure(L, ["bestfit-pad", PEER], Settings(engine="compiled"),
horizon="common")`` in this process (``workers=1``: what one ``compare``
worker does for that peer) under ``tracemalloc`` (8 frames per allocation),
with the ledger's out-of-core store forced on (threshold 1,000 occurrences, as
``compare`` has it past 4,194,304; its window then holds at least three chunks of
2^20 ids, 41 MB, which is a fixed cost, not a per-document one). A profile hook
(``sys.setprofile``) looks at the traced memory at every return of a Python or C
function; whenever it exceeds the largest snapshot so far by 3 %, a new snapshot
is taken, so the last one is within 3 % of the peak and taken at it (where:
the function that returned). Each allocation is credited to its innermost
``packing_theory`` frame (``other``: none among the 8 kept, e.g. numba's or
the interpreter's own). Printed: the tracemalloc peak and the snapshot in bytes
per document, where the snapshot was taken, and every owner of at least 1 byte
per document. Slow (a profile hook on every call: minutes per million
documents).

Run: ``python benchmarks/compare_memory_owners.py LENGTHS.npy PEER [N]`` (the
first ``N`` lengths; all by default).
"""

from __future__ import annotations

import importlib
import sys
import tracemalloc
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own module beside this one
from peer_memory_owners import owners


def main() -> None:
    measure_module: Any = importlib.import_module("packing_theory.orchestration.measure")
    from packing_theory.orchestration.settings import Settings

    store = measure_module.out_of_core_store
    measure_module.out_of_core_store = lambda n: store(n, threshold=1000)
    lengths = np.load(sys.argv[1], mmap_mode="r")
    if len(sys.argv) > 3:
        lengths = lengths[: int(sys.argv[3])]
    n = int(lengths.size)
    peer = sys.argv[2]
    best: dict[str, Any] = {"current": 0, "snapshot": None, "where": ""}

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event in ("return", "c_return"):
            current = tracemalloc.get_traced_memory()[0]
            if current > best["current"] * 1.03:
                best["current"] = current
                best["snapshot"] = tracemalloc.take_snapshot()
                code = frame.f_code
                where = code.co_filename.split("packing_theory/")[-1]
                best["where"] = f"{where}:{frame.f_lineno} ({code.co_name})"

    tracemalloc.start(8)
    sys.setprofile(hook)
    measure_module.measure(lengths, ["bestfit-pad", peer], Settings(engine="compiled"), horizon="common")
    sys.setprofile(None)
    peak = tracemalloc.get_traced_memory()[1]
    print(f"{peer}, {n:,} documents: tracemalloc peak {peak / n:.1f} B/doc; snapshot "
          f"{best['current'] / n:.1f} B/doc, taken at the return in {best['where']}")
    for owner, size in owners(best["snapshot"]).most_common():
        if size / n >= 1:
            print(f"{size / n:8.1f} B/doc  {owner}")


if __name__ == "__main__":
    main()
