"""The compiled kernel's policy table: which streaming policies the numba kernel implements, and their codes.

Kept apart from the kernel (:mod:`packing_theory.engine._kernel`, which
imports numba) so that the policy declarations and the registry read it
without numba: a streaming policy runs on the compiled engine exactly when
its name is here (:attr:`~packing_theory.engine.policies.StreamingPolicy.compiled`).
A new policy without a kernel branch is therefore refused by the compiled
engine with an error naming the engines it runs on — nothing else to edit.

>>> sorted(POLICY_CODES)[:2], POLICY_CODES["discard"]
(['bounded-wait', 'continue'], 0)
"""

from __future__ import annotations

__all__ = ["BOUNDED_WAIT", "CONTINUE", "DISCARD", "POLICY_CODES", "RANDOM", "REQUEUE", "SEGMENT"]

DISCARD, CONTINUE, REQUEUE, SEGMENT, RANDOM, BOUNDED_WAIT = range(6)

POLICY_CODES: dict[str, int] = {"discard": DISCARD, "continue": CONTINUE, "requeue-bos": REQUEUE,
                                "segment-first": SEGMENT, "random-span": RANDOM, "bounded-wait": BOUNDED_WAIT}
"""Streaming policy name -> its code in the kernel (the kernel's branches switch on these codes)."""
