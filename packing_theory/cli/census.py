"""``packing-theory census``: document lengths of many input shards, in parallel and resumable.

``packing-theory census --parquet data/*.parquet`` (one process per CPU)
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
from ._common import note
from ._exit import ExitCode, classify
from ._inputs import add_data_options, check_input_options, data_paths
from ._paths import named_inputs

CENSUS_FORMATS = ("text", "jsonl", "parquet", "shards")
"""The --data formats a census reads (one task per file)."""

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``census`` subcommand."""
    from ..distributed.dask_client import NO_WORKER_WAIT_S

    parser: argparse.ArgumentParser = sub.add_parser(
        "census", help="lengths (and hashes) of many text / parquet / shard files, parallel and resumable",
        description="Count the BOS-inclusive token length of every document, one task per input file, "
                    "locally or on a Dask cluster; write lengths.npy and census.json to --out; a rerun "
                    "reuses the verified per-file parts in --out/parts and recomputes the rest.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", nargs="+", metavar="FILE",
                     help="plain text files (one document per file, or per line with --per-line)")
    src.add_argument("--parquet", nargs="+", metavar="FILE", help="parquet files (column --text-column)")
    src.add_argument("--shards", nargs="+", metavar="SHARD", help="seed-002 token shards")
    add_data_options(parser, src, encoding=True)
    parser.add_argument("--universal-newlines", action="store_true",
                        help="text: read with newline translation (\\r\\n and \\r as \\n); by default the "
                             "bytes are read as they are, so a bytes count is the file's size")
    parser.add_argument("--tokenizer", default="bytes",
                        help="bytes (UTF-8 bytes, default), chars, whitespace, or module:callable "
                             "returning token ids (as audit --text)")
    parser.add_argument("--per-line", action="store_true", help="--text: one document per non-blank line")
    parser.add_argument("--text-column", default="text", help="--parquet column (default text)")
    parser.add_argument("--hashes", action="store_true",
                        help="also write doc_bytes.npy and doc_hashes.npy (64-bit BLAKE2b of each document)")
    parser.add_argument("--out", default="census-report", metavar="DIR",
                        help="report directory (default ./census-report), checked and locked before anything "
                             "runs; the report's files are swapped in together")
    parser.add_argument("--executor", default="local", metavar="SPEC",
                        help="local (default) or dask://HOST:PORT (a running Dask scheduler; the run "
                             "fails, exit 3, when the scheduler has had no worker for "
                             f"{NO_WORKER_WAIT_S:g} s or goes away)")
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="--executor local: N processes (default 0: one per CPU; 1: in this process)")
    parser.add_argument("--retries", type=int, default=1, metavar="N",
                        help="extra attempts per task (default 1)")
    parser.add_argument("--force", action="store_true",
                        help="replace census-named files in --out that packing-theory did not write")
    parser.add_argument("--no-progress", action="store_true",
                        help="never show a progress bar (shown by default on a terminal)")
    parser.add_argument("--json", action="store_true", help="also print census.json on standard output")
    parser.set_defaults(run=run)


def _options(args: argparse.Namespace) -> tuple[list[str], Any, str]:
    from ..corpus.text import resolve_bos
    from ..distributed.census import CensusOptions
    from ._inputs import load_tokenizer

    if args.workers < 0:
        raise InputError(f"--workers must be >= 0, got {args.workers}")
    if args.retries < 0:
        raise InputError(f"--retries must be >= 0, got {args.retries}")
    check_input_options(args)
    column = args.text_column
    if args.text:
        kind, paths = "text", list(args.text)
    elif args.parquet:
        kind, paths = "parquet", list(args.parquet)
    elif args.shards:
        kind, paths = "shards", list(args.shards)
    else:
        paths, kind, why = data_paths(args)
        if kind not in CENSUS_FORMATS:
            raise InputError(f"census reads {', '.join(CENSUS_FORMATS)} inputs (it tokenizes text, one "
                             f"task per file); {kind} data already holds token ids: read it with "
                             f"audit/replay/check --data (--format {kind})")
        for name in ("eos_id", "dtype", "split"):
            if getattr(args, name) is not None:
                raise InputError(f"--{name.replace('_', '-')} does not apply to {kind} input")
        if args.field is not None:
            if kind not in ("jsonl", "parquet"):
                raise InputError(f"--field applies to jsonl and parquet input, not {kind}")
            column = args.field
        note("census", f"--data read as {kind} ({why}): {len(paths):,} file(s)")
    if args.per_line and kind != "text":
        raise InputError("--per-line applies to --text only")
    if args.text_column != "text" and kind != "parquet":  # it would be ignored: say so
        raise InputError(f"--text-column {args.text_column!r} applies to --parquet only")
    if args.tokenizer != "bytes" and kind == "shards":
        raise InputError(f"--tokenizer {args.tokenizer!r} does not apply to --shards (already token ids)")
    text_options = {"encoding": args.encoding != "utf-8", "errors": args.errors != "strict",
                    "universal-newlines": args.universal_newlines}
    wrong = [f"--{k}" for k, v in text_options.items() if v and (kind not in ("text", "jsonl") or (
        kind == "jsonl" and k != "errors"))]
    if wrong:
        raise InputError(f"{', '.join(wrong)} does not apply to {kind} input")
    if kind == "shards":
        if args.bos is not None:
            raise InputError("--bos does not apply to --shards (seed-002 documents store their BOS)")
        return paths, CensusOptions("shards", "bytes", hashes=args.hashes), ""
    tokenizer = load_tokenizer(args.tokenizer)
    bos, reason = resolve_bos(args.bos or "auto", tokenizer)
    counted = f"; bos={bos}: {reason}" if not isinstance(tokenizer, str) else ""
    return paths, CensusOptions(kind, tokenizer, per_line=args.per_line, column=column,  # type: ignore[arg-type]
                                hashes=args.hashes, bos=bos == "add", encoding=args.encoding,
                                errors=args.errors, universal_newlines=args.universal_newlines), counted


def run(args: argparse.Namespace) -> int:
    """Run the census; print "reused k, computed m"; return the exit status."""
    from ..distributed.census import CENSUS_FILES, run_census
    from ..distributed.executors import TaskFailed, import_distributed, parse_executor_spec
    from ..reporting.writer import summary_line
    from ._common import emit_json

    if parse_executor_spec(args.executor) != "local":
        import_distributed()  # refuse before anything runs: the ImportError names the extra
    from ..reporting import progress_bar

    paths, options, counted = _options(args)
    bar = progress_bar("census", len(paths), enabled=False if args.no_progress else None, unit="file")
    try:
        result = run_census(paths, options, args.out, executor=args.executor, workers=args.workers,
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
