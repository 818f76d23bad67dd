"""The compiled engine: the streaming family's selection loop in numba, emitting event batches.

:class:`CompiledPacker` replays exactly the events of the fast
:class:`~packing_theory.engine.packer.Packer` (the differential tests in
``tests/engine/test_compiled.py`` assert it for every policy and on the golden loader
fixtures) but writes them straight into the columns of
:class:`~packing_theory.engine.batches.EventBatch` values: no Python object per
event. The pure Python engines stay the default and the oracle.

numba is an optional extra (``pip install "packing-theory[fast]"``); importing
this module does not import it — the kernel (:mod:`packing_theory.engine._kernel`)
is loaded on the first replay, and :func:`compiled_available` says whether it
can be. The first replay in a fresh environment compiles the kernel (a few
seconds; cached on disk afterwards).

How it runs: the kernel is a resumable loop. The wrapper hands it the input in
chunks (an in-memory array is sliced; a :class:`~packing_theory.engine.batches.LengthChunks`
stream or any iterator is read a chunk at a time and validated vectorised) and
an empty output buffer; the kernel returns when it needs the next chunk, more
span slots, or when the output buffer is full, which becomes one batch.

``random-span`` draws: the kernel runs CPython's MT19937 from the state of
``random.Random(config.seed)`` (copied with ``getstate()``) and implements
``randrange(n)`` as CPython's ``_randbelow_with_getrandbits`` (``getrandbits(k)``
with ``k = n.bit_length()``, rejecting ``r >= n``; words above 32 bits least
significant first), so every draw equals the Python engine's.

Differences from the Python engine: a chunk of an iterator input is validated
before any of its documents is replayed, so an invalid length raises a little
earlier in the event stream (with the same message).

Complexity: O(1) amortised per arrival; per selection O(R / 1024) word
operations for the largest-fit query, O(1) bucket operations (a ``continue``
suffix walks its length's list to its place) and O(log n) for spans longer
than ``R``; ``bounded-wait``'s forced start is amortised O(1) plus the unlink
of one slot (O(1) from a length list, O(log n) from the long heap). Memory
O(B + R + batch), plus for ``bounded-wait`` a wait ring of the arrivals since
the oldest unstarted span arrived.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import random
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import is_int
from ..errors import InputError, InputTypeError, MissingDependency
from ..lengths import INT64_MAX
from .base import PackingEngine
from .batches import (
    DEFAULT_BATCH_EVENTS,
    HORIZON,
    ArrivalColumns,
    BosAddedColumns,
    DiscardColumns,
    EventBatch,
    EventItem,
    ExhaustedColumns,
    LengthChunks,
    PlacementColumns,
    unbatched,
)
from .events import BufferedSpan, Event, Horizon
from .kernel_codes import POLICY_CODES
from .policies import MAX_SEGMENTS, STREAMING_POLICIES, PackerConfig, Policy, resolve_config, segment
from .refill import as_length_list
from .state import EngineState

__all__ = [
    "COMPILED_POLICIES", "INPUT_CHUNK", "MAX_COMPILED_CAPACITY", "CompiledPacker", "compiled_available",
    "load_kernel", "load_numba_module", "load_starts_kernels"]

MAX_COMPILED_CAPACITY = 2**32
"""The widest row the compiled kernel packs: it keeps per-position index arrays (about 16 bytes per
position of ``R``) and 64-bit counters."""

COMPILED_POLICIES: tuple[Policy, ...] = tuple(p.name for p in STREAMING_POLICIES.values() if p.compiled)
"""The policies the compiled kernel implements: those declared ``compiled`` (the others run on the fast
engine). The kernel's code for each is looked up by name in ``_kernel.POLICY_CODES``."""

Int64Array = npt.NDArray[np.int64]

INPUT_CHUNK = 1 << 20
"""Lengths handed to the kernel per call (and read per step from an iterator)."""

_STOP_REASONS = {1: "rows", 2: "exhausted", 3: "drained"}


def compiled_available() -> bool:
    """Whether numba is installed (the compiled engine can run). Does not import it.

    >>> isinstance(compiled_available(), bool)
    True
    """
    return importlib.util.find_spec("numba") is not None


def load_numba_module(module: str, purpose: str) -> ModuleType:
    """Import ``module``, a module of numba kernels, for ``purpose`` (named in the error).

    Raises:
        MissingDependency: numba is not installed (``pip install "packing-theory[fast]"``).
    """
    if not compiled_available():
        raise MissingDependency(f"{purpose}: numba is not installed (pip install 'packing-theory[fast]')")
    return importlib.import_module(module)


