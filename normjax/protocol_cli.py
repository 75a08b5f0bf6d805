"""`normjax evaluate`: the SPEC 9 test protocol from the command line.

    normjax evaluate --policy oracle --out oracle.json
    normjax evaluate --policy blind --norms forbidden_zone_q bend_left_1 --seed 0 --out b.json

Hook into `normjax.cli.build_parser` with `add_evaluate_parser(sub)`.  Norm
names are checked before anything is traced: an unknown name raises
ValueError listing the valid names (the CLI's `main` prints it and exits 2).
"""

from __future__ import annotations

import json
from pathlib import Path

POLICIES = ("oracle", "blind", "random")


def _check_norms(names):
    """Validate norm names (or ids) up front; ValueError lists the valid names."""
    if not names:
        return None
    from normjax.norms import NORM_NAMES

    out = []
    for n in names:
        if isinstance(n, str) and n.isdigit():
            n = int(n)
        if isinstance(n, int):
            if not 0 <= n < len(NORM_NAMES):
                raise ValueError(f"norm id must be in 0..{len(NORM_NAMES) - 1}, got {n}")
            out.append(n)
        elif n in NORM_NAMES:
            out.append(NORM_NAMES.index(n))
        else:
            raise ValueError(f"unknown norm {n!r}; valid norms: {', '.join(NORM_NAMES)}")
    return out


def cmd_evaluate(args) -> int:
    norms = _check_norms(args.norms)  # before any tracing
    if args.policy not in POLICIES:
        raise ValueError(f"unknown policy {args.policy!r}; valid: {', '.join(POLICIES)}")
    from normjax.env import STATE_POLICIES
    from normjax.protocol import evaluate, format_table

    timing: dict = {}
    result = evaluate(STATE_POLICIES[args.policy], norms=norms, seed=args.seed,
                      capacity=args.capacity, timing=timing)
    result["meta"] = dict(policy=args.policy, seed=args.seed, capacity=args.capacity,
                          norms=norms, **{k: round(v, 3) if isinstance(v, float) else v
                                          for k, v in timing.items()})
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(format_table(result))
    print(f"compile {timing['compile_s']:.1f}s, run {timing['run_s']:.2f}s "
          f"({timing['n_episodes']} episodes); wrote {out}")
    return 0


def add_evaluate_parser(subparsers):
    """Add the `evaluate` sub-command to an argparse subparsers object."""
    e = subparsers.add_parser("evaluate", help="run the SPEC 9 test protocol (3 seen + 3 unseen episodes per norm)")
    e.add_argument("--policy", required=True, choices=POLICIES,
                   help="newcomer policy: norm-aware oracle, norm-blind planner, or random")
    e.add_argument("--norms", nargs="+", default=None, metavar="NAME",
                   help="norm names (default: all 50)")
    e.add_argument("--seed", type=int, default=0, help="protocol seed (0 = canonical)")
    e.add_argument("--capacity", type=int, default=10, choices=(6, 8, 10))
    e.add_argument("--out", required=True, help="write the result JSON here")
    e.set_defaults(fn=cmd_evaluate)
    return e
