"""Fine-tuning data and verifiers for the paper's four training tasks (§5, appendix §12-13).

* `normjax.finetune.harvest`: interaction-phase episodes with per-step labels, in one compiled program;
* `normjax.finetune.text` / `records`: the prompts and records (host code);
* `normjax.finetune.frames`: the records' frames, as `llm-eval`'s VLM mode draws them;
* `normjax.finetune.readback`: newcomer states read back from `llm-eval` transcripts (replayed);
* `normjax.finetune.state`: the structured ``state`` of a record (what its prompt was built from);
* `normjax.finetune.balance`: judgment records in (violation, compliant) pairs per norm and cue;
* `normjax.finetune.dataset`: one task's file for one family and split, and its manifest;
* `normjax.finetune.sft`: the supervised cold-start corpus (chat examples) from `llm-eval` runs or the oracle;
* `normjax.finetune.schema`: one `datasets` schema for every task's records;
* `normjax.finetune.baselines`: shortcut and constant baselines of a file (`finetune-baselines`);
* `normjax.finetune.rewards`: the verifiers, plain Python (no JAX), in the calling
  convention of RL fine-tuning libraries.

Nothing is imported here.  The verifiers run no JAX code (they read the records' stored
fields); importing any `normjax` module does import JAX (`normjax/__init__.py`).  See docs/finetune.md.
"""
