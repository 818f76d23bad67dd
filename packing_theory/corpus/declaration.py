"""Declaration files (JSON or YAML): the declared mixture, the cleaning funnel.

A declaration is small and means exactly what it says, so it is read under the
rules of :mod:`packing_theory._files`: a regular file only (a FIFO or a device
is refused before reading), at most ``limit`` bytes, a repeated key refused
(JSON and YAML parsers otherwise keep the last value silently), nesting at most
:data:`~packing_theory._files.MAX_DEPTH` levels, and YAML aliases expanding it
by at most :data:`~packing_theory._files.MAX_ALIAS_EXPANSION` entries.

>>> import json, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "mix.json")
>>> _ = open(path, "w").write(json.dumps({"alpha": {"a": 1.0}}))
>>> read_declaration(path, "mixture")
{'alpha': {'a': 1.0}}
>>> _ = open(path, "w").write('{"alpha": {"a": 0.5, "a": 1.0}}')
>>> read_declaration(path, "mixture")  # doctest: +ELLIPSIS
Traceback (most recent call last):
packing_theory.InputError: mixture '...mix.json' repeats the key 'a' in one object (JSON keeps only the last)
"""

from __future__ import annotations

import os
from typing import Any

from .._files import DECLARATION_LIMIT, check_tree, load_json, load_yaml, read_bounded
from ..errors import InputError

__all__ = ["read_declaration"]


def read_declaration(path: str | os.PathLike[str], what: str, *, limit: int = DECLARATION_LIMIT) -> Any:
    """Parse a JSON (``.json``) or YAML (``.yaml`` / ``.yml``) declaration file (see the module docstring).

    ``what`` names the option or role in every message (``"mixture"``, ``"funnel"``).

    Raises:
        FileNotFoundError: no such file.
        InputError: not a regular file, larger than ``limit`` bytes, not valid JSON / YAML, a repeated
            key, too deep, aliases that expand too far, or another suffix (naming ``what`` and the file).
        MissingDependency: a YAML file without PyYAML.
    """
    name = os.fspath(path)
    low = name.lower()
    origin = f"{what} {name!r}"
    if not low.endswith((".json", ".yaml", ".yml")):
        raise InputError(f"{origin} must be a .json, .yaml or .yml file")
    data = read_bounded(name, what, limit)
    if low.endswith(".json"):
        doc = load_json(data, origin, unique_keys=True)
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{origin} is not UTF-8 text (byte {exc.start:,})") from None
        doc = load_yaml(text, origin)
    check_tree(doc, origin)
    return doc
