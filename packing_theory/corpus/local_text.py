"""A natural-language corpus that exists on every machine with Python: stdlib documentation.

:func:`load_local_text` gathers documents from

* ``"pydoc_topics"`` — the language-reference topics shipped with CPython for
  ``help()`` (:mod:`pydoc_data.topics`), one document per topic, sorted by name;
* ``"stdlib_docstrings"`` — the docstrings (:func:`inspect.getdoc`) of every
  importable public standard-library module (:data:`sys.stdlib_module_names`)
  and of the public classes, functions and methods it defines, one document
  per documented object, in module then attribute order. The modules are
  imported in a separate, isolated interpreter (``python -I``) so that the
  caller's process is left untouched; modules with import side effects
  (:data:`SKIPPED_MODULES`) are not imported;
* ``"system_docs"`` (opt-in) — plain-text documentation found on the machine:
  ``README*``, ``*.md`` and ``*.txt`` files (optionally gzipped) under
  ``/usr/share/doc`` and Vim's help files, one document per file, sorted by path.

The result, a :class:`LocalTextCorpus`, carries a JSON-ready
:attr:`~LocalTextCorpus.manifest` (Python version, sources, counts, skipped
modules, every system file used with its size and SHA-256, and a SHA-256 over
the documents) so that a run can say exactly what it trained or replayed on.
With the default sources the corpus is a deterministic function of the Python
installation; with ``system_docs`` it also depends on the installed packages,
which the manifest lists.

Token lengths: :meth:`LocalTextCorpus.lengths` with ``"bytes"`` (UTF-8 bytes
plus one BOS, the library's bytes tokenizer) or any tokenizer callable;
:func:`train_byte_bpe` trains a byte-level BPE on the corpus with the optional
``tokenizers`` package (``pip install 'packing-theory[bpe]'``) and
:func:`bpe_lengths` measures BOS-inclusive lengths with it.

>>> corpus = load_local_text(("pydoc_topics",))
>>> corpus.manifest["sources"]["pydoc_topics"]["documents"] == len(corpus) > 50
True
>>> lengths = corpus.lengths()
>>> int(lengths[0]) == len(corpus.documents[0].text.encode("utf-8")) + 1
True
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import check_int
from ..errors import InputError, InputTypeError, import_optional
from .text import documents_from_texts, lengths_from_texts

__all__ = [
    "BYTES_BOS_ID",
    "DEFAULT_SOURCES",
    "LOCAL_SOURCES",
    "SKIPPED_MODULES",
    "SYSTEM_DOC_ROOTS",
    "LocalDocument",
    "LocalTextCorpus",
    "bpe_lengths",
    "bytes_token_ids",
    "load_local_text",
    "train_byte_bpe",
]

LOCAL_SOURCES: tuple[str, ...] = ("pydoc_topics", "stdlib_docstrings", "system_docs")
"""Every source :func:`load_local_text` knows."""

DEFAULT_SOURCES: tuple[str, ...] = ("pydoc_topics", "stdlib_docstrings")
"""The sources present wherever CPython is (the corpus is then a function of the Python build)."""

SKIPPED_MODULES: frozenset[str] = frozenset({
    "antigravity", "this", "idlelib", "turtledemo", "tkinter", "turtle", "lib2to3", "test",
    "pydoc_data", "ensurepip", "venv",
})
"""Standard-library modules never imported: side effects on import (a browser, printing,
a GUI), test suites, or data packages read separately."""

SYSTEM_DOC_ROOTS: tuple[str, ...] = ("/usr/share/doc", "/usr/share/vim")
"""Where ``"system_docs"`` looks by default."""

BYTES_BOS_ID = 256
"""The BOS id of :func:`bytes_token_ids` documents (byte values are 0..255)."""

_MAX_FILE_BYTES = 1 << 20

# Runs in a separate `python -I` interpreter; prints {"docs": [[name, doc], ...], "skipped": [...]}.
_EXTRACT = r"""
import contextlib, importlib, inspect, io, json, sys, warnings
skip = set(json.loads(sys.argv[1]))
warnings.simplefilter("ignore")
docs, skipped = [], []
def add(name, obj):
    try:
        d = inspect.getdoc(obj)
    except Exception:
        return
    if d and d.strip():
        docs.append([name, d])
