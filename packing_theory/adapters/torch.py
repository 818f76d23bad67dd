"""The trainer adapter for PyTorch — the one module of the library that imports torch.

What is here
------------
* **Drop-in loaders** with the signatures and yields of the public ones, backed
  by our engine with any policy (a streaming policy name, a peer name, or a
  packer object), an optional embedded
  :class:`~packing_theory.invariant.InvariantMonitor` and
  :class:`~packing_theory.audit.Ledger`, and exact resume:

  - :func:`make_dataloader` — autoresearch ``prepare.make_dataloader(tokenizer, B, T,
    split, buffer_size=1000)``, yielding ``(inputs, targets, epoch)``;
  - :func:`tokenizing_distributed_data_loader_with_state_bos_bestfit` — nanochat's
    BOS best-fit loader, yielding ``(inputs, targets, state_dict)``, and
    :func:`tokenizing_distributed_data_loader_bos_bestfit` yielding ``(inputs, targets)``.

  As in the originals, ``inputs`` and ``targets`` are ``(B, T)`` ``int64`` views
  into one persistent device buffer, overwritten by the next batch; rows are
  ``R = T + 1`` tokens, ``inputs = row[:-1]``, ``targets = row[1:]``. When the
  device is CUDA the rows go through a pinned CPU buffer and one non-blocking
  copy. Extra arguments are keyword-only, so existing calls are unchanged.
* **Records for Hugging Face / plain loops**: :class:`PackedIterableDataset`
  (one dict of tensors per row, exact ``state_dict`` / ``load_state_dict``),
  :func:`collate_packed`, :func:`batch_tensors`.
* **Attention**: :func:`sdpa_mask` (additive block-causal mask for
  ``scaled_dot_product_attention``), :func:`flex_block_mask` (a FlexAttention
  ``BlockMask`` when ``torch.nn.attention.flex_attention`` exists:
  :data:`FLEX_ATTENTION`).
* **Loss and evaluation**: :func:`token_loss_sum` (seed 004's numerator and
  denominator, to divide once over accumulated micro-batches) and
  :func:`nll_fn` (a model as a per-target NLL function for the evaluation
  protocol's ``NllFn`` contract).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ..audit.ledger import Ledger
from ..audit.results import Aggregates
from ..corpus.documents import DocumentStore
from ..engine.policies import RANDOM_SPAN_SEED
from ..errors import InputError
from .dropin import Documents, encoder, loader_state, nanochat_state, resolve_documents
from .order import OrderSpec
from .parquet import autoresearch_files, nanochat_files, parquet_documents
from .records import Layout, PackedBatch, PackedRecord, RecordOptions
from .state import LoaderState
from .stream import MonitorSpec, PackedStream

_create_block_mask: Any
try:  # FlexAttention appeared in torch 2.5
    from torch.nn.attention.flex_attention import create_block_mask as _create_block_mask

    FLEX_ATTENTION = True
except ImportError:  # pragma: no cover - depends on the torch version
    _create_block_mask = None
    FLEX_ATTENTION = False

__all__ = [
    "FLEX_ATTENTION",
    "INFINITE_PASSES",
    "AuditedLoader",
    "PackedIterableDataset",
    "batch_tensors",
    "collate_packed",
    "default_device",
    "flex_block_mask",
    "make_dataloader",
    "nll_fn",
    "sdpa_mask",
    "token_loss_sum",
    "tokenizing_distributed_data_loader_bos_bestfit",
    "tokenizing_distributed_data_loader_with_state_bos_bestfit",
]

INFINITE_PASSES = (1 << 31) - 1
"""``passes`` used for ``passes=None``: the public loaders cycle through their data forever."""


def default_device() -> torch.device:
    """CUDA when available, then MPS, else CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


# --------------------------------------------------------------------------- tensors and masks


