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

Kept blocks have a cost across a sequence of runs: each packer lays out arrays
of other sizes, so the heap's holes do not fit the next one's and the process
grows past any one run's peak. :func:`release_freed_memory` (glibc
``malloc_trim(0)``), called before each packer's run, hands the free pages back
to the kernel: each run then starts from what is live, and its own pages are
faulted in once, not once per array. ``compare --workers 1`` of every packer on
100 M lognormal(6, 1.3) documents peaked at 7.51 GiB without it and 7.14 GiB
with it (its largest packer run alone, ``seamless``, 7.06 GiB), in the same
1,036 CPU seconds (more system time, less user time); at 10 M documents it
costs about 4 system seconds of 60 and changes the peak by under 3 %.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from typing import Any

__all__ = ["keep_freed_memory", "release_freed_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


_kept = False
"""Whether :func:`keep_freed_memory` took effect in this process (a forked worker inherits it)."""


@functools.cache
def _libc_function(name: str) -> Any:
    """glibc's function ``name`` (``None``: not Linux, no C library found, or it has no such function);
    looked up once per process (``find_library`` runs ``ldconfig``)."""
    if not sys.platform.startswith("linux"):
        return None
    path = ctypes.util.find_library("c")
    if path is None:
        return None
    try:
        return getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):  # a libc without it (musl)
        return None


def keep_freed_memory() -> bool:
    """Whether glibc now keeps freed blocks for reuse (``False``: not glibc, or ``mallopt`` refused)."""
    global _kept
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _kept = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, -1))  # -1: never trim
    return _kept


def release_freed_memory() -> bool:
    """Hand the heap's free pages back to the kernel once, where :func:`keep_freed_memory` keeps them.

    Whether any memory was released (``False`` also when freed blocks are not
    kept: glibc then trims by itself). O(heap) to walk the free blocks; the
    pages handed back are faulted in again when next used.
    """
    if not _kept:
        return False
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))
