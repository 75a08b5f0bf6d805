"""Stable-Baselines3's DQN beside normjax's in-graph DQN, same task, same hyperparameters.

    pip install -e ".[sb3,gym]"                        # stable-baselines3 and torch==2.13.0 (CPU)
    python -m benchmarks.sb3_compare                   # 3 norms x 100k transitions each (long on 2 cores)
    python -m benchmarks.sb3_compare --steps 20000 --norms forbidden_zone_q

Task: the newcomer on the cafe, train phase (200-step episodes with turnover, the
scripted community, sparse_penalty rewards), one norm per family by default
(forbidden_zone_q, clockwise_circulation, bend_right_1).  Hyperparameters of
docs/world.md §11 on both sides: Adam 1e-4, gamma 0.99, replay 100k, learning starts
1,000, batch 32, one update every 4 steps, hard target copy every 10,000 steps,
epsilon 1.0 -> 0.05 over the first 30%, gradient clipping 10 (global norm), Huber
loss, MLP 64-64.

* SB3: `stable_baselines3.DQN("MlpPolicy", ...)` on the Gymnasium adapter
  (`gymnasium.make("NormGym-cafe-<norm>-train-v0")`, one environment, one norm per
  run, one run after the other), on the CPU with torch.  SB3 knows no action
  mask: it explores and maximises over all five actions (an impossible move
  leaves the newcomer in place); normjax masks both by the physical action mask.
* normjax: `train.dqn.make_train` (the in-graph trainer: one `lax.scan`, the runs
  of the norms `vmap`ped in one program), compile timed apart from the run.

Throughput: transitions per second of wall time (normjax: all runs together,
compile excluded and reported).  Final tests: the protocol's 3 seen + 3 unseen
test episodes of each norm (protocol seed 0) played by the trained greedy
policy through the same evaluation program (`train.evaluate.run_population`):
SB3's torch weights are copied into normjax's DQN-MLP (`agents.networks`), checked
to give the same Q-values, and played with the masked argmax (as normjax's
final tests) and with SB3's own unmasked argmax.

Results: benchmarks/results/sb3_compare.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import save
from normjax.agents.networks import functional
from normjax.train import evaluate as ev
from normjax.train.config import DQNConfig
from normjax.train.dqn import make_train

NORMS = ("forbidden_zone_q", "clockwise_circulation", "bend_right_1")
HYPER = dict(
    learning_rate=1e-4,
    gamma=0.99,
    buffer_size=100_000,
    learning_starts=1_000,
    batch_size=32,
    train_freq=4,
    target_update=10_000,
    eps_start=1.0,
    eps_end=0.05,
    eps_fraction=0.3,
    max_grad_norm=10.0,
)


def config(norms, steps: int, seed: int) -> DQNConfig:
    return DQNConfig(
        name="sb3_compare",
        arch="mlp",
        norms=tuple(norms),
        total_steps=steps,
        validation_at=(),
        seed=seed,
        layout="cafe",
        episode_steps=200,
        **HYPER,
    )


# ---------------------------------------------------------------------------
# normjax


def train_normjax(cfg: DQNConfig):
    """The in-graph trainer over all norms at once -> (trainer, q_params [runs], timing)."""
    tr = make_train(cfg)
    carry = jax.block_until_ready(jax.jit(tr.init_population)(jax.random.PRNGKey(cfg.seed)))
    n_chunks = cfg.total_steps // cfg.train_freq
    fn = jax.jit(lambda c: tr.run_chunks(c, tr.specs, n_chunks), donate_argnums=0)
    t0 = time.perf_counter()
    compiled = fn.lower(carry).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    runners, _ = jax.block_until_ready(compiled(carry))
    run_s = time.perf_counter() - t0
    n = len(tr.rows)
    return (
        tr,
        tr.q_dense(runners),
        {"compile_s": compile_s, "run_s": run_s, "runs": n, "transitions_per_s": n * cfg.total_steps / run_s},
    )


# ---------------------------------------------------------------------------
# SB3


def train_sb3(norm: str, cfg: DQNConfig):
    """SB3 DQN on the Gymnasium adapter -> (model, timing)."""
    import gymnasium
    import torch
    from stable_baselines3 import DQN

    import normjax.wrappers.gymnasium  # noqa: F401  (registers the ids)

    env = gymnasium.make(f"NormGym-{cfg.layout}-{norm}-train-v0", capacity=cfg.capacity)
    model = DQN(
        "MlpPolicy",
        env,
        learning_rate=cfg.learning_rate,
        buffer_size=cfg.buffer_size,
        learning_starts=cfg.learning_starts,
        batch_size=cfg.batch_size,
        tau=1.0,
        gamma=cfg.gamma,
        train_freq=cfg.train_freq,
        gradient_steps=1,
        target_update_interval=cfg.target_update,
        exploration_fraction=cfg.eps_fraction,
        exploration_initial_eps=cfg.eps_start,
        exploration_final_eps=cfg.eps_end,
        max_grad_norm=cfg.max_grad_norm,
        policy_kwargs=dict(net_arch=[64, 64]),
        seed=cfg.seed,
        device="cpu",
        verbose=0,
    )
    t0 = time.perf_counter()
    model.learn(total_timesteps=cfg.total_steps)
    run_s = time.perf_counter() - t0
    env.close()
    return model, {
        "run_s": run_s,
        "transitions_per_s": cfg.total_steps / run_s,
        "torch_threads": torch.get_num_threads(),
    }


def sb3_params(model, tr, obs_size: int):
    """SB3's Q-network weights as normjax DQN-MLP parameters (`agents.networks`), checked."""
    sd = {k: v.detach().cpu().numpy() for k, v in model.q_net.q_net.state_dict().items()}
    linear = sorted({k.split(".")[0] for k in sd}, key=int)  # Sequential indices of the 3 Linear layers
    if len(linear) != 3:
        raise ValueError(f"expected an MLP with 3 linear layers, got {sorted(sd)}")
    values = {}
    for name, i in zip(("l1", "l2", "out"), linear):
        values[f"['{name}']['kernel']"] = sd[f"{i}.weight"].T  # torch [out, in] -> [in, out]
        values[f"['{name}']['bias']"] = sd[f"{i}.bias"]
    template = functional("mlp", obs_size)[0](jax.random.PRNGKey(0))  # the network's own parameters

    def fill(path, leaf):
        key = jax.tree_util.keystr(path).replace(".value", "")
        return jnp.asarray(values[key], leaf.dtype).reshape(leaf.shape)

    params = jax.tree_util.tree_map_with_path(fill, template)
    import torch

    obs = np.random.default_rng(0).uniform(-1, 1, (16, obs_size)).astype(np.float32)
    with torch.no_grad():
        q_torch = model.q_net(torch.as_tensor(obs)).numpy()
    q_jax = np.asarray(tr.apply(params, jnp.asarray(obs)))
    if not np.allclose(q_torch, q_jax, rtol=1e-4, atol=1e-4):
        raise AssertionError(f"copied weights disagree: max |dq| = {np.abs(q_torch - q_jax).max()}")
    return params


