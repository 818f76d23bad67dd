"""What ``--data`` names: paths, directories and glob patterns -> the inputs to read, each with its format.

:func:`plan_inputs` turns what a user named into an :class:`InputPlan`: every
input (a file, or a dataset directory) with the format it is read in, in the
order given, and the files a directory walk skipped. Inputs of several formats
are one corpus: each is read by its own reader and their documents are
concatenated (:func:`~packing_theory.corpus.readers.open_inputs`).

**A path named, or matched by a glob**, is read as data: a file in the format
its name says (:func:`detect_format`), a saved Hugging Face dataset or an MDS
directory as one dataset.

**A directory** that is not itself a dataset is walked (sorted, depth first):

* a directory below it written by ``datasets``' ``save_to_disk`` (``state.json``
  or ``dataset_dict.json``) or holding an MDS ``index.json`` is one input, and
  is not walked into;
* a file whose format its name says is an input (a Megatron ``.bin`` belongs
  to its ``.idx``);
* files that are not data are **skipped and listed** (:attr:`InputPlan.skipped`;
  the commands print them on standard error in one line and the report's
  ``corpus.read`` names them): hidden files and directories, documentation and
  metadata by name (``README*``, ``LICENSE*``, ``COPYING*``, ``NOTICE*``,
  ``CHANGELOG*``, ``CITATION*``, ``AUTHORS*``, ``CONTRIBUTING*``) or by suffix
  (``.json``, ``.yaml``, ``.toml``, ...), and ``.md`` / ``.rst`` files in a
  directory that holds data of another format (in a directory of text they are
  text);
* any other file whose format cannot be told is **refused**, named, with the
  fix (``--format``, or a glob naming the data): it may be data, and data is
  never dropped.

``--format F`` reads every input as ``F``, whatever its name says (files of
no known kind included; the walk still skips what is not data, and for
``megatron`` / ``olmo`` keeps the ``.idx`` / ``.npy`` files); a dataset
directory is refused under a format of files. Leave it out to read inputs of
several formats, each in its own.

>>> detect_format("data/wiki_text_document.idx")
('megatron', 'the .idx of a Megatron indexed dataset')
>>> skipped_reason("README.md"), skipped_reason("meta.json"), skipped_reason("a.jsonl")
('documentation', 'metadata', None)
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..._checks import distinct_files
from ...errors import InputError
from .jsonl import JSONL_SUFFIXES

__all__ = ["DOC_NAMES", "FORMATS", "METADATA_SUFFIXES", "InputPlan", "detect_format", "expand_inputs",
           "plan_inputs", "skipped_reason"]

FORMATS: tuple[str, ...] = ("lengths", "megatron", "olmo", "hf", "mds", "jsonl", "text", "parquet", "shards")
"""Every format :func:`~packing_theory.corpus.readers.open_data` reads."""

DOC_NAMES: tuple[str, ...] = ("readme", "license", "licence", "copying", "notice", "changelog", "citation",
                              "authors", "contributing")
"""File name stems (any case, any suffix) a directory walk skips as documentation."""
METADATA_SUFFIXES: tuple[str, ...] = (".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".html", ".lock",
                                      ".sha256", ".md5", ".py", ".sh", ".ipynb")
"""Suffixes a directory walk skips as metadata (a JSON Lines name, ``.json.gz``, is data)."""
_DOC_SUFFIXES = (".md", ".rst")
_TEXT_SUFFIXES = (".txt", ".text", ".md", ".rst")
_DIRECTORY_FORMATS = ("hf", "mds")


def _has_npy_header(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(6) == b"\x93NUMPY"


def detect_format(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(format, reason)`` for one path, from its name and (for ``.npy``) its first bytes.

    Raises:
        InputError: a path whose format cannot be told (the message says to pass ``--format``).
    """
    name = os.fspath(path)
    if os.path.isdir(name):
        found = _dataset_format(name)
        if found is not None:
            return found
        raise InputError(f"cannot tell the format of directory {name!r}; pass --format (one of "
                         f"{', '.join(FORMATS)})")
    low = name.lower()
    if low.endswith(".idx") or (low.endswith(".bin") and os.path.isfile(name[:-4] + ".idx")):
        return "megatron", "the .idx of a Megatron indexed dataset"
    if low.endswith(".npy"):
        if os.path.isfile(name) and not _has_npy_header(name):
            return "olmo", "a .npy file without a NumPy header: a raw OLMo-core/Dolma token array"
        return "lengths", "a .npy array with a NumPy header: BOS-inclusive lengths"
    for suffix in JSONL_SUFFIXES:
        if low.endswith(suffix):
            return "jsonl", f"a JSON Lines file name ({suffix})"
    if low.endswith(".parquet"):
        return "parquet", "a .parquet file"
    if low.endswith(".bin"):
        return "shards", "a .bin file with no .idx beside it: a seed-002 token shard"
    if low.endswith(_TEXT_SUFFIXES):
        return "text", "a plain text file name"
    raise InputError(f"cannot tell the format of {name!r} from its name; pass --format (one of "
                     f"{', '.join(FORMATS)})")


