"""Keep large freed blocks in the process: glibc ``mallopt`` for a run of many large numpy arrays.

glibc serves a block above its mmap threshold (at most 32 MiB) with its own
``mmap`` and returns it to the kernel on ``free``; a corpus-scale
``compare`` builds and drops arrays of hundreds of MiB per packer, so every
one of them is faulted in afresh, page by page. On the 2-core virtual machine
of ``benchmarks/results/peers.md`` first-touch faults were about half of the
CPU time of ``compare`` on 10 M documents (226 s system time against 170 s
user time). :func:`keep_freed_memory` turns glibc's own ``mmap`` off
(``M_MMAP_MAX = 0``) and trimming off (``M_TRIM_THRESHOLD = -1``), so freed blocks stay in
the heap and are reused; the process keeps its peak resident size until it
exits. ``packing-theory compare`` calls it before it starts its worker
processes (forked, they inherit it). Elsewhere (not glibc) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def keep_freed_memory() -> bool:
    """Whether glibc now keeps freed blocks for reuse (``False``: not glibc, or ``mallopt`` refused)."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # a libc without mallopt (musl)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, -1))  # -1: never trim