# ---------------------------------------------------------------------------
# Final tests


def final_tests(tr, q_params, norm_ids, masked: bool = True) -> list[dict]:
    """Protocol's 3 seen + 3 unseen episodes per run -> joint / task success (%) per run."""
    if not masked:  # SB3's own greedy action: argmax over all five actions
        tr = dataclasses.replace(tr, greedy_policy=lambda qp: lambda obs, key: jnp.argmax(tr.apply(qp, obs)))
    per_run = ev.episodes_for(norm_ids)
    raw = ev.run_population(tr, q_params, per_run)
    out = []
    for i, eps in enumerate(per_run):
        row = {}
        for cond in ("seen", "unseen"):
            sel = np.array([e["condition"] == cond for e in eps])
            goals, sanc = raw["goals"][i][sel], raw["sanctions"][i][sel]
            row[cond] = {
                "joint": 100.0 * float(np.mean((goals == 2) & (sanc == 0))),
                "task": 100.0 * float(np.mean(goals / 2.0)),
            }
        out.append(row)
    return out


def main(argv=None) -> dict:
    from normjax import configure

    configure()  # the code generation of the `normjax` command (normjax/xla_cpu.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--norms", nargs="+", default=list(NORMS))
    ap.add_argument("--steps", type=int, default=100_000, help="transitions per norm (a multiple of 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-sb3", action="store_true")
    ap.add_argument("--results-name", default="sb3_compare", help="JSON file name in benchmarks/results/")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    cfg = config(args.norms, args.steps, args.seed)  # validates names and values
    norm_ids = list(cfg.norm_ids)
    payload = {
        "norms": list(args.norms),
        "transitions_per_norm": args.steps,
        "seed": args.seed,
        "hyperparameters": dict(HYPER, net_arch=[64, 64], loss="huber"),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }

    tr, q_params, timing = train_normjax(cfg)
    payload["normjax"] = dict(timing, final_tests=dict(zip(args.norms, final_tests(tr, q_params, norm_ids))))
    print(
        f"normjax: {timing['runs']} runs x {args.steps:,} transitions in {timing['run_s']:.1f}s "
        f"(+ {timing['compile_s']:.1f}s compile): {timing['transitions_per_s']:.0f} transitions/s"
    )

    if not args.skip_sb3:
        runs = {}
        for norm in args.norms:
            model, t = train_sb3(norm, cfg)
            params = sb3_params(model, tr, _obs_size(cfg))
            runs[norm] = dict(t, params=params)
            print(f"sb3 {norm}: {args.steps:,} transitions in {t['run_s']:.1f}s: {t['transitions_per_s']:.0f}/s")
        stacked = jax.tree.map(lambda *x: jnp.stack(x), *[runs[n]["params"] for n in args.norms])
        masked = final_tests(tr, stacked, norm_ids, masked=True)
        plain = final_tests(tr, stacked, norm_ids, masked=False)
        payload["sb3"] = {
            n: {
                "run_s": runs[n]["run_s"],
                "transitions_per_s": runs[n]["transitions_per_s"],
                "torch_threads": runs[n]["torch_threads"],
                "final_tests_masked_argmax": masked[i],
                "final_tests_argmax": plain[i],
            }
            for i, n in enumerate(args.norms)
        }
        payload["sb3_total"] = {
            "run_s": sum(runs[n]["run_s"] for n in args.norms),
            "transitions_per_s": len(args.norms) * args.steps / sum(runs[n]["run_s"] for n in args.norms),
        }

    nj = payload["normjax"]
    print(
        f"\nthroughput: normjax {nj['transitions_per_s']:.0f} transitions/s ({nj['runs']} runs in one program; "
        f"compile {nj['compile_s']:.1f}s apart)",
        end="",
    )
    if "sb3" in payload:
        ratio = nj["transitions_per_s"] / payload["sb3_total"]["transitions_per_s"]
        payload["speedup_normjax_over_sb3"] = ratio
        print(f", SB3 {payload['sb3_total']['transitions_per_s']:.0f} transitions/s (one run at a time): {ratio:.1f}x")
    print(f"\n{'final tests (%)':<34} {'seen J':>6} {'T':>5}   {'unseen J':>8} {'T':>5}")
    for norm in args.norms:
        rows = [("normjax", nj["final_tests"][norm])]
        if "sb3" in payload:
            rows += [
                ("sb3, masked argmax", payload["sb3"][norm]["final_tests_masked_argmax"]),
                ("sb3, argmax", payload["sb3"][norm]["final_tests_argmax"]),
            ]
        for who, t in rows:
            print(
                f"{norm + ' ' + who:<34} {t['seen']['joint']:>6.1f} {t['seen']['task']:>5.1f}   "
                f"{t['unseen']['joint']:>8.1f} {t['unseen']['task']:>5.1f}"
            )
    payload["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if not args.no_save:
        print(f"wrote {save(args.results_name, payload)}")
    return payload


def _obs_size(cfg: DQNConfig) -> int:
    from normjax.world.observation import obs_size

    return obs_size(cfg.capacity)


if __name__ == "__main__":
    main()
