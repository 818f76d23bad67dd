"""The doctor: replay a framework config on a corpus and rank what its packer does wrong.

:func:`doctor` maps the config (:func:`~packing_theory.configs.read_config`),
replays the registered packer on the corpus with the library's consumers
(:class:`~packing_theory.audit.Ledger`, :class:`~packing_theory.audit.DocumentRows`,
:func:`~packing_theory.audit.never_trained`, :class:`~packing_theory.configs.trainable.TrainableTokens`)
in one pass (:func:`~packing_theory.engine.consumers.feed_all`), and turns what
they measured into findings. Every number is read off the replay; nothing is
estimated.

What the run never trained is the one measurement's
(:func:`~packing_theory.audit.never_trained`, as ``packing-theory audit`` reports it:
*never started*, *cut off*, *never reached*): :attr:`DoctorReport.untrained`. The
``filtered``, ``dropped-batches`` and ``never-started`` findings split its
*never started* documents by cause (each document in one), ``tails-cut`` is its
*cut off* part (plus what the framework's truncation before packing cut from the documents
that started; a document that never started is counted there, whole); the documents that
*never arrived* lie beyond the horizon and are stated, not found. Every share of a
finding names its whole: the offered documents or tokens (what the packer is offered, as
``packing-theory audit`` counts them), or for tokens cut from started documents the tokens
read (before a framework's own truncation; the offered ones when it truncates nothing first).

===================  ============================================================================
kind                 what is measured
===================  ============================================================================
``starvation``       ``bestfit-pad``: the row from which every row is padding (the replay's
                     ``"starved"`` horizon), inside the proved bounds of
                     :func:`~packing_theory.invariant.starvation.starvation_bound`
``padding``          padding positions / row positions (the all-padding rows after a starvation
                     up to the horizon included), above ``Thresholds.padding``
``never-started``    documents held and never started at the horizon: a streaming packer's buffered
                     documents longer than a row, an offline packer's documents in rows after the
                     horizon (the cause names the horizon and the config key that set it)
``filtered``         documents removed before packing (``Filtered``: too long, too short, ...)
``dropped-batches``  documents discarded whole with no token held: ``drop_last`` and the
                     cross-rank minimum batch count (Axolotl), leftover bins over the limit
``tails-cut``        tokens cut from started documents (crops, truncation, the framework's own
                     truncation before packing), above ``Thresholds.tails_cut``
``no-trainable``     started documents none of whose trainable tokens (after the prompt) is in a
                     trained row
``dropped-rows``     rows of a final incomplete batch the trainer drops
``blend``            a Megatron blend's realised document share against its declared weight, and
                     repeated sources
===================  ============================================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit import DocumentRows, Ledger, NeverTrained, horizon_statement, never_trained
from ..audit.identity import NameSource, as_names
from ..audit.results import Aggregates
from ..engine.consumers import feed_all
from ..engine.events import Horizon
from ..engine.horizon import cut_at_horizon
from ..errors import InputError
from ..invariant.starvation import starvation_bound
from ..lengths import exact_sum, validate_lengths
from ..registry import build_packer, entry
from ._base import MappedConfig
from .blend import train_split_range
from .blend_doctor import blend_findings
from .read import read_config
from .report import DoctorFinding, DoctorReport, Thresholds
from .trainable import TrainableResult, TrainableTokens

__all__ = ["doctor"]

Int64Array = npt.NDArray[np.int64]


@dataclass
class _Run:
    """What one replay measured."""

    agg: Aggregates
    cols: dict[str, npt.NDArray[Any]]
    trainable: TrainableResult | None
    horizon: Horizon
    sentence: str
    untrained: NeverTrained


_Names = Sequence[str] | NameSource | None


def _names(names: _Names, idx: npt.NDArray[np.integer[Any]],
           positions: Int64Array) -> tuple[str, ...]:
    """Up to ten replayed documents ``idx`` named by ``names`` (indexed by their ``positions`` in the
    original data) or ``document i``."""
    orig = [int(i) for i in positions[np.asarray(idx[:10], np.int64)].tolist()]
    source = as_names(names)
    known = [o for o in orig if source is not None and o < len(source)]
    named = dict(zip(known, source.take(np.asarray(known, np.int64)) if source is not None and known else [],
                     strict=True))
    return tuple(named.get(o, f"document {o}") for o in orig)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def doctor(config: MappedConfig | str | os.PathLike[str], data: Any, *, prompt_lengths: Any = None,
           names: Sequence[str] | NameSource | None = None, thresholds: Thresholds | None = None,
           data_label: str = "", framework: str | None = None) -> DoctorReport:
    """Replay ``config`` on ``data`` and rank the findings (see the module doc).

    Args:
        config: a :class:`~packing_theory.configs.MappedConfig` or a config file.
        data: the BOS-inclusive document lengths, in the order the framework reads them; for a
            Megatron blend, a mapping from each source's name to its lengths.
        prompt_lengths: per document, the offset of its first trainable token (needed for
            ``no-trainable``; a prompt-masked config without it says so in ``checked``).
        names: per document, a name for the examples (a sequence or a lazy
            :class:`~packing_theory.audit.identity.NameSource`; default ``document i``).
        thresholds: when a measured quantity is a finding (:class:`Thresholds`).
        data_label: how the report names the data.
        framework: the framework, when ``config`` is a file that does not say it.

    Raises:
        InputError: bad lengths, prompt lengths of another size, a blend without its sources' data.

    Complexity: one replay of the packer (two for a starving ``bestfit-pad`` run cut by its
    horizon), O(occurrences) memory for the ledger's table.
    """
    m = config if isinstance(config, MappedConfig) else read_config(config, framework)
    th = thresholds or Thresholds()
    if m.blend is not None:
        if not isinstance(data, Mapping):
            raise InputError("a Megatron blend needs each source's lengths: pass a mapping source -> lengths")
        return blend_findings(m, data, th, data_label or "the blend's datasets")
    if isinstance(data, Mapping):
        raise InputError(f"{m.packer} replays one corpus: pass its lengths, not a mapping")
    arr = validate_lengths(data if isinstance(data, np.ndarray) else np.asarray(data))
    checked: list[str] = []
    positions = _replayed(m, arr, checked)
    prompt = None
    if prompt_lengths is not None:
        full = np.asarray(prompt_lengths)
        if full.ndim != 1 or full.size != arr.size:
            raise InputError(f"prompt_lengths has {full.size} entries for {arr.size} documents")
        prompt = full[positions].astype(np.int64)
    arr = arr[positions]
    read = exact_sum(arr)  # as read, before the framework's own truncation
    excess = np.zeros(arr.size, np.int64)
    if m.pre_truncate is not None:
        excess = np.maximum(arr - m.pre_truncate, 0)
        arr = np.minimum(arr, m.pre_truncate)
    run = _replay(m, arr, prompt)
    findings: list[DoctorFinding] = []
    offered = exact_sum(arr)  # what the packer is offered: audit's offered tokens
    starved_extra = _starvation(m, arr, run, positions, names, findings, checked)
    _padding(m, run, starved_extra, findings, checked, th)
    _never_started(m, run, positions, names, offered, findings, checked)
    _tails(m, run, positions, names, (offered, read), excess, findings, checked, th)
    _trainable(m, run, positions, names, findings, checked)
    _dropped_rows(m, run, findings, checked)
    findings.sort(key=lambda f: -f.severity)
    return DoctorReport(m, data_label or "the data", int(arr.size), offered, run.agg.rows, run.sentence,
                        tuple(findings), tuple(checked), th, run.untrained,
                        read_tokens=read if read != offered else None)


def _replayed(m: MappedConfig, arr: Int64Array, checked: list[str]) -> Int64Array:
    """The positions in ``arr`` of the documents the trainer reads: Megatron's training split of ``--split``
    (the documents outside it said in ``checked``), then every ``rank_stride``-th for rank 0."""
    positions = np.arange(arr.size, dtype=np.int64)
    if m.train_split is not None:
        begin, end = train_split_range(m.train_split, int(arr.size))
        if begin >= end:
            raise InputError(f"--split {m.train_split}: its training split holds none of the {arr.size:,} "
                             "documents")
        positions = positions[begin:end]
        if positions.size < arr.size:
            out = int(arr.size - positions.size)
            checked.append(f"split: --split {m.train_split} trains documents [{begin:,}, {end:,}) of "
                           f"{arr.size:,}; the other {out:,} ({exact_sum(arr) - exact_sum(arr[begin:end]):,} "
                           "tokens) are outside the training split (validation and test), not offered")
    return positions[::m.rank_stride]


def _replay(m: MappedConfig, arr: Int64Array, prompt: Int64Array | None) -> _Run:
    packer = m.build()
    e = entry(m.packer)
    R = packer.capacity
    if e.kind == "streaming":
        events = packer.stream(arr)
        ledger = Ledger.for_packer(packer)
    else:
        events = cut_at_horizon(packer.events(arr), m.horizon, capacity=R)
        ledger = Ledger.for_packer(packer, min_buffer=1)
    consumers: list[Any] = [ledger, DocumentRows.for_packer(packer)]
    if prompt is not None:
        consumers.append(TrainableTokens(R, prompt))
    results = feed_all(events, *consumers)
    agg = ledger.result()
    nt = never_trained(ledger, arr, rows=results[1])
    statement = horizon_statement(agg, m.horizon, streaming=e.kind == "streaming")
    h = Horizon(agg.rows, agg.partial_row_tokens, agg.stop_reason, ())
    cols = ledger.arrays()
    return _Run(agg, cols, results[2] if prompt is not None else None, h, statement.sentence(), nt)


def _starvation(m: MappedConfig, arr: Int64Array, run: _Run, positions: Int64Array, names: _Names,
                findings: list[DoctorFinding], checked: list[str]) -> int:
    """The starvation finding; returns the all-padding rows between the starved row and the horizon."""
    e = entry(m.packer)
    if e.kind != "streaming" or not m.build().config.spec.pads:
        return 0
    free = {k: v for k, v in m.options.items() if k not in ("rows", "targets")}
    cfg = build_packer(m.packer, capacity=m.capacity, **free).config
    bound = starvation_bound(arr, cfg)
    if bound is None:
        checked.append(f"starvation: fewer than B = {cfg.min_buffer:,} documents are longer than a row: the "
                       "buffer cannot fill with them")
        return 0
    h = run.horizon
    s = h.rows if h.stop_reason == "starved" else None
    if s is None:  # the horizon ended first: replay on to the starvation
        last: Any = None
        for ev in build_packer(m.packer, capacity=m.capacity, **free).events(arr):
            last = ev
        s = last.rows if last is not None and last.stop_reason == "starved" else None
    if s is None:  # the stream ran dry first (only possible with several passes ending)
        checked.append("starvation: the stream runs dry before the buffer holds only long documents")
        return 0
    assert bound.contains(s), (bound, s)
    limit = m.horizon.row_limit(m.capacity) if m.horizon is not None else None
    if limit is not None and s >= limit:
        checked.append(f"starvation: every row from row {s:,} on would be padding, after the horizon of "
                       f"{limit:,} rows")
        return 0
    per = m.rows_per_step
    step = f", optimizer step {s // per:,} ({per:,} rows a step)" if per else ""
    cols = run.cols
    held = np.flatnonzero(cols["arrived"] & ~cols["started"] & (cols["buffered"] > 0)
                          & (cols["length"] > m.capacity))
    docs = np.unique(cols["source"][held])
    extra = (limit - s) if limit is not None else 0
    findings.append(DoctorFinding(
        "starvation", "every row becomes padding",
        f"from row {s:,}{step} on every row is padding: every target is masked (nanochat's loss is NaN "
        f"there); the buffer holds {bound.long_arrivals:,} documents longer than R = {m.capacity:,} after "
        f"{bound.arrivals:,} arrivals, and the proved bounds put that row in {bound.first_row_low:,}.."
        f"{bound.first_row_high:,}" + (
            f"; {extra:,} of the horizon's {limit:,} rows are all padding" if limit is not None
            else "; without a row budget the run never ends"),
        1.0 + (extra / limit if limit else 0.0), int(docs.size), int(cols["length"][held].sum()),
        _names(names, docs, positions),
        rule="bestfit-pad pads instead of cropping, so a document longer than the row never leaves the "
             "buffer; once the buffer holds only such documents nothing fits an empty row "
             "(proofs/coq/BestFitPad.v bfp_starvation; nanochat PR #811)",
        detail={"row": s, "step": s // per if per else None, "bound": bound.to_dict(),
                "all_padding_rows_to_horizon": extra}))
    return extra


def _padding(m: MappedConfig, run: _Run, extra_rows: int, findings: list[DoctorFinding], checked: list[str],
             th: Thresholds) -> None:
    R = m.capacity
    pad = run.agg.mass.padding_tokens + extra_rows * R  # the ledger counts every Padding position
    positions = (run.agg.rows + extra_rows) * R
    share = pad / positions if positions else 0.0
    text = f"{_share(pad, positions)} of the row positions are padding ({pad:,} of {positions:,})"
    if share <= th.padding:
        checked.append(f"padding: {text}")
        return
    never_read = [f"{k} ({why})" for k, why in m.ignored if "never read" in why]
    rule = (f"{m.packer}: rows of R = {R:,} positions; the unused positions of each row are padding "
            "(the replay's Padding events)")
    if never_read:
        rule += "; the config's " + "; ".join(never_read)
    findings.append(DoctorFinding("padding", "padding and unused capacity", text, share, 0, pad,
                                  rule=rule, detail={"padding": pad, "positions": positions,
                                                     "all_padding_rows": extra_rows}))


def _never_started(m: MappedConfig, run: _Run, positions: Int64Array, names: _Names, offered: int,
                   findings: list[DoctorFinding], checked: list[str]) -> None:
    """The measurement's never-started documents, split by cause: filtered, dropped whole, held at the
    horizon (each document in exactly one group; the groups sum to ``run.untrained.never_started``)."""
    c = run.cols
    ns = c["arrived"] & ~c["started"]
    filtered = ns & (c["filtered"] > 0)
    held = ns & ~filtered & (c["buffered"] > 0)
    dropped = ns & ~filtered & ~held
    offered_docs = run.untrained.offered_documents
    streaming = entry(m.packer).kind == "streaming"
    long_held = held & (c["length"] > m.capacity)
    groups = [
        ("filtered", "documents filtered before packing, never started", filtered,
         "the framework removes these documents before packing (Filtered events; "
         + entry(m.packer).family + ")"),
        ("dropped-batches", "documents dropped whole, never started", dropped, _drop_rule(m)),
    ]
    if not streaming:
        groups.append(("never-started", "documents held past the horizon, never started", held,
                       _held_rule(m)))
    elif not m.build().config.spec.pads:  # bestfit-pad's held long documents are the starvation finding
        groups.append(("never-started", "long documents never started", long_held,
                       "the paper's §3: the min(B - 1, N_L) largest long documents stay buffered, unchanged "
                       "and unstarted at every selection (proofs/coq/Invariant.v protected_invariant)"))
    for kind, title, mask, rule in groups:
        idx = np.flatnonzero(mask)
        if not idx.size:
            checked.append(f"{kind}: none" if kind != "never-started" else
                           "never-started: no document longer than a row is held unstarted" if streaming else
                           "never-started: no document is held past the horizon")
            continue
        docs = np.unique(c["source"][idx])
        tokens = int(c["length"][idx].sum())
        findings.append(DoctorFinding(
            kind, title, f"{idx.size:,} documents ({_share(int(idx.size), offered_docs)} of the "
            f"{offered_docs:,} offered) are never trained: {tokens:,} tokens ({_share(tokens, offered)} "
            f"of the {offered:,} tokens offered)", tokens / offered if offered else 0.0,
            int(idx.size), tokens, _names(names, docs, positions), rule=rule, whole=offered))
    if streaming:
        short = int(np.count_nonzero(held & ~long_held))
        if short:
            checked.append(f"never-started: {short:,} documents no longer than a row are in the buffer at "
                           "the horizon (the buffer's ordinary contents)")


def _horizon_words(m: MappedConfig) -> str:
    """``"the horizon of 2,400 rows (max_steps = 300)"``: the horizon and the config keys that set it."""
    assert m.horizon is not None
    keys = [f"{u.key} = {_plain_value(u.value)}" for u in m.used if u.became.startswith("horizon")]
    return f"the horizon of {m.horizon.describe()}" + (f" ({', '.join(keys)})" if keys else "")


def _plain_value(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _held_rule(m: MappedConfig) -> str:
    """Why an offline packer's documents are held, never started: they lie in rows after the horizon."""
    if m.horizon is None:
        return f"{m.packer} holds these documents at the end of its run ({entry(m.packer).family})"
    return (f"{m.packer} placed these documents in rows after {_horizon_words(m)}: the trainer stops "
            f"before it reaches them; without the horizon they are trained ({entry(m.packer).family})")


