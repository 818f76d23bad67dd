"""64-bit hashes of n-gram windows of token ids, vectorised with numpy.

The hash of the window ``x_j .. x_{j+n-1}`` of token ids is

.. code-block:: text

    u_i  = mix64(x_i + SALT)                                  (mod 2**64)
    H_j  = sum_{i=0}^{n-1} u_{j+i} * BASE**(n-1-i)            (mod 2**64)

``mix64`` is the splitmix64 finaliser (xor-shifts and two multiplications, a
bijection of 64-bit words), ``SALT`` and ``BASE`` are fixed odd constants
(:data:`SALT`, :data:`BASE`). ``H`` is the rolling polynomial hash of the
mixed tokens; as every ``u_i`` is spread over all 64 bits and ``BASE`` is odd,
every bit of ``H`` (the index's pre-filter reads the top ones) depends on every
token. :func:`window_hashes` evaluates it for every window of a sequence at
once, on ``uint64`` arrays that wrap modulo ``2**64``, by doubling: the hashes
of all windows of length ``2L`` are ``H_L[j] * BASE**L + H_L[j + L]``, and
``n`` is assembled from its binary digits, so a 13-gram costs 5 multiply-adds
per window instead of Horner's 12. It works in chunks of
:data:`CHUNK_WINDOWS` windows; no Python code runs per window. The per-token
step of ``uint8`` / ``uint16`` ids (shards) is one lookup in a 65,536-entry
table. :func:`naive_window_hash` is the same formula on Python integers, one
window at a time by Horner's rule (the oracle of the property tests and the
benchmark).

The hash is deterministic (fixed constants): the same window always has the
same hash, in every run and process. A 13-gram of 16-bit ids holds 208 bits,
so distinct windows can share a hash; :func:`expected_false_positives` gives
the expected number of such chance matches of a scan, ``W * G / 2**64`` for
``W`` scanned windows against ``G`` distinct reference hashes, under the usual
idealisation that the hashes of distinct windows behave as independent
uniform 64-bit values.

>>> import numpy as np
>>> ids = np.array([5, 1, 2, 3, 4, 5, 1, 2], dtype=np.uint16)
>>> h = window_hashes(ids, 3)
>>> h.size, bool(h[0] == h[5]), int(h[1]) == naive_window_hash([1, 2, 3])
(6, True, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError

__all__ = [
    "BASE",
    "CHUNK_WINDOWS",
    "DEFAULT_N",
    "HASH_BITS",
    "HASH_DESCRIPTION",
    "SALT",
    "as_token_ids",
    "expected_false_positives",
    "mix64",
    "naive_mix64",
    "naive_window_hash",
    "small_keys",
    "token_keys",
    "window_hashes",
]

HASH_BITS = 64
"""Width of a window hash."""

DEFAULT_N = 13
"""Window length in tokens (seed 002's audit, after finemath's 13-gram decontamination)."""

SALT = 0x9E3779B97F4A7C15
"""Added to every token id before mixing (so that id 0 does not map to 0)."""

BASE = 0xD6E8FEB86659FD93
"""Odd multiplier of the polynomial hash."""

CHUNK_WINDOWS = 1 << 16
"""Windows hashed per numpy step: about 50 bytes of working memory per window (3 MiB, cache-sized)."""

HASH_DESCRIPTION = (
    "H = sum_i mix64(x_{j+i} + 0x9E3779B97F4A7C15) * 0xD6E8FEB86659FD93**(n-1-i) mod 2**64, "
    "mix64 = the splitmix64 finaliser; 64-bit, deterministic"
)
"""One line naming the hash, for reports."""

_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1
_U64 = np.uint64
U64Array = npt.NDArray[np.uint64]


def mix64(z: U64Array) -> U64Array:
    """Apply the splitmix64 finaliser to ``z`` **in place** and return it (a bijection of ``uint64``).

    >>> import numpy as np
    >>> int(mix64(np.array([1], dtype=np.uint64))[0]) == naive_mix64(1)
    True
    """
    z ^= z >> _U64(30)
    z *= _U64(_M1)
    z ^= z >> _U64(27)
    z *= _U64(_M2)
    z ^= z >> _U64(31)
    return z


def naive_mix64(z: int) -> int:
    """:func:`mix64` of one Python integer (the oracle's copy, kept separate on purpose)."""
    z &= _MASK
    z ^= z >> 30
    z = (z * _M1) & _MASK
    z ^= z >> 27
    z = (z * _M2) & _MASK
    z ^= z >> 31
    return z


def as_token_ids(tokens: object, what: str) -> npt.NDArray[np.uint64]:
    """``tokens`` (a sequence or 1-D array of non-negative integer ids) as a ``uint64`` array.

    Raises:
        InputTypeError: not integers, or not 1-D (naming ``what``).
        InputError: a negative id (naming ``what`` and the position).

    >>> as_token_ids([3, 0], "doc").tolist()
    [3, 0]
    >>> as_token_ids([1, -2], "doc")
    Traceback (most recent call last):
    packing_theory.InputError: doc: token id -2 at position 1 is negative
    """
    arr = np.asarray(tokens)
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.ndim != 1 or arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{what}: token ids must be a 1-D sequence of ints, got {arr.dtype} "
                             f"of shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.signedinteger) and int(arr.min()) < 0:
        i = int(np.argmax(arr < 0))
        raise InputError(f"{what}: token id {int(arr[i])} at position {i} is negative")
    return arr.astype(np.uint64, copy=False)


_SMALL_KEYS: U64Array | None = None


def small_keys() -> U64Array:
    """``mix64(x + SALT)`` for every ``x < 65536`` (512 KiB, built once; the table of ``uint16`` ids).

    >>> int(small_keys()[7]) == naive_mix64(7 + SALT)
    True
    """
    global _SMALL_KEYS
    if _SMALL_KEYS is None:
        table = np.arange(1 << 16, dtype=np.uint64)
        table += _U64(SALT)
        _SMALL_KEYS = mix64(table)
    return _SMALL_KEYS


def token_keys(ids: npt.NDArray[np.integer]) -> U64Array:
    """``mix64(ids + SALT)`` as a new ``uint64`` array (the per-token step of the hash). O(len(ids)).

    ``uint8`` and ``uint16`` ids are looked up in a table; wider ids are mixed.
    """
    arr = np.asarray(ids)
    if arr.dtype in (np.uint8, np.uint16):
        out: U64Array = small_keys()[arr]
        return out
    u = arr.astype(np.uint64)  # always a copy: mix64 works in place
    u += _U64(SALT)
    return mix64(u)


def _power(k: int) -> np.uint64:
    return _U64(pow(BASE, k, 1 << 64))


def _polynomial(u: U64Array, n: int) -> U64Array:
    """``sum_i u[j+i] * BASE**(n-1-i)`` for every window start ``j`` of ``u`` (``len(u) - n + 1`` values).

    By doubling: ``windows[L]`` holds the hashes of all length-``L`` windows
    (``L`` a power of two up to ``n``); the result joins those of ``n``'s
    binary digits, high to low: ``acc[j] * BASE**L + windows[L][j + a]`` for
    an ``acc`` of length ``a``. ``2 (log2 n + popcount n - 1)`` array passes.
    """
    w = u.size - n + 1
    windows = {1: u}
    length = 1
    while 2 * length <= n:
        cur = windows[length]
        m = cur.size - length
        nxt = cur[:m] * _power(length)
        nxt += cur[length : length + m]
        length *= 2
        windows[length] = nxt
    acc: U64Array | None = None
    done = 0
    for length in sorted(windows, reverse=True):
        if n - done < length:
            continue
        part = windows[length]
        if acc is None:
            acc = part[:w]  # not modified in place below: every later step makes a new array
        else:
            acc = acc[:w] * _power(length)
            acc += part[done : done + w]
        done += length
    assert acc is not None and done == n
    return acc


def window_hashes(ids: npt.NDArray[np.integer], n: int = DEFAULT_N, *,
                  chunk: int = CHUNK_WINDOWS) -> U64Array:
    """The hash of every length-``n`` window of ``ids``: ``len(ids) - n + 1`` values (none if shorter).

    ``out[j]`` hashes ``ids[j : j + n]``. Windows are taken over the whole
    array: callers cut documents apart (a window across a document boundary is
    theirs to ignore).

    Complexity: O(log n * len(ids)) vectorised operations, in chunks of
    ``chunk`` windows; memory the result (8 bytes per window) plus O(chunk).

    Raises:
        InputError: ``n < 1`` or ``chunk < 1``.
    """
    n = check_int("n", n, 1)
    chunk = check_int("chunk", chunk, 1)
    arr = np.asarray(ids)
    total = arr.size - n + 1
    if total <= 0:
        return np.zeros(0, dtype=np.uint64)
    if total <= chunk:
        return _polynomial(token_keys(arr), n)
    out = np.empty(total, dtype=np.uint64)
    for lo in range(0, total, chunk):
        hi = min(total, lo + chunk)
        out[lo:hi] = _polynomial(token_keys(arr[lo : hi + n - 1]), n)
    return out


def naive_window_hash(window: Sequence[int]) -> int:
    """The hash of one window, computed on Python integers token by token (the oracle).

    Deliberately a second implementation of the formula in the module
    docstring: the property tests compare it with :func:`window_hashes`.

    >>> naive_window_hash([1, 2, 3]) == int(window_hashes(np.array([1, 2, 3]), 3)[0])
    True
    """
    acc = 0
    for x in window:
        acc = (acc * BASE + naive_mix64(int(x) + SALT)) & _MASK
    return acc


def expected_false_positives(windows: int, grams: int, bits: int = HASH_BITS) -> float:
    """Expected chance matches of ``windows`` scanned windows against ``grams`` distinct reference hashes.

    ``windows * grams / 2**bits``: each scanned window's hash equals a given
    reference hash with probability ``2**-bits`` (idealised uniform hashes), and
    a window that is no reference gram is a false match when it equals any of
    the ``grams`` hashes.

    >>> f"{expected_false_positives(1_127_163_952, 1_000_000):.3e}"
    '6.110e-05'
    """
    windows = check_int("windows", windows, 0)
    grams = check_int("grams", grams, 0)
    bits = check_int("bits", bits, 1)
    return windows * grams / float(2**bits)
