"""The cleaning funnel as declared, ordered operators: each stage's outcome on the documents it was given.

Seed 004 writes the cleaned corpus as ``C_clean = C_E(D(F#(C_raw)))``: a
document filter ``F``, then a deduplication operator ``D``, then an
evaluation decontamination ``C_E``, each a declared object (features,
thresholds, revision), and notes that another order retains another corpus.
A funnel declaration (JSON or YAML) lists the stages in order, each with
its outcome on the documents that reached it::

    {"stages": [
      {"name": "quality", "kind": "filter", "parameters": {"min_score": 4}, "revision": "r3",
       "mask": "quality.u8"},                             # 1 byte per input document, 1 = removed
      {"name": "minhash", "kind": "dedup", "ids": "duplicates.txt"},   # raw document ids removed
      {"name": "decontaminate", "kind": "decontamination",
       "column": {"path": "flags.parquet", "name": "contaminated"}}  # 0/1 per input document
    ]}

``kind`` is ``filter``, ``dedup``, ``decontamination`` or ``any`` (any other
named stage). A **mask** (seed 002's ``.u8``: :mod:`~packing_theory.corpus.masks`)
or a **column** covers exactly the stage's input — the documents that
survived the stages before it, in corpus order — and one of another length
is refused with an :class:`~packing_theory.InputError` naming the stage, the
file and both lengths. An **id list** (one id per line, or a JSON list)
names raw document indices (``0 .. N_raw - 1``); an id already removed by an
earlier stage removes nothing more. Paths are relative to the declaration
file and stay inside its directory (an absolute path, or one that leaves the
directory through ``..`` or a symlink, is refused naming the stage); each
file is a regular file, and a mask's size is checked before it is read. The
contamination command's exclusion mask is a ``decontamination`` stage as it is.

>>> import numpy as np
>>> f = Funnel.from_document({"stages": [{"name": "f", "kind": "filter", "mask": [0, 1, 0, 0]},
...                                      {"name": "d", "kind": "dedup", "ids": [3]}]})
>>> r = f.apply(np.array([5, 6, 7, 8]))
>>> r.keep.tolist(), [s.removed_documents for s in r.stages]
([True, False, True, False], [1, 1])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import is_int
from .._files import confined, load_json, outside, read_bounded, regular_file
from .._unique import distinct
from ..errors import InputError
from ..lengths import validate_lengths
from .labels import SourceLabels
from .masks import read_mask

__all__ = ["STAGE_KINDS", "Funnel", "FunnelProblem", "FunnelResult", "FunnelStage", "StageOutcome"]

STAGE_KINDS = ("filter", "dedup", "decontamination", "any")
"""The kinds of a funnel stage (seed 004's F, D, C_E, and any other named operator)."""

_OUTCOMES = ("mask", "ids", "column")
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class FunnelStage:
    """One declared stage: name, kind, parameters, revision and where its outcome is."""

    name: str
    kind: str
    outcome: str  # "mask", "ids" or "column"
    where: Any  # a path, {"path", "name"} for a column, or an inline list
    parameters: dict[str, Any] = field(default_factory=dict)
    revision: str | None = None

    def describe(self) -> dict[str, Any]:
        """A JSON-ready dict of the declaration."""
        where = self.where if isinstance(self.where, (str, dict)) else f"inline list of {len(self.where)}"
        return {
            "name": self.name,
            "kind": self.kind,
            "parameters": self.parameters,
            "revision": self.revision,
            "outcome": self.outcome,
            "source": where,
        }


@dataclass(frozen=True)
class StageOutcome:
    """What one stage did: its input and removed documents and tokens, in total and per source."""

    stage: FunnelStage
    input_documents: int
    removed_documents: int
    input_tokens: int
    removed_tokens: int
    removed: BoolArray  # per raw document: removed by this stage

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            **self.stage.describe(),
            "input_documents": self.input_documents,
            "removed_documents": self.removed_documents,
            "input_tokens": self.input_tokens,
            "removed_tokens": self.removed_tokens,
        }


@dataclass(frozen=True)
class FunnelProblem:
    """One failed check of a funnel's reconciliation: the stage and the source it concerns, in words."""

    stage: str | None
    source: str | None
    message: str

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"stage": self.stage, "source": self.source, "message": self.message}


