"""The contamination audit: n-gram overlap of training documents with reference texts (seeds 002, 004).

Seed 004 defines the evaluation decontamination operator ``C_E``: it removes
the documents that match a protected evaluation collection ``E`` under a
declared matching rule. Seed 002 ran it as a 13-gram audit of its mix against
the train, validation and dev splits of its evaluation tasks, reporting counts
only, and learned to tell "overlap found" from "did not measure".

=====================================  ===========================================================
step                                   names
=====================================  ===========================================================
hash every n-token window              :func:`window_hashes` (vectorised), :func:`naive_window_hash`,
                                       :func:`expected_false_positives`
index the reference grams              :class:`IndexBuilder`, :class:`GramIndex`, :class:`GramTable`
                                       (at most ``memory_grams`` held; on disk beyond)
read references and texts              :class:`ReferenceSpec`, :func:`text_token_ids`,
                                       :func:`reference_pieces` (streamed, piece by piece)
read the training inputs               :class:`CorpusInput` (shards and every ``--data`` format)
scan the corpus, give the verdict      :func:`scan_contamination` (serial or on an executor),
                                       :class:`ContaminationReport`, :class:`HitDocument`
the exact oracle                       :func:`naive_matches`, :func:`naive_scan` (sets of
                                       windows, no hashing of ours)
=====================================  ===========================================================

The exclusion mask the scan returns is seed 002's ``.u8`` format
(:mod:`packing_theory.corpus.masks`), the input of a cleaning-funnel stage.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .hashing import (
        DEFAULT_N,
        HASH_BITS,
        expected_false_positives,
        naive_window_hash,
        window_hashes,
    )
    from .index import DEFAULT_MEMORY_GRAMS, GramIndex, GramTable, IndexBuilder
    from .inputs import CorpusInput
    from .naive import naive_gram_set, naive_matches, naive_scan
    from .report import ContaminationReport, HitDocument, InputRecord, ReferenceRecord, SourceHits
    from .scan import EXCLUDE_RULES, block_hits, scan_contamination, window_counts
    from .tokens import ReferenceSpec, reference_pieces, text_token_ids

__all__ = [
    "DEFAULT_MEMORY_GRAMS",
    "DEFAULT_N",
    "EXCLUDE_RULES",
    "HASH_BITS",
    "ContaminationReport",
    "CorpusInput",
    "GramIndex",
    "GramTable",
    "HitDocument",
    "IndexBuilder",
    "InputRecord",
    "ReferenceRecord",
    "ReferenceSpec",
    "SourceHits",
    "block_hits",
    "expected_false_positives",
    "naive_gram_set",
    "naive_matches",
    "naive_scan",
    "naive_window_hash",
    "reference_pieces",
    "scan_contamination",
    "text_token_ids",
    "window_counts",
    "window_hashes",
]

lazy_package(__name__, {
    ".hashing": ("DEFAULT_N", "HASH_BITS", "expected_false_positives", "naive_window_hash", "window_hashes"),
    ".index": ("DEFAULT_MEMORY_GRAMS", "GramIndex", "GramTable", "IndexBuilder"),
    ".inputs": ("CorpusInput",),
    ".naive": ("naive_gram_set", "naive_matches", "naive_scan"),
    ".report": ("ContaminationReport", "HitDocument", "InputRecord", "ReferenceRecord", "SourceHits"),
    ".scan": ("EXCLUDE_RULES", "block_hits", "scan_contamination", "window_counts"),
    ".tokens": ("ReferenceSpec", "reference_pieces", "text_token_ids"),
})
