"""The census as a report: how many documents and tokens, from which inputs, and how long they are.

:class:`CensusReport` wraps a census manifest (``census.json``, format
``packing-theory/census``) and its lengths as a :class:`~packing_theory.reporting.Report`
(kind ``census``): the answer card says how many documents and tokens the
inputs hold, how their lengths spread over the length strata and what was
skipped; then the inputs themselves (the first :data:`INPUTS_SHOWN` of them,
every one in ``census.json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.strata import STRATA_BOUNDARIES, stratum_index, stratum_labels
from ..reporting.markdown import TablesOnly
from ..reporting.model import Amount, Block, Column, Section, Table, Text

__all__ = ["INPUTS_SHOWN", "CensusReport", "census_headline"]

INPUTS_SHOWN = 500
"""Inputs listed on the page and in the Markdown (every one is in ``census.json``)."""


def census_headline(manifest: Mapping[str, Any]) -> str:
    """The census in plain words: documents, tokens, inputs, what was skipped and where the lengths are.

    >>> print(census_headline({"n_docs": 1786, "n_tokens": 8_600_000, "n_inputs": 1786, "n_skipped": 2,
    ...                        "errors": "skip"}).replace("; ", chr(10)))
    1,786 documents, 8,600,000 tokens from 1,786 input file(s)
    2 input(s) skipped as not text (--errors skip)
    lengths in lengths.npy, names in census.json
    """
    skipped = (f"; {manifest['n_skipped']:,} input(s) skipped as not text (--errors {manifest.get('errors')})"
               if manifest.get("n_skipped") else "")
    return (f"{manifest['n_docs']:,} documents, {manifest['n_tokens']:,} tokens from "
            f"{manifest['n_inputs']:,} input file(s){skipped}; lengths in lengths.npy, names in census.json")


@dataclass(frozen=True, eq=False)
class CensusReport(TablesOnly):
    """A census manifest and its lengths as a report (see the module doc)."""

    manifest: Mapping[str, Any]
    lengths: npt.NDArray[np.int64]

    kind = "census"
    title = "Census of document lengths"

    def headline(self) -> str:
        """:func:`census_headline`."""
        return census_headline(self.manifest)

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The manifest (``census.json``), with ``run`` as its run entry when given."""
        doc = {**self.manifest, "headline": self.headline()}
        if run is not None:
            doc["run"] = {"id": run["id"], "config_hash": run["config_hash"]}
        return doc

    def sections(self) -> Sequence[Section]:
        """The totals and the length strata first, then the inputs and what was skipped."""
        m = self.manifest
        blocks: list[Block] = [Text(self.headline() + ".")]
        n = int(self.lengths.size)
        if n:
            s = stratum_index(self.lengths, STRATA_BOUNDARIES)
            S = len(STRATA_BOUNDARIES) + 1
            docs = np.bincount(s, minlength=S)
            toks = np.bincount(s, weights=self.lengths, minlength=S)
            total = float(toks.sum())
            cols = (Column("length stratum", term="length stratum"), Column("documents", "count"),
                    Column("tokens", "tokens"))
            strata = tuple((lab, Amount(int(docs[k]), docs[k] / n),
                            Amount(round(toks[k]), toks[k] / total if total else None))
                           for k, lab in enumerate(stratum_labels(STRATA_BOUNDARIES)))
            blocks.append(Table("Documents and tokens by length (BOS included)", cols, strata, key="strata"))
            blocks.append(Text(f"Lengths from {int(self.lengths.min()):,} to {int(self.lengths.max()):,} "
                               f"tokens; median {int(np.median(self.lengths)):,}."))
        if "duplicate_documents" in m:
            blocks.append(Text(f"{m['duplicate_documents']:,} documents repeat the text of an earlier one."))
        out = [Section("answer", "The answer", tuple(blocks), answer=True)]
        shards = list(m.get("shards", ()))
        cols = (Column("input"), Column("documents", "count"), Column("tokens", "tokens"))
        rows = tuple((str(e["path"]), int(e["n_docs"]), int(e["n_tokens"])) for e in shards[:INPUTS_SHOWN])
        more = (f"the first {INPUTS_SHOWN:,} of {len(shards):,} inputs; every one is in census.json"
                if len(shards) > INPUTS_SHOWN else "")
        inputs: list[Block] = [Table("Documents and tokens per input, in document order", cols, rows,
                                     more=more, key="inputs")]
        skipped = list(m.get("skipped", ()))
        if skipped:
            inputs.append(Table("Inputs skipped as not text", (Column("input"), Column("why")),
                                tuple((str(e["path"]), str(e["reason"])) for e in skipped), key="skipped"))
        out.append(Section("inputs", "Inputs", tuple(inputs)))
        ex = m.get("execution") or {}
        out.append(Section("execution", "Where it ran", (Text(
            f"Executor {ex.get('executor', '—')}: {ex.get('computed', 0):,} input(s) counted, "
            f"{ex.get('reused', 0):,} reused from an earlier run's parts."),), collapsed=True))
        return out