def load_starts_kernels() -> ModuleType:
    """Import the numba loops of the compiled cost accounting and start tracker
    (``engine/_starts_kernel.py``; :func:`load_numba_module`)."""
    return load_numba_module("packing_theory.engine._starts_kernel", "the compiled cost accounting")


def load_kernel() -> ModuleType:
    """Import the compiled engine's numba kernel (:func:`load_numba_module`)."""
    return load_numba_module("packing_theory.engine._kernel", "the compiled engine")


def _check_chunk(arr: npt.NDArray[Any], base: int) -> Int64Array:
    if arr.ndim == 1 and arr.size == 0:  # an empty chunk holds no length, whatever its dtype (np.array([]))
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"lengths must have an integer dtype, got {arr.dtype}")
    if arr.ndim != 1:
        raise InputError(f"lengths chunks must be 1-D, got shape {arr.shape}")
    bad = arr < 1
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8:
        bad |= arr > np.iinfo(np.int64).max
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"lengths[{base + i}] must be a positive BOS-inclusive length, got {arr[i]}")
    return arr.astype(np.int64, copy=False)


def _check_segments(chunk: Int64Array, capacity: int) -> None:
    """The chunk limit of :func:`~packing_theory.engine.policies.segment` for a chunk of lengths, in bulk.

    The kernel splits long documents itself; a document past
    :data:`~packing_theory.engine.policies.MAX_SEGMENTS` chunks is refused as the
    fast engine refuses it (same message), before the kernel reads the chunk.
    """
    long = chunk[chunk > capacity]
    if long.size:
        pieces = 1 + (long - 2) // (capacity - 1)  # 1 + ceil((long - R) / (R - 1)), without overflow
        over = np.flatnonzero(pieces > MAX_SEGMENTS)
        if over.size:
            segment(int(long[over[0]]), capacity)  # raises with the fast engine's message


def _validated_ints(values: Iterable[object]) -> Iterator[int]:
    for i, value in enumerate(values):
        if not is_int(value):
            raise InputTypeError(f"lengths[{i}] must be an int, got {type(value).__name__} {value!r}")
        if value < 1:  # type: ignore[operator]
            raise InputError(f"lengths[{i}] must be a positive BOS-inclusive length, got {value}")
        yield int(value)  # type: ignore[call-overload]


# (chunk, source base, pass index, last chunk of its pass, last chunk of the stream)
_Chunk = tuple[Int64Array, int, int, bool, bool]


def _input_chunks(lengths: object, config: PackerConfig, step: int) -> Iterator[_Chunk]:
    if isinstance(lengths, np.ndarray):
        from ..lengths import validate_lengths

        arr: Int64Array | None = validate_lengths(lengths)
    elif isinstance(lengths, LengthChunks):
        arr = None
    else:
        materialised = as_length_list(lengths)
        arr = None if materialised is None else np.asarray(materialised, dtype=np.int64)
    if arr is not None:
        from ..lengths import release_pages

        n = arr.size
        for p in range(config.passes):
            for i in range(0, n, step):
                last = i + step >= n
                yield arr[i : i + step], i, p, last, last and p == config.passes - 1
                release_pages(arr[i : i + step])  # the kernel asks again once it has read the chunk
        return
    if config.passes != 1:
        raise InputError(f"passes={config.passes} needs a re-iterable lengths sequence, "
                         "got a one-shot iterator")
    base = 0
    if isinstance(lengths, LengthChunks):
        for raw in lengths.chunks():
            c = _check_chunk(np.asarray(raw), base)
            if c.size:
                yield c, base, 0, False, False
                base += c.size
    else:
        it = _validated_ints(lengths)  # type: ignore[arg-type]
        while True:
            c = np.fromiter(itertools.islice(it, step), dtype=np.int64)
            if not c.size:
                break
            yield c, base, 0, False, False
            base += c.size
    if base == 0:
        raise InputError("lengths is empty: a replay needs at least one document")
    yield np.zeros(0, dtype=np.int64), base, 0, True, True


class _Out:
    """One output buffer of the kernel (becomes one batch)."""

    def __init__(self, size: int) -> None:
        self.kinds = np.empty(size + 1, dtype=np.uint8)
        self.oa = np.empty((4, size), dtype=np.int64)
        self.ob = np.empty((3, size), dtype=np.int64)
        self.op = np.empty((8, size), dtype=np.int64)
        self.od = np.empty((4, size), dtype=np.int64)
        self.exhausted: tuple[int, int, int] | None = None