def batch_tensors(
    batch: PackedBatch, layout: Layout = "row", device: torch.device | str | None = None
) -> dict[str, Any]:
    """The fields of :meth:`PackedBatch.fields` as tensors on ``device`` (pinned staging for CUDA).

    ``cu_seqlens`` is ``int32``, ``segment_ids`` ``int32``, ``mask`` ``bool``,
    the rest ``int64``; ``max_seqlen`` stays an int and ``seq_lengths`` a list.
    """
    dev = torch.device(device) if device is not None else torch.device("cpu")
    pin = dev.type == "cuda"
    out: dict[str, Any] = {}
    for key, value in batch.fields(layout).items():
        if isinstance(value, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(value))
            if key == "mask":
                t = t.bool()
            if pin:
                t = t.pin_memory()
            out[key] = t.to(dev, non_blocking=pin)
        else:
            out[key] = value
    return out


def sdpa_mask(segment_ids: torch.Tensor, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Seed 004's block-causal document mask as an additive ``(b, 1, n, n)`` mask for SDPA.

    ``0`` where query ``t`` may attend key ``s`` (same non-zero segment,
    ``s <= t``), ``-inf`` elsewhere. A padding query (segment 0) attends only to
    itself, so that its softmax stays finite; padding never reaches a real
    token and its outputs carry no loss (``m = 0``).
    """
    if segment_ids.dim() == 1:
        segment_ids = segment_ids[None]
    if segment_ids.dim() != 2:
        raise InputError(f"segment_ids must be (b, n), got shape {tuple(segment_ids.shape)}")
    n = segment_ids.shape[1]
    q = segment_ids[:, :, None]
    k = segment_ids[:, None, :]
    causal = torch.ones(n, n, dtype=torch.bool, device=segment_ids.device).tril()
    eye = torch.eye(n, dtype=torch.bool, device=segment_ids.device)
    allowed = ((q == k) & (q != 0) & causal) | ((q == 0) & eye)
    zero = torch.zeros((), dtype=dtype, device=segment_ids.device)
    minus = torch.full((), float("-inf"), dtype=dtype, device=segment_ids.device)
    return torch.where(allowed, zero, minus)[:, None]


def flex_block_mask(segment_ids: torch.Tensor, *, heads: int | None = None) -> Any:
    """A FlexAttention ``BlockMask`` for the same rule as :func:`sdpa_mask`.

    Raises:
        RuntimeError: this torch has no ``torch.nn.attention.flex_attention``.
    """
    if not FLEX_ATTENTION or _create_block_mask is None:
        raise RuntimeError(f"FlexAttention is not available in torch {torch.__version__}")
    if segment_ids.dim() != 2:
        raise InputError(f"segment_ids must be (b, n), got shape {tuple(segment_ids.shape)}")
    seg = segment_ids

    def mask_mod(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        sq = seg[b, q_idx]
        return (kv_idx <= q_idx) & (sq == seg[b, kv_idx]) & ((sq != 0) | (q_idx == kv_idx))

    b, n = seg.shape
    return _create_block_mask(mask_mod, b, heads, n, n, device=seg.device)


def collate_packed(examples: Sequence[Mapping[str, Any] | PackedRecord]) -> dict[str, Any]:
    """Stack per-row examples (dicts from :class:`PackedIterableDataset`, or records) into a batch.

    Tensors are stacked to ``(b, L)``; ``seq_lengths`` stays per row;
    ``cu_seqlens`` (``int32``) and ``max_seqlen`` cover the flattened batch.

    Raises:
        ValueError: no examples, or rows of different lengths.
    """
    if not examples:
        raise InputError("examples is empty")
    rows: list[Mapping[str, Any]] = []
    for ex in examples:
        if isinstance(ex, PackedRecord):
            rows.append(
                {
                    "input_ids": torch.from_numpy(ex.input_ids),
                    "labels": torch.from_numpy(ex.labels),
                    "mask": torch.from_numpy(ex.mask).bool(),
                    "segment_ids": torch.from_numpy(ex.segment_ids),
                    "position_ids": torch.from_numpy(ex.position_ids),
                    "seq_lengths": ex.seq_lengths,
                }
            )
        else:
            rows.append(ex)
    widths = {int(r["input_ids"].shape[-1]) for r in rows}
    if len(widths) != 1:
        raise InputError(f"rows have different lengths {sorted(widths)}")
    out: dict[str, Any] = {}
    for key in rows[0]:
        if key == "seq_lengths":
            out[key] = [list(r[key]) for r in rows]
        elif isinstance(rows[0][key], torch.Tensor):
            out[key] = torch.stack([r[key] for r in rows])
    lengths = [n for r in rows for n in r["seq_lengths"]]
    cu = np.r_[0, np.cumsum(lengths)]
    out["cu_seqlens"] = torch.from_numpy(cu.astype(np.int32))
    out["max_seqlen"] = int(max(lengths))
    return out


def token_loss_sum(
    logits: torch.Tensor, labels: torch.Tensor, *, ignore_index: int = -100
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Σ NLL over labels != ignore_index, their count)`` — seed 004's numerator and denominator.

    ``logits`` ``(..., V)`` and ``labels`` ``(...)`` are aligned (already
    shifted). Divide the summed numerators by the summed counts of all
    micro-batches of a step (not a mean of micro-batch means).
    """
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        labels.reshape(-1),
        ignore_index=ignore_index,
        reduction="sum",
    )
    return loss, (labels != ignore_index).sum()