def _drop_rule(m: MappedConfig) -> str:
    if m.framework == "axolotl":
        return ("Axolotl MultipackBatchSampler: drop_last drops the incomplete final batch of bins, and "
                "every epoch is cut to the minimum batch count over the length estimate draws and the ranks "
                "(axolotl PR #1066, PR #2040)")
    return f"{m.packer} discards these documents before placing a token ({entry(m.packer).family})"


def _tails(m: MappedConfig, run: _Run, positions: Int64Array, names: _Names, totals: tuple[int, int],
           excess: Int64Array, findings: list[DoctorFinding], checked: list[str], th: Thresholds) -> None:
    """Tokens cut from the documents that started within the horizon, whoever cut them: the packer (its
    discarded and filtered tails) or the framework before packing (``excess``: each document's tokens
    beyond its truncation). Their share is of the tokens read (the offered ones, when the framework
    truncates nothing first): the cut tokens are among them."""
    offered, read = totals
    c = run.cols
    lost = c["discarded"] + c["filtered"]
    started = c["arrived"] & c["started"]
    packer_docs = np.unique(c["source"][started & (lost > 0)])
    packer_tokens = int(lost[started].sum())
    began = np.unique(c["source"][started])
    pre_docs = began[excess[began] > 0]
    pre_tokens = int(excess[pre_docs].sum())
    tokens = packer_tokens + pre_tokens
    docs = np.union1d(packer_docs, pre_docs)
    whole, of = (read, "read") if read != offered else (offered, "offered")
    share = tokens / whole if whole else 0.0
    text = (f"{tokens:,} tokens ({_share(tokens, whole)} of the {whole:,} tokens {of}) are cut from "
            f"{docs.size:,} of the {began.size:,} documents that started")
    if share <= th.tails_cut:
        checked.append(f"tails-cut: {text}")
        return
    rule = f"{m.packer}: {entry(m.packer).family}"
    over = int(np.count_nonzero(excess))
    if over:
        rule = (f"the framework truncates every document to {m.pre_truncate:,} tokens before packing: "
                f"{pre_docs.size:,} of the started documents lost {pre_tokens:,} tokens that way (of the "
                f"{over:,} documents longer in all, those that never started are counted as never "
                "started); " + rule)
    findings.append(DoctorFinding("tails-cut", "tails cut from started documents", text, share,
                                  int(docs.size), tokens, _names(names, docs, positions), rule=rule,
                                  whole=whole))


