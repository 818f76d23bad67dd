"""Options shared by the stream-replaying subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..engine.policies import POLICIES, RANDOM_SPAN_SEED, PackerConfig
from ..engine.replay import ENGINES
from ..errors import InputError

__all__ = [
    "add_stream_options", "check_max_wait", "config_from_args", "emit_json", "parse_int_list", "parse_refill",
]


def parse_refill(text: str) -> int | tuple[int, ...]:
    """``"128"`` -> 128; ``"128,128,60"`` -> a batch-size sequence."""
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        msg = f"--refill must be an int or comma-separated ints, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    return parts[0] if len(parts) == 1 else tuple(parts)


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
) -> None:
    """Add the replay options shared by ``replay``, ``check`` and ``audit``.

    ``--capacity --min-buffer --refill --policy --seed --passes --rows --targets
    --max-wait --drain``, plus ``--lengths`` (required) when ``lengths`` is true and
    ``--engine`` when ``engine`` is true. ``policies="many"`` makes
    ``--policy`` repeatable and comma-separated (a list, default ``None``).
    """
    if lengths:
        parser.add_argument("--lengths", required=True, metavar="FILE.npy",
                            help="1-D integer .npy array of BOS-inclusive document lengths")
    parser.add_argument("--capacity", type=int, default=2049, metavar="R",
                        help="row capacity R (default 2049)")
    parser.add_argument("--min-buffer", type=int, default=1000, metavar="B",
                        help="minimum buffer occupancy B (default 1000)")
    parser.add_argument("--refill", type=parse_refill, default=128, metavar="N[,N...]",
                        help="refill batch size or sequence of sizes (default 128)")
    if policies == "many":
        parser.add_argument("--policy", action="append", metavar="P[,P...]",
                            help=f"policies side by side (repeatable; streaming: {', '.join(POLICIES)}; "
                                 "or a peer FRAMEWORK-STRATEGY, see `packing-theory policies`)")
    else:
        from ._peers import policy_name

        parser.add_argument("--policy", default="discard", metavar="POLICY", type=policy_name,
                            help=f"streaming policy ({', '.join(POLICIES)}; default discard) or a peer "
                                 "FRAMEWORK-STRATEGY such as trl-bfd (see `packing-theory policies`)")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"random-span RNG seed (default {RANDOM_SPAN_SEED}); "
                             "for a peer, its seed option")
    parser.add_argument("--passes", type=int, default=1, help="corpus passes, persistent buffer (default 1)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--rows", type=int, default=None, help=rows_help)
    budget.add_argument("--targets", type=int, default=None, help="stop after this many targets")
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
    from ._peers import add_peer_options

    add_peer_options(parser)


def check_max_wait(max_wait: int | None, policies: list[str] | tuple[str, ...] | str | None) -> None:
    """Refuse ``--max-wait`` unless ``bounded-wait`` is among the policies (it would be ignored).

    >>> check_max_wait(3, ["continue"])
    Traceback (most recent call last):
    packing_theory.InputError: --max-wait 3 only applies to --policy bounded-wait, got continue
    """
    if max_wait is None:
        return
    if max_wait < 0:
        raise InputError(f"--max-wait must be >= 0 (rows), got {max_wait}")
    names = [policies] if isinstance(policies, str) else list(policies or ["discard"])
    if "bounded-wait" not in names:
        raise InputError(
            f"--max-wait {max_wait} only applies to --policy bounded-wait, got {', '.join(names)}"
        )


def config_from_args(args: argparse.Namespace, **overrides: Any) -> PackerConfig:
    """Build and validate a :class:`PackerConfig` from parsed options."""
    check_max_wait(getattr(args, "max_wait", None), overrides.get("policy", args.policy))
    fields: dict[str, Any] = dict(
        capacity=args.capacity,
        min_buffer=args.min_buffer,
        refill=args.refill,
        policy=args.policy,
        seed=RANDOM_SPAN_SEED if args.seed is None else args.seed,
        passes=args.passes,
        rows=args.rows,
        targets=args.targets,
        exhausted="drain" if args.drain else "stop",
        max_wait=getattr(args, "max_wait", None),
    )
    fields.update(overrides)
    return PackerConfig(**fields)


def emit_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON on standard output."""
    json.dump(payload, sys.stdout, indent=2)
    sys.stdout.write("\n")
