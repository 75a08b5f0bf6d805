"""Test-episode construction (SPEC 9, paper §10.1 and §4.1).

Every norm has 3 seen test episodes (cafe) and 3 unseen ones (the norm's
`unseen_layout`).  Each is built so that a shortest-path norm-blind newcomer
must violate the norm, while the norm-aware planner can finish its task
without a violation within the 100-step test horizon.

Seeds and groups (SPEC 9)
-------------------------
* `base_seed(norm_id, seed=0) = 1000 * (norm_id + 1) + 100_000 * seed`; the
  protocol's canonical run is `seed=0`.  Interaction uses s, seen tests use
  s+1..s+3, unseen tests s+4..s+6 (`episode_seeds`).
* The newcomer takes each social group once per condition, in an order drawn
  from s: `rng = numpy.random.default_rng(s)`; the seen order is
  `rng.permutation(3)`, the unseen order the next `rng.permutation(3)`
  (`group_orders`).  The key of a test episode is `jax.random.PRNGKey(seed)`.

Construction (host, numpy, at first use)
----------------------------------------
For every (layout, norm, newcomer group) a geometry record is precomputed on
the host from the planner's own distance tables (`normjax.routes`, graph
variant 0 is what the norm-blind planner walks on), then stacked into arrays;
the jittable `build_test_episode` only gathers.  Three candidate geometries
are ranked per (layout, norm) (per group for the group norms 42-47) and the
newcomer of group g gets the (g mod n)-th of the n found, so each condition
uses up to three geometries.  The
"must violate" property is certified by a distance gap: the blind planner's
shortest route length d0 against the shortest route with the violating moves
removed d1 (gap = d1 - d0 > 0 means every blind shortest route violates);
for free choices, the gap between the nearest permissible and the nearest
impermissible object.  The `gap` table holds it (1 where the violation is
dynamic: turn/rhythm, queue and zone-R scenarios).

* forbidden_zone_q: start at a door, a specified destination cell such that
  every shortest route crosses Q (gap between the no-Q graph and the base
  graph); exit door = nearest on the no-Q graph.
* all-exit / door-forbidden / group doors (free exit door): goal 1 is a chair
  whose strictly nearest door is not allowed (for the newcomer's group); the
  newcomer enters at the door nearest that chair.
* seat regions / group seating (free seat): the newcomer enters at the door
  whose strictly nearest chair lies in a disallowed region; when no door
  works (e.g. no_bottom_left_seats on the cafe) it starts on the floor
  destination cells that do, with the nearest door as its entry door.
* seats in order: every chair nearest to the entrance has rank >= 3 in sigma
  (so three chairs must fill before it could be the first free one); when no
  door works, the newcomer starts on the floor cell that does.
* circulation: start door and destination such that every shortest route runs
  against the ring direction (gap between the directed-ring and base graphs).
* turn-parity / rhythm norms: any start and a destination 6..10 moves away
  (a blind agent moving on consecutive turns violates).
* visit_zone_q_first: a specified chair whose shortest route skips Q (every
  route through Q is longer).
* queues: two scripted "holders" (below) stand on pi(2) and pi(3) with the
  service cell as goal: the customer at the counter has just left, so the
  head cell pi(1) is free while the queue is not empty.  The newcomer has
  just walked in: it starts on a floor cell (not Q/R, not on the path)
  3..8 moves from the counter, 5 preferred (entry door = the nearest door;
  inside the queue block if need be) such that every blind shortest
  route to the counter stays off the path until its last step, into the
  head pi(1) from outside the path while the holders queue: cutting in, a few
  steps into the episode, before the background community reaches the
  counter (a door start was tried first and left too much room for pushes
  and background agents to change the queue).  When no such cell exists it
  starts at a door that satisfies the route condition.  The holders wait
  until the newcomer stands on the path (the oracle joins at the tail), or
  until the path's last cell is held (no tail left to join) while the
  newcomer stands next to that cell (where the oracle waits to join).
* zone-R capacity / single group: the newcomer enters at the door nearest R;
  1 (capacity 1, single group: of another group) or 2 (capacity 2) scripted
  "holders" stand on the R cells farthest from that door with a goal in R.
  Holders carry `habit = HABIT_HOLD`: `hold_actions` forces them to WAIT until
  the newcomer stands on R's boundary (a walkable cell next to R) or in R;
  `release_holds` (called after every step) then clears the habit for good
  and they finish their task (serve their `service_steps`, leave R).  While
  held, their service timer is kept at 0: they stay in leg 0 on their goal,
  so every planner predicts them to stay put.  A blind newcomer therefore
  walks into an occupied R; the oracle waits on the boundary until the
  holders leave.

Everything else in the community is drawn by `reset_world` (norm-aware
background agents only, tasks of the norm's family, staggered entry); the
drawn background agents are kept off the grid at step 0 (they enter from step
1 on, as usual) so the newcomer and the scripted agents stand where the
scenario puts them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.layout import LAYOUTS, load_layout
from normjax.norms import NORMS, N_NORMS
from normjax.norms import predicates as P
from normjax.routes import V_BASE, V_CCW, V_CW, V_NO_Q, V_QUEUE0, host_route_tables
from normjax.state import ANY_DOOR, GOAL_ANY_CHAIR, GOAL_ANY_R, GOAL_CELL, WorldConfig, WorldParams, WorldState
from normjax.world import reset_world

HABIT_HOLD = 3  # scenario-only habit: WAIT in place until released (zone-R and queue scenarios)
N_EXTRA = 3  # scripted agents a scenario may place (slots 1..3)
N_CONDITIONS = 2  # seen, unseen
CONDITIONS = ("seen", "unseen")
EPISODES_PER_CONDITION = 3
TEST_STEPS = 100
U8_INF = 255


# ---------------------------------------------------------------------------
# Seeds and groups


def base_seed(norm_id: int, seed: int = 0) -> int:
    """Norm-specific base seed s (SPEC 9): interaction s, tests s+1..s+6."""
    return 1000 * (int(norm_id) + 1) + 100_000 * int(seed)


def episode_seeds(norm_id: int, seed: int = 0) -> dict[str, list[int]]:
    s = base_seed(norm_id, seed)
    return {"seen": [s + 1, s + 2, s + 3], "unseen": [s + 4, s + 5, s + 6]}


def group_orders(norm_id: int, seed: int = 0) -> dict[str, list[int]]:
    """Newcomer group per test episode: a permutation of (0, 1, 2) per condition."""
    rng = np.random.default_rng(base_seed(norm_id, seed))
    return {"seen": [int(g) for g in rng.permutation(3)], "unseen": [int(g) for g in rng.permutation(3)]}


def test_episodes(norm_ids=None, seed: int = 0) -> list[dict]:
    """The protocol's episode list: per norm, 3 seen then 3 unseen episodes."""
    norm_ids = range(N_NORMS) if norm_ids is None else norm_ids
    out = []
    for n in norm_ids:
        n = int(n)
        seeds, groups = episode_seeds(n, seed), group_orders(n, seed)
        for cond in CONDITIONS:
            layout = "cafe" if cond == "seen" else NORMS[n].unseen_layout
            for e in range(EPISODES_PER_CONDITION):
                out.append(dict(
                    norm_id=n, norm=NORMS[n].name, family=NORMS[n].family,
                    condition=cond, layout=layout, layout_id=LAYOUTS.index(layout),
                    episode=e, seed=seeds[cond][e], group=groups[cond][e],
                ))
    return out


