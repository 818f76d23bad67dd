"""Train a tiny GPT under several packing policies, with the ledger and the monitor embedded.

What it does
------------
1. Builds a corpus of real English text that exists on every machine with
   Python: the language-reference topics of :mod:`pydoc_data.topics` and the
   docstrings of a fixed list of standard-library modules (one document each).
   ``packing_theory.corpus.local_text`` (another branch) will provide this; until
   it is on main, :func:`local_text` below is a small local stand-in.
2. Trains a byte-level BPE on the training documents on the spot (the
   ``tokenizers`` package; nothing is downloaded) and holds out every tenth
   document for validation.
3. For each policy (``discard``, ``continue``, ``segment-first`` and one peer,
   ``trl-bfd`` by default, skipped with a printed reason when no peer of that
   name is installed) trains the same GPT (same seed, same steps) on
   :class:`~packing_theory.adapters.PackedStream` records: block-causal document
   masks (SDPA), position ids restarting per segment, labels masked by the
   prediction mask, seed 004's loss (summed NLL / predicted targets).
4. Writes, per policy, the loss curve next to the audit of what the run
   actually trained on (the embedded ledger and monitor, closed at the last
   consumed row), plus a validation loss and bits per byte measured the same
   way for every policy (each validation document's first ``T + 1`` tokens,
   scored alone through :func:`~packing_theory.adapters.torch.nll_fn`), and a
   resume check (a state saved mid-run, resumed, yields the rows the run used).

Runs unchanged on a GPU (device selection, pinned transfers). ``--quick`` is
the CI version (a small corpus, a few steps, well under a minute).

Usage::

    python examples/tiny_training.py --threads 1 --out examples/output/tiny_training   # the committed run
    python examples/tiny_training.py --quick          # writes into a new temporary directory

Without ``--out`` the example writes into a new temporary directory (it prints
the path), never into the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import packing_theory as pt
from packing_theory.adapters import LoaderState, PackedStream, TokenLoss, bits_per_byte
from packing_theory.corpus import TokenDocuments

STDLIB_MODULES = (
    "abc",
    "argparse",
    "ast",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "fractions",
    "functools",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http.client",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "math",
    "mimetypes",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "shlex",
    "shutil",
    "socket",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tokenize",
    "traceback",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "warnings",
    "weakref",
    "zipfile",
    "zlib",
)
BOS = "<|bos|>"


def local_text() -> tuple[list[str], dict[str, Any]]:
    """Documents from ``pydoc_data.topics`` and stdlib docstrings, deterministic per Python version."""
    import pydoc_data.topics

    docs = [pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)]
    n_topics = len(docs)
    seen = set(docs)
    for name in STDLIB_MODULES:
        mod = importlib.import_module(name)
        objs: list[Any] = [mod]
        public = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
        for attr in sorted(public):
            obj = getattr(mod, attr, None)
            if (inspect.isclass(obj) or inspect.isroutine(obj)) and getattr(
                obj, "__module__", None
            ) == mod.__name__:
                objs.append(obj)
        for obj in objs:
            text = inspect.getdoc(obj)
            if text and text not in seen:
                seen.add(text)
                docs.append(text)
    digest = hashlib.sha256("\x00".join(docs).encode("utf-8")).hexdigest()
    manifest = {
        "python": platform.python_version(),
        "sources": {"pydoc_topics": n_topics, "stdlib_docstrings": len(docs) - n_topics},
        "documents": len(docs),
        "utf8_bytes": sum(len(d.encode("utf-8")) for d in docs),
        "sha256": digest,
        "helper": "examples/tiny_training.py:local_text (packing_theory.corpus.local_text is not on main)",
    }
    return docs, manifest


def _byte_decoder() -> dict[str, int]:
    """The byte-level alphabet of GPT-2 style BPE: printable stand-in character -> byte."""
    keep = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    )
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(keep, chars, strict=True)}


def train_tokenizer(texts: list[str], vocab_size: int) -> tuple[Any, int, np.ndarray]:
    """A byte-level BPE trained on ``texts``: (tokenizer, bos id, byte length of every token id)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[BOS],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    bos = tok.token_to_id(BOS)
    decode = _byte_decoder()
    token_bytes = np.zeros(tok.get_vocab_size(), dtype=np.int64)
    for piece, i in tok.get_vocab().items():
        token_bytes[i] = 0 if i == bos else sum(1 for _ in piece if _ in decode)
    return tok, bos, token_bytes