@dataclass(frozen=True)
class FunnelResult:
    """The funnel applied to a raw corpus: every stage's outcome and the documents kept at the end."""

    raw_documents: int
    raw_tokens: int
    stages: tuple[StageOutcome, ...]
    keep: BoolArray  # per raw document: survived every stage

    def per_source(self, labels: SourceLabels, lengths: npt.ArrayLike) -> dict[str, dict[str, Any]]:
        """Per source: raw documents and tokens, then documents and tokens after each stage. O(n × stages)."""
        arr = validate_lengths(lengths)
        labels.check_documents(arr.size)
        S = len(labels.names)
        docs = [np.bincount(labels.codes, minlength=S)]
        toks = [np.bincount(labels.codes, weights=arr, minlength=S)]
        alive = np.ones(arr.size, np.bool_)
        for st in self.stages:
            alive &= ~st.removed
            docs.append(np.bincount(labels.codes[alive], minlength=S))
            toks.append(np.bincount(labels.codes[alive], weights=arr[alive], minlength=S))
        names = ["raw", *(st.stage.name for st in self.stages)]
        return {
            src: {
                "steps": names,
                "documents": [int(d[s]) for d in docs],
                "tokens": [round(t[s]) for t in toks],
            }
            for s, src in enumerate(labels.names)
        }

    def reconcile(self, labels: SourceLabels, lengths: npt.ArrayLike) -> tuple[FunnelProblem, ...]:
        """Check the outcome against the raw corpus, recomputed from the stages' masks; every failure.

        Independently of the counts it checks, from each stage's ``removed``
        mask, ``keep``, the raw ``lengths`` and ``labels``:

        * every mask covers the raw corpus; a stage removes only documents
          that reached it (none an earlier stage removed: the removed sets
          are disjoint), named per stage and source with the first raw ids;
        * each stage's recorded input and removed documents and tokens are
          those its mask and the stages before it give;
        * per source, ``raw = kept + Σ removed`` in documents and in tokens,
          with ``kept`` read from ``keep``;
        * the raw totals are those of ``lengths``.

        An empty result means the funnel reconciles. O(documents × stages).

        Raises:
            InputError: labels of another length than ``lengths``.
        """
        arr = validate_lengths(lengths)
        labels.check_documents(arr.size)
        out: list[FunnelProblem] = []
        n, S = int(arr.size), len(labels.names)
        if (self.raw_documents, self.raw_tokens) != (n, int(arr.sum())):
            out.append(FunnelProblem(None, None, f"the funnel records {self.raw_documents:,} raw documents "
                                     f"and {self.raw_tokens:,} tokens; the corpus has {n:,} and "
                                     f"{int(arr.sum()):,}"))
        masks = [np.asarray(st.removed, np.bool_) for st in self.stages]
        keep = np.asarray(self.keep, np.bool_)
        if any(m.shape != (n,) for m in [*masks, keep]):
            bad = [st.stage.name for st, m in zip(self.stages, masks, strict=True) if m.shape != (n,)]
            out.append(FunnelProblem(bad[0] if bad else None, None,
                                     f"{'stage ' + repr(bad[0]) + ' mask' if bad else 'keep'} does not "
                                     f"cover the {n:,} raw documents"))
            return tuple(out)
        out += _stage_problems(self.stages, masks, arr, labels)
        removed = np.logical_or.reduce(masks) if masks else np.zeros(n, np.bool_)
        for wrong, says in (
                (keep & removed, "keeps {k:,} document(s) of source {s!r} that a stage removed"),
                (~keep & ~removed, "drops {k:,} document(s) of source {s!r} that no stage removed")):
            for c in np.unique(labels.codes[wrong]).tolist():
                mine = wrong & (labels.codes == c)
                out.append(FunnelProblem(None, labels.names[c], "the funnel's keep " + says.format(
                    k=int(mine.sum()), s=labels.names[c]) + f" (raw {_first_ids(mine)})"))
        kept_docs = np.bincount(labels.codes[keep], minlength=S)
        kept_tok = _tokens(labels.codes[keep], arr[keep], S)
        raw_docs, raw_tok = np.bincount(labels.codes, minlength=S), _tokens(labels.codes, arr, S)
        gone_docs = sum((np.bincount(labels.codes[m], minlength=S) for m in masks), np.zeros(S, np.int64))
        gone_tok = sum((_tokens(labels.codes[m], arr[m], S) for m in masks), np.zeros(S, np.int64))
        for s, name in enumerate(labels.names):
            for what, raw, kept, gone in (("documents", raw_docs, kept_docs, gone_docs),
                                          ("tokens", raw_tok, kept_tok, gone_tok)):
                if int(raw[s]) != int(kept[s]) + int(gone[s]):
                    out.append(FunnelProblem(None, name, (
                        f"source {name!r}: raw {what} {int(raw[s]):,} != kept {int(kept[s]):,} + removed by "
                        f"the stages {int(gone[s]):,}")))
        return tuple(out)

    @classmethod
    def nothing_removed(cls, lengths: npt.ArrayLike) -> FunnelResult:
        """The result of no stage on the raw corpus of ``lengths``: every document kept. O(n)."""
        arr = validate_lengths(lengths)
        return cls(int(arr.size), int(arr.sum()), (), np.ones(arr.size, np.bool_))

    def then(self, stage: FunnelStage, removes: npt.ArrayLike, lengths: npt.ArrayLike) -> FunnelResult:
        """This result with ``stage`` after its stages: it removes the raw documents of the mask
        ``removes`` that are still kept. O(n).

        >>> r = FunnelResult.nothing_removed([5, 6, 7]).then(FunnelStage("s", "any", "ids", "two"),
        ...                                                  [False, True, True], [5, 6, 7])
        >>> r.keep.tolist(), r.stages[0].removed_documents, r.stages[0].removed_tokens
        ([True, False, False], 2, 13)

        Raises:
            InputError: a mask or lengths that do not cover the raw corpus.
        """
        arr = validate_lengths(lengths)
        mask = np.asarray(removes, np.bool_)
        if arr.size != self.raw_documents or mask.shape != (self.raw_documents,):
            raise InputError(f"stage {stage.name!r}: its mask and lengths must cover the "
                             f"{self.raw_documents:,} raw documents, got {mask.size:,} and {arr.size:,}")
        alive = np.asarray(self.keep, np.bool_)
        removed = mask & alive
        outcome = StageOutcome(stage, int(alive.sum()), int(removed.sum()), int(arr[alive].sum()),
                               int(arr[removed].sum()), removed)
        return FunnelResult(self.raw_documents, self.raw_tokens, (*self.stages, outcome), alive & ~removed)

    def _check(self) -> None:
        """Assert that the stages remove disjoint documents and that ``keep`` is what none removed."""
        removed = np.zeros(self.raw_documents, np.bool_)
        inputs = self.raw_documents
        for st in self.stages:
            assert not (removed & st.removed).any(), f"stage {st.stage.name!r} removed a document twice"
            assert st.input_documents == inputs and int(st.removed.sum()) == st.removed_documents
            removed |= st.removed
            inputs -= st.removed_documents
        assert (self.keep == ~removed).all()


