"""A census part is not reused for a changed tokenizer of the same name (a real process, then the API).

Before the fix the part key held the tokenizer's name and its ids on six short
probe texts: a tokenizer of the same name that truncates long texts, or that
reads special-token spellings as one id, gave the same key, and the census
reused the old counts with nothing printed (94,304 tokens where a fresh run gave
125,484). Now the probe has a long text and the special-token spellings, and a
tokenizer that describes itself (a Hugging Face fast tokenizer's serialisation,
its settings, a ``functools.partial``'s arguments) is keyed by that too.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from packing_theory.distributed.parts import tokenizer_fingerprint, tokenizer_state

ROOT = Path(__file__).resolve().parents[2]

PLAIN = "def tok(text):\n    return list(text.encode('utf-8'))\n"
CHANGED = {
    "truncates": "def tok(text):\n    return list(text.encode('utf-8'))[:512]\n",
    "special_tokens": ("def tok(text):\n    out = []\n"
                       "    for i, part in enumerate(text.split('<|endoftext|>')):\n"
                       "        out += ([50256] if i else []) + list(part.encode('utf-8'))\n"
                       "    return out\n"),
}


def census(cwd: Path) -> tuple[str, dict[str, object]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "packing_theory.cli", "census", "--text", "long.txt",
                           "--tokenizer", "tk:tok", "--out", "c", "--json"], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr, json.loads(proc.stdout)


@pytest.mark.parametrize("change", sorted(CHANGED))
def test_a_changed_tokenizer_of_the_same_name_is_recomputed(change: str, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text(("word " * 400 + "<|endoftext|> ") * 5)
    (tmp_path / "tk.py").write_text(PLAIN)
    first, doc1 = census(tmp_path)
    assert "computed 1" in first
    again, _ = census(tmp_path)
    assert "reused 1" in again  # the same tokenizer: the part is reused
    (tmp_path / "tk.py").write_text(CHANGED[change])
    for cached in (tmp_path / "__pycache__").glob("tk.*"):
        cached.unlink()
    changed, doc2 = census(tmp_path)
    assert "computed 1" in changed, changed
    assert json.dumps(doc1, sort_keys=True) != json.dumps(doc2, sort_keys=True)


def test_a_self_describing_tokenizer_is_keyed_by_its_description() -> None:
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")

    def make() -> Any:
        t = tokenizers.Tokenizer(tokenizers.models.WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]"))
        t.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
        return transformers.PreTrainedTokenizerFast(tokenizer_object=t)

    plain, truncating = make(), make()
    truncating.model_max_length = 8  # cuts a call with truncation=True
    assert tokenizer_fingerprint(plain) == tokenizer_fingerprint(truncating)  # the probe cannot see it
    assert tokenizer_state(plain) == tokenizer_state(make())
    assert tokenizer_state(plain) != tokenizer_state(truncating)
    encode = plain.encode
    assert tokenizer_state(encode) == tokenizer_state(plain)  # a bound method is its tokenizer
    assert tokenizer_state(functools.partial(encode, truncation=True)) != tokenizer_state(encode)