def nll_fn(
    model: torch.nn.Module,
    *,
    device: torch.device | str | None = None,
    segment_kwarg: str | None = "segment_ids",
) -> Callable[[npt.NDArray[np.int64], npt.NDArray[np.int32] | None], npt.NDArray[np.float64]]:
    """Wrap ``model`` as ``nll(input_ids, segment_ids) -> (b, n - 1)`` per-target NLL in nats (numpy).

    The callable keeps the evaluation protocol's ``NllFn`` contract:
    ``out[i, j] = -ln p(input_ids[i, j + 1] | input_ids[i, : j + 1])``. The
    model is called as ``model(x)`` or, when ``segment_ids`` is given and
    ``segment_kwarg`` is not ``None``, ``model(x, **{segment_kwarg: segments})``
    and must return logits ``(b, n, V)`` (or an object with ``.logits``). It runs
    under ``torch.inference_mode``; put the model in ``eval()`` mode yourself.
    """
    dev = torch.device(device) if device is not None else next(model.parameters()).device

    def nll(
        input_ids: npt.NDArray[np.int64], segment_ids: npt.NDArray[np.int32] | None, /
    ) -> npt.NDArray[np.float64]:
        x = torch.as_tensor(np.asarray(input_ids, dtype=np.int64), device=dev)
        if x.dim() != 2 or x.shape[1] < 2:
            raise InputError(f"input_ids must be (b, n) with n >= 2, got shape {tuple(x.shape)}")
        with torch.inference_mode():
            if segment_ids is None or segment_kwarg is None:
                out = model(x)
            else:
                seg = torch.as_tensor(np.asarray(segment_ids, dtype=np.int32), device=dev)
                out = model(x, **{segment_kwarg: seg})
            logits = getattr(out, "logits", out)
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            got = -logp.gather(-1, x[:, 1:, None]).squeeze(-1)
        result: npt.NDArray[np.float64] = got.double().cpu().numpy()
        return result

    return nll


# --------------------------------------------------------------------------- the iterable dataset


