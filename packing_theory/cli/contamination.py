"""``packing-theory contamination``: n-gram overlap of training documents with reference texts.

``packing-theory contamination --manifest mix/manifest.json --reference
gsm8k-train.parquet mmlu-dev.parquet --reference-column question --tokenizer
mytok:encode`` hashes every 13-token window of every shard document (without
its BOS) and of every reference item, and writes ``contamination.json``,
``contamination.md``, ``contamination.html``, the list of hit documents
``hit_documents.jsonl`` (each by its raw corpus index, name and source), the
exclusion mask ``exclude.u8`` (one byte per document, 1 = exclude) and its
sidecar ``exclude.json`` to ``--out``. Counts, indices and names only: no
matched text is ever printed or written.

The training corpus is ``--manifest``, ``--shards``, ``--text`` or, as for
``audit``, ``--data`` / ``--files-from`` in any format that holds token ids
or text (``--format``, ``--bos``, ``--field``, ... read by the same readers);
``--labels``, ``--source-column`` or ``--source-from`` attribute hits to data
sources. ``--executor`` / ``--workers`` scan the inputs in parallel, one input
per task, with the serial scan's result.

Exit status (the contract of :mod:`packing_theory.cli._exit`): 0 every input
and reference listed was read and no window matched; 1 everything listed was
read and overlap was found; 2 bad usage or input; 3 not measured (an input or
reference missing or unreadable, a reference with fewer rows than declared
or no gram, no document or no gram scanned) — "not measured" wins over a
finding, whose counts and hit documents are still in the report. The report
is written in cases 0, 1 and 3; the mask only when everything was measured.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._checks import distinct_files
from ..contamination import DEFAULT_MEMORY_GRAMS, DEFAULT_N, EXCLUDE_RULES, CorpusInput, ReferenceSpec
from ..contamination.report import ContaminationReport
from ..corpus.labels import SOURCE_FROM
from ..errors import Finding, InputError, NotMeasured

__all__ = ["REPORT_FILES", "register", "run"]

REPORT_FILES: tuple[str, ...] = ("contamination.html", "contamination.json", "contamination.md",
                                 "hit_documents.jsonl", "exclude.u8", "exclude.json")
"""The files of a contamination report directory."""

_ID_FORMATS = ("megatron", "olmo", "hf", "mds")  # formats whose documents may be token ids
_SOURCE_FORMATS = ("jsonl", "parquet", "hf")


def register(sub: Any) -> None:
    """Add the ``contamination`` subcommand."""
    from ._inputs import add_data_options

    parser: argparse.ArgumentParser = sub.add_parser(
        "contamination", help="n-gram overlap of training documents with reference texts; exit 1 found, "
                              "3 not measured",
        description="Hash every N-token window (default 13) of the training documents (seed-002 shards, "
                    "texts, or --data in any format audit reads) and of the reference texts, count matched "
                    "grams, documents with any hit, majority-hit documents and per-source hit fractions, "
                    "list "
                    "the hit documents and write a per-document exclusion mask. Exit 0 all read and no "
                    "overlap, 1 all read and overlap found, 2 bad usage, 3 not measured.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--manifest", metavar="MANIFEST.json",
                     help="seed-002 shards listed in a manifest (a single-source shard names its source)")
    src.add_argument("--shards", nargs="+", metavar="SHARD", help="seed-002 token shard files")
    src.add_argument("--text", nargs="+", metavar="FILE",
                     help="plain text files (one document per file, or per line with --per-line) "
                          "and/or .parquet files (column --text-column)")
    add_data_options(parser, src)
    parser.add_argument("--per-line", action="store_true",
                        help="--text and --data text files: one document per non-blank line")
    parser.add_argument("--text-column", default=None, metavar="COL",
                        help="--text parquet column (default text); with --data use --field")
    parser.add_argument("--reference", nargs="+", action="extend", required=True, metavar="FILE",
                        help="reference sets (repeatable): plain text files or .parquet files; the "
                             "library ships no benchmark")
    parser.add_argument("--reference-column", default=None, metavar="COL[,COL...]",
                        help="parquet references: the columns holding strings or lists of strings "
                             "(default text)")
    parser.add_argument("--reference-per-line", action="store_true",
                        help="plain-text references: one item per non-blank line (default: the whole file)")
    parser.add_argument("--reference-rows", default=None, metavar="N[,N...]",
                        help="declared rows of each --reference, in order (a dataset server's size); a "
                             "reference that yields another number is 'not measured'")
    parser.add_argument("--tokenizer", default=None,
                        help="how references (and texts) become token ids: bytes (default for texts), "
                             "chars, whitespace, or module:callable; required with --shards, --manifest and "
                             "--data formats that may hold token ids (the tokenizer that wrote them, adding "
                             "no BOS)")
    parser.add_argument("--n", type=int, default=DEFAULT_N, metavar="N",
                        help=f"window length in tokens (default {DEFAULT_N})")
    parser.add_argument("--memory-grams", type=int, default=DEFAULT_MEMORY_GRAMS, metavar="G",
                        help=f"the most reference grams held in memory at once (default "
                             f"{DEFAULT_MEMORY_GRAMS:,}; about 12 bytes each, see docs/contamination.rst); "
                             "beyond, the index goes to disk and the inputs are scanned once per pass")
    parser.add_argument("--index-dir", default=None, metavar="DIR",
                        help="where a disk index goes (a fresh subdirectory, removed afterwards; default: "
                             "the "
                             "system's temporary directory); on a shared filesystem for a Dask --executor")
    parser.add_argument("--exclude", choices=EXCLUDE_RULES, default="any",
                        help="which documents the mask excludes: any matched window (default, seed 002) or "
                             "majority (more than half of the windows matched)")
    g = parser.add_argument_group("data sources")
    g.add_argument("--labels", metavar="FILE",
                   help="one source label per document (one per line, or a .json list), in corpus order")
    g.add_argument("--source-column", metavar="NAME",
                   help="--data jsonl / parquet / hf, or --text .parquet: the column (field) holding each "
                        "document's source")
    g.add_argument("--source-from", choices=SOURCE_FROM,
                   help="a document's source is its input's directory (dir) or file (file)")
    parser.add_argument("--executor", default="local", metavar="SPEC",
                        help="where the scan tasks run: local (default; --workers processes) or "
                             "dask://HOST:PORT (one input per task)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="--executor local: N processes (default 1: in this process; 0: one per CPU)")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument("--out", default="contamination-report", metavar="DIR",
                        help="report directory (default ./contamination-report), checked and locked before "
                             "the scan")
    parser.add_argument("--force", action="store_true",
                        help="replace report-named files in --out that packing-theory did not write")
    parser.add_argument("--json", action="store_true", help="also print the JSON report on standard output")
    parser.set_defaults(run=run)


# --------------------------------------------------------------------------- options


@contextlib.contextmanager
def _option_path(option: str, path: object) -> Iterator[None]:
    """Name ``option`` and its path in any ``OSError`` raised inside (the class and errno are kept)."""
    try:
        yield
    except OSError as exc:
        if getattr(exc, "option_named", False):
            raise
        message = f"{option} {os.fspath(path)!r}: {exc.strerror or exc}"  # type: ignore[call-overload]
        named = type(exc)(message) if exc.errno is None else type(exc)(exc.errno, message)
        named.option_named = True  # type: ignore[attr-defined]
        raise named from exc


def _ints(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(p.replace("_", "")) for p in text.split(",")]
    except ValueError:
        raise InputError(f"{option} must be comma-separated ints, got {text!r}") from None
    if any(v < 0 for v in values):
        raise InputError(f"{option} must be >= 0, got {text!r}")
    return values


def _references(args: argparse.Namespace) -> list[ReferenceSpec]:
    paths = [os.fspath(p) for p in args.reference]
    parquet = [p.endswith(".parquet") for p in paths]
    if args.reference_column is not None and not any(parquet):
        raise InputError(f"--reference-column {args.reference_column!r} applies to .parquet references only")
    if args.reference_per_line and all(parquet):
        raise InputError("--reference-per-line applies to plain-text references only")
    columns = tuple(c.strip() for c in (args.reference_column or "text").split(",") if c.strip())
    if not columns:
        raise InputError(f"--reference-column got {args.reference_column!r}, no column name")
    rows = _ints(args.reference_rows, "--reference-rows")
    if rows is not None and len(rows) != len(paths):
        raise InputError(f"--reference-rows gives {len(rows)} row count(s) for {len(paths)} --reference "
                         "file(s): give one per reference, in order")
    if len(set(paths)) != len(paths):
        raise InputError(f"--reference lists {next(p for p in paths if paths.count(p) > 1)!r} twice")
    distinct_files("--reference", [p for p in paths if os.path.exists(p)])
    return [ReferenceSpec(p, columns=columns, per_line=args.reference_per_line and not pq,
                          declared_rows=None if rows is None else rows[i])
            for i, (p, pq) in enumerate(zip(paths, parquet, strict=True))]


def _manifest_inputs(path: str) -> tuple[list[CorpusInput], int, Any]:
    from .._files import confined
    from ..corpus.manifest import read_manifest

    with _option_path("--manifest", path):
        manifest = read_manifest(path)
    root = os.path.dirname(os.path.abspath(path))
    inputs = []
    for entry in manifest["shards"]:
        counts = entry.get("source_counts") or {}
        present = [label for label, k in counts.items() if int(k) > 0]
        source = present[0] if len(present) == 1 else None
        shard = confined(root, entry["path"], what=f"--manifest {path!r} shard path")
        inputs.append(CorpusInput(shard, "shard", source=source, name=entry["path"]))
    distinct_files(f"--manifest {path!r} shard", [i.path for i in inputs if os.path.exists(i.path)])
    return inputs, int(manifest["vocab"]), manifest.get("tokenizer")


def _shard_vocab(paths: list[str]) -> int | None:
    from ..corpus.shards import read_shard

    vocab = None
    for p in paths:
        try:
            v = read_shard(p).vocab
        except (OSError, ValueError):
            continue  # recorded as unread by the scan
        vocab = v if vocab is None else max(vocab, v)
    return vocab


def _data_inputs(args: argparse.Namespace) -> tuple[list[CorpusInput], str]:
    """``--data`` / ``--files-from``: one input per file (or dataset directory), read by its format's
    reader."""
    from ..corpus.readers import FORMAT_OPTIONS
    from ._inputs import data_paths

    with _option_path("--files-from", args.files_from or ""):
        paths, fmt, why = data_paths(args)
    if fmt == "lengths":
        raise InputError(f"--data {paths[0]!r} is a lengths array ({why}): it holds document lengths, not "
                         "token ids; contamination reads token ids or text (a raw or .npy token array is "
                         "--format olmo with --eos-id or its metadata file)")
    given = {k: getattr(args, k) for k in ("bos", "eos_id", "dtype", "field", "split")
             if getattr(args, k) is not None}
    if args.per_line:
        given["per_line"] = True
    extra = sorted(set(given) - FORMAT_OPTIONS[fmt])
    if extra:
        flags = ", ".join("--" + e.replace("_", "-") for e in extra)
        raise InputError(f"{flags} does not apply to {fmt} data "
                         f"(it uses {', '.join(sorted(FORMAT_OPTIONS[fmt])) or 'no options'})")
    if fmt in ("megatron", "olmo") and args.bos not in ("included", "add"):
        raise InputError(f"--data {fmt} holds token ids: say how BOS is counted: --bos included (the stored "
                         "documents hold their BOS or EOS/EOD) or --bos add, got "
                         f"{'no --bos' if args.bos is None else repr(args.bos)}")
    if fmt in _ID_FORMATS and args.tokenizer is None:
        raise InputError(f"--data {fmt} may hold token ids: give --tokenizer (module:callable, the tokenizer "
                         "that wrote them, adding no BOS; or a built-in for a text column) to tokenize the "
                         "references the same way")
    if args.source_column is not None and fmt not in _SOURCE_FORMATS:
        raise InputError(f"--source-column reads a {', '.join(_SOURCE_FORMATS)} column; --data is {fmt}")
    kind = "shard" if fmt == "shards" else fmt
    inputs = [CorpusInput(p, kind, column=args.field, per_line=args.per_line and fmt == "text",  # type: ignore[arg-type]
                          source_column=args.source_column, bos=args.bos, eos_id=args.eos_id,
                          dtype=args.dtype, split=args.split) for p in paths]
    return inputs, f"{fmt} ({why})"


def _inputs(args: argparse.Namespace) -> tuple[list[CorpusInput], int | None, Any, str]:
    data = bool(args.data or args.files_from)
    if not data:
        used = [f"--{k.replace('_', '-')}" for k in ("bos", "eos_id", "dtype", "field", "split")
                if getattr(args, k) is not None]
        if args.format != "auto":
            used.insert(0, "--format")
        if used:
            raise InputError(f"{', '.join(used)} appl{'ies' if len(used) == 1 else 'y'} to --data only")
    elif args.text_column is not None:
        raise InputError("--text-column applies to --text; with --data use --field")
    if args.source_column is not None and not (data or args.text):
        raise InputError("--source-column needs --data (jsonl, parquet, hf) or --text .parquet files")
    if data:
        inputs, what = _data_inputs(args)
        return inputs, None, None, what
    if args.text:
        paths = distinct_files("--text", [os.fspath(p) for p in args.text])
        parquet = [p.endswith(".parquet") for p in paths]
        if args.per_line and all(parquet):
            raise InputError("--per-line applies to plain-text --text files only")
        if args.text_column is not None and not any(parquet):
            raise InputError(f"--text-column {args.text_column!r} applies to .parquet --text files only")
        if args.source_column is not None and not all(parquet):
            raise InputError("--source-column reads a column of .parquet --text files; plain text has none")
        return [CorpusInput(p, "parquet", column=args.text_column or "text", source_column=args.source_column)
                if pq else CorpusInput(p, "text", per_line=args.per_line)
                for p, pq in zip(paths, parquet, strict=True)], None, None, "text"
    option = "--manifest" if args.manifest else "--shards"
    for flag, value in (("--per-line", args.per_line), ("--text-column", args.text_column)):
        if value:
            raise InputError(f"{flag} applies to --text only, not {option}")
    if args.tokenizer is None:
        raise InputError(f"{option} holds token ids: give --tokenizer module:callable, the tokenizer that "
                         "wrote the shards, to tokenize the references the same way")
    if args.manifest:
        inputs, vocab, tok = _manifest_inputs(args.manifest)
        return inputs, vocab, tok, "seed-002 manifest"
    paths = distinct_files("--shards", [os.fspath(p) for p in args.shards])
    return [CorpusInput(p, "shard") for p in paths], _shard_vocab(paths), None, "seed-002 shards"


def _labels(args: argparse.Namespace, inputs: list[CorpusInput]) -> Any:
    """The ``labels`` argument of the scan for ``--labels`` / ``--source-from`` (``None`` otherwise)."""
    given = [o for o, v in (("--labels", args.labels), ("--source-column", args.source_column),
                            ("--source-from", args.source_from)) if v]
    if len(given) > 1:
        raise InputError(f"give one origin of source labels, got {', '.join(given)}")
    if args.labels:
        from ..corpus.labels import labels_from_file

        path = args.labels
        with _option_path("--labels", path), open(path, encoding="utf-8"):
            pass

        def from_file(counts: Any) -> Any:
            with _option_path("--labels", path):
                return labels_from_file(path, documents=sum(counts))

        return from_file
    if args.source_from:
        from ..corpus.labels import labels_from_paths

        paths, how = [i.path for i in inputs], args.source_from
        return lambda counts: labels_from_paths(paths, np.repeat(np.arange(len(paths)), counts), how)
    return None


def _index_dir(args: argparse.Namespace) -> None:
    """Refuse an ``--index-dir`` that is not a directory this process can write in (naming it)."""
    if args.index_dir is None:
        return
    with _option_path("--index-dir", args.index_dir):
        if os.path.exists(args.index_dir) and not os.path.isdir(args.index_dir):
            raise InputError(f"--index-dir {args.index_dir!r} is not a directory")
        os.makedirs(args.index_dir, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".packing-theory-probe-", dir=args.index_dir))


def _check(args: argparse.Namespace) -> None:
    if args.n < 1:
        raise InputError(f"--n must be >= 1, got {args.n}")
    if args.memory_grams < 1:
        raise InputError(f"--memory-grams must be >= 1, got {args.memory_grams}")
    if args.workers < 0:
        raise InputError(f"--workers must be >= 0, got {args.workers}")
    from ._ranks import check_executor_option

    check_executor_option(args)
    _index_dir(args)


def _config(args: argparse.Namespace, inputs: list[CorpusInput], refs: list[ReferenceSpec]) -> dict[str, Any]:
    return {"command": "contamination", "inputs": [{"path": i.path, "kind": i.kind} for i in inputs],
            "manifest": args.manifest, "references": [{"path": r.path, "columns": list(r.columns),
                                                       "per_line": r.per_line, "rows": r.declared_rows}
                                                      for r in refs],
            "tokenizer": args.tokenizer, "n": args.n, "memory_grams": args.memory_grams,
            "exclude": args.exclude, "labels": args.labels, "source_column": args.source_column,
            "source_from": args.source_from,
            **{k: getattr(args, k) for k in ("format", "bos", "eos_id", "dtype", "field", "split")
               if getattr(args, k) not in (None, "auto")}}


# --------------------------------------------------------------------------- run


def _scan(args: argparse.Namespace, inputs: list[CorpusInput], refs: list[ReferenceSpec], vocab: int | None,
          labels: Any) -> ContaminationReport:
    from ..contamination import scan_contamination
    from ..distributed.executors import open_executor
    from ..reporting.progress import progress_bar
    from ._inputs import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer or "bytes")
    bar = progress_bar("contamination", None, enabled=False if args.no_progress else None, unit="input")
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if bar is not None:
            bar(done[0])

    where = args.index_dir or f"{tempfile.gettempdir()} (the default)"
    try:
        with open_executor(args.executor, workers=args.workers or os.cpu_count() or 1) as executor, \
                _option_path("--index-dir", where):
            return scan_contamination(inputs, refs, tokenizer=tokenizer, n=args.n,
                                      memory_grams=args.memory_grams, index_dir=args.index_dir,
                                      exclude=args.exclude, vocab=vocab, executor=executor, labels=labels,
                                      progress=step)
    finally:
        if bar is not None:
            bar.close()


def run(args: argparse.Namespace) -> int:
    """Scan, write the report; return 0, or raise :class:`Finding` (1) / :class:`NotMeasured` (3)."""
    from ..reporting import ReportWriter
    from ..reporting.files import ReportError
    from ..reporting.publish import stage_report
    from ._common import emit_json

    _check(args)
    refs = _references(args)
    inputs, vocab, source_tokenizer, corpus = _inputs(args)
    labels = _labels(args, inputs)
    try:
        with _option_path("--out", args.out), ReportWriter(
                args.out, names=REPORT_FILES, config=_config(args, inputs, refs),
                tool="packing-theory contamination", force=args.force) as writer:
            report = _scan(args, inputs, refs, vocab, labels)
            report.corpus = corpus if source_tokenizer is None else f"{corpus}; tokenizer {source_tokenizer}"
            stage_report(writer, report, plots=False)
            writer.commit()
    except ReportError as exc:  # the report directory: name the option
        raise ReportError(f"--out: {exc}") from exc
    if args.json:
        emit_json(report.to_dict(writer.run_info))
    where = f"report in {args.out}/contamination.md"
    found = (f"{report.matched_grams:,} matched {report.n}-grams in {report.documents_with_any_hit:,} "
             f"document(s) ({report.majority_hit_documents:,} majority-hit) of {report.documents_scanned:,} "
             f"documents, {report.grams_scanned:,} {report.n}-grams against {report.reference_grams:,} "
             "reference grams")
    if report.status == 3:
        raise NotMeasured(f"{len(report.reasons)} thing(s) not measured, first: {report.reasons[0]}; in what "
                          f"was read: {found}; {where}")
    if report.status == 1:
        raise Finding(f"{found}; {where}")
    print(writer.summary_line("contamination", f"no overlap: {found}, everything listed read; exclude.u8 "
                                               "marks no document"), file=sys.stderr)
    return 0