def _dataset_format(path: str) -> tuple[str, str] | None:
    """``(format, reason)`` of a dataset directory, ``None`` for any other directory."""
    from .hf import is_hf_dataset
    from .mds import is_mds_dataset

    if is_hf_dataset(path):
        return "hf", "a directory written by datasets' save_to_disk (state.json / dataset_dict.json)"
    if is_mds_dataset(path):
        return "mds", "a directory with an MDS index.json"
    return None


def skipped_reason(name: str) -> str | None:
    """Why a directory walk skips the file ``name`` (``"hidden"``, ``"documentation"``, ``"metadata"``),
    or ``None`` when it may be data. ``.md`` / ``.rst`` files are decided by their directory (see the
    module doc)."""
    base = os.path.basename(name)
    low = base.lower()
    if base.startswith("."):
        return "hidden"
    if low.split(".", 1)[0] in DOC_NAMES:
        return "documentation"
    if any(low.endswith(s) for s in JSONL_SUFFIXES):
        return None
    if low.endswith(METADATA_SUFFIXES):
        return "metadata"
    return None


@dataclass(frozen=True)
class InputPlan:
    """The inputs of one corpus, in order, each with its format; the files a directory walk skipped.

    ``inputs``: ``(path, format)`` pairs (a file, or a dataset directory for ``hf`` / ``mds``);
    ``skipped``: ``(path, why)`` pairs; ``reason``: how the formats were found.
    """

    inputs: tuple[tuple[str, str], ...]
    skipped: tuple[tuple[str, str], ...] = ()
    reason: str = ""

    def __post_init__(self) -> None:
        self._check()

    @property
    def paths(self) -> list[str]:
        """The inputs' paths, in order."""
        return [p for p, _ in self.inputs]

    @property
    def formats(self) -> list[str]:
        """The distinct formats, in the order they first occur."""
        return list(dict.fromkeys(f for _, f in self.inputs))

    @property
    def format(self) -> str:
        """The one format of every input, or ``"mixed"``."""
        kinds = self.formats
        return kinds[0] if len(kinds) == 1 else "mixed"

    def runs(self) -> list[tuple[str, list[str]]]:
        """``(format, paths)`` of each run of consecutive inputs of one format, in order."""
        out: list[tuple[str, list[str]]] = []
        for path, fmt in self.inputs:
            if out and out[-1][0] == fmt:
                out[-1][1].append(path)
            else:
                out.append((fmt, [path]))
        return out

    def first(self, fmt: str) -> str:
        """The first input of format ``fmt``."""
        return next(p for p, f in self.inputs if f == fmt)

    def skipped_line(self, limit: int = 5) -> str:
        """One line naming the skipped files (the first ``limit``), or ``""`` when none was.

        >>> InputPlan((("d/a.jsonl", "jsonl"),), (("d/README.md", "documentation"),)).skipped_line()
        "skipped 1 file that is not data: 'd/README.md' (documentation); name a file, or give a glob, \
to read it"
        """
        if not self.skipped:
            return ""
        n = len(self.skipped)
        shown = ", ".join(f"{p!r} ({why})" for p, why in self.skipped[:limit])
        more = f" and {n - limit} more" if n > limit else ""
        return (f"skipped {n} file{'s' if n != 1 else ''} that {'is' if n == 1 else 'are'} not data: "
                f"{shown}{more}; name a file, or give a glob, to read it")

    def _check(self) -> None:
        """Refuse an empty plan, an unknown format, a path given twice."""
        if not self.inputs:
            raise InputError("--data is empty: give at least one path")
        unknown = sorted({f for _, f in self.inputs} - set(FORMATS))
        if unknown:
            raise InputError(f"unknown format(s) {unknown}; formats: {', '.join(FORMATS)}")
        distinct_files("--data input", self.paths)


def _is_glob(spec: str) -> bool:
    return any(c in spec for c in "*?[")


