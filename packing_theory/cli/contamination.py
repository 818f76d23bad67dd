"""``packing-theory contamination``: n-gram overlap of training documents with reference texts.

``packing-theory contamination --manifest mix/manifest.json --reference
gsm8k-train.parquet mmlu-dev.parquet --reference-column question --tokenizer
mytok:encode`` hashes every 13-token window (``--gram-length``) of every
training document (without its BOS) and of every reference item, and writes
``contamination.json``, ``contamination.md``, ``contamination.html``, the
list of hit documents ``hit_documents.jsonl`` (each by its raw corpus index,
name and source), the exclusion mask ``exclude.u8`` (one byte per document,
1 = exclude) and its sidecar ``exclude.json`` to ``--out``. Counts, indices
and names only: no matched text is ever printed or written.

The training corpus is ``--manifest`` (the shards a shard manifest lists) or
any input of the option table that holds token ids or text: ``--data`` /
``--files-from`` in any such format, ``--shards``, ``--text``, ``--parquet``
(:func:`packing_theory.cli._inputs.data_spec`), with the reader options
``--column --bos --eos-id --dtype --split --per-line``; ``--tokenizer``
tokenizes the texts and the references. ``--labels``, ``--source-column`` or
``--source-from`` attribute hits to data sources. ``--executor`` /
``--workers`` scan the inputs in parallel, one input per task, with the
serial scan's result. The module imports the library inside :func:`run` only.

Exit status (the contract of :mod:`packing_theory.cli._exit`): 0 every input
and reference listed was read and no window matched; 1 everything listed was
read and overlap was found; 2 bad usage or input (an input or ``--reference``
named on the command line that does not exist or cannot be opened, an
``--out`` inside an input directory or an input that is one of the report's
own files: all checked before anything is read or written, so the previous
report stays); 3 not measured (a shard the manifest lists missing or
unreadable, a reference that fails while it is read, a reference with fewer
rows than declared or no gram, no document or no gram scanned) — "not
measured" wins over a finding, whose counts and hit documents are still in the
report. The report is written in cases 0, 1 and 3; the mask only when
everything was measured.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import Finding, InputError, NotMeasured
from ._options import add_options

if TYPE_CHECKING:
    from ..contamination import ContaminationReport, CorpusInput, ReferenceSpec

__all__ = ["INPUT_OPTIONS", "REPORT_FILES", "register", "run"]

REPORT_FILES: tuple[str, ...] = ("contamination.html", "contamination.json", "contamination.md",
                                 "hit_documents.jsonl", "exclude.u8", "exclude.json")
"""The files of a contamination report directory."""

INPUT_OPTIONS = ("shard-manifest", "data", "files-from", "shards", "text", "parquet", "format", "column",
                 "bos", "eos-id", "dtype", "split", "tokenizer", "per-line")
"""The input options: every input of the table that holds token ids or text, and the shard manifest."""

_ID_FORMATS = ("shards", "megatron", "olmo", "hf", "mds")  # formats whose documents may be token ids
_SOURCE_FORMATS = ("jsonl", "parquet", "hf")
_READER_OPTIONS = (("column", "--column", "field"), ("bos", "--bos", "bos"), ("eos_id", "--eos-id", "eos_id"),
                   ("dtype", "--dtype", "dtype"), ("split", "--split", "split"),
                   ("per_line", "--per-line", "per_line"))


def register(sub: Any) -> None:
    """Add the ``contamination`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "contamination",
        description="Hash every N-token window (--gram-length, default 13) of the training documents (a "
                    "shard manifest, or any input holding token ids or text) and of the reference texts, "
                    "count matched grams, documents with any hit, majority-hit documents and per-source hit "
                    "fractions, list the hit documents and write a per-document exclusion mask. "
                    "--tokenizer turns the references (and text inputs) into token ids: with token-id "
                    "inputs, the tokenizer that wrote them, adding no BOS. Exit 0 all read and no overlap, "
                    "1 all read and overlap found, 2 bad usage, 3 not measured.",
    )
    add_options(parser, *INPUT_OPTIONS, "labels", "source-column", "source-from", "reference",
                "reference-column", "reference-per-line", "reference-rows", "gram-length", "memory-grams",
                "index-dir", "exclude", "executor", "workers", "out", "force", "json", "no-progress")
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


def _references(args: argparse.Namespace) -> list[ReferenceSpec]:
    from .._checks import distinct_files
    from ..contamination import ReferenceSpec

    paths = [os.fspath(p) for p in args.reference]
    parquet = [p.endswith(".parquet") for p in paths]
    if args.reference_column is not None and not any(parquet):
        raise InputError(f"--reference-column {args.reference_column!r} applies to .parquet references only")
    if args.reference_per_line and all(parquet):
        raise InputError("--reference-per-line applies to plain-text references only")
    columns = tuple(c.strip() for c in (args.reference_column or "text").split(",") if c.strip())
    if not columns:
        raise InputError(f"--reference-column got {args.reference_column!r}, no column name")
    rows = args.reference_rows
    if rows is not None and len(rows) != len(paths):
        raise InputError(f"--reference-rows gives {len(rows)} row count(s) for {len(paths)} --reference "
                         "file(s): give one per reference, in order")
    if len(set(paths)) != len(paths):
        raise InputError(f"--reference lists {next(p for p in paths if paths.count(p) > 1)!r} twice")
    for p in paths:  # a reference the user named is bad input when it cannot be opened, not "not measured"
        if not os.path.exists(p):
            raise InputError(f"--reference {p!r} does not exist")
        if os.path.isfile(p):
            with _option_path("--reference", p), open(p, "rb"):
                pass
    distinct_files("--reference", paths)
    return [ReferenceSpec(p, columns=columns, per_line=args.reference_per_line and not pq,
                          declared_rows=None if rows is None else rows[i])
            for i, (p, pq) in enumerate(zip(paths, parquet, strict=True))]


def _manifest_inputs(path: str) -> tuple[list[CorpusInput], int, Any]:
    from .._checks import distinct_files
    from .._files import confined
    from ..contamination import CorpusInput
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


def _check_reader_options(args: argparse.Namespace, fmt: str, given_by: str) -> None:
    """Refuse a reader option ``fmt`` does not use, a token format without ``--bos`` or ``--tokenizer``, a
    ``--source-column`` of a format without columns."""
    from ..corpus.readers import FORMAT_OPTIONS

    uses = FORMAT_OPTIONS[fmt] | ({"per_line"} if fmt == "text" else set())
    wrong = [flag if value is True else f"{flag} {value!r}" for attr, flag, key in _READER_OPTIONS
             if (value := getattr(args, attr)) is not None and value is not False and key not in uses]
    if wrong:
        named = sorted(flag for _, flag, key in _READER_OPTIONS if key in uses)
        what = f"it takes {', '.join(named)}" if named else "it takes no reader option"
        raise InputError(f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to {fmt} data "
                         f"({given_by}); {what}")
    if fmt in ("megatron", "olmo") and args.bos not in ("included", "add"):
        raise InputError(f"{given_by} {fmt} holds token ids: say how BOS is counted: --bos included (the "
                         "stored documents hold their BOS or EOS/EOD) or --bos add, got "
                         f"{'no --bos' if args.bos is None else repr(args.bos)}")
    if fmt == "shards" and args.tokenizer is None:
        raise InputError(f"{given_by} holds token ids: give --tokenizer module:callable, the tokenizer that "
                         "wrote the shards, to tokenize the references the same way")
    if fmt in _ID_FORMATS and args.tokenizer is None:
        raise InputError(f"{given_by} {fmt} may hold token ids: give --tokenizer (module:callable, the "
                         "tokenizer that wrote them, adding no BOS; or a built-in for a text column) to "
                         "tokenize the references the same way")
    if args.source_column is not None and fmt not in _SOURCE_FORMATS:
        raise InputError(f"--source-column reads a {', '.join(_SOURCE_FORMATS)} column; {given_by} is {fmt}")


def _inputs(args: argparse.Namespace) -> tuple[list[CorpusInput], int | None, Any, str]:
    """The training inputs, the shards' vocabulary (or ``None``), the manifest's tokenizer, the corpus's
    description."""
    from ..contamination import CorpusInput
    from ..corpus.readers import plan_inputs
    from ._inputs import data_spec

    if args.manifest:
        if args.format != "auto":
            raise InputError("--format applies to --data; --manifest already names shards data")
        _check_reader_options(args, "shards", "--manifest")
        listed, shards_vocab, tokenizer = _manifest_inputs(args.manifest)
        return listed, shards_vocab, tokenizer, "shards (--manifest)"
    with _option_path("--files-from", args.files_from or ""):
        specs, asked, given_by = data_spec(args)
    plan = plan_inputs(specs, asked)
    if plan.format == "mixed":
        example = ", ".join(f"{k}: {plan.first(k)!r}" for k in plan.formats)
        raise InputError(f"{given_by} holds inputs of several formats ({example}); contamination reads one "
                         "format per run: scan each format's inputs in its own run")
    paths, fmt, why = plan.paths, plan.format, plan.reason
    if plan.skipped:  # never dropped silently: one line
        print(f"{given_by}: {plan.skipped_line()}", file=sys.stderr)
    if fmt == "lengths":
        raise InputError(f"{given_by} {paths[0]!r} is a lengths array ({why}): it holds document lengths, "
                         "not token ids; contamination reads token ids or text (a raw or .npy token array "
                         "is --format olmo with --eos-id or its metadata file)")
    _check_reader_options(args, fmt, given_by)
    kind = "shard" if fmt == "shards" else fmt
    inputs = [CorpusInput(p, kind, column=args.column, per_line=args.per_line,  # type: ignore[arg-type]
                          source_column=args.source_column, bos=args.bos, eos_id=args.eos_id,
                          dtype=args.dtype, split=args.split) for p in paths]
    vocab = _shard_vocab(paths) if fmt == "shards" else None
    described = f"{fmt} ({why})" if given_by in ("--data", "--files-from") else f"{fmt} ({given_by})"
    return inputs, vocab, None, described


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
        import numpy as np

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
    from ._common import check_executor

    check_executor(args)
    _index_dir(args)


def _config(args: argparse.Namespace, inputs: list[CorpusInput], refs: list[ReferenceSpec]) -> dict[str, Any]:
    return {"command": "contamination", "inputs": [{"path": i.path, "kind": i.kind} for i in inputs],
            "manifest": args.manifest, "references": [{"path": r.path, "columns": list(r.columns),
                                                       "per_line": r.per_line, "rows": r.declared_rows}
                                                      for r in refs],
            "tokenizer": args.tokenizer, "n": args.gram_length, "memory_grams": args.memory_grams,
            "exclude": args.exclude, "labels": args.labels, "source_column": args.source_column,
            "source_from": args.source_from,
            **{k: getattr(args, k) for k in ("format", "bos", "eos_id", "dtype", "column", "split")
               if getattr(args, k) not in (None, "auto")}}


# --------------------------------------------------------------------------- run


def _scan(args: argparse.Namespace, inputs: list[CorpusInput], refs: list[ReferenceSpec], vocab: int | None,
          labels: Any) -> ContaminationReport:
    from ..contamination import scan_contamination
    from ..corpus.textcount import load_tokenizer
    from ..distributed.executors import open_executor
    from ..reporting.progress import progress_bar

    try:
        tokenizer = load_tokenizer(args.tokenizer or "bytes")
    except InputError as exc:  # "tokenizer 'x': ..." names the option as the command spells it
        raise InputError(f"--{exc}") from exc
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
            return scan_contamination(inputs, refs, tokenizer=tokenizer, n=args.gram_length,
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
    from ._paths import named_inputs

    refs = _references(args)  # before --index-dir is made: nothing is written for a bad reference
    _check(args)
    inputs, vocab, source_tokenizer, corpus = _inputs(args)
    labels = _labels(args, inputs)
    read = [*named_inputs(args), *(i.path for i in inputs if args.manifest)]  # and the shards it lists
    try:
        with _option_path("--out", args.out), ReportWriter(
                args.out, names=REPORT_FILES, config=_config(args, inputs, refs),
                tool="packing-theory contamination", force=args.force, inputs=read) as writer:
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
