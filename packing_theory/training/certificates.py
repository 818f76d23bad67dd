"""Certificates of consumption: a digest chain per rank, resume verification, data-index fingerprints.

**Chain.** For every rank, ``digest[s] = BLAKE2b-256(digest[s-1] || spans of
step s)`` (:func:`~packing_theory.training.ledger.step_digest`; ``digest[-1]``
is 32 zero bytes). Two runs consumed the same documents, offsets, lengths and
masks in the same order up to step ``s`` exactly when their digests at ``s``
agree (up to BLAKE2b collisions), and the first step whose digests differ is
the first step whose consumption differs. :func:`certify` computes the chain
of a ledger; :class:`CertificateFile` stores it in 32 bytes per step and rank
(header ``b"PTCERTS1"``, ``u32 world_size``, ``i64 first_step``, ``u64
n_steps``, then ``n_steps x world_size x 32`` bytes; an all-zero digest marks
a step a rank did not record); :func:`compare_certificates` streams two files
and names the first ``(step, rank)`` that differs, in bounded memory.

**Resume.** :func:`verify_resume` splices an interrupted run's ledger (steps
before the resume point) with the resumed run's ledger (from it on),
recomputes the chain and compares it with the uninterrupted run's
certificates: "the resumed run consumed exactly what the uninterrupted run
would have", or the first step that differs.

**Ranks.** :func:`index_fingerprint` hashes a data index that every rank must
hold identically before training — Megatron's document and shuffle indices
(:class:`~packing_theory.peers.megatron.MegatronIndex`), a loader state
(:class:`~packing_theory.adapters.LoaderState`: its packer, corpus and
position), a sampler's index array — and :func:`compare_ranks` names the
ranks that disagree with rank 0.

>>> from packing_theory.peers.megatron import megatron_index
>>> fps = [index_fingerprint(megatron_index([5, 3, 9, 2], 4, seed, None)) for seed in (1, 1, 2)]
>>> check = compare_ranks(fps)
>>> check.agree, check.differing
(False, (2,))
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..adapters.state import LoaderState
from ..errors import InputError
from ..peers.megatron import MegatronIndex
from .ledger import CHAIN_SEED, step_digest
from .merge import LedgerSource, StepRecord, as_sources, iter_steps, ledger_metas

__all__ = [
    "CERT_MAGIC",
    "CertificateFile",
    "ChainDivergence",
    "RankAgreement",
    "ResumeCheck",
    "certify",
    "compare_certificates",
    "compare_ranks",
    "index_fingerprint",
    "verify_resume",
]

CERT_MAGIC = b"PTCERTS1"
_HEAD = struct.Struct("<8sIqQ")
_MISSING = bytes(32)


class CertificateFile:
    """Write certificates step by step (32 bytes per rank and step), or read them back in blocks.

    Writing: ``CertificateFile.create(path, world_size, first_step)``, then
    :meth:`append` one ``(world_size, 32)`` block per step, then :meth:`close`
    (which writes the step count into the header). Reading:
    ``CertificateFile.open(path)`` and :meth:`blocks`.
    """

    def __init__(self, fh: IO[bytes], world_size: int, first_step: int, n_steps: int, writing: bool) -> None:
        self._fh = fh
        self.world_size = world_size
        self.first_step = first_step
        self.n_steps = n_steps
        self._writing = writing

    @classmethod
    def create(cls, path: str | os.PathLike[str], world_size: int, first_step: int = 0) -> CertificateFile:
        """A new certificate file (truncated if it exists)."""
        fh = open(path, "wb")  # noqa: SIM115
        w = check_int("world_size", world_size, 1)
        fh.write(_HEAD.pack(CERT_MAGIC, w, check_int("first_step", first_step, 0), 0))
        return cls(fh, w, first_step, 0, True)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> CertificateFile:
        """Open a certificate file for reading.

        Raises:
            InputError: not a certificate file, or one whose size disagrees with its header.
        """
        fh = open(path, "rb")  # noqa: SIM115
        head = fh.read(_HEAD.size)
        if len(head) < _HEAD.size or head[:8] != CERT_MAGIC:
            fh.close()
            raise InputError(f"{os.fspath(path)!r} is not a certificate file (no {CERT_MAGIC!r} header)")
        _, w, first, n = _HEAD.unpack(head)
        size = os.fstat(fh.fileno()).st_size
        if w < 1 or size != _HEAD.size + n * w * 32:
            fh.close()
            raise InputError(f"{os.fspath(path)!r}: {size} bytes, its header says {n} steps x {w} ranks x 32 "
                             "bytes (truncated or not closed)")
        return cls(fh, w, first, n, False)

    def append(self, block: npt.NDArray[np.uint8]) -> None:
        """Append one step: a ``(world_size, 32)`` uint8 block (all-zero row: the rank did not record it)."""
        if block.shape != (self.world_size, 32):
            raise InputError(f"a certificate block must be ({self.world_size}, 32), got {block.shape}")
        self._fh.write(np.ascontiguousarray(block, dtype=np.uint8).tobytes())
        self.n_steps += 1

    def blocks(self, steps: int = 65536) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
        """``(first step, (n, world_size, 32) array)`` blocks of at most ``steps`` steps, in order."""
        self._fh.seek(_HEAD.size)
        done = 0
        while done < self.n_steps:
            n = min(steps, self.n_steps - done)
            data = np.frombuffer(self._fh.read(n * self.world_size * 32), dtype=np.uint8)
            yield self.first_step + done, data.reshape(n, self.world_size, 32)
            done += n

    def _check(self) -> None:
        """Assert the file's length: the header plus 32 bytes per rank and step written or announced."""
        if self._fh.closed:
            return
        size = os.fstat(self._fh.fileno()).st_size
        if self._writing:
            self._fh.flush()
            size = os.fstat(self._fh.fileno()).st_size
        assert size == _HEAD.size + self.n_steps * self.world_size * 32, (size, self.n_steps)

    def close(self) -> None:
        """Write the step count (when writing) and close."""
        if self._fh.closed:
            return
        if self._writing:
            self._fh.seek(0)
            self._fh.write(_HEAD.pack(CERT_MAGIC, self.world_size, self.first_step, self.n_steps))
        self._fh.close()

    def __enter__(self) -> CertificateFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chains(records: Iterator[StepRecord], world_size: int) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
    """``(step, (world_size, 32) digests)`` per step from ``(step, rank)`` records."""
    digest = [CHAIN_SEED] * world_size
    step: int | None = None
    block = np.zeros((world_size, 32), dtype=np.uint8)
    for rec in records:
        if rec.rank >= world_size:
            raise InputError(f"rank {rec.rank} recorded, but world_size is {world_size}")
        if step is not None and rec.step != step:
            yield step, block
            block = np.zeros((world_size, 32), dtype=np.uint8)
        step = rec.step
        digest[rec.rank] = step_digest(digest[rec.rank], rec.spans)
        block[rec.rank] = np.frombuffer(digest[rec.rank], dtype=np.uint8)
    if step is not None:
        yield step, block


