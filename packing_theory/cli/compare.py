"""``packing-theory compare``: every chosen packer side by side on one corpus.

``packing-theory compare --demo`` compares every registered packer (the
streaming policies and every peer) on the first :data:`DEMO_DOCUMENTS`
documents of the embedded default corpus
(:func:`packing_theory.orchestration.compare_demo`) and writes
``compare.json``, ``compare.md`` and PNG plots to ``./compare-report/``
through the safe report writer (checked and locked before the computation,
swapped in as one unit). It prints one line; ``--json`` prints the JSON.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..engine.horizon import Budget
from ..engine.replay import ENGINES
from ..errors import InputError
from ..orchestration import compare_packers, default_packers
from ..orchestration.demo import COMPARE_DEMO_DOCUMENTS, compare_demo
from ._common import emit_json, existing_path, int_at_least
from ._inputs import add_data_options, check_input_options, data_inputs, load_data
from ._packers import is_peer, parse_options
from ._paths import named_inputs
from ._ranks import add_executor_option, check_executor_option
from ._sources import add_source_options, check_source_options, source_config, wants_sources

MAX_COMPARE_CAPACITY = 2**24
"""The widest row ``compare`` takes (16,777,216 tokens, far above any context length in use): some
peers' work grows with the row width (a 10**8-token row takes 30 s on a 24-document corpus), and a
width beyond 2**63 used to end in exit 3."""

__all__ = ["DEMO_DOCUMENTS", "register", "run"]

DEMO_DOCUMENTS = COMPARE_DEMO_DOCUMENTS
"""Documents of ``default_lengths(0)`` the demo compares (a prefix keeps it under a minute)."""


def register(sub: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "compare", help="every packer side by side: utilization, padding, drops, sources never started",
        description="Replay one corpus with each chosen packer — streaming policies and peer packers — cut "
                    "at one common horizon (by default the common token horizon, see below), rank them by "
                    "the tokens they never trained, and report utilization, padding, dropped tokens, "
                    "filtered and never-started sources, exposure by length stratum, what the trainer gets "
                    "and the invariant verdict. Writes compare.json, compare.md and PNG plots.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--demo", action="store_true",
                     help=f"the first --documents (default {DEMO_DOCUMENTS:,}) of the default corpus")
    src.add_argument("--lengths", type=existing_path("--lengths"),
                     metavar="FILE.npy", help="1-D integer .npy array of BOS-inclusive lengths")
    add_data_options(parser, src, tokenizer=True)
    parser.add_argument("--per-line", action="store_true", help="--data text files: one document per line")
    parser.add_argument("--documents", type=int, default=DEMO_DOCUMENTS, help="--demo: corpus prefix size")
    parser.add_argument("--policy", action="append", metavar="P[,P...]",
                        help="packers to compare (repeatable; default: every streaming policy and peer)")
    parser.add_argument("--capacity", type=int_at_least("--capacity", 2, MAX_COMPARE_CAPACITY),
                        default=2049, metavar="R", help="streaming row width R")
    parser.add_argument("--seq-length", type=int_at_least("--seq-length", 1, MAX_COMPARE_CAPACITY - 1),
                        default=None, metavar="L",
                        help="the peers' sequence length (default R - 1); each peer's row width follows from "
                             "it by its framework's rule (see `packing-theory policies`)")
    parser.add_argument("--min-buffer", type=int_at_least("--min-buffer", 1), default=1000, metavar="B",
                        help="streaming B (default 1000)")
    parser.add_argument("--refill", type=int_at_least("--refill", 1),
                        default=128, help="streaming refill batch (default 128)")
    hz = parser.add_argument_group(
        "horizon (default: the common token horizon — every packer is cut once it has placed the most "
        "tokens that every packer reaches, the fewest any packer places at its natural end; packers are "
        "ranked by never-trained tokens there)")
    one = hz.add_mutually_exclusive_group()
    one.add_argument("--rows", type=int, default=None, help="cut every packer after this many rows")
    one.add_argument("--targets", type=int, default=None,
                     help="cut every packer after ceil(targets / (R - 1)) rows")
    one.add_argument("--tokens", type=int, default=None,
                     help="cut every packer at the row where its placed document tokens reach this many")
    one.add_argument("--natural-end", action="store_true",
                     help="let each packer run to its own end instead (not like for like)")
    hz.add_argument("--drain", action="store_true",
                    help="streaming policies: when the stream cannot refill to B, keep selecting until the "
                         "buffer is empty (outside the theorem) instead of stopping")
    hz.add_argument("--passes", type=int_at_least("--passes", 1),
                    default=1, help="streaming policies: corpus passes (default 1)")
    parser.add_argument("--peer-option", action="append", default=[], metavar="POLICY:KEY=VALUE",
                        help="a constructor option of one peer, e.g. trl-bfd:window=500 (repeatable)")
    parser.add_argument("--out", default="compare-report", metavar="DIR",
                        help="report directory (default ./compare-report), checked and locked before the "
                             "comparison runs; the report's files are swapped in together")
    parser.add_argument("--no-plots", action="store_true",
                        help="skip the PNG plots (the previous run's plots are removed)")
    parser.add_argument("--force", action="store_true",
                        help="replace report-named files in --out that packing-theory did not write")
    parser.add_argument("--no-progress", action="store_true",
                        help="never show a progress bar (shown by default on a terminal)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="run the packers in N processes, one task per packer (default 1: in this "
                             "process; 0: one per CPU); the report is the same apart from the timings")
    parser.add_argument("--engine", choices=ENGINES, default="fast",
                        help="fast (default: every packer's pure Python events), compiled (streaming "
                             "policies on the compiled engine where declared, the peers' event batches built "
                             "as numpy columns; numba: pip install 'packing-theory[fast]') or reference; the "
                             "report is the same apart from the timings")
    add_executor_option(parser)
    add_source_options(parser)
    parser.add_argument("--json", action="store_true", help="also print the JSON on standard output")
    parser.set_defaults(run=run)


def _names(values: list[str] | None) -> list[str]:
    """The ``--policy`` packers (default: every one), checked before anything runs."""
    known = default_packers()
    if not values:
        return known
    out: list[str] = []
    for v in values:
        for name in (n.strip() for n in v.split(",") if n.strip()):
            if name not in known:
                raise InputError(f"--policy got {name!r}, not a packer: see packing-theory policies "
                                 f"({', '.join(known)})")
            if name in out:
                raise InputError(f"--policy names {name!r} twice")
            out.append(name)
    return out


def _options(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, Any]]:
    per: dict[str, list[str]] = {}
    for item in args.peer_option:
        policy, sep, rest = item.partition(":")
        if not sep or not is_peer(policy):
            raise InputError(f"--peer-option must be POLICY:KEY=VALUE with a peer POLICY, got {item!r}")
        if policy not in names:
            raise InputError(f"--peer-option names {policy!r}, which is not compared")
        per.setdefault(policy, []).append(rest)
    return {p: parse_options(p, items) for p, items in per.items()}


def _config(args: argparse.Namespace, names: list[str], options: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Everything that determines the report, for its config hash (inputs named, not read)."""
    inputs: dict[str, Any] = {"demo": bool(args.demo)}
    if args.demo:
        inputs["documents"] = args.documents
    elif args.lengths:
        inputs["lengths"] = args.lengths
    else:
        inputs.update(data_inputs(args))
    return {"command": "compare", "inputs": inputs, "packers": names, "capacity": args.capacity,
            "seq_length": args.seq_length, "min_buffer": args.min_buffer, "refill": args.refill,
            "peer_options": options, "plots": not args.no_plots, "horizon": str(_horizon(args)),
            "drain": args.drain, "passes": args.passes,
            **({"sources": source_config(args)} if wants_sources(args) else {})}


