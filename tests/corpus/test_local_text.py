"""The local natural-language corpus (stdlib docs, optional system docs) and its tokenizers."""

from __future__ import annotations

import gzip
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import packing_theory as pt
from packing_theory.corpus import local_text as lt


@pytest.fixture(scope="module")
def corpus() -> lt.LocalTextCorpus:
    return lt.load_local_text()


def test_default_corpus_is_deterministic_and_documented(corpus: lt.LocalTextCorpus) -> None:
    m = corpus.manifest
    assert len(corpus) == m["documents"] == sum(s["documents"] for s in m["sources"].values())
    assert set(m["sources"]) == set(lt.DEFAULT_SOURCES)
    assert m["sources"]["pydoc_topics"]["documents"] > 50
    assert m["sources"]["stdlib_docstrings"]["documents"] > 1000
    assert m["characters"] == sum(len(t) for t in corpus.texts())
    again = lt.load_local_text()
    assert again.sha256 == corpus.sha256 == m["sha256"]
    assert [d.name for d in again.documents] == [d.name for d in corpus.documents]
    names = {d.name.split(":")[0] for d in corpus.documents}
    assert names == {"topic", "doc"}
    assert any(d.name == "doc:json.dumps" for d in corpus.documents)
    json.dumps(m)  # JSON-ready


def test_shuffle_keeps_the_documents(corpus: lt.LocalTextCorpus) -> None:
    plain = lt.load_local_text(("pydoc_topics",), shuffle_seed=None)
    shuffled = lt.load_local_text(("pydoc_topics",), shuffle_seed=7)
    assert [d.name for d in plain.documents] == sorted(d.name for d in plain.documents)
    assert sorted(d.name for d in shuffled.documents) == [d.name for d in plain.documents]
    assert [d.name for d in shuffled.documents] != [d.name for d in plain.documents]


def test_lengths_bytes_and_callable(corpus: lt.LocalTextCorpus) -> None:
    lengths = corpus.lengths()
    assert lengths.dtype == np.int64 and lengths.size == len(corpus) and lengths.min() >= 2
    assert lengths[3] == len(corpus.documents[3].text.encode("utf-8")) + 1
    small = lt.LocalTextCorpus(corpus.documents[:20], {})
    assert np.array_equal(small.lengths(lt.bytes_token_ids), small.lengths())
    assert np.array_equal(small.lengths(bos=False) + 1, small.lengths())
    # long documents exist: the corpus exercises the over-capacity path at R = 2049
    assert (lengths > 2049).sum() >= 20
    with pytest.raises(ValueError, match="tokenizer"):
        small.lengths("words")


def test_token_documents_feed_token_rows(corpus: lt.LocalTextCorpus) -> None:
    small = lt.LocalTextCorpus(corpus.documents[:200], {})
    docs = list(small.token_documents())
    assert docs[0][0] == lt.BYTES_BOS_ID and bytes(docs[0][1:]).decode() == small.documents[0].text
    rows = list(pt.Packer(capacity=65, min_buffer=8, refill=4).token_rows(small.token_documents()))
    assert rows and all(len(r) == 65 for r in rows)


def test_system_docs_from_a_given_root(tmp_path: Path) -> None:
    doc = tmp_path / "doc" / "pkg"
    doc.mkdir(parents=True)
    (doc / "README").write_text("hello packing\n", encoding="utf-8")
    (doc / "NEWS.md.gz").write_bytes(gzip.compress(b"# news\nmore text\n"))
    (doc / "binary.txt").write_bytes(b"\0\1\2")  # not text: skipped
    (doc / "copyright").write_text("not a doc file name\n", encoding="utf-8")
    vim = tmp_path / "vim" / "vim90" / "doc"
    vim.mkdir(parents=True)
    (vim / "help.txt").write_text("*help.txt* vim help\n", encoding="utf-8")
    c = lt.load_local_text(("system_docs",), system_roots=[str(tmp_path / "doc"), str(tmp_path / "vim")],
                           shuffle_seed=None)
    assert [d.name.rsplit("/", 1)[1] for d in c.documents] == ["NEWS.md.gz", "README", "help.txt"]
    files = c.manifest["sources"]["system_docs"]["files"]
    assert [f["bytes"] for f in files] == [len(d.text.encode()) for d in c.documents]
    assert c.documents[0].text.startswith("# news")
    with pytest.raises(ValueError, match="no document"):
        lt.load_local_text(("system_docs",), system_roots=[str(tmp_path / "missing")])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sources": ("web",)}, ValueError, "sources"),
        ({"sources": ()}, ValueError, "sources"),
        ({"sources": ("pydoc_topics", "pydoc_topics")}, ValueError, "twice"),
        ({"sources": "pydoc_topics"}, TypeError, "sources"),
        ({"sources": ("pydoc_topics",), "min_chars": 0}, ValueError, "min_chars"),
        ({"sources": ("pydoc_topics",), "shuffle_seed": -1}, ValueError, "shuffle_seed"),
        ({"sources": ("pydoc_topics",), "shuffle_seed": 1.5}, TypeError, "shuffle_seed"),
        ({"sources": ("system_docs",), "system_roots": "/usr"}, TypeError, "system_roots"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        lt.load_local_text(**kwargs)  # type: ignore[arg-type]


def test_min_chars_filters() -> None:
    c = lt.load_local_text(("pydoc_topics",), min_chars=5000)
    assert all(len(d.text) >= 5000 for d in c.documents) and len(c) < 79


def test_manifest_file(tmp_path: Path) -> None:
    c = lt.load_local_text(("pydoc_topics",))
    c.write_manifest(tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text())["sha256"] == c.sha256


def test_byte_bpe_is_deterministic_and_shorter(corpus: lt.LocalTextCorpus) -> None:
    pytest.importorskip("tokenizers")
    texts = corpus.texts()[:800]
    tok = lt.train_byte_bpe(texts, vocab_size=1000)
    assert tok.to_str() == lt.train_byte_bpe(texts, vocab_size=1000).to_str()
    assert tok.token_to_id("<|bos|>") == 0 and tok.get_vocab_size() <= 1000
    bpe = lt.bpe_lengths(tok, texts)
    raw = lt.LocalTextCorpus(corpus.documents[:800], {}).lengths()
    assert bpe.shape == raw.shape and (bpe <= raw).all() and bpe.sum() < 0.6 * raw.sum()
    assert tok.decode(tok.encode(texts[0]).ids) == texts[0]
    with pytest.raises(ValueError, match="vocab_size"):
        lt.train_byte_bpe(texts, vocab_size=100)
    with pytest.raises(ValueError, match="empty"):
        lt.bpe_lengths(tok, [])


def test_missing_tokenizers_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def fake(name: str, *args: object) -> object:
        if name == "tokenizers":
            raise ImportError("no tokenizers here")
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(lt.importlib, "import_module", fake)
    with pytest.raises(ImportError, match=r"packing-theory\[bpe\]"):
        lt.train_byte_bpe(["a b c"])
