"""The plain-words answer at the top of every audit and compare report, its glossary, its horizon section.

:func:`packer_sentence` says, for one packer, where its run stopped and why,
what share of the offered tokens it never trained (and how many documents),
and what the theorem predicts — or why the theorem does not apply (``--drain``,
a packer outside seed 000's family). :func:`headline` joins the first
packer's sentence with the others' never-trained shares; it is the
Markdown's first line, the JSON's ``"headline"`` and the command's summary
line. :func:`glossary_lines` defines the report's jargon once, with a
pointer to ``docs/never_trained.rst``.

>>> from packing_theory.audit.untrained import HorizonStatement, NeverTrained, Part
>>> h = HorizonStatement(None, 1055, "stream exhausted", 0, 1055, 64)
>>> nt = NeverTrained("discard", 1786, 1000, 698, 1723, Part(63, 302), 302, 0, Part(0, 0), 0, 0,
...                   Part(0, 0), Part(0, 0), True, 302, 0, 0)
>>> s = packer_sentence("discard", h, nt, predicted=63, started_protected=0, documents_file="documents.csv")
>>> print(s.replace("; ", chr(10)))
discard stopped at row 1,055 because the stream ran dry
30.2% of your tokens (63 documents, the largest
see documents.csv) were never trained
the theorem predicts ≥ 63 never start at B = 64
"""

from __future__ import annotations

from collections.abc import Sequence

from ..audit.untrained import HorizonStatement, NeverTrained
from ..reporting.markdown import count as _n
from ..reporting.markdown import percent as _pct

__all__ = ["DOCS_PAGE", "GLOSSARY", "glossary_lines", "headline", "horizon_lines", "packer_sentence",
           "theorem_prediction"]

DOCS_PAGE = "docs/never_trained.rst"
"""Where the report's terms are explained at length."""

GLOSSARY: tuple[tuple[str, str], ...] = (
    ("horizon", "where a run is cut: the rows, targets or tokens asked (--rows / --targets / --tokens), "
                "or the packer's natural end; every figure is at the horizon"),
    ("row, R", "one training sequence of R token positions (R = capacity, the row width)"),
    ("target", "a predicted position: row r, position p >= 1 holds target r (R - 1) + p - 1; position 0 "
               "is input only"),
    ("B", "the minimum number of documents a streaming packer keeps buffered before each selection"),
    ("never trained", "offered tokens no complete row holds at the horizon: never started + dropped + "
                      "still buffered + in the partial row + never reached"),
    ("never started", "a document that arrived but had no token emitted (still buffered, or filtered)"),
    ("dropped", "tokens of started documents that were discarded, truncated or filtered"),
    ("still buffered", "tokens of started documents still held by the packer at the horizon"),
    ("in the partial row", "tokens placed in the incomplete last row of a run, never delivered as a "
                           "training sequence"),
    ("never reached", "documents the run stopped before (they never arrived)"),
    ("protected set K", "the min(B − 1, N_L) largest over-capacity documents arrived so far (key: "
                        "length, then arrival); seed 000 §3 proves every member stays buffered and "
                        "unstarted while the buffer holds at least B documents"),
    ("drain", "--drain keeps selecting after the stream ran dry with fewer than B documents buffered: "
              "outside the theorem's hypotheses"),
    ("stratum", "a range of BOS-inclusive original lengths (boundaries in the report)"),
)
"""The report's terms, defined once."""


def theorem_prediction(in_family: bool, protected_set: bool, h: HorizonStatement, members: int) -> int | None:
    """Documents the proposition predicts never start at this horizon, or ``None`` where it does not apply.

    It applies to seed 000's family (``discard``, ``continue``, ``random-span``)
    when the run did not drain: then every member of ``K`` is unstarted.
    """
    if not (in_family and protected_set) or h.reason == "drained":
        return None
    return members


