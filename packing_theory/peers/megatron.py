"""Megatron Core ``GPTDataset``: a shuffled document index cut into overlapping samples.

Transcribed (our own code) from ``megatron/core/datasets/gpt_dataset.py``
(``_build_document_sample_shuffle_indices``, ``_get_num_epochs``,
``_build_document_index``, ``_build_shuffle_index``,
``_query_document_sample_shuffle_indices``) and ``helpers.cpp``
(``build_sample_idx``) at NVIDIA/Megatron-LM@d98e8a64ddf3 (core 0.20.0); the
same logic ships in the megatron-core 0.16.1 wheel whose compiled helper the
differential tests run. Seed 000 §5.10 pins 29515183a63c; that commit is not
in the stored mirror, and these functions are unchanged from 0.16.1 to
d98e8a64ddf3, so both version names select this behaviour.

What the framework does (training split, ``add_extra_token_to_sequence=True``):

1. ``num_epochs`` is the smallest ``E`` with ``E * tokens_per_epoch >=
   num_samples * sequence_length + 1`` (1 when ``num_samples`` is ``None``);
2. the *document index* holds every document ``E`` times and is shuffled
   with ``numpy.random.RandomState(random_seed)``; when ``E > 1`` and the
   final epoch contributes fewer than ``int(0.80 * samples_per_epoch)``
   samples, the first ``E - 1`` epochs are shuffled together and the final
   epoch separately (``separate_final_epoch``);
3. the documents are concatenated in that order and sample ``s`` is the
   ``sequence_length + 1`` tokens starting at ``s * sequence_length``:
   consecutive samples share one token (the last label of one is the first
   input of the next: a :class:`~packing_theory.engine.events.Repeat` here, on
   whichever of the two rows comes later);
4. there are ``(E * tokens_per_epoch - 1) // sequence_length`` samples: the
   last partial sample is dropped, so the tokens after the last sample —
   and whole documents there — are never shown
   (:class:`~packing_theory.engine.events.Discard`);
5. the *shuffle index* (same RNG, continued) permutes the samples (twice,
   separately, with a separate final epoch); dataset index ``i`` is sample
   ``shuffle_index[i]`` and is row ``i`` here;
6. a trainer draws dataset indices ``0, 1, ..., num_samples - 1`` (Megatron-LM's
   ``MegatronPretrainingSampler`` walks the dataset in order up to the
   requested ``train_samples``): the index holds more samples than that
   whenever the last epoch is not used up, and the samples beyond
   ``num_samples`` are never reached.

``samples="drawn"`` (default) replays what a trainer draws: ``num_samples``
rows, in dataset order, ending with a Horizon whose stop reason is
``"rows"`` and whose buffered spans are the index's tokens no drawn sample
shows (never reached); without ``num_samples`` a trainer draws the whole
epoch. ``samples="index"`` replays every sample of the index
(``len(GPTDataset)``), the rows the golden fixtures digest.

Edge inputs follow the shipped compiled helper, not ``helpers.cpp``'s
asserts (``seq_length > 1``, ``tokens_per_epoch > 1``), which it does not run:
``sequence_length = 1`` gives two-token samples overlapping by one, and one
token in all gives no sample. No document, zero tokens with
``sequence_length = 1``, and zero tokens with ``num_samples`` (where
``_get_num_epochs`` never ends) are refused with the framework's failure.
:meth:`MegatronGPT.horizon_figures` gives the counts (samples in the index,
samples drawn, epochs).

Rows hold ``sequence_length + 1`` tokens: the peer's ``capacity`` (the row
width ``R``, as for every packer) is ``sequence_length + 1``, so
``MegatronGPT(capacity=R)`` replays ``sequence_length = R - 1``
(:attr:`MegatronGPT.row_width`). There is no padding in training samples.
Over-long documents are never truncated; they span several samples.

Outside seed 000's family: no buffer, no best fit, no crop — contiguous
samples of a shuffled, repeated document index (seed 000 §5.10).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._arrays import index_dtype
from .._checks import check_int
from ..engine.batches import ARRIVAL, DISCARD, FILTERED, HORIZON, EventBatch
from ..engine.events import BufferedSpan, Discard, Event, Horizon
from ..engine.knobs import Knob, RowWidth
from ..errors import InputError
from ..lengths import exact_sum
from ._base import PeerPacker
from ._columns import Section, assemble, horizon_batch, int64_lengths, peer_array, row_section
from ._common import Piece, arrivals, check_choice, peer_lengths, row_events
from ._figures import TrainerRule

IntArray = npt.NDArray[np.integer[Any]]

__all__ = ["INDEX_BUDGET", "MEGATRON_SAMPLES", "MEGATRON_VERSIONS", "PEERS", "MegatronGPT", "MegatronIndex",
           "index_dtype", "megatron_index"]

MEGATRON_VERSIONS: tuple[str, ...] = ("0.16.1", "29515183a63c")
"""Supported ``framework_version`` values (same behaviour; see the module doc)."""

MEGATRON_SAMPLES: tuple[str, ...] = ("drawn", "index")
"""``samples`` values: what a trainer draws (``num_samples``), or every sample of the index."""

SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80
"""The final epoch is shuffled separately below this fraction of an epoch's samples."""