# ---------------------------------------------------------------------------
# Host-side geometry


def _flat(r, c):
    return int(r) * C.W + int(c)


def _door_inward(lay):
    return [tuple(int(v) for v in x) for x in lay.door_inward]


def _dest_cells(lay):
    from normjax.tables import destination_cells

    return [tuple(int(v) for v in x) for x in destination_cells(lay)]


def _rank(cands, key):
    """Up to 3 best candidates (distinct by their cell) sorted by key."""
    cands = sorted(cands, key=key)
    out, seen = [], set()
    for c in cands:
        tag = c["tag"]
        if tag in seen:
            continue
        seen.add(tag)
        out.append(c)
        if len(out) == 3:
            break
    return out


def _nearest_door(T, cell, variant=V_BASE, allowed=(0, 1, 2), doors=None):
    d = [int(T[variant, _flat(*doors[i]), _flat(*cell)]) if i in allowed else 10_000 for i in range(3)]
    return int(np.argmin(d))


def _record(start, entry, goal_kind, goal_cell, exit_door, gap, extras=()):
    return dict(start=start, entry=entry, goal_kind=goal_kind, goal_cell=goal_cell,
                exit_door=exit_door, gap=gap, extras=list(extras), tag=(start, goal_cell))


def _candidates(lay, T, norm: int, group: int) -> list[dict]:
    """Ranked scenario geometries for one (layout, norm, newcomer group)."""
    doors = [tuple(int(v) for v in x) for x in lay.doors]
    inward = _door_inward(lay)
    dests = _dest_cells(lay)
    chairs = [tuple(int(v) for v in x) for x in lay.chairs]
    region = lay.region
    T0 = T[V_BASE]
    d0 = lambda g, x: int(T0[_flat(*g), _flat(*x)])  # noqa: E731
    cands: list[dict] = []

    def seat_starts(candidate):
        """Seat-norm candidates from the doors' inward cells, else from floor cells.

        `candidate(start, entry_door)` returns a record or None; the floor-cell
        fallback enters through the door nearest to the start.
        """
        for starts in ([(s, i) for i, s in enumerate(inward)],
                       [(s, int(np.argmin([d0(doors[i], s) for i in range(3)]))) for s in dests]):
            found = [c for c in (candidate(s, s_i) for s, s_i in starts) if c is not None]
            if found:
                return found
        return []

    def gap_route(variant):
        for s_i, s in enumerate(inward):
            if lay.zone_q[s]:
                continue
            for g in dests:
                a, b = d0(g, s), int(T[variant, _flat(*g), _flat(*s)])
                if a >= U8_INF or b >= U8_INF or b <= a:
                    continue
                ex = _nearest_door(T, g, variant, doors=doors)
                cands.append(dict(_record(s, s_i, GOAL_CELL, g, ex, b - a), d=a))
        return _rank(cands, lambda c: (-min(c["gap"], 3), c["d"]))

    if norm == 0:
        return gap_route(V_NO_Q)
    if norm in (12, 13):
        return gap_route(V_CW if norm == 12 else V_CCW)
    if 14 <= norm <= 21:
        for s_i, s in enumerate(inward):
            for g in dests:
                a = d0(g, s)
                if 6 <= a <= 10:
                    ex = _nearest_door(T, g, doors=doors)
                    cands.append(dict(_record(s, s_i, GOAL_CELL, g, ex, 1), d=a, s_i=s_i))
        # one geometry per start door when possible
        out = []
        for s_i in range(3):
            cs = sorted([c for c in cands if c["s_i"] == s_i], key=lambda c: (abs(c["d"] - 8), c["goal_cell"]))
            if cs:
                out.append(cs[0])
        return out
    if norm == 22:
        q_cells = [tuple(int(v) for v in x) for x in np.argwhere(lay.zone_q)]
        for s_i, s in enumerate(inward):
            if lay.zone_q[s]:
                continue
            for ch in chairs:
                a = d0(ch, s)
                via = min(d0(q, s) + d0(ch, q) for q in q_cells)
                if a >= U8_INF or via <= a:
                    continue
                ex = _nearest_door(T, ch, doors=doors)
                cands.append(dict(_record(s, s_i, GOAL_CELL, ch, ex, via - a), d=a))
        return _rank(cands, lambda c: (-min(c["gap"], 3), c["d"]))
    if 1 <= norm <= 6 or 42 <= norm <= 44:
        if norm <= 3:
            allowed = {int(P.ALL_EXIT_DOOR[norm - 1])}
        elif norm <= 6:
            allowed = {0, 1, 2} - {int(P.FORBIDDEN_DOOR[norm - 4])}
        else:
            allowed = {int(P.GROUP_DOOR[norm - 42][group])}
        for ch in chairs:
            dd = [d0(doors[i], ch) for i in range(3)]
            good = min(dd[i] for i in allowed)
            bad = min(dd[i] for i in range(3) if i not in allowed)
            if good >= U8_INF or bad >= good:
                continue
            s_i = int(np.argmin([d0(ch, s) for s in inward]))
            cands.append(dict(_record(inward[s_i], s_i, GOAL_CELL, ch, ANY_DOOR, good - bad), d=d0(ch, inward[s_i])))
        return _rank(cands, lambda c: (-min(c["gap"], 3), c["d"]))
    if 7 <= norm <= 11 or 45 <= norm <= 47:
        if norm <= 11:
            ok_reg = P.SEAT_REGION_ALLOWED[norm - 7]
        else:
            ok_reg = np.arange(3) == int(P.GROUP_REGION[norm - 45][group])
        ok_chair = [bool(region[ch] >= 0 and ok_reg[region[ch]]) for ch in chairs]

        def region_start(s, s_i):
            dch = [d0(ch, s) for ch in chairs]
            good = min([d for d, o in zip(dch, ok_chair) if o] or [10_000])
            bad = min([d for d, o in zip(dch, ok_chair) if not o] or [10_000])
            if good >= U8_INF or bad >= good:
                return None
            target = chairs[int(np.argmin([d if o else 10_000 for d, o in zip(dch, ok_chair)]))]
            ex = _nearest_door(T, target, doors=doors)
            return dict(_record(s, s_i, GOAL_ANY_CHAIR, (-1, -1), ex, good - bad), d=bad, tag=s)

        return _rank(seat_starts(region_start), lambda c: (-min(c["gap"], 3), c["d"]))
    if norm in (48, 49):
        order = [tuple(int(v) for v in x) for x in lay.seat_order[norm - 48] if x[0] >= 0]
        rank = {ch: i for i, ch in enumerate(order)}

        def order_start(s, s_i):
            dch = {ch: d0(ch, s) for ch in chairs}
            near = min(dch.values())
            early = min(d for ch, d in dch.items() if rank[ch] < 3)
            if near >= U8_INF or early <= near:
                return None  # some chair among the first three of sigma is as near
            ex = _nearest_door(T, order[0], doors=doors)
            return dict(_record(s, s_i, GOAL_ANY_CHAIR, (-1, -1), ex, early - near), d=near, tag=s)

        return _rank(seat_starts(order_start), lambda c: (-min(c["gap"], 3), c["d"]))
    if 23 <= norm <= 38:
        j = norm - 23
        path = [tuple(int(v) for v in x) for x in lay.queue_paths[j][: lay.queue_len[j]]]
        service = tuple(int(v) for v in lay.service)
        ex = _nearest_door(T, service, V_QUEUE0 + j, doors=doors)
        extras = []
        for i, cell in enumerate(path[1:3]):
            extras.append(dict(pos=cell, goal_kind=GOAL_CELL, goal_cell=service,
                               exit_door=(ex + 1 + i) % 3, group_off=-1, hold=True))
        # Every blind shortest route to the counter must stay off the path
        # until its last step into the head pi(1): a blind agent waits behind
        # stationary holders rather than detour, so a route through them
        # would never reach the counter.
        behind = path[1:]
        floor = [tuple(int(v) for v in x) for x in np.argwhere(
            (lay.kind == C.FLOOR) & ~lay.zone_q & ~lay.zone_r)]
        near = [(s, int(np.argmin([d0(doors[i], s) for i in range(3)]))) for s in floor
                if 3 <= d0(service, s) <= 8 and s not in path]
        for starts in (near, [(s, i) for i, s in enumerate(inward)]):
            for s, s_i in starts:
                a = d0(service, s)
                if a >= U8_INF or any(d0(p, s) + d0(service, p) <= a for p in behind):
                    continue
                if s in path:
                    continue
                cands.append(dict(_record(s, s_i, GOAL_CELL, service, ex, 1, extras), d=a))
                cands[-1]["tag"] = s
            if cands:
                break
        return _rank(cands, lambda c: (abs(c["d"] - 5), c["start"]))
    if 39 <= norm <= 41:
        r_cells = [tuple(int(v) for v in x) for x in np.argwhere(lay.zone_r)]
        dr = [min(d0(r, s) for r in r_cells) for s in inward]
        s_i = int(np.argmin(dr))
        s = inward[s_i]
        far = sorted(r_cells, key=lambda r: (-d0(r, s), r))
        n_hold = 2 if norm == 40 else 1
        extras = []
        for i in range(n_hold):
            cell = far[i]
            extras.append(dict(pos=cell, goal_kind=GOAL_ANY_R, goal_cell=(-1, -1),
                               exit_door=_nearest_door(T, cell, doors=doors),
                               group_off=1 if norm == 41 else -1, hold=True))
        near_r = min(r_cells, key=lambda r: d0(r, s))
        ex = _nearest_door(T, near_r, doors=doors)
        return [_record(s, s_i, GOAL_ANY_R, (-1, -1), ex, 1, extras)]
    raise ValueError(f"no scenario for norm {norm}")


