"""``packing-theory census``: document lengths of many input shards, in parallel and resumable.

``packing-theory census --parquet data/*.parquet --workers 0`` (one process per CPU)
writes ``census-report/lengths.npy`` and ``census-report/census.json`` (per-input documents,
tokens and SHA-256s, the tokenizer's identity, which worker computed each
part); ``--hashes`` adds per-document byte lengths and text hashes. A rerun
into the same ``--out`` reuses every verified part in ``DIR/parts/`` and
recomputes only the rest ("reused k, computed m"). ``--executor
dask://HOST:PORT`` sends the tasks to a Dask scheduler (``pip install
"packing-theory[distributed]"``).

Exit status: 0 done; 2 bad usage or input (one line naming the option or the
file); 3 a task could not be completed on any attempt (the finished parts are
kept: rerun to resume).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import InputError
from ._options import add_options
from ._paths import named_inputs

CENSUS_FORMATS = ("text", "jsonl", "parquet", "hf", "shards")
"""The --data formats a census reads (one task per file; a saved Hugging Face dataset: per Arrow file), in
one run or mixed (each input in its own)."""

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``census`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "census",
        description="Count the BOS-inclusive token length of every document, one task per input file, "
                    "locally or on a Dask cluster; write lengths.npy and census.json to --out; a rerun "
                    "reuses the verified per-file parts in --out/parts and recomputes the rest.",
    )
    add_options(parser, "data", "files-from", "text", "parquet", "shards", "format", "column", "bos",
                "eos-id", "dtype", "split", "tokenizer", "per-line", "encoding", "errors",
                "universal-newlines", "hashes", "executor", "workers", "retries", "out", "force",
                "no-progress", "json")
    parser.set_defaults(run=run)


def _options(args: argparse.Namespace) -> tuple[list[str], Any, str]:
    from dataclasses import replace

    from .._checks import distinct_files
    from ..corpus.readers import plan_inputs
    from ..corpus.readers.hf import hf_data_files
    from ..corpus.text import resolve_bos
    from ..corpus.textcount import load_tokenizer
    from ..distributed.census import CensusOptions
    from ._common import note
    from ._inputs import data_spec

    specs, asked, given_by = data_spec(args)
    plan = plan_inputs(specs, asked)
    distinct_files(given_by, plan.paths)
    kinds = plan.formats
    kind = plan.format  # the one kind, or "mixed" (each input read in its own)
    for other in kinds:
        if other not in CENSUS_FORMATS:
            held = ("holds token ids or text by column" if other in ("mds",) else "already holds token ids")
            named = f" ({plan.first(other)!r})" if kind == "mixed" else ""
            raise InputError(f"census reads {', '.join(CENSUS_FORMATS)} inputs (it tokenizes text, one task "
                             f"per file); {other} data{named} {held}: read it with audit/replay/check --data "
                             f"(--format {other}), which tokenize a text column themselves")
    for name in ("eos_id", "dtype"):
        if getattr(args, name) is not None:
            raise InputError(f"--{name.replace('_', '-')} does not apply to {kind} input")
    if args.split is not None and "hf" not in kinds:
        raise InputError(f"--split applies to a saved Hugging Face DatasetDict, not {kind} input")
    column = args.column or "text"
    if args.column is not None and not set(kinds) & {"jsonl", "parquet", "hf"}:
        raise InputError(f"--column applies to jsonl, parquet and hf input, not {kind}")
    if given_by in ("--data", "--files-from"):
        note("census", f"{given_by} read as {kind} ({plan.reason}): {len(plan.inputs):,} input(s)")
    if args.per_line and "text" not in kinds:
        raise InputError(f"--per-line applies to text input, not {kind}")
    tokenizer_spec = "bytes" if args.tokenizer is None else args.tokenizer
    if args.tokenizer is not None and kinds == ["shards"]:
        raise InputError(f"--tokenizer {args.tokenizer!r} does not apply to shards (already token ids)")
    encoding = "utf-8" if args.encoding is None else args.encoding
    errors = "strict" if args.errors is None else args.errors
    text_options = {"encoding": args.encoding is not None, "errors": args.errors is not None,
                    "universal-newlines": args.universal_newlines}
    wrong = [f"--{k}" for k, v in text_options.items()
             if v and "text" not in kinds and not ("jsonl" in kinds and k == "errors")]
    if wrong:
        raise InputError(f"{', '.join(wrong)} does not apply to {kind} input")
    inputs: list[tuple[str, str]] = []
    for path, fmt in plan.inputs:  # a saved dataset: one task per Arrow file, in its order
        inputs += [(f, fmt) for f in hf_data_files(path, args.split)[1]] if fmt == "hf" else [(path, fmt)]
    paths = [p for p, _ in inputs]
    shards = CensusOptions("shards", "bytes", hashes=args.hashes)
    skipped = f"; {given_by} {plan.skipped_line()}" if plan.skipped else ""  # in the summary line
    if kinds == ["shards"]:
        if args.bos is not None:
            raise InputError("--bos does not apply to shards (their documents store their BOS)")
        return paths, shards, skipped
    try:
        tokenizer = load_tokenizer(tokenizer_spec)
    except InputError as exc:  # "tokenizer 'x': ..." names the option as the command spells it
        raise InputError(f"--{exc}") from exc
    bos, reason = resolve_bos(args.bos or "auto", tokenizer)
    counted = (f"; bos={bos}: {reason}" if not isinstance(tokenizer, str) else "") + skipped
    first: Any = next(k for k in kinds if k != "shards")
    text = CensusOptions(first, tokenizer,
                         per_line=args.per_line, column=column, hashes=args.hashes, bos=bos == "add",
                         encoding=encoding, errors=errors, universal_newlines=args.universal_newlines)
    if len(kinds) == 1:
        return paths, text, counted
    each = [shards if fmt == "shards" else replace(text, kind=fmt) for _, fmt in inputs]  # type: ignore[arg-type]
    return paths, each, counted


def run(args: argparse.Namespace) -> int:
    """Run the census; print "reused k, computed m"; return the exit status."""
    from ..distributed.census import CENSUS_FILES, run_census
    from ..distributed.executors import TaskFailed, import_distributed, parse_executor_spec
    from ..reporting.writer import summary_line
    from ._common import emit_json, workers_from_args
    from ._exit import ExitCode, classify

    if parse_executor_spec(args.executor) != "local":
        import_distributed()  # refuse before anything runs: the ImportError names the extra
    from ..reporting import progress_bar

    paths, options, counted = _options(args)
    workers = workers_from_args("census", args, len(paths))
    bar = progress_bar("census", len(paths), enabled=False if args.no_progress else None, unit="file")
    try:
        result = run_census(paths, options, args.out, executor=args.executor, workers=workers,
                            retries=args.retries, force=args.force, tool="packing-theory census",
                            named=named_inputs(args),
                            progress=None if bar is None else lambda done, total: bar(done))
    except TaskFailed as exc:
        if classify(exc)[0] == ExitCode.USAGE:
            raise  # bad input found by a worker: status 2
        print(f"packing-theory census: could not complete: {exc}; finished parts are kept in "
              f"{args.out}/parts, rerun to resume", file=sys.stderr)
        return 3
    finally:
        if bar is not None:
            bar.close()
    m = result.manifest
    if args.json:
        emit_json(m)
    written = [n for n in CENSUS_FILES if os.path.lexists(os.path.join(args.out, n))]
    skipped = (f"; skipped {m['n_skipped']} input(s) that are not text (--errors {m['errors']}), listed "
               "under 'skipped' in census.json" if m.get("n_skipped") else "")
    print(summary_line("census", f"{m['n_docs']:,} documents, {m['n_tokens']:,} tokens from {m['n_inputs']} "
                                 f"input(s) ({result.summary_line}; executor {m['execution']['executor']})"
                                 f"{counted}{skipped}",
                       outdir=args.out, names=CENSUS_FILES, written=written, run_id=m["run"]["id"]),
          file=sys.stderr)
    return 0
