"""LLM / VLM newcomers (docs/llm.md; paper §4.1 and appendix "Prompts").

* `runner`: the protocol for external agents, every episode of a stage a row
  of one jitted, vmapped step (`batch`), each advancing when its own reply is
  in (`stage`);
* `agents`: `LLMAgent` (prompt, request, parse), `StatePolicyAgent`,
  `ScriptedAgent`; `turns`: what an agent sees and answers;
* `prompts`: the paper's system, interactive-stage and test-stage prompts;
  `frames`: the frame a VLM sees (arrows for intended moves);
* `parse`: the tolerant reply parser; `client`: the async OpenAI-compatible
  client (needs ``pip install "normjax[llm]"``); `settings`: its settings from
  the endpoint options of ``llm-eval``, ``llm-judge`` and ``finetune-eval``;
* `transcripts`: per-episode transcripts and resume; `judge`: belief-accuracy
  judge prompts and scores; `evaluate`: the ``normjax llm-eval`` pipeline;
* `judge_run`: ``normjax llm-judge`` (the judge through the client);
  `belief_analysis` / `belief_figures`: ``normjax llm-beliefs`` (paper
  Figure 4b, 4c).

Submodules are imported on demand, so that `normjax.llm.parse` and
`normjax.llm.prompts` work without the optional HTTP client.
"""
