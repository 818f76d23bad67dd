"""The shard manifest (JSON) and a writer that cuts documents into seed-002 shards and records it.

Seed 002 §5 asks the published mix to carry a manifest with token counts,
shard sizes, per-shard sha256 and the cursor semantics, and §10 gates the
build on a verifier that recounts everything from the bytes. This module
fixes the manifest format; :mod:`packing_theory.corpus.verify` checks shards
against it.

Format (``manifest.json`` next to the shards; paths are relative to it)::

    {
      "format": "packing-theory/shard-manifest", "version": 1,
      "vocab": 50304, "bos_id": 0,                 # bos_id may be null
      "n_docs": 1200, "n_tokens": 987654,
      "cursor": "<the (shard_index, token_offset) semantics, in words>",
      "tokenizer": {...},                          # free-form identity, optional
      "shards": [
        {"path": "shard-00000.bin", "n_docs": 600, "n_tokens": 493210,
         "bytes": 988840, "sha256": "…",
         "source_counts": {"web": 410, "code": 190},   # optional: documents per source
         "source_tokens": {"web": 380112, "code": 113098}}  # optional: tokens per source
      ]
    }

The cursor: ``(shard_index, token_offset)`` names the document that starts at
``token_offset`` in shard ``shard_index``; ``(n_shards, 0)`` is the end. A
replay's refill cursor (documents taken) maps to it and back with
:class:`~packing_theory.corpus.cursor.ShardDocuments`.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> docs = [[0, 5], [0, 6, 7], [0, 8]]
>>> m = write_shards(d, docs, vocab=9, shard_tokens=4, sources=["a", "b", "a"], bos_id=0)
>>> [(s["path"], s["n_docs"], s["n_tokens"], s["source_counts"]) for s in m["shards"]]
[('shard-00000.bin', 2, 5, {'a': 1, 'b': 1}), ('shard-00001.bin', 1, 2, {'a': 1})]
>>> read_manifest(os.path.join(d, "manifest.json"))["n_tokens"]
7
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from .._files import read_json
from ..errors import InputError
from .shards import MAX_VOCAB, PathLike, write_shard

__all__ = [
    "CURSOR_SEMANTICS",
    "MANIFEST_FORMAT",
    "SHARD_MANIFEST_NAME",
    "file_sha256",
    "read_manifest",
    "write_shards",
]

MANIFEST_FORMAT = "packing-theory/shard-manifest"
SHARD_MANIFEST_NAME = "manifest.json"
_VERSION = 1
CURSOR_SEMANTICS = (
    "(shard_index, token_offset): the document starting at token_offset in shard shard_index "
    "(a document boundary, offsets[i] of that shard); (n_shards, 0) is the end of the corpus"
)


def file_sha256(path: PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes, read in chunks. O(bytes) time, O(chunk) memory."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_shards(
    directory: PathLike,
    docs: Iterable[Sequence[int] | npt.NDArray[np.integer]],
    *,
    vocab: int,
    shard_tokens: int = 8_000_000,
    sources: Iterable[str] | None = None,
    bos_id: int | None = None,
    tokenizer: dict[str, Any] | None = None,
    prefix: str = "shard-",
) -> dict[str, Any]:
    """Cut BOS-inclusive documents into seed-002 shards of about ``shard_tokens`` tokens; write the manifest.

    A shard is closed once it holds at least ``shard_tokens`` tokens (a
    document never spans two shards). ``sources`` gives each document's
    source label (recorded per shard as ``source_counts``, documents per
    source, and ``source_tokens``, tokens per source). Returns the
    manifest, also written to ``directory/manifest.json``.

    Complexity: O(tokens) time; memory O(one shard).

    Raises:
        ValueError: bad ``vocab`` / ``shard_tokens`` / ``bos_id``, an invalid
            document (see :func:`~packing_theory.corpus.write_shard`), fewer
            source labels than documents, or no document at all.
    """
    vocab = check_int("vocab", vocab, 1, maximum=MAX_VOCAB)
    shard_tokens = check_int("shard_tokens", shard_tokens, 1)
    if bos_id is not None:
        bos_id = check_int("bos_id", bos_id, 0, maximum=vocab - 1)
    os.makedirs(directory, exist_ok=True)
    labels = iter(sources) if sources is not None else None
    shards: list[dict[str, Any]] = []
    batch: list[npt.NDArray[np.integer]] = []
    counts: Counter[str] = Counter()
    source_tokens: Counter[str] = Counter()
    tokens = 0

    def flush() -> None:
        nonlocal batch, counts, source_tokens, tokens
        name = f"{prefix}{len(shards):05d}.bin"
        path = os.path.join(directory, name)
        write_shard(path, batch, vocab=vocab)
        entry: dict[str, Any] = {
            "path": name,
            "n_docs": len(batch),
            "n_tokens": tokens,
            "bytes": os.path.getsize(path),
            "sha256": file_sha256(path),
        }
        if labels is not None:
            entry["source_counts"] = dict(sorted(counts.items()))
            entry["source_tokens"] = dict(sorted(source_tokens.items()))
        shards.append(entry)
        batch, counts, source_tokens, tokens = [], Counter(), Counter(), 0

    for index, doc in enumerate(docs):
        arr = np.asarray(doc)
        if labels is not None:
            label = next(labels, None)
            if label is None:
                raise InputError(f"sources ran out at document {index}: give one label per document")
            counts[str(label)] += 1
            source_tokens[str(label)] += int(arr.size)
        batch.append(arr)
        tokens += int(arr.size)
        if tokens >= shard_tokens:
            flush()
    if batch:
        flush()
    if not shards:
        raise InputError("docs is empty: a manifest needs at least one document")
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "version": _VERSION,
        "vocab": vocab,
        "bos_id": bos_id,
        "n_docs": sum(s["n_docs"] for s in shards),
        "n_tokens": sum(s["n_tokens"] for s in shards),
        "cursor": CURSOR_SEMANTICS,
        "shards": shards,
    }
    if tokenizer is not None:
        manifest["tokenizer"] = tokenizer
    with open(os.path.join(directory, SHARD_MANIFEST_NAME), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    return manifest


def read_manifest(path: PathLike) -> dict[str, Any]:
    """Read and validate a manifest's shape (the shards: :func:`~packing_theory.corpus.verify.verify_shards`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not JSON, not a shard manifest, another version, or
            malformed fields (naming the field).
    """
    doc = read_json(path, "manifest")
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise InputError(f"manifest {os.fspath(path)!r} is not a {MANIFEST_FORMAT} document")
    if doc.get("version") != _VERSION:
        raise InputError(
            f"manifest version {doc.get('version')!r} is not supported (this library reads {_VERSION})"
        )
    try:
        check_int("vocab", doc["vocab"], 1, maximum=MAX_VOCAB)
        if doc.get("bos_id") is not None:
            check_int("bos_id", doc["bos_id"], 0)
        check_int("n_docs", doc["n_docs"], 0)
        check_int("n_tokens", doc["n_tokens"], 0)
        shards = doc["shards"]
        if not isinstance(shards, list) or not shards:
            raise InputError("manifest field 'shards' must be a non-empty list")
        for i, s in enumerate(shards):
            if not isinstance(s, dict) or not isinstance(s.get("path"), str):
                raise InputError(f"manifest shards[{i}] needs a 'path' string")
            check_int(f"shards[{i}].n_docs", s["n_docs"], 0)
            check_int(f"shards[{i}].n_tokens", s["n_tokens"], 0)
            for key in ("source_counts", "source_tokens"):
                if key in s and not isinstance(s[key], dict):
                    raise InputError(f"manifest shards[{i}].{key} must be an object")
                for label, v in (s.get(key) or {}).items():
                    check_int(f"shards[{i}].{key}[{label!r}]", v, 0)
    except KeyError as exc:
        raise InputError(f"manifest {os.fspath(path)!r} lacks the field {exc}") from exc
    except TypeError as exc:
        raise InputError(f"manifest {os.fspath(path)!r}: {exc}") from exc
    return doc
