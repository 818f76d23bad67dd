"""What every framework reader shares: the mapped result, the key tracker, the file loader.

A reader turns one framework's own configuration (a mapping read from YAML or
JSON, or an argument list) into a :class:`MappedConfig`: the registered packer
and its options, the row width, the horizon, the declared mixture, and the
list of every key it used (with what the key became) and every key it ignored
(with why). :class:`Keys` is the tracker a reader takes keys from, so that no
key is silently dropped: what a reader does not take is listed as ignored.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_int, is_int
from ..audit.declared import DeclaredMixture
from ..engine.horizon import Budget
from ..errors import InputError, InputTypeError, import_optional
from ..registry import build_packer, entry

__all__ = ["FRAMEWORKS", "KeyUse", "Keys", "MappedConfig", "load_document"]

FRAMEWORKS: tuple[str, ...] = ("axolotl", "trl", "foundry", "torchtune", "megatron", "nanochat",
                               "autoresearch", "parcae")
"""The frameworks whose configuration files are read (``framework:`` values)."""


@dataclass(frozen=True, slots=True)
class KeyUse:
    """One key of the file: its value and what it became in the replay."""

    key: str
    value: Any
    became: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"key": self.key, "value": _plain(self.value), "became": self.became}


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


@dataclass(frozen=True)
class MappedConfig:
    """A framework configuration mapped onto a registered packer (see the module doc).

    Attributes:
        framework: one of :data:`FRAMEWORKS`.
        source: the file read.
        packer: the registered packer's name (:func:`packing_theory.registry.entry`).
        seq_length: the framework's own sequence length.
        capacity: the row width ``R`` the registry maps it to.
        options: the packer's knobs given by the file (the others run with their defaults).
        horizon: the rows (or tokens) the trainer consumes, when the file implies a number.
        rows_per_step: rows per optimizer step on one rank (to state a row as a step).
        mixture: the declared mixture (Megatron blend weights), if any.
        blend: the Megatron blend (:class:`~packing_theory.configs.blend.MegatronBlend`), if any.
        trainable: ``"completion"`` when only part of each example is trained (a prompt
            is masked): the doctor then needs each example's first trained offset.
        pre_truncate: the framework cuts every document to this many tokens before packing.
        rank_stride: the trainer's rank 0 reads every ``rank_stride``-th document.
        train_split: Megatron's ``--split`` for one dataset: only the documents of its training split
            (:func:`~packing_theory.configs.blend.train_split_range`) are replayed (a blend carries its
            own).
        drop_last_rows: the trainer drops a final batch of fewer rows than this.
        used: every key used and what it became.
        ignored: every key not used, with why.
    """

    framework: str
    source: str
    packer: str
    seq_length: int
    capacity: int
    options: dict[str, Any]
    horizon: Budget | None = None
    rows_per_step: int | None = None
    mixture: DeclaredMixture | None = None
    blend: Any = None
    trainable: str | None = None
    pre_truncate: int | None = None
    rank_stride: int = 1
    drop_last_rows: int | None = None
    train_split: str | None = None
    used: tuple[KeyUse, ...] = ()
    ignored: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        e = entry(self.packer)
        e.options(self.options)  # an unknown knob names itself
        if e.capacity_for(self.seq_length, self.options) != self.capacity:
            raise InputError(f"capacity {self.capacity} does not follow from seq_length {self.seq_length} "
                             f"for {self.packer} ({e.row_width.rule})")

    def build(self) -> Any:
        """The packer, built through the registry (its knobs checked there)."""
        return build_packer(self.packer, capacity=self.capacity, **self.options)

    def mapping_text(self) -> str:
        """``"mapping used: ...; ignored keys: ..."`` — what each key became, and what was not used.

        >>> m = MappedConfig("trl", "c.yaml", "trl-bfd", 8, 8, {}, used=(KeyUse("max_length", 8, "R = 8"),),
        ...                  ignored=(("learning_rate", "not a data setting"),))
        >>> m.mapping_text().split("; ignored keys: ")
        ['mapping used: trl -> trl-bfd (R = 8): max_length=8 -> R = 8', 'learning_rate (not a data setting)']
        """
        used = "; ".join(f"{u.key}={_short(u.value)} -> {u.became}" for u in self.used)
        ignored = ", ".join(f"{k} ({why})" for k, why in self.ignored) or "none"
        return (f"mapping used: {self.framework} -> {self.packer} (R = {self.capacity:,}): {used}; "
                f"ignored keys: {ignored}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "framework": self.framework, "source": self.source, "packer": self.packer,
            "seq_length": self.seq_length, "capacity": self.capacity, "options": _plain(self.options),
            "horizon": None if self.horizon is None else self.horizon.to_dict(),
            "rows_per_step": self.rows_per_step,
            "mixture": None if self.mixture is None else self.mixture.to_dict(),
            "blend": None if self.blend is None else self.blend.to_dict(),
            "trainable": self.trainable, "pre_truncate": self.pre_truncate, "rank_stride": self.rank_stride,
            "drop_last_rows": self.drop_last_rows, "train_split": self.train_split,
            "used": [u.to_dict() for u in self.used],
            "ignored": [{"key": k, "why": why} for k, why in self.ignored],
        }


def _short(value: Any) -> str:
    text = json.dumps(_plain(value))
    return text if len(text) <= 60 else text[:57] + "..."


class Keys:
    """The keys of one configuration, each taken at most once; what is left is reported as ignored.

    Nested keys are addressed with dots (``train_loader.dataset.packing_ratio``).

    >>> k = Keys({"a": 1, "b": {"c": 2}, "d": 3}, "x.yaml")
    >>> k.take("a"), k.take("b.c"), k.take("e", 5), k.left()
    (1, 2, 5, ['d'])
    """

    def __init__(self, doc: Mapping[str, Any], source: str) -> None:
        self.doc = doc
        self.source = source
        self.used: list[KeyUse] = []
        self.ignored: list[tuple[str, str]] = []
        self._taken: set[str] = set()

    def has(self, key: str) -> bool:
        """Whether the file gives ``key``."""
        return self._find(key)[0]

    def _find(self, key: str) -> tuple[bool, Any]:
        node: Any = self.doc
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False, None
            node = node[part]
        return True, node

    def take(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` (``default`` when absent), marked as read."""
        self._taken.add(key)
        found, value = self._find(key)
        return value if found else default

    def use(self, key: str, value: Any, became: str) -> None:
        """Record that ``key`` (given or defaulted) became ``became``."""
        self._taken.add(key)
        self.used.append(KeyUse(key, value, became))

    def ignore(self, key: str, why: str) -> None:
        """Record a key of the file that changes nothing the replay counts, and why."""
        self._taken.add(key)
        if self.has(key):
            self.ignored.append((key, why))

    def int(self, key: str, default: int | None = None, minimum: int = 0) -> int | None:
        """``take`` an integer (``None`` stays ``None``); a non-integer names the key."""
        value = self.take(key, default)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not is_int(value):
            raise InputError(f"{self.source}: {key} must be an integer, got {value!r}")
        return check_int(f"{self.source}: {key}", value, minimum)

    def bool(self, key: str, default: bool | None = None) -> bool | None:
        """``take`` a boolean (YAML's true/false; the strings "true"/"false" too)."""
        value = self.take(key, default)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if value is not None and not isinstance(value, bool):
            raise InputError(f"{self.source}: {key} must be true or false, got {value!r}")
        return value

    def refuse(self, key: str, value: Any, why: str) -> InputError:
        """The error for a key (or combination) the replay does not model."""
        return InputError(f"{self.source}: {key}: {value!r} — {why}")

    def left(self, prefix: str = "") -> list[str]:
        """The keys not taken (nested mappings flattened with dots), in file order."""
        out: list[str] = []
        self._walk(self.doc, prefix, out)
        return out

    def _walk(self, node: Mapping[str, Any], prefix: str, out: list[str]) -> None:
        for k, v in node.items():
            key = f"{prefix}{k}"
            if key in self._taken:
                continue
            if isinstance(v, Mapping) and v and any(t.startswith(key + ".") for t in self._taken):
                self._walk(v, key + ".", out)
            else:
                out.append(key)

    def finish(self, why: str, *, skip: Iterable[str] = ()
               ) -> tuple[tuple[KeyUse, ...], tuple[tuple[str, str], ...]]:
        """``(used, ignored)``: every key not taken becomes ignored with ``why``."""
        skipped = set(skip)
        rest = [(k, why) for k in self.left() if k not in skipped]
        return tuple(self.used), tuple(self.ignored) + tuple(rest)


