"""The numba kernel of the compiled engine (imported only by :mod:`packing_theory.engine.compiled`).

Typing boundary: numba's ``@njit`` is untyped, so this one module is checked
by mypy without ``disallow_untyped_decorators`` (``pyproject.toml``); its only
caller, :mod:`packing_theory.engine.compiled`, is fully typed and passes plain
numpy arrays. Nothing here is public API.

Data structures (all fixed-width numpy arrays, grown by the caller):

* **slots** — ``sl[field, slot]`` rows ``OCC SRC START LEN BOS SEQ NXT PRV HPOS``;
  a span occupies one slot while buffered; free slots are a stack (a freed
  slot's ``SEQ`` is ``-1``).
* **length buckets** — for spans of length ``<= R``: one doubly linked list per
  length, sorted by buffer sequence number ``SEQ`` (head = earliest), plus a
  two-level bitset of non-empty lengths (32-bit words in ``int64``, so no sign
  games). "Largest non-empty length ``<= r``" and "shortest" are a few word
  operations.
* **long heap** — a binary min-heap of the slots of spans longer than ``R``,
  keyed ``(LEN, SEQ)``; ``HPOS`` is a slot's index in it, so that any slot can
  be removed in O(log n).
* **wait ring** (``bounded-wait``) — ``wq[0, q & mask]`` is the slot and
  ``wq[1, q & mask]`` the arrival row of the span with sequence number ``q``,
  for ``WQ_HEAD <= q < SEQ_NEXT`` (buffer order is arrival order under this
  policy: a crop keeps its span's number). The front is advanced lazily past
  spans that have started (freed, reused, or ``START > 0``); the forced start
  looks at the front only.
* **MT19937** — the state of Python's :class:`random.Random` (copied from
  ``random.Random(seed).getstate()``), advanced exactly as CPython does, so that
  ``randrange`` draws are bit-identical.

The main loop :func:`run` is a resumable state machine: it returns to the
caller when it needs the next input chunk, more slots or an empty output
buffer, with every scalar of its state in ``st``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernel_codes import BOUNDED_WAIT, CONTINUE, RANDOM, REQUEUE, SEGMENT

__all__ = ["run", "snapshot"]

# --- st fields
OCCURRENCE, ROW, POS, SIZE, SEQ_NEXT, STREAM_DONE, ANNOUNCED, STOP, BATCH_LEFT, BATCH_K = range(10)
IN_POS, PASS_END, STREAM_END, SOURCE_BASE, PASS_INDEX, FREE_TOP, HEAP_N, MTI = range(10, 18)
N_KINDS, N_ARR, N_BOS, N_PL, N_DC, NEED, EX_ROW, EX_POS, EX_BUF, WQ_HEAD = range(18, 28)
ST_SIZE = 28
# --- cfg fields
C_R, C_B, C_POLICY, C_BUDGET, C_DRAIN, C_NSIZES, C_MAX_WAIT = range(7)
# --- policies: their codes are in kernel_codes.POLICY_CODES (a policy without one is refused before
# the kernel runs: StreamingPolicy.compiled)
# --- statuses
DONE, NEED_INPUT, NEED_SLOTS, OUT_FULL, NEED_WAIT = range(5)
# --- stop reasons
STOP_ROWS, STOP_EXHAUSTED, STOP_DRAINED = 1, 2, 3
# --- slot fields
F_OCC, F_SRC, F_START, F_LEN, F_BOS, F_SEQ, F_NXT, F_PRV, F_HPOS = range(9)
SLOT_FIELDS = 9
# --- event kinds (packing_theory.engine.batches)
K_ARRIVAL, K_BOS, K_PLACEMENT, K_DISCARD, K_EXHAUSTED = 0, 1, 2, 3, 7

MASK32 = 0xFFFFFFFF


@njit(cache=True)
def _genrand(mt, st):
    """CPython's ``genrand_uint32`` (used by :func:`randbelow`; ``run`` has its own inlined copy)."""
    if st[MTI] >= 624:
        for kk in range(624):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % 624] & 0x7FFFFFFF)
            v = mt[(kk + 397) % 624] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908B0DF
            mt[kk] = v
        st[MTI] = 0
    y = mt[st[MTI]]
    st[MTI] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y & MASK32


