"""The census of one Arrow file of a saved Hugging Face dataset (a census task of kind ``hf``).

A dataset written by ``save_to_disk`` is one census input per Arrow file
(:func:`~packing_theory.corpus.readers.hf.hf_data_files` lists them, in
order): its text column (``--column``, default ``text``) is tokenized as the
``hf`` reader tokenizes it, one record batch at a time, and a row names itself
by the dataset's ``id`` / ``name`` column (:mod:`packing_theory.corpus.readers.names`),
else ``ARROW_FILE#k``: the names and files ``audit --data DIR`` gives the same
rows. A column of token ids is refused (the census tokenizes text; ``audit
--data DIR --bos ...`` reads token ids). Needs ``pyarrow``. O(file bytes) plus
the tokenizer; memory one record batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..corpus.readers.hf import stream_batches, stream_schema
from ..corpus.readers.names import NAME_COLUMNS, RecordNames, record_name
from ..errors import InputError

if TYPE_CHECKING:  # the census task (parts.py) calls this module: no import back at run time
    from .parts import CensusOptions

__all__ = ["arrow_census"]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


def arrow_census(path: str, opts: CensusOptions, names: RecordNames,
                 count: Callable[[list[str], str], Int64Array],
                 hashes_of: Callable[[Iterable[bytes]], tuple[Int64Array, UInt64Array]],
                 ) -> tuple[Int64Array, Int64Array | None, UInt64Array | None]:
    """``(lengths, doc_bytes, doc_hashes)`` of the text column of the Arrow stream file ``path``; the
    rows' own names are added to ``names``. ``count(texts, where)`` gives BOS-inclusive lengths and
    ``hashes_of(encoded texts)`` byte lengths and hashes: the census's own rules, as for every kind.

    Raises:
        InputError: not an Arrow stream, no such column, a column of token ids or of another type, a
            null row (naming the file and the row).
    """
    schema = stream_schema(path)
    columns = list(schema.names)
    if opts.column not in columns:
        raise InputError(f"Arrow file {path!r} has no column {opts.column!r} (--column); columns: {columns}")
    kind = schema.field(opts.column).type
    text_kind = str(kind) in ("string", "large_string")
    if not text_kind:
        held = "token ids" if str(kind).startswith(("list", "large_list")) else str(kind)
        raise InputError(f"Arrow file {path!r}: column {opts.column!r} holds {held}; the census tokenizes "
                         "text (--column names a text column): read the dataset with audit/replay --data "
                         "DIR --bos included|add, which take its token lengths from the Arrow offsets")
    name_column = next((c for c in NAME_COLUMNS if c in columns), None)
    parts: list[Int64Array] = []
    sizes: list[Int64Array] = []
    digests: list[UInt64Array] = []
    row = 0
    for batch in stream_batches(path, opts.column):
        col = batch.column(opts.column)
        if col.null_count:
            first = row + int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise InputError(f"Arrow file {path!r}: column {opts.column!r} has a null row (row {first} of "
                             "the file, from 0)")
        texts: list[str] = col.to_pylist()
        if name_column is not None:
            for value in batch.column(name_column).to_pylist():
                names.add(record_name(value))
        parts.append(count(texts, f"Arrow file {path!r} rows {row}.."))
        if opts.hashes:
            s, h = hashes_of(t.encode("utf-8") for t in texts)
            sizes.append(s)
            digests.append(h)
        row += len(texts)
    lengths = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if not opts.hashes:
        return lengths, None, None
    return (lengths, np.concatenate(sizes) if sizes else np.zeros(0, np.int64),
            np.concatenate(digests) if digests else np.zeros(0, np.uint64))