@dataclass
class ArgList:
    """An argument list (``--seq-length 2048 --data-path 0.3 a 0.7 b``) as a mapping of destinations.

    A flag followed by values maps to one value, or a list when several follow; a
    flag with no value maps to ``True``. Destinations are the flag names with
    dashes turned into underscores (argparse's ``dest``).

    >>> ArgList.parse("--seq-length 8 --data-path 1 a 3 b --mock-data").values
    {'seq_length': '8', 'data_path': ['1', 'a', '3', 'b'], 'mock_data': True}
    """

    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> ArgList:
        """Parse ``text`` (shell quoting, ``\\`` line continuations and ``#`` comments allowed).

        Raises:
            InputError: a value before the first flag, or a flag given twice.
        """
        tokens = shlex.split(text.replace("\\\n", " "), comments=True)  # line continuations are spaces
        while tokens and not tokens[0].startswith("--"):  # a leading command (python pretrain_gpt.py ...)
            tokens.pop(0)
        out: dict[str, Any] = {}
        current: str | None = None
        for tok in tokens:
            if tok.startswith("--") and len(tok) > 2 and not _number(tok):
                name, eq, value = tok[2:].partition("=")
                dest = name.replace("-", "_")
                if dest in out:
                    raise InputError(f"argument --{name} is given twice")
                out[dest] = value if eq else True
                current = None if eq else dest
                continue
            if current is None:
                raise InputError(f"argument list: value {tok!r} follows no flag")
            prev = out[current]
            out[current] = tok if prev is True else ([*prev, tok] if isinstance(prev, list) else [prev, tok])
        return cls(out)


