"""Declaration files (JSON or YAML): the declared mixture, the cleaning funnel.

>>> import json, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "mix.json")
>>> _ = open(path, "w").write(json.dumps({"alpha": {"a": 1.0}}))
>>> read_declaration(path, "mixture")
{'alpha': {'a': 1.0}}
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import InputError, import_optional

__all__ = ["read_declaration"]


def read_declaration(path: str | os.PathLike[str], what: str) -> Any:
    """Parse a JSON (``.json``) or YAML (``.yaml`` / ``.yml``) declaration file.

    Raises:
        FileNotFoundError: no such file.
        InputError: not valid JSON / YAML, or another suffix (naming ``what`` and the file).
        MissingDependency: a YAML file without PyYAML.
    """
    name = os.fspath(path)
    low = name.lower()
    with open(name, encoding="utf-8") as fh:
        text = fh.read()
    if low.endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{what} {name!r} is not valid JSON: {exc}") from exc
    if low.endswith((".yaml", ".yml")):
        yaml = import_optional("yaml", extra="yaml", purpose=f"reading the YAML {what}")
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"{what} {name!r} is not valid YAML: {exc}") from exc
    raise InputError(f"{what} {name!r} must be a .json, .yaml or .yml file")
