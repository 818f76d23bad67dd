"""The report glossary: every term a report uses, in plain words, with the docs page that defines it.

:data:`GLOSSARY` is the one list; :func:`glossary_for` picks the terms whose
JSON keys a document uses (the HTML page prints them,
:mod:`~packing_theory.reporting.page`). Each term names a page of ``docs/`` and
the section there (its Sphinx anchor is the section title in lower case with
hyphens).

>>> [t.term for t in glossary_for({"policies": [{"never_started": 3}]})][:2]
['never started', 'packer (policy)']
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

__all__ = ["GLOSSARY", "Term", "glossary_for", "term"]


@dataclass(frozen=True, slots=True)
class Term:
    """One glossary entry: the term, its meaning, where the docs define it, the JSON keys that use it."""

    term: str
    meaning: str
    page: str
    section: str
    keys: tuple[str, ...]

    @property
    def anchor(self) -> str:
        """The Sphinx anchor of :attr:`section`."""
        return re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")


_AUDIT = ("audit", "What each quantity means")
_ENGINE = ("engine", "Semantics")
_EVAL = ("evaluation", "The protocol")

GLOSSARY: tuple[Term, ...] = (
    Term("row width R", "tokens in every emitted row (capacity); a target is every position of a row but "
         "the first, so a row holds R − 1 targets", *_ENGINE, ("capacity", "row_width", "seq_length")),
    Term("minimum buffer B", "how many documents a streaming packer keeps buffered before it fills a row",
         *_ENGINE, ("min_buffer",)),
    Term("refill", "how many documents are appended to the buffer at a time when it falls below B",
         *_ENGINE, ("refill",)),
    Term("targets", "predicted positions: R − 1 per row; budgets and delays are counted in targets",
         *_ENGINE, ("targets", "first_over_capacity_target", "eval_targets")),
    Term("horizon", "where the run was cut: the row or target budget, or the end of the stream; every "
         "figure is counted up to it", "engine", "When the stream runs dry", ("stop_reason", "horizon")),
    Term("never started", "documents with no token in any emitted row (filtered ones included)", *_AUDIT,
         ("never_started", "never_started_sources", "never_started_by_stratum")),
    Term("trained", "tokens in the rows the trainer receives (complete rows only); the unfinished last row "
         "is its own part", "never_trained", "Never trained", ("trained_tokens",)),
    Term("cut off", "tails of documents that did start, discarded or truncated (a crop's suffix, a "
         "framework's truncation)", "never_trained", "Never trained", ("dropped",)),
    Term("still buffered", "tokens of started documents the packer still held at the horizon",
         "never_trained", "Never trained", ("still_buffered",)),
    Term("unfinished row", "tokens placed in the incomplete last row of a run, never delivered as a training "
         "sequence", "never_trained", "Never trained", ("partial_row", "partial_row_tokens")),
    Term("never reached", "documents the run stopped before: they lie beyond the horizon", "never_trained",
         "Never trained", ("never_reached",)),
    Term("start delay", "rows from a document's arrival to its first trained token", *_AUDIT,
         ("start_delay_max", "start_delay_p50")),
    Term("prefix bias", "of the trained tokens of long documents, the share from their first tenth of "
         "positions minus the share from their last tenth (0: none)", *_AUDIT, ("prefix_bias",)),
    Term("mixture distance", "total variation between the realised share of each data source and the "
         "declared one (0: the declared mixture exactly)", "sources",
         "The realised mixture, in both readings", ("mixture_distance",)),
    Term("unused capacity", "row positions that hold no document token (padding, or a bin's free space)",
         "peers", "Comparing packers", ("unused_capacity_tokens",)),
    Term("raw index", "a document's position in the corpus as read, before any cleaning funnel: the number "
         "every per-document answer uses", "never_trained", "Which documents: ``documents.csv``",
         ("raw_index",)),
    Term("never trained", "tokens or documents the trainer never sees: never started, dropped, still "
         "buffered at the horizon, or never reached", *_AUDIT, ("never_trained",)),
    Term("packer (policy)", "the rule that turns documents into rows: a streaming policy (discard, continue, "
         "segment-first, ...) or a framework's packer", "peers", "Names, options and row widths",
         ("policy", "policies", "packers")),
    Term("discarded / dropped tokens", "document tokens cut off and never emitted (the suffix of a crop, a "
         "truncation)", *_AUDIT, ("discarded_tokens", "dropped_tokens")),
    Term("buffered tokens", "tokens still waiting in the packer's buffer when the run stopped", *_AUDIT,
         ("buffered_tokens",)),
    Term("crop", "a document cut to fill the rest of a row because no buffered document fits", *_ENGINE,
         ("crops", "crop_events")),
    Term("protected set", "the B − 1 longest documents longer than R that have arrived; the proposition "
         "says none of them is ever started by discard or continue", "invariant", "Statement",
         ("protected", "protected_tokens")),
    Term("length stratum", "a band of original document lengths (BOS included), such as 1025–2049",
         *_AUDIT, ("strata", "labels", "boundaries")),
    Term("retention", "the share of a stratum's arrived tokens that were trained (in complete rows: the "
         "unfinished row's are not)", *_AUDIT, ("retention",)),
    Term("exposure", "which relative positions inside documents of a stratum were emitted (prefix bias)",
         *_AUDIT, ("exposure",)),
    Term("startup delay", "targets until the first token of a document longer than R is trained", *_AUDIT,
         ("startup", "first_over_capacity_target", "start_delay_max")),
    Term("utilization", "emitted document tokens over all row positions (padding is the rest)", "peers",
         "Comparing packers", ("utilization", "padding_tokens")),
    Term("family", "whether the proposition applies to the packer (member) or not (outside)", "peers",
         "Comparing packers", ("in_family", "family")),
    Term("evaluation population", "which documents of an evaluation stream the scored rows include, by "
         "stratum", *_AUDIT, ("evaluation", "population")),
    Term("BPB", "bits per byte: the model's loss in bits over the UTF-8 bytes it predicts", *_EVAL,
         ("bpb", "summary")),
    Term("contrast", "a difference in BPB between two models on one stratum and window kind, with a "
         "paired-source bootstrap interval", *_EVAL, ("comparison", "contrasts")),
    Term("census", "document lengths (and hashes) of many input files, counted once and reused",
         "distributed", "The census", ("n_docs", "n_inputs", "parts")),
    Term("contamination", "13-token windows shared between training shards and a reference set",
         "contamination", "Method", ("overlap", "verdict", "documents_scanned")),
    Term("run id", "the identifier every file of one report run carries; the manifest lists the files",
         "reliability", "Reports written safely", ("run",)),
)
"""Every term a report may use (see the module docstring)."""


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value[:50]:
            if isinstance(v, (Mapping, list)):
                yield from _keys(v)


def glossary_for(doc: Mapping[str, Any]) -> list[Term]:
    """The terms of :data:`GLOSSARY` whose keys ``doc`` uses at any depth, sorted by term.

    O(keys of ``doc``), looking into the first 50 items of each list.
    """
    used = set(_keys(doc))
    return sorted((t for t in GLOSSARY if used.intersection(t.keys)), key=lambda t: t.term.lower())


_BY_TERM: dict[str, Term] = {t.term: t for t in GLOSSARY}


def term(name: str) -> Term:
    """The glossary entry named ``name``.

    Raises:
        InputError: ``name`` is not a term of :data:`GLOSSARY`.

    >>> term("horizon").page
    'engine'
    """
    found = _BY_TERM.get(name)
    if found is None:
        raise InputError(f"glossary term must be one of {', '.join(sorted(_BY_TERM))}; got {name!r}")
    return found
