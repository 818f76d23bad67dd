"""What scanning one input in one pass returns, and how the passes of an input add up.

:func:`~packing_theory.contamination.scan.scan_input` returns an
:class:`InputScan` (picklable: it comes back from a worker process): the
documents' spans (first pass only), and only the *hit* documents' counts,
bitmasks and names, so its size is O(documents) for the spans and
O(hit documents) for the rest. :class:`InputTally` adds the passes of one
input: a document's matched windows are summed over the passes and its
reference bits OR-ed (a window's hash lies in exactly one pass).

>>> import numpy as np
>>> t = InputTally()
>>> t.add(InputScan(spans=np.array([20, 5]), skip=0, extra=1, documents=2,
...                 hit_docs=np.array([0]), hit_matched=np.array([3]), hit_members=np.array([1], np.uint64),
...                 hit_names=["a"]), first=True)
>>> t.add(InputScan(documents=2, hit_docs=np.array([0]), hit_matched=np.array([2]),
...                 hit_members=np.array([2], np.uint64), hit_names=["a"]), first=False)
>>> docs, matched, members = t.hits()
>>> docs.tolist(), matched.tolist(), members.tolist(), t.windows(13).tolist()
([0], [5], [3], [8, 0])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..errors import NotMeasured

__all__ = ["InputScan", "InputTally"]

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]


def _ints() -> IntArray:
    return np.zeros(0, dtype=np.int64)


def _u64() -> U64Array:
    return np.zeros(0, dtype=np.uint64)


@dataclass
class InputScan:
    """The result of scanning one input against one pass's table.

    Attributes:
        error: why the input was not read (``None`` when it was).
        usage: the error is bad input (the scan raises it: ``error_type`` and ``error``).
        error_type: ``"InputError"`` or ``"InputTypeError"`` for a usage error.
        documents: documents read.
        spans: each document's stored (or tokenized) tokens (first pass only).
        skip: leading tokens of a document no window starts in (1 for shards).
        extra: tokens added to a span for its BOS-inclusive length.
        hit_docs: the documents (0-based in the input, increasing) with a matched window.
        hit_matched: their matched windows in this pass.
        hit_members: OR of the reference bits of their matched windows.
        hit_names: their names.
        ref_matched: matched windows per reference (a window counts for every reference holding it).
        found: distinct table positions matched, and ``found_members`` their reference bits.
        source_names, source_codes: each document's source (``source_column``; first pass only).
    """

    error: str | None = None
    usage: bool = False
    error_type: str = "InputError"
    documents: int = 0
    spans: IntArray | None = None
    skip: int = 0
    extra: int = 0
    hit_docs: IntArray = field(default_factory=_ints)
    hit_matched: IntArray = field(default_factory=_ints)
    hit_members: U64Array = field(default_factory=_u64)
    hit_names: list[str] = field(default_factory=list)
    ref_matched: IntArray = field(default_factory=_ints)
    found: IntArray = field(default_factory=_ints)
    found_members: U64Array = field(default_factory=_u64)
    source_names: tuple[str, ...] = ()
    source_codes: npt.NDArray[np.int32] | None = None


class InputTally:
    """One input's counts over all passes of a scan (see the module docstring)."""

    def __init__(self) -> None:
        self.spans: IntArray | None = None
        self.skip = 0
        self.extra = 0
        self.documents = 0
        self.source_names: tuple[str, ...] = ()
        self.source_codes: npt.NDArray[np.int32] | None = None
        self.names: dict[int, str] = {}
        self._docs: list[IntArray] = []
        self._matched: list[IntArray] = []
        self._members: list[U64Array] = []

    def add(self, scan: InputScan, *, first: bool) -> None:
        """Add one pass's result (the first pass brings the spans and sources).

        Raises:
            NotMeasured: a later pass read another number of documents (the input changed).
        """
        if first:
            assert scan.spans is not None
            self.spans, self.skip, self.extra = scan.spans, scan.skip, scan.extra
            self.documents = scan.documents
            self.source_names, self.source_codes = scan.source_names, scan.source_codes
        elif scan.documents != self.documents:
            raise NotMeasured(f"it held {self.documents} documents in the first pass and {scan.documents} "
                              "in a later one: it changed during the scan")
        if scan.hit_docs.size:
            self._docs.append(scan.hit_docs)
            self._matched.append(scan.hit_matched)
            self._members.append(scan.hit_members)
            self.names.update(zip(scan.hit_docs.tolist(), scan.hit_names, strict=True))

    def hits(self) -> tuple[IntArray, IntArray, U64Array]:
        """``(documents, matched windows, reference bits)`` of the hit documents, documents increasing."""
        if not self._docs:
            return _ints(), _ints(), _u64()
        docs = np.concatenate(self._docs)
        uniq, inverse = np.unique(docs, return_inverse=True)
        matched = np.zeros(uniq.size, dtype=np.int64)
        np.add.at(matched, inverse, np.concatenate(self._matched))
        members = np.zeros(uniq.size, dtype=np.uint64)
        np.bitwise_or.at(members, inverse, np.concatenate(self._members))
        return uniq.astype(np.int64), matched, members

    def windows(self, n: int) -> IntArray:
        """Windows of each document: ``max(0, span - skip - n + 1)``."""
        assert self.spans is not None
        out: IntArray = np.maximum(self.spans - self.skip - n + 1, 0).astype(np.int64)
        return out

    def lengths(self) -> IntArray:
        """BOS-inclusive length of each document."""
        assert self.spans is not None
        out: IntArray = (self.spans + self.extra).astype(np.int64)
        return out

    def _check(self, n: int) -> None:
        """Assert: hits lie inside the input, match no more windows than the document has, carry a bit."""
        docs, matched, members = self.hits()
        if self.spans is None:
            assert not docs.size
            return
        assert self.spans.size == self.documents
        assert not docs.size or (int(docs[0]) >= 0 and int(docs[-1]) < self.documents)
        assert bool(np.all((matched > 0) & (matched <= self.windows(n)[docs]))), "matches exceed the windows"
        assert bool(np.all(members != 0)), "a hit document holds some reference's gram"
        assert set(self.names) == set(docs.tolist()), "every hit document is named"
        if self.source_codes is not None:
            assert self.source_codes.size == self.documents
