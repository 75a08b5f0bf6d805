"""Test doubles shared by the tests and the benchmarks, importable from the installed package.

`fake_openai`: a scripted OpenAI-compatible server (fault and latency injection);
`fault_replay`: replaying a faulty LLM run's errored decisions; `scenario_checker`: an
independent check (own map reader, own norm rules) that no static-norm test episode can be
passed by accident; `blind_check`: the three norm-blind newcomers run on test episodes with tie-break seeds;
`play_driver`: a `normjax play` server driven over HTTP. Nothing in normjax imports this package.
"""
