"""The library's exceptions: one base class, one subclass per kind of outcome.

Every exception that ``packing_theory`` raises on purpose is a
:class:`PackingTheoryError`. Its subclasses say what happened, and the command
line maps each class to one exit status (:mod:`packing_theory.cli._exit`)
without looking at where it was raised:

==========================  ====  ==============================================
class                       exit  meaning
==========================  ====  ==============================================
:class:`Finding`            1     a check ran and found something: an invariant
                                  violation, a broken identity, a corrupt file
:class:`InputError`         2     bad input or usage, always naming the parameter
                                  or the file and the value (also a
                                  ``ValueError``)
:class:`InputTypeError`     2     an argument of the wrong type (also a
                                  ``TypeError``)
:class:`MissingDependency`  2     an optional extra is not installed (also an
                                  ``ImportError``); the message names the extra
:class:`NotMeasured`        3     the library could not measure what was asked
                                  (a listed input could not be read, every
                                  attempt of a task failed)
==========================  ====  ==============================================

Any other exception that escapes a command is a bug of ours (exit 3).

Because :class:`InputError` is a ``ValueError`` and :class:`InputTypeError` a
``TypeError``, code written against the standard exceptions keeps working.
:class:`Finding` is deliberately *not* an ``AssertionError``: ``except
AssertionError`` in user code and ``python -O`` never touch it.

>>> import packing_theory as pt
>>> try:
...     pt.PackerConfig(capacity=1)
... except pt.InputError as exc:
...     print(isinstance(exc, ValueError), exc)
True capacity must be >= 2, got 1
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = [
    "Finding",
    "InputError",
    "InputTypeError",
    "MissingDependency",
    "NotMeasured",
    "PackingTheoryError",
    "import_optional",
]


class PackingTheoryError(Exception):
    """Base class of every exception ``packing_theory`` raises on purpose."""

    __module__ = "packing_theory"


class InputError(PackingTheoryError, ValueError):
    """Bad input or usage: the message names the parameter (or the file) and the value."""

    __module__ = "packing_theory"


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (an :class:`InputError` that is also a ``TypeError``)."""

    __module__ = "packing_theory"


class MissingDependency(InputError, ImportError):
    """An optional dependency is missing; the message says which extra to install."""

    __module__ = "packing_theory"


class NotMeasured(PackingTheoryError):
    """The library could not measure what was asked (an input unread, a task that never succeeded).

    Different from a finding: "nothing found" cannot be claimed when something
    listed was not read.
    """

    __module__ = "packing_theory"


class Finding(PackingTheoryError):
    """A check ran and found something (an invariant violation, a broken identity, a corrupt file)."""

    __module__ = "packing_theory"


def import_optional(name: str, *, extra: str, purpose: str) -> ModuleType:
    """Import the optional module ``name``, or raise :class:`MissingDependency` naming the extra.

    The one helper for every optional import of the library (matplotlib,
    numba, pyarrow, tokenizers, tqdm, dask, torch, ...).

    >>> import_optional("json", extra="test", purpose="reading JSON").__name__
    'json'
    >>> import_optional("no_such_module_x", extra="plots", purpose="PNG plots")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.MissingDependency: PNG plots: no_such_module_x is not installed (pip install ...)
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = name.split(".")[0]
        if getattr(exc, "name", None) not in (None, name, top):
            raise  # the module exists but one of *its* imports failed: not a missing extra
        raise MissingDependency(f"{purpose}: {top} is not installed (pip install 'packing-theory[{extra}]')"
                                ) from exc
