"""What makes a report one run: a run id and config hash in every file, a manifest with SHA-256s.

``DIR/.packing-theory-manifest.json`` (:data:`REPORT_MANIFEST_NAME`) lists each file
of the current report with its SHA-256 and size, the run id and the config
hash; it is written last. Producers put the run id into every file: the
JSON's ``run`` entry, a line of the Markdown, the PNGs' text chunks
(:data:`PNG_RUN_KEY`, :data:`PNG_CONFIG_KEY`).

>>> config_hash({"b": 1, "a": [1, 2]}) == config_hash({"a": [1, 2], "b": 1})
True
>>> manifest_files({"schema": MANIFEST_SCHEMA, "files": {"a.md": {"sha256": "00"}, "../x": {"sha256": "11"}}})
{'a.md': '00'}
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import secrets
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError
from .files import plain_name

__all__ = [
    "MANIFEST_SCHEMA",
    "PNG_CONFIG_KEY",
    "PNG_RUN_KEY",
    "REPORT_MANIFEST_NAME",
    "config_hash",
    "manifest_document",
    "manifest_files",
    "new_run_id",
    "png_text",
]

REPORT_MANIFEST_NAME = ".packing-theory-manifest.json"
"""The manifest of the current report, written last."""
MANIFEST_SCHEMA = "packing-theory/report-manifest"
PNG_RUN_KEY = "packing-theory run"
"""PNG text-chunk key holding the run id."""
PNG_CONFIG_KEY = "packing-theory config"
"""PNG text-chunk key holding the config hash."""


def config_hash(config: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of the canonical JSON of ``config`` (sorted keys): equal configs, equal hashes."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_run_id() -> str:
    """A run id: UTC time to the second and 8 random hex digits, e.g. ``20250101T120000Z-1a2b3c4d``."""
    now = _dt.datetime.now(_dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def manifest_document(*, tool: str, run_id: str, config_hash: str,
                      files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The manifest of one run: ``files`` maps each name to ``{"sha256": ..., "bytes": ...}``."""
    return {"schema": MANIFEST_SCHEMA, "version": 1, "tool": tool, "run_id": run_id,
            "config_hash": config_hash,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "files": {str(n): dict(v) for n, v in files.items()}}


def manifest_files(manifest: Any) -> dict[str, str]:
    """``name -> sha256`` listed by a manifest document (empty when it is not one; odd names dropped)."""
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        return {}
    files = manifest.get("files")
    if not isinstance(files, dict):
        return {}
    return {n: str(v.get("sha256")) for n, v in files.items() if isinstance(v, dict) and plain_name(n)}


def png_text(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG file (``key -> value``).

    Raises:
        InputError: not a complete PNG (bad signature, a truncated chunk, a bad
            CRC, or no ``IEND``).
    """
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise InputError(f"{os.fspath(path)!r} is not a PNG file")
    out: dict[str, str] = {}
    i = 8
    while i + 8 <= len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind = data[i + 4 : i + 8]
        body = data[i + 8 : i + 8 + n]
        crc = data[i + 8 + n : i + 12 + n]
        if len(body) != n or len(crc) != 4 or struct.unpack(">I", crc)[0] != zlib.crc32(kind + body):
            raise InputError(f"{os.fspath(path)!r} is truncated or corrupt at byte {i}")
        if kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            out[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IEND":
            return out
        i += 12 + n
    raise InputError(f"{os.fspath(path)!r} is truncated (no IEND chunk)")