class PackedIterableDataset(IterableDataset[dict[str, Any]]):
    """One dict of tensors per packed row, for Hugging Face / plain PyTorch loops.

    Keys: ``input_ids, labels, mask, segment_ids, position_ids`` (1-D tensors)
    and ``seq_lengths`` (a list), in the ``"row"`` layout (labels aligned with
    ``input_ids``) or the ``"shifted"`` one (adds ``targets``). Batch them with
    :func:`collate_packed`. Keyword arguments go to
    :class:`~packing_theory.adapters.stream.PackedStream`.

    Exact resume: :meth:`state_dict` names the last chunk boundary (a light
    stream state) and the rows yielded since; :meth:`load_state_dict` makes the
    next iteration continue there. Use ``num_workers=0`` (the stream is
    sequential; a second worker would repeat it).
    """

    def __init__(
        self, documents: DocumentStore, *, layout: Layout = "row", chunk_rows: int = 32, **stream_kwargs: Any
    ) -> None:
        super().__init__()
        if layout not in ("row", "shifted"):
            raise InputError(f"layout must be 'row' or 'shifted', got {layout!r}")
        self.documents = documents
        self.layout: Layout = layout
        self.chunk_rows = int(chunk_rows)
        self.stream_kwargs = stream_kwargs
        self.stream: PackedStream | None = None
        self._resume: tuple[LoaderState, int] | None = None
        self._chunk_state: LoaderState | None = None
        self._in_chunk = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        if info is not None and info.num_workers > 1:
            raise RuntimeError("PackedIterableDataset is one sequential stream: use num_workers=0 or 1")
        resume, skip = self._resume if self._resume is not None else (None, 0)
        self._resume = None
        self.stream = PackedStream(
            self.documents, batch_rows=self.chunk_rows, resume=resume, **self.stream_kwargs
        )
        while True:
            self._chunk_state = self.stream.state(light=True)
            self._in_chunk = 0
            batch = self.stream.next_batch()
            if batch is None:
                return
            fields = batch.fields(self.layout)
            per_row = {
                k: torch.from_numpy(np.ascontiguousarray(v))
                for k, v in fields.items()
                if isinstance(v, np.ndarray) and k != "cu_seqlens"
            }
            for i in range(batch.n_rows):
                if skip:
                    skip -= 1
                    self._in_chunk += 1
                    continue
                row = {k: (v[i].bool() if k == "mask" else v[i]) for k, v in per_row.items()}
                row["seq_lengths"] = fields["seq_lengths"][i]
                self._in_chunk += 1
                yield row

    def state_dict(self) -> dict[str, Any]:
        """Where the iteration stands: ``{"chunk": light LoaderState JSON, "skip": rows into the chunk}``."""
        if self._chunk_state is None:  # nothing yielded yet: the start
            return {"chunk": None, "skip": 0}
        return {"chunk": self._chunk_state.to_json(), "skip": self._in_chunk}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue the next iteration where :meth:`state_dict` was taken."""
        try:
            chunk, skip = state["chunk"], int(state["skip"])
            self._resume = None if chunk is None else (LoaderState.from_json(chunk), skip)
        except (KeyError, TypeError) as exc:
            raise InputError(f"not a PackedIterableDataset state: {exc!r}") from exc


# --------------------------------------------------------------------------- the drop-in loaders


class AuditedLoader:
    """A drop-in loader: an iterator of the public loader's yields, plus the audit and exact resume.

    Attributes:
        stream: the underlying :class:`~packing_theory.adapters.stream.PackedStream`.
        ledger, monitor: the embedded ledger and monitor (or ``None``).
        inputs, targets: the persistent ``(B, T)`` device views every batch is written to.
    """

    def __init__(self, stream: PackedStream, B: int, T: int, device: torch.device | str | None) -> None:
        self.stream = stream
        self.B, self.T = int(B), int(T)
        self.device = torch.device(device) if device is not None else default_device()
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise InputError("device='cuda' but torch.cuda.is_available() is False (pass device='cpu')")
        use_cuda = self.device.type == "cuda"
        self._use_cuda = use_cuda
        self._cpu = torch.empty(2 * B * T, dtype=torch.long, pin_memory=use_cuda)
        self._cpu_inputs = self._cpu[: B * T].view(B, T)
        self._cpu_targets = self._cpu[B * T :].view(B, T)
        self._np_inputs = self._cpu_inputs.numpy()
        self._np_targets = self._cpu_targets.numpy()
        self._dev = (
            self._cpu
            if self.device.type == "cpu"
            else torch.empty(2 * B * T, dtype=torch.long, device=self.device)
        )
        self.inputs = self._dev[: B * T].view(B, T)
        self.targets = self._dev[B * T :].view(B, T)

    @property
    def ledger(self) -> Ledger | None:
        """The embedded ledger."""
        return self.stream.ledger

    @property
    def monitor(self) -> Any:
        """The embedded monitor."""
        return self.stream.monitor

    def __iter__(self) -> AuditedLoader:
        return self

    def _next_rows(self) -> None:
        batch = self.stream.next_batch()
        if batch is None:
            raise StopIteration
        rows = batch.input_ids
        # numpy copies into the (pinned) staging buffer: no intra-op thread pool for two memcpys
        np.copyto(self._np_inputs, rows[:, :-1])
        np.copyto(self._np_targets, rows[:, 1:])
        opts = self.stream.options
        if opts.exclude_ids:  # ids never predicted: their targets carry the ignore index
            self._np_targets[np.isin(self._np_targets, opts.exclude_ids)] = opts.ignore_index
        if self._dev is not self._cpu:
            self._dev.copy_(self._cpu, non_blocking=self._use_cuda)

    def __next__(self) -> Any:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """The exact loader state at the current batch boundary (``{"packing_theory": LoaderState JSON}``)."""
        return {"packing_theory": self.stream.state().to_json()}

    def finish(self) -> Aggregates:
        """Close the ledger at the rows yielded so far and return its aggregates."""
        return self.stream.finish()

    def audit(self) -> dict[str, Any]:
        """A JSON-ready audit of what the trainer consumed (ledger, monitor, counters)."""
        return self.stream.audit()

    def write_audit(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Write :meth:`audit` as JSON to ``path`` and return it."""
        doc = self.audit()
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, default=repr)
            fh.write("\n")
        return doc


