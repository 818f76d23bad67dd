"""Benchmark: the training ledger's cost — per step beside a tiny model, per span on disk, per certificate.

Method
------
Every part runs in a fresh ``python`` process; its peak RSS is ``VmHWM`` of
``/proc/self/status`` (the child's own peak, interpreter and imports
included); times are CPU seconds of that process (``time.process_time``) and
wall seconds, with torch on one thread. The load average of the machine is
recorded before each part.

1. **Overhead per step.** A one-layer ``LlamaForCausalLM`` (hidden 16,
   vocabulary 512, built from a config) trains on rows packed by
   ``trl-bfd`` (R = 256, 8 rows per step, Hugging Face layout: ``input_ids``,
   ``labels``, ``position_ids``, ``attention_mask``) from 4,000 documents of
   2-399 tokens: the same steps with and without
   ``TrainingLedger.observe`` + ``end_step``; then the ledger alone over the
   same batches.
   **Identity at scale**: 200,000 documents of 2-399 tokens, 8 rows of
   2,049 per step (``trl-bfd`` with ``window=None``, so that the rows hold
   documents from the whole corpus): the ledger alone against the naive
   reference (each segment looked up by a scan of every document, stopping
   at the first match).
2. **Bytes per document span**: the ledger file of part 1, and ledgers of
   20,000 rows of three packers (our records' path) at zlib level 1 and 0.
3. **Certificates, 10^6 steps x 8 ranks**: two certificate files (256 MB
   each) that differ at one step and rank; :func:`compare_certificates`
   (blocks of 65,536 steps) against the naive reference (both files read
   whole and compared). Then the chain recomputed from a merged ledger of
   8 ranks x 125,000 steps (10 spans a step): ``certify``'s rate per step
   record.

Run: ``python benchmarks/bench_training_ledger.py [--quick]``; results go to
``benchmarks/results/training_ledger.{json,md}``. ``--quick`` divides the sizes
by 10 (a smoke run; the committed results are the full run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import json, os, sys, time, tempfile
import numpy as np
def peak_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
def clock():
    return time.process_time(), time.perf_counter()
"""

OVERHEAD = """
import torch
torch.set_num_threads(1)
from packing_theory.adapters import pack_rows
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.rows import group_rows
from packing_theory.registry import build_packer
from packing_theory.training import TrainingLedger
from transformers import LlamaConfig, LlamaForCausalLM
STEPS = {steps}
rng = np.random.default_rng(0)
docs = TokenDocuments.from_lists([[1, *rng.integers(4, 512, size=int(m) - 1).tolist()]
                                  for m in rng.integers(2, 120, size=4000)])
rows = list(group_rows(build_packer("trl-bfd", 256).events(docs.lengths()), 256))
batches = []
for s in range(STEPS):
    f = pack_rows(rows[8 * s : 8 * s + 8], docs, 256).fields("row")
    batches.append({{"input_ids": torch.tensor(f["input_ids"]), "labels": torch.tensor(f["labels"]),
                    "position_ids": torch.tensor(f["position_ids"]),
                    "attention_mask": torch.tensor((f["segment_ids"] > 0).astype("int64"))}})
torch.manual_seed(0)
config = LlamaConfig(vocab_size=512, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256)
model = LlamaForCausalLM(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
def train(ledger):
    c0, w0 = clock()
    for b in batches:
        if ledger is not None:
            ledger.observe(b)
        model(**b).loss.backward()
        opt.step(); opt.zero_grad()
        if ledger is not None:
            ledger.end_step()
    c1, w1 = clock()
    return (c1 - c0) / STEPS, (w1 - w0) / STEPS
train(None)  # warm-up
base = train(None)
path = os.path.join(tempfile.mkdtemp(), "l.ptl")
t0 = clock()
ledger = TrainingLedger(path, docs)
t1 = clock()
with_ledger = train(ledger)
ledger.close()
alone = TrainingLedger(os.path.join(os.path.dirname(path), "m.ptl"), docs)
c0, w0 = clock()
for b in batches:
    alone.observe(b); alone.end_step()
c1, w1 = clock()
alone.close()
status = {{"steps": STEPS, "rows_per_step": 8, "row_width": 256, "documents": len(docs),
          "index_build_cpu_s": t1[0] - t0[0],
          "train_cpu_s_per_step": base[0], "train_wall_s_per_step": base[1],
          "with_ledger_cpu_s_per_step": with_ledger[0], "with_ledger_wall_s_per_step": with_ledger[1],
          "ledger_alone_cpu_s_per_step": (c1 - c0) / STEPS, "ledger_alone_wall_s_per_step": (w1 - w0) / STEPS,
          "spans": ledger.spans, "bytes": ledger.bytes_written,
          "bytes_per_span": ledger.bytes_written / ledger.spans}}
"""

