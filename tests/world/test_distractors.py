"""docs/world.md §8.5 distractor habits: episode parameters, the habit lottery,
the planner following habits only where the norm permits, and the
over-imitation metric on hand-built trajectories."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax import make
from normjax.constants import HABIT_MOVE1_WAIT1, HABIT_NONE, HABIT_SAME_EXIT_DOOR, ROLE_AWARE, ROLE_BLIND
from normjax.env import COMMUNITY, env_step, phase_params
from normjax.layouts.tables import world_tables
from normjax.protocol.imitation import over_imitation
from normjax.protocol.scenarios import HABIT_HOLD, build_test_episode
from normjax.world.habits import check_distractor
from normjax.world.state import ANY_DOOR, GOAL_CELL, WorldConfig, make_params
from normjax.world.step import reset_world
from normjax.world.turnover import refill
from tests.support.world_helpers import RESET, STEP, actions, blank, put
from tests.support.world_helpers import params as hand_params

RESET_MANY = jax.jit(jax.vmap(reset_world, in_axes=(0, None)))
REFILL = jax.jit(refill)
# One community step for every planner test: the params are an argument, so every norm and habit shares it.
COMMUNITY_STEP = jax.jit(lambda k, s, p: env_step(*jax.random.split(k), s, C.WAIT, p, COMMUNITY)[1:])
CAFE_DOORS = {"A": (6, 0), "B": (10, 7), "C": (3, 14)}


# ---------------------------------------------------------------------------
# Parameters and validation


def test_defaults_are_off_and_names_validated():
    p = make_params()
    assert int(p.habit) == HABIT_NONE and float(p.habit_share) == 0.0
    p = make_params(distractor="move1_wait1", distractor_share=0.25)
    assert int(p.habit) == HABIT_MOVE1_WAIT1 and float(p.habit_share) == 0.25
    with pytest.raises(ValueError, match="unknown distractor 'wait'.*none, same_exit_door, move1_wait1"):
        make_params(distractor="wait")
    for bad in (-0.1, 1.5, float("nan"), "half"):
        with pytest.raises(ValueError, match="distractor_share"):
            make_params(distractor="same_exit_door", distractor_share=bad)
    with pytest.raises(ValueError, match="needs a distractor habit"):
        check_distractor("none", 0.5)
    assert check_distractor("same_exit_door", 1) == (HABIT_SAME_EXIT_DOOR, 1.0)


def test_env_and_registration_overrides():
    env = make("NormGym-cafe-none-test-v0", distractor="same_exit_door", distractor_share=0.5)
    p = env.default_params
    assert int(p.habit) == HABIT_SAME_EXIT_DOOR and float(p.habit_share) == 0.5
    assert int(make(layout="cafe").default_params.habit) == HABIT_NONE
    with pytest.raises(ValueError, match="unknown distractor"):
        make(layout="cafe", distractor="bogus")
    with pytest.raises(ValueError, match="distractor_share"):
        make("NormGym-cafe-none-train-v0", distractor="move1_wait1", distractor_share=2)
    assert int(phase_params("interaction", 0, 3, distractor="move1_wait1", distractor_share=1).habit) == 2


# ---------------------------------------------------------------------------
# The lottery


def _keys(n, seed=0):
    return jax.random.split(jax.random.PRNGKey(seed), n)


@pytest.mark.parametrize("n_blind", [0, 1])
def test_lottery_only_norm_aware_background_at_the_share(n_blind):
    keys = _keys(300, n_blind)
    off = RESET_MANY(keys, make_params(0, 5, n_blind=n_blind))
    for share in (0.0, 0.5, 1.0):
        st = RESET_MANY(keys, make_params(0, 5, n_blind=n_blind, distractor="move1_wait1", distractor_share=share))
        ag = jax.tree.map(np.asarray, st.agents)
        eligible = ag.in_use & (ag.role == ROLE_AWARE) & (np.arange(10) > 0)
        assert set(np.unique(ag.habit[~eligible])) <= {HABIT_NONE}  # newcomer, blind, unused slots
        assert (ag.habit[eligible] != HABIT_NONE).mean() == pytest.approx(share, abs=0.05)
        if share in (0.0, 1.0):
            assert ((ag.habit == HABIT_MOVE1_WAIT1) == (eligible & (share == 1.0))).all()
        assert (ag.role[:, 1 : 1 + n_blind] == ROLE_BLIND).all()
        # Only habits differ: every other field of the reset is the same.
        same = jax.tree.map(
            lambda a, b: bool(np.array_equal(a, b)), off.replace(agents=off.agents.replace(habit=st.agents.habit)), st
        )
        assert all(jax.tree.leaves(same))


def test_turnover_refills_draw_habits():
    lt = world_tables().at(0)
    p = make_params(0, 5, n_blind=1, distractor="same_exit_door", distractor_share=1.0)
    st = RESET(jax.random.PRNGKey(1), p, WorldConfig())
    slots = jnp.ones((10,), bool)
    new = REFILL(
        jax.random.PRNGKey(2),
        st.replace(agents=st.agents.replace(habit=jnp.zeros(10, jnp.int32))),
        slots,
        lt,
        p,
        jnp.int32(5),
    )
    want = np.where(np.arange(10) >= 2, HABIT_SAME_EXIT_DOOR, HABIT_NONE)  # slot 0 newcomer, slot 1 blind
    assert np.asarray(new.agents.habit).tolist() == want.tolist()
    p0 = p.replace(habit_share=jnp.float32(0.0))
    assert not np.asarray(REFILL(jax.random.PRNGKey(2), st, slots, lt, p0, jnp.int32(5)).agents.habit).any()


def test_scenario_agents_and_newcomer_never_get_a_habit():
    # bend_right_1 (23) places a customer queued behind the free counter, held until
    # its release step (its timing certifies the scenario, so no habit may change it);
    # zone_r_capacity_2 (40) places two holders in R.
    for norm, placed_habit in ((23, HABIT_HOLD), (40, HABIT_HOLD)):
        st, p = build_test_episode(jax.random.PRNGKey(3), 0, norm, 0, WorldConfig(), HABIT_MOVE1_WAIT1, 1.0)
        ag = jax.tree.map(np.asarray, st.agents)
        assert ag.habit[0] == HABIT_NONE
        placed = ag.active & (np.arange(10) > 0)
        assert placed.any() and (ag.habit[placed] == placed_habit).all()
        drawn = ag.in_use & ~ag.active
        assert (ag.habit[drawn] == HABIT_MOVE1_WAIT1).all()
        assert int(p.habit) == HABIT_MOVE1_WAIT1


# ---------------------------------------------------------------------------
# The planner follows habits only where the norm permits, never sanctioned


def _community_run(state, p, steps, seed=0):
    infos = []
    for k in jax.random.split(jax.random.PRNGKey(seed), steps):
        state, info = COMMUNITY_STEP(k, state, p)
        infos.append(jax.tree.map(np.asarray, info))
    return state, infos


def _exit_door(infos, slot):
    for info in infos:
        assert not info.sanctioned[slot]
        if info.exited[slot]:
            return next(n for n, c in CAFE_DOORS.items() if tuple(info.target[slot]) == c)
    return None


def _leaver(habit, entry_door):
    # Slot 1, on its exit leg at (3, 12) next to door C, free choice of door, entered by `entry_door`.
    st = put(blank(), 1, (3, 12), leg=1, exit_door=ANY_DOOR, entry_door=entry_door, habit=habit, goals_done=1)
    return st.replace(agents=st.agents.replace(in_use=st.agents.in_use.at[0].set(False)))


@pytest.mark.parametrize(
    "norm, habit, want",
    [
        (5, HABIT_NONE, "C"),  # bottom_door_forbidden: C is nearest
        (5, HABIT_SAME_EXIT_DOOR, "A"),  # the habit: back to the entry door A
        (4, HABIT_SAME_EXIT_DOOR, "C"),  # left_door_forbidden: the habit is not followed
    ],
)
def test_same_exit_door_followed_only_where_permitted(norm, habit, want):
    _, infos = _community_run(_leaver(habit, entry_door=0), hand_params(0, norm), 40)
    assert _exit_door(infos, 1) == want


@pytest.mark.parametrize("norm", [-1, 0, 14])
def test_move1_wait1_rests_after_every_move_unsanctioned(norm):
    # Slot 1 walks along row 1 to (1, 12); with the habit every move is followed by a WAIT.
    st = put(blank(), 1, (1, 2), goal=(1, 12), goal_kind=GOAL_CELL, habit=HABIT_MOVE1_WAIT1)
    st = st.replace(agents=st.agents.replace(in_use=st.agents.in_use.at[0].set(False)))
    _, infos = _community_run(st, hand_params(0, norm), 30)
    acts = [int(i.action[1]) for i in infos]
    assert not any(i.sanctioned[1] for i in infos)
    moved = [a != C.WAIT for a in acts]
    assert sum(moved) >= 8  # it gets there
    assert not any(a and b for a, b in zip(moved, moved[1:]))  # never two moves in a row


# ---------------------------------------------------------------------------
# Over-imitation on hand-built trajectories


def _newcomer_run(state, p, acts):
    states, infos = [state], []
    for t, a in enumerate(acts):
        state, info = STEP(jax.random.PRNGKey(t), state, actions((0, a)), p)
        states.append(state)
        infos.append(info)
    stack = lambda xs: jax.tree.map(lambda *v: jnp.stack(v), *xs)
    return over_imitation(stack(states), stack(infos), p)


R, L, W = C.RIGHT, C.LEFT, C.WAIT


@pytest.mark.parametrize(
    "norm, acts, follows",
    [
        (-1, [R, W, R, W, R, W], 3),  # rests after each move in an empty room: imitates
        (-1, [R, R, R, R, R, R], 0),  # walks on: does not
        (-1, [W, W, R, R, W, R], 1),  # waits that follow no move do not count
        (19, [R, W, R, W, R, W], 0),  # move1_wait1 is the norm: the rests are required
    ],
)
def test_over_imitation_move1_wait1(norm, acts, follows):
    st = put(blank(), 0, (1, 2), goal=(1, 13), goal_kind=GOAL_CELL)
    p = hand_params(0, norm, distractor="move1_wait1", distractor_share=0.5)
    out = _newcomer_run(st, p, acts)
    assert (int(out.follows), int(out.steps)) == (follows, len(acts))
    off = _newcomer_run(st, hand_params(0, norm), acts)
    assert int(off.follows) == 0  # no habit in the episode: nothing to imitate


@pytest.mark.parametrize(
    "other, follows",
    [
        ((1, 5), 0),  # two cells ahead of (1, 3) after the move: the wait may be a yield
        ((2, 4), 0),  # two moves away off the route: it could still contest a neighbouring cell
        ((1, 6), 1),  # three cells ahead: nobody near, the rest counts
    ],
)
def test_over_imitation_ignores_waits_near_other_agents(other, follows):
    st = put(blank(), 0, (1, 2), goal=(1, 13), goal_kind=GOAL_CELL)
    st = put(st, 1, other, goal=other, goal_kind=GOAL_CELL)  # stands still (in service)
    out = _newcomer_run(st, hand_params(0, -1, distractor="move1_wait1", distractor_share=1.0), [R, W, W])
    assert int(out.follows) == follows


TO_A = [C.UP] * 2 + [L] * 11 + [C.DOWN] * 5 + [L]  # (3, 12) -> (1, 12) -> (1, 1) -> (6, 1) -> door A


@pytest.mark.parametrize(
    "norm, way, follows",
    [
        (5, TO_A, len(TO_A)),  # back to the entry door A though C is nearer: the whole leg counts
        (5, [R, R], 0),  # out by the nearest allowed door C
        (4, TO_A, 0),  # A is forbidden: not the habit (a violation instead)
        (1, TO_A, 0),  # all_exit_left: A is the only door allowed, so the norm requires it
    ],
)
def test_over_imitation_same_exit_door(norm, way, follows):
    # On its exit leg at (3, 12) in the cafe, entered by door A (6, 0); door C (3, 14) is 2 moves away.
    st = put(blank(), 0, (3, 12), leg=1, exit_door=ANY_DOOR, entry_door=0, goals_done=1)
    p = hand_params(0, norm, distractor="same_exit_door", distractor_share=1.0)
    out = _newcomer_run(st, p, way)
    assert int(out.steps) == len(way)  # it exits on the last step
    assert int(out.follows) == follows
    off = _newcomer_run(st, hand_params(0, norm), way)
    assert int(off.follows) == 0


# ---------------------------------------------------------------------------
# Plumbing: CLI, training config, exports, protocol


def test_cli_flags_and_bad_values(tmp_path, capsys):
    from normjax.cli import DISTRACTORS, build_parser, main
    from normjax.constants import HABIT_NAMES

    assert DISTRACTORS == HABIT_NAMES
    for cmd in (
        ["evaluate", "--policy", "oracle", "--out", "x"],
        ["export", "--norm", "x", "--out", "x"],
        ["train", "--config", "c"],
    ):
        args = build_parser().parse_args(cmd + ["--distractor", "same_exit_door", "--distractor-share", "0.5"])
        assert (args.distractor, args.distractor_share) == ("same_exit_door", 0.5)
        with pytest.raises(SystemExit):
            build_parser().parse_args(cmd + ["--distractor", "wave"])
        assert "invalid choice: 'wave'" in capsys.readouterr().err
    out = str(tmp_path / "x.json")
    assert (
        main(
            ["evaluate", "--policy", "oracle", "--distractor", "move1_wait1", "--distractor-share", "1.5", "--out", out]
        )
        == 2
    )
    assert "distractor_share must be in [0, 1], got 1.5" in capsys.readouterr().err
    assert main(["export", "--norm", "forbidden_zone_q", "--distractor-share", "0.5", "--out", out]) == 2
    assert "needs --distractor" in capsys.readouterr().err
    assert (
        main(["train", "--config", "configs/test_tiny", "--distractor", "move1_wait1", "--distractor-share", "-1"]) == 2
    )
    assert "distractor_share" in capsys.readouterr().err


def test_training_config_keys():
    from normjax.train.config import load_config

    c = load_config("configs/test_tiny", ["distractor=move1_wait1", "distractor_share=0.25"])
    assert (c.distractor, c.distractor_share) == ("move1_wait1", 0.25)
    assert load_config("configs/test_tiny").distractor == "none"
    with pytest.raises(ValueError, match="config distractor='nap' is invalid; allowed: none, same_exit_door"):
        load_config("configs/test_tiny", ["distractor=nap"])
    with pytest.raises(ValueError, match="config distractor_share"):
        load_config("configs/test_tiny", ["distractor_share=0.5"])  # a share needs a habit


# sha256 of `normjax export --norms left_door_forbidden --phases interaction --episodes 0 --policies oracle`
# written by the code before distractors existed: with them off the file must not change.
REF_SHA = "3d5b657bc7b977a289d398b871c34f6ba5381694d31200b649950f23a724915b"


def test_export_off_is_unchanged_and_on_has_habits(tmp_path):
    import hashlib

    from normjax.interop.export import export_episode, read_jsonl

    off = tmp_path / "off.jsonl"
    export_episode("left_door_forbidden", "interaction", 0, "oracle", off, episode=0)
    assert hashlib.sha256(off.read_bytes()).hexdigest() == REF_SHA
    on = tmp_path / "on.jsonl"
    export_episode(
        "left_door_forbidden", "interaction", 0, "oracle", on, episode=0, distractor="move1_wait1", distractor_share=1.0
    )
    head, *steps = read_jsonl(on)
    assert head["distractor"] == {"habit": "move1_wait1", "share": 1.0}
    habits = {(a["role"], a["habit"]) for s in steps for a in s["agents"] if a["active"]}
    assert habits == {("newcomer", None), ("blind", None), ("aware", "move1_wait1")}
    assert all(a["habit"] is None for s in steps for a in s["agents"] if not a["active"])
    assert not any(a["sanctioned"] for s in steps for a in s["agents"] if a["role"] == "aware")

    def strip(lines):
        return [[{k: v for k, v in a.items() if k != "habit"} for a in s["agents"]] for s in lines]

    ref, mine = strip(read_jsonl(off)[1:]), strip(steps)
    assert ref[0] == mine[0]  # the same draws; nobody has moved yet, so nobody rests
    assert ref != mine  # later the habit changes what the community does


def test_habit_badge_drawn_only_on_habit_agents():
    from normjax.interop.render import render_frame_jit

    st = put(put(blank(), 0, (5, 5)), 1, (5, 9))
    p = hand_params(0, -1)
    plain = np.asarray(render_frame_jit(st, p, cell_px=32))
    for code in (HABIT_SAME_EXIT_DOOR, HABIT_MOVE1_WAIT1, HABIT_HOLD):
        badge = np.asarray(
            render_frame_jit(st.replace(agents=st.agents.replace(habit=st.agents.habit.at[1].set(code))), p, cell_px=32)
        )
        diff = np.argwhere((badge != plain).any(-1))
        if code == HABIT_HOLD:  # scenario-only code: no badge
            assert len(diff) == 0
            continue
        assert len(diff) > 0
        rows, cols = diff[:, 0] // 32, diff[:, 1] // 32
        assert set(rows) == {5} and set(cols) == {9}  # only on that agent's cell
    d = np.asarray(render_frame_jit(st.replace(agents=st.agents.replace(habit=st.agents.habit.at[1].set(1))), p))
    w = np.asarray(render_frame_jit(st.replace(agents=st.agents.replace(habit=st.agents.habit.at[1].set(2))), p))
    assert (d != w).any()  # a different letter per habit


ORACLE_NORMS = [4, 5, 20, 23, 39]  # doors (entry door forbidden / allowed), rhythm, queue with holders, zone R


def test_observer_interaction_params():
    from normjax.observer import interaction_params, observer_policy

    p = interaction_params(3, HABIT_MOVE1_WAIT1, 0.5)
    assert (int(p.norm_id), int(p.habit), float(p.habit_share), int(p.n_blind)) == (3, 2, 0.5, 1)
    assert int(interaction_params(3).habit) == HABIT_NONE
    a = observer_policy("bayes_map", distractor="same_exit_door", distractor_share=0.5)
    assert a.prepare is not observer_policy("bayes_map").prepare  # its interaction phase has the habit
    assert a.prepare.args[-1] == (HABIT_SAME_EXIT_DOOR, 0.5)
    with pytest.raises(ValueError, match="unknown distractor"):
        observer_policy("bayes_map", distractor="sit")


@pytest.mark.slow  # protocol episodes for two habits; the slow tier (CI runs both)
@pytest.mark.parametrize("distractor", ["same_exit_door", "move1_wait1"])
def test_oracle_with_distractors_keeps_joint_success_and_never_imitates(distractor):
    from normjax.env import oracle_policy
    from normjax.protocol.runner import run_episodes, summarize
    from normjax.protocol.seeds import test_episodes

    eps = test_episodes(ORACLE_NORMS)
    raw = run_episodes(oracle_policy, eps, distractor=distractor, distractor_share=1.0)
    res = summarize(eps, raw)
    for cond in ("seen", "unseen"):
        assert res[cond]["overall"]["joint"] == 100.0, res[cond]
        assert res[cond]["overall"]["over_imitation"] == 0.0
    assert all(r["habit_steps"] == 0 for r in res["episodes"])


def test_summary_and_table_report_over_imitation():
    from normjax.protocol.runner import format_table, summarize
    from normjax.protocol.seeds import test_episodes

    eps = test_episodes([4])
    n = len(eps)
    raw = {
        k: np.zeros(n, np.int32)
        for k in (
            "sanctions",
            "collisions",
            "community_finished",
            "community_steps",
            "community_agents",
            "involved",
            "waits",
        )
    }
    raw.update(
        goals=np.full(n, 2),
        path_length=np.full(n, 20),
        finished=np.ones(n, bool),
        t_end=np.full(n, 20),
        community_return=np.zeros(n, np.float32),
        habit_steps=np.array([0, 5, 0, 0, 0, 10]),
    )
    res = summarize(eps, raw)
    assert [r["over_imitation"] for r in res["episodes"]] == [0.0, 0.25, 0.0, 0.0, 0.0, 0.5]
    seen = [r["over_imitation"] for r in res["episodes"] if r["condition"] == "seen"]
    assert res["seen"]["overall"]["over_imitation"] == pytest.approx(100 * np.mean(seen))
    table = format_table(res)
    assert "o.imit%" in table.splitlines()[0]
    del raw["habit_steps"]  # distractors off: no column, no per-episode fields
    off = summarize(eps, raw)
    assert "over_imitation" not in off["episodes"][0] and "o.imit%" not in format_table(off)
