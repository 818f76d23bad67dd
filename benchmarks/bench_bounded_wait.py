"""Benchmark: what the bounded-wait guarantee costs.

Method
------
* Corpora.

  - *default*: :func:`packing_theory.corpus.default_lengths` (seed 0, the
    calibrated stand-in for the paper's census: 846,848 sources), replayed for
    the autoresearch budget of 243,968 rows.
  - *real text*: :func:`packing_theory.corpus.load_local_text` with every
    source present on the machine (pydoc topics, stdlib docstrings, system
    documentation; the manifest digest and counts are recorded), shuffled with
    seed 0, tokenized two ways: UTF-8 bytes plus BOS, and a byte-level BPE with
    8,192 tokens (autoresearch's vocabulary size) trained on the same corpus
    with ``tokenizers``. Replayed for ``--text-passes`` (default 3) passes with
    a persistent buffer, until the stream cannot refill to B (``stop``).

* Settings: R = 2049, B = 1000, refill 128 (autoresearch), ``stop`` at
  exhaustion. Policies ``discard``, ``continue``, ``segment-first`` and
  ``bounded-wait`` at the recommended A, plus a sweep of A for ``bounded-wait``.
  Peers are not benchmarked here; ``packing_theory.audit.costs`` computes the same
  quantities for them from their event streams (``packing-theory compare``).
* Costs: :class:`packing_theory.audit.costs.CostAccumulator` on the fast engine's
  event stream (definitions in that module's docstring); for ``bounded-wait``
  also :class:`packing_theory.invariant.wait_bound.StartDelayMonitor` with the proved
  bound, whose verdict (no violation: every start within the bound, no
  unstarted occurrence past it, full rows, no discard) is recorded.
* Time: wall-clock of the replay plus the cost accounting, one run each, on a
  shared 2-core machine: provisional. The ratio ``bounded-wait`` /
  ``continue`` on the same corpus in the same process is the comparable
  number.

Run: ``python benchmarks/bench_bounded_wait.py`` (about 5 minutes here);
results go to ``benchmarks/results/bounded_wait.{json,md}`` and
``benchmarks/results/bounded_wait_*.png``. ``--rows`` / ``--sweep`` /
``--text-passes`` change the budget, the A values and the passes;
``--no-bpe`` skips the BPE tokenization, ``--no-system-docs`` keeps the real-text
corpus to the standard library.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import packing_theory as pt
from packing_theory.audit.costs import CostAccumulator, PackerCosts, costs_table
from packing_theory.corpus import default_lengths
from packing_theory.corpus.local_text import LOCAL_SOURCES, bpe_lengths, load_local_text, train_byte_bpe
from packing_theory.engine.policies import DEFAULT_MAX_WAIT
from packing_theory.invariant.wait_bound import StartDelayMonitor

R, B, REFILL = 2049, 1000, 128
BUDGET_ROWS = 243_968
SWEEP = (0, 4, 16, 32, 64, 256, 1024, 4096, 16384)
BASELINES = ("discard", "continue", "segment-first")
RESULTS = Path(__file__).resolve().parent / "results"


def run_one(lengths: Any, policy: str, *, rows: int | None, passes: int, max_wait: int | None,
            label: str) -> dict[str, Any]:
    """Replay once; return costs, the bounded-wait verdict and the time.

    Every policy gets the same accounting (costs and start-delay monitor), so the
    times are comparable; the monitor's verdict is only meaningful with a bound.
    """
    config = pt.PackerConfig(capacity=R, min_buffer=B, refill=REFILL, policy=policy, rows=rows,
                             passes=passes, max_wait=max_wait)
    packer = pt.Packer(config)
    acc = CostAccumulator(R, label)
    mon = StartDelayMonitor.for_packer(packer, max_recorded=10)
    t0 = time.perf_counter()
    costs, _ = pt.feed_all(packer.stream(lengths), acc, mon)
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {"label": label, "policy": policy, "max_wait": config.wait_threshold,
                           "seconds": round(seconds, 2), "costs": costs.to_dict(),
                           "stop_reason": acc.horizon.stop_reason if acc.horizon else None}
    if policy == "bounded-wait":
        rep = mon.result()
        out["start_delay_bound_rows"] = config.start_delay_bound
        out["monitor"] = {"ok": rep.ok, "violations": rep.violations,
                          "max_start_delay_rows": rep.max_start_delay_rows,
                          "max_unstarted_wait_rows": rep.max_unstarted_wait_rows,
                          "rows_full": rep.rows_full, "discarded_tokens": rep.discarded_tokens}
    print(f"  {label:<22} {seconds:7.1f} s  max delay {costs.start_delay_max}  "
          f"p99 {costs.start_delay_p99}  never started {costs.never_started_sources:,}  "
          f"no-context {costs.share_without_context:.4f}", file=sys.stderr, flush=True)
    return out


def run_corpus(name: str, lengths: Any, *, rows: int | None, passes: int, sweep: tuple[int, ...],
               recommended: int) -> dict[str, Any]:
    print(f"== {name}: {len(lengths):,} documents, {int(np.sum(lengths)):,} tokens", file=sys.stderr)
    runs = [run_one(lengths, p, rows=rows, passes=passes, max_wait=None, label=p) for p in BASELINES]
    runs.append(run_one(lengths, "bounded-wait", rows=rows, passes=passes, max_wait=recommended,
                        label=f"bounded-wait A={recommended}"))
    sweep_runs = [run_one(lengths, "bounded-wait", rows=rows, passes=passes, max_wait=a,
                          label=f"bounded-wait A={a}") for a in sweep if a != recommended]
    by_a = {r["max_wait"]: r for r in [runs[-1], *sweep_runs]}
    cont = next(r for r in runs if r["policy"] == "continue")
    return {
        "corpus": name, "documents": len(lengths), "tokens": int(np.sum(lengths)),
        "long_documents": int(np.sum(np.asarray(lengths) > R)), "max_length": int(np.max(lengths)),
        "rows_budget": rows, "passes": passes, "runs": runs,
        "sweep": [by_a[a] for a in sorted(by_a)],
        "time_ratio_bounded_wait_vs_continue": round(runs[-1]["seconds"] / cont["seconds"], 2),
    }


def recommend(default_corpus: dict[str, Any], budget: int) -> dict[str, Any]:
    """The recommended A: see ``rule`` in the returned dict (and the report)."""
    sweep = default_corpus["sweep"]
    cont = next(r for r in default_corpus["runs"] if r["policy"] == "continue")["costs"]
    limit = 0.01 * budget
    eligible = [r for r in sweep if r["start_delay_bound_rows"] <= limit]
    pool = eligible or sweep
    best = min(pool, key=lambda r: (r["costs"]["share_without_context"], -r["max_wait"]))
    return {
        "A": best["max_wait"],
        "bound_rows": best["start_delay_bound_rows"],
        "rule": ("among the swept A whose proved bound A + B + 128 - 2 is at most 1% of the training "
                 f"budget ({limit:,.0f} of {budget:,} rows, so that every source is guaranteed to start "
                 "within the first 1% of the run after its arrival), the A with the smallest share of "
                 "targets without their document's preceding context on the default corpus (ties: the "
                 "larger A)"),
        "share_without_context": best["costs"]["share_without_context"],
        "continue_share_without_context": cont["share_without_context"],
        "matches_DEFAULT_MAX_WAIT": best["max_wait"] == DEFAULT_MAX_WAIT,
    }


def _plot(results: dict[str, Any], out: Path) -> list[str]:
    if importlib.util.find_spec("matplotlib") is None:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names: list[str] = []
    panels = [
        ("start_delay_max", "max start delay (rows)"),
        ("start_delay_p99", "p99 start delay (rows)"),
        ("share_without_context", "targets without preceding context"),
        ("fragments_per_long_mean", "fragments per long source (mean)"),
        ("long_never_started", "long occurrences never started"),
        ("unstarted_wait_max", "oldest unstarted wait (rows, censored)"),
    ]
    for corpus in results["corpora"]:
        fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
        xs = [max(r["max_wait"], 0.5) for r in corpus["sweep"]]
        for ax, (key, title) in zip(axes.flat, panels, strict=True):
            ys = [r["costs"][key] if r["costs"][key] is not None else np.nan for r in corpus["sweep"]]
            ax.plot(xs, ys, "o-", color="C3", label="bounded-wait (A)")
            if key == "start_delay_max":
                ax.plot(xs, [r["start_delay_bound_rows"] for r in corpus["sweep"]], "k--",
                        label="proved bound A+B+b-2")
            for i, r in enumerate(x for x in corpus["runs"] if x["policy"] != "bounded-wait"):
                v = r["costs"][key]
                if v is not None:
                    ax.axhline(v, color=f"C{i}", lw=1, ls=":", label=r["label"])
            ax.set_xscale("log")
            if key in ("start_delay_max", "start_delay_p99", "unstarted_wait_max"):
                ax.set_yscale("symlog", linthresh=100)
                ax.set_ylim(bottom=0)
            ax.set_xlabel("A (rows; 0 drawn at 0.5)")
            ax.set_title(title, fontsize=10)
        axes.flat[0].legend(fontsize=7)
        fig.suptitle(f"bounded-wait sweep — {corpus['corpus']} (R={R}, B={B}, refill {REFILL})")
        fig.tight_layout()
        name = f"bounded_wait_{corpus['key']}.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        names.append(name)
    return names


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4f}" if v < 1 else f"{v:.2f}"
    return f"{v:,}"


def _markdown(results: dict[str, Any], pngs: list[str]) -> str:
    lines = ["# bounded-wait: what the guarantee costs", ""]
    command = f"python benchmarks/bench_bounded_wait.py {results['argv']}".strip()
    lines.append(f"Generated by `{command}` (Python {platform.python_version()}, {platform.platform()}).")
    lines.append("Method: see the docstring of `benchmarks/bench_bounded_wait.py`; every quantity is "
                 "defined in `packing_theory/costs.py`. Times are single runs on a shared machine "
                 "(provisional); the ratio to `continue` in the same run is the comparable figure.")
    lines.append("")
    rec = results["recommendation"]
    lines.append(f"**Recommended default: A = {rec['A']}** (proved bound {rec['bound_rows']:,} rows; "
                 f"share of targets without preceding context {rec['share_without_context']:.4f} vs "
                 f"{rec['continue_share_without_context']:.4f} for continue). Rule: {rec['rule']}. "
                 + ("This is `DEFAULT_MAX_WAIT`." if rec["matches_DEFAULT_MAX_WAIT"] else
                    f"**`DEFAULT_MAX_WAIT` = {DEFAULT_MAX_WAIT} differs: update it.**"))
    lines.append("")
    for corpus in results["corpora"]:
        lines.append(f"## {corpus['corpus']}")
        lines.append("")
        budget = (f"{corpus['rows_budget']:,} rows" if corpus["rows_budget"]
                  else f"{corpus['passes']} passes until the stream cannot refill to B")
        lines.append(f"{corpus['documents']:,} documents, {corpus['tokens']:,} tokens, "
                     f"{corpus['long_documents']:,} longer than R (max {corpus['max_length']:,}); "
                     f"budget: {budget}.")
        lines.append("")
        costs = [PackerCosts(**r["costs"]) for r in corpus["runs"]]
        lines.append(costs_table(costs))
        lines.append("")
        lines.append("Sweep of A (bounded-wait):")
        lines.append("")
        lines.append("| A | proved bound | max delay | p99 delay | oldest unstarted (censored) | "
                     "sources never started | long never started | fragments/long | without context | "
                     "monitor | time s |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in corpus["sweep"]:
            c = r["costs"]
            m = r["monitor"]
            verdict = "ok" if m["ok"] else f"{m['violations']} violations"
            cells = [r["max_wait"], r["start_delay_bound_rows"], c["start_delay_max"], c["start_delay_p99"],
                     c["unstarted_wait_max"], c["never_started_sources"], c["long_never_started"],
                     c["fragments_per_long_mean"],
                     c["share_without_context"]]
            lines.append("| " + " | ".join(_fmt(v) for v in cells) + f" | {verdict} | {r['seconds']:.1f} |")
        lines.append("")
        lines.append(f"Replay + accounting time, bounded-wait (recommended A) / continue: "
                     f"{corpus['time_ratio_bounded_wait_vs_continue']}x.")
        lines.append("")
    if "manifest" in results:
        m = results["manifest"]
        lines.append("Real-text corpus manifest: " + ", ".join(
            f"{k}: {v['documents']:,} documents" for k, v in m["sources"].items())
            + f"; sha256 {m['sha256'][:16]}…; {m['python'].split()[0]}.")
        lines.append("")
    for name in pngs:
        lines.append(f"![{name}]({name})")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=BUDGET_ROWS, help="default-corpus row budget")
    parser.add_argument("--sweep", default=",".join(map(str, SWEEP)), help="A values, comma-separated")
    parser.add_argument("--text-passes", type=int, default=3, help="real-text corpus passes (default 3)")
    parser.add_argument("--no-bpe", action="store_true", help="skip the BPE tokenization")
    parser.add_argument("--no-system-docs", action="store_true", help="real text from the stdlib only")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="re-render the report and plots from a results JSON (no replay)")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        results = json.loads(args.from_json.read_text(encoding="utf-8"))
        args.out.mkdir(parents=True, exist_ok=True)
        pngs = [] if args.no_plots else _plot(results, args.out)
        (args.out / "bounded_wait.md").write_text(_markdown(results, pngs), encoding="utf-8")
        return 0
    sweep = tuple(sorted({int(a) for a in args.sweep.split(",") if a.strip()}))
    recommended = DEFAULT_MAX_WAIT
    results: dict[str, Any] = {"argv": " ".join(sys.argv[1:] if argv is None else argv),
                               "R": R, "B": B, "refill": REFILL, "sweep": list(sweep),
                               "python": sys.version, "platform": platform.platform(), "corpora": []}
    t_start = time.perf_counter()
    default = default_lengths()
    results["corpora"].append({"key": "default", **run_corpus(
        "default corpus (calibrated synthetic, seed 0)", default, rows=args.rows, passes=1,
        sweep=sweep, recommended=recommended)})
    del default
    sources = LOCAL_SOURCES if not args.no_system_docs else ("pydoc_topics", "stdlib_docstrings")
    corpus = load_local_text(sources)
    results["manifest"] = {k: v for k, v in corpus.manifest.items() if k != "sources"}
    results["manifest"]["sources"] = {
        k: {kk: (len(vv) if kk == "files" else vv) for kk, vv in v.items()}
        for k, v in corpus.manifest["sources"].items()
    }
    text_bytes = corpus.lengths().tolist()
    results["corpora"].append({"key": "text_bytes", **run_corpus(
        "real text (local docs), bytes tokenizer", text_bytes, rows=None, passes=args.text_passes,
        sweep=sweep, recommended=recommended)})
    if not args.no_bpe and importlib.util.find_spec("tokenizers") is not None:
        t0 = time.perf_counter()
        tok = train_byte_bpe(corpus.texts(), vocab_size=8192)
        bpe = bpe_lengths(tok, corpus.texts()).tolist()
        results["bpe_training_seconds"] = round(time.perf_counter() - t0, 1)
        results["corpora"].append({"key": "text_bpe", **run_corpus(
            "real text (local docs), byte-level BPE 8192", bpe, rows=None, passes=args.text_passes,
            sweep=sweep, recommended=recommended)})
    results["recommendation"] = recommend(results["corpora"][0], args.rows)
    results["seconds"] = round(time.perf_counter() - t_start, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    pngs = [] if args.no_plots else _plot(results, args.out)
    (args.out / "bounded_wait.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (args.out / "bounded_wait.md").write_text(_markdown(results, pngs), encoding="utf-8")
    bad = [r["label"] for c in results["corpora"] for r in [*c["runs"], *c["sweep"]]
           if "monitor" in r and not r["monitor"]["ok"]]
    print(f"wrote {args.out}/bounded_wait.md ({results['seconds']} s); monitor violations: {bad or 'none'}",
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
