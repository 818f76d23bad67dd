"""Token counts of the built-in tokenizers, streamed: no document is ever held whole.

The command line's built-in tokenizers only need a *count* per document:

==============  ==============================================================
name            tokens of a document
==============  ==============================================================
``bytes``       its UTF-8 bytes (``len(text.encode("utf-8"))``)
``chars``       its characters (``len(text)``)
``whitespace``  its whitespace-separated words (``len(text.split())``)
==============  ==============================================================

:func:`count_text_files` reads plain text files in chunks of
``chunk_chars`` characters and counts each document (a whole file, or one
non-blank line with ``per_line=True``) as it streams past, so a 300 MB
single-line file costs O(chunk) memory instead of the line plus a list of
300 million token ids. The results equal what the tokenizers give on the
materialised documents (read as :func:`~packing_theory.corpus.iter_text_files`
reads them: no newline translation by default, a line ending at ``\\n`` with its
``\\r\\n`` / ``\\n`` removed); the tests check it.

>>> count_text("two words  here", "whitespace"), count_text("é", "bytes"), count_text("é", "chars")
(3, 2, 1)
"""

from __future__ import annotations

import importlib
import os
import sys
from array import array
from collections.abc import Callable, Iterable
from typing import Any, Literal

from .._checks import check_int
from ..errors import InputError, InputTypeError

__all__ = [
    "BUILTIN_TOKENIZERS",
    "BuiltinTokenizer",
    "NotText",
    "binary_failure",
    "check_errors",
    "count_text",
    "count_text_files",
    "decode_failure",
    "load_tokenizer",
]

BuiltinTokenizer = Literal["bytes", "chars", "whitespace"]
BUILTIN_TOKENIZERS: tuple[BuiltinTokenizer, ...] = ("bytes", "chars", "whitespace")
"""The tokenizers counted here by name."""

_CHUNK = 1 << 20


class NotText(InputError):
    """A file that is not text in the requested encoding, or a binary file (it holds a NUL character).

    ``path`` names the file and ``reason`` says why; the census skips such a
    file with ``errors="skip"`` and lists it.
    """

    def __init__(self, path: str, reason: str, hint: str = "") -> None:
        super().__init__(f"text file {path!r} {reason}{hint}")
        self.path = path
        self.reason = reason


def check_errors(errors: object) -> str:
    """``errors`` checked: ``"strict"`` or ``"replace"`` (the decoding of text files)."""
    if errors not in ("strict", "replace"):
        raise InputError(f"errors must be 'strict' or 'replace', got {errors!r}")
    return errors


def decode_failure(path: str, exc: UnicodeDecodeError, encoding: str) -> NotText:
    """The :class:`NotText` for a decoding error (the bad byte and the encoding named)."""
    bad = exc.object[exc.start : exc.start + 1]
    return NotText(path, f"is not valid {encoding} ({exc.reason}, byte {bytes(bad)!r})")


def binary_failure(path: str, at: int) -> NotText:
    """The :class:`NotText` for a binary file (a NUL character at character ``at``)."""
    return NotText(path, f"is binary, not text (a NUL character at character {at:,})")


def _check_unit(unit: object) -> BuiltinTokenizer:
    if unit not in BUILTIN_TOKENIZERS:
        raise InputError(f"tokenizer must be one of {', '.join(BUILTIN_TOKENIZERS)} here, got {unit!r}")
    return unit


class _Counter:
    """Counts one document fed in pieces (pieces never contain the line separator in per-line mode)."""

    __slots__ = ("blank", "count", "in_word", "pending_cr", "unit")

    def __init__(self, unit: BuiltinTokenizer) -> None:
        self.unit = unit
        self.count = 0
        self.in_word = False  # the previous piece ended inside a word (whitespace unit)
        self.blank = True  # only whitespace so far
        self.pending_cr = False  # per line: a held-back "\r" that may be the start of a "\r\n" ending

    def feed(self, piece: str) -> None:
        if not piece:
            return
        if self.blank and not piece.isspace():
            self.blank = False
        if self.unit == "bytes":
            self.count += len(piece.encode("utf-8"))
        elif self.unit == "chars":
            self.count += len(piece)
        else:
            words = len(piece.split())
            if self.in_word and not piece[0].isspace():
                words -= 1  # the word of the previous piece continues
            self.count += words
            self.in_word = not piece[-1].isspace()

    def feed_line(self, piece: str, at_end: bool) -> None:
        """Feed a piece of a line; ``at_end``: a ``\n`` follows it, so a final ``\r`` is the ending's."""
        if self.pending_cr:
            self.pending_cr = False
            if at_end and not piece:
                return  # the held "\r" and this "\n" are one "\r\n" ending
            self.feed("\r")
        if piece.endswith("\r"):
            piece = piece[:-1]
            if not at_end:
                self.pending_cr = True
        self.feed(piece)

    def close_line(self) -> None:
        """End of input without a final ``\n``: a held ``\r`` is content."""
        if self.pending_cr:
            self.pending_cr = False
            self.feed("\r")

    def reset(self) -> None:
        self.count = 0
        self.in_word = False
        self.blank = True
        self.pending_cr = False


