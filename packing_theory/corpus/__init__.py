"""Length streams for replays: ``.npy`` arrays, token shards, text, per-rank streams, a default corpus.

=================================  ===========================================================
input                              functions
=================================  ===========================================================
``.npy`` length arrays             :func:`load_lengths`, :func:`validate_lengths`
token shards (seed 002 §10)        :func:`read_shard`, :func:`write_shard`, :class:`Shard`,
                                   :func:`lengths_from_shards`
token documents for a trainer      :class:`TokenDocuments` (in memory), :class:`ShardDocuments`
                                   (shards, ``(shard_index, token_offset)`` cursor)
shard manifest and verifier        :func:`write_shards`, :func:`read_manifest`, :func:`verify_shards`
text + any tokenizer callable      :func:`lengths_from_texts`, :func:`documents_from_texts`,
                                   :func:`iter_parquet_texts`, :func:`iter_text_files`
per-rank streams (nanochat DDP)    :func:`rank_row_groups`, :func:`rank_stream`,
                                   :func:`rank_stream_from_parquet`, :class:`RankStream`
calibrated default corpus          :func:`default_lengths`, :func:`default_corpus_fit`
local natural-language text        :func:`load_local_text`, :class:`LocalTextCorpus`,
(stdlib docs, system docs)         :func:`train_byte_bpe`, :func:`bpe_lengths`
=================================  ===========================================================

Every length is BOS-inclusive (``>= 1``); every loader raises ``ValueError``
for an empty input, naming the input.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from ..lengths import load_lengths, validate_lengths
    from .cursor import ShardDocuments
    from .default import (
        BODY_COMPONENTS,
        CENSUS,
        LENGTH_FLOOR,
        PUBLISHED_REPLAY,
        CorpusFit,
        FitRow,
        LogLogistic,
        default_corpus_fit,
        default_length_chunks,
        default_lengths,
        startup_targets,
    )
    from .documents import DocumentStore, TokenDocuments, lengths_fingerprint
    from .local_text import LocalDocument, LocalTextCorpus, bpe_lengths, load_local_text, train_byte_bpe
    from .manifest import MANIFEST_FORMAT, read_manifest, write_shards
    from .ranks import RankStream, rank_row_groups, rank_stream, rank_stream_from_parquet
    from .shards import HEADER, MAX_VOCAB, Shard, lengths_from_shards, read_shard, write_shard
    from .text import (
        Tokenizer,
        documents_from_texts,
        iter_parquet_texts,
        iter_text_files,
        lengths_from_texts,
        parquet_columns,
        tokenize_batches,
    )
    from .verify import VerifyReport, verify_shards

__all__ = [
    "BODY_COMPONENTS",
    "CENSUS",
    "HEADER",
    "LENGTH_FLOOR",
    "MANIFEST_FORMAT",
    "MAX_VOCAB",
    "PUBLISHED_REPLAY",
    "CorpusFit",
    "DocumentStore",
    "FitRow",
    "LocalDocument",
    "LocalTextCorpus",
    "LogLogistic",
    "RankStream",
    "Shard",
    "ShardDocuments",
    "TokenDocuments",
    "Tokenizer",
    "VerifyReport",
    "bpe_lengths",
    "default_corpus_fit",
    "default_length_chunks",
    "default_lengths",
    "documents_from_texts",
    "iter_parquet_texts",
    "iter_text_files",
    "lengths_fingerprint",
    "lengths_from_shards",
    "lengths_from_texts",
    "load_lengths",
    "load_local_text",
    "parquet_columns",
    "rank_row_groups",
    "rank_stream",
    "rank_stream_from_parquet",
    "read_manifest",
    "read_shard",
    "startup_targets",
    "tokenize_batches",
    "train_byte_bpe",
    "validate_lengths",
    "verify_shards",
    "write_shard",
    "write_shards",
]

lazy_package(__name__, {
    "..lengths": ("load_lengths", "validate_lengths"),
    ".cursor": ("ShardDocuments",),
    ".default": ("BODY_COMPONENTS", "CENSUS", "LENGTH_FLOOR", "PUBLISHED_REPLAY", "CorpusFit", "FitRow",
                 "LogLogistic", "default_corpus_fit", "default_length_chunks", "default_lengths",
                 "startup_targets"),
    ".documents": ("DocumentStore", "TokenDocuments", "lengths_fingerprint"),
    ".local_text": ("LocalDocument", "LocalTextCorpus", "bpe_lengths", "load_local_text", "train_byte_bpe"),
    ".manifest": ("MANIFEST_FORMAT", "read_manifest", "write_shards"),
    ".ranks": ("RankStream", "rank_row_groups", "rank_stream", "rank_stream_from_parquet"),
    ".shards": ("HEADER", "MAX_VOCAB", "Shard", "lengths_from_shards", "read_shard", "write_shard"),
    ".text": ("Tokenizer", "documents_from_texts", "iter_parquet_texts", "iter_text_files",
              "lengths_from_texts", "parquet_columns", "tokenize_batches"),
    ".verify": ("VerifyReport", "verify_shards"),
})
