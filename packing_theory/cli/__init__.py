"""The ``packing-theory`` command line.

Each subcommand is a module of this package with ``register(subparsers)``
and ``run(args) -> int``; this module only dispatches. The CLI is the top
layer: it may import everything, nothing imports it.
Errors in user input (``ValueError``, ``TypeError``, ``OSError``) end the
program with status 2 and one line on standard error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: dict[str, str] = {
    "replay": "packing_theory.cli.replay",
    "check": "packing_theory.cli.check",
    "bounds": "packing_theory.cli.bounds",
    "audit": "packing_theory.cli.audit",
    "evaluate": "packing_theory.cli.evaluate",
    "policies": "packing_theory.cli.policies",
    "compare": "packing_theory.cli.compare",
    "verify-shards": "packing_theory.cli.verify_shards",
}
"""Subcommand name -> implementing module. Modules that do not exist yet are skipped."""


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on standard error (status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand."""
    parser = _OneLineParser(
        prog="packing-theory",
        description="Replay, check and audit streaming sequence packers.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMANDS.values():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"packing-theory {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return status
