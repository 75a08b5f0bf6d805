"""The `normjax` command line.

    normjax train    --config configs/cpu_default [key=value ...] [--out runs/NAME]
    normjax report   runs/NAME
    normjax evaluate --policy oracle --out oracle.json
    normjax evaluate --policy oracle --distractor move1_wait1 --distractor-share 0.5 --out d.json
    normjax export   --norm bend_right_1 --phase seen --seed 0 --policy blind --out ep.jsonl
    normjax export   --norms all --phases interaction seen unseen --episodes 0 --out episodes/
    normjax llm-eval --base-url http://127.0.0.1:8000/v1 --model NAME --out runs/llm/NAME
    normjax llm-judge --run runs/llm/NAME --base-url http://127.0.0.1:8001/v1 --model JUDGE
    normjax llm-beliefs --run runs/llm/NAME
    normjax identify --out results/identify
    normjax rollout  --layout cafe --norm forbidden_zone_q --steps 60 --gif out.gif
    normjax render   --layout bank --out bank.png
    normjax finetune-data --task norm_judgment --family access --split train --examples 1000 --out data/
    normjax play     --norms forbidden_zone_q --out runs/human
    normjax play     --assign 2 --study-seed 0 --out runs/study     (a study: consent page, 2 norms each)
    normjax play-export --out runs/study --compare oracle.json runs/llm/NAME
    normjax table    results/cpu_paper_mlp_1m/sparse_penalty oracle.json runs/llm/NAME --paper

Every command is a thin `cmd_*` function over the library (normjax.commands; the `llm-*` commands in
normjax.llm.command, `finetune-*`, `play*` and `table` in their packages' `command` modules), and every command keeps a
persistent JAX compilation cache (normjax.cache; default ~/.cache/normjax/jax, `--cache-dir
DIR`, `--no-cache`), so a repeated command loads its programs instead of compiling them.

Names are checked before anything is traced, and an unknown layout or norm
lists the valid ones.
"""

from __future__ import annotations

import argparse
import sys

from normjax.cli_names import (
    CAPACITIES,
    DEFAULT_SHARE,
    DISTRACTORS,
    EVIDENCE_SOURCES,
    EXPORT_PHASES,
    OBSERVER_NAMES,
    POLICY_NAMES,
    TOKEN_PARAMS,
)
from normjax.commands import (  # noqa: F401 (_norm_list re-exported)
    _norm_list,
    cmd_evaluate,
    cmd_export,
    cmd_final_test,
    cmd_identify,
    cmd_render,
    cmd_report,
    cmd_rollout,
    cmd_train,
)


def _cache_options() -> argparse.ArgumentParser:
    """--cache-dir / --no-cache, shared by every command (normjax.cache)."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("compilation cache")
    g.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="persistent JAX compilation cache (default: $NORMJAX_CACHE_DIR, else "
        "$XDG_CACHE_HOME/normjax/jax or ~/.cache/normjax/jax)",
    )
    g.add_argument("--no-cache", action="store_true", help="no persistent compilation cache (also NORMJAX_NO_CACHE=1)")
    return p


def _distractor_options() -> argparse.ArgumentParser:
    """--distractor / --distractor-share (docs/world.md §8.5), for evaluate, export, train and llm-eval."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("distractor habits of norm-aware background agents")
    g.add_argument("--distractor", default=None, choices=DISTRACTORS, help="the habit (default: none)")
    g.add_argument(
        "--distractor-share",
        type=float,
        default=None,
        metavar="S",
        help=f"share in [0, 1] of norm-aware background agents with it (default {DEFAULT_SHARE})",
    )
    return p