def _world(sources: Sequence[LedgerSource], world_size: int | None) -> int:
    if world_size is not None:
        return check_int("world_size", world_size, 1)
    return max(int(m.get("world_size", 1)) for m in ledger_metas(sources))


def certify(sources: LedgerSource | Sequence[LedgerSource], target: str | os.PathLike[str], *,
            world_size: int | None = None) -> int:
    """Write the certificate chain of one or several ledgers to ``target``; return the steps written.

    Steps between the first and the last recorded one that no rank recorded
    are written as all-zero blocks. Memory: one chunk per ledger. O(spans).
    """
    many = as_sources(sources)
    w = _world(many, world_size)
    out: CertificateFile | None = None
    try:
        for step, block in _chains(iter_steps(many), w):
            if out is None:
                out = CertificateFile.create(target, w, step)
            while out.first_step + out.n_steps < step:
                out.append(np.zeros((w, 32), dtype=np.uint8))
            out.append(block)
        if out is None:
            out = CertificateFile.create(target, w, 0)
        return out.n_steps
    finally:
        if out is not None:
            out.close()


@dataclass(frozen=True)
class ChainDivergence:
    """The first ``(step, rank)`` whose digests differ, and why (``"differs"`` or ``"missing in A|B"``)."""

    step: int
    rank: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"step": self.step, "rank": self.rank, "reason": self.reason}


