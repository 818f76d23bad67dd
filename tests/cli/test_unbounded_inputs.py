"""Inputs that made a command wait or allocate without bound are refused at once (real processes).

Before the fix ``--lengths FIFO`` blocked forever, and a 107-byte ``.npy`` whose
4-byte header length field claimed 4 GiB made numpy allocate 4 GiB before
anything was checked. Both are now exit 2 within the process's timeout.
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *argv: str, memory: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "packing_theory.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60, preexec_fn=limit)


def test_a_fifo_lengths_file_is_refused_without_reading(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    proc = run(tmp_path, "replay", "--lengths", "pipe", "--capacity", "32", "--min-buffer", "8")
    assert proc.returncode == 2, proc.stderr
    assert "'pipe' is not a regular file" in proc.stderr


def test_a_false_header_length_is_refused_before_allocating(tmp_path: Path) -> None:
    header = b"{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"
    data = b"\x93NUMPY" + bytes([2, 0]) + struct.pack("<I", 2**32 - 1) + header + b"\0" * 38
    (tmp_path / "big.npy").write_bytes(data[:107])
    # 1.5 GiB of address space: enough for the interpreter and numpy, not for the 4 GiB the field claims
    proc = run(tmp_path, "replay", "--lengths", "big.npy", "--capacity", "32", "--min-buffer", "8",
               memory=3 << 29)
    assert proc.returncode == 2, proc.stderr
    assert "header length field claims 4,294,967,307 bytes, the file holds 107" in proc.stderr
