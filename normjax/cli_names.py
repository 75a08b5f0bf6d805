"""Plain constants of the command line, so that `--help` and argument errors need no JAX import."""

CAPACITIES = (6, 8, 10)
POLICY_NAMES = ("oracle", "blind", "blind_any", "blind_polite", "random")
# The Bayesian observer newcomers (normjax.observer), for `evaluate` only.
OBSERVER_NAMES = ("bayes_map", "bayes_safe", "bayes_active")
EVIDENCE_SOURCES = ("positions", "actions")
EXPORT_PHASES = ("interaction", "seen", "unseen")
DISTRACTORS = ("none", "same_exit_door", "move1_wait1")  # = normjax.constants.HABIT_NAMES (tested)
DEFAULT_SHARE = 0.5
# The request field of an LLM endpoint's token limit (normjax.llm.client).
TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
# `normjax finetune-data` (normjax.finetune; equal to rewards.TASKS, norms.FAMILIES, harvest.HARVEST_POLICIES: tested).
FINETUNE_TASKS = ("compliant_action", "norm_judgment", "norm_selection", "action_judgment")
FAMILIES = ("access", "procedure", "coordination", "allocation")
HARVEST_POLICIES = ("oracle", "blind", "mixture", "epsilon_blind")
# `finetune-data --task sft`: the supervised cold-start corpus (normjax.finetune.sft.TASK is this name).
SFT_TASK = "sft"
# The family's training norms or its held-out norms (paper Table A4; normjax.finetune.dataset).
FINETUNE_SPLITS = ("train", "heldout")
# `normjax table` (normjax.results): its views besides the Table 1 layout, and its output formats.
TABLE_VIEWS = ("family", "norm")
TABLE_FORMATS = ("markdown", "csv", "latex", "json")
# `llm-eval --newcomer`: the paper's memory newcomer, or one of the debate study's normative modules (normjax.llm.modules).
NEWCOMERS = ("memory", "direct_edit", "infer_edit", "theory_of_mind", "contrastive")