def compare_certificates(a: str | os.PathLike[str], b: str | os.PathLike[str], *,
                         block_steps: int = 65536) -> ChainDivergence | None:
    """The first ``(step, rank)`` where two certificate files differ (``None``: identical, same steps).

    A step present in one file only is a divergence (``"missing in B"``).
    Memory: two blocks of ``block_steps`` steps. O(steps x ranks).

    Raises:
        InputError: the files were written for different numbers of ranks.
    """
    with CertificateFile.open(a) as fa, CertificateFile.open(b) as fb:
        if fa.world_size != fb.world_size:
            raise InputError(f"certificates for {fa.world_size} and {fb.world_size} ranks cannot be compared")
        if fa.first_step != fb.first_step:
            first = min(fa.first_step, fb.first_step)
            return ChainDivergence(first, 0, "missing in B" if fa.first_step == first else "missing in A")
        for (s, xa), (_, xb) in zip(fa.blocks(block_steps), fb.blocks(block_steps), strict=False):
            n = min(xa.shape[0], xb.shape[0])
            ne = (xa[:n] != xb[:n]).any(axis=2)
            if ne.any():
                i, r = np.argwhere(ne)[0]
                return ChainDivergence(s + int(i), int(r), "differs")
        if fa.n_steps != fb.n_steps:
            return ChainDivergence(fa.first_step + min(fa.n_steps, fb.n_steps), 0,
                              "missing in B" if fa.n_steps > fb.n_steps else "missing in A")
    return None


@dataclass(frozen=True)
class ResumeCheck:
    """The verdict of :func:`verify_resume`.

    Attributes:
        resume_step: the first step of the resumed ledger.
        steps: steps compared.
        divergence: the first ``(step, rank)`` whose chained digest differs from the
            uninterrupted run's, or ``None``.
    """

    resume_step: int
    steps: int
    divergence: ChainDivergence | None

    @property
    def equal(self) -> bool:
        """Whether the resumed run consumed exactly what the uninterrupted run did."""
        return self.divergence is None

    def headline(self) -> str:
        """One sentence."""
        if self.divergence is None:
            return (f"resumed at step {self.resume_step}: all {self.steps} steps consumed exactly what the "
                    "uninterrupted run consumed")
        d = self.divergence
        return (f"resumed at step {self.resume_step}: step {d.step} of rank {d.rank} {d.reason} from the "
                "uninterrupted run")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"resume_step": self.resume_step, "steps": self.steps, "equal": self.equal,
                "divergence": None if self.divergence is None else self.divergence.to_dict()}


def verify_resume(reference: str | os.PathLike[str], interrupted: LedgerSource | Sequence[LedgerSource],
                  resumed: LedgerSource | Sequence[LedgerSource]) -> ResumeCheck:
    """Check that an interrupted run plus its resumption consumed what the uninterrupted run did.

    ``reference`` is the uninterrupted run's certificate file (:func:`certify`).
    The interrupted ledger's steps before the resumed ledger's first step are
    spliced with the resumed ledger's steps, and the chain recomputed over
    them. Memory: one chunk per ledger plus one block of certificates.

    Raises:
        InputError: an empty resumed ledger, or a world size other than the reference's.
    """
    first = next(iter_steps(as_sources(resumed)), None)
    if first is None:
        raise InputError("the resumed ledger records no step")
    k = first.step

    def spliced() -> Iterator[StepRecord]:
        for rec in iter_steps(as_sources(interrupted)):
            if rec.step >= k:
                break
            yield rec
        yield from iter_steps(as_sources(resumed))

    with CertificateFile.open(reference) as ref:
        blocks = ref.blocks()
        base, block = next(blocks, (ref.first_step, np.zeros((0, ref.world_size, 32), np.uint8)))
        steps = 0
        expect = ref.first_step
        for step, got in _chains(spliced(), ref.world_size):
            if step != expect:  # a step neither ledger recorded
                return ResumeCheck(k, steps, ChainDivergence(expect, 0, "missing from the ledgers"))
            while step >= base + block.shape[0]:
                nxt = next(blocks, None)
                if nxt is None:
                    return ResumeCheck(k, steps, ChainDivergence(step, 0, "is beyond the reference"))
                base, block = nxt
            want = block[step - base]
            ne = np.flatnonzero((want != got).any(axis=1))
            if ne.size:
                return ResumeCheck(k, steps, ChainDivergence(step, int(ne[0]), "differs"))
            steps += 1
            expect = step + 1
        if expect < ref.first_step + ref.n_steps:
            return ResumeCheck(k, steps, ChainDivergence(expect, 0, "missing from the ledgers"))
    return ResumeCheck(k, steps, None)