def _client_options(
    temperature: float = 0.7,
    temperature_help: str = "sampling temperature (the paper's)",
) -> argparse.ArgumentParser:
    """The endpoint and request options of normjax.llm.client.ClientConfig, for llm-eval and llm-judge."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("endpoint and requests (normjax.llm.client)")
    g.add_argument(
        "--base-url",
        required=True,
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
        "(API key from NORMJAX_LLM_API_KEY or OPENAI_API_KEY)",
    )
    g.add_argument("--model", required=True)
    g.add_argument("--concurrency", type=int, default=64, help="requests in flight at most")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per request attempt")
    g.add_argument("--max-retries", type=int, default=4, help="retries of a request after 429 / 5xx / timeouts")
    g.add_argument("--temperature", type=float, default=temperature, help=temperature_help)
    g.add_argument("--max-tokens", type=int, default=4048, help="token limit per reply (the paper's for the newcomer)")
    g.add_argument(
        "--max-tokens-field",
        choices=TOKEN_PARAMS,
        default="max_tokens",
        help="the request field of the token limit (OpenAI reasoning models want max_completion_tokens)",
    )
    g.add_argument(
        "--no-temperature",
        action="store_true",
        help="send no temperature (endpoints that refuse one; the server's default applies)",
    )
    g.add_argument(
        "--extra-body",
        default=None,
        metavar="JSON",
        help='a JSON object of extra request fields, e.g. \'{"reasoning_effort": "low"}\'',
    )
    g.add_argument(
        "--max-error-rate",
        type=float,
        default=0.2,
        metavar="R",
        help="stop (exit 3) once more than this share of the last --error-window requests failed",
    )
    g.add_argument(
        "--error-window",
        type=int,
        default=100,
        metavar="N",
        help="the number of recent requests the error rate is taken over",
    )
    return p


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where the help already names it or there is none."""

    def _get_help_string(self, action):
        text = action.help or ""
        no_default = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if "default" in text or no_default:
            return text
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="normjax", description="NormGym in JAX")
    sub = ap.add_subparsers(dest="command", required=True)
    cache = [_cache_options()]  # every command takes --cache-dir / --no-cache

    r = sub.add_parser("rollout", parents=cache, help="simulate an episode with random joint actions")
    r.add_argument("--layout", default="cafe")
    r.add_argument("--norm", default="forbidden_zone_q", help="norm name, or 'none'")
    r.add_argument("--steps", type=int, default=60)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--capacity", type=int, default=10, choices=CAPACITIES)
    r.add_argument("--reward", default="sparse_penalty")
    r.add_argument("--gif", default=None, help="write the rollout as an animated GIF")
    r.add_argument("--cell-px", type=int, default=32)
    r.add_argument("--fps", type=float, default=4)
    r.set_defaults(fn=cmd_rollout)

    d = sub.add_parser("render", parents=cache, help="render the first frame of an episode to PNG")
    d.add_argument("--layout", default="cafe")
    d.add_argument("--norm", default="none")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--cell-px", type=int, default=40)
    d.add_argument("--out", default="frame.png")
    d.set_defaults(fn=cmd_render)
    distract = [_distractor_options()]
    t = sub.add_parser(
        "train", parents=cache + distract, help="train a DQN population (docs/world.md §10), then run the final tests"
    )
    t.add_argument("--config", required=True, help="a JSON file in configs/ (suffix optional)")
    t.add_argument("overrides", nargs="*", help="key=value config overrides")
    t.add_argument("--out", default=None, help="run directory (default runs/<config name>)")
    t.add_argument("--no-resume", action="store_true", help="ignore existing checkpoints")
    t.add_argument("--no-progress", action="store_true")
    t.add_argument(
        "--checkpoint-every",
        type=int,
        default=1,
        metavar="BLOCKS",
        help="save a checkpoint every BLOCKS compiled blocks (and at the end); saving the "
        "replay memory takes seconds per save on large populations",
    )
    t.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="save no checkpoints (and resume from none): for throwaway or timing runs",
    )
    t.add_argument(
        "--stop-after",
        type=int,
        default=None,
        metavar="TRANSITIONS",
        help="stop once the block that reaches TRANSITIONS per run is done, with a checkpoint "
        "(exit 0); the same command without it resumes there: a job within a time limit",
    )
    t.add_argument(
        "--distributed",
        action="store_true",
        help="one process of a multi-process run (jax.distributed; docs/distributed.md)",
    )
    t.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="with --distributed: process 0's address (default: auto-detected, e.g. under SLURM)",
    )
    t.add_argument("--num-processes", type=int, default=None, metavar="N", help="with --distributed")
    t.add_argument("--process-id", type=int, default=None, metavar="I", help="with --distributed: 0..N-1")
    t.set_defaults(fn=cmd_train)

    rp = sub.add_parser("report", parents=cache, help="tables and figures of a training run")
    rp.add_argument(
        "run_dir",
        nargs="+",
        help="run directories (or parents of per-K runs); several are reported side by side, "
        "each run group (architecture, reward condition, K) on its own curves",
    )
    rp.add_argument(
        "--figures",
        default=None,
        metavar="DIR",
        help="where to write the figures (default: the run directory, or the runs' common parent)",
    )
    rp.add_argument(
        "--markdown",
        action="store_true",
        help="only the final tests as markdown tables, pooled over the directories (chunks of one run)",
    )
    rp.set_defaults(fn=cmd_report)

    ft = sub.add_parser(
        "final-test",
        parents=cache,
        help="re-run a finished training run's final tests from its final_params.npz (e.g. on new scenarios)",
    )
    ft.add_argument("run_dir", nargs="+", help="run directories holding final_params.npz and config.json")
    ft.set_defaults(fn=cmd_final_test)

    e = sub.add_parser(
        "evaluate", parents=cache + distract, help="run the test protocol (3 seen + 3 unseen episodes per norm)"
    )
    e.add_argument(
        "--policy",
        required=True,
        choices=POLICY_NAMES + OBSERVER_NAMES,
        help="newcomer policy: norm-aware oracle, norm-blind planner, blind_any (random shortest route on the "
        "rules' move graph), blind_polite (the same, never into others' cells or announced moves), random, or a Bayesian "
        "observer that learns in the interaction phase (docs/observer.md)",
    )
    e.add_argument("--norms", nargs="+", default=None, metavar="NAME", help="norm names (default: all 50)")
    e.add_argument("--seed", type=int, default=0, help="protocol seed (0 = canonical)")
    e.add_argument("--capacity", type=int, default=10, choices=CAPACITIES)
    e.add_argument("--out", required=True, help="write the result JSON here")
    e.add_argument("--eps", type=float, default=0.0, help="bayes_*: sanction-flag noise rate in [0, 0.5)")
    e.add_argument(
        "--threshold",
        type=float,
        default=0.05,
        help="bayes_safe: norms above this posterior must all permit the action",
    )
    e.add_argument(
        "--evidence",
        choices=EVIDENCE_SOURCES,
        default="positions",
        help="bayes_*: read moves from positions, or from the public effective actions",
    )
    e.set_defaults(fn=cmd_evaluate)

    i = sub.add_parser(
        "identify", parents=cache, help="how well the Bayesian observer identifies each norm in its interaction phase"
    )
    i.add_argument("--norms", nargs="+", default=None, metavar="NAME", help="norm names (default: all 50)")
    i.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="protocol seeds (default 0 1 2)")
    i.add_argument("--eps", type=float, default=0.0, help="sanction-flag noise rate in [0, 0.5)")
    i.add_argument("--evidence", choices=EVIDENCE_SOURCES, default="positions")
    i.add_argument(
        "--learner",
        choices=("bayes_map", "bayes_active"),
        default="bayes_map",
        help="the newcomer during the interaction phase",
    )
    i.add_argument("--capacity", type=int, default=10, choices=CAPACITIES)
    i.add_argument("--out", default="results/identify", help="directory for identify.json and the figures")
    i.set_defaults(fn=cmd_identify)

    x = sub.add_parser(
        "export",
        parents=cache + distract,
        help="write episodes as trajectory JSON Lines (docs/world.md §12)",
        description="One episode (--norm, --phase, --seed, --policy, --out FILE), or many in one "
        "compiled program per phase kind and policy (--norms, --phases, --seeds, "
        "--policies, --episodes; --out DIR, one file per episode, manifest.json).",
    )
    x.add_argument("--norm", default=None, help="norm name, or 'none'")
    x.add_argument("--phase", choices=EXPORT_PHASES, default="interaction")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--policy", choices=POLICY_NAMES, default="oracle")
    x.add_argument(
        "--episode",
        type=int,
        default=None,
        choices=(0, 1, 2),
        help="export the protocol's episode (--seed is then the protocol seed)",
    )
    x.add_argument("--norms", nargs="+", default=None, metavar="NAME", help="several norms ('all': the 50)")
    x.add_argument("--phases", nargs="+", default=None, choices=EXPORT_PHASES)
    x.add_argument("--seeds", nargs="+", type=int, default=None, metavar="S")
    x.add_argument("--policies", nargs="+", default=None, choices=POLICY_NAMES)
    x.add_argument(
        "--episodes",
        nargs="+",
        type=int,
        default=None,
        choices=(0, 1, 2),
        help="protocol episodes of the test phases (seeds are then protocol seeds; "
        "interaction is written once, as episode 0)",
    )
    x.add_argument("--out", required=True, help="output .jsonl file (one episode) or directory (several)")
    x.add_argument(
        "--frames",
        default=None,
        help="directory for PNG frames (frame_000.png, ...; several episodes: one subdirectory each)",
    )
    x.add_argument("--layout", default=None, help="override the phase's layout")
    x.add_argument("--capacity", type=int, default=10, choices=CAPACITIES)
    x.add_argument(
        "--group",
        type=int,
        default=None,
        choices=(0, 1, 2),
        help="newcomer group in test phases (default: seed %% 3, or the protocol's)",
    )
    x.add_argument("--steps", type=int, default=None, help="override the episode length")
    x.add_argument("--cell-px", type=int, default=32)
    x.add_argument(
        "--max-batch",
        type=int,
        default=None,
        metavar="N",
        help="several episodes: at most N per compiled call (default 64; memory grows with N)",
    )
    x.set_defaults(fn=cmd_export)

    from normjax.llm.command import add_parsers as llm_parsers

    llm_parsers(sub, cache, distract, _client_options, _DefaultsFormatter)

    from normjax.finetune.command import add_parsers as finetune_parsers

    finetune_parsers(sub, cache, _client_options(0.0, "sampling temperature (0: greedy, Table A5's accuracy)"))

    from normjax.play.command import add_parsers as play_parsers
    from normjax.results.command import add_parser as table_parser

    play_parsers(sub, cache, _DefaultsFormatter)
    table_parser(sub, cache, _DefaultsFormatter)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from normjax.cache import configure_cache
    from normjax.xla_cpu import configure

    configure()  # the command's own process: the faster CPU threefry (normjax/xla_cpu.py), same bits
    configure_cache(args.cache_dir, args.no_cache)  # before anything compiles
    try:
        return args.fn(args)
    except (ValueError, MemoryError) as e:  # bad names / values, a replay too large: a clear message
        print(f"normjax: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
