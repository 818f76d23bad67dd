"""``python -m packing_theory.cli``: the same as the ``packing-theory`` command."""

from __future__ import annotations

import sys

from . import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