@njit(cache=True)
def randbelow(mt, st, n):
    """``random.Random.randrange(n)`` for ``0 < n < 2**62``: CPython's ``_randbelow_with_getrandbits``.

    ``k = n.bit_length()``; ``getrandbits(k)`` takes the top ``k`` bits of one
    32-bit output, or for ``k > 32`` 32-bit words least significant first (the
    last one shifted right); draws ``>= n`` are rejected.
    """
    k = 0
    x = n
    while x:
        k += 1
        x >>= 1
    while True:
        if k <= 32:
            r = _genrand(mt, st) >> (32 - k)
        else:
            r = 0
            shift = 0
            left = k
            while left > 0:
                w = _genrand(mt, st)
                if left < 32:
                    w >>= 32 - left
                r |= w << shift
                shift += 32
                left -= 32
        if r < n:
            return r


# --------------------------------------------------------------------------- the loop
#
# Every helper is an inner function of ``run``: numba inlines closures and they
# capture the arrays, whereas a call to another jitted function that takes arrays
# pays reference-count updates per array per call (measured: ~40 ns a call).


@njit(cache=True)
def run(st, cfg, sizes, chunk, sl, free, head, tail, words, summ, heap, mt, wq, kinds, oa, ob, op, od):
    """Advance the replay until it needs input/slots/wait-ring/output room or is done; return the status."""
    R = cfg[C_R]
    B = cfg[C_B]
    policy = cfg[C_POLICY]
    budget = cfg[C_BUDGET]
    drain = cfg[C_DRAIN]
    nsizes = cfg[C_NSIZES]
    max_wait = cfg[C_MAX_WAIT]
    wmask = wq.shape[1] - 1  # the wait ring's size is a power of two
    cap = kinds.size - 1  # one place is kept for the Horizon

    def msb32(x):  # index of the highest set bit of 0 < x < 2**32
        n = 0
        if x >= 1 << 16:
            n += 16
            x >>= 16
        if x >= 1 << 8:
            n += 8
            x >>= 8
        if x >= 1 << 4:
            n += 4
            x >>= 4
        if x >= 1 << 2:
            n += 2
            x >>= 2
        if x >= 1 << 1:
            n += 1
        return n

    def bit_set(i):
        w = i >> 5
        if words[w] == 0:
            summ[w >> 5] |= 1 << (w & 31)
        words[w] |= 1 << (i & 31)

    def bit_clear(i):
        w = i >> 5
        words[w] &= ~(1 << (i & 31)) & MASK32
        if words[w] == 0:
            summ[w >> 5] &= ~(1 << (w & 31)) & MASK32

    def largest_le(r):  # largest non-empty length <= r, or -1
        w = r >> 5
        m = words[w] & ((2 << (r & 31)) - 1)
        if m:
            return (w << 5) + msb32(m)
        if w == 0:
            return -1
        s = w - 1
        sw = s >> 5
        sm = summ[sw] & ((2 << (s & 31)) - 1)
        while sm == 0:
            if sw == 0:
                return -1
            sw -= 1
            sm = summ[sw]
        w2 = (sw << 5) + msb32(sm)
        return (w2 << 5) + msb32(words[w2])

    def smallest():  # shortest non-empty length, or -1
        for sw in range(summ.size):
            sm = summ[sw]
            if sm:
                w = (sw << 5) + msb32(sm & -sm)
                return (w << 5) + msb32(words[w] & -words[w])
        return -1

    def bucket_insert(slot):  # keep SEQ order within the length's list (appends are O(1))
        L = sl[F_LEN, slot]
        seq = sl[F_SEQ, slot]
        t = tail[L]
        if t < 0:
            head[L] = slot
            tail[L] = slot
            sl[F_NXT, slot] = -1
            sl[F_PRV, slot] = -1
            bit_set(L)
            return
        if sl[F_SEQ, t] < seq:  # the common case: the newest span of this length
            sl[F_NXT, t] = slot
            sl[F_PRV, slot] = t
            sl[F_NXT, slot] = -1
            tail[L] = slot
            return
        cur = head[L]  # a continue suffix keeps its old SEQ: walk to its place
        while sl[F_SEQ, cur] < seq:
            cur = sl[F_NXT, cur]
        prv = sl[F_PRV, cur]
        sl[F_NXT, slot] = cur
        sl[F_PRV, slot] = prv
        sl[F_PRV, cur] = slot
        if prv < 0:
            head[L] = slot
        else:
            sl[F_NXT, prv] = slot

    def bucket_pop(L):
        slot = head[L]
        nxt = sl[F_NXT, slot]
        head[L] = nxt
        if nxt < 0:
            tail[L] = -1
            bit_clear(L)
        else:
            sl[F_PRV, nxt] = -1
        return slot

    def less(a, b):  # the long heap's key (LEN, SEQ)
        la = sl[F_LEN, a]
        lb = sl[F_LEN, b]
        return la < lb or (la == lb and sl[F_SEQ, a] < sl[F_SEQ, b])

    def heap_put(i, slot):
        heap[i] = slot
        sl[F_HPOS, slot] = i

    def sift_up(i):
        slot = heap[i]
        while i > 0:
            p = (i - 1) >> 1
            if not less(slot, heap[p]):
                break
            heap_put(i, heap[p])
            i = p
        heap_put(i, slot)

    def sift_down(i):
        n = st[HEAP_N]
        slot = heap[i]
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and less(heap[c + 1], heap[c]):
                c += 1
            if not less(heap[c], slot):
                break
            heap_put(i, heap[c])
            i = c
        heap_put(i, slot)

    def heap_push(slot):
        i = st[HEAP_N]
        st[HEAP_N] = i + 1
        heap[i] = slot
        sift_up(i)

    def heap_remove(i):  # remove the entry at index i; return its slot
        top = heap[i]
        n = st[HEAP_N] - 1
        st[HEAP_N] = n
        if i < n:
            moved = heap[n]
            heap_put(i, moved)
            sift_down(i)
            sift_up(sl[F_HPOS, moved])
        return top

    def insert(slot):
        if sl[F_LEN, slot] <= R:
            bucket_insert(slot)
        else:
            heap_push(slot)

    def new_slot(occ, src, start, length, bos):
        top = st[FREE_TOP] - 1
        st[FREE_TOP] = top
        slot = free[top]
        sl[F_OCC, slot] = occ
        sl[F_SRC, slot] = src
        sl[F_START, slot] = start
        sl[F_LEN, slot] = length
        sl[F_BOS, slot] = bos
        sl[F_SEQ, slot] = st[SEQ_NEXT]
        st[SEQ_NEXT] += 1
        return slot

    def free_slot(slot):
        sl[F_SEQ, slot] = -1  # no longer buffered (the wait ring checks SEQ)
        free[st[FREE_TOP]] = slot
        st[FREE_TOP] += 1

    def unlink(slot):  # take one given buffered slot out of its length list or the long heap
        L = sl[F_LEN, slot]
        if L > R:
            heap_remove(sl[F_HPOS, slot])
            return
        prv = sl[F_PRV, slot]
        nxt = sl[F_NXT, slot]
        if prv < 0:
            head[L] = nxt
        else:
            sl[F_NXT, prv] = nxt
        if nxt < 0:
            tail[L] = prv
        else:
            sl[F_PRV, nxt] = prv
        if head[L] < 0:
            bit_clear(L)

    def forced_start():  # bounded-wait at a row start: the oldest unstarted span's slot if overdue, else -1
        q = st[WQ_HEAD]
        end = st[SEQ_NEXT]
        s = -1
        while q < end:  # skip spans that have started: freed (SEQ -1), reused (another SEQ), or cropped
            s = wq[0, q & wmask]
            if sl[F_SEQ, s] == q and sl[F_START, s] == 0:
                break
            q += 1
        st[WQ_HEAD] = q
        if q == end or st[ROW] - wq[1, q & wmask] <= max_wait:  # policies.overdue
            return -1
        st[WQ_HEAD] = q + 1
        unlink(s)
        return s

    def take(remaining):  # the selection rule: (slot, crop)
        r = remaining if remaining < R else R
        L = largest_le(r)
        if L >= 0:
            return bucket_pop(L), False
        L = smallest()
        if L >= 0:
            return bucket_pop(L), True
        return heap_remove(0), True

    def genrand():  # CPython's genrand_uint32
        if st[MTI] >= 624:
            for kk in range(624):
                y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % 624] & 0x7FFFFFFF)
                v = mt[(kk + 397) % 624] ^ (y >> 1)
                if y & 1:
                    v ^= 0x9908B0DF
                mt[kk] = v
            st[MTI] = 0
        y = mt[st[MTI]]
        st[MTI] += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y & MASK32

    def rand_below(n):  # random.Random.randrange(n), as randbelow above
        k = 0
        x = n
        while x:
            k += 1
            x >>= 1
        while True:
            if k <= 32:
                r = genrand() >> (32 - k)
            else:
                r = 0
                shift = 0
                left = k
                while left > 0:
                    w = genrand()
                    if left < 32:
                        w >>= 32 - left
                    r |= w << shift
                    shift += 32
                    left -= 32
            if r < n:
                return r

    def emit_placement(occ, src, start, n, bos, crop):
        j = st[N_PL]
        op[0, j] = st[ROW]
        op[1, j] = st[POS]
        op[2, j] = occ
        op[3, j] = src
        op[4, j] = start
        op[5, j] = n
        op[6, j] = bos
        op[7, j] = crop
        st[N_PL] = j + 1
        kinds[st[N_KINDS]] = K_PLACEMENT
        st[N_KINDS] += 1

    def emit_discard(occ, src, start, n):
        j = st[N_DC]
        od[0, j] = occ
        od[1, j] = src
        od[2, j] = start
        od[3, j] = n
        st[N_DC] = j + 1
        kinds[st[N_KINDS]] = K_DISCARD
        st[N_KINDS] += 1

    def emit_bos(occ, src, markers):
        j = st[N_BOS]
        ob[0, j] = occ
        ob[1, j] = src
        ob[2, j] = markers
        st[N_BOS] = j + 1
        kinds[st[N_KINDS]] = K_BOS
        st[N_KINDS] += 1

    def crop(slot, m):
        """A crop of ``m`` tokens from ``slot`` (``policies.crop_outcome``), one branch per policy."""
        occ = sl[F_OCC, slot]
        src = sl[F_SRC, slot]
        start = sl[F_START, slot]
        n = sl[F_LEN, slot]
        bos = sl[F_BOS, slot]
        rest = start + m - bos
        left = n - m
        if policy in (CONTINUE, BOUNDED_WAIT):  # the suffix stays in place: same slot, same SEQ
            emit_placement(occ, src, start, m, bos, 1)
            sl[F_START, slot] = rest
            sl[F_LEN, slot] = left
            sl[F_BOS, slot] = 0
            insert(slot)
            st[SIZE] += 1
            return
        if policy == REQUEUE:
            emit_placement(occ, src, start, m, bos, 1)
            if left > 1:  # [BOS] + leftover goes to the end: a new SEQ
                emit_bos(occ, src, 1)
                sl[F_START, slot] = rest
                sl[F_LEN, slot] = left + 1
                sl[F_BOS, slot] = 1
                sl[F_SEQ, slot] = st[SEQ_NEXT]
                st[SEQ_NEXT] += 1
                insert(slot)
                st[SIZE] += 1
            else:
                emit_discard(occ, src, rest, left)
                free_slot(slot)
            return
        if policy == RANDOM and m >= 2:
            a = 1 + rand_below(n - m + 1)
            if a > 1:
                stop = a + m - 1
                emit_placement(occ, src, a, m, 1, 1)
                emit_discard(occ, src, 1, a - 1)
                if stop != n:
                    emit_discard(occ, src, stop, n - stop)
                free_slot(slot)
                return
        emit_placement(occ, src, start, m, bos, 1)
        emit_discard(occ, src, rest, left)
        free_slot(slot)

    while True:
        if budget >= 0 and st[ROW] >= budget:
            st[STOP] = STOP_ROWS
            return DONE
        # ---- refill: while fewer than B spans, append whole batches (one arrival at a time)
        while st[BATCH_LEFT] > 0 or (st[SIZE] < B and st[STREAM_DONE] == 0):
            if st[BATCH_LEFT] == 0:
                st[BATCH_LEFT] = sizes[st[BATCH_K] % nsizes]
                st[BATCH_K] += 1
            if st[IN_POS] == chunk.size:
                if st[PASS_END] == 0:
                    return NEED_INPUT
                st[BATCH_LEFT] = 0  # a batch never crosses a pass boundary
                if st[STREAM_END]:
                    st[STREAM_DONE] = 1
                    break
                return NEED_INPUT
            length = chunk[st[IN_POS]]
            need = 1
            if policy == SEGMENT and length > R:
                need = 1 + (length - R + R - 2) // (R - 1)
            if st[FREE_TOP] < need:
                st[NEED] = need
                return NEED_SLOTS
            if policy == BOUNDED_WAIT and st[SEQ_NEXT] - st[WQ_HEAD] > wmask:
                return NEED_WAIT
            if st[N_KINDS] + 2 > cap:
                return OUT_FULL
            occ = st[OCCURRENCE]
            src = st[SOURCE_BASE] + st[IN_POS]
            j = st[N_ARR]
            oa[0, j] = occ
            oa[1, j] = src
            oa[2, j] = st[PASS_INDEX]
            oa[3, j] = length
            st[N_ARR] = j + 1
            kinds[st[N_KINDS]] = K_ARRIVAL
            st[N_KINDS] += 1
            if need > 1:  # segment-first: BOS-prefixed chunks of at most R - 1 text tokens
                emit_bos(occ, src, need - 1)
                insert(new_slot(occ, src, 0, R, 0))
                s = R
                while s < length:
                    k = length - s
                    if k > R - 1:
                        k = R - 1
                    insert(new_slot(occ, src, s, k + 1, 1))
                    s += k
                st[SIZE] += need
            else:
                slot = new_slot(occ, src, 0, length, 0)
                insert(slot)
                st[SIZE] += 1
                if policy == BOUNDED_WAIT:  # it arrives in this row (the next selection's row)
                    q = sl[F_SEQ, slot] & wmask
                    wq[0, q] = slot
                    wq[1, q] = st[ROW]
            st[OCCURRENCE] = occ + 1
            st[IN_POS] += 1
            st[BATCH_LEFT] -= 1
        # ---- below B after the refill: stop, or drain outside the theorem
        if st[SIZE] < B:
            if drain == 0:
                st[STOP] = STOP_EXHAUSTED
                return DONE
            if st[ANNOUNCED] == 0:
                if st[N_KINDS] + 1 > cap:
                    return OUT_FULL
                st[ANNOUNCED] = 1
                st[EX_ROW] = st[ROW]  # the caller builds Exhausted(row, pos, buffered)
                st[EX_POS] = st[POS]
                st[EX_BUF] = st[SIZE]
                kinds[st[N_KINDS]] = K_EXHAUSTED
                st[N_KINDS] += 1
            if st[SIZE] == 0:
                st[STOP] = STOP_DRAINED
                return DONE
        if st[N_KINDS] + 4 > cap:
            return OUT_FULL
        # ---- one selection: bounded-wait's forced start at a row start, else the selection rule
        remaining = R - st[POS]
        slot = -1
        if policy == BOUNDED_WAIT and st[POS] == 0:
            slot = forced_start()
        if slot >= 0:
            cropped = sl[F_LEN, slot] > remaining
        else:
            slot, cropped = take(remaining)
        st[SIZE] -= 1
        if not cropped:
            n = sl[F_LEN, slot]
            emit_placement(sl[F_OCC, slot], sl[F_SRC, slot], sl[F_START, slot], n, sl[F_BOS, slot], 0)
            free_slot(slot)
            st[POS] += n
            if st[POS] == R:
                st[ROW] += 1
                st[POS] = 0
            continue
        crop(slot, remaining)
        st[ROW] += 1
        st[POS] = 0


@njit(cache=True)
def snapshot(sl, free, st):
    """Buffered slots in buffer order (by SEQ)."""
    cap = sl.shape[1]
    used = np.ones(cap, dtype=np.bool_)
    for i in range(st[FREE_TOP]):
        used[free[i]] = False
    slots = np.flatnonzero(used)
    order = np.argsort(sl[F_SEQ][slots], kind="mergesort")
    return slots[order]
