"""``--data PATH``: one input option for every command, with the format named or detected and said.

``--data`` takes files, directories and glob patterns (``--files-from FILE``
reads the paths, one per line, from a file); ``--format`` names the format
or, by default, it is detected from the paths
(:func:`~packing_theory.corpus.readers.detect_format`) and the detection is
printed on standard error with what was read. The readers are those of
:mod:`packing_theory.corpus.readers`; their options (``--bos``,
``--eos-id``, ``--dtype``, ``--field``, ``--split``, ``--tokenizer``,
``--per-line``, ``--encoding``, ``--errors``) are refused, with a line
naming them, where the input does not use them.

:func:`load_tokenizer` imports a ``module:callable`` tokenizer with the
working directory on the import path, so ``--tokenizer mytok:encode`` finds
``./mytok.py`` however the command was started.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import distinct_files
from ..corpus.readers import FORMATS, expand_inputs, open_data
from ..corpus.text import BOS_CHOICES
from ..corpus.textcount import BUILTIN_TOKENIZERS, BuiltinTokenizer
from ..errors import InputError
from ._common import existing_path

__all__ = [
    "TOKEN_FORMATS", "add_data_options", "add_lengths_or_data", "check_input_options", "data_inputs",
    "data_paths", "lengths_from_args", "load_data", "load_tokenizer", "read_files_from",
]

TOKEN_FORMATS = ("megatron", "olmo", "hf", "mds")
"""Formats that store token ids (``--bos`` must be given for them)."""

_DATA_ONLY = ("bos", "eos_id", "dtype", "field", "split")


def load_tokenizer(spec: str) -> BuiltinTokenizer | Callable[[str], Any]:
    """A built-in tokenizer name (counted in chunks, never materialised) or an imported ``module:callable``.

    The working directory is put on ``sys.path`` (first, as ``python -m`` does)
    before the import, so a tokenizer module beside the data is found without
    ``PYTHONPATH=.``; process-pool workers started afterwards inherit it.

    >>> load_tokenizer("whitespace")
    'whitespace'
    >>> load_tokenizer("nocolon")
    Traceback (most recent call last):
    packing_theory.InputError: --tokenizer must be bytes, chars, whitespace or module:callable, got 'nocolon'
    """
    for name in BUILTIN_TOKENIZERS:
        if spec == name:
            return name
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise InputError(f"--tokenizer must be bytes, chars, whitespace or module:callable, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or anything the module raises while importing
        raise InputError(f"--tokenizer {spec!r}: cannot import module {module_name!r} from the working "
                         f"directory or the installed packages ({type(exc).__name__}: {exc})") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InputError(f"--tokenizer {spec!r}: {module_name}.{attr} is not a callable")
    return fn  # type: ignore[no-any-return]


def add_data_options(parser: argparse.ArgumentParser, group: Any = None, *, tokenizer: bool = False,
                     encoding: bool = False) -> None:
    """Add ``--data`` and ``--files-from`` (to ``group`` when given: a mutually exclusive input group),
    ``--format``, ``--bos``, ``--eos-id``, ``--dtype``, ``--field``, ``--split``, and ``--tokenizer``
    (when the command has none) and ``--encoding`` / ``--errors`` when asked."""
    target = parser if group is None else group
    target.add_argument("--data", nargs="+", metavar="PATH",
                        help="input files, directories or glob patterns in any supported format "
                             f"({', '.join(FORMATS)}; see --format)")
    target.add_argument("--files-from", metavar="FILE",
                        help="like --data, with the paths read from FILE (one per line; '-' is standard "
                             "input)")
    parser.add_argument("--format", default="auto", choices=("auto", *FORMATS),
                        help="--data format (default auto: detected from the paths and printed)")
    parser.add_argument("--bos", choices=BOS_CHOICES, default=None,
                        help="--data: how BOS is counted. Token formats (megatron, olmo, hf, mds ids) need "
                             "it: 'included' = each stored document already holds its BOS or EOS/EOD "
                             "(length = stored tokens), 'add' = length = stored tokens + 1. Text: 'auto' "
                             "(default) asks the tokenizer on a probe whether it prepends BOS")
    parser.add_argument("--eos-id", type=int, default=None, metavar="ID",
                        help="--format olmo: the EOS id ending each document (else its .csv.gz metadata)")
    parser.add_argument("--dtype", default=None,
                        help="--format olmo: the ids' dtype of a raw array (uint16, uint32); mds: of a "
                             "bytes column")
    parser.add_argument("--field", default=None, metavar="NAME",
                        help="--data: the field or column of the documents (jsonl/parquet: text; hf: "
                             "input_ids, else text; mds: tokens/input_ids/text)")
    parser.add_argument("--split", default=None, help="--format hf: the split of a saved DatasetDict")
    if tokenizer:
        parser.add_argument("--tokenizer", default="bytes",
                            help="text inputs: bytes (UTF-8 bytes, default), chars, whitespace, or "
                                 "module:callable (found from the working directory too)")
    if encoding:
        parser.add_argument("--encoding", default="utf-8", help="text files: their encoding (default utf-8)")
        parser.add_argument("--errors", default="strict", choices=("strict", "replace", "skip"),
                            help="a file that is not text in --encoding, or is binary: strict (default) "
                                 "stops at the first, naming it; replace decodes bad bytes as U+FFFD; skip "
                                 "leaves it out, listed and counted in census.json")


def read_files_from(path: str) -> list[str]:
    """The non-blank, non-comment lines of ``path`` (``-``: standard input), stripped."""
    if path == "-":
        lines = sys.stdin.read().splitlines()
    else:  # a regular file (a FIFO or a device is refused before reading), a path per line
        from .._files import read_lines

        if os.path.isdir(path):
            raise InputError(f"--files-from {path!r} is a directory; give a file listing one path per line")
        lines = [line for _, line in read_lines(path, "--files-from", max_line=1 << 16)]
    out = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not out:
        raise InputError(f"--files-from {path!r} lists no paths")
    return out


def data_paths(args: argparse.Namespace) -> tuple[list[str], str, str]:
    """``(inputs, format, how the format was found)`` of ``--data`` / ``--files-from``."""
    specs = list(args.data) if getattr(args, "data", None) else read_files_from(args.files_from)
    return expand_inputs(specs, args.format)


def _given_data(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "data", None) or getattr(args, "files_from", None))


def check_input_options(args: argparse.Namespace) -> None:
    """Refuse the input options that the chosen input would ignore (one line naming them).

    ``--format``, ``--bos``, ``--eos-id``, ``--dtype``, ``--field``, ``--split``
    apply to ``--data`` only; ``--tokenizer`` / ``--per-line`` / ``--text-column``
    do not apply to ``--lengths``, ``--shards`` or ``--demo``. A file named twice
    in ``--shards`` / ``--text`` / ``--parquet`` / ``--eval-shards`` (also through a
    symlink or a hard link) is refused.
    """
    for key in ("shards", "text", "parquet", "eval_shards"):  # a file named twice would be read twice
        if getattr(args, key, None):
            distinct_files(f"--{key.replace('_', '-')}", [os.fspath(p) for p in getattr(args, key)])
    data = _given_data(args)
    text = bool(getattr(args, "text", None) or getattr(args, "parquet", None))
    if not data:
        used = [f"--{k.replace('_', '-')}" for k in _DATA_ONLY if getattr(args, k, None) is not None]
        if getattr(args, "format", "auto") != "auto":
            used.insert(0, "--format")
        if text and getattr(args, "bos", None) is not None and used == ["--bos"]:
            used = []  # --bos also tells --text how its tokenizer counts BOS
        if used:
            raise InputError(f"{', '.join(used)} appl{'ies' if len(used) == 1 else 'y'} to --data only")
    if data or text:
        if data and getattr(args, "text_column", "text") != "text":
            raise InputError("--text-column applies to --text / --parquet; with --data use --field")
        return
    ignored = []
    if getattr(args, "tokenizer", "bytes") != "bytes":
        ignored.append(f"--tokenizer {args.tokenizer!r}")
    if getattr(args, "per_line", False):
        ignored.append("--per-line")
    if getattr(args, "text_column", "text") != "text":
        ignored.append(f"--text-column {args.text_column!r}")
    if ignored:
        given = "--lengths" if getattr(args, "lengths", None) else (
            "--shards" if getattr(args, "shards", None) else "--demo")
        raise InputError(f"{', '.join(ignored)} does not apply to {given} (its lengths are already counted); "
                         "it applies to --text, --parquet and --data text inputs")


def load_data(args: argparse.Namespace, *, quiet: bool = False) -> tuple[npt.NDArray[np.int64], str, Any]:
    """The lengths of ``--data`` / ``--files-from``, a label, and the reader; says what was read.

    One line on standard error names the format (and whether it was detected)
    and what the reader read.
    """
    check_input_options(args)
    paths, fmt, why = data_paths(args)
    spec = getattr(args, "tokenizer", "bytes")
    options: dict[str, Any] = {"bos": args.bos, "eos_id": args.eos_id, "dtype": args.dtype,
                               "field": args.field, "split": args.split}
    if spec != "bytes" or fmt in ("jsonl", "text", "parquet"):
        options["tokenizer"] = load_tokenizer(spec)
    if getattr(args, "per_line", False):
        options["per_line"] = True
    if getattr(args, "encoding", "utf-8") != "utf-8":
        options["encoding"] = args.encoding
    if getattr(args, "errors", "strict") not in ("strict", None):
        if args.errors == "skip":
            raise InputError("--errors skip applies to the census (which lists what it skips); use strict "
                             "or replace here")
        options["errors"] = args.errors
    if fmt in TOKEN_FORMATS and options["bos"] == "auto":
        raise InputError(f"--bos auto does not apply to {fmt} token ids: give --bos included or --bos add")
    reader = open_data(paths, fmt, **options)
    lengths = reader.lengths()
    if not quiet:  # replay / check; the report-writing commands record it in their report instead
        print(f"data: {fmt} ({why}): {reader.describe()}", file=sys.stderr)
    first = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
    return lengths, f"{fmt} {first}", reader


def data_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--data`` / ``--files-from`` and the data options name, for a report's config hash."""
    keys = ("data", "files_from", "format", "bos", "eos_id", "dtype", "field", "split", "tokenizer",
            "per_line", "encoding", "errors")
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def add_lengths_or_data(parser: argparse.ArgumentParser) -> None:
    """A required choice of ``--lengths FILE.npy`` or ``--data`` / ``--files-from``, with the data options."""
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--lengths", type=existing_path("--lengths"), metavar="FILE.npy",
                     help="1-D integer .npy array of BOS-inclusive document lengths")
    add_data_options(parser, src, tokenizer=True)
    parser.add_argument("--per-line", action="store_true", help="--data text files: one document per line")


def lengths_from_args(args: argparse.Namespace) -> npt.NDArray[np.int64]:
    """The lengths of ``--lengths`` or ``--data`` (what :func:`add_lengths_or_data` added)."""
    check_input_options(args)
    if args.lengths:
        from ..lengths import load_lengths

        return load_lengths(args.lengths)
    return load_data(args)[0]
