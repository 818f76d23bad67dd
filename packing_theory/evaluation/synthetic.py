"""Synthetic token ids with a planted position effect, for length streams that have no text.

Job: :func:`packing_theory.corpus.default_lengths` gives lengths only; the
evaluation demo and tests need token ids whose statistics an n-gram model
can learn and that *change with position in the document*, so that a packer
which never emits late positions (``discard`` never emits a source position
``>= R``) trains a model that is worse on tails. Imports: numpy only.

The process (:class:`PlantedProcess`)
-------------------------------------
* Vocabulary of ``V`` ids: id 0 is BOS (0 bytes, a special token); ids
  ``1 .. V/2 - 1`` are *early* tokens and ``V/2 .. V - 1`` *late* tokens, each
  with a byte length drawn once from 1–4.
* Two lexicons of ``words`` words each (early words spell early tokens, late
  words late tokens), every word ``word_length`` tokens long; word
  frequencies follow a Zipf law with exponent ``zipf``.
* A document of BOS-inclusive length ``L`` is BOS followed by words; the word
  starting at source position ``p`` is a late word with probability
  ``late_max × clip((p − onset) / ramp, 0, 1)``, else an early word; the
  text is cut to ``L − 1`` tokens.

So an n-gram model learns the within-word transitions of whichever lexicon
it was trained on, and the share of late words is zero before ``onset``
(1,536 by default, inside a beginning window of R = 2049) and rises to
``late_max`` at ``onset + ramp``. Each document's ids come from its own
``numpy.random.default_rng([seed, stream, index])``: any document can be
regenerated alone, in any order, bit for bit.

>>> proc = PlantedProcess(vocab_size=64, words=20, seed=3)
>>> doc = proc.document(10, stream=0, index=7)
>>> doc.size, int(doc[0]), bool((doc[1:] > 0).all())
(10, 0, True)
>>> np.array_equal(doc, proc.document(10, stream=0, index=7))
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError

__all__ = ["LazyDocuments", "PlantedProcess"]

Int32Array = npt.NDArray[np.int32]

_QUANTILES = 1 << 16


@dataclass(frozen=True)
class PlantedProcess:
    """The planted position-dependent word process (see the module doc)."""

    vocab_size: int = 512
    words: int = 600
    word_length: int = 3
    onset: int = 1536
    ramp: int = 4096
    late_max: float = 0.9
    zipf: float = 1.1
    seed: int = 0
    _tables: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        V = check_int("vocab_size", self.vocab_size, 8)
        check_int("words", self.words, 1)
        check_int("word_length", self.word_length, 1)
        check_int("onset", self.onset, 0)
        check_int("ramp", self.ramp, 1)
        check_int("seed", self.seed, 0)
        if not 0 <= self.late_max <= 1:
            raise InputError(f"late_max must be in [0, 1], got {self.late_max!r}")
        if not self.zipf >= 0:
            raise InputError(f"zipf must be >= 0, got {self.zipf!r}")
        rng = np.random.default_rng([self.seed, 0xB17E5])
        half = V // 2
        tb = rng.integers(1, 5, size=V).astype(np.int64)
        tb[0] = 0
        early = rng.integers(1, half, size=(self.words, self.word_length)).astype(np.int32)
        late = rng.integers(half, V, size=(self.words, self.word_length)).astype(np.int32)
        w = 1.0 / np.arange(1, self.words + 1, dtype=np.float64) ** self.zipf
        cdf = np.cumsum(w / w.sum())
        cdf[-1] = 1.0
        mid = (np.arange(_QUANTILES) + 0.5) / _QUANTILES
        quantiles = np.minimum(np.searchsorted(cdf, mid, side="right"), self.words - 1)
        self._tables.update(token_bytes=tb, early=early, late=late, quantiles=quantiles.astype(np.int64))

    @property
    def token_bytes(self) -> npt.NDArray[np.int64]:
        """Byte length of every id (BOS = 0)."""
        out: npt.NDArray[np.int64] = self._tables["token_bytes"].copy()
        return out

    def late_probability(self, positions: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Probability that a word starting at each source position is a late word."""
        p = np.asarray(positions, dtype=np.float64)
        out: npt.NDArray[np.float64] = self.late_max * np.clip((p - self.onset) / self.ramp, 0.0, 1.0)
        return out

    def _late_by_word(self, nw: int) -> npt.NDArray[np.float64]:
        """Late-word probability of word slots ``0 .. nw - 1`` (cached, grown by doubling)."""
        cache: npt.NDArray[np.float64] = self._tables.get("late_by_word", np.zeros(0))
        if cache.size < nw:
            size = max(nw, 2 * cache.size, 1024)
            cache = self.late_probability(1 + self.word_length * np.arange(size))
            self._tables["late_by_word"] = cache
        return cache[:nw]

    def document(self, length: int, *, stream: int = 0, index: int = 0) -> Int32Array:
        """Token ids (``int32``) of one BOS-inclusive document of ``length`` tokens.

        Word frequencies are drawn through a 65,536-entry quantile table of the
        Zipf law (inverse-CDF sampling, discretised). O(length).
        """
        L = check_int("length", length, 1)
        out = np.zeros(L, dtype=np.int32)
        if L == 1:
            return out
        rng = np.random.default_rng([self.seed, check_int("stream", stream, 0), check_int("index", index, 0)])
        wl = self.word_length
        nw = -(-(L - 1) // wl)
        u = rng.random(2 * nw)
        is_late = u[:nw] < self._late_by_word(nw)
        wid = self._tables["quantiles"][(u[nw:] * _QUANTILES).astype(np.int64)]
        toks = np.where(is_late[:, None], self._tables["late"][wid], self._tables["early"][wid])
        out[1:] = toks.ravel()[: L - 1]
        return out


class LazyDocuments(Sequence[Int32Array]):
    """A read-only sequence of documents generated on access from ``lengths`` (O(1) memory).

    Document ``j`` is ``process.document(lengths[j], stream=stream, index=j)``,
    unless ``copies`` maps ``j`` to another ``(stream, index)``: then it is
    that document (an exact duplicate, e.g. of a training document).

    >>> proc = PlantedProcess(vocab_size=16, words=4)
    >>> docs = LazyDocuments(proc, [3, 5, 4], stream=1, copies={2: (0, 9)})
    >>> len(docs), [d.size for d in docs]
    (3, [3, 5, 4])
    >>> bool((docs[2] == proc.document(4, stream=0, index=9)).all())
    True
    """

    def __init__(self, process: PlantedProcess, lengths: npt.ArrayLike, *, stream: int = 0,
                 copies: Mapping[int, tuple[int, int]] | None = None) -> None:
        self.process = process
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if self.lengths.ndim != 1:
            raise InputError(f"lengths must be 1-D, got shape {self.lengths.shape}")
        self.stream = check_int("stream", stream, 0)
        self.copies = dict(copies or {})
        for j, (s, i) in self.copies.items():
            if not 0 <= j < self.lengths.size:
                raise InputError(f"copies names document {j} outside 0..{self.lengths.size - 1}")
            check_int("copies stream", s, 0)
            check_int("copies index", i, 0)

    def __len__(self) -> int:
        return int(self.lengths.size)

    @overload
    def __getitem__(self, i: int) -> Int32Array: ...

    @overload
    def __getitem__(self, i: slice) -> list[Int32Array]: ...

    def __getitem__(self, i: int | slice) -> Int32Array | list[Int32Array]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"document index {i} out of range for {n} documents")
        s, k = self.copies.get(j, (self.stream, j))
        return self.process.document(int(self.lengths[j]), stream=s, index=k)

    def __iter__(self) -> Iterator[Int32Array]:
        for j in range(len(self)):
            yield self[j]
