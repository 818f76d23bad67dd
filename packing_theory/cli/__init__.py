"""The ``packing-theory`` command line.

Each subcommand is a module of this package with ``register(subparsers)``
and ``run(args) -> int``; this module only dispatches. The CLI is the top
layer: it may import everything, nothing imports it.

:func:`main` runs every command under the exit-code contract of
:mod:`packing_theory.cli._exit` (0 found nothing, 1 found something, 2 bad
usage or input, 3 could not measure), adds ``--debug`` and the contract's
``--help`` epilog to every subcommand, and never raises ``SystemExit``: it
returns the status.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import NoReturn

from ._exit import EPILOG, ExitCode, run_command

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
    "census": "packing_theory.cli.census",
    "contamination": "packing_theory.cli.contamination",
    "explain": "packing_theory.cli.explain",
    "reconcile": "packing_theory.cli.reconcile",
    "doctor": "packing_theory.cli.doctor",
}
"""Subcommand name -> implementing module. A module named here that does not exist is an error naming it."""


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on standard error (status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of :data:`COMMANDS`.

    Raises:
        ImportError: a module named in :data:`COMMANDS` does not exist (a fault of the package).
    """
    parser = _OneLineParser(
        prog="packing-theory",
        description="Replay, check and audit streaming sequence packers.",
        epilog=EPILOG,
    )
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an internal error (exit status 3)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_OneLineParser)
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                raise ImportError(f"packing_theory.cli.COMMANDS names {module_name!r} for the command "
                                  f"{name!r}, but there is no such module") from exc
            raise
        module.register(sub)
    for command in sub.choices.values():  # the contract, by construction, for every subcommand
        command.epilog = f"{command.epilog}\n\n{EPILOG}" if command.epilog else EPILOG
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="print the traceback of an internal error (exit status 3)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (never raises ``SystemExit``).

    Parsing errors are status 2 and ``--help`` is status 0 (argparse prints
    them); the command itself runs under :func:`~packing_theory.cli._exit.run_command`.
    """
    try:
        parser = build_parser()
    except ImportError as exc:  # a COMMANDS or PEER_MODULES entry without its module: a fault of ours (3)
        fault = exc

        def reraise() -> int:
            raise fault

        return run_command("startup", reraise, debug="--debug" in list(argv or ()))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return int(exc.code) if isinstance(exc.code, int) else int(ExitCode.USAGE)
    return run_command(args.command, lambda: args.run(args), debug=bool(args.debug))
