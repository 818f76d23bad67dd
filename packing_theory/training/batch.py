"""A batch as the model receives it, reduced to rows: token ids, what reached the loss, where sequences start.

Trainers hand a model batches in a few shapes; :func:`batch_rows` reads all
of them without importing torch (a tensor is read through ``.detach().cpu()
.numpy()``):

* **Hugging Face** — a mapping with ``input_ids`` and ``labels`` of the same
  shape (the model shifts): position ``p >= 1`` of a row reached the loss
  when ``labels[p]`` is not the ignore index (default -100); position 0
  never does. Sequence boundaries come from ``segment_ids`` (ours: 0 is
  padding), else ``cu_seqlens`` / ``cu_seq_lens_q`` (over the flattened
  batch: TRL's padding-free collator), else ``position_ids`` (a position that
  does not continue its predecessor starts a sequence); padding from
  ``attention_mask == 0`` (2-D) or segment id 0, and, when ``pad_id`` is
  given, a run of ``pad_id`` at the end of a row whose labels are ignored.
* **Shifted** (autoresearch / nanochat) — ``(inputs, targets)`` or a mapping
  with ``input_ids`` and ``targets``: ``targets[p]`` is predicted from
  ``inputs[: p + 1]``, so the row is ``inputs`` plus the last target and
  position ``p + 1`` reached the loss when ``targets[p]`` is not the ignore
  index (nanochat masks with -1: pass ``ignore_index=-1``). A third element
  of the tuple (an epoch, a state dict) is ignored. A masked *last* target
  hides the row's last token (it is neither an input nor a trained label):
  the row is then one position shorter.

>>> rows = batch_rows({"input_ids": [[0, 5, 6, 0, 7]], "labels": [[-100, 5, 6, -100, 7]],
...                    "position_ids": [[0, 1, 2, 0, 1]]})
>>> r = rows[0]
>>> r.tokens.tolist(), r.target.astype(int).tolist(), r.masked.astype(int).tolist()
([0, 5, 6, 0, 7], [0, 1, 1, 0, 1], [0, 0, 0, 1, 0])
>>> r.starts.astype(int).tolist()
[1, 0, 0, 1, 0]
>>> batch_rows(([[0, 5, 6]], [[5, 6, -1]]), ignore_index=-1)[0].tokens.tolist()
[0, 5, 6]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError, InputTypeError

__all__ = ["CU_SEQLENS_KEYS", "RowView", "batch_rows", "to_numpy"]

CU_SEQLENS_KEYS = ("cu_seqlens", "cu_seq_lens_q")
"""Keys read as cumulative sequence lengths over the flattened batch."""

BoolArray = npt.NDArray[np.bool_]


def to_numpy(value: Any, name: str) -> npt.NDArray[Any]:
    """A tensor (any device), an array or nested lists as a numpy array."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.dtype == object:
        raise InputTypeError(f"batch[{name!r}] must be rectangular numbers, got ragged or object data")
    return arr


@dataclass(frozen=True)
class RowView:
    """One row: ``tokens`` (int64), and per position ``target`` (reached the loss), ``masked`` (a
    non-padding position ``>= 1`` whose label is the ignore index), ``pad`` (holds no token) and
    ``starts`` (a sequence starts here; position 0 always does)."""

    tokens: npt.NDArray[np.int64]
    target: BoolArray
    masked: BoolArray
    pad: BoolArray
    starts: BoolArray

    def _check(self) -> None:
        n = self.tokens.size
        assert self.target.shape == self.masked.shape == self.pad.shape == self.starts.shape == (n,)
        assert not (self.target & self.pad).any() and not (self.target & self.masked).any()
        assert n == 0 or (bool(self.starts[0]) and not bool(self.target[0]))


