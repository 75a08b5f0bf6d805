"""Fixed probe set of a DQN run: random-policy transitions for TD-loss and Q curves.

The training TD loss and Q mean (`metrics.jsonl`) are measured on replay
minibatches whose distribution drifts with the policy.  The probe set is a
fixed sample instead: per run, `n` transitions of a uniformly random newcomer
(all five actions, as exploration samples) in training episodes of the run's
own norm, reward condition and layout (200 steps with turnover).  At every
metrics point the driver reports, per run, the mean Huber TD loss on the probe
transitions (target network and physically masked max as in training) and the
mean max-Q over possible actions of the probe states.

Episode keys come from `fold_in(PRNGKey(seed_base), PROBE_TAG)`, a key stream
separate from the integer-seeded training episodes, so the probes never
repeat training episodes.  Runs of the same norm and seed share their
trajectories across reward conditions and architectures (their rewards follow
each run's condition).  The set is written once with the run (`probes.npz`)
and read back on resume, so a resumed run measures the same states.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from normjax import constants as C
from normjax import salts
from normjax.agents.networks import action_mask, masked_max
from normjax.env.episode import StepKeys, episode_step, fixed_action, start_episode
from normjax.train.programs import cached
from normjax.world.observation import observe
from normjax.world.state import WorldConfig
from normjax.world.step import reset_world, truncated

PROBE_TAG = salts.PROBE_EPISODES  # "PROB": separates probe episodes from the integer-seeded training ones
FIELDS = ("obs", "action", "reward", "next_obs", "terminated")


def _collect_one(spec, n: int, capacity: int) -> dict:
    """`n` random-policy transitions of one run (spec: the run's RunSpec)."""
    cfg = WorldConfig(capacity=capacity)
    p = spec.params
    base = jax.random.fold_in(jax.random.PRNGKey(spec.seed_base), PROBE_TAG)
    act = jax.random.fold_in(jax.random.PRNGKey(spec.seed_base), PROBE_TAG + 1)

    def reset(episode):
        state = reset_world(jax.random.fold_in(base, episode), p, cfg)
        return state, observe(state, p).flat()

    def step(carry, t):
        state, obs, episode = carry
        # The probe set's own key order (act, community, world): stored sets stay reproducible.
        k_act, k_comm, k_world = jax.random.split(jax.random.fold_in(act, t), 3)
        action = jax.random.randint(k_act, (), 0, C.N_ACTIONS)
        # A fresh episode carry: every probe step starts unfinished (a finished episode was reset).
        keys = StepKeys(community=k_comm, policy=k_act, world=k_world)
        after, info = episode_step(keys, start_episode(state), p, fixed_action(action))
        nstate, term = after.state, after.done
        nobs = observe(nstate, p).flat()
        item = dict(obs=obs, action=action, reward=info.reward[0], next_obs=nobs, terminated=term.astype(jnp.float32))
        done = term | truncated(nstate, p)
        rstate, robs = reset(episode + 1)
        state = jax.tree.map(lambda a, b: jnp.where(done, a, b), rstate, nstate)
        return (state, jnp.where(done, robs, nobs), episode + done), item

    state, obs = reset(jnp.int32(0))
    _, items = jax.lax.scan(step, (state, obs, jnp.int32(0)), jnp.arange(n))
    return items


@functools.cache
def _collector(n: int, capacity: int):
    # One jitted program per (n, capacity) for the process: a resumed or repeated run traces it once.
    return jax.jit(jax.vmap(lambda s: _collect_one(s, n, capacity)))


def collect(specs, n: int, capacity: int) -> dict[str, np.ndarray]:
    """Probe transitions of every run of a member: arrays [runs, n, ...] (numpy)."""
    out = cached("train-probes", _collector(int(n), int(capacity)), n=int(n), capacity=int(capacity))(specs)
    return {k: np.asarray(v) for k, v in out.items()}


def load_or_collect(
    path: Path, members_specs, n: int, capacity: int, write: bool = True, fresh: bool = False
) -> list[dict]:
    """The run's probe sets, one per population member; read from `path` when it exists (unless `fresh`)."""
    path = Path(path)
    if path.exists() and not fresh:
        with np.load(path) as z:
            sets = [{f: z[f"m{i}_{f}"] for f in FIELDS} for i in range(len(members_specs)) if f"m{i}_obs" in z]
        want = [(int(s.norm_id.shape[0]), n) for s in members_specs]
        have = [tuple(s["obs"].shape[:2]) for s in sets]
        if have != want:
            raise ValueError(
                f"{path} holds probe sets of (runs, states) {have}, the config needs {want}; "
                "remove the file or train into a new run directory"
            )
        return sets
    sets = [collect(specs, n, capacity) for specs in members_specs]
    if write:
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, **{f"m{i}_{f}": s[f] for i, s in enumerate(sets) for f in FIELDS})
        tmp.replace(path)  # atomic: a killed run never leaves half a probe set
    return sets


RUNS_PER_PASS = 5


def make_stats(apply, gamma: float):
    """jitted (q_params [runs], target_params [runs], probes [runs, n]) -> (td_loss [runs], max_q [runs])."""

    def one(qp, tp, pr):
        q = apply(qp, pr["obs"])
        q_a = jnp.take_along_axis(q, pr["action"][:, None], axis=1)[:, 0]
        nxt = masked_max(apply(tp, pr["next_obs"]), action_mask(pr["next_obs"]))
        target = pr["reward"] + gamma * (1.0 - pr["terminated"]) * nxt
        loss = optax.huber_loss(q_a, target).mean()
        return loss, masked_max(q, action_mask(pr["obs"])).mean()

    # A few runs at a time: a CNN's patch tensors for 1,000 probes are ~0.2 GB per
    # run, so all 50 runs at once (one vmap) took over 10 GB.
    return jax.jit(lambda qp, tp, pr: jax.lax.map(lambda a: one(*a), (qp, tp, pr), batch_size=RUNS_PER_PASS))
