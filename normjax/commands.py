"""The `normjax` commands: one thin `cmd_*` function per subcommand over the library.

`normjax.cli` builds the parser and dispatches here; names and values are
checked before anything is traced (an unknown layout or norm lists the valid ones).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from normjax.cli_names import DEFAULT_SHARE, DISTRACTORS, OBSERVER_NAMES


def _distractor(args) -> dict:
    """{distractor, distractor_share} of the command line, validated before tracing."""
    from normjax.world.habits import check_distractor

    name, share = args.distractor or "none", args.distractor_share
    if share is not None and name == "none":
        raise ValueError(f"--distractor-share={share} needs --distractor; allowed: {', '.join(DISTRACTORS[1:])}")
    share = (DEFAULT_SHARE if name != "none" else 0.0) if share is None else share
    check_distractor(name, share)
    return dict(distractor=name, distractor_share=float(share))


def _norm_arg(name: str) -> int:
    from normjax.norms import norm_id

    return norm_id(name)


def _layout_arg(name: str) -> int:
    from normjax.layouts.tables import layout_id

    return layout_id(name)


def _norm_list(names) -> list[int] | None:
    """Norm names or ids from the command line (None = all 50), checked before tracing."""
    if not names:
        return None
    from normjax.protocol import resolve_norms

    return resolve_norms(int(n) if n.isdigit() else n for n in names)


def cmd_rollout(args) -> int:
    import jax
    import numpy as np

    from normjax.interop.render import render_rollout, save_gif
    from normjax.world.state import WorldConfig, make_params
    from normjax.world.step import reset_world, step_world

    layout, norm = _layout_arg(args.layout), _norm_arg(args.norm)
    params = make_params(layout, norm, max_steps=args.steps, reward_condition=args.reward)
    cfg = WorldConfig(capacity=args.capacity)

    @jax.jit
    def run(key):
        state = reset_world(jax.random.fold_in(key, 0), params, cfg)

        def body(state, k):
            ka, ks = jax.random.split(k)
            a = jax.random.randint(ka, (cfg.capacity,), 0, 5)
            new, info = step_world(ks, state, a, params)
            return new, (state, info)

        return jax.lax.scan(body, state, jax.random.split(key, args.steps))

    t0 = time.perf_counter()
    final, (states, infos) = jax.block_until_ready(run(jax.random.PRNGKey(args.seed)))
    wall = time.perf_counter() - t0
    summary = {
        "layout": args.layout,
        "norm": args.norm,
        "steps": args.steps,
        "seed": args.seed,
        "sanctions": int(np.asarray(infos.sanctioned).sum()),
        "collisions": int(np.asarray(infos.collided).sum()),
        "exits": int(np.asarray(infos.exited).sum()),
        "goals_completed": int(np.asarray(infos.goals_completed).sum()),
        "wall_seconds_incl_compile": round(wall, 2),
    }
    print(json.dumps(summary, indent=2))
    if args.gif:
        frames = render_rollout(states, params, cell_px=args.cell_px)
        print(f"wrote {save_gif(frames, args.gif, fps=args.fps)}")
    return 0


def cmd_render(args) -> int:
    import jax

    from normjax.interop.render import render_frame_jit, save_png
    from normjax.world.state import make_params
    from normjax.world.step import reset_world

    params = make_params(_layout_arg(args.layout), _norm_arg(args.norm))
    state = reset_world(jax.random.PRNGKey(args.seed), params)
    print(f"wrote {save_png(render_frame_jit(state, params, cell_px=args.cell_px), args.out)}")
    return 0


def cmd_train(args) -> int:
    if args.stop_after is not None and (args.stop_after < 1 or args.no_checkpoints):
        raise ValueError(
            f"--stop-after={args.stop_after} is invalid; allowed: a positive number of transitions, "
            "with checkpoints (the run resumes from the one saved where it stops)"
        )
    if args.no_checkpoints:
        args.checkpoint_every, args.no_resume = None, True
    elif args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every={args.checkpoint_every} is invalid; allowed: a positive integer")
    dist = (args.coordinator, args.num_processes, args.process_id)
    if args.distributed:
        from normjax.train.multihost import initialize

        initialize(*dist)  # before anything starts a JAX backend (importing train.config does)
    elif any(v is not None for v in dist):
        raise ValueError("--coordinator, --num-processes and --process-id need --distributed")
    from normjax.train.config import load_config

    overrides = list(args.overrides)
    if args.distractor is not None or args.distractor_share is not None:  # flags win over the config
        overrides += [f"{k}={v}" for k, v in _distractor(args).items()]
    config = load_config(args.config, overrides)  # validated before anything compiles
    from normjax.train.multihost import is_primary
    from normjax.train.report import report
    from normjax.train.run import train_capacities

    # One population (and run directory) per capacity K: <out> itself, or <out>/K6, K8, K10.
    out = Path(args.out) if args.out else Path("runs") / config.name
    results = train_capacities(
        config,
        out,
        resume=not args.no_resume,
        progress=not args.no_progress,
        checkpoint_every=args.checkpoint_every,
        stop_after=args.stop_after,
    )
    if is_primary():
        print(report(out))
        if all("results" in r for r in results):  # the run among the reference rows (normjax.results)
            from normjax.results.after_train import closing_table

            print(closing_table(out))
        _print_programs()
    return 0 if all("results" in r or "stopped_at" in r for r in results) else 1


def _print_programs() -> None:
    """With the executable cache (normjax.cache): how many programs were loaded whole or compiled, and the seconds."""
    from normjax.cache import cache_stats, persistent

    if persistent():
        s = cache_stats()
        print(
            f"programs: {s['executable_loads']} loaded whole, {s['executable_stores']} compiled and stored, "
            f"{s['program_s']:.1f}s"
        )


def cmd_report(args) -> int:
    if args.markdown:
        from normjax.train.tables import pooled_tables

        print(pooled_tables(args.run_dir))
        return 0
    from normjax.train.report import report

    print(report(args.run_dir, args.figures))
    return 0


def cmd_final_test(args) -> int:
    from normjax.train.report import report
    from normjax.train.run import final_tests_from_params

    for run_dir in args.run_dir:
        final_tests_from_params(run_dir)
        print(f"wrote {Path(run_dir) / 'results.json'}")
    print(report(args.run_dir))
    return 0


def cmd_evaluate(args) -> int:
    norms = _norm_list(args.norms)  # before any tracing
    distractor = _distractor(args)
    from normjax.env import STATE_POLICIES, check_policy_name
    from normjax.protocol import evaluate, format_table

    extra: dict = {}
    if args.policy in OBSERVER_NAMES:
        from normjax.observer import observer_policy

        policy = observer_policy(
            args.policy, eps=args.eps, threshold=args.threshold, source=args.evidence, **distractor
        )  # its interaction phase has the distractors too
        extra = dict(eps=args.eps, threshold=args.threshold, evidence=args.evidence)
    else:
        policy = STATE_POLICIES[check_policy_name(args.policy)]
    timing: dict = {}
    key = json.dumps(dict(policy=args.policy, capacity=args.capacity, **extra, **distractor), sort_keys=True)
    result = evaluate(
        policy, norms=norms, seed=args.seed, capacity=args.capacity, timing=timing, program_key=key, **distractor
    )
    from normjax.protocol.stamp import protocol_stamp

    result["meta"] = dict(
        policy=args.policy,
        seed=args.seed,
        capacity=args.capacity,
        norms=norms,
        **extra,
        **distractor,
        **{k: round(v, 3) if isinstance(v, float) else v for k, v in timing.items()},
        **protocol_stamp(),  # the scenario tables' hash and the code version (normjax table)
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(format_table(result))
    print(
        f"compile {timing['compile_s']:.1f}s, run {timing['run_s']:.2f}s ({timing['n_episodes']} episodes); wrote {out}"
    )
    return 0


def cmd_identify(args) -> int:
    norms = _norm_list(args.norms)  # before any tracing
    from normjax.observer.identify import format_summary, identify

    t0 = time.perf_counter()
    result = identify(
        norms,
        seeds=args.seeds,
        eps=args.eps,
        source=args.evidence,
        learner=args.learner,
        capacity=args.capacity,
        out_dir=args.out,
    )
    print(format_summary(result))
    print(f"{time.perf_counter() - t0:.1f}s; wrote {Path(args.out) / 'identify.json'} and figures")
    _print_programs()
    return 0


def cmd_export(args) -> int:
    distractor = _distractor(args)
    lists = (args.norms, args.phases, args.seeds, args.policies, args.episodes)
    if all(v is None for v in lists):  # one episode
        if args.norm is None:
            raise ValueError("export needs --norm NAME (one episode) or --norms NAME ... / all (many)")
        from normjax.interop.export import export_episode

        summary = export_episode(
            args.norm,
            args.phase,
            args.seed,
            args.policy,
            args.out,
            frames_dir=args.frames,
            layout=args.layout,
            capacity=args.capacity,
            newcomer_group=args.group,
            steps=args.steps,
            cell_px=args.cell_px,
            episode=args.episode,
            **distractor,
        )
        print(json.dumps(summary, indent=2))
        return 0
    if args.norm is not None and args.norms is not None:
        raise ValueError("give --norm (one) or --norms (several), not both")
    from normjax.interop.export_many import MAX_BATCH, export_many, plan_many

    episodes = args.episodes if args.episodes is not None else (None if args.episode is None else [args.episode])
    plans = plan_many(
        args.norms or [args.norm],
        args.phases or [args.phase],
        args.seeds or [args.seed],
        args.policies or [args.policy],
        episodes=episodes,
        layout=args.layout,
        capacity=args.capacity,
        newcomer_group=args.group,
        **distractor,
    )  # validated before tracing
    t0 = time.perf_counter()
    result = export_many(
        plans,
        args.out,
        steps=args.steps,
        capacity=args.capacity,
        frames_dir=args.frames,
        cell_px=args.cell_px,
        max_batch=MAX_BATCH if args.max_batch is None else args.max_batch,
        log=lambda m: print(m, file=sys.stderr),
    )
    print(
        json.dumps(
            {"out": args.out, "episodes": len(plans), "wall_s": round(time.perf_counter() - t0, 2), **result["timing"]},
            indent=2,
        )
    )
    return 0