def _rows2d(arr: npt.NDArray[Any], name: str, shape: tuple[int, ...] | None) -> npt.NDArray[Any]:
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(f"batch[{name!r}] must be 1-D or 2-D (batch, positions), got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise InputError(f"batch[{name!r}] has shape {arr.shape}, input_ids {shape}")
    return arr


def _get(batch: Mapping[str, Any], key: str) -> Any:
    value = batch.get(key)
    return None if value is None else to_numpy(value, key)


def _as_mapping(batch: Any) -> tuple[Mapping[str, Any], str]:
    if isinstance(batch, Mapping):
        if "labels" in batch and batch["labels"] is not None:
            return batch, "labels"
        if "targets" in batch and batch["targets"] is not None:
            return batch, "targets"
        raise InputError(f"batch has no 'labels' or 'targets' (keys: {sorted(batch)}): the ledger cannot "
                         "tell which positions reached the loss")
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        return {"input_ids": batch[0], "targets": batch[1]}, "targets"
    raise InputTypeError(f"batch must be a mapping (input_ids, labels, ...) or an (inputs, targets) tuple, "
                         f"got {type(batch).__name__}")


def batch_rows(batch: Any, *, ignore_index: int = -100, pad_id: int | None = None) -> list[RowView]:
    """The rows of a batch (see the module doc). O(batch positions).

    Raises:
        InputError: no ``input_ids`` / labels / targets, or shapes that disagree (naming the key).
    """
    data, kind = _as_mapping(batch)
    raw = data.get("input_ids", data.get("inputs"))
    if raw is None:
        raise InputError(f"batch has no 'input_ids' (keys: {sorted(data)})")
    ids = _rows2d(to_numpy(raw, "input_ids"), "input_ids", None).astype(np.int64, copy=False)
    n_rows = ids.shape[0]
    lab = _rows2d(to_numpy(data[kind], kind), kind, ids.shape)
    pad = np.zeros(ids.shape, dtype=bool)
    seg = _get(data, "segment_ids")
    att = _get(data, "attention_mask")
    if seg is not None:
        seg = _rows2d(seg, "segment_ids", ids.shape)
        pad |= seg == 0
    if att is not None and att.ndim <= 2:
        pad |= _rows2d(att, "attention_mask", ids.shape) == 0
    starts = np.zeros(ids.shape, dtype=bool)
    starts[:, 0] = True
    if seg is not None:
        starts[:, 1:] |= seg[:, 1:] != seg[:, :-1]
    elif (cu := next((_get(data, k) for k in CU_SEQLENS_KEYS if data.get(k) is not None), None)) is not None:
        flat = cu.reshape(-1).astype(np.int64)[:-1]
        if flat.size and (flat.min() < 0 or flat.max() > ids.size):
            raise InputError(f"cu_seqlens {cu.tolist()} run outside the batch's {ids.size} positions")
        starts.reshape(-1)[flat[flat < ids.size]] = True
    elif (pos := _get(data, "position_ids")) is not None:
        pos = _rows2d(pos, "position_ids", ids.shape).astype(np.int64)
        starts[:, 1:] |= pos[:, 1:] != pos[:, :-1] + 1
    out: list[RowView] = []
    for r in range(n_rows):
        if kind == "labels":
            tokens = ids[r]
            target = lab[r] != ignore_index
            rp, rs = pad[r].copy(), starts[r]
        else:
            last = int(lab[r, -1])
            tokens = np.r_[ids[r], [last]] if last != ignore_index else ids[r]
            target = np.r_[False, lab[r] != ignore_index][: tokens.size]
            rp = np.r_[pad[r], [pad[r, -1]]][: tokens.size]
            rs = np.r_[starts[r], [False]][: tokens.size]
        target[0] = False
        if pad_id is not None:  # a run of pad ids whose labels are ignored at the end of the row
            keep = np.flatnonzero((tokens != pad_id) | target)
            rp[int(keep[-1]) + 1 if keep.size else 0 :] = True
        target = target & ~rp
        masked = ~target & ~rp
        masked[0] = False
        out.append(RowView(tokens.astype(np.int64, copy=False), target, masked, rp, rs.copy()))
    return out