FIELDS = ("valid", "start", "entry", "goal_kind", "goal_cell", "exit_door", "gap",
          "x_used", "x_pos", "x_goal_kind", "x_goal_cell", "x_exit", "x_group_off", "x_hold")


@functools.lru_cache(maxsize=None)
def host_scenarios() -> dict[str, np.ndarray]:
    """numpy geometry tables [n_layouts, 50 norms, 3 groups, ...] (cached)."""
    L = len(LAYOUTS)
    shp = (L, N_NORMS, 3)
    t = dict(
        valid=np.zeros(shp, bool),
        start=np.zeros(shp + (2,), np.int32),
        entry=np.zeros(shp, np.int32),
        goal_kind=np.zeros(shp, np.int32),
        goal_cell=np.full(shp + (2,), -1, np.int32),
        exit_door=np.zeros(shp, np.int32),
        gap=np.zeros(shp, np.int32),
        x_used=np.zeros(shp + (N_EXTRA,), bool),
        x_pos=np.zeros(shp + (N_EXTRA, 2), np.int32),
        x_goal_kind=np.zeros(shp + (N_EXTRA,), np.int32),
        x_goal_cell=np.full(shp + (N_EXTRA, 2), -1, np.int32),
        x_exit=np.zeros(shp + (N_EXTRA,), np.int32),
        x_group_off=np.full(shp + (N_EXTRA,), -1, np.int32),
        x_hold=np.zeros(shp + (N_EXTRA,), bool),
        release=np.zeros(shp[:2] + (C.H, C.W), bool),
        near_last=np.zeros(shp[:2] + (C.H, C.W), bool),
    )
    routes = host_route_tables()
    for li, name in enumerate(LAYOUTS):
        lay = load_layout(name)
        boundary = _r_boundary()[li]
        for n in range(N_NORMS):
            if 39 <= n <= 41:
                t["release"][li, n] = boundary | lay.zone_r
            elif 23 <= n <= 38:
                j = n - 23
                path = lay.queue_paths[j][: lay.queue_len[j]]
                for r, c in path:
                    t["release"][li, n, r, c] = True
                lr, lc = path[-1]
                for dr, dc in C.ACTION_DELTAS[:4]:
                    rr, cc = lr + dr, lc + dc
                    if 0 <= rr < C.H and 0 <= cc < C.W and lay.walkable[rr, cc]:
                        t["near_last"][li, n, rr, cc] = True
                t["near_last"][li, n] &= ~t["release"][li, n]
            cache = {}
            for g in range(3):
                group_dep = 42 <= n <= 47
                key = g if group_dep else -1
                if key not in cache:
                    cache[key] = _candidates(lay, routes[li], n, g)
                cands = cache[key]
                if not cands:
                    continue
                rec = cands[g % len(cands)]
                ix = (li, n, g)
                t["valid"][ix] = True
                t["start"][ix] = rec["start"]
                t["entry"][ix] = rec["entry"]
                t["goal_kind"][ix] = rec["goal_kind"]
                t["goal_cell"][ix] = rec["goal_cell"]
                t["exit_door"][ix] = rec["exit_door"]
                t["gap"][ix] = rec["gap"]
                for i, x in enumerate(rec["extras"]):
                    t["x_used"][ix + (i,)] = True
                    t["x_pos"][ix + (i,)] = x["pos"]
                    t["x_goal_kind"][ix + (i,)] = x["goal_kind"]
                    t["x_goal_cell"][ix + (i,)] = x["goal_cell"]
                    t["x_exit"][ix + (i,)] = x["exit_door"]
                    t["x_group_off"][ix + (i,)] = x["group_off"]
                    t["x_hold"][ix + (i,)] = x["hold"]
    return t


