"""Subcommands of the ``packing-theory`` command line (one module each)."""

__all__: list[str] = []
