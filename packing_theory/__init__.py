"""packing_theory: audit which documents a language-model packer trains on.

The library replays packers exactly (the streaming family's :class:`Packer`,
with the naive :class:`ReferencePacker` as its oracle, and every framework's
packer through :func:`build_packer`), turns each into one stream of placement
events (:mod:`packing_theory.engine.events`), and measures, checks and audits
that stream. The whole audit of a corpus, from Python::

    import packing_theory as pt
    corpus = pt.open_corpus("data/", source_from="dir", mixture="mix.yaml")
    result = pt.audit_corpus(corpus, ["discard", "trl-bfd"], pt.Settings(seq_length=2048), documents=True)
    pt.write_report(result, "audit-report", plots=True)

writes the same files as ``packing-theory audit --data data/ --source-from dir
--mixture mix.yaml --policy discard,trl-bfd --seq-length 2048 --documents``.

Layout (arrows point down; see the architecture page of the docs)::

    cli/                     the packing-theory command (one option table)
    orchestration/           ONE measurement: corpus x packers x horizon x consumers
    distributed/             where tasks run: this process, local processes, Dask; census, per-rank audits
    audit/ evaluation/ adapters/ training/ configs/ testing   consumers of the event stream
    invariant/               the protected set, the monitor, bounds, strategies
    registry                 one entry per packer (streaming policies and peers), build_packer
    peers/ corpus/ contamination/   other packers; arrival streams and readers; overlap scans
    engine/                  events, policies, buffer, Packer, ReferencePacker, compiled engine
    reporting/               ONE report model and the locked atomic writer
    _checks, lengths, errors foundation

The package root re-exports the entry points only, and imports each on first
use (``import packing_theory`` loads the foundation alone). The public
surface — the root and the modules listed in :data:`PUBLIC_MODULES` — is
frozen in ``tests/data/public_api.json`` (``tests/test_api.py``); a rename
keeps the old name working for a release through :func:`packing_theory.errors.deprecated`.

>>> import packing_theory as pt
>>> rep = pt.replay([5, 3, 9, 4], capacity=8, min_buffer=2, refill=2)
>>> s = rep.summary()
>>> s.sources_started, s.rows, s.stop_reason, s.buffered_tokens
(3, 1, 'exhausted', 9)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _startup  # noqa: F401  (first: Ctrl-C while the command starts is one line; see its docstring)
from ._deprecation import deprecated
from ._version import __version__
from .errors import Finding, InputError, InputTypeError, MissingDependency, NotMeasured, PackingTheoryError

if TYPE_CHECKING:
    from .audit import Ledger, StreamLedger, audit_events
    from .engine import (
        Arrival,
        BosAdded,
        BufferedSpan,
        CompiledPacker,
        Consumer,
        Discard,
        Event,
        EventBatch,
        Exhausted,
        Filtered,
        Horizon,
        Packer,
        PackerConfig,
        Padding,
        Placement,
        ReferencePacker,
        Repeat,
        feed_all,
        replay,
    )
    from .engine.horizon import Budget
    from .invariant import InvariantMonitor, InvariantViolation
    from .invariant.bounds import earliest_pass, mass_lower_bound, repeated_corpus_table, startup_bound
    from .orchestration import (
        AuditResult,
        Comparison,
        Corpus,
        Measurement,
        PackerRun,
        Settings,
        audit_corpus,
        compare_corpus,
        measure,
        open_corpus,
    )
    from .registry import build_packer
    from .reporting import Report, write_report

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Ledger", "StreamLedger", "audit_events"), "packing_theory.audit"),
    "Budget": "packing_theory.engine.horizon",
    **dict.fromkeys(("Arrival", "BosAdded", "BufferedSpan", "CompiledPacker", "Consumer", "Discard",
                     "Event", "EventBatch", "Exhausted", "Filtered", "Horizon", "Packer", "PackerConfig",
                     "Padding", "Placement", "ReferencePacker", "Repeat", "feed_all", "replay"),
                    "packing_theory.engine"),
    **dict.fromkeys(("InvariantMonitor", "InvariantViolation"), "packing_theory.invariant"),
    **dict.fromkeys(("earliest_pass", "mass_lower_bound", "repeated_corpus_table", "startup_bound"),
                    "packing_theory.invariant.bounds"),
    **dict.fromkeys(("AuditResult", "Comparison", "Corpus", "Measurement", "PackerRun", "Settings",
                     "audit_corpus", "compare_corpus", "measure", "open_corpus"),
                    "packing_theory.orchestration"),
    "build_packer": "packing_theory.registry",
    **dict.fromkeys(("Report", "write_report"), "packing_theory.reporting"),
}
"""Every name the root re-exports, and the module it comes from (imported on first use)."""

PUBLIC_MODULES: tuple[str, ...] = (
    "packing_theory",
    "packing_theory.adapters",
    "packing_theory.adapters.torch",
    "packing_theory.audit",
    "packing_theory.configs",
    "packing_theory.contamination",
    "packing_theory.corpus",
    "packing_theory.corpus.readers",
    "packing_theory.distributed",
    "packing_theory.engine",
    "packing_theory.errors",
    "packing_theory.evaluation",
    "packing_theory.invariant",
    "packing_theory.invariant.bounds",
    "packing_theory.invariant.strategies",
    "packing_theory.lengths",
    "packing_theory.orchestration",
    "packing_theory.peers",
    "packing_theory.registry",
    "packing_theory.reporting",
    "packing_theory.testing",
    "packing_theory.training",
)
"""The public modules: their ``__all__`` is the API (frozen in ``tests/data/public_api.json``); every
other module is an implementation detail that may change without notice."""

__all__ = [
    "PUBLIC_MODULES",
    "Arrival",
    "AuditResult",
    "BosAdded",
    "Budget",
    "BufferedSpan",
    "Comparison",
    "CompiledPacker",
    "Consumer",
    "Corpus",
    "Discard",
    "Event",
    "EventBatch",
    "Exhausted",
    "Filtered",
    "Finding",
    "Horizon",
    "InputError",
    "InputTypeError",
    "InvariantMonitor",
    "InvariantViolation",
    "Ledger",
    "Measurement",
    "MissingDependency",
    "NotMeasured",
    "Packer",
    "PackerConfig",
    "PackerRun",
    "PackingTheoryError",
    "Padding",
    "Placement",
    "ReferencePacker",
    "Repeat",
    "Report",
    "Settings",
    "StreamLedger",
    "__version__",
    "audit_corpus",
    "audit_events",
    "build_packer",
    "compare_corpus",
    "earliest_pass",
    "feed_all",
    "mass_lower_bound",
    "measure",
    "open_corpus",
    "repeated_corpus_table",
    "replay",
    "startup_bound",
    "write_report",
]


_DEPRECATED = deprecated("packing_theory", {"audit_lengths": "packing_theory.audit.audit_lengths"},
                         since="0.2.0")
"""Names the root no longer exports, served with a warning for a release (``audit_lengths`` audits one
streaming replay; :func:`audit_corpus` audits any packer)."""


def __getattr__(name: str) -> Any:
    """Import a re-exported name on first use (PEP 562); a deprecated name warns and is served."""
    module = _EXPORTS.get(name)
    if module is None:
        return _DEPRECATED(name)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
