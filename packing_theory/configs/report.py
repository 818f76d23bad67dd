"""The doctor's result: ranked findings, each with its number, the documents it concerns and its rule.

:class:`DoctorReport` has ``to_dict()``, ``headline()`` (one sentence, each
share beside its own quantity) and ``markdown()``; it is a finding when
:attr:`DoctorReport.findings` is not empty (``packing-theory doctor`` exits 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._base import MappedConfig

__all__ = ["KINDS", "DoctorFinding", "DoctorReport", "Thresholds"]

KINDS: tuple[str, ...] = ("starvation", "padding", "never-started", "dropped-batches", "filtered",
                          "tails-cut", "no-trainable", "dropped-rows", "blend")
"""The kinds of finding, in the order of the module doc of :mod:`packing_theory.configs.doctor`."""


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"kind": self.kind, "title": self.title, "number": self.number, "severity": self.severity,
                "documents": self.documents, "tokens": self.tokens, "examples": list(self.examples),
                "sources": list(self.sources), "rule": self.rule, "detail": self.detail}


@dataclass(frozen=True)
class DoctorReport:
    """What ``packing-theory doctor`` found for one configuration on one corpus.

    Attributes:
        mapped: the configuration as mapped (:class:`~packing_theory.configs.MappedConfig`).
        data: a label for the corpus.
        documents, tokens: the corpus offered (after the framework's own truncation and rank split).
        rows: the rows the replay emitted (all-padding rows after a starvation counted in ``detail``).
        horizon: where the run stopped, in words.
        findings: ranked, most severe first.
        checked: what was checked and found within its threshold.
        thresholds: the thresholds applied.
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

    @property
    def found(self) -> bool:
        """Whether anything was found (the command exits 1)."""
        return bool(self.findings)

    def headline(self) -> str:
        """One sentence: nothing found, or the most severe finding's number and how many more."""
        m = self.mapped
        what = (f"{self.documents:,} documents ({self.tokens:,} tokens) replayed with {m.packer} "
                f"(R = {m.capacity:,}) from {m.framework} config {m.source}")
        if not self.findings:
            return f"nothing found: {what}"
        top = self.findings[0]
        more = len(self.findings) - 1
        tail = f"; {more} more finding{'s' if more != 1 else ''}" if more else ""
        return f"{top.title}: {top.number} ({what}){tail}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"headline": self.headline(), "found": self.found, "config": self.mapped.to_dict(),
                "mapping": self.mapped.mapping_text(), "data": self.data, "documents": self.documents,
                "tokens": self.tokens, "rows": self.rows, "horizon": self.horizon,
                "findings": [dict(rank=i + 1, **f.to_dict()) for i, f in enumerate(self.findings)],
                "checked": list(self.checked), "thresholds": self.thresholds.to_dict()}

    def markdown(self) -> str:
        """The report as Markdown: the headline, the mapping, the findings ranked, what was checked."""
        m = self.mapped
        lines = [f"# packing-theory doctor: {m.framework} config `{m.source}`", "", self.headline(), "",
                 f"- data: {self.data}: {self.documents:,} documents, {self.tokens:,} tokens",
                 f"- packer: `{m.packer}`, row width R = {m.capacity:,} (sequence length {m.seq_length:,})",
                 f"- run: {self.rows:,} rows; {self.horizon}", "", "## Mapping", ""]
        lines += [f"- `{u.key}` = `{u.value!r}` -> {u.became}" for u in m.used]
        if m.ignored:
            lines += ["", "Ignored keys:", ""]
            lines += [f"- `{k}`: {why}" for k, why in m.ignored]
        lines += ["", "## Findings", ""]
        if not self.findings:
            lines.append("Nothing found.")
        for i, f in enumerate(self.findings, 1):
            lines += [f"### {i}. {f.title}", "", f.number, ""]
            if f.examples:
                more = f" (of {f.documents:,})" if f.documents > len(f.examples) else ""
                lines.append(f"- documents{more}: {', '.join(f.examples)}")
            if f.sources:
                lines.append(f"- sources: {', '.join(f.sources)}")
            lines += [f"- rule: {f.rule}", ""]
        if self.checked:
            lines += ["## Checked, within the thresholds", ""] + [f"- {c}" for c in self.checked]
        return "\n".join(lines) + "\n"
