"""Scoring windows with any model, and seed 000's metric conventions (§4, §5.5, §8).

Job: batch and right-pad windows, call an :class:`~packing_theory.evaluation.protocol.NllFn`,
keep per-window, per-position-bin sufficient statistics (:class:`WindowScores`),
fingerprint the inputs, and turn sums into CE, perplexity and BPB (:class:`Metrics`).
Imports: numpy, the foundation's ``check_int`` and this package's windows
and protocol modules.

Conventions (seed 000 §4 and §8; the same arithmetic as nanochat's
``evaluate_bpb`` in ``nanochat/loss_eval.py``, karpathy/nanochat at 2085e66):

* ``token_bytes[v]`` is the supplied byte length of token ``v``; special
  tokens (BOS) have 0. A scored target is **counted** when its byte length is
  positive (the *positive-byte mask*); a zero-byte target is scored by the
  model but enters neither numerator nor denominator.
* **CE** = summed NLL of counted targets / number of counted targets (nats
  per non-special target); **perplexity** = ``exp(CE)``.
* **BPB** = summed NLL of counted targets / (ln 2 × summed byte lengths of the
  scored targets). Zero-byte targets add nothing to the byte sum, so this is
  the sum of the *positive* byte lengths.
* **Position bins** ``[0,32), [32,128), [128,512), [512,end)`` of the target
  index within its window (seed 000 §5.5; ``position="source"`` bins the
  target's source position instead). A bin's *contribution* is its NLL
  divided by ln 2 × the **whole** window's bytes, so contributions add up to
  the window's BPB; pooled over windows they add up to the pooled BPB. They
  are contributions, not per-bin BPBs of equally sized bins.

Every sum is kept per window and per bin: NLL in ``float64`` (a window's
total NLL is defined as the sum of its bins), targets and bytes as exact
integers, so token and byte totals reconcile exactly.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._unique import distinct
from ..errors import InputError, InputTypeError, PackingTheoryError
from .protocol import NllFn
from .windows import KINDS, Int64Array, Window, WindowSpec, pad_batch

__all__ = [
    "LN2",
    "MAX_NLL",
    "POSITION_BINS",
    "Fingerprint",
    "Float64Array",
    "Metrics",
    "WindowScores",
    "bin_labels",
    "fingerprint",
    "metrics_from_sums",
    "score",
    "validate_token_bytes",
]

Float64Array = npt.NDArray[np.float64]

LN2 = math.log(2.0)
"""ln 2: BPB = NLL / (ln 2 × bytes)."""

POSITION_BINS: tuple[int, ...] = (0, 32, 128, 512)
"""Left edges of seed 000's position bins ``[0,32), [32,128), [128,512), [512,R-1)``."""

_NEG_TOLERANCE = 1e-6  # an NLL of -1e-7 is rounding in a log-softmax; below this it is an error
MAX_NLL = 1e100
"""The largest scored NLL (nats per target) :func:`score` accepts.

A float32 logit is below 3.4e38, so no real model's log-softmax comes near it;
larger values (e.g. 1e308) would overflow the per-bin, per-source and bootstrap
sums to ``inf``, so they are refused, naming the model and the value.
"""


def bin_labels(edges: Sequence[int] = POSITION_BINS) -> list[str]:
    """Labels of the bins that start at ``edges``.

    >>> bin_labels()
    ['[0,32)', '[32,128)', '[128,512)', '[512,end)']
    """
    e = list(edges)
    return [f"[{a},{b})" for a, b in pairwise(e)] + [f"[{e[-1]},end)"]


def _check_edges(edges: Sequence[int]) -> tuple[int, ...]:
    e = tuple(edges)
    if not e or e[0] != 0:
        raise InputError(f"bin_edges must start at 0, got {e}")
    for i, v in enumerate(e):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise InputTypeError(f"bin_edges[{i}] must be an int, got {v!r}")
    if any(a >= b for a, b in pairwise(e)):
        raise InputError(f"bin_edges must be strictly increasing, got {e}")
    return tuple(int(v) for v in e)