@functools.lru_cache(maxsize=None)
def _r_boundary() -> np.ndarray:
    """bool [n_layouts, H, W]: walkable cells outside R next to R (R's boundary)."""
    out = np.zeros((len(LAYOUTS), C.H, C.W), bool)
    for li, name in enumerate(LAYOUTS):
        lay = load_layout(name)
        r = lay.zone_r
        adj = np.zeros_like(r)
        adj[1:] |= r[:-1]
        adj[:-1] |= r[1:]
        adj[:, 1:] |= r[:, :-1]
        adj[:, :-1] |= r[:, 1:]
        out[li] = adj & ~r & lay.walkable
    return out


@functools.lru_cache(maxsize=None)
def scenario_tables() -> dict[str, jax.Array]:
    with jax.ensure_compile_time_eval():
        t = {k: jnp.asarray(v) for k, v in host_scenarios().items()}
        t["r_boundary"] = jnp.asarray(_r_boundary())
        return t


def missing_scenarios(norm_ids=None) -> list[tuple[str, str, int]]:
    """(norm, layout, group) of protocol episodes without a valid construction."""
    t = host_scenarios()
    out = []
    for ep in test_episodes(norm_ids):
        if not t["valid"][ep["layout_id"], ep["norm_id"], ep["group"]]:
            out.append((ep["norm"], ep["layout"], ep["group"]))
    return out


