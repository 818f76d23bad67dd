"""The corpus a ledger is reconciled against, as a file: token ids and document offsets.

``.npz`` holds two arrays, ``tokens`` (every document's ids, concatenated) and
``offsets`` (``n_docs + 1`` cumulative offsets); ``.jsonl`` holds one JSON list of
token ids per line (a document). Both are the documents as the trainer saw
them, BOS included, in raw corpus order.

>>> import tempfile, os
>>> from packing_theory.corpus.documents import TokenDocuments
>>> path = os.path.join(tempfile.mkdtemp(), "corpus.npz")
>>> write_token_corpus(path, TokenDocuments.from_lists([[0, 5], [0, 6, 7]]))
>>> read_token_corpus(path).lengths().tolist()
[2, 3]
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..corpus.documents import TokenDocuments
from ..errors import InputError

__all__ = ["read_token_corpus", "write_token_corpus"]


def write_token_corpus(path: str | os.PathLike[str], documents: TokenDocuments) -> None:
    """Write ``documents`` as ``.npz`` (``tokens``, ``offsets``) or ``.jsonl`` (one list per line)."""
    name = os.fspath(path)
    if name.endswith(".jsonl"):
        with open(name, "w", encoding="utf-8") as fh:
            for i in range(len(documents)):
                fh.write(json.dumps(documents[i].tolist()) + "\n")
        return
    with open(name, "wb") as fh:  # np.savez would append .npz to any other name
        np.savez(fh, tokens=documents.tokens, offsets=documents.offsets)


def read_token_corpus(path: str | os.PathLike[str]) -> TokenDocuments:
    """Read a corpus written by :func:`write_token_corpus` (``.jsonl``, else ``.npz``).

    Raises:
        InputError: a file without the arrays, a line that is not a list of ids (naming it).
    """
    name = os.fspath(path)
    if name.endswith(".jsonl"):
        docs = []
        with open(name, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{name}:{n}: not JSON ({exc.msg})") from exc
                if not isinstance(doc, list) or not all(isinstance(t, int) for t in doc):
                    raise InputError(f"{name}:{n}: a document must be a JSON list of token ids")
                docs.append(doc)
        return TokenDocuments.from_lists(docs)
    try:
        data = np.load(name, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{name} is not a .npz corpus (tokens, offsets) nor a .jsonl one: {exc}") from exc
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InputError(f"{name} is not a .npz corpus (tokens, offsets) nor a .jsonl one: it holds one "
                         "array")
    with data:
        if "tokens" not in data or "offsets" not in data:
            raise InputError(f"{name} must hold the arrays 'tokens' and 'offsets', it holds "
                             f"{sorted(data.files)}")
        return TokenDocuments(data["tokens"], data["offsets"])