def validate_token_bytes(token_bytes: npt.ArrayLike) -> Int64Array:
    """The byte-length table as a read-only 1-D ``int64`` array of values ``>= 0``.

    >>> validate_token_bytes([0, 1, 3]).tolist()
    [0, 1, 3]
    >>> validate_token_bytes([1, -2])
    Traceback (most recent call last):
    packing_theory.InputError: token_bytes[1] must be >= 0, got -2
    """
    arr = np.asarray(token_bytes)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"token_bytes must be an integer array (bytes per token id), got dtype "
                             f"{arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"token_bytes must be a non-empty 1-D array indexed by token id, "
                         f"got shape {arr.shape}")
    out = arr.astype(np.int64)
    bad = out < 0
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"token_bytes[{i}] must be >= 0, got {out[i]}")
    if not (out > 0).any():
        raise InputError("token_bytes has no positive entry: every target would be excluded from BPB")
    out.flags.writeable = False
    return out


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """SHA-256 fingerprints of what was scored, in window order.

    Attributes:
        targets_sha256: the scored target-id streams, each framed by its
            window's source, kind, offsets and length (seed 000's
            input/target fingerprint).
        inputs_sha256: the full window token streams, framed the same way.
        token_bytes_sha256: the byte-length table.
        windows: windows hashed.
        targets: scored targets hashed.
    """

    targets_sha256: str
    inputs_sha256: str
    token_bytes_sha256: str
    windows: int
    targets: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"targets_sha256": self.targets_sha256, "inputs_sha256": self.inputs_sha256,
                "token_bytes_sha256": self.token_bytes_sha256, "windows": self.windows,
                "targets": self.targets}


def fingerprint(windows: Sequence[Window], token_bytes: npt.ArrayLike) -> Fingerprint:
    """Fingerprint ``windows`` and ``token_bytes`` (O(tokens), about 8 bytes hashed per token).

    >>> from packing_theory.evaluation.windows import beginning_window
    >>> fp = fingerprint([beginning_window([0, 5, 6])], [0, 1, 1, 1, 1, 1, 1])
    >>> fp.windows, fp.targets, len(fp.targets_sha256)
    (1, 2, 64)
    """
    tb = validate_token_bytes(token_bytes)
    ht, hi = hashlib.sha256(), hashlib.sha256()
    n_targets = 0
    for w in windows:
        head = np.asarray([w.source, KINDS.index(w.kind), w.source_offset, w.first_target, w.n_tokens],
                          dtype="<i8").tobytes()
        ht.update(head)
        ht.update(w.targets().astype("<i8", copy=False).tobytes())
        hi.update(head)
        hi.update(w.tokens.astype("<i8", copy=False).tobytes())
        n_targets += w.n_targets
    return Fingerprint(ht.hexdigest(), hi.hexdigest(), hashlib.sha256(tb.astype("<i8").tobytes()).hexdigest(),
                       len(windows), n_targets)


