"""``packing-theory policies``: every packer (streaming and framework) as the registry declares it."""

from __future__ import annotations

import argparse
from typing import Any

from ._options import add_options

__all__ = ["policy_table", "register", "run"]


def policy_table() -> list[dict[str, Any]]:
    """One dict per packer (:meth:`~packing_theory.registry.PackerEntry.to_dict`).

    Name, kind, framework, family status and its sentence, knobs with types,
    defaults and help, engines, row width rule, reference, trainer view.
    """
    from ..registry import entries

    return [e.to_dict() for e in entries().values()]


def register(sub: Any) -> None:
    """Add the ``policies`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "policies",
        description="Every packer the other commands take by name (their policy option): the streaming "
                    "family and the framework packers (FRAMEWORK-STRATEGY), with their options and defaults, "
                    "how a packer's row width R follows from the trained positions L of its framework, and "
                    "whether the protected-set proposition applies.",
    )
    add_options(parser, "json")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the table; exit status 0."""
    from ._common import emit_json

    table = policy_table()
    if args.json:
        emit_json(table)
        return 0
    for row in table:
        knobs = ", ".join(f"{k}={v['default']}" for k, v in row["knobs"].items()) or "none"
        engines = ", ".join(row["engines"]) or "its own implementation"
        print(f"{row['policy']:<26} {row['kind']:<9} {row['framework']}")
        print(f"{'':<26} options: {knobs}")
        print(f"{'':<26} row width: {row['row_width']}; engines: {engines}")
        print(f"{'':<26} {row['status']}: {row['family']}")
    return 0
