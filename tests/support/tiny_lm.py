"""A tiny causal language model and tokenizer with random weights, built without any download
(the TRL trainer test, tests/finetune/test_data.py; needs the [finetune-train] extra)."""

from __future__ import annotations

import json

# Whole replies as single tokens of the tiny vocabulary, so that a randomly initialised model
# samples parseable, gradable answers often: rewards then differ within a group of
# completions, the advantages are non-zero and the updates move the weights.
ACTIONS = ("move up", "move down", "move left", "move right", "wait")
REPLIES = [json.dumps({"violates": v}) for v in (True, False)] + [
    json.dumps({"action": a, "belief": "keep out of zone Q", "confidence": 0.5}) for a in ACTIONS
]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def tiny_tokenizer():
    """A word-level tokenizer with a chat template: a few words, the replies, pad / eos / unk."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[UNK]", "[PAD]", "[EOS]", "the", "agent", "norm", "move", "step", "zone", "door"]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    tok.add_tokens(REPLIES)  # ordinary (not special) tokens: decoded into the completions
    tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_model(tok):
    """A one-layer Llama with random weights (a few thousand parameters)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    return LlamaForCausalLM(config)
