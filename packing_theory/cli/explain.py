"""``packing-theory explain DOC``: what one packer did to one document, and why, in one line.

``packing-theory explain books-00481 --data corpus/ --policy discard --min-buffer 64``
(or a file name: ``explain typing.py --text lib/*.py``; a raw index:
``explain --index 1733 --lengths L.npy``) replays the corpus to the same
horizon ``audit`` uses (243,968 rows unless ``--rows`` / ``--targets`` /
``--tokens`` / ``--natural-end`` says otherwise) and prints
:attr:`~packing_theory.audit.Explanation.sentence`; ``--json`` prints the whole
:class:`~packing_theory.audit.Explanation`.

``DOC`` is looked up by :func:`~packing_theory.audit.documents.lookup_document`,
in the names ``documents.csv`` writes (a record's own ``id`` / ``name``,
:func:`~packing_theory.corpus.readers.names.reader_names`): a name (exact, else
a unique whole-component path suffix; two documents of one name are refused
as ambiguous); ASCII digits are the document whose name is exactly those
digits (a JSON Lines ``"id": "12345"``) when there is one, else the raw index
— the document's position in the corpus as read, before any ``--funnel``.
Digits that are one document's name and another's index explain the named
one and say so on standard error, with the ``--index`` that asks for the
other; ``--index N`` is always the raw index. A document the funnel removed
is explained by the stage that removed it.

``DOC`` or ``--index``, one of them, is checked before the corpus is read:
``--data`` takes every word up to the next option, so a ``DOC`` written after
it is named in the error with the fix (put it before ``--data``, or last after
``--``). The data-source options ``--labels``, ``--labels-manifest``,
``--source-column``, ``--source-from`` and ``--mixture`` are taken as ``audit``
takes them (a command line copied from ``audit`` runs): the sentence says the
document's source. With ``--passes`` above 1 the sentence names the pass it
explains (``--pass K``, default 0) and the document's fate in the others.

``--config FILE`` applies a framework's config as ``audit --config`` does
(:func:`~packing_theory.cli._config.apply_config`): its packer, row width,
knobs and horizon, a torchtune truncation, and Megatron's ``--split``, whose
documents outside the training split are explained as removed by it, as
``documents.csv`` says. Exit 0; an unknown or ambiguous document (the error
lists candidates) or bad input exits 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._options import add_options
from .replay import INPUT_OPTIONS, PACKER_OPTIONS

LABEL_OPTIONS = ("labels", "labels-manifest", "source-column", "source-from", "mixture")
"""The data-source options ``explain`` honours as ``audit`` does (with ``--funnel``): the document's source
is said, and a declared mixture is checked against the sources."""

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``explain`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "explain",
        description="Replay the corpus with one packer to the audit's horizon and say, for one document (its "
                    "name, or its raw index: --index), whether it trained, which rows hold its tokens, or "
                    "why it never started, was never reached or was removed by the cleaning funnel "
                    "(--funnel) or by the training split of a Megatron --config.",
    )
    add_options(parser, "document", "index", *INPUT_OPTIONS, "config", "framework", *PACKER_OPTIONS, "rows",
                "targets", "tokens", "natural-end", *LABEL_OPTIONS, "funnel", "pass", "json",
                optional=("config",))
    parser.set_defaults(run=run)


def _check_document_given(args: argparse.Namespace) -> None:
    """Exactly one of ``DOC`` and ``--index``, checked before anything is read; a ``DOC`` that ``--data``
    took as a path (``--data`` takes every word up to the next option) is named.

    Raises:
        InputError: both or neither given.
    """
    import glob
    import os

    from ..errors import InputError

    if args.document is not None and args.index is not None:
        raise InputError(f"DOC {args.document!r} and --index {args.index} both name the document: give "
                         "one of them")
    if args.document is not None or args.index is not None:
        return
    data = getattr(args, "data", None) or []
    last = data[-1] if len(data) > 1 else None
    if last is not None and not os.path.exists(last) and not glob.glob(last):
        raise InputError(f"DOC is missing: {last!r} was read as a --data path (--data takes every word up to "
                         "the next option): put DOC before --data, or last after --")
    raise InputError("DOC is missing: give the document's name or raw index (DOC), or --index N")


def _document(args: argparse.Namespace, corpus: Any) -> tuple[int, str | None]:
    """The raw index ``DOC`` / ``--index`` means, and a note when digits are both a document's name and
    another document's raw index (the named one is taken).

    Raises:
        InputError: an index out of range, a name no document has, an ambiguous name.
    """
    from ..audit.documents import is_document_id, lookup_document
    from ..errors import InputError

    n = int(corpus.raw_lengths.size)
    indices = f"the {n:,} documents (0..{n - 1:,})"
    if args.index is not None:
        if args.index >= n:
            raise InputError(f"--index {args.index} is not a raw index of {indices}")
        return int(args.index), None
    text: str = args.document
    hits = lookup_document(corpus.names, text).tolist()
    digits = is_document_id(text)
    if not hits and corpus.names is None:
        raise InputError(f"DOC {text!r}: this corpus names no document (lengths alone); give a raw index of "
                         f"{indices}")
    if not hits:
        raise InputError(f"DOC {text!r} is not the name of any of the {n:,} documents (a name as "
                         "documents.csv's name column writes it: exact, else a whole-component path suffix); "
                         f"a raw index is --index N (0..{n - 1:,})")
    raw = int(hits[0])
    if raw >= n:  # digits no document is named
        named = " nor any document's name" if corpus.names is not None else ""
        raise InputError(f"DOC {text} is not a raw index of {indices}{named}")
    note = None
    if digits and raw != int(text) and int(text) < n:
        note = (f"DOC {text} is the name of document {raw:,}, explained here; the document at raw index "
                f"{int(text):,} (named {corpus.name(int(text))}) is --index {int(text)}")
    return raw, note


def _removed(corpus: Any, raw: int) -> dict[str, Any]:
    """A document the funnel (or a Megatron config's ``--split``) removed: its identity and the stage that
    removed it, its ``fate`` as ``documents.csv`` writes it."""
    stage = next(st.stage for st in corpus.funnel.stages if st.removed[raw])
    name = corpus.name(raw)
    length = int(corpus.raw_lengths[raw])
    source = "" if corpus.sources is None else str(corpus.sources.names[int(corpus.sources.codes[raw])])
    known = [name] if corpus.names is not None else []
    known += [f"source {source}"] if source else []
    who = f"document {raw} ({', '.join([*known, f'length {length:,}'])})"
    if stage.name == corpus.options.get("split_stage"):  # --config: Megatron's --split
        begin, end = stage.parameters["training documents"]
        why = (f"outside the training split of the config's --split {stage.parameters['split']} (Megatron "
               f"trains documents {begin:,}..{end - 1:,} of this dataset), so no packer saw it")
    else:
        why = f"removed by the cleaning funnel at stage {stage.name!r}, so no packer saw it"
    return {"document": raw, "name": name if corpus.names is not None else "", "source": source,
            "length": length, "fate": f"removed by {stage.name}", "stage": stage.name,
            "sentence": f"{who}: {why}"}


def run(args: argparse.Namespace) -> int:
    """Explain the document; print one line (exit 0)."""
    from ..audit.explanations import explain
    from ..engine.horizon import Budget
    from ..registry import entry
    from ._common import emit_json, horizon_from_args, packers_from_args, settings_from_args
    from ._config import apply_config
    from ._inputs import corpus_from_args
    from ._options import AUTORESEARCH_ROWS
    from ._packers import check_width

    _check_document_given(args)
    apply_config(args, "explain")
    (name,) = packers_from_args(args, ["discard"], one=True)
    settings = settings_from_args(args, [name])
    horizon = horizon_from_args(args, Budget("rows", AUTORESEARCH_ROWS))
    knobs = settings.knobs(entry(name))
    knobs.pop("min_buffer", None)  # explain's own argument (B of the protected set, for every packer)
    width = check_width(settings, name)
    corpus = corpus_from_args(args)
    raw, note = _document(args, corpus)
    if note is not None:
        print(f"explain: {note}", file=sys.stderr)
    found: dict[str, Any]
    if corpus.funnel is not None and not corpus.funnel.keep[raw]:
        found = _removed(corpus, raw)
    else:
        found = explain(corpus.lengths, raw, policy=name, capacity=width, min_buffer=settings.min_buffer,
                        horizon=horizon if isinstance(horizon, Budget) else None, identity=corpus.identity(),
                        pass_index=args.pass_index, options=knobs).to_dict()
    if args.json:  # the record on standard output, the sentence beside it as every command's summary line
        emit_json(found)
        print(f"explain: {found['sentence']}", file=sys.stderr)
    else:  # the answer is the output: redirected with '> file' like any command's result
        print(found["sentence"])
    return 0
