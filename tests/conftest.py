"""Shared test configuration: hypothesis profiles (``ci`` is the default)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
# tools/mutation.py: few, derandomised examples, so that a mutant's verdict does not depend on a draw,
# and no shrinking (a failure is a kill; shrinking it only costs time)
settings.register_profile(
    "mutation", max_examples=20, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