def _number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def load_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a configuration file: YAML (``.yaml``/``.yml``, interpolations resolved when OmegaConf is
    installed), JSON (``.json``), or an argument list (any other suffix: ``.args``, ``.sh``, ``.txt``).

    Raises:
        FileNotFoundError: no such file.
        InputError: not a mapping (YAML/JSON), bad syntax (naming the file).
    """
    name = os.fspath(path)
    with open(name, encoding="utf-8") as fh:
        text = fh.read()
    low = name.lower()
    if low.endswith(".json"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"config {name!r} is not valid JSON: {exc}") from exc
    elif low.endswith((".yaml", ".yml")):
        doc = _yaml(text, name)
    else:
        return {"_argv": ArgList.parse(text).values}
    if not isinstance(doc, Mapping):
        raise InputTypeError(f"config {name!r} must hold a mapping of keys, got {type(doc).__name__}")
    return dict(doc)


def _yaml(text: str, name: str) -> Any:
    yaml = import_optional("yaml", extra="yaml", purpose=f"reading the YAML config {name!r}")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"config {name!r} is not valid YAML: {exc}") from exc
    if "${" not in text or not isinstance(doc, Mapping):
        return doc
    omegaconf = import_optional("omegaconf", extra="configs",
                                purpose=f"resolving the ${{...}} interpolations of {name!r}")
    try:
        return omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.create(doc), resolve=True)
    except Exception as exc:  # OmegaConf raises its own error types
        raise InputError(f"config {name!r}: cannot resolve an interpolation ({exc})") from exc
