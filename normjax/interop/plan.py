"""The plan of a trajectory export (docs/world.md §9, §12), before anything is traced.

`plan_episode` turns the export's arguments (norm, phase, seed, policy,
optional layout, newcomer group and protocol episode) into what is simulated
(layout and norm ids, the key seed, the test newcomer's group) and the header
fields, checking every name and value first.  `normjax.interop.export` (one
episode) and `normjax.interop.export_many` (many in one compiled program)
share it, so both write the same header for the same episode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from normjax import constants as C
from normjax.env import check_policy_name, phase_params
from normjax.layouts import ALL_LAYOUTS, check_layout_name
from normjax.norms import get_norm
from normjax.protocol.seeds import base_seed, episode_seeds, group_orders
from normjax.world.habits import check_distractor
from normjax.world.state import WorldConfig, WorldParams

EXPORT_PHASES = ("interaction", "seen", "unseen", "train")


def resolve_layout(norm, phase: str, layout: str | None) -> str:
    """The layout of an export: given, else the cafe, or the norm's unseen layout."""
    if layout is not None:
        return check_layout_name(layout)
    if phase == "unseen":
        if norm is None:
            raise ValueError("the unseen phase needs a norm (or an explicit layout)")
        return norm.unseen_layout
    return "cafe"


def protocol_episode(norm_id: int, phase: str, episode: int, seed: int = 0) -> tuple[int, int | None]:
    """(key seed, newcomer group) of the protocol's episode (docs/world.md §9 seeds).

    Interaction uses the norm's base seed s; seen episode e uses s + 1 + e and
    unseen episode e uses s + 4 + e, with the group order of
    `normjax.protocol.seeds.group_orders` (`seed` shifts the base seed as in
    `normjax.protocol.evaluate`).
    """
    if phase in ("interaction", "train"):
        return base_seed(norm_id, seed), None
    if not 0 <= int(episode) < 3:
        raise ValueError(f"episode must be 0, 1 or 2, got {episode!r}")
    return episode_seeds(norm_id, seed)[phase][episode], group_orders(norm_id, seed)[phase][episode]


def plan_episode(
    norm,
    phase: str,
    seed: int,
    policy_name: str,
    layout: str | None = None,
    capacity: int = 10,
    newcomer_group: int | None = None,
    episode: int | None = None,
    distractor: str | None = None,
    distractor_share: float = 0.0,
) -> dict:
    """What `export_episode` simulates, validated before anything is traced.

    Returns ``norm`` (spec or None), ``norm_id``, ``layout`` (name),
    ``layout_id``, ``phase``, ``key_seed``, ``group`` (None outside tests),
    ``policy``, ``distractor`` (its habit name and share, docs/world.md §8.5)
    and ``info`` (the header fields of docs/world.md §12, in order; with
    distractors on it holds ``distractor: {habit, share}``).
    """
    habit, share = check_distractor(distractor, distractor_share)
    on = habit != 0 and share > 0.0
    spec = None if norm is None or norm == "none" else get_norm(norm)
    if phase not in EXPORT_PHASES:
        raise ValueError(f"unknown phase {phase!r}; valid: {', '.join(EXPORT_PHASES)}")
    check_policy_name(policy_name)
    layout_name = resolve_layout(spec, phase, layout)
    WorldConfig(capacity=capacity)
    key_seed, group = int(seed), None
    extra: dict[str, Any] = {}
    if episode is not None:
        if spec is None:
            raise ValueError("--episode (protocol seeds) needs a norm")
        key_seed, group = protocol_episode(spec.id, phase, int(episode), int(seed))
        extra.update(protocol_seed=int(seed), episode=int(episode))
    if phase in ("seen", "unseen"):
        if newcomer_group is not None:
            group = int(newcomer_group)
        elif group is None:
            group = key_seed % C.N_GROUPS
        if not 0 <= group < C.N_GROUPS:
            raise ValueError(f"newcomer_group must be in 0..2, got {newcomer_group!r}")
    how = "scenarios.build_test_episode" if phase in ("seen", "unseen") else "reset_world"
    info = {"seed": key_seed, "phase": phase, "policy": policy_name, "scenario": how, **extra}
    if group is not None:
        info["newcomer_group"] = group
    if on:
        info["distractor"] = {"habit": C.HABIT_NAMES[habit], "share": share}
    return dict(
        norm=spec,
        norm_id=-1 if spec is None else spec.id,
        layout=layout_name,
        layout_id=ALL_LAYOUTS.index(layout_name),
        phase=phase,
        key_seed=key_seed,
        group=group,
        policy=policy_name,
        info=info,
        distractor=(C.HABIT_NAMES[habit], share),
    )


def plan_params(plan: dict) -> WorldParams:
    """The phase's WorldParams of a plan, with its distractor settings.  Test
    phases take their layout, norm and group from the scenario builder."""
    test = plan["phase"] in ("seen", "unseen")
    name, share = plan["distractor"]
    return phase_params(
        "test" if test else plan["phase"], plan["layout_id"], plan["norm_id"], distractor=name, distractor_share=share
    )


def episode_summary(plan: dict, path, records: list, infos, n_frames: int) -> dict:
    """The small summary dict `export_episode` returns (and prints)."""
    spec = plan["norm"]
    return {
        "out": str(path),
        "layout": plan["layout"],
        "norm": None if spec is None else spec.name,
        "phase": plan["phase"],
        "seed": plan["key_seed"],
        "newcomer_group": plan["group"],
        "policy": plan["policy"],
        "steps": len(records) - 1,
        "newcomer_exited": bool(np.asarray(infos.exited[:, 0]).any()),
        "newcomer_goals": int(np.asarray(infos.goals_completed[:, 0]).sum()),
        "newcomer_sanctions": int(np.asarray(infos.sanctioned[:, 0]).sum()),
        "sanctions": int(np.asarray(infos.sanctioned).sum()),
        "collisions": int(np.asarray(infos.collided).sum()),
        "frames": int(n_frames),
        "scenario": plan["info"]["scenario"],
    }


__all__ = ["EXPORT_PHASES", "episode_summary", "plan_episode", "plan_params", "protocol_episode", "resolve_layout"]