IDENTITY = """
from packing_theory.adapters import pack_rows
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.rows import group_rows
from packing_theory.registry import build_packer
from packing_theory.training import DocumentIndex, TrainingLedger
N, STEPS, NAIVE = {docs}, {steps}, {naive}
rng = np.random.default_rng(5)
offsets = np.r_[0, np.cumsum(rng.integers(2, 400, size=N))]
tokens = rng.integers(4, 50000, size=int(offsets[-1]))
tokens[offsets[:-1]] = 1  # BOS
docs = TokenDocuments(tokens, offsets)
rows = []  # window=None: one best-fit pass over the whole corpus, so rows draw from every part of it
for row in group_rows(build_packer("trl-bfd", 2049, window=None).events(docs.lengths()), 2049):
    rows.append(row)
    if len(rows) == 8 * STEPS:
        break
batches = []
for s in range(STEPS):
    f = pack_rows(rows[8 * s : 8 * s + 8], docs, 2049).fields("row")
    batches.append({{"input_ids": f["input_ids"], "labels": f["labels"], "position_ids": f["position_ids"],
                    "attention_mask": (f["segment_ids"] > 0).astype("int64")}})
c0, _ = clock()
index = DocumentIndex(docs)
c1, _ = clock()
ledger = TrainingLedger(os.path.join(tempfile.mkdtemp(), "l.ptl"), index)
for b in batches:
    ledger.observe(b); ledger.end_step()
ledger.close()
c2, _ = clock()
lengths = docs.lengths()
found = 0
for b in batches[:NAIVE]:  # naive: each segment looked up by scanning every document from its start
    ids, pos, att = b["input_ids"], b["position_ids"], b["attention_mask"]
    for r in range(ids.shape[0]):
        starts = np.flatnonzero((pos[r] == 0) & (att[r] == 1))
        ends = np.r_[starts[1:], int(att[r].sum())]
        for s, e in zip(starts, ends):
            seg = ids[r, s:e]
            for d in range(len(docs)):
                if lengths[d] >= seg.size and np.array_equal(docs[d][: seg.size], seg):
                    found += 1
                    break
c3, _ = clock()
status = {{"documents": N, "steps": STEPS, "naive_steps": NAIVE, "spans": ledger.spans,
          "index_build_cpu_s": c1 - c0, "ledger_cpu_s_per_step": (c2 - c1) / STEPS,
          "naive_cpu_s_per_step": (c3 - c2) / NAIVE, "naive_segments_found": found}}
"""

BYTES = """
from packing_theory.adapters import pack_rows
from packing_theory.corpus.documents import TokenDocuments
from packing_theory.engine.rows import group_rows
from packing_theory.registry import build_packer
from packing_theory.training import TrainingLedger
ROWS = {rows}
rng = np.random.default_rng(1)
sizes = np.minimum(rng.pareto(1.2, size=ROWS * 6) * 200 + 2, 20000).astype(int)
docs = TokenDocuments.from_lists([[1, *rng.integers(4, 50000, size=int(m) - 1).tolist()] for m in sizes])
status = {{}}
packers = (("trl-bfd", {{}}), ("discard", {{"min_buffer": 64, "refill": 16}}), ("megatron-gpt", {{}}))
for name, opts in packers:
    events = build_packer(name, 2049, **opts).events(docs.lengths())
    rows = []
    for row in group_rows(events, 2049):
        rows.append(row)
        if len(rows) == ROWS:
            break
    rows.sort(key=lambda r: r[0].row)
    for level in (1, 0):
        path = os.path.join(tempfile.mkdtemp(), "l.ptl")
        ledger = TrainingLedger(path, docs, level=level)
        c0, _ = clock()
        for s in range(0, len(rows), 8):
            ledger.observe(pack_rows(rows[s : s + 8], docs, 2049))
            ledger.end_step()
        ledger.close()
        c1, _ = clock()
        status[f"{{name}} level {{level}}"] = {{"rows": len(rows), "spans": ledger.spans,
            "bytes": ledger.bytes_written, "bytes_per_span": ledger.bytes_written / ledger.spans,
            "cpu_s_per_row": (c1 - c0) / len(rows)}}
"""

CERTS = """
from packing_theory.training import CertificateFile, compare_certificates
STEPS, W = {steps}, 8
folder = tempfile.mkdtemp()
rng = np.random.default_rng(2)
for name in ("a", "b"):
    cf = CertificateFile.create(os.path.join(folder, name), W)
    r = np.random.default_rng(3)
    for lo in range(0, STEPS, 65536):
        block = r.integers(0, 256, size=(min(65536, STEPS - lo), W, 32), dtype=np.uint8)
        if name == "b" and lo <= {diff_step} < lo + block.shape[0]:
            block[{diff_step} - lo, 5, 0] ^= 1
        for b in block:
            cf.append(b)
    cf.close()
with open(os.path.join(folder, "paths.json"), "w") as fh:
    json.dump([os.path.join(folder, "a"), os.path.join(folder, "b")], fh)
status = {{"folder": folder, "bytes_each": os.path.getsize(os.path.join(folder, "a"))}}
"""

