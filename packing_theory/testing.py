"""Test helpers for your own loader and for this package's tests (requires the ``test`` extra).

* :mod:`strategies` — the hypothesis strategies for arrival streams and
  packer configurations (:mod:`packing_theory.invariant.strategies`).
* :func:`scaled_examples` — an example count for ``@settings(max_examples=...)``
  that follows the active hypothesis profile instead of overriding it.

>>> from hypothesis import settings
>>> scaled_examples(200) == settings().max_examples
True
"""

from __future__ import annotations

from hypothesis import settings

from ._checks import check_int
from .invariant import strategies

__all__ = ["REFERENCE_EXAMPLES", "scaled_examples", "strategies"]

REFERENCE_EXAMPLES = 200
"""The example count the hard-coded counts of a test are written against (the ``ci`` profile's)."""


def scaled_examples(count: int) -> int:
    """``count`` examples at the reference profile, scaled by the active profile's ``max_examples``.

    A test that needs more (or fewer) examples than the profile's default
    writes the count it needs under the ``ci`` profile (200 examples); under
    ``dev`` (30) it then runs ``count * 30 / 200`` examples, under ``thorough``
    (2,000) ten times ``count``. Never fewer than one. Search budgets of
    :func:`hypothesis.find` are not example counts of a property and are not
    scaled (a smaller budget would only fail to find).

    >>> scaled_examples(0)
    Traceback (most recent call last):
    packing_theory.InputError: count must be >= 1, got 0
    """
    check_int("count", count, minimum=1)
    return max(1, count * settings().max_examples // REFERENCE_EXAMPLES)