def _tokens(codes: npt.NDArray[Any], lengths: npt.NDArray[np.int64], S: int) -> npt.NDArray[np.int64]:
    out = np.zeros(S, np.int64)
    np.add.at(out, codes.astype(np.int64), lengths)
    return out


def _first_ids(mask: BoolArray, k: int = 3) -> str:
    ids = np.flatnonzero(mask)
    return ", ".join(str(int(i)) for i in ids[:k]) + (", …" if ids.size > k else "")


def _stage_problems(stages: tuple[StageOutcome, ...], masks: list[BoolArray], arr: npt.NDArray[np.int64],
                    labels: SourceLabels) -> list[FunnelProblem]:
    """Per stage: removed only what reached it (naming the source and the stage that removed it before),
    and its recorded counts."""
    out: list[FunnelProblem] = []
    alive = np.ones(arr.size, np.bool_)
    removed_by = np.full(arr.size, -1, np.int64)
    for k, (st, m) in enumerate(zip(stages, masks, strict=True)):
        name = st.stage.name
        stray = m & ~alive
        for s in np.unique(labels.codes[stray]).tolist():
            mine = stray & (labels.codes == s)
            earlier = sorted({stages[int(j)].stage.name for j in removed_by[mine]})
            out.append(FunnelProblem(name, labels.names[s], (
                f"stage {name!r} removed {int(mine.sum()):,} document(s) of source {labels.names[s]!r} that "
                f"did not reach it (raw {_first_ids(mine)}; removed before by stage "
                f"{', '.join(repr(e) for e in earlier)})")))
        recorded = (st.input_documents, st.removed_documents, st.input_tokens, st.removed_tokens)
        actual = (int(alive.sum()), int(m.sum()), int(arr[alive].sum()), int(arr[m].sum()))
        for what, r, a in zip(("input documents", "removed documents", "input tokens", "removed tokens"),
                              recorded, actual, strict=True):
            if r != a:
                out.append(FunnelProblem(name, None, f"stage {name!r} records {r:,} {what}; its mask and "
                                         f"the stages before it give {a:,}"))
        removed_by[m & (removed_by < 0)] = k
        alive &= ~m
    return out


