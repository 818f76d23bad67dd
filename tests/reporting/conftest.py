"""The ``chromium`` fixture of the browser tests: the binary, or a skip (a failure under CI's
``PACKING_THEORY_REQUIRE_CHROMIUM=1``)."""

from __future__ import annotations

import os

import pytest

from tests.tool_modules import load_tool


@pytest.fixture(scope="module")
def chromium() -> str:
    """The chromium binary (``tools/browser.py``'s :func:`find_chromium`)."""
    found = load_tool("browser").find_chromium()
    if found is None:
        if os.environ.get("PACKING_THEORY_REQUIRE_CHROMIUM") == "1":
            pytest.fail("PACKING_THEORY_REQUIRE_CHROMIUM=1 but no chromium binary was found "
                        "(apt-get install -y chromium, or set CHROMIUM)")
        pytest.skip("no chromium binary on PATH (apt-get install -y chromium) to open the HTML reports")
    return str(found)
