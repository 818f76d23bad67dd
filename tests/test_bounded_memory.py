"""Memory bounded by what the input really holds (peak RSS measured in a subprocess).

The benchmark ``benchmarks/bench_memory.py`` records the figures; these tests
hold the issue's two limits and the readers' claim checks.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

MIB = 2**20


def peak_rss(argv: list[str]) -> tuple[int, int, str]:
    """Run ``packing_theory.cli.main(argv)`` in a fresh interpreter: (status, peak RSS bytes, stderr).

    The peak is ``VmHWM`` of the child (``ru_maxrss`` of a child includes its parent's peak on Linux).
    """
    code = textwrap.dedent(f"""
        import json, resource, sys
        from packing_theory.cli import main
        status = main({argv!r})
        sys.stdout.flush()
        try:  # this image's own peak: ru_maxrss would also count the parent's (kept across exec)
            hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0]
            peak = int(hwm.split()[1]) * 1024
        except (OSError, IndexError):
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps([status, peak]), file=sys.stderr)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    *lines, last = proc.stderr.strip().splitlines()
    status, rss = json.loads(last)
    return status, rss, "\n".join(lines)


@pytest.fixture()
def small_stream(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "small.npy"
    np.save(path, np.maximum(1, rng.lognormal(6, 1.5, 5000)).astype(np.int64))
    return path


WIDEST = 2**24
"""The widest row the command line takes; one int64 per position would be 128 MiB."""


def test_replay_with_a_huge_capacity_stays_under_120_mb(small_stream: Path) -> None:
    """Before the sparse buffer: about 7 GB for 5,000 documents at R = 10**8 (an array of R would be 128 MiB
    at the widest row the command line takes now)."""
    status, rss, err = peak_rss(["replay", "--lengths", str(small_stream), "--capacity", str(WIDEST),
                                 "--json"])
    assert status == 0, err
    assert rss < 120 * MIB, f"peak RSS {rss / MIB:.0f} MiB"


def test_audit_with_a_huge_capacity_stays_small(small_stream: Path, tmp_path: Path) -> None:
    """The ledger's crop histogram was an array of R + 1 counts (800 MB at R = 10**8)."""
    status, rss, err = peak_rss(["audit", "--lengths", str(small_stream), "--capacity", str(WIDEST),
                                 "--min-buffer", "100", "--permutations", "2", "--no-plots", "--out",
                                 str(tmp_path / "o")])
    assert status == 0, err
    assert rss < 120 * MIB, f"peak RSS {rss / MIB:.0f} MiB"


def _sparse_shard(path: Path, n_docs: int) -> None:
    """A shard whose header claims ``n_docs`` documents over holes: the size matches, the content is 0s."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IIII", 8, n_docs, 0, 0))
        fh.truncate(16 + 4 * (n_docs + 1))


def test_a_claimed_huge_shard_is_rejected_under_100_mb(tmp_path: Path) -> None:
    """Before the chunked checks: about 3.8 GB allocated for a 200-million-document claim."""
    shard = tmp_path / "claims.bin"
    _sparse_shard(shard, 200_000_000)
    status, rss, err = peak_rss(["audit", "--shards", str(shard), "--no-plots", "--out", str(tmp_path / "o")])
    assert status == 2 and "document 0 is empty" in err, err
    assert rss < 100 * MIB, f"peak RSS {rss / MIB:.0f} MiB"


def test_a_false_npy_header_is_rejected_under_100_mb(tmp_path: Path) -> None:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<i8", "fortran_order": False, "shape": (10**9,)})
    path = tmp_path / "false.npy"
    path.write_bytes(buf.getvalue() + b"\x00" * 800)
    status, rss, err = peak_rss(["replay", "--lengths", str(path)])
    assert status == 2 and "claims shape (1000000000,)" in err, err
    assert rss < 100 * MIB, f"peak RSS {rss / MIB:.0f} MiB"


def test_shard_offsets_are_checked_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad offset past the first chunk is still found, naming its index."""
    import packing_theory.corpus.shards as shards

    monkeypatch.setattr(shards, "_CHUNK", 4)
    path = tmp_path / "s.bin"
    shards.write_shard(path, [[1, 2]] * 10, vocab=4)
    assert shards.read_shard(path).lengths().tolist() == [2] * 10
    assert shards.lengths_from_shards([path, path]).tolist() == [2] * 20
    raw = bytearray(path.read_bytes())
    struct.pack_into("<I", raw, 16 + 4 * 7, 12)  # offsets[7] = 12 == offsets[6]: document 6 empty
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"document 6 is empty"):
        shards.read_shard(path)
    struct.pack_into("<I", raw, 16 + 4 * 7, 3)  # offsets[7] = 3 < offsets[6] = 12
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"offsets\[7\]=3 < offsets\[6\]=12"):
        shards.read_shard(path)