COMPARE = """
from packing_theory.training import compare_certificates
a, b = json.load(open(os.path.join({folder!r}, "paths.json")))
c0, w0 = clock()
d = compare_certificates(a, b)
c1, w1 = clock()
status = {{"cpu_s": c1 - c0, "wall_s": w1 - w0, "divergence": d.to_dict()}}
"""

NAIVE_COMPARE = """
a, b = json.load(open(os.path.join({folder!r}, "paths.json")))
c0, w0 = clock()
x = np.fromfile(a, dtype=np.uint8)[28:].reshape(-1, 8, 32)  # after the 28-byte header
y = np.fromfile(b, dtype=np.uint8)[28:].reshape(-1, 8, 32)
i, r = np.argwhere((x != y).any(axis=2))[0]
c1, w1 = clock()
status = {{"cpu_s": c1 - c0, "wall_s": w1 - w0, "divergence": {{"step": int(i), "rank": int(r)}}}}
"""

CHAIN = """
from packing_theory.training import certify
from packing_theory.training.format import ROW_DTYPE, SPAN_DTYPE, LedgerWriter
STEPS, W, SPANS = {steps}, 8, 10
folder = tempfile.mkdtemp()
path = os.path.join(folder, "merged.ptl")
w = LedgerWriter(path, {{"world_size": W, "corpus": {{}}}})
rng = np.random.default_rng(4)
per = 6553
for lo in range(0, STEPS, per):
    n = min(per, STEPS - lo)
    rows = np.zeros(n * W, ROW_DTYPE)
    rows["step"] = np.repeat(np.arange(lo, lo + n), W)
    rows["rank"] = np.tile(np.arange(W), n)
    rows["spans"] = SPANS
    spans = np.zeros(n * W * SPANS, SPAN_DTYPE)
    spans["doc"] = rng.integers(0, 10**7, size=spans.size)
    spans["length"] = rng.integers(1, 2049, size=spans.size)
    spans["targets"] = spans["length"] - 1
    w.append(rows, spans)
w.close()
c0, w0 = clock()
n = certify(path, os.path.join(folder, "c"))
c1, w1 = clock()
status = {{"step_records": STEPS * W, "spans_per_record": SPANS, "ledger_bytes": os.path.getsize(path),
          "cpu_s": c1 - c0, "wall_s": w1 - w0, "us_per_record": (c1 - c0) / (STEPS * W) * 1e6,
          "steps_written": n}}
"""