def _horizon(args: argparse.Namespace) -> Budget | str:
    """``--rows`` / ``--targets`` / ``--tokens`` as a budget, ``natural`` or the default ``common``."""
    for unit in ("rows", "targets", "tokens"):
        value = getattr(args, unit)
        if value is not None:
            if value < 0:
                raise InputError(f"--{unit} must be >= 0, got {value}")
            return Budget(unit, value)
    return "natural" if args.natural_end else "common"


def run(args: argparse.Namespace) -> int:
    """Compare and write the report; exit status 0 (1 if a mass identity fails).

    The options and ``--out`` are checked before anything is computed; the
    report is written as one unit (:class:`~packing_theory.reporting.ReportWriter`).
    """
    import numpy as np

    from .._allocator import keep_freed_memory
    from ..distributed.executors import open_executor
    from ..rendering.compare import REPORT_FILES, write_report_files
    from ..rendering.sources import SOURCES_PLOT
    from ..reporting import ReportWriter, progress_bar, require_matplotlib

    t0 = time.perf_counter()
    plots = not args.no_plots
    require_matplotlib(plots)
    check_source_options(args)
    if not args.demo:
        check_input_options(args)
    names = _names(args.policy)
    options = _options(args, names)
    if args.workers < 0:
        raise InputError(f"--workers must be >= 0, got {args.workers}")
    check_executor_option(args)
    horizon = _horizon(args)
    if args.passes < 1:
        raise InputError(f"--passes must be >= 1, got {args.passes}")
    if args.seq_length is not None and args.seq_length < 1:
        raise InputError(f"--seq-length must be >= 1, got {args.seq_length}")
    with ReportWriter(args.out, names=(*REPORT_FILES, SOURCES_PLOT), config=_config(args, names, options),
                      inputs=named_inputs(args),
                      tool="packing-theory compare", force=args.force) as writer:
        if args.demo:
            demo = compare_demo(args.documents)
            lengths, label = demo.lengths, demo.label
        elif args.lengths:
            from ..lengths import load_lengths

            lengths, label = load_lengths(args.lengths), Path(args.lengths).name
        else:
            lengths, label, _ = load_data(args, quiet=True)
        raw = np.asarray(lengths)
        sources, extra = _sources_inputs(args, raw, names, options)
        if sources is not None and sources.funnel is not None:
            lengths = raw[sources.funnel.keep]  # the packers replay what the cleaning funnel keeps
        bar = progress_bar("compare", len(names), enabled=False if args.no_progress else None, unit="packer")
        keep_freed_memory()  # before the worker processes start: they inherit it
        try:
            with open_executor(args.executor, workers=args.workers, tasks=len(names)) as executor:
                cmp = compare_packers(np.asarray(lengths), names, capacity=args.capacity,
                                      seq_length=args.seq_length, min_buffer=args.min_buffer,
                                      refill=args.refill, peer_options=options, corpus_label=label,
                                      progress=bar, executor=executor, horizon=horizon,
                                      exhausted="drain" if args.drain else "stop", passes=args.passes,
                                      engine=args.engine)
        finally:
            if bar is not None:
                bar.close()
        if sources is not None and plots and sources.packers:
            from ..rendering.sources import write_sources_plot

            write_sources_plot(sources, writer.path(SOURCES_PLOT), metadata=writer.png_metadata)
        write_report_files(writer, cmp, plots=plots, **extra)
        writer.commit()
    if args.json:
        emit_json(cmp.to_dict(writer.run_info))
    drift = "" if sources is None else "; source drift flagged: " + (
        ", ".join(p.policy for p in sources.packers if p.drift.drifted) or "none")
    print(writer.summary_line("compare", f"{cmp.headline()} ({cmp.documents:,} documents, "
                                         f"{time.perf_counter() - t0:.1f} s{drift})"), file=sys.stderr)
    ok = all(c.identity_holds for c in cmp.columns) and (sources is None or all(
        p.reconciles for p in sources.packers))
    return 0 if ok else 1


def _sources_inputs(args: argparse.Namespace, raw: Any, names: list[str], options: dict[str, dict[str, Any]]
                    ) -> tuple[Any, dict[str, Any]]:
    """With source options: the data-source audit (one pass, compare's row widths) and its report parts."""
    if not wants_sources(args):
        return None, {}
    from ..engine.policies import PackerConfig
    from ..registry import entry
    from ..rendering.sources import SOURCES_PLOT, sources_markdown
    from ._sources import load_funnel, load_labels, run_sources

    labels = load_labels(args, int(raw.size))
    funnel = load_funnel(args, raw)
    L = args.capacity - 1 if args.seq_length is None else args.seq_length
    widths = {n: entry(n).capacity_for(entry(n).row_width.admissible(L), options.get(n, {}))
              for n in names if is_peer(n)}
    config = PackerConfig(capacity=args.capacity, min_buffer=args.min_buffer, refill=args.refill)
    res = run_sources(args, raw, labels, funnel, config, names, peer_options=options, peer_widths=widths)
    plot = SOURCES_PLOT if not args.no_plots and res.packers else None
    return res, {"sections": {"sources": res.to_dict()}, "markdown": sources_markdown(res, plot=plot)}
