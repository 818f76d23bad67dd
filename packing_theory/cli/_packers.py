"""Packers' options on the command line: which measured packers take each option, and one packer built.

Every packer — streaming policy or framework packer — is a registry entry
(:mod:`packing_theory.registry`) declaring the options (knobs) it takes. An
option applies to every measured packer that takes it and is refused, naming
it, when none does:

* ``--refill``, ``--passes``, ``--drain`` — the streaming policies;
  ``--seed`` — every packer that draws at random (``random-span``, a
  framework's ``seed``); ``--max-wait`` — ``bounded-wait``;
* ``--window``, ``--epochs``, ``--framework-version`` — every measured packer
  with that option;
* ``--peer-option POLICY:KEY=VALUE`` — one framework packer's option by name
  (``KEY=VALUE``: every measured framework packer that takes ``KEY``), parsed
  by the option's declared type.

Row width: :func:`check_width` refuses a ``--capacity`` that a packer's
framework cannot pack (OLMo-core's powers of two), naming the packer and
suggesting ``--seq-length``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..engine.horizon import Budget
    from ..orchestration.settings import Settings

__all__ = ["build_one", "check_streaming_options", "check_width", "peer_options"]

_PEER_FLAGS = (("--window", "window"), ("--epochs", "epochs"), ("--framework-version", "framework_version"))
_STREAMING = (("--refill", "refill", "refill"), ("--passes", "passes", "passes"),
              ("--drain", "drain", "exhausted"), ("--max-wait", "max_wait", "max_wait"))


def _refuse(flag: str, key: str, packers: Sequence[str]) -> InputError:
    """The error for ``flag`` (the option ``key``) that none of ``packers`` takes."""
    from ..registry import entries, entry

    takers = [n for n, e in entries().items() if e.takes(key)]
    if len(packers) == 1:
        try:
            entry(packers[0]).knob(key)
        except InputError as exc:
            also = f"; {flag} applies to {', '.join(takers)}" if takers else ""
            return InputError(f"{flag}: {exc}{also}")
    if not takers:
        return InputError(f"{flag}: no packer takes an option {key!r} (`packing-theory policies` lists each "
                          "packer's options)")
    return InputError(f"{flag} applies to {', '.join(takers)}; none of the packers measured "
                      f"({', '.join(packers)}) takes it, so it would be ignored")


def check_streaming_options(args: argparse.Namespace, packers: Sequence[str]) -> None:
    """Refuse ``--refill --passes --drain --max-wait --seed`` when no measured packer takes them."""
    from ..registry import entry

    for flag, attr, key in _STREAMING:
        value = getattr(args, attr, None)
        if value is not None and value is not False and not any(entry(p).takes(key) for p in packers):
            raise _refuse(flag, key, packers)
    if getattr(args, "seed", None) is not None and not any(entry(p).takes("seed") for p in packers):
        raise _refuse("--seed", "seed", packers)


def peer_options(args: argparse.Namespace, packers: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each measured framework packer's options from ``--window --epochs --framework-version --seed
    --peer-option`` (parsed by their declared types).

    Raises:
        InputError: an option none of the measured packers takes, a ``--peer-option`` naming a packer
            that is not measured or a streaming policy, a bad value.
    """
    from ..registry import entry

    peers = [p for p in packers if entry(p).kind == "peer"]
    out: dict[str, dict[str, Any]] = {p: {} for p in peers}

    def put(flag: str, name: str, key: str, text: Any) -> None:
        knob = entry(name).knob(key)
        try:
            out[name][key] = knob.parse(text) if isinstance(text, str) else text
        except InputError as exc:
            raise InputError(f"{flag}: {exc}") from None

    for flag, key in _PEER_FLAGS:
        value = getattr(args, key, None)
        if value is None:
            continue
        takers = [p for p in peers if entry(p).takes(key)]
        if not takers:
            raise _refuse(flag, key, packers)
        for p in takers:
            put(flag, p, key, value)
    if getattr(args, "seed", None) is not None:
        for p in peers:
            if entry(p).takes("seed"):
                put("--seed", p, "seed", args.seed)
    items = list(getattr(args, "peer_option", None) or ())
    for item in sorted(items, key=lambda i: i.policy is not None):  # a named packer's value wins
        flag = f"--peer-option {item.key}"
        if item.policy is None:
            takers = [p for p in peers if entry(p).takes(item.key)]
            if not takers:
                raise _refuse(flag, item.key, packers)
        elif item.policy not in packers:
            raise InputError(f"--peer-option names {item.policy!r}, which is not measured here "
                             f"(measured: {', '.join(packers)})")
        elif item.policy not in peers:
            raise InputError(f"--peer-option names {item.policy!r}, a streaming policy: its options are "
                             "--min-buffer, --refill, --passes, --drain, --seed and --max-wait")
        else:
            try:
                entry(item.policy).knob(item.key)
            except InputError as exc:
                raise InputError(f"{flag}: {exc}") from None
            takers = [item.policy]
        for p in takers:
            put(flag, p, item.key, item.value)
    return {p: knobs for p, knobs in out.items() if knobs}


def check_width(settings: Settings, name: str) -> int:
    """Packer ``name``'s row width under ``settings``, or an error naming it and suggesting
    ``--seq-length``."""
    from ..registry import entry

    e = entry(name)
    try:
        return settings.width(e)
    except InputError as exc:
        if settings.capacity is None:
            raise
        raise InputError(f"--capacity {settings.capacity} is not a row width {name} packs "
                         f"({e.row_width.rule}); give --seq-length L instead, and every packer takes its "
                         "framework's row width (see `packing-theory policies`)") from exc


def build_one(settings: Settings, name: str, budget: Budget | None = None) -> Any:
    """Packer ``name`` built from ``settings`` (a streaming policy stops at ``budget`` itself).

    Raises:
        InputError: see :func:`check_width`; an engine the streaming policy does not run on.
    """
    from ..registry import entry

    e = entry(name)
    width = check_width(settings, name)
    knobs = settings.knobs(e)
    if e.kind == "peer":
        return e.build(width, **knobs)
    if budget is not None:
        knobs["rows"] = budget.streaming_rows(width)
    return e.build(width, engine=settings.engine, **knobs)