@dataclass(frozen=True)
class Funnel:
    """The ordered stages of a cleaning pipeline (see the module docstring)."""

    stages: tuple[FunnelStage, ...]
    base: str = "."  # the directory relative paths are read from
    origin: str = "funnel"

    @classmethod
    def from_document(cls, doc: object, *, base: str = ".", origin: str = "funnel") -> Funnel:
        """Validate a parsed declaration.

        Raises:
            InputError: no stages, a stage without a name or with a repeated one, an unknown kind,
                not exactly one outcome (mask, ids or column), a malformed column.
        """
        if not isinstance(doc, Mapping) or not isinstance(doc.get("stages"), list) or not doc["stages"]:
            raise InputError(f"{origin} must be an object with a non-empty 'stages' list")
        stages: list[FunnelStage] = []
        for i, st in enumerate(doc["stages"]):
            where = f"{origin} stages[{i}]"
            if not isinstance(st, Mapping) or not isinstance(st.get("name"), str) or not st["name"]:
                raise InputError(f"{where} needs a 'name' string")
            name = st["name"]
            if any(s.name == name for s in stages):
                raise InputError(f"{where}: stage name {name!r} is repeated")
            kind = st.get("kind", "any")
            if kind not in STAGE_KINDS:
                raise InputError(
                    f"{where} ({name!r}): kind must be one of {', '.join(STAGE_KINDS)}, got {kind!r}"
                )
            given = [k for k in _OUTCOMES if k in st]
            if len(given) != 1:
                raise InputError(
                    f"{where} ({name!r}) must give exactly one outcome of {', '.join(_OUTCOMES)}; "
                    f"got {given or 'none'}"
                )
            unknown = sorted(set(st) - {"name", "kind", "parameters", "revision", *_OUTCOMES})
            if unknown:
                raise InputError(f"{where} ({name!r}) has unknown key(s) {unknown}")
            outcome = given[0]
            value = st[outcome]
            if outcome == "column" and not (
                isinstance(value, Mapping)
                and isinstance(value.get("path"), str)
                and isinstance(value.get("name"), str)
            ):
                raise InputError(f"{where} ({name!r}): column must be {{'path': FILE, 'name': COLUMN}}")
            if not isinstance(value, (str, list, Mapping)):
                raise InputError(f"{where} ({name!r}): {outcome} must be a file path or a list")
            params = st.get("parameters") or {}
            if not isinstance(params, Mapping):
                raise InputError(f"{where} ({name!r}): parameters must be an object")
            revision = st.get("revision")
            stages.append(
                FunnelStage(
                    name,
                    kind,
                    outcome,
                    dict(value) if isinstance(value, Mapping) else value,
                    dict(params),
                    None if revision is None else str(revision),
                )
            )
        return cls(tuple(stages), base, origin)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Funnel:
        """Read a funnel declaration file (JSON or YAML); relative outcome paths are read beside it."""
        from .declaration import read_declaration

        name = os.fspath(path)
        return cls.from_document(
            read_declaration(name, "funnel"),
            base=os.path.dirname(os.path.abspath(name)),
            origin=f"funnel {name!r}",
        )

    def _path(self, p: str, st: FunnelStage) -> str:
        """The stage's file: a path relative to the funnel file's directory, or an absolute one inside it
        (the user wrote the declaration; any path that leaves that directory is refused)."""
        what = f"{self.origin} stage {st.name!r} {st.outcome}"
        if isinstance(p, str) and p and "\x00" not in p and os.path.isabs(p):
            reason = outside(self.base, os.path.relpath(p, self.base))
            if reason is None:
                return p
            raise InputError(f"{what} {p!r} leaves the directory {self.base!r} ({reason}); a path inside a "
                             "declaration must stay inside the directory you named")
        return confined(self.base, p, what=what)

    def _stage_mask(self, st: FunnelStage, alive: BoolArray) -> BoolArray:
        """Per raw document: whether ``st`` removes it (only documents still alive)."""
        n_in = int(alive.sum())
        if st.outcome == "ids":
            ids = self._ids(st, alive.size)
            removed = np.zeros(alive.size, np.bool_)
            removed[ids] = True
            return removed & alive
        if st.outcome == "mask":
            if isinstance(st.where, str):
                path = self._path(st.where, st)
                what = f"mask {path!r}"
                size = os.path.getsize(regular_file(path, f"stage {st.name!r} mask"))
                if size != n_in:  # refused before reading: a mask is one byte per document
                    raise InputError(f"stage {st.name!r}: {what} has {size} entries for the stage's input of "
                                     f"{n_in} documents")
                m = read_mask(path).astype(np.bool_)
            else:
                what = "its inline mask"
                m = np.asarray(st.where)
                if m.ndim != 1 or (m.size and not np.isin(m, (0, 1)).all()):
                    raise InputError(f"stage {st.name!r}: an inline mask holds only 0 and 1")
                m = m.astype(np.bool_)
        else:
            from .labels import labels_from_column

            path = self._path(st.where["path"], st)
            what = f"column {st.where['name']!r} of {path!r}"
            col = labels_from_column(path, st.where["name"])
            names = [col.names[c] for c in range(len(col.names))]
            if not set(names) <= {"0", "1", "True", "False"}:
                raise InputError(f"stage {st.name!r}: {what} holds {names[:4]}, not 0/1 or booleans")
            m = np.asarray([col.names[c] in ("1", "True") for c in col.codes], dtype=np.bool_)
        if m.size != n_in:
            raise InputError(
                f"stage {st.name!r}: {what} has {m.size} entries for the stage's input of {n_in} documents"
            )
        removed = np.zeros(alive.size, np.bool_)
        removed[np.flatnonzero(alive)[m]] = True
        return removed

    def _ids(self, st: FunnelStage, raw: int) -> npt.NDArray[np.int64]:
        """The raw document ids a stage removes, each checked to be in ``0 .. raw - 1`` and named once.

        An id file is read as at most 24 bytes per raw document (20 digits and separators) plus 4 KiB.
        """
        if isinstance(st.where, list):
            values: list[Any] = st.where
        else:
            name = self._path(st.where, st)
            origin = f"stage {st.name!r}: id list {name!r}"
            data = read_bounded(name, f"stage {st.name!r} id list", 24 * raw + 4096)
            if name.endswith(".json"):
                values = load_json(data, origin)
            else:
                try:
                    values = [int(v) for v in data.decode("utf-8").split()]
                except (ValueError, UnicodeDecodeError) as exc:
                    raise InputError(f"{origin}: {' '.join(str(exc).split())[:120]}") from None
        if not isinstance(values, list) or not all(is_int(v) for v in values):
            raise InputError(f"stage {st.name!r}: an id list holds integers (raw document ids)")
        bad = next((v for v in values if not 0 <= v < raw), None)
        if bad is not None:
            raise InputError(f"stage {st.name!r}: document id {bad} is outside the raw corpus (0..{raw - 1})")
        ids = np.asarray(values, dtype=np.int64)
        if distinct(ids).size != ids.size:
            raise InputError(f"stage {st.name!r}: its id list repeats an id")
        return ids

    def apply(self, lengths: npt.ArrayLike) -> FunnelResult:
        """Run the declared outcomes on the raw corpus of ``lengths``, stage after stage. O(n × stages).

        Raises:
            InputError: a mask or column whose length is not the stage's input (naming the stage, the
                file and both lengths); an id outside the raw corpus or repeated.
        """
        arr = validate_lengths(lengths)
        alive = np.ones(arr.size, np.bool_)
        outcomes: list[StageOutcome] = []
        for st in self.stages:
            removed = self._stage_mask(st, alive)
            outcomes.append(
                StageOutcome(
                    st,
                    int(alive.sum()),
                    int(removed.sum()),
                    int(arr[alive].sum()),
                    int(arr[removed].sum()),
                    removed,
                )
            )
            alive = alive & ~removed
        return FunnelResult(int(arr.size), int(arr.sum()), tuple(outcomes), alive)
