"""The corpus a command reads: ``--data PATH... [--format F]`` (or an alias) through ``open_corpus``.

``--data`` takes files, directories and glob patterns, of one format or
several (each input read by its own reader, in order:
:func:`~packing_theory.corpus.readers.plan_inputs`; the files a directory walk
skips as not data are listed on standard error in one line);
``--files-from FILE`` reads them from a file (one per line); ``--format``
names the format of every input or, by default, each input's is detected
from its path. The aliases name ``--data`` with its
format: ``--lengths F`` is ``--data F --format lengths``, ``--shards S...``
``--format shards``, ``--parquet F...`` ``--format parquet`` and ``--text F...``
``--format text`` (``--format parquet`` for ``.parquet`` files).
:func:`corpus_from_args` opens the corpus with
:func:`packing_theory.orchestration.corpus.open_corpus` — the same call a Python
user makes — with the reader options (``--column --bos --eos-id --dtype --split
--tokenizer --per-line --encoding --errors``) and the data-source options
(``--labels --labels-manifest --source-column --source-from --mixture
--funnel``). A reader option the format does not use is refused, naming it
(the formats' options are :data:`packing_theory.corpus.readers.FORMAT_OPTIONS`); with inputs of several
formats, an option none of them uses.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from typing import TYPE_CHECKING, Any

from .._checks import distinct_files
from ..errors import InputError

if TYPE_CHECKING:
    from ..orchestration.corpus import Corpus

__all__ = ["check_source_options", "corpus_from_args", "data_spec", "read_files_from"]

_ALIASES = (("lengths", "lengths"), ("shards", "shards"), ("text", "text"), ("parquet", "parquet"))

_READER_OPTIONS = (  # (attribute, flag, the reader's option name)
    ("column", "--column", "field"), ("bos", "--bos", "bos"), ("eos_id", "--eos-id", "eos_id"),
    ("dtype", "--dtype", "dtype"), ("split", "--split", "split"), ("tokenizer", "--tokenizer", "tokenizer"),
    ("per_line", "--per-line", "per_line"), ("encoding", "--encoding", "encoding"),
    ("errors", "--errors", "errors"),
)

_ORIGINS = ("labels", "labels_manifest", "source_column", "source_from")


def read_files_from(path: str) -> list[str]:
    """The non-blank, non-comment lines of ``path`` (``-``: standard input), stripped."""
    if path == "-":
        lines = sys.stdin.read().splitlines()
    else:  # a regular file (a FIFO or a device is refused before reading), a path per line
        from .._files import read_lines

        if os.path.isdir(path):
            raise InputError(f"--files-from {path!r} is a directory; give a file listing one path per line")
        lines = [line for _, line in read_lines(path, "--files-from", max_line=1 << 16)]
    out = []
    for number, line in enumerate(lines, 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if not glob.has_magic(entry) and not os.path.lexists(entry):  # named by its line, not as --data
            raise InputError(f"--files-from {path!r} line {number}: {entry!r} does not exist")
        out.append(entry)
    if not out:
        raise InputError(f"--files-from {path!r} lists no paths")
    return out


def data_spec(args: argparse.Namespace) -> tuple[list[str], str, str]:
    """``(paths or patterns, format, the option that named them)`` of the input options.

    >>> data_spec(argparse.Namespace(lengths="l.npy", format="auto"))
    (['l.npy'], 'lengths', '--lengths')
    >>> data_spec(argparse.Namespace(text=["a.parquet"], format="auto"))
    (['a.parquet'], 'parquet', '--text')
    """
    for key, fmt in _ALIASES:
        value = getattr(args, key, None)
        if not value:
            continue
        if getattr(args, "format", "auto") != "auto":
            raise InputError(f"--format applies to --data; --{key} already names {fmt} data")
        paths = [value] if isinstance(value, str) else [os.fspath(v) for v in value]
        if key == "text":
            parquet = [p for p in paths if p.endswith(".parquet")]
            if parquet and len(parquet) != len(paths):
                raise InputError("--text mixes .parquet and plain text files; give one kind")
            fmt = "parquet" if parquet else "text"
        for p in paths:
            if os.path.isdir(p):
                raise InputError(f"{fmt} file {p!r} is a directory (--{key} takes files; --data takes a "
                                 "directory)")
        distinct_files(f"--{key}", paths)  # a file named twice would be read twice
        return paths, fmt, f"--{key}"
    if getattr(args, "data", None):
        return list(args.data), args.format, "--data"
    if getattr(args, "files_from", None):
        return read_files_from(args.files_from), args.format, "--files-from"
    raise InputError("give --data PATH... (or --lengths, --shards, --text, --parquet or --files-from)")


def check_source_options(args: argparse.Namespace) -> None:
    """Refuse conflicting or dangling data-source options before anything is read (naming them)."""
    given = [f"--{k.replace('_', '-')}" for k in _ORIGINS if getattr(args, k, None)]
    if "--labels-manifest" in given and "--source-from" in given:  # a census's inputs, by dir or file
        given.remove("--source-from")
    if len(given) > 1:
        raise InputError(f"give one origin of source labels, got {', '.join(given)}")
    if given and getattr(args, "demo", False):
        raise InputError(f"{given[0]} labels your corpus; --demo has no source labels")
    if not given:
        dangling = [f"--{k.replace('_', '-')}" for k in ("mixture", "mixture_blocks", "drift_threshold")
                    if getattr(args, k, None) is not None]
        if dangling:
            raise InputError(f"{dangling[0]} needs source labels: give --labels, --labels-manifest, "
                             "--source-column or --source-from")
    if getattr(args, "funnel", None) and getattr(args, "world_size", None) is not None:
        raise InputError("--funnel with --world-size: the per-rank audit reads the raw inputs; apply the "
                         "funnel without --world-size")


def _check_reader_options(args: argparse.Namespace, fmt: str | list[str], given_by: str,
                          first: dict[str, str] | None = None) -> None:
    """Refuse the reader options that ``fmt`` does not use (its :data:`FORMAT_OPTIONS`); with several
    formats, the options none of them uses (``first``: the first input of each, named when ``--bos`` is
    missing for a token format)."""
    from ..corpus.readers import FORMAT_OPTIONS
    from ..orchestration.corpus import TOKEN_FORMATS

    kinds = [fmt] if isinstance(fmt, str) else list(fmt)
    data = ", ".join(kinds)
    uses = frozenset().union(*(FORMAT_OPTIONS[k] for k in kinds))
    wrong = []
    for attr, flag, key in _READER_OPTIONS:
        value = getattr(args, attr, None)
        if value is None or value is False or key in uses:
            continue
        wrong.append(flag if isinstance(value, bool) else f"{flag} {value!r}")
    if wrong:
        named = sorted(opt for _, opt, k in _READER_OPTIONS if k in uses)
        what = f"it takes {', '.join(named)}" if named else "it takes no reader option"
        raise InputError(f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to {data} data "
                         f"({given_by}); {what}")
    if getattr(args, "errors", None) == "skip":
        raise InputError("--errors skip applies to the census (which lists what it skips); use strict or "
                         "replace here")
    for kind in kinds:  # a token format needs --bos, mixed or not
        if kind in TOKEN_FORMATS and getattr(args, "bos", None) in (None, "auto"):
            where = f" ({given_by} {first[kind]!r})" if first and len(kinds) > 1 else ""
            raise InputError(f"--bos {'auto does not apply' if args.bos else 'is required'}: {kind} data"
                             f"{where} stores token ids, so say how BOS is counted: --bos included (each "
                             "stored document holds its BOS or EOS) or --bos add (one more token per "
                             "document)")


def corpus_from_args(args: argparse.Namespace, *, say: str | None = None) -> Corpus:
    """The corpus the input and data-source options name (:func:`~packing_theory.orchestration.open_corpus`).

    ``say``: print ``"data: <format> (<how it was found>): <what was read>"`` on standard error, prefixed
    by ``say``, when the format was not named by an alias (``replay`` and ``check``; a report records it).

    Raises:
        InputError: see :func:`data_spec` and :func:`check_source_options`; a reader option the format
            does not use; the readers' own errors.
    """
    from ..corpus.readers import plan_inputs
    from ..orchestration.corpus import open_corpus

    check_source_options(args)
    specs, asked, given_by = data_spec(args)
    plan = plan_inputs(specs, asked)
    distinct_files(given_by, plan.paths)
    _check_reader_options(args, plan.formats, given_by, {k: plan.first(k) for k in plan.formats})
    if plan.format == "mixed" and getattr(args, "source_column", None):
        raise InputError(f"--source-column reads one format's field or column; {given_by} holds "
                         f"{', '.join(plan.formats)} inputs: label them with --source-from dir|file or "
                         "--labels")
    options: dict[str, Any] = {}
    for attr, _, key in _READER_OPTIONS:
        value = getattr(args, attr, None)
        if value is not None and value is not False:
            options["column" if key == "field" else attr] = value
    if "tokenizer" in options:
        from ..corpus.textcount import load_tokenizer

        try:
            options["tokenizer"] = load_tokenizer(options["tokenizer"])
        except InputError as exc:  # "tokenizer 'x': ..." names the option as the command spells it
            raise InputError(f"--{exc}") from exc
    for key in (*_ORIGINS, "mixture", "funnel"):
        value = getattr(args, key, None)
        if value is not None:
            options[key] = value
    corpus = open_corpus(specs, format=asked, **options)
    if plan.skipped:  # never dropped silently: one line, and the report's corpus.read (Corpus.described)
        print(f"{given_by}: {plan.skipped_line()}", file=sys.stderr)
    if getattr(args, "pre_truncate", None) is not None:  # --config: a framework that truncates first
        from ._config import truncate_corpus

        corpus = truncate_corpus(corpus, args.pre_truncate)
    if getattr(args, "train_split", None) is not None:  # --config: Megatron's --split of one dataset
        from ._config import split_corpus

        corpus = split_corpus(corpus, args.train_split)
    if say is not None and given_by in ("--data", "--files-from"):
        print(f"{say}: {corpus.described}", file=sys.stderr)
    return corpus