INDEX_BUDGET = 1_000_000_000
"""The most samples, and the most document-index entries, :func:`megatron_index` builds: its shuffle
index alone is 4 bytes a sample (Megatron's own ``sample_idx`` another 8–16), and the replay keeps
per-sample state, so a larger index (a length near 2**63, or ``num_samples`` in the billions) is
refused before anything is allocated instead of failing with numpy's ``MemoryError``."""


class MegatronIndex:
    """The three indices of a ``GPTDataset`` (see :func:`megatron_index`).

    Attributes:
        document_index: document ids in concatenation order (``int32``).
        num_samples_total: samples in the sample index (``E * tpe - 1) // L``).
        shuffle_index: dataset index -> sample.
        num_epochs: ``E``.
        separate_final_epoch: whether the final epoch was shuffled separately.
    """

    def __init__(self, document_index: np.ndarray, num_samples_total: int, shuffle_index: np.ndarray,
                 num_epochs: int, separate_final_epoch: bool) -> None:
        self.document_index = document_index
        self.num_samples_total = num_samples_total
        self.shuffle_index = shuffle_index
        self.num_epochs = num_epochs
        self.separate_final_epoch = separate_final_epoch


def megatron_index(sizes: Sequence[int] | npt.NDArray[np.integer[Any]], sequence_length: int, seed: int,
                   num_samples: int | None) -> MegatronIndex:
    """Document, sample-count and shuffle indices as ``GPTDataset`` builds them.

    >>> ix = megatron_index([5, 3, 9, 2], 4, 1234, None)
    >>> ix.num_epochs, ix.num_samples_total, sorted(ix.shuffle_index.tolist())
    (1, 4, [0, 1, 2, 3])
    """
    L = sequence_length
    n = len(sizes)
    tpe = exact_sum(sizes)
    # helpers.cpp asserts seq_length > 1 and tokens_per_epoch > 1, but the shipped compiled helper
    # (megatron-core 0.16.1's helpers_cpp) is built without asserts: what it does is replayed
    if n == 0:
        raise InputError("lengths is empty: Megatron's helpers.build_sample_idx fails on no document "
                         "(ValueError: zero-size array to reduction operation maximum which has no identity)")
    if tpe == 0 and num_samples is not None:
        raise InputError("lengths hold 0 tokens: Megatron's GPTDataset._get_num_epochs never ends when "
                         "num_samples is set (it adds epochs of 0 tokens until num_samples are reached)")
    if tpe == 0 and L == 1:
        raise InputError("lengths hold 0 tokens: with sequence_length 1 Megatron's build_sample_idx gives "
                         "no sample index (ValueError: zero-size array to reduction operation minimum which "
                         "has no identity)")
    epochs = 1
    if num_samples is not None:  # GPTDataset._get_num_epochs: add epochs until num_samples * L + 1 tokens
        epochs = max(1, -(-(num_samples * L + 1) // tpe))
    if n * epochs > INDEX_BUDGET or max(epochs * tpe - 1, 0) // L > INDEX_BUDGET:
        raise InputError(
            f"lengths ({n:,} documents, {tpe:,} tokens) at sequence_length {L:,}"
            + ("" if num_samples is None else f" and num_samples {num_samples:,}")
            + f" make a Megatron index of {max(epochs * tpe - 1, 0) // L:,} samples over {n * epochs:,} "
              f"document-index entries ({epochs:,} epochs): over peers.megatron.INDEX_BUDGET "
              f"({INDEX_BUDGET:,}); use a larger sequence length or fewer samples")
    separate = False
    sans = 0
    if epochs > 1:
        sans = ((epochs - 1) * tpe - 1) // L
        from_final = (num_samples or 0) - sans
        per_epoch = (tpe - 1) // L
        separate = from_final < int(SEPARATE_FINAL_EPOCH_THRESHOLD * per_epoch)
    rng = np.random.RandomState(seed)

    def doc_index(e: int) -> np.ndarray:
        idx = np.tile(np.arange(n, dtype=np.int32), e)
        rng.shuffle(idx)
        return idx

    if separate:
        first = doc_index(epochs - 1)
        document_index = np.concatenate((first, doc_index(1)))
    else:
        document_index = doc_index(epochs)
    total_samples = max(epochs * tpe - 1, 0) // L  # C++ division truncates: 0 samples from 0 tokens
    dtype = np.uint32 if total_samples < np.iinfo(np.uint32).max - 1 else np.int64
    head = sans if separate else total_samples
    shuffle = np.arange(0, head, dtype=dtype)
    rng.shuffle(shuffle)
    if head != total_samples:
        tail = np.arange(head, total_samples, dtype=dtype)
        rng.shuffle(tail)
        shuffle = np.concatenate((shuffle, tail))
    return MegatronIndex(document_index, total_samples, shuffle, epochs, separate)


class MegatronGPT(PeerPacker):
    """``GPTDataset`` samples as rows of ``sequence_length + 1`` tokens.

    Args:
        capacity: the row width ``R >= 2``; the framework's ``sequence_length``
            is ``R - 1`` (:attr:`sequence_length`).
        seed, num_samples, framework_version: see :attr:`knobs`.

    >>> evs = list(MegatronGPT(5).events([5, 3, 9, 2]))  # sequence_length 4
    >>> MegatronGPT(5).sequence_length
    4
    >>> [(e.row, e.source, e.start, e.length) for e in evs if type(e).__name__ == "Placement"][:3]
    [(0, 0, 4, 1), (0, 1, 0, 3), (0, 2, 0, 1)]
    >>> [(e.source, e.start, e.length) for e in evs if type(e).__name__ == "Discard"]  # never shown
    [(3, 0, 2)]
    """

    name: ClassVar[str] = "megatron-gpt"
    framework: ClassVar[str] = "Megatron Core"
    reference: ClassVar[str] = (
        "NVIDIA/Megatron-LM megatron/core/datasets/gpt_dataset.py and helpers.cpp build_sample_idx at "
        "d98e8a64ddf3 (core 0.20.0), identical in the megatron-core 0.16.1 wheel; seed 000 §5.10 pins "
        "29515183a63c")
    family_note: ClassVar[str] = (
        "contiguous samples of a shuffled, repeated document index (Megatron GPTDataset): no buffer, no "
        "best fit and no crop; long documents span several samples and the last partial sample is dropped, "
        "so seed 000's proposition does not apply (§5.10)")
    trainer_view: ClassVar[str] = (
        "samples of sequence_length + 1 tokens, tokens = sample[:-1], labels = sample[1:]; by default "
        "position ids run 0..L-1 and attention is causal across documents (reset_position_ids and "
        "reset_attention_mask at EOD tokens are opt-in; eod_mask_loss masks EOD labels); no padding")
    trainer_rule: ClassVar[TrainerRule] = TrainerRule(
        "row", False,
        "NVIDIA/Megatron-LM megatron/core/datasets/gpt_dataset.py GPTDataset.__getitem__ (tokens = "
        "sample[:-1], labels = sample[1:], loss_mask 1 unless eod_mask_loss) and "
        "_get_ltor_masks_and_position_ids",
        "training samples hold sequence_length + 1 tokens and no padding; tokens = sample[:-1] and labels = "
        "sample[1:], so every sample predicts sequence_length targets (placed + repeated tokens - samples); "
        "eod_mask_loss (off by default) would also mask the EOD labels, which lengths alone cannot show",
        "GPTDataset.__getitem__ read in the installed megatron-core 0.16.1 (text[:-1] / text[1:]; loss_mask "
        "0 only where a label is the pad token id); the drawn rows are checked against its index builders "
        "(tests/peers/test_megatron_samples.py)")
    repeats_tokens: ClassVar[bool] = True
    columnar: ClassVar[bool] = True
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("seed", "int", 1234, "random_seed of the dataset config (Megatron-LM's --seed default)"),
        Knob("num_samples", "int", None, "samples requested (train iterations x global batch size; None: "
             "one epoch)", optional=True),
        Knob("framework_version", "str", "0.16.1", "megatron-core version whose behaviour is replayed",
             choices=MEGATRON_VERSIONS),
        Knob("samples", "str", "drawn", "drawn: the num_samples dataset indices a trainer draws (in order); "
             "index: every sample of the index (len(GPTDataset))", choices=MEGATRON_SAMPLES),
    )
    row_width: ClassVar[RowWidth] = RowWidth(
        "R = sequence_length + 1: a sample holds sequence_length + 1 tokens (inputs and the shifted labels) "
        "and consecutive samples overlap by one token", offset=1)

    def __init__(self, capacity: int, *, seed: int = 1234, num_samples: int | None = None,
                 framework_version: str = "0.16.1", samples: str = "drawn") -> None:
        super().__init__(check_int("capacity", capacity, 2))
        self.sequence_length = self.capacity - 1
        self.seed = check_int("seed", seed, 0)
        self.num_samples = None if num_samples is None else check_int("num_samples", num_samples, 1)
        self.framework_version = check_choice("framework_version", framework_version, MEGATRON_VERSIONS)
        self.samples = check_choice("samples", samples, MEGATRON_SAMPLES)

    def index(self, lengths: Any) -> MegatronIndex:
        """The framework's indices for ``lengths`` (an integer array is checked in bulk, not listed)."""
        sizes = peer_array(lengths) if int64_lengths(lengths) else peer_lengths(lengths)
        return megatron_index(sizes, self.sequence_length, self.seed, self.num_samples)

    def drawn(self, ix: MegatronIndex) -> int:
        """Samples replayed for index ``ix``: ``num_samples`` (``samples="drawn"``) or all of the index."""
        if self.samples == "index" or self.num_samples is None:
            return ix.num_samples_total
        return min(self.num_samples, ix.num_samples_total)

    def horizon_figures(self, lengths: Any) -> dict[str, Any]:
        """The framework's horizon: samples requested, in the index and drawn; epochs; the final-epoch split.

        >>> fig = MegatronGPT(5, num_samples=5).horizon_figures([5, 3, 9, 2])
        >>> fig["samples_in_index"], fig["samples_drawn"], fig["epochs"], fig["separate_final_epoch"]
        (9, 5, 2, True)
        """
        ix = self.index(lengths)
        return {"num_samples": self.num_samples, "samples_in_index": ix.num_samples_total,
                "samples_drawn": self.drawn(ix), "epochs": ix.num_epochs,
                "separate_final_epoch": ix.separate_final_epoch}

    def events(self, lengths: Any) -> Iterator[Event]:
        """Drawn samples in dataset order (the shuffle index), the never-shown tail as discards, the Horizon.

        Occurrence ``p * n + d`` is the ``p``-th appearance of document ``d`` in
        the document index (``n`` documents); all arrive before the first row.
        The tokens of samples never drawn (:meth:`drawn`) and shown by no drawn
        sample are the Horizon's buffered spans.
        """
        sizes = peer_lengths(lengths)
        L = self.sequence_length
        ix = megatron_index(sizes, L, self.seed, self.num_samples)
        docs = ix.document_index.tolist()
        n_docs = len(sizes)
        occ_len = [sizes[d] for d in docs]
        # occurrence id = pass * n_docs + document (pass = the k-th appearance in the document index),
        # so that one epoch's occurrences are the input positions
        seen = [0] * n_docs
        occ_of = []
        for d in docs:
            occ_of.append(seen[d] * n_docs + d)
            seen[d] += 1
        every = [sizes[o % n_docs] for o in range(len(docs))]
        yield from arrivals(every, 0, pass_index=[o // n_docs for o in range(len(docs))],
                            sources=[o % n_docs for o in range(len(docs))])
        starts = list(itertools.accumulate(occ_len, initial=0))  # flat start of each occurrence
        total = ix.num_samples_total
        drawn = self.drawn(ix)
        order = ix.shuffle_index[:drawn].tolist()
        when = [total] * total  # dataset index at which each sample is emitted (total: never drawn)
        for i, s in enumerate(order):
            when[s] = i
        for i, s in enumerate(order):
            lo, hi = s * L, s * L + L + 1
            first_repeat = s >= 1 and when[s - 1] < i
            last_repeat = s + 1 < total and when[s + 1] < i
            pieces: list[Piece] = []
            j = bisect.bisect_right(starts, lo) - 1
            pos = lo
            while pos < hi:
                while starts[j + 1] <= pos:  # skip empty documents and finished ones
                    j += 1
                end = min(hi, starts[j + 1])
                a, b = pos, end
                off = starts[j]
                whole = occ_len[j]
                if first_repeat and a == lo:
                    pieces.append(Piece(occ_of[j], docs[j], a - off, 1, repeat=True))
                    a += 1
                tail = last_repeat and b == hi
                if tail:
                    b -= 1
                if b > a:
                    pieces.append(Piece(occ_of[j], docs[j], a - off, b - a, crop=(b - a) < whole))
                if tail:
                    pieces.append(Piece(occ_of[j], docs[j], b - off, 1, repeat=True))
                pos = end
            yield from row_events(i, pieces, L + 1)
        covered = total * L + 1 if total else 0
        j = bisect.bisect_right(starts, covered) - 1
        for k in range(max(j, 0), len(occ_len)):
            a = max(covered, starts[k])
            if starts[k + 1] > a:
                yield Discard(occ_of[k], docs[k], a - starts[k], starts[k + 1] - a)
        if drawn == total:
            yield Horizon(total, 0, "drained", ())
            return
        yield Horizon(drawn, 0, "rows", unshown_spans(order, covered, L, starts, occ_of, docs))


    def _columns(self, lengths: Any, size: int, compiled: bool | None) -> Iterator[EventBatch]:
        """:meth:`events` in columns: the arrivals, the drawn samples ``size`` rows a batch, the discards.

        What is held while the rows are built: the flat start of each occurrence (``int64``: token offsets),
        its document and occurrence ids, the drawn samples and the dataset index of each sample, the last
        four ``int32`` (:func:`index_dtype`: :data:`INDEX_BUDGET` bounds them) — 16 bytes an occurrence and
        8 a sample; a batch's columns are made ``int64`` as it is built.
        """
        sizes = peer_array(lengths)
        L = self.sequence_length
        ix = megatron_index(sizes, L, self.seed, self.num_samples)
        ids = index_dtype(ix.document_index.size)  # occurrence and document ids are < the index's entries
        docs: IntArray = ix.document_index.astype(ids, copy=False)
        total, drawn = ix.num_samples_total, self.drawn(ix)
        order = ix.shuffle_index[:drawn].astype(index_dtype(total), copy=drawn < total)
        del ix  # its indices are taken: the samples never drawn are not held while the rows are built
        n_docs = sizes.size
        occ_of: IntArray
        if docs.size == n_docs:  # one epoch: every document appears once, as occurrence = document
            occ_of = docs
        else:  # the k-th appearance of each document is occurrence k * n_docs + document
            by_doc = np.argsort(docs, kind="stable")
            rank = np.empty(docs.size, np.int64)
            rank[by_doc] = np.arange(docs.size, dtype=np.int64) - np.searchsorted(docs[by_doc], docs[by_doc])
            del by_doc
            occ_of = (rank * n_docs + docs.astype(np.int64)).astype(ids)
            del rank
        yield _arrivals(sizes, docs.size)
        starts = np.zeros(docs.size + 1, np.int64)  # flat start of each occurrence; its length is the step
        np.cumsum(sizes[docs], out=starts[1:])
        when = np.full(total, total, index_dtype(total))  # dataset index of each sample (total: never drawn)
        when[order] = np.arange(drawn, dtype=when.dtype)
        for lo in range(0, drawn, max(size, 1)):
            hi = min(drawn, lo + max(size, 1))
            samples = order[lo:hi].astype(np.int64)
            yield assemble(1, [self._sample_rows(samples, lo, when, total, starts, occ_of, docs)])
        covered = total * L + 1 if total else 0
        first = max(int(np.searchsorted(starts, covered, side="right")) - 1, 0)
        k = np.arange(first, docs.size, dtype=np.int64)
        a = np.maximum(covered, starts[k])
        keep = starts[k + 1] > a
        k, a = k[keep], a[keep]
        yield assemble(1, [Section(np.zeros(k.size, np.int64), np.full(k.size, DISCARD, np.uint8),
                                   {"discard": (occ_of[k].astype(np.int64), docs[k].astype(np.int64),
                                                a - starts[k], starts[k + 1] - a)})])
        if drawn == total:
            yield horizon_batch(total)
        else:
            spans = unshown_spans(order.tolist(), covered, L, starts.tolist(), occ_of.tolist(), docs.tolist())
            yield EventBatch.from_columns(np.array([HORIZON], np.uint8), Horizon(drawn, 0, "rows", spans))

    def _sample_rows(self, samples: npt.NDArray[np.int64], row: int, when: IntArray,
                     total: int, starts: npt.NDArray[np.int64], occ_of: IntArray,
                     docs: IntArray) -> Section:
        """Rows from ``row``: the samples' flat token ranges cut at occurrences, overlaps as repeats."""
        L = self.sequence_length
        i = row + np.arange(samples.size, dtype=np.int64)
        lo = samples * L
        hi = lo + L + 1
        first_repeat = (samples >= 1) & (when[np.maximum(samples - 1, 0)] < i)
        last_repeat = (samples + 1 < total) & (when[np.minimum(samples + 1, total - 1)] < i)
        by = np.argsort(lo, kind="stable")  # sorted keys: numpy's search walks on from the last hit
        j0, j1 = np.empty(lo.size, np.int64), np.empty(lo.size, np.int64)
        j0[by] = np.searchsorted(starts[1:], lo[by], side="right")  # the first occurrence ending after lo
        j1[by] = np.searchsorted(starts[:-1], hi[by], side="left")  # one past the last starting before hi
        per = j1 - j0
        smp = np.repeat(np.arange(samples.size, dtype=np.int64), per)
        j = j0[smp] + np.arange(smp.size, dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
        whole = starts[j + 1] - starts[j]  # each piece's occurrence length
        full = whole > 0
        smp, j, whole = smp[full], j[full], whole[full]
        a = np.maximum(lo[smp], starts[j])
        b = np.minimum(hi[smp], starts[j + 1])
        head = first_repeat[smp] & (a == lo[smp])
        tail = last_repeat[smp] & (b == hi[smp])
        a2, b2 = a + head, b - tail
        main = b2 > a2
        parts = head.astype(np.int64) + main + tail
        idx = np.repeat(np.arange(smp.size, dtype=np.int64), parts)
        k = np.arange(idx.size, dtype=np.int64) - np.repeat(np.cumsum(parts) - parts, parts)
        is_head = head[idx] & (k == 0)
        is_tail = tail[idx] & (k == parts[idx] - 1)
        start = np.where(is_head, a[idx], np.where(is_tail, b2[idx], a2[idx])) - starts[j[idx]]
        length = np.where(is_head | is_tail, 1, b2[idx] - a2[idx])
        crop = ~(is_head | is_tail) & (length < whole[idx])
        piece = j[idx]
        return row_section(L + 1, samples.size, row, np.zeros(samples.size, np.int64), smp[idx],
                           occ_of[piece].astype(np.int64), docs[piece].astype(np.int64), start, length, crop,
                           is_head | is_tail)


def _arrivals(sizes: npt.NDArray[np.int64], entries: int) -> EventBatch:
    """Every occurrence's arrival (occurrence ``o`` is document ``o % n``, pass ``o // n``), then the empty
    ones as filtered: one batch. One epoch's source column is its occurrence column, its pass column zeros."""
    n_docs = max(sizes.size, 1)
    occ = np.arange(entries, dtype=np.int64)
    zero = np.zeros(occ.size, np.int64)
    one_epoch = entries <= n_docs
    src = occ if one_epoch else occ % n_docs
    every = sizes[src]
    gone = np.flatnonzero(every == 0)
    return assemble(1, [
        Section(zero, np.full(occ.size, ARRIVAL, np.uint8),
                {"arrival": (occ, src, zero if one_epoch else occ // n_docs, every)}),
        Section(zero[gone], np.full(gone.size, FILTERED, np.uint8),
                {"filtered": (occ[gone], src[gone], zero[gone], zero[gone])})], ("empty",))


def unshown_spans(order: list[int], covered: int, L: int, starts: list[int], occ_of: list[int],
                  docs: list[int]) -> tuple[BufferedSpan, ...]:
    """The flat tokens ``[0, covered)`` no drawn sample shows, occurrence by occurrence, as buffered spans."""
    spans: list[BufferedSpan] = []
    pos = 0
    for s in [*sorted(order), None]:
        gap_end = covered if s is None else s * L
        if gap_end > pos:
            k = bisect.bisect_right(starts, pos) - 1
            while pos < gap_end:
                while starts[k + 1] <= pos:
                    k += 1
                end = min(gap_end, starts[k + 1])
                spans.append(BufferedSpan(occ_of[k], docs[k], pos - starts[k], end - pos, False))
                pos = end
        if s is not None:
            pos = max(pos, s * L + L + 1)
    return tuple(spans)


PEERS: dict[str, type[PeerPacker]] = {MegatronGPT.name: MegatronGPT}
"""Policy name -> packer class."""
