"""The ``packing-theory`` command line.

Each subcommand is a module of this package with ``register(subparsers)``
and ``run(args) -> int``; its options come from the one table of
:mod:`packing_theory.cli._options`. This module only dispatches. The CLI is
the top layer: it may import everything, nothing imports it.

A command's module is imported only when that command is parsed: ``packing-theory
--help`` lists the commands from :data:`SUMMARIES` and imports none of them,
and ``packing-theory audit --help`` imports the audit's module alone (whose
``run`` imports the library it needs). ``build_parser(load=True)`` registers
every command at once (the tests walk every option that way).

:func:`main` runs every command under the exit-code contract of
:mod:`packing_theory.cli._exit` (0 found nothing, 1 found something, 2 bad
usage or input, 3 could not measure), adds ``--debug`` and the contract's
``--help`` epilog to every subcommand, and never raises ``SystemExit``: it
returns the status.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, NoReturn

from ._exit import EPILOG, ExitCode, run_command
from ._options import add_options

__all__ = ["BLAS_THREAD_VARIABLES", "COMMANDS", "RENAMED", "SUMMARIES", "build_parser", "main"]

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""The variables that size numpy's BLAS thread pool. No command does linear algebra, yet OpenBLAS starts
a pool of one thread per core when numpy is imported, and its idle threads spin: 0.12 CPU s per process
on 2 cores (``benchmarks/results/replay.md``), paid again by every pool worker. :func:`main` sets
``OPENBLAS_NUM_THREADS=1`` before numpy is first imported unless one of these is set already."""

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

SUMMARIES: dict[str, str] = {
    "replay": "replay a packer on a corpus and print the mass/source summary",
    "check": "replay with the protected-set monitor on every selection; exit 1 on a violation",
    "bounds": "corollary tables: repeated-corpus pass bounds, startup and mass bounds",
    "audit": "which documents and sources each packer trains, never starts or cuts off, with a report",
    "evaluate": "compare models by length stratum and position",
    "policies": "list every packer (streaming and framework) with its options and family status",
    "compare": "every packer side by side at one horizon, ranked by what differs",
    "verify-shards": "verify token shards against their manifest; exit 1 found, 3 not measured",
    "census": "lengths (and hashes) of many text / parquet / shard files, parallel and resumable",
    "contamination": "n-gram overlap of training documents with reference texts; exit 1 found, "
                     "3 not measured",
    "explain": "what one packer did to one document, and why",
    "reconcile": "check a training ledger against the replay of its packer; exit 1 on a divergence",
    "doctor": "replay a framework's own config on a corpus and rank what its packer does wrong",
}
"""The one-line help of each command in ``packing-theory --help`` (its module is not imported for it)."""


RENAMED: dict[tuple[str, str], str] = {
    ("compare", "--documents"): "compare writes no per-document table (audit --documents does); "
                                "compare --demo takes its corpus size as --demo-documents N",
}
"""Options a command no longer takes under an old name: ``(command, old flag) -> what to write instead``."""


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on standard error (status 2)."""

    argv: ClassVar[list[str]] = []
    """The command being parsed (for the hint of an option it no longer takes)."""

    def error(self, message: str) -> NoReturn:
        hints = [hint for (command, flag), hint in RENAMED.items()
                 if message.startswith("unrecognized arguments") and flag in message.split()
                 and command in self.argv[:1]]
        hint = f"; {hints[0]}" if hints else ""
        prog = self.prog
        if self.argv[:1] and self.argv[0] in SUMMARIES and prog.split()[-1] != self.argv[0]:
            prog = f"{prog} {self.argv[0]}"  # the top parser reports a command's unknown options
        self.exit(2, f"{prog}: error: {message}{hint} (see --help)\n")


class _Registrar:
    """What a command module's ``register(sub)`` sees: ``add_parser`` returns the command's parser."""

    def __init__(self, action: _LazyCommands, name: str) -> None:
        self.action = action
        self.name = name

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name != self.name:
            raise ImportError(f"{COMMANDS.get(self.name, self.name)} registers the command {name!r}, "
                              f"not {self.name!r}")
        parser: argparse.ArgumentParser = self.action.choices[name]
        for key in ("description", "epilog", "usage", "formatter_class"):
            if key in kwargs:
                setattr(parser, key, kwargs[key])
        if "help" in kwargs and self.name not in SUMMARIES:
            for choice in self.action._choices_actions:
                if choice.dest == name:
                    choice.help = kwargs["help"]
        return parser


class _LazyCommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Sub-commands whose module is imported and registered when the command is parsed."""

    loaded: set[str]

    def load(self, name: str) -> argparse.ArgumentParser:
        """Import and register command ``name`` (once); return its parser.

        Raises:
            ImportError: its module does not exist (a fault of the package).
        """
        parser: argparse.ArgumentParser = self.choices[name]
        if name in self.loaded:
            return parser
        module_name = COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                raise ImportError(f"packing_theory.cli.COMMANDS names {module_name!r} for the command "
                                  f"{name!r}, but there is no such module") from exc
            raise
        module.register(_Registrar(self, name))
        parser.epilog = f"{parser.epilog}\n\n{EPILOG}" if parser.epilog else EPILOG  # the contract
        add_options(parser, "debug")
        self.loaded.add(name)
        return parser

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if values and values[0] in self.choices:
            self.load(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser(load: bool | Iterable[str] = False) -> argparse.ArgumentParser:
    """The argument parser with every subcommand of :data:`COMMANDS`.

    ``load``: register every command now (``True``) or those named; by default a
    command's module is imported when the command is parsed.

    Raises:
        ImportError: a module named in :data:`COMMANDS` does not exist (a fault of the package).
    """
    parser = _OneLineParser(
        prog="packing-theory",
        description="Replay, check and audit the packers of language-model pretraining.",
        epilog=EPILOG,
    )
    add_options(parser, "debug")
    parser.register("action", "lazy_commands", _LazyCommands)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", action="lazy_commands",
                                parser_class=_OneLineParser)
    assert isinstance(sub, _LazyCommands)
    sub.loaded = set()
    for name, module_name in COMMANDS.items():
        try:  # found without importing it (a module already imported may have no spec)
            found = module_name in sys.modules or importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ImportError(f"packing_theory.cli.COMMANDS names {module_name!r} for the command {name!r}, "
                              "but there is no such module")
        sub.add_parser(name, help=SUMMARIES.get(name))
    for name in (COMMANDS if load is True else () if load is False else load):
        sub.load(name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (never raises ``SystemExit``).

    Parsing errors are status 2 and ``--help`` is status 0 (argparse prints
    them); the command itself runs under :func:`~packing_theory.cli._exit.run_command`.
    """
    debug = "--debug" in list(argv or ())
    _one_blas_thread()
    try:
        parser = build_parser()
        words = sys.argv[1:] if argv is None else list(argv)
        _OneLineParser.argv = [a for a in words if not a.startswith("-")][:1]
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, or a usage error already printed on one line
            return int(exc.code) if isinstance(exc.code, int) else int(ExitCode.USAGE)
    except ImportError as exc:  # a COMMANDS or PEER_MODULES entry without its module: a fault of ours (3)
        fault = exc

        def reraise() -> int:
            raise fault

        return run_command("startup", reraise, debug=debug)
    return run_command(args.command, lambda: args.run(args), debug=bool(getattr(args, "debug", False)))


def _one_blas_thread() -> None:
    """Ask numpy's BLAS for one thread, if numpy is not imported yet and the user sized it nowhere."""
    if "numpy" not in sys.modules and not any(os.environ.get(v) for v in BLAS_THREAD_VARIABLES):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
