"""TRL's RLOO trainer takes a `finetune-data` file unchanged (issue 52; docs/finetune.md, "With TRL").

A mixed-task file (`--task action_judgment`: Compliant Action and Norm Judgment records in
one file, text-only) is written by the CLI, loaded with `normjax.finetune.schema.load`, and
trained on for a few RLOO updates with `normjax.finetune.rewards.reward_funcs` as the reward.
The model and tokenizer are built here with random weights (no download, HF_HUB_OFFLINE=1).
Slow tier: 142 s on a 2-core VM with an empty JAX compilation cache (74 s with the tests'
cache filled), of which the harvest program's compile is most; TRL's part about 20 s.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

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


def test_rloo_trains_on_a_mixed_task_file(tmp_path, monkeypatch):
    # skipped inside the test, not at collection: importing trl costs seconds in the default tier too
    pytest.importorskip("datasets", reason="needs the [finetune] extra")
    torch = pytest.importorskip("torch", reason="needs the [finetune-train] extra")
    pytest.importorskip("transformers", reason="needs the [finetune-train] extra")
    pytest.importorskip("trl", reason="needs the [finetune-train] extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    tok = tiny_tokenizer()
    model = tiny_model(tok)

    # docs/finetune.md's "With TRL" block, call for call
    from trl import RLOOConfig, RLOOTrainer

    from normjax.cli import main
    from normjax.finetune.rewards import reward_funcs
    from normjax.finetune.schema import load

    main(["finetune-data", "--task", "action_judgment", "--family", "access", "--split", "train",
          "--examples", "16", "--text-only", "--batch", "4", "--steps", "60", "--no-progress", "--out", "data"])  # fmt: skip
    train = load(["data/action_judgment_access_train.jsonl"])  # the file as written, any mix of tasks
    args = RLOOConfig(output_dir="out", num_generations=4, per_device_train_batch_size=8, max_completion_length=2,
                      max_steps=3, learning_rate=0.05, beta=0.0, logging_steps=1, save_strategy="no",
                      report_to="none", use_cpu=True, seed=0, disable_tqdm=True)  # fmt: skip
    trainer = RLOOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=train, processing_class=tok)

    from normjax.finetune import rewards

    graded = []  # (task, completion text, reward) of every call reward_funcs makes

    def spy(completion, record):
        value = real(completion, record)
        graded.append((record["task"], rewards.completion_text(completion), value))
        return value

    real = rewards.reward
    monkeypatch.setattr(rewards, "reward", spy)  # reward_funcs grades each completion through `reward`
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer.train()

    assert trainer.state.global_step == 3
    assert len(graded) == 3 * 8
    assert {t for t, _, _ in graded} == {"compliant_action", "norm_judgment"}  # both tasks of the file
    assert all(-0.1 <= r <= 1.1 for _, _, r in graded)  # the documented range (docs/finetune.md, Rewards)
    assert len({r for _, _, r in graded}) > 1
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 3 and all(-0.1 <= h["reward"] <= 1.1 for h in logged)
    assert any(k.startswith("rewards/reward_funcs") for k in logged[0])
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "no parameter moved in three updates"