class CompiledPacker(PackingEngine):
    """The streaming engine compiled with numba (see the module doc); needs the ``fast`` extra.

    Args:
        config: a :class:`~packing_theory.engine.policies.PackerConfig`; keyword
            arguments build one when ``config`` is omitted.

    Raises:
        ImportError: on the first replay, when numba is not installed.
    """

    engine = "compiled"
    resumable = False
    native_batches = True
    columnar = True

    def __init__(self, config: PackerConfig | None = None, **kwargs: Any) -> None:
        config = resolve_config(config, kwargs, PackerConfig)
        if config.policy not in COMPILED_POLICIES:
            raise InputError(f"the compiled engine implements policies {', '.join(COMPILED_POLICIES)}; "
                             f"got policy {config.policy!r} (use engine='fast')")
        for name, value in (("capacity", config.capacity), ("min_buffer", config.min_buffer),
                            ("rows", config.rows), ("targets", config.targets),
                            *(("refill", b) for b in config.batch_sizes)):
            limit = MAX_COMPILED_CAPACITY if name == "capacity" else INT64_MAX
            if value is not None and value > limit:
                raise InputError(f"the compiled engine holds {name} in 64-bit integers"
                                 f"{' and O(R) index arrays' if name == 'capacity' else ''}: {name} must be "
                                 f"<= {limit}, got {value} (engine='fast' takes it exactly)")
        super().__init__(config)

    def events(self, lengths: Any, *, resume: EngineState | None = None) -> Iterator[Event]:
        """The single-event stream (the batches unpacked; for checks and small inputs)."""
        return unbatched(self.batches(lengths, resume=resume))

    def stream(self, lengths: Any, *, resume: EngineState | None = None) -> Iterator[EventItem]:
        """The batches of :meth:`batches` (this engine's own form of the stream)."""
        return self.batches(lengths, resume=resume)

    def batches(self, lengths: Any, *, size: int = DEFAULT_BATCH_EVENTS,
                resume: EngineState | None = None, input_chunk: int = INPUT_CHUNK) -> Iterator[EventBatch]:
        """Replay ``lengths`` and yield :class:`EventBatch` values of at most ``size`` events.

        ``lengths``: an integer array, a sequence, an iterator of ints or a
        :class:`~packing_theory.engine.batches.LengthChunks` stream. The last
        batch ends with the Horizon.

        Raises:
            InputError: ``size < 4``, or a ``resume`` state (this engine cannot resume).
        """
        if resume is not None:
            raise self._not_resumable()
        if isinstance(size, bool) or not isinstance(size, int) or size < 4:
            raise InputError(f"size must be an int >= 4, got {size!r}")
        return self._run(lengths, size, int(input_chunk))

    def _run(self, lengths: Any, size: int, step: int) -> Iterator[EventBatch]:
        k = load_kernel()
        cfg = self.config
        R, B = cfg.capacity, cfg.min_buffer
        sizes = np.asarray(cfg.batch_sizes, dtype=np.int64)
        budget = cfg.row_budget
        cfgarr = np.array([R, B, POLICY_CODES[cfg.policy], -1 if budget is None else budget,
                           int(cfg.exhausted == "drain"), sizes.size, cfg.wait_threshold or 0],
                          dtype=np.int64)
        st = np.zeros(k.ST_SIZE, dtype=np.int64)
        nslots = max(1024, 2 * B + 2 * int(sizes.max()) + 2)
        sl = np.zeros((k.SLOT_FIELDS, nslots), dtype=np.int64)
        free = np.arange(nslots - 1, -1, -1, dtype=np.int64)
        st[k.FREE_TOP] = nslots
        heap = np.zeros(nslots, dtype=np.int64)
        head = np.full(R + 1, -1, dtype=np.int64)
        tail = np.full(R + 1, -1, dtype=np.int64)
        words = np.zeros((R >> 5) + 1, dtype=np.int64)
        summ = np.zeros((words.size >> 5) + 1, dtype=np.int64)
        mt = np.zeros(624, dtype=np.int64)
        ring = 1 << (2 * (B + int(sizes.max())) + 2).bit_length() if cfg.spec.forced_start else 1
        wq = np.zeros((2, ring), dtype=np.int64)  # bounded-wait's wait ring (a power of two; grown on demand)
        st[k.MTI] = 624
        if cfg.spec.random:
            state = random.Random(cfg.seed).getstate()[1]
            mt[:] = state[:624]
            st[k.MTI] = state[624]
        chunks = _input_chunks(lengths, cfg, step)
        chunk = np.zeros(0, dtype=np.int64)
        out = _Out(size)
        announced = False
        while True:
            status = k.run(st, cfgarr, sizes, chunk, sl, free, head, tail, words, summ, heap, mt, wq,
                           out.kinds, out.oa, out.ob, out.op, out.od)
            if st[k.ANNOUNCED] and not announced:
                announced = True
                out.exhausted = (int(st[k.EX_ROW]), int(st[k.EX_POS]), int(st[k.EX_BUF]))
            if status == k.NEED_INPUT:
                chunk, base, p, pass_end, stream_end = next(chunks)
                if cfg.spec.segments:
                    _check_segments(chunk, R)
                if p != st[k.PASS_INDEX]:
                    st[k.BATCH_K] = 0  # batch sizes restart at every pass
                st[k.IN_POS] = 0
                st[k.SOURCE_BASE] = base
                st[k.PASS_INDEX] = p
                st[k.PASS_END] = pass_end
                st[k.STREAM_END] = stream_end
            elif status == k.NEED_SLOTS:
                sl, free, heap = _grow(k, st, sl, free, heap, int(st[k.NEED]))
            elif status == k.NEED_WAIT:
                wq = _grow_wait_ring(k, st, wq)
            elif status == k.OUT_FULL:
                yield _batch(k, st, out, None)
                out = _Out(size)
            else:
                order = k.snapshot(sl, free, st)
                buffered = tuple(BufferedSpan(o, s, a, n, bool(b)) for o, s, a, n, b in
                                 zip(*(sl[f, order].tolist() for f in range(5)), strict=True))
                stop = _STOP_REASONS[int(st[k.STOP])]
                horizon = Horizon(int(st[k.ROW]), int(st[k.POS]), stop, buffered)
                yield _batch(k, st, out, horizon)
                return


