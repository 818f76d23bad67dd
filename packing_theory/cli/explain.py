"""``packing-theory explain DOC``: what one packer did to one document, and why, in one line.

``packing-theory explain 1733 --lengths L.npy --policy discard --min-buffer 64``
(or a name: ``explain typing.py --text lib/*.py``, ``explain a.txt --lengths
census/lengths.npy`` next to its ``census.json``) replays the corpus to the same
horizon ``audit`` uses (243,968 rows unless ``--rows`` / ``--targets`` /
``--tokens`` / ``--natural-end`` says otherwise) and prints
:attr:`~packing_theory.audit.Explanation.sentence`; ``--json`` prints the whole
:class:`~packing_theory.audit.Explanation`. ``DOC`` is a raw index — the
document's position in the corpus as read, before any ``--funnel`` — or a
name (exact, else a unique whole-component path suffix; a record's own
name is its ``id`` / ``name``, :mod:`packing_theory.corpus.readers.names`;
two documents of one name are refused as ambiguous). A document the
funnel removed is explained by the stage that removed it. Exit 0; an unknown
or ambiguous document (the error lists candidates) or bad input exits 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._options import add_options
from .replay import INPUT_OPTIONS, PACKER_OPTIONS

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``explain`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "explain",
        description="Replay the corpus with one packer to the audit's horizon and say, for one document (its "
                    "raw index or its name), whether it trained, which rows hold its tokens, or why it never "
                    "started, was never reached or was removed by the cleaning funnel (--funnel).",
    )
    add_options(parser, "document", *INPUT_OPTIONS, *PACKER_OPTIONS, "rows", "targets", "tokens",
                "natural-end", "funnel", "pass", "json")
    parser.set_defaults(run=run)


def _removed(corpus: Any, raw: int) -> dict[str, Any]:
    """A document the funnel removed: its identity and the stage that removed it."""
    stage = next(st.stage.name for st in corpus.funnel.stages if st.removed[raw])
    name = corpus.name(raw)
    length = int(corpus.raw_lengths[raw])
    sentence = (f"document {raw}" + (f" ({name}, length {length:,})" if corpus.names is not None
                                     else f" (length {length:,})")
                + f": removed by the cleaning funnel at stage {stage!r}, so no packer saw it")
    return {"document": raw, "name": name if corpus.names is not None else "", "length": length,
            "fate": "removed by the funnel", "stage": stage, "sentence": sentence}


def _removed_by_name(corpus: Any, document: str) -> int | None:
    """The raw index of the document named ``document``, if the funnel removed it (an ambiguous name is
    refused)."""
    if corpus.funnel is None or corpus.names is None:
        return None
    from ..audit.documents import documents_named

    hits = documents_named(corpus.names, document).tolist()
    return hits[0] if len(hits) == 1 and not corpus.funnel.keep[hits[0]] else None


def run(args: argparse.Namespace) -> int:
    """Explain the document; print one line (exit 0)."""
    from ..audit.documents import is_document_id
    from ..audit.explanations import explain
    from ..engine.horizon import Budget
    from ..errors import InputError
    from ..registry import entry
    from ._common import emit_json, horizon_from_args, packers_from_args, settings_from_args
    from ._inputs import corpus_from_args
    from ._options import AUTORESEARCH_ROWS
    from ._packers import check_width

    (name,) = packers_from_args(args, ["discard"], one=True)
    settings = settings_from_args(args, [name])
    horizon = horizon_from_args(args, Budget("rows", AUTORESEARCH_ROWS))
    knobs = settings.knobs(entry(name))
    knobs.pop("min_buffer", None)  # explain's own argument (B of the protected set, for every packer)
    width = check_width(settings, name)
    corpus = corpus_from_args(args)
    document: str = args.document
    found: dict[str, Any] | None = None
    if is_document_id(document):  # ASCII digits: '²' is a digit to isdigit() that int() refuses
        raw = int(document)
        if raw >= corpus.raw_lengths.size:
            n = int(corpus.raw_lengths.size)
            raise InputError(f"document {raw} is not a raw index of the {n:,} documents (0..{n - 1:,}); or "
                             "give its name")
        if corpus.funnel is not None and not corpus.funnel.keep[raw]:
            found = _removed(corpus, raw)
    try:
        result = None if found is not None else explain(
            corpus.lengths, document, policy=name, capacity=width, min_buffer=settings.min_buffer,
            horizon=horizon if isinstance(horizon, Budget) else None, identity=corpus.identity(),
            pass_index=args.pass_index, options=knobs)
    except InputError:
        raw_removed = None if is_document_id(document) else _removed_by_name(corpus, document)
        if raw_removed is None:
            raise
        found = _removed(corpus, raw_removed)
        result = None
    if result is not None:
        found = result.to_dict()
    assert found is not None
    if args.json:  # the record on standard output, the sentence beside it as every command's summary line
        emit_json(found)
        print(f"explain: {found['sentence']}", file=sys.stderr)
    else:  # the answer is the output: redirected with '> file' like any command's result
        print(found["sentence"])
    return 0