# ---------------------------------------------------------------------------
# Jittable builder


def test_params(layout_id, norm_id) -> WorldParams:
    """Test-phase params (100 steps, newcomer not replaced, norm-aware background)."""
    from normjax.env import phase_params

    base = phase_params("test", 0, 0)
    return base.replace(layout_id=jnp.asarray(layout_id, jnp.int32), norm_id=jnp.asarray(norm_id, jnp.int32))


def build_test_episode(key, layout_id, norm_id, newcomer_group, config: WorldConfig = WorldConfig()):
    """The SPEC 9 test episode -> (WorldState at step 0, WorldParams).

    `layout_id`, `norm_id` and `newcomer_group` may be traced (vmap over all
    300 episodes); geometry comes from gathers on precomputed tables.
    """
    params = test_params(layout_id, norm_id)
    state = reset_world(key, params, config)
    tab = scenario_tables()
    ix = (params.layout_id, params.norm_id, jnp.asarray(newcomer_group, jnp.int32))
    g = lambda name: tab[name][ix]  # noqa: E731
    from normjax.tables import world_tables

    lt = world_tables().at(params.layout_id)
    ag = state.agents
    k = ag.active.shape[0]
    idx = jnp.arange(k)
    grp = jnp.asarray(newcomer_group, jnp.int32)

    # Background agents drawn by reset_world enter from step 1 on.
    ag = ag.replace(
        active=jnp.zeros((k,), bool),
        spawn_t=jnp.maximum(ag.spawn_t, 1),
    )

    # Scripted agents in slots 1..N_EXTRA.
    x_used = g("x_used")  # [N_EXTRA]
    slot_x = jnp.zeros((k,), bool).at[1 : 1 + N_EXTRA].set(x_used)
    pad = lambda a, fill: jnp.concatenate(  # noqa: E731
        [jnp.full((1,) + a.shape[1:], fill, a.dtype), a, jnp.full((k - 1 - N_EXTRA,) + a.shape[1:], fill, a.dtype)]
    )
    x_pos = pad(g("x_pos"), 0)
    x_goal_kind = pad(g("x_goal_kind"), 0)
    x_goal_cell = pad(g("x_goal_cell"), -1)
    x_exit = pad(g("x_exit"), 0)
    x_goff = pad(g("x_group_off"), -1)
    x_hold = pad(g("x_hold"), False)
    sel = lambda m, new, old: jnp.where(m.reshape(m.shape + (1,) * (jnp.ndim(old) - 1)), new, old)  # noqa: E731
    x_group = jnp.where(x_goff >= 0, (grp + x_goff) % C.N_GROUPS, ag.group)
    in_q = lambda p: lt.zone_q[p[:, 0], p[:, 1]]  # noqa: E731
    ag = ag.replace(
        in_use=ag.in_use | slot_x,
        active=ag.active | slot_x,
        spawn_t=jnp.where(slot_x, 0, ag.spawn_t),
        pos=sel(slot_x, x_pos, ag.pos),
        prev_pos=sel(slot_x, x_pos, ag.prev_pos),
        goal_kind=jnp.where(slot_x, x_goal_kind, ag.goal_kind),
        goal_cell=sel(slot_x, x_goal_cell, ag.goal_cell),
        exit_door=jnp.where(slot_x, x_exit, ag.exit_door),
        group=jnp.where(slot_x, x_group, ag.group),
        habit=jnp.where(slot_x & x_hold, HABIT_HOLD, ag.habit),
        visited_q=jnp.where(slot_x, in_q(x_pos), ag.visited_q),
    )

    # The newcomer (slot 0): active at its start cell at step 0.
    start = g("start")
    nc = idx == 0
    ag = ag.replace(
        in_use=ag.in_use | nc,
        active=ag.active | nc,
        spawn_t=jnp.where(nc, 0, ag.spawn_t),
        pos=sel(nc, start[None, :], ag.pos),
        prev_pos=sel(nc, start[None, :], ag.prev_pos),
        entry_door=jnp.where(nc, g("entry"), ag.entry_door),
        goal_kind=jnp.where(nc, g("goal_kind"), ag.goal_kind),
        goal_cell=sel(nc, g("goal_cell")[None, :], ag.goal_cell),
        exit_door=jnp.where(nc, g("exit_door"), ag.exit_door),
        group=jnp.where(nc, grp, ag.group),
        habit=jnp.where(nc, 0, ag.habit),
        visited_q=jnp.where(nc, lt.zone_q[start[0], start[1]], ag.visited_q),
    )
    # Fresh histories for everyone placed at step 0.
    placed = nc | slot_x
    ag = ag.replace(
        leg=jnp.where(placed, 0, ag.leg),
        timer=jnp.where(placed, 0, ag.timer),
        goals_done=jnp.where(placed, 0, ag.goals_done),
        moves=jnp.where(placed[:, None], False, ag.moves),
        last_action=jnp.where(placed, C.WAIT, ag.last_action),
        sanctioned=jnp.zeros((k,), bool),
        collided=jnp.zeros((k,), bool),
        displaced=jnp.zeros((k,), bool),
        n_sanctions=jnp.zeros((k,), jnp.int32),
        n_collisions=jnp.zeros((k,), jnp.int32),
        steps=jnp.zeros((k,), jnp.int32),
        ret=jnp.zeros((k,), jnp.float32),
    )
    return state.replace(agents=ag), params


