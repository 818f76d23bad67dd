"""Per-document masks: seed 002's one-byte-per-document ``.u8`` files, and applying them to a length stream.

A mask says, for every document of a corpus in its document order, whether a
pipeline stage excludes it (seed 004's filter, deduplication or
decontamination operators, seen as their outcome on one corpus). Seed 002's
decontamination wrote one such file per source and re-merged the mix without
the marked documents.

Format: ``N`` bytes for ``N`` documents, byte ``i`` is ``1`` when document
``i`` is excluded and ``0`` when it is kept; no header, no other value. A
small JSON *sidecar* (``read_sidecar``) says which inputs and document order
the mask covers and carries the fingerprint (documents, tokens, SHA-256 of the
BOS-inclusive ``int64`` lengths, as
:func:`~packing_theory.corpus.lengths_fingerprint`) of the lengths it was made
for, so that a mask is never applied to another corpus by accident
(:func:`check_sidecar`).

>>> import numpy as np
>>> apply_mask(np.array([5, 7, 2, 9]), np.array([0, 1, 0, 1], dtype=np.uint8)).tolist()
[5, 2]
>>> list(iter_masked(iter([5, 7, 2, 9]), np.array([0, 1, 0, 1], dtype=np.uint8)))
[5, 2]
>>> apply_mask(np.array([5, 7]), np.array([0, 1, 0], dtype=np.uint8))
Traceback (most recent call last):
packing_theory.InputError: mask has 3 entries for 2 documents: a mask covers exactly its stage's input
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .._files import read_json
from ..errors import InputError, InputTypeError
from ..lengths import validate_lengths
from .documents import lengths_fingerprint

__all__ = [
    "MASK_FORMAT",
    "MASK_MEANING",
    "apply_mask",
    "check_sidecar",
    "iter_masked",
    "mask_bytes",
    "mask_sidecar",
    "read_mask",
    "read_sidecar",
    "write_mask",
]

MASK_FORMAT = "packing-theory/document-mask"
"""The ``format`` of a mask's JSON sidecar."""

MASK_MEANING = "one byte per document in document order: 1 = exclude, 0 = keep"
"""The byte semantics, as the sidecar states them."""

_VERSION = 1
U8Array = npt.NDArray[np.uint8]


def _as_mask(mask: object, what: str = "mask") -> U8Array:
    arr = np.asarray(mask)
    if arr.ndim != 1:
        raise InputError(f"{what} must be 1-D (one entry per document), got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint8)
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8)
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{what} must hold 0/1 integers, got dtype {arr.dtype}")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{what}[{i}]={int(arr[i])}: a mask holds only 0 (keep) and 1 (exclude)")
    return arr.astype(np.uint8)


def mask_bytes(mask: object) -> bytes:
    """The ``.u8`` bytes of ``mask`` (0/1 integers or booleans, one per document)."""
    return _as_mask(mask).tobytes()


def write_mask(path: str | os.PathLike[str], mask: object, *,
               sidecar: Mapping[str, Any] | None = None) -> None:
    """Write ``mask`` to ``path`` (``.u8``) and, with ``sidecar``, its JSON to ``path + ".json"``."""
    data = mask_bytes(mask)
    with open(path, "wb") as fh:
        fh.write(data)
    if sidecar is not None:
        with open(os.fspath(path) + ".json", "w", encoding="utf-8") as fh:
            json.dump(dict(sidecar), fh, indent=1)
            fh.write("\n")


def read_mask(path: str | os.PathLike[str], *, documents: int | None = None) -> U8Array:
    """Read a ``.u8`` mask; with ``documents``, refuse one of another length.

    Raises:
        FileNotFoundError: no such file.
        InputError: a byte other than 0 or 1 (naming the file and the
            position), or a length other than ``documents``.
    """
    name = os.fspath(path)
    arr = np.fromfile(name, dtype=np.uint8)
    _as_mask(arr, f"mask {name!r}")
    if documents is not None and arr.size != documents:
        raise InputError(f"mask {name!r} has {arr.size} entries for {documents} documents")
    return arr


def apply_mask(lengths: object, mask: object) -> npt.NDArray[np.int64]:
    """The lengths of the documents ``mask`` keeps (entry 0), in order. O(documents).

    Raises:
        InputError: ``mask`` and ``lengths`` differ in length, or ``mask``
            holds a value other than 0 and 1; see also
            :func:`~packing_theory.lengths.validate_lengths`.
    """
    arr = validate_lengths(lengths, allow_empty=True)
    m = _as_mask(mask)
    if m.size != arr.size:
        raise InputError(f"mask has {m.size} entries for {arr.size} documents: a mask covers exactly its "
                         "stage's input")
    kept: npt.NDArray[np.int64] = arr[m == 0]
    return kept