@dataclass(frozen=True, slots=True)
class Metrics:
    """Pooled metrics of a set of scored windows (sums first, ratios last).

    Attributes:
        sources: distinct sources.
        windows: windows.
        targets: scored targets.
        counted_targets: scored targets with positive byte length.
        bytes: summed byte length of the scored targets.
        nll: summed NLL of the counted targets (nats).
        bin_targets, bin_counted, bin_bytes, bin_nll: the same per position bin.
    """

    sources: int
    windows: int
    targets: int
    counted_targets: int
    bytes: int
    nll: float
    bin_targets: tuple[int, ...]
    bin_counted: tuple[int, ...]
    bin_bytes: tuple[int, ...]
    bin_nll: tuple[float, ...]

    @property
    def ce(self) -> float | None:
        """Nats per counted (non-special) target; ``None`` without counted targets."""
        return self.nll / self.counted_targets if self.counted_targets else None

    @property
    def perplexity(self) -> float | None:
        """``exp(CE)``."""
        ce = self.ce
        return math.exp(ce) if ce is not None else None

    @property
    def bpb(self) -> float | None:
        """Bits per byte, ``nll / (ln 2 × bytes)``; ``None`` without bytes."""
        return self.nll / (LN2 * self.bytes) if self.bytes else None

    @property
    def contributions(self) -> tuple[float, ...] | None:
        """Each bin's NLL / (ln 2 × all bytes): they add up to :attr:`bpb`."""
        if not self.bytes:
            return None
        return tuple(v / (LN2 * self.bytes) for v in self.bin_nll)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the ratios."""
        return {"sources": self.sources, "windows": self.windows, "targets": self.targets,
                "counted_targets": self.counted_targets, "bytes": self.bytes, "nll": self.nll,
                "ce": self.ce, "perplexity": self.perplexity, "bpb": self.bpb,
                "bin_targets": list(self.bin_targets), "bin_counted": list(self.bin_counted),
                "bin_bytes": list(self.bin_bytes), "bin_nll": list(self.bin_nll),
                "contributions": None if self.contributions is None else list(self.contributions)}


def metrics_from_sums(nll: Float64Array, counted: Int64Array, targets: Int64Array, nbytes: Int64Array,
                      sources: int, windows: int) -> Metrics:
    """Pool per-window, per-bin sums (arrays of shape ``(w, k)``) into :class:`Metrics`.

    The pooled NLL is the sum of the pooled bins, so contributions add up to BPB.
    """
    bin_nll = nll.sum(axis=0)
    return Metrics(
        sources=int(sources), windows=int(windows), targets=int(targets.sum()),
        counted_targets=int(counted.sum()), bytes=int(nbytes.sum()), nll=float(bin_nll.sum()),
        bin_targets=tuple(int(v) for v in targets.sum(axis=0)),
        bin_counted=tuple(int(v) for v in counted.sum(axis=0)),
        bin_bytes=tuple(int(v) for v in nbytes.sum(axis=0)),
        bin_nll=tuple(float(v) for v in bin_nll),
    )


@dataclass(frozen=True, eq=False)
class WindowScores:
    """Per-window, per-position-bin sufficient statistics of one model on one window list.

    Arrays have one row per window (in the order scored) and one column per
    position bin. ``nll`` holds summed NLL of *counted* targets; ``counted``,
    ``targets`` and ``bytes`` are exact integer sums.

    Attributes:
        model: a label.
        sources: source index of each window.
        kinds: kind of each window.
        n_tokens: tokens of each window.
        first_targets: index of each window's first scored target.
        starts: source position of each window's first scored target.
        bin_edges: left edges of the position bins.
        position: ``"window"`` (target index in the window) or ``"source"``.
        nll, counted, targets, bytes: ``(windows, bins)`` sums.
        fingerprint: what was scored.
        spec: the :class:`WindowSpec` the windows were cut with, when known.
        padding_max_diff: the largest change of a scored NLL under extra right
            padding (``check_padding=True``), else ``None``.
        seconds: wall time of the scoring.
    """

    model: str
    sources: Int64Array
    kinds: tuple[str, ...]
    n_tokens: Int64Array
    first_targets: Int64Array
    starts: Int64Array
    bin_edges: tuple[int, ...]
    position: str
    nll: Float64Array
    counted: Int64Array
    targets: Int64Array
    bytes: Int64Array
    fingerprint: Fingerprint
    spec: WindowSpec | None = None
    padding_max_diff: float | None = None
    seconds: float = 0.0

    @property
    def n_windows(self) -> int:
        """Windows scored."""
        return int(self.sources.size)

    def window_nll(self) -> Float64Array:
        """Total counted NLL of each window (the sum of its bins)."""
        out: Float64Array = self.nll.sum(axis=1)
        return out

    def window_bytes(self) -> Int64Array:
        """Total bytes of each window."""
        out: Int64Array = self.bytes.sum(axis=1)
        return out

    def window_bpb(self) -> Float64Array:
        """BPB of each window (NaN for a window without bytes)."""
        b = self.window_bytes().astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: Float64Array = np.where(b > 0, self.window_nll() / (LN2 * b), np.nan)
        return out

    def bin_contributions(self) -> Float64Array:
        """Each window's bin NLL / (ln 2 × the window's bytes); rows add up to :meth:`window_bpb`."""
        b = self.window_bytes().astype(np.float64)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            out: Float64Array = np.where(b > 0, self.nll / (LN2 * b), np.nan)
        return out

    def mask(self, kind: str | None = None, sources: npt.ArrayLike | None = None) -> npt.NDArray[np.bool_]:
        """Windows of ``kind`` (any kind when ``None``) whose source is in ``sources`` (any when ``None``)."""
        m = np.ones(self.n_windows, dtype=np.bool_)
        if kind is not None:
            if kind not in KINDS:
                raise InputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
            m &= np.asarray([k == kind for k in self.kinds], dtype=np.bool_)
        if sources is not None:
            m &= np.isin(self.sources, np.asarray(sources, dtype=np.int64))
        return m

    def metrics(self, mask: npt.NDArray[np.bool_] | None = None) -> Metrics:
        """Pooled :class:`Metrics` of the windows selected by ``mask`` (all by default)."""
        m = np.ones(self.n_windows, dtype=np.bool_) if mask is None else np.asarray(mask, dtype=np.bool_)
        if m.shape != (self.n_windows,):
            raise InputError(f"mask must have shape ({self.n_windows},), got {m.shape}")
        return metrics_from_sums(self.nll[m], self.counted[m], self.targets[m], self.bytes[m],
                                 sources=distinct(self.sources[m]).size, windows=int(m.sum()))

    def same_inputs(self, other: WindowScores) -> bool:
        """Whether ``other`` scored exactly the same windows, bins and byte table."""
        return (self.fingerprint == other.fingerprint and self.bin_edges == other.bin_edges
                and self.position == other.position)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (pooled metrics; the per-window arrays are left out)."""
        return {"model": self.model, "windows": self.n_windows, "position": self.position,
                "bins": bin_labels(self.bin_edges), "fingerprint": self.fingerprint.to_dict(),
                "spec": None if self.spec is None else self.spec.to_dict(),
                "padding_max_diff": self.padding_max_diff, "metrics": self.metrics().to_dict(),
                "seconds": self.seconds}

    def _check(self) -> None:
        """Assert the internal invariants (shapes, dtypes, integer sums, the count hierarchy)."""
        w, k = self.n_windows, len(self.bin_edges)
        assert len(self.kinds) == w
        for vec in (self.n_tokens, self.first_targets, self.starts):
            assert vec.shape == (w,) and vec.dtype == np.int64
        assert (self.starts >= 1).all() and (self.first_targets >= 0).all()
        for arr, dt in ((self.nll, np.float64), (self.counted, np.int64), (self.targets, np.int64),
                        (self.bytes, np.int64)):
            assert arr.shape == (w, k) and arr.dtype == dt
        assert (self.counted >= 0).all() and (self.counted <= self.targets).all()
        assert (self.bytes >= self.counted).all()  # a counted target has at least one byte
        assert ((self.counted > 0) | (self.nll == 0)).all()
        assert np.isfinite(self.nll).all()
        assert (self.nll >= -_NEG_TOLERANCE * np.maximum(self.counted, 1)).all()
        assert (self.targets.sum(axis=1) == self.n_tokens - 1 - self.first_targets).all()
        assert int(self.targets.sum()) == self.fingerprint.targets and w == self.fingerprint.windows