class _Autoresearch(AuditedLoader):
    def __next__(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        self._next_rows()
        return self.inputs, self.targets, self.stream.epoch


def _stream(
    documents: DocumentStore,
    B: int,
    T: int,
    buffer_size: int,
    policy: Any,
    passes: int | None,
    seed: int,
    monitor: MonitorSpec,
    ledger: bool | Ledger | None,
    resume: LoaderState | None,
    peer_options: Mapping[str, Any] | None,
    options: RecordOptions | None,
    order: str | OrderSpec = "identity",
    rows: int | None = None,
) -> PackedStream:
    return PackedStream(
        documents,
        policy=policy,
        capacity=T + 1,
        batch_rows=B,
        min_buffer=buffer_size,
        passes=INFINITE_PASSES if passes is None else passes,
        seed=seed,
        monitor=monitor,
        ledger=ledger,
        resume=resume,
        peer_options=peer_options,
        options=options,
        drop_last=True,
        order=order,
        rows=rows,
    )


def make_dataloader(
    tokenizer: Any,
    B: int,
    T: int,
    split: str,
    buffer_size: int = 1000,
    *,
    documents: Documents = None,
    policy: Any = "discard",
    passes: int | None = None,
    seed: int = RANDOM_SPAN_SEED,
    monitor: MonitorSpec = None,
    ledger: bool | Ledger | None = None,
    device: torch.device | str | None = None,
    resume: Mapping[str, Any] | LoaderState | None = None,
    tokenizer_batch_size: int = 128,
    peer_options: Mapping[str, Any] | None = None,
    options: RecordOptions | None = None,
    order: str | OrderSpec = "identity",
    rows: int | None = None,
) -> AuditedLoader:
    """autoresearch's ``make_dataloader``, audited: yields ``(inputs, targets, epoch)`` forever.

    Same positional signature and yields as autoresearch 228791f
    ``prepare.make_dataloader``. ``documents`` (default: the parquet files
    autoresearch reads, tokenized with ``tokenizer``) may be a
    :class:`~packing_theory.corpus.documents.DocumentStore`, token lists, or a
    mapping ``split -> either``. ``policy="discard"`` reproduces 228791f,
    ``"continue"`` PR #372; any other policy or packer object works.
    ``passes=None`` cycles forever; ``resume`` takes :meth:`AuditedLoader.state_dict`.
    ``order`` (:mod:`packing_theory.adapters.order`) shuffles rows within blocks of optimizer
    updates of the finite stream of ``rows`` rows (the training budget); ``options.exclude_ids``
    targets carry ``options.ignore_index``.
    """
    if split not in ("train", "val"):
        raise InputError(f"split must be 'train' or 'val', got {split!r}")
    store = resolve_documents(
        documents,
        split,
        lambda: parquet_documents(
            autoresearch_files(split), encoder(tokenizer), batch_size=tokenizer_batch_size
        ),
    )
    state = loader_state(resume)
    stream = _stream(
        store, B, T, buffer_size, policy, passes, seed, monitor, ledger, state, peer_options, options, order,
        rows,
    )
    return _Autoresearch(stream, B, T, device)


class _Nanochat(AuditedLoader):
    def __next__(self) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
        self._next_rows()
        return self.inputs, self.targets, nanochat_state(self.stream)


def tokenizing_distributed_data_loader_with_state_bos_bestfit(
    tokenizer: Any,
    B: int,
    T: int,
    split: str,
    tokenizer_threads: int = 4,
    tokenizer_batch_size: int = 128,
    device: torch.device | str = "cuda",
    resume_state_dict: Mapping[str, Any] | None = None,
    buffer_size: int = 1000,
    *,
    documents: Documents = None,
    policy: Any = "discard",
    passes: int | None = None,
    seed: int = RANDOM_SPAN_SEED,
    monitor: MonitorSpec = None,
    ledger: bool | Ledger | None = None,
    peer_options: Mapping[str, Any] | None = None,
    options: RecordOptions | None = None,
    order: str | OrderSpec = "identity",
    rows: int | None = None,
) -> AuditedLoader:
    """nanochat's BOS best-fit loader, audited: yields ``(inputs, targets, state_dict)`` forever.

    Same signature and yields as nanochat 92d63d4
    ``dataloader.tokenizing_distributed_data_loader_with_state_bos_bestfit``.
    ``state_dict`` holds nanochat's ``pq_idx``, ``rg_idx`` and ``epoch`` and our
    ``"packing_theory"`` state; ``resume_state_dict`` continues *exactly* from
    a dict this loader yielded (a dict from nanochat's own loader, which
    resumes approximately at a row group, is refused). ``policy="requeue-bos"``
    reproduces PR #544. DDP rank and world size come from ``RANK`` /
    ``WORLD_SIZE`` as in nanochat; ``documents`` as in :func:`make_dataloader`.
    """
    if split not in ("train", "val"):
        raise InputError(f"split must be 'train' or 'val', got {split!r}")
    rank, world = (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])) if "RANK" in os.environ else (0, 1)

    def default() -> DocumentStore:
        return parquet_documents(
            nanochat_files(split),
            encoder(tokenizer, num_threads=tokenizer_threads),
            batch_size=tokenizer_batch_size,
            rank=rank,
            world_size=world,
        )

    store = resolve_documents(documents, split, default)
    state = None
    if resume_state_dict is not None:
        if "packing_theory" not in resume_state_dict:
            raise InputError(
                "resume_state_dict has no 'packing_theory' entry: it was written by nanochat's own "
                "loader, which resumes approximately (at a row group); this loader resumes exactly "
                "from the state dicts it yields"
            )
        state = loader_state(resume_state_dict)
    stream = _stream(
        store, B, T, buffer_size, policy, passes, seed, monitor, ledger, state, peer_options, options, order,
        rows,
    )
    return _Nanochat(stream, B, T, device)


def tokenizing_distributed_data_loader_bos_bestfit(*args: Any, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """nanochat's helper without the state dict: yields ``(inputs, targets)``."""
    for inputs, targets, _ in tokenizing_distributed_data_loader_with_state_bos_bestfit(*args, **kwargs):
        yield inputs, targets
