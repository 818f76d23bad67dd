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
