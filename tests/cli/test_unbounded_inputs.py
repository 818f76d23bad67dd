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

import pytest

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


FILE_OPTIONS = {
    "--files-from": ["--files-from", "pipe"],
    "--labels": ["--labels", "pipe"],
    "--labels-manifest": ["--labels-manifest", "pipe"],
    "--mixture": ["--labels", "labels.txt", "--mixture", "pipe.json"],
    "--funnel": ["--labels", "labels.txt", "--funnel", "pipe.json"],
    "funnel mask": ["--labels", "labels.txt", "--funnel", "mask-funnel.json"],
    "funnel ids": ["--labels", "labels.txt", "--funnel", "ids-funnel.json"],
    "/dev/zero as --mixture": ["--labels", "labels.txt", "--mixture", "zero.json"],
    "/dev/zero as --funnel": ["--labels", "labels.txt", "--funnel", "zero.yaml"],
}


@pytest.mark.parametrize("option", sorted(FILE_OPTIONS))
def test_every_file_option_refuses_a_fifo_or_a_device_before_reading(tmp_path: Path, option: str) -> None:
    """Before the fix each of these waited forever on the FIFO (or read /dev/zero until memory ran out)."""
    import json

    import numpy as np

    np.save(tmp_path / "lengths.npy", np.array([5, 9, 3, 12], dtype=np.int64))
    (tmp_path / "labels.txt").write_text("a\nb\na\nb\n")
    os.mkfifo(tmp_path / "pipe")
    for name in ("pipe.json", "pipe.u8", "pipe.txt"):
        os.mkfifo(tmp_path / name)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    (tmp_path / "mask-funnel.json").write_text(json.dumps({"stages": [{"name": "f", "mask": "pipe.u8"}]}))
    (tmp_path / "ids-funnel.json").write_text(json.dumps({"stages": [{"name": "d", "ids": "pipe.txt"}]}))
    data = [] if option == "--files-from" else ["--lengths", "lengths.npy"]
    proc = run(tmp_path, "audit", *data, *FILE_OPTIONS[option], "--capacity", "16", "--min-buffer", "2",
               "--out", "out", "--no-plots", memory=3 << 29)
    assert proc.returncode == 2, proc.stderr
    assert "is not a regular file" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
