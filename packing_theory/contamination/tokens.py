"""Token ids of texts (built-in tokenizers or any callable), and the reference sets a scan compares with.

Texts become token ids with the same tokenizer options as ``census`` and
``audit`` text inputs:

==============  ==============================================================
tokenizer       token ids of a text
==============  ==============================================================
``bytes``       its UTF-8 bytes (0..255)
``chars``       its Unicode code points
``whitespace``  one id per whitespace-separated word: the first 8 bytes of the
                word's BLAKE2b digest (two different words share an id with
                probability about ``2**-64`` per pair)
a callable      what it returns (:func:`packing_theory.corpus.tokenize_batches`
                accepts its forms); give one that adds no BOS or other
                special token, as the training shards' documents are compared
                without their BOS
==============  ==============================================================

No BOS is added to a text. A reference set (:class:`ReferenceSpec`) is one file:
plain text (the whole file is one item, or each non-blank line with
``per_line``) or a parquet file whose ``columns`` hold strings or lists of
strings (every non-null value, or list element, is one item; nulls are
counted and skipped). Its *rows* are lines (or 1 for a whole file) or parquet
rows; a declared row count that disagrees with what was read makes the scan
"not measured".

**Streaming.** A reference is read, tokenized and hashed piece by piece
(:func:`reference_pieces`): a plain-text file :data:`PIECE_CHARS` characters
(or one line's worth) at a time, an item longer than that cut into pieces at
the tokenizer's safe points (:func:`cut_rule`: anywhere for ``bytes`` and
``chars``, after whitespace for ``whitespace``, so their ids are exactly the
whole item's; after a line break for a callable, whose ids may differ from
the whole item's at the cut only). No whole item is ever held as token ids,
so a reference of any size is read in memory of one piece.

>>> [ids.tolist() for ids in text_token_ids(["hé", ""], "bytes")]
[[104, 195, 169], []]
>>> [ids.tolist() for ids in text_token_ids(["hé"], "chars")]
[[104, 233]]
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..corpus.text import Tokenizer, check_text_file, tokenize_batches
from ..corpus.textcount import BUILTIN_TOKENIZERS, BuiltinTokenizer, binary_failure, decode_failure
from ..errors import InputError, InputTypeError, import_optional
from .hashing import as_token_ids

__all__ = [
    "PIECE_CHARS",
    "ReferenceItems",
    "ReferenceSpec",
    "cut_pieces",
    "cut_rule",
    "open_parquet",
    "reference_pieces",
    "text_token_ids",
    "tokenizer_label",
]

U64Array = npt.NDArray[np.uint64]


def _word_id(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little")


def _builtin_ids(text: str, unit: BuiltinTokenizer) -> U64Array:
    if unit == "bytes":
        return np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8).astype(np.uint64)
    if unit == "chars":
        return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint64)
    return np.fromiter((_word_id(w) for w in text.split()), dtype=np.uint64)


def text_token_ids(texts: Iterable[str], tokenizer: Tokenizer | BuiltinTokenizer, *,
                   what: str = "texts") -> Iterator[U64Array]:
    """Yield the token ids of each text as a ``uint64`` array (no BOS added).

    Raises:
        InputError: an unknown built-in name, a tokenizer that raised or
            returned a negative id (naming ``what`` and the text index).
        InputTypeError: a text that is not a ``str``, a tokenizer result of
            another form (see :func:`packing_theory.corpus.tokenize_batches`).
    """
    if isinstance(tokenizer, str):
        if tokenizer not in BUILTIN_TOKENIZERS:
            raise InputError(f"tokenizer must be a callable or one of {', '.join(BUILTIN_TOKENIZERS)}, "
                             f"got {tokenizer!r}")
        unit: BuiltinTokenizer = tokenizer
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputTypeError(f"{what}[{i}] must be a str, got {type(text).__name__}")
            yield _builtin_ids(text, unit)
        return
    index = 0
    for batch in tokenize_batches(texts, tokenizer):
        for tokens in batch:
            yield as_token_ids(tokens, f"{what}[{index}]")
            index += 1


def tokenizer_label(tokenizer: Tokenizer | BuiltinTokenizer) -> str:
    """How a report names the tokenizer: the built-in name, or ``module.qualname``."""
    if isinstance(tokenizer, str):
        return tokenizer
    from ..corpus.text import tokenizer_name

    return tokenizer_name(tokenizer)


@dataclass(frozen=True)
class ReferenceSpec:
    """One reference set: a plain text or parquet file the scan compares the corpus with.

    Attributes:
        path: the file (``.parquet`` is read with pyarrow; anything else as UTF-8 text).
        columns: parquet columns holding strings or lists of strings.
        per_line: plain text: each non-blank line is one item (else the whole file).
        declared_rows: the rows the set must have (a dataset server's size); ``None``: unchecked.
        name: how the report names it (default: ``path``).
    """

    path: str
    columns: tuple[str, ...] = ("text",)
    per_line: bool = False
    declared_rows: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise InputError(f"reference path must be a non-empty str, got {self.path!r}")
        if not self.columns or not all(isinstance(c, str) and c for c in self.columns):
            raise InputError(f"reference {self.path!r}: columns must be non-empty strings, "
                             f"got {self.columns!r}")
        if self.declared_rows is not None:
            check_int(f"reference {self.path!r} declared_rows", self.declared_rows, 0)
        if self.is_parquet and self.per_line:
            raise InputError(f"reference {self.path!r}: per_line applies to plain text, not parquet")

    @property
    def is_parquet(self) -> bool:
        """Whether the file is read as parquet."""
        return self.path.endswith(".parquet")

    @property
    def label(self) -> str:
        """The report's name for the set."""
        return self.name if self.name is not None else self.path


@dataclass
class ReferenceItems:
    """What reading a reference set produced (filled while :func:`reference_pieces` is consumed)."""

    rows: int = 0
    items: int = 0
    nulls: int = 0
    pieces: int = 0
    largest_piece: int = 0
    """The most token ids of one piece (what reading the set held at once)."""


PIECE_CHARS = 1 << 20
"""Characters of a reference read and tokenized at a time (a longer item is cut: :func:`cut_pieces`)."""

CutRule = Literal["anywhere", "space", "line"]


def cut_rule(tokenizer: Tokenizer | BuiltinTokenizer) -> CutRule:
    """Where a long text may be cut into pieces without changing its token ids.

    ``bytes`` and ``chars`` map each character on its own: ``"anywhere"``;
    ``whitespace`` cuts after a space, tab or line break (``"space"``); a
    callable after a line break, else a space, else anywhere (``"line"``: its
    ids may differ from the whole text's at the cut, and only there).

    >>> cut_rule("bytes"), cut_rule("whitespace"), cut_rule(len)
    ('anywhere', 'space', 'line')
    """
    if tokenizer in ("bytes", "chars"):
        return "anywhere"
    return "space" if tokenizer == "whitespace" else "line"


def _cut_point(text: str, start: int, limit: int, rule: CutRule) -> int | None:
    """Where to end the piece beginning at ``start`` (at most ``limit`` characters), or ``None``: not yet."""
    end = start + limit
    if rule == "anywhere":
        return end
    if rule == "line":
        nl = text.rfind("\n", start, end)
        if nl >= start:
            return nl + 1
    space = max(text.rfind(c, start, end) for c in " \t\n\r")
    if space >= start:
        return space + 1
    if rule == "line":
        return end
    after = [i for i in (text.find(c, end) for c in " \t\n\r") if i >= 0]  # a word longer than the limit
    return min(after) + 1 if after else None  # stays whole for ``whitespace``: cut after it, or wait for more


def cut_pieces(chunks: Iterable[str], rule: CutRule, limit: int = PIECE_CHARS) -> Iterator[tuple[str, bool]]:
    """The text of one item, given in ``chunks``, as pieces of about ``limit`` characters: ``(piece, last)``.

    Pieces are cut at ``rule``'s points (:func:`cut_rule`); ``last`` marks the
    item's final piece (an empty item is one empty piece). Memory: at most
    ``2 * limit`` characters held (more only for a ``whitespace`` word longer
    than ``limit``).

    >>> list(cut_pieces(["ab cd", "ef gh"], "space", limit=4))
    [('ab ', False), ('cdef ', False), ('gh', True)]
    """
    limit = check_int("limit", limit, 1)
    buf = ""
    for chunk in chunks:
        buf = buf + chunk if buf else chunk
        start = 0
        while len(buf) - start > limit:
            cut = _cut_point(buf, start, limit, rule)
            if cut is None:
                break
            yield buf[start:cut], False
            start = cut
        buf = buf[start:]
    yield buf, True


def reference_pieces(spec: ReferenceSpec, tokenizer: Tokenizer | BuiltinTokenizer,
                     tally: ReferenceItems, *, limit: int | None = None) -> Iterator[tuple[U64Array, bool]]:
    """Yield ``(token ids, last)`` for the pieces of every item of ``spec``, counting into ``tally``.

    An item of at most ``limit`` characters is one piece; a longer one is read
    and tokenized piece by piece (:func:`cut_pieces`), so no whole item is
    ever held as token ids. ``last`` marks an item's final piece. ``limit``
    defaults to :data:`PIECE_CHARS` (read when called).

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: an unknown column (listing the available ones), a file
            pyarrow cannot read, invalid UTF-8 or a binary file.
        InputTypeError: a column value that is neither a string nor a list of strings.
    """
    rule = cut_rule(tokenizer)
    limit = check_int("limit", PIECE_CHARS if limit is None else limit, 1)
    if spec.is_parquet:
        texts: Iterable[tuple[str, bool]] = (p for value in _parquet_items(spec, tally)
                                             for p in cut_pieces([value], rule, limit))
    else:
        texts = _text_pieces(spec, tally, rule, limit)
    last: deque[bool] = deque()

    def pieces() -> Iterator[str]:
        for text, end in texts:
            last.append(end)
            yield text

    for ids in text_token_ids(pieces(), tokenizer, what=f"reference {spec.label!r} piece"):
        tally.pieces += 1
        tally.largest_piece = max(tally.largest_piece, int(ids.size))
        yield ids, last.popleft()


def _text_pieces(spec: ReferenceSpec, tally: ReferenceItems, rule: CutRule, limit: int
                 ) -> Iterator[tuple[str, bool]]:
    """The pieces of a plain-text reference: the whole file or each non-blank line, ``limit`` at a time."""
    name = spec.path
    check_text_file(name)
    seen = 0

    def checked(piece: str) -> str:
        nonlocal seen
        if "\x00" in piece:
            raise binary_failure(name, seen + piece.index("\x00"))
        seen += len(piece)
        return piece

    try:
        with open(name, encoding="utf-8", newline="\n") as fh:
            if not spec.per_line:
                tally.rows += 1
                tally.items += 1
                yield from cut_pieces(iter(lambda: checked(fh.read(limit)), ""), rule, limit)
                return
            while True:
                line = _line_chunks(fh, checked, limit)
                first = next(line, None)
                if first is None:
                    return
                held = [first]
                while not held[-1].strip():  # a blank line (all its chunks blank) is no item
                    more = next(line, None)
                    if more is None:
                        break
                    held.append(more)
                if not held[-1].strip():
                    continue
                tally.rows += 1
                tally.items += 1
                yield from cut_pieces(itertools.chain(held, line), rule, limit)
    except UnicodeDecodeError as exc:
        raise decode_failure(name, exc, "utf-8") from exc


def _line_chunks(fh: Any, checked: Any, limit: int) -> Iterator[str]:
    """The chunks of the next line of ``fh`` (none at the end), its ``\\n`` / ``\\r\\n`` removed."""
    carry = ""
    while True:
        chunk = checked(fh.readline(limit))
        if not chunk:
            if carry:
                yield carry
            return
        chunk = carry + chunk
        carry = ""
        if chunk.endswith("\n"):
            yield chunk[:-2] if chunk.endswith("\r\n") else chunk[:-1]
            return
        if chunk.endswith("\r"):  # maybe the first half of a \r\n line ending: decide with the next chunk
            chunk, carry = chunk[:-1], "\r"
        yield chunk


def open_parquet(path: str, role: str) -> Any:
    """``pyarrow.parquet.ParquetFile(path)``, ``role`` (``"reference"``, ``"input"``) naming the file in
    the errors.

    Raises:
        MissingDependency: pyarrow is not installed (the ``parquet`` extra).
        FileNotFoundError: ``path`` is not a file.
        InputError: pyarrow cannot read it.
    """
    pq = import_optional("pyarrow.parquet", extra="parquet", purpose=f"reading a parquet {role}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{role} {path!r} does not exist")
    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid and friends
        raise InputError(f"{role} {path!r} cannot be read as parquet: {exc}") from exc


def _parquet_items(spec: ReferenceSpec, tally: ReferenceItems) -> Iterator[str]:
    pf = open_parquet(spec.path, "reference")
    names = list(pf.schema_arrow.names)
    missing = [c for c in spec.columns if c not in names]
    if missing:
        raise InputError(f"reference {spec.path!r} has no column {missing[0]!r}; available columns: {names}")
    repeated = [c for c in spec.columns if names.count(c) > 1]
    if repeated:
        raise InputError(f"reference {spec.path!r} has {names.count(repeated[0])} columns named "
                         f"{repeated[0]!r}; a reference column must be named once")
    return _parquet_rows(pf, spec, tally)


def _parquet_rows(pf: Any, spec: ReferenceSpec, tally: ReferenceItems) -> Iterator[str]:
    for batch in pf.iter_batches(columns=list(spec.columns), batch_size=4096):
        tally.rows += int(batch.num_rows)
        for column in spec.columns:
            values = batch.column(column).to_pylist()
            for i, value in enumerate(values):
                yield from _values(value, spec.path, column, tally.rows - int(batch.num_rows) + i, tally)


def _values(value: Any, path: str, column: str, row: int, tally: ReferenceItems) -> Iterator[str]:
    if value is None:
        tally.nulls += 1
        return
    if isinstance(value, str):
        tally.items += 1
        yield value
        return
    if isinstance(value, list):
        for v in value:
            yield from _values(v, path, column, row, tally)
        return
    raise InputTypeError(f"reference {path!r}: column {column!r} row {row} holds {type(value).__name__}; "
                         "expected strings or lists of strings")

