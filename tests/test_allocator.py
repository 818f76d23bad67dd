"""``packing_theory._allocator``: glibc keeps freed blocks (in a child: the setting is per process)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

PROBE = """
import numpy as np, resource
from packing_theory._allocator import keep_freed_memory
ok = keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(2):  # warm: the heap reaches the block's size once
    a = np.ones(1 << 24); del a
before = faults()
for _ in range(20):
    a = np.ones(1 << 24); del a  # 128 MiB each
print(ok, faults() - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_freed_blocks_are_reused_without_new_page_faults() -> None:
    """Twenty 128 MiB arrays built and dropped fault under 1,000 pages once freed blocks are kept
    (with glibc's own mmap they faulted 11,520 pages here: every block faulted in afresh)."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    ok, faults = out.split()
    assert ok == "True"
    assert int(faults) < 1000


RELEASE_PROBE = """
import os, numpy as np
from packing_theory._allocator import keep_freed_memory, release_freed_memory
def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
early = release_freed_memory()  # nothing kept yet: glibc trims by itself
ok = keep_freed_memory()
before = rss_mib()
hole = np.ones(1 << 25)  # 256 MiB, touched
after_it = np.ones(1 << 17)  # 1 MiB above it in the heap: the 256 MiB become a hole, not the heap's top
del hole
kept = rss_mib() - before
released = release_freed_memory()
print(early, ok, released, round(kept), round(rss_mib() - before))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_freed_blocks_kept_are_handed_back_between_runs() -> None:
    """A freed 256 MiB block below a live one stays resident while blocks are kept; releasing hands its
    pages back (compare does so before each packer's run, so the runs' holes do not add up)."""
    out = subprocess.run([sys.executable, "-c", RELEASE_PROBE], capture_output=True, text=True,
                         check=True).stdout
    early, ok, released, kept, left = out.split()
    assert (early, ok, released) == ("False", "True", "True")
    assert int(kept) > 200, out  # kept: still resident after del
    assert int(left) < 50, out  # handed back
