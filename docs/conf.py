"""Sphinx configuration for packing_theory (built with ``-W``: warnings are errors)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, os.path.abspath(".."))

project = "packing_theory"
author = "packing_theory developers"
copyright = "2026, packing_theory developers"
release = "0.2.0.dev0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "myst_nb",
]
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_type_aliases = {"LengthsInput": "LengthsInput", "Event": "Event", "Policy": "Policy"}
napoleon_use_ivar = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True
nitpicky = False
suppress_warnings = ["autodoc.import_object"]
html_theme = "alabaster"
exclude_patterns = ["_build"]

# Docstring examples (``>>>`` blocks pulled in by autodoc) run under
# ``pytest --doctest-modules``; the doctest builder runs the pages' own
# ``.. doctest::`` directives.
doctest_test_doctest_blocks = ""

# Notebooks: the source is examples/notebooks/*.ipynb with committed outputs (CI re-executes them
# with nbmake). The docs render those outputs and never execute a notebook; the files are copied
# next to the pages at build time (docs/notebooks/ is generated and ignored by git).
nb_execution_mode = "off"
nb_merge_streams = True
_NOTEBOOKS = Path(__file__).resolve().parent.parent / "examples" / "notebooks"
_NB_PAGES = Path(__file__).resolve().parent / "notebooks"
_NB_PAGES.mkdir(exist_ok=True)
for _nb in sorted(_NOTEBOOKS.glob("*.ipynb")):
    _dst = _NB_PAGES / _nb.name
    if not _dst.exists() or _dst.read_bytes() != _nb.read_bytes():
        shutil.copyfile(_nb, _dst)
