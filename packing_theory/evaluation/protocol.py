"""The one interface between the evaluation protocol and a model: :class:`NllFn`.

Job: define, precisely, the callable that turns a batch of padded windows
into per-target negative log-likelihoods. Any model (the numpy
:class:`~packing_theory.evaluation.ngram.NGramModel`, a torch module wrapped
by ``packing_theory.adapters.torch``, a remote service) plugs in through it.
Imports: numpy only.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["NllFn"]


@runtime_checkable
class NllFn(Protocol):
    """Per-target negative log-likelihoods of a batch of right-padded windows.

    ``nll_fn(input_ids, segment_ids) -> nll``, both arguments positional.

    Args:
        input_ids: ``numpy.ndarray`` of dtype ``int64`` and shape ``(b, n)``,
            C-contiguous, ``b >= 1``, ``n >= 2``. Row ``i`` holds one window's
            tokens left-aligned at columns ``0 .. n_i - 1``, then right padding
            (a fixed pad id, 0 unless the caller chose another) at columns
            ``n_i .. n - 1``. Column 0 is input only, as in a packed row: it is
            never a target.
        segment_ids: ``None``, or ``numpy.ndarray`` of dtype ``int32`` and shape
            ``(b, n)`` with 1 at the window's tokens and 0 at padding — seed 004's
            segment identifiers with one document per row. A model that honours
            it attends from position ``t`` to ``s`` only when ``s <= t`` and
            ``segment_ids[i, s] == segment_ids[i, t] != 0`` (the block-causal
            document mask). ``None`` means the caller asked for plain causal
            attention; right padding then still cannot reach a real position.

    Returns:
        An array of real floating dtype (``float32`` or ``float64``; it is
        converted to ``float64``) and shape exactly ``(b, n - 1)``:
        ``out[i, j] = -ln p(input_ids[i, j + 1] | input_ids[i, : j + 1])`` in
        nats. Column ``j`` is the prediction *of* column ``j + 1`` made *at*
        column ``j`` (a model's logits at positions ``0 .. n - 2`` scored
        against ``input_ids[:, 1:]``). Entries whose target column
        ``j + 1 >= n_i`` is padding are ignored and may hold any value;
        every other entry must be finite, ``>= 0`` and at most
        :data:`~packing_theory.evaluation.metrics.MAX_NLL` (``1e100``; larger
        values overflow the sums). An exception raised by the model is reported
        as bad input naming the model.

    Contract:
        * causal and row-independent: ``out[i, j]`` depends only on
          ``input_ids[i, : j + 1]`` (so right padding, the batch size and the
          padded width never change a scored value; ``score(...,
          check_padding=True)`` verifies this on the first batch);
        * deterministic for equal inputs (for bit-identical reruns);
        * it must not modify ``input_ids`` or ``segment_ids``.

    The scorer (:func:`~packing_theory.evaluation.metrics.score`) decides
    which entries are targets of the protocol (a window's scored range) and
    which are counted (the positive-byte mask); ``nll_fn`` scores every
    position it is given.

    >>> def uniform(input_ids, segment_ids, /):
    ...     return np.full((input_ids.shape[0], input_ids.shape[1] - 1), np.log(8.0))
    >>> isinstance(uniform, NllFn)
    True
    """

    def __call__(
        self,
        input_ids: npt.NDArray[np.int64],
        segment_ids: npt.NDArray[np.int32] | None,
        /,
    ) -> npt.NDArray[np.floating[Any]]: ...
