"""What every reader shares: the BOS rule, the reader protocol, checked file names.

Our lengths are BOS-inclusive: a document of length ``L`` occupies ``L``
positions of a packed row, one of them the marker that separates it from the
previous document. A format that stores token ids already holds, or does not
hold, such a marker per document, and only its user knows which. The choice
is therefore an explicit argument of every token-id reader (:data:`BosMode`),
never a silent assumption:

``"included"``
    the stored tokens of a document already hold its one separator (a BOS at
    the start, or an EOS / EOD at the end, as Megatron-LM's
    ``preprocess_data.py --append-eod`` and OLMo-core's arrays write it):
    length = stored tokens;
``"add"``
    the stored tokens hold no separator: length = stored tokens + 1 (the BOS a
    packer prepends).

Text formats go through a tokenizer; there ``"auto"`` asks the tokenizer
itself (:func:`packing_theory.corpus.text.detect_bos`): a tokenizer that
prepends BOS on its own is counted ``"included"``, one that does not ``"add"``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..._files import regular_file
from ...errors import InputError

__all__ = [
    "BOS_MODES", "BosMode", "DataReader", "bos_inclusive", "check_bos", "existing_file", "file_codes",
    "iter_documents",
]

BosMode = Literal["included", "add"]
BOS_MODES: tuple[BosMode, ...] = ("included", "add")
"""How a token-id format's stored documents map to BOS-inclusive lengths (see the module docstring)."""

Int64Array = npt.NDArray[np.int64]


def check_bos(bos: object, fmt: str) -> BosMode:
    """``bos`` validated as a :data:`BosMode` for the format ``fmt``.

    >>> check_bos("add", "megatron")
    'add'
    >>> check_bos("auto", "megatron")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputError: bos for megatron data must be 'included' (...) or 'add' (...), got 'auto'
    """
    if bos not in BOS_MODES:
        raise InputError(f"bos for {fmt} data must be 'included' (the stored tokens hold each document's "
                         f"separator: BOS, or an EOS/EOD at its end) or 'add' (one BOS per document is "
                         f"added), got {bos!r}")
    return bos


def bos_inclusive(counts: npt.NDArray[np.integer], bos: BosMode, what: str) -> Int64Array:
    """Stored token counts -> BOS-inclusive lengths (``int64``), refusing a length below 1.

    >>> bos_inclusive(np.array([3, 0]), "add", "x").tolist()
    [4, 1]
    >>> bos_inclusive(np.array([3, 0]), "included", "data 'x'")
    Traceback (most recent call last):
    packing_theory.InputError: data 'x': document 1 holds 0 tokens, so with bos='included' it has no \
separator; use bos='add' if the stored documents hold no BOS/EOS
    """
    out: Int64Array = counts.astype(np.int64, copy=True)
    if bos == "add":
        out += 1
    if out.size and int(out.min()) < 1:
        i = int(np.argmin(out))
        raise InputError(f"{what}: document {i} holds 0 tokens, so with bos='included' it has no separator; "
                         "use bos='add' if the stored documents hold no BOS/EOS")
    return out


def existing_file(path: str | os.PathLike[str], what: str) -> str:
    """``path`` as a string, after checking that it is a regular file (the message names it).

    The one rule of :func:`packing_theory._files.regular_file`: a FIFO or a device
    is refused before it is read.

    Raises:
        FileNotFoundError: no such path.
        InputError: a directory or another non-file.
    """
    return regular_file(path, what)


@runtime_checkable
class DataReader(Protocol):
    """What every reader gives: BOS-inclusive lengths, and where the format has them token ids.

    ``format`` is the format's name (:data:`packing_theory.corpus.readers.FORMATS`);
    ``paths`` the files read; :meth:`describe` one line for the command line's
    output (what was read, how BOS was counted); ``sources()`` the source
    label of every document (``(labels, codes)``: document ``i`` comes from
    ``labels[codes[i]]``), by default the file it was read from.
    """

    format: str
    paths: tuple[str, ...]

    def __len__(self) -> int: ...

    def lengths(self) -> Int64Array:
        """BOS-inclusive lengths (``int64``, every entry ``>= 1``)."""
        ...

    def sources(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        """``(labels, codes)``: document ``i``'s source label is ``labels[codes[i]]``."""
        ...

    def describe(self) -> str:
        """One line: what was read and how its BOS is counted."""
        ...


def file_codes(counts: list[int]) -> npt.NDArray[np.int32]:
    """``codes`` giving document ``i`` the index of the file holding it (``counts[f]`` documents per file).

    >>> file_codes([2, 0, 1]).tolist()
    [0, 0, 2]
    """
    return np.repeat(np.arange(len(counts), dtype=np.int32), np.asarray(counts, dtype=np.int64))


def iter_documents(reader: Any) -> Iterator[npt.NDArray[Any]]:
    """``reader.document(i)`` for every ``i`` (a reader of a token-id format)."""
    for i in range(len(reader)):
        yield reader.document(i)
