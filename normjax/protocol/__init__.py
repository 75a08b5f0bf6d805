"""The test protocol (docs/world.md §9): seeds and episode list (`seeds`), the
host-side scenario geometry (`geometry`) and its tables (`scenario_tables`), the jittable test-episode builder and
its holders (`scenarios`), and the runner with its metrics (`runner`)."""

from normjax.protocol.runner import (
    METRICS,
    StatefulPolicy,
    evaluate,
    format_table,
    prepare_states,
    resolve_norms,
    run_episode,
    run_episodes,
    summarize,
)
from normjax.protocol.seeds import CONDITIONS, base_seed, episode_seeds, group_orders, test_episodes

__all__ = [
    "CONDITIONS",
    "METRICS",
    "StatefulPolicy",
    "base_seed",
    "episode_seeds",
    "evaluate",
    "format_table",
    "group_orders",
    "prepare_states",
    "resolve_norms",
    "run_episode",
    "run_episodes",
    "summarize",
    "test_episodes",
]