# --------------------------------------------------------------------------- data-index fingerprints


def _array_bytes(values: Any) -> bytes:
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.int64), dtype="<i8")
    return struct.pack("<Q", arr.size) + arr.tobytes()


def index_fingerprint(index: Any) -> str:
    """A hex BLAKE2b-256 of a data index every rank must hold identically.

    * a :class:`~packing_theory.peers.megatron.MegatronIndex`: the document
      index, the shuffle index, the sample count, the epochs and the
      separate-final-epoch flag (its document/sample/shuffle indices);
    * a :class:`~packing_theory.adapters.LoaderState`: the packer's
      descriptor, the corpus fingerprint and the position (rows, batches,
      events, epoch, engine state and cursor) — not ``extra``;
    * an integer array or sequence (a sampler's index, a permutation);
    * a mapping (canonical JSON).

    Raises:
        InputError: another type.
    """
    h = hashlib.blake2b(digest_size=32)
    if isinstance(index, MegatronIndex):
        h.update(b"megatron-gpt-index\0")
        h.update(_array_bytes(index.document_index))
        h.update(_array_bytes(index.shuffle_index))
        h.update(struct.pack("<qq?", index.num_samples_total, index.num_epochs,
                             bool(index.separate_final_epoch)))
    elif isinstance(index, LoaderState):
        doc = json.loads(index.to_json())
        keep = {k: doc[k] for k in ("policy", "documents", "rows", "batches", "events", "epoch", "engine",
                                    "cursor", "ended")}
        h.update(b"loader-state\0" + json.dumps(keep, sort_keys=True, separators=(",", ":")).encode())
    elif isinstance(index, Mapping):
        text = json.dumps(index, sort_keys=True, separators=(",", ":"), default=str)
        h.update(b"mapping\0" + text.encode())
    elif isinstance(index, np.ndarray) or (isinstance(index, Sequence)
                                           and not isinstance(index, (str, bytes))):
        arr = np.asarray(index)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise InputError(f"an index array must hold integers, got dtype {arr.dtype}")
        h.update(b"array\0" + _array_bytes(arr.reshape(-1)))
    else:
        raise InputError(f"cannot fingerprint a {type(index).__name__}: give a MegatronIndex, a LoaderState, "
                         "an integer array or a mapping")
    return h.hexdigest()


@dataclass(frozen=True)
class RankAgreement:
    """Per rank the fingerprint of its data index; the ranks that differ from rank 0."""

    fingerprints: tuple[str, ...]

    @property
    def differing(self) -> tuple[int, ...]:
        """Ranks whose fingerprint differs from rank 0's."""
        return tuple(r for r, f in enumerate(self.fingerprints) if f != self.fingerprints[0])

    @property
    def agree(self) -> bool:
        """Whether every rank holds the same index."""
        return not self.differing

    def headline(self) -> str:
        """One sentence."""
        n = len(self.fingerprints)
        if self.agree:
            return f"all {n} ranks hold the same data index ({self.fingerprints[0][:12]})"
        ranks = ", ".join(map(str, self.differing))
        return f"ranks {ranks} hold another data index than rank 0 ({len(self.differing)} of {n} ranks)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"agree": self.agree, "differing": list(self.differing),
                "fingerprints": list(self.fingerprints)}


def compare_ranks(fingerprints: Sequence[str] | Mapping[int, str]) -> RankAgreement:
    """Compare per-rank fingerprints (:func:`index_fingerprint`), given in rank order or by rank.

    Raises:
        InputError: no fingerprint, or ranks that are not ``0 .. n-1``.
    """
    if isinstance(fingerprints, Mapping):
        ranks = sorted(fingerprints)
        if ranks != list(range(len(ranks))):
            raise InputError(f"fingerprints must be given for ranks 0..n-1, got ranks {ranks}")
        values = tuple(str(fingerprints[r]) for r in ranks)
    else:
        values = tuple(str(f) for f in fingerprints)
    if not values:
        raise InputError("no fingerprint given")
    return RankAgreement(values)
