"""The analysis after a run of external agents (`normjax.runtime`'s transcripts; docs/llm.md).

* `judge`: belief-accuracy judge prompts and scores (``llm-eval --export-judge``,
  ``--judge-scores``; also the export of `normjax play`'s runs);
* `judge_run`: ``normjax llm-judge`` (the judge through `normjax.llm.client`);
* `belief_analysis`: ``normjax llm-beliefs`` (paper Figure 4b, 4c), drawn by
  `belief_figures`;
* `observer_replay`, `observer_alignment`: ``llm-beliefs --observer``, the ideal
  observer on exactly the newcomer's evidence and the belief change per bit.

Submodules are imported on demand.
"""