def child(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (the repository first on the path); its ``status`` and peak RSS."""
    tail = "\nstatus['peak_rss_mib'] = peak_mib()\nprint(json.dumps(status))\n"
    script = PRELUDE + textwrap.dedent(code) + tail
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = os.getloadavg()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["load_average_before"] = [round(x, 2) for x in load]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes / 10 (a smoke run)")
    args = parser.parse_args()
    q = 10 if args.quick else 1
    res: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                           "cpus": os.cpu_count(), "quick": args.quick}
    res["overhead"] = child(OVERHEAD.format(steps=max(60 // q, 6)))
    res["identity"] = child(IDENTITY.format(docs=200_000 // q, steps=20, naive=2))
    res["bytes"] = child(BYTES.format(rows=20_000 // q))
    steps = 1_000_000 // q
    made = child(CERTS.format(steps=steps, diff_step=steps * 987 // 1000))
    res["certificates"] = {"steps": steps, "ranks": 8, "bytes_each": made["bytes_each"],
                           "compare": child(COMPARE.format(folder=made["folder"])),
                           "naive": child(NAIVE_COMPARE.format(folder=made["folder"]))}
    for name in ("a", "b", "paths.json"):
        os.remove(os.path.join(made["folder"], name))
    res["chain"] = child(CHAIN.format(steps=125_000 // q))
    RESULTS.mkdir(exist_ok=True)
    suffix = "_quick" if args.quick else ""
    (RESULTS / f"training_ledger{suffix}.json").write_text(json.dumps(res, indent=2) + "\n")
    (RESULTS / f"training_ledger{suffix}.md").write_text(markdown(res))
    print(markdown(res))


def markdown(res: dict[str, Any]) -> str:
    o, c, ch, idn = res["overhead"], res["certificates"], res["chain"], res["identity"]
    ms = {k: o[f"{k}_cpu_s_per_step"] * 1e3 for k in ("train", "with_ledger", "ledger_alone")}
    wall = {k: o[f"{k}_wall_s_per_step"] * 1e3 for k in ("train", "with_ledger", "ledger_alone")}
    cmp, naive = c["compare"], c["naive"]
    lines = [
        "# Training ledger benchmark", "",
        f"Generated by `python benchmarks/bench_training_ledger.py{' --quick' if res['quick'] else ''}` "
        f"(Python {res['python']}, {res['platform']}, {res['cpus']} CPUs).",
        "Method: see the docstring of `benchmarks/bench_training_ledger.py` (fresh process per part; CPU "
        "seconds of that process; peak RSS = VmHWM, interpreter and imports included).", "",
        "## Overhead per optimizer step (tiny Llama, 8 rows x 256 positions, torch on 1 thread)", "",
        "| arm | CPU ms / step | wall ms / step |", "|---|---:|---:|",
        f"| train step | {ms['train']:.2f} | {wall['train']:.2f} |",
        f"| train step + ledger | {ms['with_ledger']:.2f} | {wall['with_ledger']:.2f} |",
        f"| ledger alone (observe + end_step) | {ms['ledger_alone']:.2f} | {wall['ledger_alone']:.2f} |",
        "",
        f"Ledger alone / train step: {ms['ledger_alone'] / ms['train']:.1%} of the CPU time; with the ledger "
        f"the step costs {ms['with_ledger'] / ms['train']:.2f}x. Index build over {o['documents']:,} "
        f"documents: {o['index_build_cpu_s'] * 1e3:.0f} ms CPU. {o['steps']} steps; peak RSS "
        f"{o['peak_rss_mib']:.0f} MiB; load average before {o['load_average_before']}.", "",
        f"## Document identity at scale ({idn['documents']:,} documents, 8 rows x 2049 per step, "
        "trl-bfd)", "",
        "| identity | CPU ms / step |", "|---|---:|",
        f"| the ledger (prefix index, verified) | {idn['ledger_cpu_s_per_step'] * 1e3:.2f} |",
        f"| naive: scan every document per segment | {idn['naive_cpu_s_per_step'] * 1e3:.0f} |", "",
        f"Naive / ledger: {idn['naive_cpu_s_per_step'] / idn['ledger_cpu_s_per_step']:,.0f}x "
        f"({idn['steps']} steps, {idn['naive_steps']} for the naive arm). Index build: "
        f"{idn['index_build_cpu_s']:.2f} s CPU; peak RSS {idn['peak_rss_mib']:.0f} MiB; load average before "
        f"{idn['load_average_before']}.", "",
        "## Bytes per document span", "",
        "| ledger | rows | spans | bytes | bytes / span | CPU us / row |", "|---|---:|---:|---:|---:|---:|",
        f"| tiny-model run above (token path, zlib 1) | {o['steps'] * 8:,} | {o['spans']:,} | "
        f"{o['bytes']:,} | {o['bytes_per_span']:.2f} | |",
    ]
    for name, b in res["bytes"].items():
        if isinstance(b, dict):
            lines.append(f"| {name} (records path, R = 2049) | {b['rows']:,} | {b['spans']:,} | "
                         f"{b['bytes']:,} | {b['bytes_per_span']:.2f} | {b['cpu_s_per_row'] * 1e6:.0f} |")
    lines += [
        "", f"Load average before: {res['bytes']['load_average_before']}.", "",
        f"## Certificates: {c['steps']:,} steps x {c['ranks']} ranks "
        f"({c['bytes_each'] / 2**20:.0f} MiB a file)",
        "", "| verify | CPU s | wall s | peak RSS MiB | first divergence |", "|---|---:|---:|---:|---|",
        f"| compare_certificates (blocks of 65,536 steps) | {cmp['cpu_s']:.2f} | {cmp['wall_s']:.2f} | "
        f"{cmp['peak_rss_mib']:.0f} | step {cmp['divergence']['step']:,}, rank {cmp['divergence']['rank']} |",
        f"| naive: both files read whole | {naive['cpu_s']:.2f} | {naive['wall_s']:.2f} | "
        f"{naive['peak_rss_mib']:.0f} | step {naive['divergence']['step']:,}, rank "
        f"{naive['divergence']['rank']} |", "",
        f"Load average before: {cmp['load_average_before']} (compare), "
        f"{naive['load_average_before']} (naive).",
        "",
        f"Chain recomputed from a merged ledger ({ch['step_records']:,} step records of "
        f"{ch['spans_per_record']} spans, {ch['ledger_bytes'] / 2**20:.0f} MiB): {ch['cpu_s']:.1f} s CPU, "
        f"{ch['us_per_record']:.1f} us per step record (8 x 10^6 records: {ch['us_per_record'] * 8:.0f} s "
        f"CPU at that rate), peak RSS {ch['peak_rss_mib']:.0f} MiB; load average before "
        f"{ch['load_average_before']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
