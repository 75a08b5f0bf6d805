"""LLM / VLM newcomers (docs/llm.md; paper §4.1 and appendix "Prompts").

* `agents`: `LLMAgent` (prompt, request, parse), an external agent of the
  host runtime (`normjax.runtime.runner`, which plays the protocol);
* `prompts`: the paper's system, interactive-stage and test-stage prompts;
* `parse`: the tolerant reply parser; `client`: the async OpenAI-compatible
  client (needs ``pip install "normjax[llm]"``); `settings`: its settings from
  the endpoint options of ``llm-eval``, ``llm-judge`` and ``finetune-eval``;
* `modules`: the debate study's normative modules around `LLMAgent`
  (``llm-eval --newcomer``), their prompts in `module_prompts`;
* `evaluate`: the ``normjax llm-eval`` pipeline.

The judge and the belief analysis after a run are `normjax.analysis`.
Submodules are imported on demand, so that `normjax.llm.parse` and
`normjax.llm.prompts` work without the optional HTTP client.
"""
