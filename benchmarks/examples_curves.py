"""The examples' learning curves beside random and always-WAIT (docs/ecosystem.md, "Examples").

    python -m benchmarks.examples_curves            # the documented budget; about 10 minutes on 2 cores
    python -m benchmarks.examples_curves --quick    # tiny sizes, checks the script

Runs `examples/purejaxrl_ppo.py` and `examples/purejaxrl_dqn.py` (seeds vmapped in one
program each) and `examples/cleanrl_dqn.py` (seeds one after another in a host loop) on
one NormGym id, and the random and always-WAIT policies of `examples/baselines.py` on the
same id and reward.  Writes `benchmarks/results/examples_curves.json` (each example's
curves, final returns, compile and run seconds, config; the baselines per seed) and
`examples_curves.png` beside it: each example's mean curve over seeds with its min-max
band, and the two baselines as horizontal lines.
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings

import numpy as np

from benchmarks.common import RESULTS, save
from examples import cleanrl_dqn, purejaxrl_dqn, purejaxrl_ppo
from examples.baselines import baseline_returns

ENV_ID = "NormGym-cafe-none-train-v0"
REWARD = "dense"
# (module, config class, seeds, environment steps per seed) at the documented budget.
BUDGET = {
    "purejaxrl_ppo": (purejaxrl_ppo, purejaxrl_ppo.PPOConfig, 8, 100_000),
    "purejaxrl_dqn": (purejaxrl_dqn, purejaxrl_dqn.DQNConfig, 8, 60_000),
    "cleanrl_dqn": (cleanrl_dqn, cleanrl_dqn.Args, 2, 30_000),
}


def plot(payload: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(payload["examples"]), figsize=(5 * len(payload["examples"]), 3.8), sharey=True)
    base = payload["baselines"]
    for ax, (name, result) in zip(np.atleast_1d(axes), payload["examples"].items()):
        curve = np.array([[np.nan if x is None else x for x in row] for row in result["curve"]], float)
        steps = np.array(result["steps"])
        seen = ~np.isnan(curve).all(0)  # points where some seed finished an episode
        with warnings.catch_warnings():  # all-NaN columns (no episode ended yet) are masked by `seen`
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, lo, hi = np.nanmean(curve, 0), np.nanmin(curve, 0), np.nanmax(curve, 0)
        ax.plot(steps[seen], mean[seen], label=f"{name} (mean of {curve.shape[0]} seeds)")
        ax.fill_between(steps[seen], lo[seen], hi[seen], alpha=0.25, label="min-max over seeds")
        ax.axhline(np.median(base["random"]), color="grey", ls="--", label="random")
        ax.axhline(np.median(base["always_wait"]), color="k", ls=":", label="always-WAIT")
        ax.set_title(f"{name}: compile {result['compile_s']:.0f} s, run {result['run_s']:.0f} s", fontsize=9)
        ax.set_xlabel("environment steps per seed")
        ax.legend(fontsize=7, loc="upper left")
    np.atleast_1d(axes)[0].set_ylabel("episodic return")
    fig.suptitle(f"{payload['env_id']}, {payload['reward_condition']} reward", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 seeds x 4,000 steps each: checks the script")
    p.add_argument("--name", default="examples_curves", help="result file stem in benchmarks/results/")
    args = p.parse_args(argv)
    examples = {}
    for name, (module, config_class, seeds, steps) in BUDGET.items():
        if args.quick:
            seeds, steps = 2, 4_000
        config = dataclasses.replace(config_class(env_id=ENV_ID), reward_condition=REWARD, total_steps=steps)
        result = module.run(config, seeds)
        print(
            f"{name}: final return per seed {np.round(result['final_return'], 1).tolist()}, "
            f"compile {result['compile_s']:.1f} s, run {result['run_s']:.1f} s"
        )
        examples[name] = result
    baselines = baseline_returns(ENV_ID, REWARD, seeds=2 if args.quick else 16)
    payload = {"env_id": ENV_ID, "reward_condition": REWARD, "examples": examples, "baselines": baselines}
    path = save(args.name, payload)
    plot(payload, RESULTS / f"{args.name}.png")
    print(f"wrote {path} and {args.name}.png")
    return payload


if __name__ == "__main__":
    main()