def _bin_bounds(coord0: int, m: int, edges: tuple[int, ...]) -> list[int]:
    """Slice bounds of ``m`` contiguous coordinates ``coord0 .. coord0 + m - 1`` cut at ``edges``."""
    return [0] + [min(max(e - coord0, 0), m) for e in edges[1:]] + [m]


def score(
    windows: Sequence[Window],
    nll_fn: NllFn | Callable[..., Any],
    token_bytes: npt.ArrayLike,
    *,
    model: str = "",
    batch_size: int = 16,
    pad_id: int = 0,
    width: int | None = None,
    document_mask: bool = True,
    bin_edges: Sequence[int] = POSITION_BINS,
    position: Literal["window", "source"] = "window",
    check_padding: bool = False,
    padding_tolerance: float = 0.0,
    spec: WindowSpec | None = None,
    progress: Callable[[int], None] | None = None,
) -> WindowScores:
    """Score ``windows`` with ``nll_fn`` and keep per-window, per-bin sums.

    Windows are batched longest first (ties in input order) to reduce padding,
    right-padded with ``pad_id`` to the batch's longest window (or to
    ``width``, for models that need one fixed shape), and passed to ``nll_fn``
    with their segment ids (``None`` when ``document_mask=False``). Results
    return in input order; batching and padding never change them for an
    ``nll_fn`` that keeps the :class:`~packing_theory.evaluation.protocol.NllFn`
    contract. ``check_padding=True`` rescores the first batch in reverse row
    order with 8 more padding columns and raises when a scored value moves by
    more than ``padding_tolerance`` (seed 000 §4's causal right-padding check).

    Complexity: one ``nll_fn`` call per ``batch_size`` windows plus O(tokens)
    numpy work and hashing.

    Raises:
        TypeError: a non-:class:`Window` item, a non-callable ``nll_fn``, or an
            ``nll_fn`` result that is not a real floating array.
        ValueError: no windows; a target id outside ``token_bytes``; an
            ``nll_fn`` that raised (naming ``model``), a result of the wrong shape,
            or with a non-finite, negative or above :data:`MAX_NLL` scored value;
            a padding check that fails.

    >>> from packing_theory.evaluation.windows import beginning_window
    >>> def uniform(ids, seg, /):
    ...     return np.full((ids.shape[0], ids.shape[1] - 1), np.log(4.0))
    >>> s = score([beginning_window([0, 1, 2, 3])], uniform, [0, 1, 1, 2])
    >>> m = s.metrics()
    >>> m.targets, m.counted_targets, m.bytes, round(m.bpb, 6), round(m.perplexity, 6)
    (3, 3, 4, 1.5, 4.0)
    """
    ws = list(windows)
    if not ws:
        raise InputError("score needs at least one window")
    for i, w in enumerate(ws):
        if not isinstance(w, Window):
            raise InputTypeError(f"windows[{i}] must be a Window, got {type(w).__name__}")
    if not callable(nll_fn):
        raise InputTypeError(f"nll_fn must be callable (an NllFn), got {type(nll_fn).__name__}")
    tb = validate_token_bytes(token_bytes)
    bs = check_int("batch_size", batch_size, 1)
    edges = _check_edges(bin_edges)
    if position not in ("window", "source"):
        raise InputError(f"position must be 'window' or 'source', got {position!r}")
    tol = float(padding_tolerance)
    if not tol >= 0:
        raise InputError(f"padding_tolerance must be >= 0, got {padding_tolerance!r}")
    for i, w in enumerate(ws):
        t = w.targets()
        if int(t.max()) >= tb.size:
            raise InputError(f"windows[{i}] has target id {int(t.max())} outside token_bytes "
                             f"(size {tb.size})")
    label = f"model {model!r}" if model else "nll_fn"
    t0 = time.perf_counter()
    n, k = len(ws), len(edges)
    nll = np.zeros((n, k), dtype=np.float64)
    counted = np.zeros((n, k), dtype=np.int64)
    targets = np.zeros((n, k), dtype=np.int64)
    nbytes = np.zeros((n, k), dtype=np.int64)
    order = sorted(range(n), key=lambda i: (-ws[i].n_tokens, i))
    padding_diff: float | None = None
    done = 0
    for b0 in range(0, n, bs):
        idx = order[b0 : b0 + bs]
        batch = [ws[i] for i in idx]
        out = _call(nll_fn, batch, pad_id, width, document_mask, label)
        _check_scored(out, batch, idx, label)
        if check_padding and b0 == 0:
            extra = (width if width is not None else max(w.n_tokens for w in batch)) + 8
            again = _call(nll_fn, batch[::-1], pad_id, extra, document_mask, label)[::-1]
            _check_scored(again, batch, idx, label)
            padding_diff = max(float(np.max(np.abs(out[r, w.first_target : w.n_tokens - 1]
                                                   - again[r, w.first_target : w.n_tokens - 1])))
                               for r, w in enumerate(batch))
            if padding_diff > tol:
                raise InputError(f"nll_fn is not padding-invariant: a scored NLL changed by "
                                 f"{padding_diff:.3g} "
                                 f"under 8 more padding columns and reversed rows (tolerance {tol:g})")
        for r, i in enumerate(idx):
            w = ws[i]
            vals = out[r, w.first_target : w.n_tokens - 1]
            tbytes = tb[w.targets()]
            pos = tbytes > 0
            masked = np.where(pos, vals, 0.0)
            m = vals.size
            c0 = w.first_target if position == "window" else w.scored_positions.start
            cuts = _bin_bounds(c0, m, edges)
            for j in range(k):
                a, z = cuts[j], cuts[j + 1]
                if z > a:
                    nll[i, j] = masked[a:z].sum()
                    counted[i, j] = int(pos[a:z].sum())
                    targets[i, j] = z - a
                    nbytes[i, j] = int(tbytes[a:z].sum())
        done += len(idx)
        if progress is not None:
            progress(done)
    result = WindowScores(
        model=str(model), sources=np.asarray([w.source for w in ws], dtype=np.int64),
        kinds=tuple(w.kind for w in ws), n_tokens=np.asarray([w.n_tokens for w in ws], dtype=np.int64),
        first_targets=np.asarray([w.first_target for w in ws], dtype=np.int64),
        starts=np.asarray([w.scored_positions.start for w in ws], dtype=np.int64),
        bin_edges=edges, position=position, nll=nll, counted=counted, targets=targets, bytes=nbytes,
        fingerprint=fingerprint(ws, tb), spec=spec, padding_max_diff=padding_diff,
        seconds=time.perf_counter() - t0,
    )
    return result