for name in sorted(sys.stdlib_module_names):
    if name in skip or name.startswith("_"):
        continue
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            mod = importlib.import_module(name)
    except BaseException:
        skipped.append(name)
        continue
    add(name, mod)
    for attr in sorted(vars(mod)):
        if attr.startswith("_"):
            continue
        obj = vars(mod)[attr]
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        if getattr(obj, "__module__", None) != name:
            continue
        add(f"{name}.{attr}", obj)
        if inspect.isclass(obj):
            for meth in sorted(vars(obj)):
                if meth.startswith("_"):
                    continue
                f = vars(obj)[meth]
                if isinstance(f, (classmethod, staticmethod)):
                    f = f.__func__
                if inspect.isfunction(f) or inspect.ismethoddescriptor(f) or isinstance(f, property):
                    add(f"{name}.{attr}.{meth}", f)
json.dump({"docs": docs, "skipped": skipped}, sys.stdout)
"""


@dataclass(frozen=True, slots=True)
class LocalDocument:
    """One document: where it came from and its text.

    ``name`` is ``"topic:<topic>"``, ``"doc:<module>[.<object>[.<method>]]"`` or
    ``"file:<path>"``.
    """

    name: str
    text: str


@dataclass(frozen=True)
class LocalTextCorpus:
    """Documents in arrival order plus the manifest that says what they are.

    Build one with :func:`load_local_text`.
    """

    documents: tuple[LocalDocument, ...]
    manifest: dict[str, Any] = field(repr=False)

    def __len__(self) -> int:
        """Number of documents."""
        return len(self.documents)

    def texts(self) -> list[str]:
        """The document texts, in order."""
        return [d.text for d in self.documents]

    def lengths(self, tokenizer: str | Callable[[str], Sequence[int]] = "bytes", *,
                bos: bool = True) -> npt.NDArray[np.int64]:
        """BOS-inclusive token lengths, in document order (``int64``).

        Args:
            tokenizer: ``"bytes"`` (UTF-8 bytes; computed without building the
                token lists) or a callable ``str -> Sequence[int]``.
            bos: count one BOS per document (the tokenizer adds none).

        Complexity: O(characters).
        """
        if tokenizer == "bytes":
            extra = 1 if bos else 0
            out = np.fromiter((len(d.text.encode("utf-8")) + extra for d in self.documents),
                              dtype=np.int64, count=len(self.documents))
            if (out < 1).any():
                raise InputError("an empty document with bos=False has no tokens")
            return out
        if isinstance(tokenizer, str):
            raise InputError(f"tokenizer must be 'bytes' or a callable, got {tokenizer!r}")
        return lengths_from_texts(self.texts(), tokenizer, bos=bos)

    def token_documents(self, tokenizer: Callable[[str], Sequence[int]] | None = None, *,
                        bos_id: int | None = BYTES_BOS_ID) -> Iterator[list[int]]:
        """BOS-inclusive token lists for :meth:`packing_theory.Packer.token_rows` (lazily).

        ``tokenizer=None`` uses :func:`bytes_token_ids` with BOS :data:`BYTES_BOS_ID`
        (a 257-symbol vocabulary).

        >>> corpus = LocalTextCorpus((LocalDocument("doc:x", "hi"),), {})
        >>> next(corpus.token_documents())
        [256, 104, 105]
        """
        return documents_from_texts(self.texts(), tokenizer or bytes_token_ids, bos_id=bos_id)

    @property
    def sha256(self) -> str:
        """SHA-256 over the documents (names and texts, in order), as in the manifest."""
        return str(self.manifest.get("sha256") or _digest(self.documents))

    def write_manifest(self, path: str | os.PathLike[str]) -> None:
        """Write :attr:`manifest` as indented JSON."""
        Path(path).write_text(json.dumps(self.manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def bytes_token_ids(text: str) -> list[int]:
    """The library's bytes tokenizer: the UTF-8 bytes of ``text`` as ids ``0..255``.

    >>> bytes_token_ids("é!")
    [195, 169, 33]
    """
    return list(text.encode("utf-8"))


def _digest(documents: Iterable[LocalDocument]) -> str:
    h = hashlib.sha256()
    for d in documents:
        h.update(d.name.encode("utf-8"))
        h.update(b"\0")
        h.update(d.text.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _check_sources(sources: object) -> tuple[str, ...]:
    if isinstance(sources, str) or not isinstance(sources, Iterable):
        raise InputTypeError(f"sources must be a sequence of source names, got {sources!r}")
    out = tuple(sources)
    bad = [s for s in out if s not in LOCAL_SOURCES]
    if bad or not out:
        raise InputError(f"sources must be a non-empty subset of {LOCAL_SOURCES}, got {out!r}")
    if len(set(out)) != len(out):
        raise InputError(f"sources names a source twice: {out!r}")
    return out


def _topics() -> list[LocalDocument]:
    topics = importlib.import_module("pydoc_data.topics").topics
    return [LocalDocument(f"topic:{k}", topics[k]) for k in sorted(topics) if topics[k].strip()]


def _docstrings(timeout: float) -> tuple[list[LocalDocument], list[str]]:
    cmd = [sys.executable, "-I", "-W", "ignore", "-c", _EXTRACT, json.dumps(sorted(SKIPPED_MODULES))]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"extracting stdlib docstrings took more than {timeout} s") from exc
    if proc.returncode != 0:
        raise RuntimeError(f"extracting stdlib docstrings failed: {proc.stderr.strip()[-500:]}")
    data = json.loads(proc.stdout)
    docs = [LocalDocument(f"doc:{name}", text) for name, text in data["docs"]]
    return docs, list(data["skipped"])


def _doc_file(path: Path) -> bool:
    name = path.name.lower()
    base = name[:-3] if name.endswith(".gz") else name
    if "/vim" in str(path):
        return path.parent.name == "doc" and base.endswith(".txt")
    return base.startswith("readme") or base.endswith((".md", ".txt"))


def _read_text_file(path: Path, max_bytes: int) -> str | None:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if not raw.strip() or len(raw) > max_bytes or b"\0" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _system_docs(roots: Sequence[str], max_bytes: int) -> tuple[list[LocalDocument], list[dict[str, Any]]]:
    docs: list[LocalDocument] = []
    files: list[dict[str, Any]] = []
    paths: list[Path] = []
    for root in roots:
        base = Path(root)
        if base.is_dir():
            paths.extend(p for p in base.rglob("*") if p.is_file() and not p.is_symlink() and _doc_file(p))
    for path in sorted(set(paths)):
        text = _read_text_file(path, max_bytes)
        if text is None:
            continue
        docs.append(LocalDocument(f"file:{path}", text))
        data = text.encode("utf-8")
        files.append({"path": str(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return docs, files


def load_local_text(
    sources: Sequence[str] = DEFAULT_SOURCES,
    *,
    shuffle_seed: int | None = 0,
    min_chars: int = 1,
    system_roots: Sequence[str] = SYSTEM_DOC_ROOTS,
    max_file_bytes: int = _MAX_FILE_BYTES,
    timeout: float = 300.0,
) -> LocalTextCorpus:
    """Build the local natural-language corpus (see the module doc).

    Args:
        sources: which of :data:`LOCAL_SOURCES` to use, in this order.
        shuffle_seed: arrival order: documents are permuted with
            ``numpy.random.default_rng(shuffle_seed)`` (``None`` keeps source
            order, which clusters related objects).
        min_chars: drop documents shorter than this many characters.
        system_roots: directories searched by ``"system_docs"``.
        max_file_bytes: ``"system_docs"`` skips larger files (after gunzip).
        timeout: seconds allowed to the docstring-extraction interpreter.

    Raises:
        ValueError, TypeError: bad arguments (naming them); an empty result.
        RuntimeError: the docstring-extraction interpreter failed.

    Complexity: one isolated interpreter start and the import of the standard
    library (a few seconds) for ``"stdlib_docstrings"``; O(bytes) otherwise.
    """
    chosen = _check_sources(sources)
    min_chars = check_int("min_chars", min_chars, 1)
    max_file_bytes = check_int("max_file_bytes", max_file_bytes, 1)
    if shuffle_seed is not None:
        shuffle_seed = check_int("shuffle_seed", shuffle_seed, 0)
    if isinstance(system_roots, str):
        raise InputTypeError(f"system_roots must be a sequence of directories, got the string "
                             f"{system_roots!r}")
    docs: list[LocalDocument] = []
    report: dict[str, Any] = {}
    for source in chosen:
        if source == "pydoc_topics":
            part = _topics()
            report[source] = {"documents": 0}
        elif source == "stdlib_docstrings":
            part, skipped = _docstrings(timeout)
            report[source] = {"documents": 0, "skipped_modules": skipped,
                              "never_imported": sorted(SKIPPED_MODULES)}
        else:
            part, files = _system_docs(system_roots, max_file_bytes)
            report[source] = {"documents": 0, "roots": list(system_roots), "files": files}
        part = [d for d in part if len(d.text) >= min_chars]
        report[source]["documents"] = len(part)
        report[source]["characters"] = sum(len(d.text) for d in part)
        docs.extend(part)
    if not docs:
        raise InputError(f"no document found in sources {chosen!r} (min_chars={min_chars})")
    if shuffle_seed is not None:
        order = np.random.default_rng(shuffle_seed).permutation(len(docs))
        docs = [docs[i] for i in order]
    documents = tuple(docs)
    manifest = {
        "corpus": "packing_theory.corpus.local_text",
        "python": sys.version,
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "sources": report,
        "shuffle_seed": shuffle_seed,
        "min_chars": min_chars,
        "documents": len(documents),
        "characters": sum(len(d.text) for d in documents),
        "utf8_bytes": sum(len(d.text.encode("utf-8")) for d in documents),
        "sha256": _digest(documents),
    }
    return LocalTextCorpus(documents, manifest)


# --------------------------------------------------------------------------- byte-level BPE


def _tokenizers() -> Any:
    return import_optional("tokenizers", extra="bpe", purpose="a byte-level BPE")


def train_byte_bpe(texts: Iterable[str], vocab_size: int = 4096, *, min_frequency: int = 2,
                   bos_token: str = "<|bos|>") -> Any:
    """Train a byte-level BPE tokenizer on ``texts`` (``tokenizers`` package; optional extra ``bpe``).

    The pre-tokenizer and decoder are byte-level, the initial alphabet is the
    256 byte symbols and ``bos_token`` is a special token (id 0), so every
    text is encodable and lengths are comparable with the bytes tokenizer.
    Training is deterministic for the same texts and settings (tested).

    Returns a ``tokenizers.Tokenizer``.

    Raises:
        ImportError: ``tokenizers`` is not installed (with the install command).
        ValueError, TypeError: ``vocab_size < 257 + 1`` or ``min_frequency < 1``.
    """
    vocab_size = check_int("vocab_size", vocab_size, 258)
    min_frequency = check_int("min_frequency", min_frequency, 1)
    tk = _tokenizers()
    tokenizer = tk.Tokenizer(tk.models.BPE())
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(), special_tokens=[bos_token],
    )
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    return tokenizer


def bpe_lengths(tokenizer: Any, texts: Sequence[str], *, bos: bool = True,
                batch_size: int = 1024) -> npt.NDArray[np.int64]:
    """BOS-inclusive lengths of ``texts`` under a ``tokenizers.Tokenizer`` (one BOS added per text)."""
    batch_size = check_int("batch_size", batch_size, 1)
    extra = 1 if bos else 0
    out: list[int] = []
    for i in range(0, len(texts), batch_size):
        out.extend(len(enc.ids) + extra for enc in tokenizer.encode_batch(list(texts[i:i + batch_size])))
    if not out:
        raise InputError("texts is empty: a replay needs at least one document")
    return np.asarray(out, dtype=np.int64)
