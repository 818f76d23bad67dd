"""Audit quickstart: the four quantities of a practical audit on a slice of the default corpus.

Run:  python examples/audit_quickstart.py [--out DIR]   (default: a new temporary directory)

1. a streaming ledger over any packer's event stream (aggregates only);
2. one source's ledger line in detail mode;
3. several policies side by side with the startup-delay spread and an
   evaluation population, written as JSON + Markdown + a page (+ PNGs with matplotlib).

The full-size audit is ``packing-theory audit --demo`` (about 30 s).
"""

from __future__ import annotations

import argparse
import tempfile

import packing_theory as pt
from packing_theory import Packer, PackerConfig, feed_all
from packing_theory.audit import Ledger, evaluation_population
from packing_theory.corpus import default_lengths
from packing_theory.orchestration import EvalStream
from packing_theory.reporting import matplotlib_available

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default=None, help="report directory (default: a new temporary directory)")
args = parser.parse_args()

# A tenth of the calibrated default corpus and of autoresearch's row budget.
lengths = default_lengths(seed=0)[:84_685]
config = PackerConfig(capacity=2049, min_buffer=1000, refill=128, rows=24_397)

# 1. Aggregates from the event stream: mass, sources, protected set, strata.
ledger = Ledger.for_packer(config)
feed_all(Packer(config).events(lengths), ledger)
agg = ledger.result()
m = agg.mass
print(f"mass: {m.arrived_tokens:,} arrived = {m.emitted_tokens:,} emitted + {m.discarded_tokens:,} "
      f"discarded + {m.buffered_tokens:,} buffered  (identity holds: {m.identity_holds})")
print(f"sources: {agg.arrived_sources:,} arrived, {agg.started_sources:,} started, "
      f"{agg.never_started_sources:,} never started")
print(f"protected set: {agg.protected.members} sources, {agg.protected.tokens:,} tokens, "
      f"{agg.protected.share_of_buffered:.1%} of buffered mass, {agg.protected.started_members} started")
for row in agg.strata:
    if row.arrived_sources:
        print(f"  {row.label:>11}: retention {row.retention:6.1%}, never started {row.never_started_sources}")

# 2. Detail mode: one long source's ledger line.
detail = Ledger.for_packer(config, detail=True)
feed_all(Packer(config).events(lengths[:20_000]), detail)
longest = int(lengths[:20_000].argmax())
rec = detail.record(longest)
print(f"source {rec.source}: length {rec.length:,}, {len(rec.intervals)} placements, "
      f"buffered {rec.buffered:,}, first target {rec.first_target}")

# 3. Evaluation population at a small budget, then a side-by-side report.
evals = default_lengths(seed=1)[:5_000]
ev = evaluation_population(evals, config, targets=2_097_152, prefixes=(1_048_576,))
print("evaluation:", ev.verdict)

result = pt.audit_corpus(lengths, ["discard", "continue", "segment-first"], pt.Settings(capacity=2049),
                         horizon=pt.Budget("rows", 24_397), permutations=5,
                         evaluation=EvalStream(evals, 2_097_152, (1_048_576,)),
                         label="default corpus, first 84,685 sources")
print(result.headline())
out = args.out or tempfile.mkdtemp(prefix="audit-quickstart-")
files = pt.write_report(result, out, plots=matplotlib_available())
print(f"wrote {files.html}, {files.markdown}, {files.json} and {len(files.plots)} plots")
