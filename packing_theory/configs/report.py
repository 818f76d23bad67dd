"""The doctor's result: ranked findings, each with its number, the documents it concerns and its rule.

:class:`DoctorReport` implements the one report model
(:class:`packing_theory.reporting.Report`, kind ``doctor``): ``headline()`` (one
sentence, each share beside its own quantity), ``to_dict(run)``, ``sections()``
with the answer card first (the findings ranked, or nothing found), then each
finding with its documents and rule, the mapping of the config and what was
checked; no plot, no attachment. ``packing-theory doctor --out DIR`` writes
``doctor.json``, ``doctor.md`` and ``doctor.html`` through
:func:`~packing_theory.reporting.stage_report`. It is a finding when
:attr:`DoctorReport.findings` is not empty (``packing-theory doctor`` exits 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..audit.untrained import NeverTrained
from ..reporting.markdown import TablesOnly
from ..reporting.model import Block, Column, Section, Table, Text
from ._base import MappedConfig, _plain, _short

__all__ = ["KINDS", "DoctorFinding", "DoctorReport", "Thresholds"]

KINDS: tuple[str, ...] = ("starvation", "padding", "never-started", "dropped-batches", "filtered",
                          "tails-cut", "no-trainable", "dropped-rows", "blend")
"""The kinds of finding, in the order of the module doc of :mod:`packing_theory.configs.doctor`."""

_OFFERED_TOKEN_KINDS: frozenset[str] = frozenset({"starvation", "never-started", "dropped-batches",
                                                  "filtered", "tails-cut", "no-trainable"})
"""The kinds whose ``tokens`` are tokens of the offered documents: the answer table gives their share of the
offered tokens (padding and dropped rows count row positions, a blend documents: their shares are in their
own sentence)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a measured quantity becomes a finding (a healthy configuration stays under every one).

    Attributes:
        padding: share of row positions that are padding (default 5 %).
        tails_cut: share of offered tokens cut from started documents (default 0.5 %).
        blend: distance of a source's realised share from its declared weight (default 2 points).
    """

    padding: float = 0.05
    tails_cut: float = 0.005
    blend: float = 0.02

    def to_dict(self) -> dict[str, float]:
        """A JSON-ready dict."""
        return {"padding": self.padding, "tails_cut": self.tails_cut, "blend": self.blend}


@dataclass(frozen=True)
class DoctorFinding:
    """One finding.

    Attributes:
        kind: one of :data:`KINDS`.
        title: what happens, in a few words.
        number: the finding's number as a sentence, each share beside its quantity.
        severity: the share of the run it concerns (tokens or positions; 1.0 for a run that
            ends in padding): the ranking key.
        documents: how many documents it concerns.
        tokens: how many tokens (or row positions, for padding).
        examples: up to ten of the documents (names, or indices into the data).
        sources: the data sources concerned (a blend's datasets).
        rule: the rule it comes from (the framework's code, the proof, the issue).
        detail: the measured numbers behind ``number``.
        whole: the tokens its share of tokens is of, as ``number`` names them (0: the report's offered
            tokens).
    """

    kind: str
    title: str
    number: str
    severity: float
    documents: int = 0
    tokens: int = 0
    examples: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    rule: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    whole: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (numpy scalars in ``detail`` as Python numbers)."""
        return {"kind": self.kind, "title": self.title, "number": self.number,
                "severity": float(self.severity), "documents": int(self.documents),
                "tokens": int(self.tokens), "examples": list(self.examples), "sources": list(self.sources),
                "rule": self.rule, "detail": _json(self.detail), "whole": int(self.whole)}


@dataclass(frozen=True)
class DoctorReport(TablesOnly):
    """What ``packing-theory doctor`` found for one configuration on one corpus.

    Attributes:
        mapped: the configuration as mapped (:class:`~packing_theory.configs.MappedConfig`).
        data: a label for the corpus.
        documents, tokens: the corpus offered to the packer (after the framework's own truncation, rank
            split and ``--split``), as ``packing-theory audit`` counts it.
        rows: the rows the replay emitted (all-padding rows after a starvation counted in ``detail``).
        horizon: where the run stopped, in words.
        findings: ranked, most severe first.
        checked: what was checked and found within its threshold.
        thresholds: the thresholds applied.
        untrained: what the run never trained, the one measurement's parts
            (:func:`~packing_theory.audit.never_trained`, as ``packing-theory audit`` reports them; ``None``
            for a Megatron blend).
        read_tokens: the tokens as read, before the framework's own truncation (``None`` when it cuts
            nothing first: then they are ``tokens``).
    """

    mapped: MappedConfig
    data: str
    documents: int
    tokens: int
    rows: int
    horizon: str
    findings: tuple[DoctorFinding, ...]
    checked: tuple[str, ...]
    thresholds: Thresholds
    untrained: NeverTrained | None = None
    read_tokens: int | None = None

    @property
    def found(self) -> bool:
        """Whether anything was found (the command exits 1)."""
        return bool(self.findings)

    def headline(self) -> str:
        """One sentence: nothing found, or the most severe finding's number and how many more."""
        m = self.mapped
        what = (f"{self.documents:,} documents ({self._tokens_words()}) replayed with {m.packer} "
                f"(R = {m.capacity:,}) from {m.framework} config {m.source}")
        if not self.findings:
            return f"nothing found: {what}"
        top = self.findings[0]
        more = len(self.findings) - 1
        tail = f"; {more} more finding{'s' if more != 1 else ''}" if more else ""
        return f"{top.title}: {top.number} ({what}){tail}"

    kind = "doctor"

    def _tokens_words(self) -> str:
        """``"5,000 tokens"``, or with a truncation before packing ``"1,800 tokens offered, 5,600 read
        before the framework's truncation"``."""
        if self.read_tokens is None:
            return f"{self.tokens:,} tokens"
        return f"{self.tokens:,} tokens offered, {self.read_tokens:,} read before the framework's truncation"

    @property
    def title(self) -> str:
        """The page's title: the framework and its config file."""
        return f"packing-theory doctor: {self.mapped.framework} config {self.mapped.source}"

    def to_dict(self, run: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The JSON document (``run``: the run entry of a written report)."""
        from .._version import __version__

        m = self.mapped
        return {"kind": self.kind, "version": 1,
                "generator": {"name": "packing_theory", "version": __version__},
                "run": None if run is None else dict(run), "headline": self.headline(), "found": self.found,
                "settings": {"framework": m.framework, "packer": m.packer, "capacity": m.capacity,
                             "seq_length": m.seq_length, "options": _plain(m.options),
                             "thresholds": self.thresholds.to_dict()},
                "corpus": {"label": self.data, "documents": self.documents, "tokens": self.tokens,
                           "read_tokens": self.read_tokens},
                "config": m.to_dict(), "mapping": m.mapping_text(), "data": self.data,
                "documents": self.documents, "tokens": self.tokens, "rows": self.rows,
                "horizon": self.horizon,
                "findings": [dict(rank=i + 1, **f.to_dict()) for i, f in enumerate(self.findings)],
                "checked": list(self.checked), "thresholds": self.thresholds.to_dict(),
                "untrained": None if self.untrained is None else self.untrained.to_dict()}

    def offered_share(self, finding: DoctorFinding) -> float | None:
        """``finding.tokens`` over the tokens its sentence names (:attr:`DoctorFinding.whole`: the offered
        tokens, or the tokens read for cuts with a truncation before packing), for a kind that counts
        tokens of the documents (:data:`_OFFERED_TOKEN_KINDS`); else ``None``."""
        whole = finding.whole or self.tokens
        if finding.kind not in _OFFERED_TOKEN_KINDS or not whole:
            return None
        return finding.tokens / whole

    def untrained_text(self) -> str:
        """The run's never-trained parts, named as ``packing-theory audit`` names them, each share of the
        offered tokens: ``"930 documents never started (5.2% of the tokens); ..."`` (empty for a blend)."""
        nt = self.untrained
        if nt is None:
            return ""
        return nt.parts_sentence()

    def text(self) -> str:
        """The report as plain text (what the command prints): the headline, the findings ranked with their
        numbers and rules, what the run never trained, and the checks."""
        lines = [self.headline(), ""]
        if self.findings:
            for i, f in enumerate(self.findings, 1):
                lines.append(f"{i}. {f.title}: {f.number}")
                if f.examples:
                    more = f" (of {f.documents:,})" if f.documents > len(f.examples) else ""
                    lines.append(f"   documents{more}: {', '.join(f.examples)}")
                if f.sources:
                    lines.append(f"   sources: {', '.join(f.sources)}")
                lines.append(f"   rule: {f.rule}")
        else:
            lines.append("Nothing found.")
        m = self.mapped
        lines += ["", f"run: {m.packer}, R = {m.capacity:,}, on {self.data}: {self.documents:,} documents, "
                      f"{self._tokens_words()}; {self.rows:,} rows; {self.horizon}"]
        if self.untrained is not None:
            lines.append(f"never trained: {self.untrained_text()}")
        lines += [f"checked: {c}" for c in self.checked]
        return "\n".join(lines) + "\n"

    def sections(self) -> Sequence[Section]:
        """The answer card (the findings ranked, or nothing found), each finding, the mapping, the checks."""
        m = self.mapped
        run = Text(f"Data: {self.data}: {self.documents:,} documents, {self._tokens_words()}. Packer "
                   f"{m.packer}, row width R = {m.capacity:,} (sequence length {m.seq_length:,}). Run: "
                   f"{self.rows:,} rows; {self.horizon}."
                   + (f" Never trained: {self.untrained_text()}." if self.untrained is not None else ""))
        if self.findings:
            ranked: Block = Table("findings, most severe first", (
                Column("rank", "count"), Column("finding"), Column("documents", "count"),
                Column("tokens or positions", "tokens"), Column(
                    "share of the offered tokens" if self.read_tokens is None else
                    "share of the offered tokens (tails cut: of the tokens read)", "share")),
                tuple((i, f.title, f.documents or None, f.tokens, self.offered_share(f))
                      for i, f in enumerate(self.findings, 1)), key="findings")
        else:
            ranked = Text("Nothing found.")
        out = [Section("answer", "Answer", (ranked, run), answer=True)]
        if self.findings:
            out.append(Section("findings", "Findings", tuple(_finding(i, f) for i, f in
                                                             enumerate(self.findings, 1))))
        used = Table("keys used", (Column("key"), Column("value"), Column("became")),
                     tuple((u.key, _short(u.value), u.became) for u in m.used), key="used")
        ignored: Block = (Table("keys ignored", (Column("key"), Column("why")), tuple(m.ignored),
                                key="ignored") if m.ignored else Text("Ignored keys: none."))
        out.append(Section("mapping", "Mapping", (
            Text(f"{m.framework} -> {m.packer} (R = {m.capacity:,}), from {m.source}."), used, ignored)))
        th = self.thresholds
        checked: list[Block] = [Table("checks", (Column("check"),), tuple((c,) for c in self.checked),
                                      key="checked")] if self.checked else []
        checked.append(Text(f"Thresholds: padding {th.padding:.1%} of row positions, tails cut "
                            f"{th.tails_cut:.1%} of offered tokens, a blend's share {th.blend:.1%} from its "
                            "weight."))
        out.append(Section("checked", "Checked, within the thresholds", tuple(checked)))
        return out






def _json(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists (mappings and sequences walked)."""
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if type(value).__module__ == "numpy":
        return _json(value.tolist())
    return value


def _finding(rank: int, f: DoctorFinding) -> Section:
    blocks: list[Block] = [Text(f.number)]
    if f.examples:
        more = f" (of {f.documents:,})" if f.documents > len(f.examples) else ""
        blocks.append(Text(f"Documents{more}: {', '.join(f.examples)}."))
    if f.sources:
        blocks.append(Text(f"Sources: {', '.join(f.sources)}."))
    blocks.append(Text(f"Rule: {f.rule}"))
    return Section(f"finding-{rank}", f"{rank}. {f.title}", tuple(blocks))
