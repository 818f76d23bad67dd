"""The package version (a foundation module, so that any layer may read it)."""

__all__ = ["__version__"]

__version__ = "0.2.0.dev0"