def count_text(text: str, unit: BuiltinTokenizer, *, chunk_chars: int = _CHUNK) -> int:
    """The token count of one in-memory ``text`` under a built-in tokenizer, in O(chunk) extra memory.

    Raises:
        TypeError: ``text`` is not a ``str``.
        ValueError: an unknown ``unit``.
    """
    unit = _check_unit(unit)
    if not isinstance(text, str):
        raise InputTypeError(f"text must be a str, got {type(text).__name__}")
    step = check_int("chunk_chars", chunk_chars, 1)
    counter = _Counter(unit)
    for i in range(0, len(text), step):
        counter.feed(text[i : i + step])
    return counter.count


def count_text_files(
    paths: Iterable[str | os.PathLike[str]],
    unit: BuiltinTokenizer,
    *,
    per_line: bool = False,
    encoding: str = "utf-8",
    chunk_chars: int = _CHUNK,
    errors: str = "strict",
    universal_newlines: bool = False,
) -> array[int]:
    """Token counts (without BOS) of the documents of plain text files, streamed.

    A document is a whole file, or with ``per_line=True`` each non-blank line
    (blank = only whitespace), exactly as :func:`~packing_theory.corpus.iter_text_files`
    yields them with the same ``encoding``, ``errors`` and ``universal_newlines``.
    Memory: O(``chunk_chars``) plus 8 bytes per document.

    Raises:
        FileNotFoundError: a missing file.
        NotText: a file that is not valid ``encoding`` (``errors="strict"``) or is binary (a NUL).
        ValueError: an unknown ``unit`` or ``errors``.
    """
    unit = _check_unit(unit)
    step = check_int("chunk_chars", chunk_chars, 1)
    mode = check_errors(errors)
    newline = None if universal_newlines else "\n"
    out: array[int] = array("q")
    counter = _Counter(unit)
    for path in paths:
        name = os.fspath(path)
        seen = 0
        try:
            with open(name, encoding=encoding, errors=mode, newline=newline) as fh:
                while True:
                    chunk = fh.read(step)
                    if not chunk:
                        break
                    if "\x00" in chunk:
                        raise binary_failure(name, seen + chunk.index("\x00"))
                    seen += len(chunk)
                    if not per_line:
                        counter.feed(chunk)
                        continue
                    parts = chunk.split("\n")
                    for part in parts[:-1]:
                        counter.feed_line(part, True)
                        if not counter.blank:
                            out.append(counter.count)
                        counter.reset()
                    counter.feed_line(parts[-1], False)
        except UnicodeDecodeError as exc:
            raise decode_failure(name, exc, encoding) from exc
        if per_line:
            counter.close_line()
            if not counter.blank:
                out.append(counter.count)
        else:
            out.append(counter.count)
        counter.reset()
    return out


def load_tokenizer(spec: str) -> BuiltinTokenizer | Callable[[str], Any]:
    """A built-in tokenizer name (counted in chunks, never materialised) or an imported ``module:callable``.

    The working directory is put on ``sys.path`` (first, as ``python -m`` does)
    before the import, so a tokenizer module beside the data is found without
    ``PYTHONPATH=.``; process-pool workers started afterwards inherit it.

    >>> load_tokenizer("whitespace")
    'whitespace'
    >>> load_tokenizer("nocolon")
    Traceback (most recent call last):
    packing_theory.InputError: tokenizer must be bytes, chars, whitespace or module:callable, got 'nocolon'
    """
    for name in BUILTIN_TOKENIZERS:
        if spec == name:
            return name
    module_name, _, attr = str(spec).partition(":")
    if not module_name or not attr:
        raise InputError(f"tokenizer must be bytes, chars, whitespace or module:callable, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or anything the module raises while importing
        raise InputError(f"tokenizer {spec!r}: cannot import module {module_name!r} from the working "
                         f"directory or the installed packages ({type(exc).__name__}: {exc})") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InputError(f"tokenizer {spec!r}: {module_name}.{attr} is not a callable")
    return fn  # type: ignore[no-any-return]