def _walk(root: str, fmt: str) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """The inputs below ``root`` (``(path, detected format or None)``, sorted, depth first) and the files
    skipped. A dataset directory is one input; a file of no known format under ``fmt="auto"`` is refused.
    """
    found: list[tuple[str, str | None]] = []
    skipped: list[tuple[str, str]] = []
    for base, dirs, files in os.walk(root):
        keep = []
        for d in sorted(dirs):
            path = os.path.join(base, d)
            if d.startswith("."):
                skipped.append((path + os.sep, "hidden"))
                continue
            dataset = _dataset_format(path)
            if dataset is not None:
                found.append((path, dataset[0]))
            else:
                keep.append(d)
        dirs[:] = keep
        here: list[tuple[str, str | None]] = []
        for name in sorted(files):
            path = os.path.join(base, name)
            why = skipped_reason(name)
            if why is not None:
                skipped.append((path, why))
                continue
            try:
                kind: str | None = detect_format(path)[0]
            except (InputError, OSError):
                if fmt == "auto":
                    raise InputError(f"cannot tell the format of {path!r} (under --data directory {root!r}) "
                                     f"from its name; pass --format (one of {', '.join(FORMATS)}), name the "
                                     "data files with a glob, or move it out of the directory") from None
                kind = None
            if kind == "megatron" and name.lower().endswith(".bin"):
                continue  # the data of its .idx
            here.append((path, kind))
        others = sorted(str(k) for k in {k for _, k in here} - {"text", None})
        beside = (others[0] if others else None) if fmt == "auto" else (fmt if fmt != "text" else None)
        member = {"megatron": ".idx", "olmo": ".npy"}.get(fmt)
        for path, kind in here:  # documentation beside data of another format is not a document
            if beside is not None and path.lower().endswith(_DOC_SUFFIXES):
                skipped.append((path, f"documentation beside {beside} data"))
            elif member is not None and not path.lower().endswith(member):
                skipped.append((path, f"not a {member} file"))
            else:
                found.append((path, kind))
    found.sort(key=lambda item: item[0].split(os.sep))
    skipped.sort()
    return found, skipped


def plan_inputs(specs: Sequence[str], fmt: str = "auto") -> InputPlan:
    """Paths, directories and glob patterns -> an :class:`InputPlan` (see the module doc). O(files named).

    A glob (``*``, ``?``, ``[``; ``**`` recursive) expands to its sorted matches,
    each read as named. With ``fmt="auto"`` each input is read in its own format;
    with a format, every input in that one.

    Raises:
        InputError: no inputs, a pattern matching nothing, a file of no known format, a directory
            with no input, a dataset directory under a format of files, a path given twice.
        FileNotFoundError: a path that does not exist.
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise InputError(f"--format must be auto or one of {', '.join(FORMATS)}, got {fmt!r}")
    named: list[str] = []
    for spec in specs:
        if _is_glob(spec):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                raise InputError(f"--data pattern {spec!r} matches no file")
            named.extend(matches)
        elif not os.path.exists(spec):
            raise FileNotFoundError(f"--data {spec!r} does not exist")
        else:
            named.append(spec)
    if not named:
        raise InputError("--data is empty: give at least one path")
    found: list[tuple[str, str | None]] = []
    skipped: list[tuple[str, str]] = []
    for path in named:
        if not os.path.isdir(path):
            found.append((path, detect_format(path)[0] if fmt == "auto" else _quiet(path)))
            continue
        dataset = _dataset_format(path)
        if dataset is not None:
            found.append((path, dataset[0]))
            continue
        below, passed = _walk(path, fmt)
        if not below:
            more = f" (it holds only files that are not data: {passed[0][0]!r} ...)" if passed else ""
            raise InputError(f"--data directory {path!r} holds no input files{more}")
        found.extend(below)
        skipped.extend(passed)
    if fmt == "auto":
        kinds = list(dict.fromkeys(k for _, k in found))
        if len(kinds) == 1:
            reason = f"auto-detected: {detect_format(found[0][0])[1]}"
        else:
            counts = ", ".join(f"{sum(1 for _, f in found if f == k)} {k}" for k in kinds)
            reason = f"auto-detected per input: {counts}"
        return InputPlan(tuple((p, str(k)) for p, k in found), tuple(skipped), reason)
    for path, kind in found:
        if kind in _DIRECTORY_FORMATS and fmt not in _DIRECTORY_FORMATS:
            raise InputError(f"--format {fmt} reads every --data input as {fmt} files, but {path!r} is a "
                             f"{kind} dataset directory; leave --format out to read each input in its own "
                             "format")
    return InputPlan(tuple((p, fmt) for p, _ in found), tuple(skipped), "given with --format")


def _quiet(path: str) -> str | None:
    try:
        return detect_format(path)[0]
    except (InputError, OSError):
        return None


def expand_inputs(specs: Sequence[str], fmt: str = "auto") -> tuple[list[str], str, str]:
    """``(inputs, format, reason)`` of inputs of one format (:func:`plan_inputs`, for a reader of one
    format); ``reason`` ends with the plan's :meth:`~InputPlan.skipped_line` when a walk skipped files.

    Raises:
        InputError: see :func:`plan_inputs`; inputs of several formats (the message names them).
        FileNotFoundError: a path that does not exist.
    """
    plan = plan_inputs(specs, fmt)
    if plan.format == "mixed":
        example = ", ".join(f"{k}: {plan.first(k)!r}" for k in plan.formats)
        raise InputError(f"--data holds inputs of several formats ({example}); this reads one format at a "
                         "time: give the inputs of one format")
    return plan.paths, plan.format, plan.reason + (f"; {plan.skipped_line()}" if plan.skipped else "")