def packer_sentence(packer: str, h: HorizonStatement, nt: NeverTrained, *, predicted: int | None,
                    started_protected: int, documents_file: str | None = None,
                    outside: str | None = None) -> str:
    """One packer's answer in plain words (see the module doc).

    ``predicted``: :func:`theorem_prediction`; ``started_protected``: members of
    ``K`` that started (nonzero only outside the hypotheses); ``outside``: the
    family-status sentence of a packer the theorem does not cover.
    """
    docs = nt.untrained_documents
    what = f"{_n(docs)} document{'s' if docs != 1 else ''}"
    if docs and nt.largest:
        what += ", the largest"
    if documents_file:
        what += f"; see {documents_file}"
    share = _pct(nt.share) if nt.share is not None else "0%"
    parts = [f"{packer} {h.sentence()}", f"{share} of your tokens ({what}) were never trained"]
    if predicted is not None:
        parts.append(f"the theorem predicts ≥ {_n(predicted)} never start at B = {_n(h.min_buffer)}")
    elif h.reason == "drained":
        parts.append(f"{_n(started_protected)} protected documents started during the drain, which the "
                     "theorem does not cover")
    elif outside:
        parts.append(f"the theorem does not apply ({outside})")
    return "; ".join(parts)


def headline(sentences: Sequence[tuple[str, NeverTrained]]) -> str:
    """The first packer's sentence, then the never-trained share of every other packer.

    >>> from packing_theory.audit.untrained import NeverTrained, Part
    >>> z = Part(0, 0)
    >>> nt = NeverTrained("continue", 2, 10, 7, 2, z, 0, 0, z, 0, 0, Part(1, 3), z, False, 3, 0, 0)
    >>> headline([("discard ran dry", nt), ("x", nt)])
    'discard ran dry | never trained by the others: continue 30.0%'
    """
    if not sentences:
        return "nothing was audited"
    first, *rest = sentences
    if not rest:
        return first[0]
    others = ", ".join(f"{nt.packer} {_pct(nt.share) if nt.share is not None else '—'}" for _, nt in rest)
    return f"{first[0]} | never trained by the others: {others}"


def glossary_lines() -> list[str]:
    """The Markdown glossary section."""
    terms = "; ".join(f"**{term}**: {meaning}" for term, meaning in GLOSSARY)
    more = f"More in `{DOCS_PAGE}` (*Horizon, never trained, per-document answers*)."
    return ["## Terms", "", f"{terms}. {more}", ""]


def horizon_lines(rows: Sequence[tuple[str, HorizonStatement, NeverTrained]]) -> list[str]:
    """The Markdown section: per packer, the horizon and the never-trained parts (tokens, documents)."""
    head = "| | " + " | ".join(p for p, _, _ in rows) + " |"
    lines = ["## Horizon and never trained", "", head, "|---|" + "---:|" * len(rows)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("horizon asked", [h.asked.describe() if h.asked else "natural end" for _, h, _ in rows])
    row("stopped at row (why; partial row)",
        [f"{_n(h.stopped_at_row)} ({h.reason}; {_n(h.partial_row_tokens)})" for _, h, _ in rows])
    row("**never trained**: tokens (share of offered); documents",
        [f"**{_n(nt.tokens)}** ({_pct(nt.share)}); {_n(nt.untrained_documents)}" for _, _, nt in rows])
    for label, attr in (("never started", "never_started"), ("dropped", "dropped"),
                        ("still buffered", "still_buffered"), ("in the partial row", "partial_row"),
                        ("never reached", "never_reached")):
        row(f"– {label}: tokens; documents",
            [f"{_n(getattr(nt, attr).tokens)}; {_n(getattr(nt, attr).documents)}" for _, _, nt in rows])
    offered = rows[0][2] if rows else None
    total = (f"Offered: {_n(offered.offered_documents)} documents, {_n(offered.offered_tokens)} tokens "
             "(every pass). " if offered else "")
    return [*lines, "", total + "Each document's tokens count once: trained + never started + dropped + "
                                "still buffered + in the partial row + never reached = offered, exactly.", ""]
