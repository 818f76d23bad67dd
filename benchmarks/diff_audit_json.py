"""Compare two ``audit.json`` reports, ignoring timings: exit 0 when identical, 1 with the differences.

Timings are every ``"seconds"`` entry (the report's wall times by stage and
each packer's); the ``"run"`` block is run metadata (a new id for every run)
the per-rank ``"execution"`` block is which executor and worker ran each
task, and ``settings.engine`` is which engine ran the replay (the engines must
agree on everything they measure); everything else — every count, every float, the series, the startup
delays — must be equal exactly.

Run: ``python benchmarks/diff_audit_json.py A/audit.json B/audit.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

IGNORED = ("$.run", "$.execution", "$.ranks.execution", "$.settings.engine")
TIMINGS = "seconds"
"""A key holding wall times wherever it appears."""


def differences(a: Any, b: Any, path: str = "$") -> list[str]:
    """Paths where two JSON values differ (the ``IGNORED`` paths skipped)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            if f"{path}.{key}" in IGNORED or key == TIMINGS:
                continue
            if key not in a or key not in b:
                out.append(f"{path}.{key}: only in {'second' if key not in a else 'first'}")
            else:
                out += differences(a[key], b[key], f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in differences(x, y, f"{path}[{i}]")]
    if type(a) is not type(b) or a != b:
        return [f"{path}: {a!r} != {b!r}"]
    return []


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = (json.loads(Path(p).read_text()) for p in args)
    diff = differences(a, b)
    for line in diff[:50]:
        print(line)
    print(f"{len(diff)} difference(s) apart from {', '.join(IGNORED)} and every {TIMINGS!r}", file=sys.stderr)
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
