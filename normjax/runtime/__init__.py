"""The host runtime for external agents (docs/llm.md, docs/play.md): the protocol played on
the host by anything behind ``act(turns, ctx)`` — an LLM (`normjax.llm`), a person
(`normjax.play`) — and the transcripts that `normjax.finetune` reads back.

* `runner`: the protocol for external agents, every episode of a stage a row
  of one jitted, vmapped step (`batch`, its programs through the executable
  cache: `programs`), each advancing when its own reply is in (`stage`);
* `agents`: the agent interface (`StepContext`, `checked`) and the agents
  without a model, `StatePolicyAgent` and `ScriptedAgent`;
* `turns`: what an agent sees and answers (`lazy`: the same, built on first
  access from the packed host rows); `frames`: the frame a VLM sees (arrows
  for intended moves);
* `transcripts`: per-episode transcripts, run settings and resume.

Submodules are imported on demand.
"""
