"""``packing-theory policies``: every policy (streaming, peers) with its knobs, defaults and family status."""

from __future__ import annotations

import argparse
from typing import Any

from ..engine.policies import DEFAULT_MAX_WAIT, POLICIES, RANDOM_SPAN_SEED
from ..peers import peer_policies
from ._common import emit_json
from ._peers import peer_knobs

__all__ = ["policy_table", "register", "run"]

_STREAMING_KNOBS = {"capacity": 2049, "min_buffer": 1000, "refill": 128, "passes": 1, "exhausted": "stop"}
_STREAMING_NOTES = {
    "discard": "in the family: seed 000 §3 proposition (the min(B-1, N_L) largest long occurrences "
               "never start)",
    "continue": "in the family: seed 000 §3 proposition (one active span per occurrence)",
    "requeue-bos": "outside the family: a remainder moves to the end of the buffer (a shrunk counterexample "
                   "is in the variant tests)",
    "segment-first": "outside the family for the original occurrences (pre-segmentation); the segmented "
                     "spans hold it vacuously (none is long)",
    "random-span": "outside the family as stated (crops a random span), same start decisions as discard",
    "bounded-wait": "outside the family by design (age-based forced starts); its own proved theorem: every "
                    "start within A + B + max refill - 2 rows of the arrival, full rows, no discarded token",
}


def policy_table() -> list[dict[str, Any]]:
    """One dict per policy: name, kind, framework, knobs with defaults, family status and note."""
    out: list[dict[str, Any]] = []
    for name in POLICIES:
        knobs = dict(_STREAMING_KNOBS)
        if name == "random-span":
            knobs["seed"] = RANDOM_SPAN_SEED
        if name == "bounded-wait":
            knobs["max_wait"] = DEFAULT_MAX_WAIT
        out.append({"policy": name, "kind": "streaming", "framework": "seed 000 family",
                    "knobs": knobs, "in_family": name in ("discard", "continue"),
                    "family": _STREAMING_NOTES[name], "reference": "seed 000 §2-§4"})
    for peer, cls in peer_policies().items():
        knobs = {"capacity": "the framework's sequence length", **peer_knobs(cls)}
        out.append({"policy": peer, "kind": "peer", "framework": cls.framework, "knobs": knobs,
                    "in_family": cls.in_family, "family": f"outside the family: {cls.family_note}",
                    "reference": cls.reference})
    return out


def register(sub: Any) -> None:
    """Add the ``policies`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "policies", help="list every policy (streaming and peers) with its options and family status",
        description="Every --policy name accepted by replay, audit, check and compare: the streaming "
                    "family and the peer packers (FRAMEWORK-STRATEGY), with their options and defaults "
                    "and whether seed 000's proposition applies.",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the table; exit status 0."""
    table = policy_table()
    if args.json:
        emit_json(table)
        return 0
    for row in table:
        knobs = ", ".join(f"{k}={v}" for k, v in row["knobs"].items())
        print(f"{row['policy']:<26} {row['kind']:<9} {row['framework']}")
        print(f"{'':<26} options: {knobs}")
        print(f"{'':<26} {row['family']}")
    return 0