def build_model(torch: Any, vocab: int, T: int, dim: int, layers: int, heads: int) -> Any:
    """A GPT whose attention takes seed 004's document mask and per-segment position ids."""
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: Any, mask: Any) -> Any:
            b, n, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.proj(y.transpose(1, 2).reshape(b, n, dim))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Embedding(T, dim)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = self.tok.weight
            for m in self.modules():  # GPT-2 style initialisation: small weights, tied embeddings
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

        def forward(self, x: Any, segment_ids: Any = None, position_ids: Any = None) -> Any:
            from packing_theory.adapters.torch import sdpa_mask

            if segment_ids is None:  # plain causal attention over one document
                segment_ids = torch.ones_like(x, dtype=torch.int32)
            if position_ids is None:
                position_ids = torch.arange(x.shape[1], device=x.device).expand_as(x)
            mask = sdpa_mask(segment_ids, dtype=self.tok.weight.dtype)
            h = self.tok(x) + self.pos(position_ids.clamp(max=T - 1))
            for block in self.blocks:
                h = block(h, mask)
            return self.head(self.ln(h))

    return GPT()


def evaluate(
    torch: Any, model: Any, val: list[list[int]], T: int, token_bytes: np.ndarray, device: Any
) -> dict[str, float]:
    """Seed 004's objective and bits per byte over each validation document's first T + 1 tokens."""
    from packing_theory.adapters.torch import nll_fn

    fn = nll_fn(model, device=device)
    model.eval()
    acc = TokenLoss()
    nats = 0.0
    nbytes = 0
    for i in range(0, len(val), 32):
        chunk = [d[: T + 1] for d in val[i : i + 32] if len(d) >= 2]
        if not chunk:
            continue
        width = max(len(d) for d in chunk)
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        seg = np.zeros((len(chunk), width), dtype=np.int32)
        for r, d in enumerate(chunk):
            ids[r, : len(d)] = d
            seg[r, : len(d)] = 1
        nll = fn(ids, seg)
        m = seg[:, 1:] == 1
        acc.add(np.where(m, nll, 0.0), m)
        _, n_, b_ = bits_per_byte(np.where(m, nll, 0.0), ids[:, 1:], token_bytes, m)
        nats += n_
        nbytes += b_
    model.train()
    return {"val_loss": acc.value, "val_bpb": nats / (math.log(2) * nbytes), "val_targets": acc.count}


