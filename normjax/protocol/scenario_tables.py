"""The scenario tables: every (layout, norm, group)'s test-episode geometry, assembled
from `normjax.protocol.geometry`'s candidates into numpy arrays [n_layouts, 50 norms,
3 groups, ...] that `normjax.protocol.scenarios` gathers from in-graph.

A (layout, norm) whose norm ignores groups is searched once and shared by the
three groups; candidates that fail the discrimination check (geometry's module
doc) are used only where none passes, flagged in `non_discriminative`, as are the
episodes in which traffic was measured to divert a careful norm-blind newcomer onto a
compliant route (`normjax.protocol.diverted`).
"""

from __future__ import annotations

import functools

import numpy as np

from normjax import constants as C
from normjax.cache import stored
from normjax.layouts import ALL_LAYOUTS, Layout, load_layout
from normjax.layouts.routes import host_route_tables
from normjax.norms import N_NORMS, norm_id
from normjax.norms import table as nt
from normjax.protocol.diverted import DIVERTED_BY_TRAFFIC
from normjax.protocol.geometry import N_EXTRA, NEVER, Geo, candidates


def _group_dependent(norm: int) -> bool:
    """Whether a norm's scenario differs by the newcomer's group (group doors / seating)."""
    row = nt.NORM_TABLE.row(norm)
    return bool(
        (row["allowed_doors"] != row["allowed_doors"][:1]).any()
        or (row["allowed_regions"] != row["allowed_regions"][:1]).any()
    )


@functools.cache
def r_boundary() -> np.ndarray:
    """bool [n_layouts, H, W]: walkable cells outside R next to R (R's boundary)."""
    out = np.zeros((len(ALL_LAYOUTS), C.H, C.W), bool)
    for li, name in enumerate(ALL_LAYOUTS):
        lay = load_layout(name)
        r = lay.zone_r
        adj = np.zeros_like(r)
        adj[1:] |= r[:-1]
        adj[:-1] |= r[1:]
        adj[:, 1:] |= r[:, :-1]
        adj[:, :-1] |= r[:, 1:]
        out[li] = adj & ~r & lay.walkable
    return out


def _release_cells(lay: Layout, li: int, norm: int, t: dict) -> None:
    """Cells where the newcomer releases the holders (zone R: R and its boundary;
    seat norms: any chair, where it sits down)."""
    kind = nt.NORM_TABLE.row(norm)["scenario"]
    if kind == nt.SCENARIO_ZONE_R:
        t["release"][li, norm] = r_boundary()[li] | lay.zone_r
    elif kind == nt.SCENARIO_SEAT_REGION:
        t["release"][li, norm] = lay.kind == C.CHAIR


@functools.cache
def host_scenarios() -> dict[str, np.ndarray]:
    """numpy geometry tables [n_layouts, 50 norms, 3 groups, ...] (cached; on disk too when the
    command line's cache is configured: `normjax.cache.stored`, a second of search saved per command)."""
    return stored("scenarios", _build_scenarios)


def _build_scenarios() -> dict[str, np.ndarray]:
    shp = (len(ALL_LAYOUTS), N_NORMS, 3)
    x = shp + (N_EXTRA,)
    t = dict(
        valid=np.zeros(shp, bool),
        start=np.zeros(shp + (2,), np.int32),
        entry=np.zeros(shp, np.int32),
        goal_kind=np.zeros(shp, np.int32),
        goal_cell=np.full(shp + (2,), -1, np.int32),
        exit_door=np.zeros(shp, np.int32),
        gap=np.zeros(shp, np.int32),
        non_discriminative=np.zeros(shp, bool),
        x_used=np.zeros(x, bool),
        x_pos=np.zeros(x + (2,), np.int32),
        x_goal_kind=np.zeros(x, np.int32),
        x_goal_cell=np.full(x + (2,), -1, np.int32),
        x_exit=np.zeros(x, np.int32),
        x_group_off=np.full(x, -1, np.int32),
        x_hold=np.zeros(x, bool),
        x_timer=np.zeros(x, np.int32),
        bg_from=np.ones(shp, np.int32),
        release_t=np.full(shp, NEVER, np.int32),
        release=np.zeros(shp[:2] + (C.H, C.W), bool),
    )
    routes = host_route_tables()
    for li, name in enumerate(ALL_LAYOUTS):
        geo = Geo(load_layout(name), routes[li])
        for n in range(N_NORMS):
            _release_cells(geo.lay, li, n, t)
            cache = {}
            for grp in range(3):
                key = grp if _group_dependent(n) else -1
                if key not in cache:
                    found = candidates(geo, n, grp)
                    # Discriminative geometries only, where any exists (groups may share one).
                    cache[key] = [c for c in found if c.get("strict", True)] or found
                cands = cache[key]
                if not cands:
                    continue
                rec = cands[grp % len(cands)]
                ix = (li, n, grp)
                t["valid"][ix] = True
                for f in ("start", "entry", "goal_kind", "goal_cell", "exit_door", "gap"):
                    t[f][ix] = rec[f]
                t["bg_from"][ix] = rec.get("bg_from", 1)
                t["release_t"][ix] = rec.get("release_t", NEVER)
                t["non_discriminative"][ix] = not rec.get("strict", True)
                for i, e in enumerate(rec["extras"]):
                    t["x_used"][ix + (i,)] = True
                    t["x_pos"][ix + (i,)] = e["pos"]
                    t["x_goal_kind"][ix + (i,)] = e["goal_kind"]
                    t["x_goal_cell"][ix + (i,)] = e["goal_cell"]
                    t["x_exit"][ix + (i,)] = e["exit_door"]
                    t["x_group_off"][ix + (i,)] = e["group_off"]
                    t["x_hold"][ix + (i,)] = e["hold"]
                    t["x_timer"][ix + (i,)] = e.get("timer", 0)
    for norm, layout, grp in DIVERTED_BY_TRAFFIC:
        t["non_discriminative"][ALL_LAYOUTS.index(layout), norm_id(norm), grp] = True
    return t


__all__ = ["host_scenarios", "r_boundary"]
