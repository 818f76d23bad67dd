"""Sphinx configuration for packing_theory (built with ``-W``: warnings are errors)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "packing_theory"
author = "packing_theory developers"
copyright = "2026, packing_theory developers"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
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