def train_one(
    torch: Any,
    policy: str,
    args: argparse.Namespace,
    store: TokenDocuments,
    val: list[list[int]],
    vocab: int,
    token_bytes: np.ndarray,
    device: Any,
    out: Path,
) -> dict[str, Any] | None:
    from packing_theory.adapters import make_policy
    from packing_theory.adapters.torch import batch_tensors, token_loss_sum

    T = args.T
    kw: dict[str, Any] = {
        "policy": policy,
        "capacity": T + 1,
        "batch_rows": args.batch,
        "min_buffer": args.buffer,
        "refill": args.refill,
        "passes": 1000,
        "rows": args.steps * args.batch,
    }
    try:
        make_policy(policy, capacity=T + 1)
    except ValueError as exc:
        print(f"skipping {policy}: not installed on this branch ({exc})")
        return None
    torch.manual_seed(args.seed)
    model = build_model(torch, vocab, T, args.dim, args.layers, args.heads).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    stream = PackedStream(store, ledger=True, monitor="record", **kw)
    curve: list[dict[str, Any]] = []
    half = args.steps // 2
    saved: str | None = None
    used_after: list[str] = []
    t0 = time.perf_counter()
    for step, batch in enumerate(stream):
        f = batch_tensors(batch, "shifted", device)
        lr = args.lr * min(1.0, (step + 1) / 20) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        logits = model(f["input_ids"], f["segment_ids"], f["position_ids"])
        total, count = token_loss_sum(logits, f["labels"])
        loss = total / count.clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if saved is not None and len(used_after) < 5:  # the rows consumed after the checkpoint
            used_after.append(hashlib.sha256(batch.input_ids.tobytes()).hexdigest())
        if step == half:
            saved = stream.state().to_json()  # a mid-run checkpoint after this step's rows
        point: dict[str, Any] = {"step": step, "train_loss": float(loss.detach()), "targets": int(count)}
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            point.update(evaluate(torch, model, val, T, token_bytes, device))
            if not args.quick:
                print(
                    f"  {policy} step {step + 1}: train {point['train_loss']:.3f} "
                    f"val {point['val_loss']:.3f} "
                    f"({time.perf_counter() - t0:.0f} s)",
                    flush=True,
                )
        curve.append(point)
    seconds = time.perf_counter() - t0
    audit = stream.audit()
    resumed_same = None
    if saved is not None:
        again = PackedStream(store, resume=LoaderState.from_json(saved), **kw)
        digests = [
            hashlib.sha256(b.input_ids.tobytes()).hexdigest() for b, _ in zip(again, range(5), strict=False)
        ]
        resumed_same = digests == used_after
    final = curve[-1]
    led = audit["ledger"]
    result = {
        "policy": policy,
        "parameters": n_params,
        "steps": len(curve),
        "seconds": round(seconds, 2),
        "device": str(device),
        "final_train_loss": final["train_loss"],
        "val_loss": final.get("val_loss"),
        "val_bpb": final.get("val_bpb"),
        "resume_check_identical_rows": resumed_same,
        "rows": audit["rows"],
        "emitted_tokens": led["mass"]["emitted_tokens"],
        "discarded_tokens": led["mass"]["discarded_tokens"],
        "padding_tokens": led["mass"]["padding_tokens"],
        "started_sources": led["sources"]["started"],
        "arrived_sources": led["sources"]["arrived"],
        "monitor_violations": audit["monitor"]["violations"],
    }
    d = out / policy
    d.mkdir(parents=True, exist_ok=True)
    (d / "loss.json").write_text(json.dumps(curve, indent=1) + "\n")
    (d / "audit.json").write_text(json.dumps(audit, indent=1, default=repr) + "\n")
    (d / "run.json").write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"{policy:>14}: {n_params:,} parameters, {len(curve)} steps in {seconds:.1f} s on {device}: "
        f"train {final['train_loss']:.3f}, val {final.get('val_loss', float('nan')):.3f} "
        f"({final.get('val_bpb', float('nan')):.3f} bpb); trained on {audit['rows']} rows, "
        f"{led['sources']['started']}/{led['sources']['arrived']} sources started, "
        f"{led['mass']['discarded_tokens']} tokens discarded; resume identical: {resumed_same}"
    )
    return result