def iter_masked(lengths: Iterable[int], mask: object) -> Iterator[int]:
    """Yield the lengths of a stream whose documents ``mask`` keeps, lazily; O(1) memory beyond the mask.

    The stream must hold exactly as many documents as the mask: a longer or
    shorter stream raises :class:`~packing_theory.InputError` when it is
    detected (at the first extra document, or at the end).
    """
    m = _as_mask(mask)
    n = int(m.size)
    return _masked(iter(lengths), m, n)


def _masked(it: Iterator[int], m: U8Array, n: int) -> Iterator[int]:
    i = 0
    for length in it:
        if i >= n:
            raise InputError(f"the length stream has more than the mask's {n} documents")
        if not m[i]:
            yield length
        i += 1
    if i != n:
        raise InputError(f"the length stream ended after {i} documents, the mask covers {n}")


def mask_sidecar(
    mask: object,
    lengths: object,
    *,
    mask_name: str,
    inputs: list[dict[str, Any]],
    order: str,
    stage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON sidecar of ``mask``: what it covers, in which order, and the fingerprint of ``lengths``.

    Args:
        mask: the mask (one 0/1 entry per document).
        lengths: the BOS-inclusive lengths of the same documents (fingerprinted).
        mask_name: the ``.u8`` file's name (relative to the sidecar).
        inputs: one entry per input, in document order (path, documents, ...).
        order: the document order, in words.
        stage: the stage that produced it (seed 004: the operator, its
            parameters and revision).

    >>> import numpy as np
    >>> s = mask_sidecar(np.array([0, 1]), np.array([3, 4]), mask_name="x.u8", inputs=[], order="as listed")
    >>> s["n_docs"], s["excluded"], s["fingerprint"]["n_tokens"]
    (2, 1, 7)
    """
    m = _as_mask(mask)
    arr = validate_lengths(lengths, allow_empty=True)
    if m.size != arr.size:
        raise InputError(f"mask has {m.size} entries for {arr.size} documents")
    return {"format": MASK_FORMAT, "version": _VERSION, "mask": mask_name, "meaning": MASK_MEANING,
            "n_docs": int(m.size), "excluded": int(m.sum()), "fingerprint": lengths_fingerprint(arr),
            "order": order, "inputs": list(inputs), "stage": dict(stage) if stage is not None else None}


def read_sidecar(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a mask sidecar (format, version, ``n_docs``, ``excluded``, ``fingerprint``).

    Raises:
        FileNotFoundError: no such file.
        InputError: not JSON, not a mask sidecar, or a field missing.
    """
    name = os.fspath(path)
    doc = read_json(name, "mask sidecar")
    if not isinstance(doc, dict) or doc.get("format") != MASK_FORMAT:
        raise InputError(f"mask sidecar {name!r} is not a {MASK_FORMAT} document")
    if doc.get("version") != _VERSION:
        raise InputError(f"mask sidecar {name!r}: version {doc.get('version')!r} is not supported "
                         f"(this library reads {_VERSION})")
    for key in ("mask", "n_docs", "excluded", "fingerprint", "inputs"):
        if key not in doc:
            raise InputError(f"mask sidecar {name!r} lacks the field {key!r}")
    return doc


def check_sidecar(sidecar: Mapping[str, Any], lengths: object, mask: object | None = None) -> None:
    """Refuse a mask made for other documents: ``lengths`` must have the sidecar's fingerprint.

    With ``mask``, also check its length and its count of excluded documents.

    Raises:
        InputError: naming the first field that differs.
    """
    found = lengths_fingerprint(validate_lengths(lengths, allow_empty=True))
    expected = sidecar.get("fingerprint") or {}
    for key in ("n_docs", "n_tokens", "lengths_sha256"):
        if expected.get(key) != found[key]:
            raise InputError(f"the mask was made for other documents: {key} is {found[key]!r} here, the "
                             f"sidecar says {expected.get(key)!r}")
    if mask is not None:
        m = _as_mask(mask)
        if m.size != sidecar.get("n_docs") or int(m.sum()) != sidecar.get("excluded"):
            raise InputError(f"the mask has {m.size} entries and {int(m.sum())} exclusions, the sidecar says "
                             f"{sidecar.get('n_docs')} and {sidecar.get('excluded')}")
