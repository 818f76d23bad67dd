"""``packing-theory audit``: the four quantities of seed 000 §6, side by side for several policies.

``packing-theory audit --demo`` audits the calibrated default corpus at
autoresearch's settings (R = 2049, B = 1000, refill 128, 243,968 rows) under
``discard``, ``continue`` and ``segment-first``, with the 20-permutation
startup-delay spread and an evaluation stream at 20,971,520 targets, and
writes ``audit.json``, ``audit.md`` and PNG plots to ``./audit-report/``.

``packing-theory audit --lengths F.npy`` (or ``--shards`` / ``--text``) audits
your own corpus with ``--policy discard,continue,...``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit import AUTORESEARCH_EVAL_TARGETS, DEFAULT_EVAL_PREFIXES
from ..audit.documents import DOCUMENTS_DEFAULT_LIMIT, census_names, document_names
from ..corpus.textcount import BuiltinTokenizer
from ..engine.horizon import Budget
from ..engine.policies import RANDOM_SPAN_SEED, PackerConfig
from ..errors import InputError
from ..orchestration import AUTORESEARCH_ROWS, AuditResult, run_audit
from ..orchestration.demo import (
    DEMO_EVAL_DOCUMENTS,
    DEMO_EVAL_SEED,
    DEMO_POLICIES,
    audit_demo,
    audit_demo_budget,
)
from ..registry import entry, names
from ..rendering.audit import DOCUMENTS_FILES
from ..reporting import require_matplotlib
from ._common import (
    add_stream_options,
    check_max_wait,
    emit_json,
    existing_path,
    int_at_least,
    parse_int_list,
)
from ._inputs import add_data_options, check_input_options, load_data, load_tokenizer
from ._paths import named_inputs
from ._ranks import add_rank_options, check_rank_options, check_world_size, rank_section, rank_source
from ._sources import add_source_options, check_source_options, source_config, wants_sources

__all__ = [
    "DEMO_EVAL_DOCUMENTS",
    "DEMO_EVAL_SEED",
    "DEMO_POLICIES",
    "AuditPlan",
    "config_document",
    "demo_inputs",
    "documents_file",
    "load_corpus",
    "load_inputs",
    "load_named_corpus",
    "load_named_inputs",
    "packer_config",
    "parse_policies",
    "plan_audit",
    "register",
    "run",
]

def parse_policies(values: Sequence[str] | None) -> list[str]:
    """``["discard,continue", "segment-first"]`` -> the policy list, validated.

    >>> parse_policies(["discard,continue", "segment-first"])
    ['discard', 'continue', 'segment-first']
    >>> parse_policies(["nope"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputError: --policy got 'nope', not a policy: see packing-theory policies (discard, ...)
    """
    from ..registry import names

    known = names()
    if not values:
        return ["discard"]
    out: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name not in known:
                raise InputError(f"--policy got {name!r}, not a policy: see packing-theory policies "
                                 f"({', '.join(known)})")
            if name in out:
                raise InputError(f"--policy names {name!r} twice")
            out.append(name)
    return out


MAX_PERMUTATIONS = 1000
"""The most startup permutations ``--permutations`` takes: each is a whole replay of the corpus per
policy (the paper uses 20), so a larger count only runs for hours."""


def register(sub: Any) -> None:
    """Add the ``audit`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "audit", help="audit mass, started sources, exposure and the evaluation population",
        description="Audit which sources a packer trains on: token mass emitted/discarded/buffered, "
                    "sources started, positions exposed and the finite evaluation population "
                    "(seed 000 §6). Writes audit.json, audit.md and PNG plots.",
    )
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--demo", action="store_true",
                     help="full-size calibrated default corpus, autoresearch settings, "
                          "discard vs continue vs segment-first")
    src.add_argument("--lengths", type=existing_path("--lengths"),
                     metavar="FILE.npy", help="1-D integer .npy array of BOS-inclusive lengths")
    src.add_argument("--shards", nargs="+", metavar="SHARD", help="token shard files (seed 002 format)")
    src.add_argument("--text", nargs="+", metavar="FILE",
                     help="plain text files (one document per file, or per line with --per-line) "
                          "or .parquet files (column --text-column)")
    add_data_options(parser, src)
    parser.add_argument("--per-line", action="store_true", help="--text: one document per non-blank line")
    parser.add_argument("--text-column", default="text", help="--text parquet column (default text)")
    parser.add_argument("--tokenizer", default="bytes",
                        help="--text tokenizer: bytes (UTF-8 bytes, default), chars, whitespace, "
                             "or module:callable returning token ids")
    add_stream_options(parser, lengths=False, policies="many", engine=True, tokens=True,
                       rows_help=f"the horizon in rows, for every packer, streaming and peer (default "
                                 f"{AUTORESEARCH_ROWS:,}, autoresearch's budget, when no --targets or "
                                 "--tokens is given)")
    parser.add_argument("--permutations", type=int_at_least("--permutations", 0, MAX_PERMUTATIONS),
                        default=20,
                        help="startup-delay permutations per policy (default 20, as the paper; 0 skips)")
    parser.add_argument("--permutation-seed", type=int, default=0, help="permutation RNG seed (default 0)")
    parser.add_argument("--eval-lengths", type=existing_path("--eval-lengths"),
                        metavar="FILE.npy", help="evaluation stream lengths (.npy)")
    parser.add_argument("--eval-shards", nargs="+", metavar="SHARD", help="evaluation stream token shards")
    parser.add_argument("--eval-targets", type=int, default=None,
                        help=f"evaluation budget in targets (default {AUTORESEARCH_EVAL_TARGETS:,})")
    parser.add_argument("--eval-prefixes", type=parse_int_list,
                        default=DEFAULT_EVAL_PREFIXES, metavar="T[,T...]",
                        help="shorter evaluation budgets also checked (default 2097152,10485760)")
    parser.add_argument("--out", default="audit-report", metavar="DIR",
                        help="report directory (default ./audit-report), checked and locked before the "
                             "audit runs; the report's files are swapped in together")
    parser.add_argument("--no-plots", action="store_true",
                        help="skip the PNG plots (the previous run's plots are removed)")
    docs = parser.add_mutually_exclusive_group()
    docs.add_argument("--documents", metavar="FILE", choices=DOCUMENTS_FILES, default=None,
                      help="write one row per document and packer into --out: documents.csv, or "
                           "documents.parquet (the parquet extra); default: documents.csv when the corpus "
                           f"has at most {DOCUMENTS_DEFAULT_LIMIT:,} documents")
    docs.add_argument("--no-documents", action="store_true", help="never write the per-document file")
    parser.add_argument("--force", action="store_true",
                        help="replace report-named files in --out that packing-theory did not write")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="run the policy replays, startup permutations, evaluation replays and "
                             "--world-size ranks in N processes (default 1: in this process; 0: one per "
                             "CPU); the report is the same")
    add_rank_options(parser)
    add_source_options(parser)
    parser.add_argument("--json", action="store_true", help="also print the JSON report on standard output")
    parser.add_argument("--scale", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.set_defaults(run=run)


# --------------------------------------------------------------------------- inputs


def _tokenizer(spec: str) -> BuiltinTokenizer | Callable[[str], Any]:
    """A built-in tokenizer name or an imported callable (see ``cli._inputs.load_tokenizer``)."""
    return load_tokenizer(spec)


def load_corpus(args: argparse.Namespace) -> tuple[npt.NDArray[np.int64], str]:
    """The training lengths named by ``--lengths`` / ``--shards`` / ``--text`` and a label.

    Plain text with a built-in ``--tokenizer`` is counted in chunks (a very long
    line costs O(1 MiB), not the line and its token list).
    """
    lengths, label, _ = load_named_corpus(args)
    return lengths, label


def load_named_corpus(args: argparse.Namespace) -> tuple[npt.NDArray[np.int64], str, list[str] | None]:
    """:func:`load_corpus` and one name per document where the inputs know them (else ``None``).

    ``--text`` files (one document per file) and ``--data`` readers name each
    document by its file (``path#k`` for the k-th of several);
    ``--lengths DIR/lengths.npy`` written by ``packing-theory census`` takes the
    names from ``DIR/census.json``.
    """
    from ..corpus import iter_parquet_texts, lengths_from_shards, lengths_from_texts, load_lengths
    from ..corpus.text import lengths_from_text_files, resolve_bos

    check_input_options(args)
    if getattr(args, "data", None) or getattr(args, "files_from", None):
        lengths, label, reader = load_data(args, quiet=True)
        labels, codes = reader.sources()
        counts = np.bincount(codes, minlength=len(labels)).tolist() if len(codes) else [0] * len(labels)
        ordered = codes.size == 0 or bool(np.all(np.diff(codes) >= 0))
        names = document_names(labels, counts) if ordered and codes.size == lengths.size else None
        return lengths, label, names
    if args.lengths:
        lengths = load_lengths(args.lengths)
        return lengths, Path(args.lengths).name, census_names(Path(args.lengths).parent / "census.json",
                                                               int(lengths.size))
    if args.shards:
        return lengths_from_shards(args.shards), f"{len(args.shards)} shard(s)", None
    if args.text:
        parquet = [p for p in args.text if str(p).endswith(".parquet")]
        if parquet and len(parquet) != len(args.text):
            raise InputError("--text mixes .parquet and plain text files; give one kind")
        tokenizer = _tokenizer(args.tokenizer)
        label = f"{len(args.text)} text file(s)"
        add = resolve_bos(getattr(args, "bos", None) or "auto", tokenizer)[0] == "add"
        if parquet:
            texts = iter_parquet_texts(args.text, args.text_column)
            return lengths_from_texts(texts, tokenizer, bos=add), label, None
        lengths = lengths_from_text_files(args.text, tokenizer, per_line=args.per_line, bos=add)
        names = [str(p) for p in args.text] if not args.per_line and len(args.text) == lengths.size else None
        return lengths, label, names
    raise InputError("give --demo, --lengths FILE.npy, --shards SHARD... or --text FILE...")


def demo_inputs(scale: float = 1.0) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int, int,
                                             tuple[int, ...]]:
    """The demo's corpus, evaluation stream, row budget, eval targets and eval prefixes (the tuple form
    of :func:`packing_theory.orchestration.audit_demo`, which says what they are)."""
    demo = audit_demo(scale)
    return demo.lengths, demo.eval_lengths, demo.rows, demo.eval_targets, demo.eval_prefixes


# --------------------------------------------------------------------------- run


@dataclass(frozen=True)
class AuditPlan:
    """What an ``audit`` invocation will do, from its options alone (no file is read)."""

    policies: list[str]
    rows: int | None
    eval_targets: int
    prefixes: tuple[int, ...]
    reference: Mapping[str, Any] | None
    plots: bool
    peer_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Constructor options of each audited peer (``--window``, ``--peer-option``, ...)."""
    horizon: Budget | None = None
    """A ``--tokens`` horizon (``--rows`` / ``--targets`` are the config's budget)."""


def plan_audit(args: argparse.Namespace) -> AuditPlan:
    """Validate the options and fix the budgets (the demo's or the user's) before anything runs."""
    from ..rendering.audit import PAPER_5_1
    from ._packers import is_peer, knobs_from_args

    check_input_options(args)
    plots = not args.no_plots
    require_matplotlib(plots)
    if args.demo:
        if args.eval_lengths or args.eval_shards:
            raise InputError("--demo brings its own evaluation stream; drop --eval-lengths/--eval-shards "
                             "or drop --demo")
        policies = parse_policies(args.policy) if args.policy else list(DEMO_POLICIES)
        rows: int | None
        rows, eval_targets, prefixes = audit_demo_budget(args.scale)
        if args.rows is not None or args.targets is not None or args.tokens is not None:
            rows = args.rows
        reference = PAPER_5_1 if args.scale == 1 else None
    else:
        if not (args.lengths or args.shards or args.text or args.data or args.files_from):
            raise InputError("give --demo, --lengths FILE.npy, --shards SHARD..., --text FILE... or "
                             "--data PATH...")
        policies = parse_policies(args.policy)
        given = args.rows is not None or args.targets is not None or args.tokens is not None
        rows = args.rows if given else AUTORESEARCH_ROWS
        eval_targets, prefixes, reference = AUTORESEARCH_EVAL_TARGETS, DEFAULT_EVAL_PREFIXES, None
    if args.eval_targets is not None:
        if args.eval_targets < 1:
            raise InputError(f"--eval-targets must be >= 1, got {args.eval_targets}")
        if not (args.demo or args.eval_lengths or args.eval_shards):
            raise InputError(f"--eval-targets {args.eval_targets} needs an evaluation stream: "
                             "give --eval-lengths or --eval-shards (or --demo)")
        eval_targets = args.eval_targets
    if args.eval_prefixes is not DEFAULT_EVAL_PREFIXES:
        prefixes = tuple(args.eval_prefixes)
    else:  # the default prefixes beyond a smaller budget are dropped
        prefixes = tuple(p for p in prefixes if p <= eval_targets)
    options = {p: knobs_from_args(args, p, alongside=policies, common_horizon=True)
               for p in policies if is_peer(p)}
    if args.seed is not None and not any(entry(p).takes("seed") for p in policies):
        takers = ", ".join(n for n in names() if entry(n).takes("seed"))
        raise InputError(f"--seed is the seed of a packer that draws at random ({takers}); none of the "
                         f"packers audited ({', '.join(policies)}) takes one, so it would be ignored")
    for name, value in (("--rows", rows), ("--targets", args.targets), ("--tokens", args.tokens)):
        if value is not None and value < 0:
            raise InputError(f"{name} must be >= 0, got {value}")
    horizon = Budget("tokens", args.tokens) if args.tokens is not None else None
    return AuditPlan(policies, rows, eval_targets, prefixes, reference, plots, options, horizon)


def packer_config(args: argparse.Namespace, plan: AuditPlan) -> PackerConfig:
    """The loader settings of an ``audit`` invocation (validated)."""
    check_max_wait(args.max_wait, plan.policies)
    if args.permutation_seed < 0:
        raise InputError(f"--permutation-seed must be >= 0, got {args.permutation_seed}")
    rows = plan.rows
    from ._packers import streaming_capacity

    return PackerConfig(
        capacity=streaming_capacity(args), min_buffer=args.min_buffer, refill=args.refill,
        seed=RANDOM_SPAN_SEED if args.seed is None else args.seed,
        passes=args.passes, rows=rows, targets=args.targets if rows is None else None,
        exhausted="drain" if args.drain else "stop", max_wait=args.max_wait,
    )


def config_document(args: argparse.Namespace, plan: AuditPlan, config: PackerConfig) -> dict[str, Any]:
    """Everything that determines the report, for its config hash (inputs named, not read)."""
    inputs: dict[str, Any] = {"demo": bool(args.demo), "scale": args.scale}
    for key in ("lengths", "shards", "text", "data", "files_from", "eval_lengths", "eval_shards"):
        value = getattr(args, key, None)
        if value:
            inputs[key] = value
    if args.data or args.files_from:
        inputs.update({k: getattr(args, k) for k in ("format", "bos", "eos_id", "dtype", "field", "split",
                                                       "tokenizer", "per_line")})
    if args.text:
        inputs.update(per_line=args.per_line, text_column=args.text_column, tokenizer=args.tokenizer)
    return {"command": "audit", "inputs": inputs, "policies": plan.policies,
            "capacity": config.capacity, "min_buffer": config.min_buffer, "refill": list(config.batch_sizes),
            "seed": config.seed, "passes": config.passes, "rows": config.rows, "targets": config.targets,
            "tokens": plan.horizon.value if plan.horizon is not None else None,
            "exhausted": config.exhausted, "max_wait": config.max_wait, "engine": args.engine,
            "peer_options": {k: v for k, v in vars(args).items() if k in _PEER_KNOBS and v is not None},
            "permutations": args.permutations,
            "permutation_seed": args.permutation_seed, "eval_targets": plan.eval_targets,
            "eval_prefixes": list(plan.prefixes), "plots": plan.plots,
            **({"world_size": args.world_size, "row_group_size": args.row_group_size}
               if args.world_size is not None else {}),
            **({"sources": source_config(args)} if wants_sources(args) else {})}


def load_inputs(args: argparse.Namespace) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None,
                                                   str, str]:
    """The training and evaluation lengths with their labels."""
    train, evals, label, eval_label, _ = load_named_inputs(args)
    return train, evals, label, eval_label


def load_named_inputs(args: argparse.Namespace) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None,
                                                         str, str, list[str] | None]:
    """:func:`load_inputs` and the training documents' names (:func:`load_named_corpus`)."""
    if args.demo:
        demo = audit_demo(args.scale)
        return demo.lengths, demo.eval_lengths, demo.corpus_label, demo.eval_label, None
    train, label, names = load_named_corpus(args)
    if args.eval_lengths:
        from ..corpus import load_lengths

        return train, load_lengths(args.eval_lengths), label, Path(args.eval_lengths).name, names
    if args.eval_shards:
        from ..corpus import lengths_from_shards

        return (train, lengths_from_shards(args.eval_shards), label, f"{len(args.eval_shards)} shard(s)",
                names)
    return train, None, label, "", names


_PEER_KNOBS = ("window", "epochs", "framework_version", "peer_option")


def documents_file(args: argparse.Namespace, documents: int) -> str | None:
    """The per-document file to write: ``--documents``, else ``documents.csv`` for a small corpus, else none.

    ``documents`` counts the documents offered (corpus size times passes).
    """
    if args.no_documents:
        return None
    if args.documents is not None:
        return str(args.documents)
    return DOCUMENTS_FILES[0] if documents <= DOCUMENTS_DEFAULT_LIMIT else None


def _audit(args: argparse.Namespace, plan: AuditPlan, config: PackerConfig, train: npt.NDArray[np.int64],
           evals: npt.NDArray[np.int64] | None, label: str, eval_label: str,
           documents: bool = False, names: list[str] | None = None) -> AuditResult:
    """Every policy, streaming and peer, through :func:`run_audit` (in ``--workers`` processes)."""
    from ..distributed.executors import open_executor
    from ..distributed.pool_rules import pool_size
    from ..reporting import progress_bar
    from ._common import note

    def bar(desc: str, total: int | None) -> Callable[[int], None] | None:
        return progress_bar(desc, total, enabled=False if args.no_progress else None,
                            unit="task" if desc.endswith("tasks") else "row")

    workers = args.workers or os.cpu_count() or 1
    tasks = args.permutations + len(plan.policies) * (1 if evals is None else 2)  # run_audit's tasks
    capped = pool_size(workers, tasks)[1] if args.executor == "local" else None
    if capped:
        note("audit", capped)
    with open_executor(args.executor, workers=workers, tasks=tasks) as executor:
        return run_audit(
            train, config, policies=plan.policies, peer_options=plan.peer_options,
            seq_length=getattr(args, "seq_length", None),
            permutations=args.permutations, permutation_seed=args.permutation_seed, eval_lengths=evals,
            eval_targets=plan.eval_targets, eval_prefixes=plan.prefixes, engine=args.engine,
            corpus_label=label, eval_label=eval_label, progress=bar, executor=executor,
            horizon=plan.horizon, documents=documents, document_names=names,
        )


def _ranks(args: argparse.Namespace, plan: AuditPlan, config: PackerConfig, source: Any
           ) -> tuple[dict[str, Any] | None, list[str], list[str]]:
    """With ``--world-size``: the per-rank section (JSON, Markdown) and the policies failing on a rank."""
    if source is None:
        return None, [], []
    from ..distributed.ranks import audit_ranks

    t0 = time.perf_counter()
    execution: dict[str, Any] = {}
    # a TaskFailed caused by bad input inside a rank's task is still bad input (status 2: cli._exit)
    summaries = audit_ranks(source, args.world_size, config,
                            policies=plan.policies, row_group_size=args.row_group_size,
                            engine=args.engine, executor=args.executor, workers=args.workers,
                            execution=execution)
    doc, lines = rank_section(summaries)
    print(f"audit: {args.world_size} ranks x {len(summaries)} policies in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    failing = [f"{s.policy} (a rank)" for s in summaries if not s.identity_holds]
    return {"ranks": doc, "execution": {"ranks": execution}}, lines, failing


def _source_inputs(args: argparse.Namespace, train: npt.NDArray[np.int64]) -> tuple[Any, Any, Any]:
    """``(raw lengths, labels, funnel result)`` of the source options, or Nones without them."""
    if not wants_sources(args):
        return train, None, None
    from ._sources import load_funnel, load_labels

    return train, load_labels(args, int(train.size)), load_funnel(args, train)


def _sources(args: argparse.Namespace, plan: AuditPlan, config: PackerConfig, raw: npt.NDArray[np.int64],
             labels: Any, funnel: Any, writer: Any, sections: dict[str, Any] | None, md_lines: list[str],
             ranks_source: Any = None) -> tuple[Any, dict[str, Any], list[str]]:
    """The data-source audit: its ``sources`` JSON key, its Markdown section and its plot (and, with
    ``--world-size``, every rank's sources under ``sources.ranks``)."""
    from ..rendering.sources import SOURCES_PLOT, sources_markdown, write_sources_plot
    from ._sources import rank_sources_section, run_sources

    res = run_sources(args, raw, labels, funnel, config, plan.policies, peer_options=plan.peer_options,
                      seq_length=getattr(args, "seq_length", None), engine=args.engine)
    if plan.plots and res.packers:
        write_sources_plot(res, writer.path(SOURCES_PLOT), metadata=writer.png_metadata)
    lines = sources_markdown(res, plot=SOURCES_PLOT if plan.plots and res.packers else None)
    doc = res.to_dict()
    if ranks_source is not None:
        doc["ranks"], rank_lines = rank_sources_section(args, ranks_source, raw, labels, config,
                                                        plan.policies)
        lines += rank_lines
    return res, {**(sections or {}), "sources": doc}, [*md_lines, *lines]


def run(args: argparse.Namespace) -> int:
    """Run the audit and write the report.

    The options and ``--out`` are checked before anything is computed; the
    report is written as one unit (:class:`~packing_theory.reporting.ReportWriter`).
    Exit status 0; 1 when the mass identity fails for a policy (the report is
    still written, so the failure can be read).
    """
    from ..rendering.audit import REPORT_FILES, audit_headline, report_dict, write_report_files
    from ..rendering.sources import SOURCES_PLOT
    from ..reporting import ReportWriter

    t_start = time.perf_counter()
    check_source_options(args)
    plan = plan_audit(args)
    config = packer_config(args, plan)
    if args.workers < 0:
        raise InputError(f"--workers must be >= 0, got {args.workers}")
    check_rank_options(args, plan.policies)
    with ReportWriter(args.out, names=(*REPORT_FILES, SOURCES_PLOT),
                      config=config_document(args, plan, config), tool="packing-theory audit",
                      force=args.force, inputs=named_inputs(args)) as writer:
        from ..reporting import progress_bar

        reading = progress_bar("audit: reading the inputs", None, enabled=False if args.no_progress else None,
                               unit="step")
        try:
            train, evals, label, eval_label, names = load_named_inputs(args)
        finally:
            if reading is not None:
                reading.close()
        raw, labels, funnel = _source_inputs(args, train)
        if funnel is not None:  # the packers replay what the cleaning funnel keeps
            train = train[funnel.keep]
            if names is not None:
                names = [n for n, keep in zip(names, funnel.keep.tolist(), strict=True) if keep]
        doc_file = documents_file(args, int(train.size) * config.passes)
        if doc_file is not None and doc_file.endswith(".parquet"):
            from ..errors import import_optional

            import_optional("pyarrow", extra="parquet", purpose="--documents documents.parquet")
        ranks_source = None
        if args.world_size is not None:  # refuse a world size the inputs cannot feed before any replay
            ranks_source = rank_source(args, train, _tokenizer)
            check_world_size(ranks_source, args.world_size, args.row_group_size)
        t_loaded = time.perf_counter()

        result = _audit(args, plan, config, train, evals, label, eval_label, doc_file is not None, names)
        result.seconds["inputs"] = t_loaded - t_start
        sections, md_lines, rank_failing = _ranks(args, plan, config, ranks_source)
        sources = None
        if labels is not None:
            sources, sections, md_lines = _sources(args, plan, config, raw, labels, funnel, writer, sections,
                                                   md_lines, ranks_source)
        write_report_files(writer, result, plots=plan.plots, reference=plan.reference,
                           sections=sections, markdown=md_lines, documents_file=doc_file)
        writer.commit()
    if args.json:  # the document audit.json holds, the per-rank section included
        emit_json({**report_dict(result, reference=plan.reference, run=writer.run_info,
                                 documents_file=doc_file), **(sections or {})})
    drift = "" if sources is None else "; source drift flagged: " + (
        ", ".join(p.policy for p in sources.packers if p.drift.drifted) or "none")
    print(writer.summary_line("audit", f"{audit_headline(result, documents_file=doc_file)} "
                                       f"({result.corpus.documents:,} documents, "
                                       f"{time.perf_counter() - t_start:.1f} s{drift})"), file=sys.stderr)
    failing = [a.policy for a in result.policies if not a.mass.identity_holds or a.conservation_violations]
    if sources is not None:
        failing += [f"{p.policy} (a data source)" for p in sources.packers if not p.reconciles]
    failing += rank_failing
    if failing:
        print(f"audit: mass identity FAILS for {', '.join(failing)}", file=sys.stderr)
        return 1
    return 0