def plot(out: Path, results: list[dict[str, Any]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install 'packing-theory[plots]')")
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        curve = json.loads((out / r["policy"] / "loss.json").read_text())
        steps = [p["step"] for p in curve]
        smooth = np.convolve([p["train_loss"] for p in curve], np.ones(10) / 10, mode="valid")
        a.plot(steps[len(steps) - len(smooth) :], smooth, label=r["policy"])
        ev = [p for p in curve if "val_loss" in p]
        b.plot([p["step"] for p in ev], [p["val_loss"] for p in ev], marker="o", label=r["policy"])
    a.set(title="train loss (seed 004, 10-step mean)", xlabel="step", ylabel="nats / predicted target")
    b.set(title="validation loss (first T+1 tokens of held-out documents)", xlabel="step")
    a.legend()
    b.legend()
    fig.tight_layout()
    fig.savefig(out / "loss_curves.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the CI version: small corpus, few steps")
    parser.add_argument("--out", type=Path, default=None,
                        help="output directory (default: a new temporary directory)")
    parser.add_argument("--policies", default="discard,continue,segment-first,trl-bfd")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads on CPU (default: torch's choice; 1 on a loaded machine)",
    )
    parser.add_argument("--steps", type=int, default=None, help="training steps per policy")
    args = parser.parse_args(argv)
    try:
        import tokenizers  # noqa: F401
        import torch
    except ImportError as exc:
        print(
            f"this example needs torch and tokenizers (pip install 'packing-theory[torch]' tokenizers): {exc}"
        )
        return 0 if args.quick else 1
    from packing_theory.adapters.torch import default_device

    quick = args.quick
    args.T, args.dim, args.layers, args.heads = (32, 32, 1, 2) if quick else (128, 96, 3, 4)
    args.batch, args.buffer, args.refill = (8, 16, 8) if quick else (16, 64, 16)
    args.eval_every, args.lr = (6, 3e-3) if quick else (100, 3e-3)
    vocab_size = 300 if quick else 512
    if args.steps is not None:
        args.steps = max(1, args.steps)
    else:
        args.steps = 12 if quick else 600
    if args.threads is None and quick:
        args.threads = 1  # a model this small gains nothing from intra-op threads on a loaded CPU
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    out = args.out or Path(tempfile.mkdtemp(prefix="tiny_training_quick-" if quick else "tiny_training-"))
    out.mkdir(parents=True, exist_ok=True)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = default_device()
    texts, corpus = local_text()
    if quick:
        texts = texts[:: max(1, len(texts) // 150)]
    train_texts = [t for i, t in enumerate(texts) if i % 10]
    val_texts = [t for i, t in enumerate(texts) if i % 10 == 0]
    t0 = time.perf_counter()
    tok, bos, token_bytes = train_tokenizer(train_texts, vocab_size)
    encode = [[bos, *e.ids] for e in tok.encode_batch(train_texts)]
    val = [[bos, *e.ids] for e in tok.encode_batch(val_texts)]
    store = TokenDocuments.from_lists(encode)
    lengths = store.lengths()
    print(
        f"corpus: {len(texts)} of {corpus['documents']} documents {corpus['sources']}, {int(lengths.sum())} "
        "training tokens, "
        f"vocab {tok.get_vocab_size()}, {int((lengths > args.T + 1).sum())} documents longer than "
        f"R={args.T + 1}; "
        f"tokenizer trained in {time.perf_counter() - t0:.1f} s; device {device}"
    )
    results = []
    for policy in args.policies.split(","):
        r = train_one(torch, policy, args, store, val, tok.get_vocab_size(), token_bytes, device, out)
        if r is not None:
            results.append(r)
    summary = {
        "seed": args.seed,
        "quick": quick,
        "command": "python examples/tiny_training.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "torch_threads": torch.get_num_threads(),
        "corpus": corpus,
        "torch": torch.__version__,
        "packing_theory": pt.__version__,
        "python": sys.version.split()[0],
        "device": str(device),
        "tokenizer": {"kind": "byte-level BPE (tokenizers)", "vocab": tok.get_vocab_size(), "bos": BOS},
        "model": {"T": args.T, "dim": args.dim, "layers": args.layers, "heads": args.heads},
        "training": {
            "batch_rows": args.batch,
            "min_buffer": args.buffer,
            "refill": args.refill,
            "steps": args.steps,
            "lr": args.lr,
            "loss": "seed 004: summed masked NLL / predicted targets",
        },
        "documents": {
            "train": len(store),
            "val": len(val),
            "train_tokens": int(lengths.sum()),
            "longer_than_R": int((lengths > args.T + 1).sum()),
        },
        "runs": results,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(out, results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
