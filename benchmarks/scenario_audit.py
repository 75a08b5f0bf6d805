"""Audit of the test scenarios' promise (docs/world.md §9.3): does a norm-blind
shortest route comply by accident?

For every static-norm test episode (norms 0-13, 22, 42-47) the independent checker
of normjax/testing/scenario_checker.py searches the world's move graph (chairs crossable,
doors only as route ends) for the shortest task with and without the norm, goal by
goal and for the whole task.  For the other (dynamic) norms it runs the three
norm-blind newcomers (`blind`, the planner without the norm; `blind_any`, a random
shortest route on the rules' graph re-planned every step; `blind_polite`, the same
never entering a cell another agent stands on or announces) with `--seeds` tie-break
seeds per episode inside the real world step and community (normjax/testing/blind_check.py)
and reports the fraction of runs that comply (task done, no sanction).  The script prints per-norm tables and writes them as JSON (default
benchmarks/results/scenario_audit.json); it exits 1 when an episode complies that
the protocol does not flag as `non_discriminative`.

    python -m benchmarks.scenario_audit [--seeds 32] [--static-seeds 0] [--norms ID ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.common import RESULTS, machine
from normjax.protocol.scenario_tables import host_scenarios
from normjax.testing.scenario_checker import STATIC_NORMS, check_protocol

ROOT = Path(__file__).resolve().parents[1]


def flagged(rows: list[dict]) -> list[bool]:
    """The protocol's own `non_discriminative` flag of each row's episode (False
    where the tables have no such field, as before the flag existed)."""
    from normjax.layouts import LAYOUTS

    t = host_scenarios()
    if "non_discriminative" not in t:
        return [False] * len(rows)
    return [bool(t["non_discriminative"][LAYOUTS.index(r["layout"]), r["norm_id"], r["group"]]) for r in rows]


def per_norm(rows: list[dict]) -> list[dict]:
    out = {}
    for r in rows:
        n = out.setdefault(
            r["norm_id"],
            dict(
                norm_id=r["norm_id"],
                norm=r["norm"],
                episodes=0,
                discriminative=0,
                complies_goal_by_goal=0,
                complies_whole_task=0,
                flagged=0,
                complying=[],
            ),
        )
        n["episodes"] += 1
        n["discriminative"] += r["discriminative"]
        n["complies_goal_by_goal"] += r["complies_goal_by_goal"]
        n["complies_whole_task"] += r["complies_whole_task"]
        n["flagged"] += r["flagged"]
        if not r["discriminative"]:
            n["complying"].append(f"{r['condition']} {r['episode']}")
    return [out[k] for k in sorted(out)]


def dynamic(norm_ids, n_seeds: int, label: str = "dynamic-norm") -> dict:
    """Runs of the three norm-blind newcomers on the norms' episodes (the dynamic norms,
    or with `label` others), per episode and per (norm, newcomer)."""
    from normjax.protocol.seeds import test_episodes
    from normjax.testing.blind_check import BLIND_POLICIES, norm_blind_runs

    rows = norm_blind_runs(test_episodes(norm_ids), n_seeds)
    for r, f in zip(rows, flagged(rows)):
        r["flagged"] = f
    table = []
    print(
        f"{'id':>3} {'norm':<26} {'newcomer':<12} {'runs':>5} {'comply%':>7} {'no-sanc%':>8} {'task%':>6}"
        "  complying episodes"
    )
    for n in norm_ids:
        for pol in BLIND_POLICIES:
            sub = [r for r in rows if r["norm_id"] == n and r["policy"] == pol]
            runs = sum(r["runs"] for r in sub)
            t = dict(
                norm_id=n,
                norm=sub[0]["norm"],
                policy=pol,
                runs=runs,
                complying_fraction=sum(r["complied"] for r in sub) / runs,
                unsanctioned_fraction=sum(r["unsanctioned"] for r in sub) / runs,
                task=sum(r["task"] for r in sub) / len(sub),
                complying=[f"{r['condition']} {r['episode']}" for r in sub if r["complied"]],
            )
            table.append(t)
            print(
                f"{n:>3} {t['norm']:<26} {pol:<12} {runs:>5} {100 * t['complying_fraction']:>7.1f} "
                f"{100 * t['unsanctioned_fraction']:>8.1f} {100 * t['task']:>6.1f}  {', '.join(t['complying'])}"
            )
    unflagged = [r for r in rows if r["complied"] and not r["flagged"]]
    n_eps = len(rows) // len(BLIND_POLICIES)
    print(
        f"{label} episodes: {n_eps} x {len(BLIND_POLICIES)} newcomers x {n_seeds} seeds (0..{n_seeds - 1}); "
        f"(episode, newcomer) pairs with a complying run: {sum(r['complied'] > 0 for r in rows)}; "
        f"of them unflagged: {len(unflagged)}"
    )
    return dict(seeds=n_seeds, policies=list(BLIND_POLICIES), per_norm=table, episodes=rows, unflagged=len(unflagged))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "scenario_audit.json")
    ap.add_argument(
        "--seeds",
        type=int,
        default=32,
        help="tie-break seeds per dynamic-norm episode and norm-blind newcomer (0: skip)",
    )
    ap.add_argument("--norms", type=int, nargs="+", default=None, help="norm ids (default: all 50)")
    ap.add_argument(
        "--static-seeds",
        type=int,
        default=0,
        help="also run the three norm-blind newcomers on the static norms' episodes with this many "
        "seeds (reported, not certified: the static checker assumes an agent walking alone)",
    )
    args = ap.parse_args(argv)
    if args.seeds < 0 or args.static_seeds < 0:
        ap.error(f"--seeds and --static-seeds must be >= 0, got {args.seeds} and {args.static_seeds}")
    ids = list(range(50)) if args.norms is None else args.norms
    if any(not 0 <= n < 50 for n in ids):
        ap.error(f"--norms must be ids in 0..49, got {ids}")
    rows = check_protocol([n for n in ids if n in STATIC_NORMS])
    for r, f in zip(rows, flagged(rows)):
        r["flagged"] = f
    table = per_norm(rows)
    print(f"{'id':>3} {'norm':<30} {'eps':>3} {'discr':>5} {'g-by-g':>6} {'whole':>5} {'flag':>4}  complying")
    for n in table:
        print(
            f"{n['norm_id']:>3} {n['norm']:<30} {n['episodes']:>3} {n['discriminative']:>5} "
            f"{n['complies_goal_by_goal']:>6} {n['complies_whole_task']:>5} {n['flagged']:>4}  "
            f"{', '.join(n['complying'])}"
        )
    n_bad = sum(not r["discriminative"] for r in rows)
    unflagged = [r for r in rows if not r["discriminative"] and not r["flagged"]]
    print(
        f"static-norm episodes: {len(rows)}; a blind shortest route complies in {n_bad}; "
        f"flagged non_discriminative: {sum(r['flagged'] for r in rows)}; complying and unflagged: {len(unflagged)}"
    )
    dyn_ids = [n for n in ids if n not in STATIC_NORMS]
    dyn = dynamic(dyn_ids, args.seeds) if dyn_ids and args.seeds else None
    static_ids = [n for n in ids if n in STATIC_NORMS]
    static_runs = (
        dynamic(static_ids, args.static_seeds, "static-norm") if static_ids and args.static_seeds > 0 else None
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            dict(
                machine=machine(),
                static=dict(per_norm=table, episodes=rows, complying=n_bad, unflagged=len(unflagged)),
                dynamic=dyn,
                static_runs=static_runs,
            ),
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.out}")
    return 1 if unflagged or (dyn and dyn["unflagged"]) else 0


if __name__ == "__main__":
    sys.exit(main())