# ---------------------------------------------------------------------------
# Holders (zone-R scenarios)


def hold_actions(state: WorldState, actions):
    """Force WAIT for scripted holders (habit HABIT_HOLD) until released."""
    hold = state.agents.active & (state.agents.habit == HABIT_HOLD)
    return jnp.where(hold, C.WAIT, actions)


def release_holds(state: WorldState, params: WorldParams) -> WorldState:
    """Release every holder for good once the scenario's release condition holds.

    Zone-R norms: the newcomer stands on R's boundary or in R.  Queue norms:
    the newcomer stands on the queue path, or the path's last cell is held (no
    tail is left to join) while the newcomer stands next to that last cell
    (where a norm-aware newcomer waits to join).  Always: the newcomer has left.
    """
    from normjax.tables import world_tables

    ag = state.agents
    tab = scenario_tables()
    nid = jnp.clip(params.norm_id, 0, N_NORMS - 1)
    rel = tab["release"][params.layout_id, nid]
    near_last = tab["near_last"][params.layout_id, nid]
    lt = world_tables().at(params.layout_id)
    p = ag.pos[0]
    j = jnp.clip(params.norm_id - 23, 0, C.N_QUEUE_PATHS - 1)
    last = lt.queue_paths[j, lt.queue_len[j] - 1]
    is_queue = (params.norm_id >= 23) & (params.norm_id <= 38)
    full = is_queue & (ag.active & (ag.pos == last[None, :]).all(-1)).any()
    release = (ag.active[0] & (rel[p[0], p[1]] | (full & near_last[p[0], p[1]]))) | ~ag.active[0]
    habit = jnp.where(release & (ag.habit == HABIT_HOLD), 0, ag.habit)
    # A held agent's service never completes: it stays on its goal in leg 0
    # (so planners predict it to stay) and serves its full time after release.
    timer = jnp.where(habit == HABIT_HOLD, 0, ag.timer)
    return state.replace(agents=ag.replace(habit=habit, timer=timer))


def scenario_community_actions(key, state: WorldState, params: WorldParams):
    """The scripted community of a test episode: `community_actions` plus holders."""
    from normjax.env import community_actions

    return hold_actions(state, community_actions(key, state, params))


__all__ = [
    "HABIT_HOLD", "CONDITIONS", "TEST_STEPS", "base_seed", "episode_seeds", "group_orders",
    "test_episodes", "host_scenarios", "missing_scenarios", "test_params",
    "build_test_episode", "hold_actions", "release_holds", "scenario_community_actions",
]
