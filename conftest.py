"""Doctest collection of the package (``--doctest-modules``) without the optional extras.

Some modules import an optional dependency at the top: the torch adapter
(``torch`` extra) and the compiled kernels (``fast`` extra, numba). Without the
extra they cannot be imported, so their doctests are not collected; everything
that uses them from ``tests/`` skips with a reason instead.
"""

from __future__ import annotations

import importlib.util

OPTIONAL_MODULES = {
    "packing_theory/adapters/torch.py": "torch",
    "packing_theory/engine/_kernel.py": "numba",
    "packing_theory/audit/_ledger_kernel.py": "numba",
    "packing_theory/engine/_starts_kernel.py": "numba",
    "packing_theory/contamination/_kernel.py": "numba",
    "packing_theory/peers/_kernels.py": "numba",
    "packing_theory/peers/_best_fit_kernel.py": "numba",
    "packing_theory/peers/_binpack_kernel.py": "numba",
}

collect_ignore = [path for path, dep in OPTIONAL_MODULES.items() if importlib.util.find_spec(dep) is None]