def _grow(k: ModuleType, st: Int64Array, sl: Int64Array, free: Int64Array, heap: Int64Array,
          need: int) -> tuple[Int64Array, Int64Array, Int64Array]:
    n = sl.shape[1]
    m = max(2 * n, n + 2 * need)
    sl2 = np.zeros((sl.shape[0], m), dtype=np.int64)
    sl2[:, :n] = sl
    top = int(st[k.FREE_TOP])
    free2 = np.empty(m, dtype=np.int64)
    free2[:top] = free[:top]
    free2[top : top + m - n] = np.arange(m - 1, n - 1, -1, dtype=np.int64)
    st[k.FREE_TOP] = top + m - n
    heap2 = np.zeros(m, dtype=np.int64)
    heap2[: heap.size] = heap
    return sl2, free2, heap2


def _grow_wait_ring(k: ModuleType, st: Int64Array, wq: Int64Array) -> Int64Array:
    """Double ``bounded-wait``'s wait ring, keeping entry ``q`` at index ``q mod size``."""
    size = wq.shape[1]
    q = np.arange(int(st[k.WQ_HEAD]), int(st[k.SEQ_NEXT]), dtype=np.int64)
    wider = np.zeros((2, 2 * size), dtype=np.int64)
    wider[:, q & (2 * size - 1)] = wq[:, q & (size - 1)]
    return wider


def _batch(k: ModuleType, st: Int64Array, out: _Out, horizon: Horizon | None) -> EventBatch:
    n = int(st[k.N_KINDS])
    if horizon is not None:
        out.kinds[n] = HORIZON
        n += 1
    na, nb, npl, nd = (int(st[i]) for i in (k.N_ARR, k.N_BOS, k.N_PL, k.N_DC))
    op = out.op
    ex = out.exhausted
    batch = EventBatch(
        out.kinds[:n],
        arrival=ArrivalColumns(*(out.oa[i, :na] for i in range(4))),
        bos_added=BosAddedColumns(*(out.ob[i, :nb] for i in range(3))),
        placement=PlacementColumns(op[0, :npl], op[1, :npl], op[2, :npl], op[3, :npl], op[4, :npl],
                                   op[5, :npl], op[6, :npl].astype(np.bool_), op[7, :npl].astype(np.bool_)),
        discard=DiscardColumns(*(out.od[i, :nd] for i in range(4))),
        exhausted=(ExhaustedColumns(*(np.array([v], dtype=np.int64) for v in ex)) if ex is not None
                   else ExhaustedColumns(*(np.zeros(0, dtype=np.int64) for _ in range(3)))),
        horizon=horizon,
    )
    for i in (k.N_KINDS, k.N_ARR, k.N_BOS, k.N_PL, k.N_DC):
        st[i] = 0
    return batch