def _trainable(m: MappedConfig, run: _Run, positions: Int64Array, names: _Names,
               findings: list[DoctorFinding], checked: list[str]) -> None:
    if run.trainable is None:
        if m.trainable:
            checked.append("no-trainable: not checked (the config trains only part of each example: give "
                           "each document's first trainable offset, --prompt-lengths)")
        return
    empty = run.trainable.empty_documents()
    if not empty.size:
        checked.append("no-trainable: every started document keeps a trained trainable token")
        return
    c = run.cols
    started = int(run.trainable.started.sum())
    occ = np.isin(c["source"], empty) & c["started"]
    tokens = int(c["emitted"][occ].sum())
    findings.append(DoctorFinding(
        "no-trainable", "examples with no trainable token",
        f"{empty.size:,} started examples ({_share(int(empty.size), started)} of the {started:,} started) "
        f"keep no trainable token in a trained row: their {tokens:,} placed tokens train nothing",
        tokens / max(1, int(c["emitted"].sum())), int(empty.size), tokens, _names(names, empty, positions),
        rule=("TRL pack_dataset keeps an example's first max_length tokens (list_slice(0, max_length)): "
              "an example whose prompt fills them keeps no completion token, and its labels are all -100 "
              "(TRL PR #6025; TRL 1.16.0 drops such examples only without packing, PR #6320)")
        if m.framework == "trl" else
        f"{m.packer}: only tokens from the first trainable offset on are trained, and none of these "
        "documents' is in a trained row"))


def _dropped_rows(m: MappedConfig, run: _Run, findings: list[DoctorFinding], checked: list[str]) -> None:
    if m.drop_last_rows is None:
        return
    rows = run.agg.rows
    dropped = rows % m.drop_last_rows
    if not dropped:
        checked.append(f"dropped-rows: {rows:,} rows make whole batches of {m.drop_last_rows}")
        return
    findings.append(DoctorFinding(
        "dropped-rows", "rows of the last incomplete batch dropped",
        f"the last {dropped:,} of {rows:,} rows ({_share(dropped, rows)}) form an incomplete batch of "
        f"{m.drop_last_rows} that the trainer drops", dropped / rows, 0, dropped * m.capacity,
        rule="the trainer's DataLoader(drop_last=True) (dataloader_drop_last)"))
