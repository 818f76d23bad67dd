"""Options shared by the stream-replaying subcommands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..engine.batches import EventBatch
from ..engine.events import Placement
from ..engine.policies import POLICIES, RANDOM_SPAN_SEED
from ..engine.replay import ENGINES
from ._packers import add_packer_options, check_max_wait, policy_name

__all__ = ["MAX_ROW_WIDTH", "add_stream_options", "check_max_wait", "emit_json", "existing_path",
           "int_at_least", "note", "parse_int_list", "parse_refill", "with_row_progress"]


def parse_refill(text: str) -> int | tuple[int, ...]:
    """``"128"`` -> 128; ``"128,128,60"`` -> a batch-size sequence (every size at least 1).

    >>> parse_refill("128,60")
    (128, 60)
    """
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        msg = f"--refill must be an int or comma-separated ints, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if min(parts) < 1:
        raise argparse.ArgumentTypeError(f"--refill must be >= 1, got {min(parts)}")
    return parts[0] if len(parts) == 1 else tuple(parts)


def existing_path(option: str) -> Callable[[str], str]:
    """An argparse type: a path that exists, else a usage error naming the path (argparse names ``option``:
    ``argument --lengths: no such file or directory 'x.npy'``).

    >>> existing_path("--lengths")("/no/such/file.npy")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: no such file or directory '/no/such/file.npy'
    """
    def parse(text: str) -> str:
        if not os.path.lexists(text):
            raise argparse.ArgumentTypeError(f"no such file or directory {text!r}")
        return text

    parse.__name__ = "path"
    return parse


MAX_ROW_WIDTH = 2**40
"""The widest row ``--capacity`` (and ``--seq-length``) takes on ``replay``, ``check`` and ``audit``:
far above any context length, and low enough that every target index, ``row * (R - 1) + offset``,
stays an exact ``int64`` for any corpus the ledger accounts (beyond it a value overflowed into exit 3)."""


def int_at_least(option: str, minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an int ``>= minimum`` (and ``<= maximum``), else a usage error naming ``option``
    and the value.

    >>> int_at_least("--min-buffer", 1)("64")
    64
    >>> int_at_least("--min-buffer", 1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --min-buffer must be >= 1, got 0
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be an int, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{option} must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{option} must be <= {maximum:,}, got {value:,}")
        return value

    parse.__name__ = "int"  # argparse names the type in its own messages
    return parse


def parse_int_list(text: str) -> tuple[int, ...]:
    """``"2097152,10_485_760"`` -> ``(2097152, 10485760)`` (an argparse type)."""
    try:
        return tuple(int(p.replace("_", "")) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints, got {text!r}") from None


def add_stream_options(
    parser: argparse.ArgumentParser,
    *,
    lengths: bool = True,
    policies: str = "one",
    rows_help: str = "stop after this many rows",
    engine: bool = False,
    tokens: bool = False,
) -> None:
    """Add the replay options shared by ``replay``, ``check`` and ``audit``.

    ``--capacity --seq-length --min-buffer --refill --policy --seed --passes --rows
    --targets --max-wait --drain``, plus ``--lengths`` (required) when ``lengths`` is
    true, ``--engine`` when ``engine`` is true and ``--tokens`` (a horizon in
    placed tokens, :mod:`packing_theory.engine.horizon`) when ``tokens`` is true. ``policies="many"`` makes
    ``--policy`` repeatable and comma-separated (a list, default ``None``).
    """
    if lengths:
        parser.add_argument("--lengths", type=existing_path("--lengths"), required=True, metavar="FILE.npy",
                            help="1-D integer .npy array of BOS-inclusive document lengths")
    width = parser.add_mutually_exclusive_group()
    width.add_argument("--capacity", type=int_at_least("--capacity", 2, MAX_ROW_WIDTH), default=2049,
                       metavar="R",
                       help="row width R: the tokens of every emitted row, for every packer (default 2049)")
    width.add_argument("--seq-length", type=int_at_least("--seq-length", 1, MAX_ROW_WIDTH - 1), default=None,
                       metavar="L",
                       help="instead of --capacity: the framework's sequence length; each packer's row width "
                            "follows from it by its rule (streaming and Megatron: R = L + 1; TRL: R = L; see "
                            "`packing-theory policies`)")
    parser.add_argument("--min-buffer", type=int_at_least("--min-buffer", 1), default=1000, metavar="B",
                        help="minimum buffer occupancy B (default 1000)")
    parser.add_argument("--refill", type=parse_refill, default=128, metavar="N[,N...]",
                        help="refill batch size or sequence of sizes (default 128)")
    if policies == "many":
        parser.add_argument("--policy", action="append", metavar="P[,P...]",
                            help=f"policies side by side (repeatable; streaming: {', '.join(POLICIES)}; "
                                 "or a peer FRAMEWORK-STRATEGY, see `packing-theory policies`)")
    else:
        parser.add_argument("--policy", default="discard", metavar="POLICY", type=policy_name,
                            help=f"streaming policy ({', '.join(POLICIES)}; default discard) or a peer "
                                 "FRAMEWORK-STRATEGY such as trl-bfd (see `packing-theory policies`)")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"random-span RNG seed (default {RANDOM_SPAN_SEED}); "
                             "for a peer, its seed option")
    parser.add_argument("--passes", type=int_at_least("--passes", 1),
                        default=1, help="corpus passes, persistent buffer (default 1)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--rows", type=int, default=None, help=rows_help)
    budget.add_argument("--targets", type=int, default=None, help="stop after this many targets")
    if tokens:
        budget.add_argument("--tokens", type=int, default=None,
                            help="stop at the end of the row where the document tokens placed in rows reach "
                                 "this many (every packer; streaming rows are full, so ceil(T / R) rows)")
    parser.add_argument("--max-wait", type=int, default=None, metavar="A",
                        help="bounded-wait: force the oldest unstarted span at a row start once it has "
                             "waited more than A rows (default 16); only with --policy bounded-wait")
    parser.add_argument("--drain", action="store_true",
                        help="when the stream cannot refill to B, keep selecting until empty "
                             "(outside the theorem) instead of stopping")
    if engine:
        parser.add_argument("--engine", choices=ENGINES, default="fast",
                            help="fast engine (default, pure Python), compiled (numba: pip install "
                                 "'packing-theory[fast]') or the naive reference")
    add_packer_options(parser)


def note(command: str, message: str) -> None:
    """An informational line on standard error, on a terminal only.

    Every command ends with exactly one summary line; what it decided on the
    way (a detected format, how BOS is counted) is recorded in its report and
    shown as a note only to a person watching a terminal.
    """
    if sys.stderr.isatty():
        print(f"{command}: {message}", file=sys.stderr)


def with_row_progress(events: Iterable[Any], bar: Callable[[int], None] | None) -> Iterator[Any]:
    """``events`` unchanged, telling ``bar`` the rows begun so far (nothing is added without a bar).

    >>> seen = []
    >>> list(with_row_progress([Placement(2, 0, 0, 0, 0, 3, False, False)], seen.append)) and seen
    [3]
    """
    if bar is None:
        yield from events
        return
    for ev in events:
        if type(ev) is Placement and ev.offset == 0:
            bar(ev.row + 1)
        elif type(ev) is EventBatch and ev.placement.row.size:
            bar(int(ev.placement.row.max()) + 1)
        yield ev


def emit_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON on standard output."""
    json.dump(payload, sys.stdout, indent=2)
    sys.stdout.write("\n")
