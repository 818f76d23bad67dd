"""Seed 004's per-predicted-token objective and bits per byte, in numpy.

Seed 004 normalises the loss by the number of *predicted targets*: with the
masked token NLL ``ℓ_t = m_t · (-log π(x_t | x_<t))``, the empirical objective
over records ``ζ^(1..N)`` is ``Σ_i Σ_t ℓ_t / Σ_i Σ_t m_t`` — one ratio over
everything, not a mean of per-record (or per-batch) means, which would weight
a short record's tokens more than a long one's. :class:`TokenLoss` keeps the
two sums so that batches of any size accumulate exactly.

Bits per byte (autoresearch's ``evaluate_bpb``): the summed NLL (nats) of the
targets whose token has a positive byte length, divided by ``ln 2`` times
the summed byte lengths of those targets; special tokens have byte length 0
and so drop out of both sums.

Arrays: ``nll`` holds per-position NLL in nats, aligned with ``mask`` and
``targets`` (any matching shapes: the autoresearch ``(B, T)`` targets, or the
row layout with ``m[:, 0] = 0``).

>>> nll = np.array([[0.0, 2.0, 1.0], [0.0, 4.0, 9.0]])
>>> m = np.array([[0, 1, 1], [0, 1, 0]])
>>> objective(nll, m)  # (2 + 1 + 4) / 3, not the mean of the row means (1.5 + 4) / 2
2.3333333333333335
>>> acc = TokenLoss(); _ = acc.add(nll[:1], m[:1]); _ = acc.add(nll[1:], m[1:]); acc.value
2.3333333333333335
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError

__all__ = ["TokenLoss", "bits_per_byte", "masked_nll_sum", "objective", "token_byte_lengths"]

FloatArray = npt.NDArray[np.floating]


def _arrays(
    nll: npt.ArrayLike, mask: npt.ArrayLike | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    x = np.asarray(nll, dtype=np.float64)
    if mask is None:
        m = np.ones(x.shape, dtype=bool)
    else:
        m = np.asarray(mask)
        if m.shape != x.shape:
            raise InputError(f"mask has shape {m.shape}, nll has shape {x.shape}: they must match")
        if m.dtype != np.bool_:
            if not np.isin(m, (0, 1)).all():
                raise InputError("mask must hold 0/1 values")
            m = m.astype(bool)
    bad = m & ~np.isfinite(x)
    if bad.any():
        raise InputError(
            f"nll holds a non-finite value at a predicted position {np.argwhere(bad)[0].tolist()}"
        )
    return x, m


def masked_nll_sum(nll: npt.ArrayLike, mask: npt.ArrayLike | None = None) -> tuple[float, int]:
    """``(Σ m_t · nll_t, Σ m_t)``: the numerator and denominator of seed 004's objective.

    Masked positions contribute nothing (whatever they hold, even ``nan``).

    Raises:
        ValueError: shapes differ, a mask value other than 0/1, or a non-finite
            NLL at a predicted position.
    """
    x, m = _arrays(nll, mask)
    return float(x[m].sum()), int(m.sum())


def objective(nll: npt.ArrayLike, mask: npt.ArrayLike | None = None) -> float:
    """Seed 004's empirical objective of one batch: ``Σ m_t · nll_t / Σ m_t``.

    Raises:
        ValueError: no predicted position (the ratio is undefined), or as
            :func:`masked_nll_sum`.
    """
    total, count = masked_nll_sum(nll, mask)
    if count == 0:
        raise InputError(
            "the batch has no predicted target (sum of the mask is 0): the objective is undefined"
        )
    return total / count


@dataclass
class TokenLoss:
    """Accumulates seed 004's objective over batches: the two sums, exactly.

    ``value`` is ``total / count`` over everything added, which equals
    :func:`objective` of all batches concatenated.
    """

    total: float = 0.0
    count: int = 0

    def add(self, nll: npt.ArrayLike, mask: npt.ArrayLike | None = None) -> float:
        """Add one batch; return that batch's own objective (``nan`` if it predicts nothing)."""
        total, count = masked_nll_sum(nll, mask)
        self.total += total
        self.count += count
        return total / count if count else math.nan

    def add_sums(self, total: float, count: int) -> None:
        """Add precomputed sums (e.g. from a device-side reduction)."""
        self.total += float(total)
        self.count += check_int("count", count, 0)

    @property
    def value(self) -> float:
        """``total / count``.

        Raises:
            ValueError: nothing predicted yet.
        """
        if self.count == 0:
            raise InputError("no predicted target accumulated yet: the objective is undefined")
        return self.total / self.count

    def _check(self) -> None:
        """Assert the internal invariants."""
        assert self.count >= 0 and math.isfinite(self.total)


def bits_per_byte(
    nll: npt.ArrayLike,
    targets: npt.ArrayLike,
    token_bytes: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
) -> tuple[float, float, int]:
    """``(bpb, nats, bytes)``: bits per byte over targets with a positive byte length.

    ``token_bytes[i]`` is the UTF-8 byte length of token ``i`` (0 for special
    tokens, which drop out of both sums). With ``mask``, only predicted
    positions count. ``bpb = nats / (ln 2 · bytes)``.

    >>> bits_per_byte(np.array([math.log(2), 5.0]), np.array([1, 0]), np.array([0, 1]))[0]
    1.0

    Raises:
        ValueError: mismatched shapes, a target id outside ``token_bytes``,
            negative byte lengths, or no byte to score.
    """
    x, m = _arrays(nll, mask)
    y = np.asarray(targets)
    if y.shape != x.shape:
        raise InputError(f"targets has shape {y.shape}, nll has shape {x.shape}: they must match")
    tb = np.asarray(token_bytes)
    if tb.ndim != 1 or not np.issubdtype(tb.dtype, np.integer):
        raise InputTypeError(f"token_bytes must be a 1-D integer array, got shape {tb.shape} dtype "
                             f"{tb.dtype}")
    if (tb < 0).any():
        raise InputError("token_bytes must be >= 0")
    sel = y[m]
    if sel.size and (int(sel.min()) < 0 or int(sel.max()) >= tb.size):
        raise InputError(
            f"a target id is outside token_bytes (ids {int(sel.min())}..{int(sel.max())}, {tb.size} entries)"
        )
    nbytes = tb[sel].astype(np.int64)
    counted = nbytes > 0
    nats = float(x[m][counted].sum())
    total_bytes = int(nbytes.sum())
    if total_bytes == 0:
        raise InputError("no target with a positive byte length: bits per byte is undefined")
    return nats / (math.log(2) * total_bytes), nats, total_bytes


def token_byte_lengths(
    vocab_size: int,
    token_bytes: Callable[[int], bytes],
    special_ids: Iterable[int] = (),
) -> npt.NDArray[np.int64]:
    """Byte length of every token id (0 for ``special_ids``), from a ``id -> bytes`` function.

    >>> token_byte_lengths(3, lambda i: b"ab"[: i], special_ids=[0]).tolist()
    [0, 1, 2]
    """
    n = check_int("vocab_size", vocab_size, 1)
    special = {check_int("special_ids[]", s, 0, maximum=n - 1) for s in special_ids}
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        if i not in special:
            out[i] = len(token_bytes(i))
    return out
