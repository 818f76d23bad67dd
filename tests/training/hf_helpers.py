"""Real-library fixtures for the ledger's integration tests: a tokenizer and a tiny Llama built from a config.

Nothing is downloaded: the tokenizer is a word-level ``tokenizers`` model over
``t0 .. t{V-1}`` and the model a one-layer ``LlamaForCausalLM`` of hidden size 16.
"""

from __future__ import annotations

from typing import Any

import numpy as np

VOCAB = 512
BOS = 1


def tiny_tokenizer(vocab: int = VOCAB) -> Any:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    words = {f"t{i}": i for i in range(vocab)}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(words, unk_token="t3")),
                                   pad_token="t0", bos_token="t1", eos_token="t2", unk_token="t3")


def tiny_llama(vocab: int = VOCAB, seed: int = 0) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                         pad_token_id=0, bos_token_id=BOS, eos_token_id=2)
    return LlamaForCausalLM(config)


def token_lists(n: int, *, seed: int = 0, low: int = 2, high: int = 40,
                vocab: int = VOCAB) -> list[list[int]]:
    """``n`` documents: BOS then ids in ``4 .. vocab - 1``."""
    rng = np.random.default_rng(seed)
    return [[BOS, *rng.integers(4, vocab, size=int(m) - 1).tolist()] for m in rng.integers(low, high, size=n)]