def _check_scored(out: Float64Array, batch: Sequence[Window], idx: Sequence[int], label: str) -> None:
    """Refuse a scored value that is not finite, is negative, or exceeds :data:`MAX_NLL`."""
    for r, (i, w) in enumerate(zip(idx, batch, strict=True)):
        vals = out[r, w.first_target : w.n_tokens - 1]
        bad_mask = ~np.isfinite(vals) | (vals < -_NEG_TOLERANCE) | (vals > MAX_NLL)
        if bad_mask.any():
            bad = int(np.argmax(bad_mask))
            raise InputError(f"{label} returned the NLL {float(vals[bad])!r} for window {i} target "
                             f"{w.first_target + bad}: scored NLLs must be finite and >= 0, and at most "
                             f"{MAX_NLL:g} nats (larger ones overflow the sums)")


def _call(nll_fn: Callable[..., Any], batch: Sequence[Window], pad_id: int, width: int | None,
          document_mask: bool, label: str) -> Float64Array:
    ids, seg = pad_batch(batch, pad_id=pad_id, width=width)
    try:
        out = nll_fn(ids, seg if document_mask else None)
    except (MemoryError, RecursionError, PackingTheoryError):
        raise
    except Exception as exc:  # a user's model may raise anything: name it and the batch
        detail = " ".join(str(exc).split())[:200]
        raise InputError(f"{label} raised {type(exc).__name__} while scoring a batch of {len(batch)} "
                         f"windows of input_ids shape {ids.shape}: {detail}") from exc
    arr = np.asarray(out)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.floating)):
        raise InputTypeError(f"{label} must return a real floating array, got dtype {arr.dtype}")
    expect = (ids.shape[0], ids.shape[1] - 1)
    if arr.shape != expect:
        raise InputError(f"{label} returned shape {arr.shape} for input_ids of shape {ids.shape}; "
                         f"expected {expect} (one NLL per next-token target)")
    result: Float64Array = arr.astype(np.float64, copy=False)
    return result
