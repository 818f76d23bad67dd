"""The doctor's blend finding: a Megatron blend replayed source by source, realised shares against weights.

Each source's drawn samples are the first ``d_i`` rows of the ``megatron-gpt``
peer built for the samples its ``GPTDataset`` is built for
(:meth:`~packing_theory.configs.blend.MegatronBlend.built`), over its training
split, cut at ``d_i`` rows (:func:`~packing_theory.engine.horizon.cut_at_horizon`)
and accounted by a :class:`~packing_theory.audit.Ledger`. The realised shares
are read in three ways, each labelled: samples (= tokens: every sample holds
``seq_length + 1`` tokens), document appearances started, and the weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..audit import Ledger
from ..engine.consumers import feed_all
from ..engine.horizon import Budget, cut_at_horizon
from ..errors import InputError
from ..lengths import exact_sum, validate_lengths
from ..registry import build_packer
from ._base import MappedConfig
from .megatron import source_name
from .report import DoctorFinding, DoctorReport, Thresholds

__all__ = ["blend_findings", "realised_blend"]


def realised_blend(m: MappedConfig, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per source: its declared weight and what the replay drew from it.

    Keys: ``source``, ``weight`` (normalised), ``samples`` (drawn), ``sample_share``,
    ``tokens`` (placed), ``documents`` (appearances started), ``distinct`` (documents of its
    training split started), ``repeated`` (appearances after the first epoch), ``split_documents``,
    ``split_tokens``, ``outside_documents`` and ``outside_tokens`` (outside the training split, never
    offered), ``epochs`` (of its dataset as built).

    Raises:
        InputError: a source missing from ``data``.
    """
    blend = m.blend
    assert blend is not None
    L = blend.seq_length
    drawn, built = blend.drawn(), blend.built()
    out = []
    for i, prefix in enumerate(blend.prefixes):
        name = source_name(prefix)
        raw = data.get(name, data.get(prefix))
        if raw is None:
            raise InputError(f"no lengths for blend source {name!r} (prefix {prefix!r}): give it in the data")
        arr = validate_lengths(raw if isinstance(raw, np.ndarray) else np.asarray(raw), f"lengths of {name}")
        lo, hi = blend.train_documents(int(arr.size))
        sub = arr[lo:hi]
        packer = build_packer("megatron-gpt", seq_length=L, seed=blend.seed, num_samples=built[i])
        ledger = Ledger.for_packer(packer, min_buffer=1)
        feed_all(cut_at_horizon(packer.events(sub), Budget("rows", drawn[i]), capacity=L + 1), ledger)
        agg = ledger.result()
        cols = ledger.arrays()
        started = cols["arrived"] & cols["started"]
        out.append({
            "source": name, "weight": blend.normalized[i], "samples": drawn[i],
            "sample_share": drawn[i] / blend.num_samples, "tokens": agg.mass.emitted_tokens,
            "documents": int(started.sum()), "distinct": int(np.unique(cols["source"][started]).size),
            "repeated": int((started & (cols["pass_index"] > 0)).sum()), "split_documents": int(sub.size),
            "split_tokens": exact_sum(sub) if sub.size else 0, "outside_documents": int(arr.size - sub.size),
            "outside_tokens": exact_sum(arr) - (exact_sum(sub) if sub.size else 0),
            "epochs": packer.horizon_figures(sub)["epochs"] if sub.size else 0,
        })
    docs = sum(r["documents"] for r in out) or 1
    for r in out:
        r["document_share"] = r["documents"] / docs
    return out


def blend_findings(m: MappedConfig, data: Mapping[str, Any], th: Thresholds, label: str) -> DoctorReport:
    """The doctor's report for a Megatron blend (see the module doc)."""
    blend = m.blend
    assert blend is not None
    rows = realised_blend(m, data)
    findings: list[DoctorFinding] = []
    checked: list[str] = []
    off = [r for r in rows if abs(r["document_share"] - r["weight"]) > th.blend
           or abs(r["sample_share"] - r["weight"]) > th.blend or r["samples"] == 0]
    parts = "; ".join(
        f"{r['source']}: weight {r['weight']:.3f}, samples {r['sample_share']:.3f} ({r['samples']:,}), "
        f"documents {r['document_share']:.3f} ({r['documents']:,}"
        + (f", {r['repeated']:,} repeats" if r["repeated"] else "") + ")" for r in rows)
    if off:
        worst = max(max(abs(r["document_share"] - r["weight"]), abs(r["sample_share"] - r["weight"]))
                    for r in off)
        findings.append(DoctorFinding(
            "blend", "declared blend against realised",
            f"the realised shares miss the declared weights by up to {worst:.3f}: {parts}", worst,
            sum(r["documents"] for r in off), sum(r["tokens"] for r in off),
            sources=tuple(r["source"] for r in off),
            rule="Megatron BlendedDataset: --data-path weights are shares of samples (hence of tokens), "
                 "assigned by build_blending_indices' greedy error-minimising rule, not shares of documents "
                 "or of the datasets' sizes; a source of shorter documents gives more documents per sample, "
                 "a small one is repeated (NVIDIA/Megatron-LM#547)",
            detail={"sources": rows}))
    else:
        checked.append(f"blend: every realised share is within {th.blend} of its weight: {parts}")
    repeats = [r for r in rows if r["repeated"]]
    if repeats:
        checked.append("blend: repeated sources (each appearance after its first epoch counted): "
                       + ", ".join(f"{r['source']} {r['repeated']:,}" for r in repeats))
    outside = [r for r in rows if r["outside_documents"]]
    if outside:
        checked.append(f"split: --split {blend.split} trains each dataset's training split; outside it "
                       "(validation and test), not offered: " + ", ".join(
                           f"{r['source']} {r['outside_documents']:,} of "
                           f"{r['split_documents'] + r['outside_documents']:,} documents "
                           f"({r['outside_tokens']:,} tokens)" for r in outside))
    documents = sum(r["split_documents"] for r in rows)
    return DoctorReport(m, label, documents, sum(r["split_tokens"] for r in rows), blend.num_samples,
                        f"{blend.num_samples:,} samples drawn from a blend of {len(rows)} datasets",
                        tuple(findings), tuple(checked), th)
