"""Audit of the test scenarios' promise (docs/world.md §9.3): does a norm-blind
shortest route comply by accident?

For every static-norm test episode (norms 0-13, 22, 42-47) the independent checker
of tests/scenario_checker.py searches the world's move graph (chairs crossable,
doors only as route ends) for the shortest task with and without the norm, goal by
goal and for the whole task.  The script prints a per-norm table and writes it as
JSON (default benchmarks/results/scenario_audit.json); it exits 1 when an episode
complies that the protocol does not flag as `non_discriminative`.

    python benchmarks/scenario_audit.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import RESULTS  # noqa: E402
from normjax.protocol.geometry import host_scenarios  # noqa: E402
from tests.scenario_checker import check_protocol  # noqa: E402


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
        n = out.setdefault(r["norm_id"], dict(norm_id=r["norm_id"], norm=r["norm"], episodes=0, discriminative=0,
                                             complies_goal_by_goal=0, complies_whole_task=0, flagged=0,
                                             complying=[]))
        n["episodes"] += 1
        n["discriminative"] += r["discriminative"]
        n["complies_goal_by_goal"] += r["complies_goal_by_goal"]
        n["complies_whole_task"] += r["complies_whole_task"]
        n["flagged"] += r["flagged"]
        if not r["discriminative"]:
            n["complying"].append(f"{r['condition']} {r['episode']}")
    return [out[k] for k in sorted(out)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "scenario_audit.json")
    args = ap.parse_args(argv)
    rows = check_protocol()
    for r, f in zip(rows, flagged(rows)):
        r["flagged"] = f
    table = per_norm(rows)
    print(f"{'id':>3} {'norm':<30} {'eps':>3} {'discr':>5} {'g-by-g':>6} {'whole':>5} {'flag':>4}  complying")
    for n in table:
        print(f"{n['norm_id']:>3} {n['norm']:<30} {n['episodes']:>3} {n['discriminative']:>5} "
              f"{n['complies_goal_by_goal']:>6} {n['complies_whole_task']:>5} {n['flagged']:>4}  "
              f"{', '.join(n['complying'])}")
    n_bad = sum(not r["discriminative"] for r in rows)
    unflagged = [r for r in rows if not r["discriminative"] and not r["flagged"]]
    print(f"static-norm episodes: {len(rows)}; a blind shortest route complies in {n_bad}; "
          f"flagged non_discriminative: {sum(r['flagged'] for r in rows)}; complying and unflagged: {len(unflagged)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(dict(
        machine="host-side graph search (no accelerator)", static=dict(per_norm=table, episodes=rows,
                                                                       complying=n_bad, unflagged=len(unflagged)),
    ), indent=1) + "\n")
    print(f"wrote {args.out}")
    return 1 if unflagged else 0


if __name__ == "__main__":
    sys.exit(main())
