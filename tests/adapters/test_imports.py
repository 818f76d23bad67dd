"""``import packing_theory`` (and its torch-free adapters) never imports torch; the torch adapter needs it.

Runs everywhere, with or without torch installed: the child interpreter
blocks ``torch`` before importing anything.
"""

from __future__ import annotations

import subprocess
import sys


def test_import_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import packing_theory, packing_theory.adapters\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n    import packing_theory.adapters.torch\nexcept ImportError:\n    print('refused')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "refused"
