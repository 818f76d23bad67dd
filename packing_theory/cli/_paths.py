"""The paths a command's options name as inputs, for the rule that a report stays apart from its inputs.

:func:`named_inputs` collects every file and directory option of a parsed
command line (``--data`` patterns expanded, ``--files-from`` read) so that the
report writer can refuse an ``--out`` inside an input directory, or an input
that is one of the report's own files
(:func:`packing_theory.reporting.writer.inputs_problem`).
"""

from __future__ import annotations

import argparse
import glob
import os

__all__ = ["INPUT_OPTIONS", "named_inputs"]

INPUT_OPTIONS: tuple[str, ...] = (
    "data", "files_from", "lengths", "shards", "text", "parquet", "eval_lengths", "eval_shards", "sources",
    "exclude_shards", "token_bytes", "labels", "labels_manifest", "mixture", "funnel", "manifest",
    "reference",
)
"""The ``argparse`` destinations of every option that names an input file or directory."""


def named_inputs(args: argparse.Namespace) -> list[str]:
    """The input paths ``args`` names, as given (a pattern expanded to its matches).

    ``--files-from FILE`` counts as FILE and the paths it lists; ``-`` (standard input) lists nothing
    here (it can be read once only). A directory counts only where the option takes one (``--data``,
    ``--files-from``): given to a file option, it is refused by that option's own check, naming it.
    """
    out: list[str] = []
    for key in INPUT_OPTIONS:
        value = getattr(args, key, None)
        if value is None:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            text = str(item)
            if key == "files_from":
                if text == "-":
                    continue
                from ._inputs import read_files_from

                out.append(text)
                out.extend(read_files_from(text))
            elif any(c in text for c in "*?["):
                out.extend(glob.glob(text, recursive=True))
            elif key == "data" or not os.path.isdir(text):
                out.append(text)
    return out
