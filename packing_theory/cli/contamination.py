"""``packing-theory contamination``: n-gram overlap of training documents with reference texts.

``packing-theory contamination --manifest mix/manifest.json --reference
gsm8k-train.parquet mmlu-dev.parquet --reference-column question --tokenizer
mytok:encode`` hashes every 13-token window of every shard document (without
its BOS) and of every reference item, and writes ``contamination.json``,
``contamination.md``, the exclusion mask ``exclude.u8`` (one byte per
document, 1 = exclude) and its sidecar ``exclude.json`` to ``--out``. Counts
only: no matched text is ever printed or written.

Exit status (the contract of :mod:`packing_theory.cli._exit`): 0 every input
and reference listed was read and no window matched; 1 overlap found (a
finding wins over "not measured"); 2 bad usage or input; 3 not measured (an
input or reference missing or unreadable, a reference with fewer rows than
declared or no gram, no document or no gram scanned). The report is written
in cases 0, 1 and 3; the mask only when everything was measured.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..contamination import DEFAULT_MEMORY_GRAMS, DEFAULT_N, EXCLUDE_RULES, CorpusInput, ReferenceSpec
from ..contamination.report import ContaminationReport
from ..errors import Finding, InputError, NotMeasured

__all__ = ["REPORT_FILES", "register", "run"]

REPORT_FILES: tuple[str, ...] = ("contamination.html", "contamination.json", "contamination.md", "exclude.u8",
                                 "exclude.json")
"""The files of a contamination report directory."""

_ORDER = "the documents of the inputs in the order listed, each input's documents in file order"


def register(sub: Any) -> None:
    """Add the ``contamination`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "contamination", help="n-gram overlap of training documents with reference texts; exit 1 found, "
                              "3 not measured",
        description="Hash every N-token window (default 13) of the training documents (seed-002 shards or "
                    "texts) and of the reference texts, count matched grams, documents with any hit, "
                    "majority-hit documents and per-source hit fractions, and write a per-document "
                    "exclusion mask. Counts only. Exit 0 all read and no overlap, 1 overlap found, "
                    "2 bad usage, 3 not measured.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--manifest", metavar="MANIFEST.json",
                     help="seed-002 shards listed in a manifest (a single-source shard names its source)")
    src.add_argument("--shards", nargs="+", metavar="SHARD", help="seed-002 token shard files")
    src.add_argument("--text", nargs="+", metavar="FILE",
                     help="plain text files (one document per file, or per line with --per-line) "
                          "and/or .parquet files (column --text-column)")
    parser.add_argument("--per-line", action="store_true", help="--text: one document per non-blank line")
    parser.add_argument("--text-column", default=None, metavar="COL",
                        help="--text parquet column (default text)")
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
                        help="how references (and --text) become token ids: bytes (default for --text), "
                             "chars, whitespace, or module:callable; required with --shards/--manifest "
                             "(the tokenizer that wrote the shards, adding no BOS)")
    parser.add_argument("--n", type=int, default=DEFAULT_N, metavar="N",
                        help=f"window length in tokens (default {DEFAULT_N})")
    parser.add_argument("--memory-grams", type=int, default=DEFAULT_MEMORY_GRAMS, metavar="G",
                        help=f"distinct reference grams held in memory (default {DEFAULT_MEMORY_GRAMS:,}, "
                             "measured: about 12 bytes per gram once built, 34 while it is built, i.e. "
                             "100 and 270 MiB at the default); beyond, a disk index scanned in passes")
    parser.add_argument("--index-dir", default=None, metavar="DIR",
                        help="where a disk index goes (a fresh subdirectory, removed afterwards; "
                             "default: the system's temporary directory)")
    parser.add_argument("--exclude", choices=EXCLUDE_RULES, default="any",
                        help="which documents the mask excludes: any matched window (default, seed 002) or "
                             "majority (more than half of the windows matched)")
    parser.add_argument("--out", default="contamination-report", metavar="DIR",
                        help="report directory (default ./contamination-report), checked and locked before "
                             "the scan")
    parser.add_argument("--force", action="store_true",
                        help="replace report-named files in --out that packing-theory did not write")
    parser.add_argument("--json", action="store_true", help="also print the JSON report on standard output")
    parser.set_defaults(run=run)


# --------------------------------------------------------------------------- options


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
    return [ReferenceSpec(p, columns=columns, per_line=args.reference_per_line and not pq,
                          declared_rows=None if rows is None else rows[i])
            for i, (p, pq) in enumerate(zip(paths, parquet, strict=True))]


def _manifest_inputs(path: str) -> tuple[list[CorpusInput], int, Any]:
    from .._files import confined
    from ..corpus.manifest import read_manifest

    manifest = read_manifest(path)
    root = os.path.dirname(os.path.abspath(path))
    inputs = []
    for entry in manifest["shards"]:
        counts = entry.get("source_counts") or {}
        present = [label for label, k in counts.items() if int(k) > 0]
        source = present[0] if len(present) == 1 else None
        shard = confined(root, entry["path"], what=f"manifest {path!r} shard path")
        inputs.append(CorpusInput(shard, "shard", source=source, name=entry["path"]))
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


def _inputs(args: argparse.Namespace) -> tuple[list[CorpusInput], int | None, Any]:
    if args.text:
        paths = [os.fspath(p) for p in args.text]
        parquet = [p.endswith(".parquet") for p in paths]
        if args.per_line and all(parquet):
            raise InputError("--per-line applies to plain-text --text files only")
        if args.text_column is not None and not any(parquet):
            raise InputError(f"--text-column {args.text_column!r} applies to .parquet --text files only")
        column = args.text_column or "text"
        return [CorpusInput(p, "parquet", column=column) if pq else
                CorpusInput(p, "text", per_line=args.per_line) for p, pq in zip(paths, parquet, strict=True)
                ], None, None
    option = "--manifest" if args.manifest else "--shards"
    for flag, value in (("--per-line", args.per_line), ("--text-column", args.text_column)):
        if value:
            raise InputError(f"{flag} applies to --text only, not {option}")
    if args.tokenizer is None:
        raise InputError(f"{option} holds token ids: give --tokenizer module:callable, the tokenizer that "
                         "wrote the shards, to tokenize the references the same way")
    if args.manifest:
        return _manifest_inputs(args.manifest)
    paths = [os.fspath(p) for p in args.shards]
    return [CorpusInput(p, "shard") for p in paths], _shard_vocab(paths), None


def _config(args: argparse.Namespace, inputs: list[CorpusInput], refs: list[ReferenceSpec]) -> dict[str, Any]:
    return {"command": "contamination", "inputs": [{"path": i.path, "kind": i.kind} for i in inputs],
            "manifest": args.manifest, "references": [{"path": r.path, "columns": list(r.columns),
                                                       "per_line": r.per_line, "rows": r.declared_rows}
                                                      for r in refs],
            "tokenizer": args.tokenizer, "n": args.n, "memory_grams": args.memory_grams,
            "exclude": args.exclude}


# --------------------------------------------------------------------------- run


def _stage(report: ContaminationReport) -> dict[str, Any]:
    """Seed 004's declaration of the decontamination operator C_E that produced the mask."""
    from .._version import __version__

    return {"name": "decontamination", "operator": "C_E (seed 004)",
            "protected_collection": [{"name": r.name, "path": r.path, "rows": r.rows, "grams": r.grams}
                                     for r in report.references],
            "normalization": f"tokenizer {report.tokenizer}; shard documents without their first token (BOS)",
            "match": f"{report.n}-gram of token ids, 64-bit hash (expected false positives "
                     f"{report.expected_false_positives:.3g})",
            "threshold": "any matched window" if report.exclude == "any" else "more than half the windows",
            "removal": "whole document", "revision": f"packing_theory {__version__}"}


def _write(writer: Any, report: ContaminationReport, source_tokenizer: Any) -> dict[str, Any]:
    from ..contamination.scan import describe_inputs
    from ..corpus.masks import mask_bytes, mask_sidecar
    from ..reporting.html import write_html

    run = writer.run_info
    doc = {"run": run, "headline": report.headline(), **report.to_dict()}
    if source_tokenizer is not None:
        doc["manifest_tokenizer"] = source_tokenizer
    if report.mask is not None:
        assert report.lengths is not None
        doc["mask"]["path"] = "exclude.u8"
        writer.write_bytes("exclude.u8", mask_bytes(report.mask))
        sidecar = mask_sidecar(report.mask, report.lengths, mask_name="exclude.u8",
                               inputs=describe_inputs(report), order=_ORDER, stage=_stage(report))
        writer.write_json("exclude.json", {"run": run, **sidecar})
    writer.write_json("contamination.json", doc)
    writer.write_text("contamination.md", report.markdown(f"Run {run['id']}, config {run['config_hash']}."))
    write_html(writer, "contamination.html", doc, title="Contamination audit", headline=report.headline())
    return doc


def run(args: argparse.Namespace) -> int:
    """Scan, write the report; return 0, or raise :class:`Finding` (1) / :class:`NotMeasured` (3)."""
    from ..contamination import scan_contamination
    from ..reporting import ReportWriter
    from ._common import emit_json

    if args.n < 1:
        raise InputError(f"--n must be >= 1, got {args.n}")
    if args.memory_grams < 1:
        raise InputError(f"--memory-grams must be >= 1, got {args.memory_grams}")
    refs = _references(args)
    inputs, vocab, source_tokenizer = _inputs(args)
    from .audit import _tokenizer

    tokenizer = _tokenizer(args.tokenizer or "bytes")
    with ReportWriter(args.out, names=REPORT_FILES, config=_config(args, inputs, refs),
                      tool="packing-theory contamination", force=args.force) as writer:
        report = scan_contamination(inputs, refs, tokenizer=tokenizer, n=args.n,
                                    memory_grams=args.memory_grams, index_dir=args.index_dir,
                                    exclude=args.exclude, vocab=vocab)
        doc = _write(writer, report, source_tokenizer)
        writer.commit()
    if args.json:
        emit_json(doc)
    where = f"report in {args.out}/contamination.md"
    totals = (f"{report.documents_scanned:,} documents, {report.grams_scanned:,} {report.n}-grams against "
              f"{report.reference_grams:,} reference grams")
    if report.status == 1:
        also = f"; {len(report.reasons)} thing(s) not measured" if report.reasons else ""
        raise Finding(f"{report.matched_grams:,} matched {report.n}-grams in "
                      f"{report.documents_with_any_hit:,} document(s) "
                      f"({report.majority_hit_documents:,} majority-hit) of {totals}{also}; {where}")
    if report.status == 3:
        raise NotMeasured(f"{len(report.reasons)} thing(s) not measured, first: {report.reasons[0]}; {where}")
    print(writer.summary_line("contamination", f"no overlap: {totals}, everything listed read; exclude.u8 "
                                               "marks no document"), file=sys.stderr)
    return 0
