"""Tests of normjax.interop.export: docs/world.md §12 trajectory files (JSON Lines), frames and the CLI hook.

One 40-step interaction rollout on the cafe under a queue norm (random newcomer,
scripted community with one norm-blind slot) is shared by the tests; the file is
read back with the standard library `json` only.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from normjax import constants as C
from normjax.env import random_policy
from normjax.interop.export import (
    FORMAT,
    layout_cells,
    rollout,
    trajectory_records,
    write_frames,
    write_jsonl,
)
from normjax.layouts import QUEUE_NAMES, load_layout
from normjax.norms import get_norm

STEPS = 40
NORM = get_norm("bend_right_1")  # a queue norm: sanctions are frequent, queue_path is set
CAFE = load_layout("cafe")


@pytest.fixture(scope="module")
def run():
    states, infos, params = rollout(jax.random.PRNGKey(0), 0, NORM.id, "interaction", random_policy, steps=STEPS)
    return states, jax.tree.map(np.asarray, infos), params


@pytest.fixture(scope="module")
def lines(run, tmp_path_factory):
    states, infos, params = run
    path = tmp_path_factory.mktemp("traj") / "episode.jsonl"
    write_jsonl(path, trajectory_records(states, infos, params, {"seed": 0, "phase": "interaction"}))
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _cells(xs):
    return [[int(r), int(c)] for r, c in np.asarray(xs).reshape(-1, 2)]


def test_shapes_and_header(run, lines):
    states, infos, _ = run
    assert infos.active.shape == (STEPS, 10)
    assert states.t.shape == (STEPS + 1,)
    header, steps = lines[0], lines[1:]
    assert header["format"] == FORMAT
    assert header["layout"] == "cafe" and header["phase"] == "interaction" and header["seed"] == 0
    assert header["capacity"] == 10
    assert header["norm"]["id"] == NORM.id and header["norm"]["name"] == NORM.name
    assert header["norm"]["family"] == "coordination"
    assert len(steps) == STEPS
    assert [s["t"] for s in steps] == list(range(STEPS))
    assert all(len(s["agents"]) == 10 and [a["slot"] for a in s["agents"]] == list(range(10)) for s in steps)


def test_grid_equals_layout_map(lines):
    grid = lines[0]["grid"]
    assert grid == list(CAFE.grid)
    assert len(grid) == C.H and all(len(row) == C.W for row in grid)
    assert "\n".join(grid) == (CAFE.ascii())


def test_header_cells_match_layout(lines):
    cells = lines[0]["cells"]
    assert cells["doors"] == {n: _cells(CAFE.doors[i])[0] for i, n in enumerate("ABC")}
    for name in "ABC":  # doors sit where the grid shows their letter
        r, c = cells["doors"][name]
        assert CAFE.grid[r][c] == name
    assert cells["Q"] == _cells(np.argwhere(CAFE.zone_q))
    assert cells["R"] == _cells(np.argwhere(CAFE.zone_r))
    assert all(CAFE.grid[r][c] == "q" for r, c in cells["Q"])
    assert all(CAFE.grid[r][c] == "r" for r, c in cells["R"])
    assert cells["service"] == _cells(CAFE.service)[0]
    assert CAFE.grid[0][cells["service"][1]] == "K" and cells["service"][0] == 1
    assert cells["chairs"] == _cells(CAFE.chairs)
    assert sorted(sum(cells["regions"].values(), [])) == sorted(cells["chairs"])
    assert cells["queue_path"] == _cells(CAFE.queue_path(NORM.name))
    assert cells["queue_path"][0] == cells["service"]
    ring = {tuple(e["cell"]): tuple(e["cw"]) for e in cells["ring"]}
    assert set(ring) == {tuple(x) for x in np.argwhere(CAFE.ring).tolist()}
    assert ring[(1, 1)] == (0, 1) and ring[(9, 13)] == (0, -1)
    assert cells["seat_order"]["l2r"] == _cells(CAFE.seat_order[0])
    assert cells["seat_order"]["r2l"] == _cells(CAFE.seat_order[1])


@pytest.mark.parametrize("name", ["forbidden_zone_q", "clockwise_circulation", "seats_in_order_l2r"])
def test_queue_path_only_for_queue_norms(name):
    assert layout_cells("cafe", get_norm(name).id)["queue_path"] is None
    assert layout_cells("cafe", None)["queue_path"] is None


@pytest.mark.parametrize("name", list(QUEUE_NAMES))
def test_queue_path_per_queue_norm(name):
    lay = load_layout("bank")
    assert layout_cells("bank", get_norm(name).id)["queue_path"] == _cells(lay.queue_path(name))


def test_reproduces_step_info(run, lines):
    """Sanctions, positions, rewards and flags read back equal the StepInfo arrays."""
    _, infos, _ = run
    steps = lines[1:]
    assert infos.sanctioned.any(), "the fixture episode should contain sanctions"
    for t, s in enumerate(steps):
        for k, a in enumerate(s["agents"]):
            assert a["active"] is bool(infos.active[t, k])
            assert a["sanctioned"] is bool(infos.sanctioned[t, k])
            assert a["collided"] is bool(infos.collided[t, k])
            assert a["displaced"] is bool(infos.displaced[t, k])
            assert a["action"] == int(infos.action[t, k])
            assert a["reward"] == pytest.approx(float(infos.reward[t, k]), abs=1e-5)
            if a["active"]:
                assert a["pos"] == _cells(infos.pos[t, k])[0]
                assert a["target"] == _cells(infos.target[t, k])[0]
                assert a["uid"] == int(infos.uid[t, k])
                assert a["leg"] in (0, 1)
                if infos.exited[t, k]:
                    assert a["next"] is None
                    assert tuple(a["target"]) in {tuple(d) for d in CAFE.doors.tolist()}
                else:
                    assert a["next"] == _cells(infos.next_pos[t, k])[0]
            else:
                assert a["pos"] is None and a["next"] is None and a["uid"] is None
    sanc = np.array([[a["sanctioned"] for a in s["agents"]] for s in steps])
    rew = np.array([[a["reward"] for a in s["agents"]] for s in steps])
    np.testing.assert_array_equal(sanc, infos.sanctioned)
    np.testing.assert_allclose(rew, infos.reward, atol=1e-5)


def test_plain_json_types(lines):
    """Cells are lists of plain ints; booleans are JSON booleans."""
    for s in lines[1:]:
        for a in s["agents"]:
            for f in ("active", "displaced", "collided", "sanctioned"):
                assert isinstance(a[f], bool)
            for f in ("pos", "target", "next", "goal"):
                v = a[f]
                assert v is None or (isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v))
            assert type(a["action"]) is int and 0 <= a["action"] < C.N_ACTIONS
            assert isinstance(a["reward"], float)


def test_next_equals_following_pos(lines):
    steps = lines[1:]
    checked = 0
    for t in range(len(steps) - 1):
        for a, b in zip(steps[t]["agents"], steps[t + 1]["agents"]):
            if a["active"] and b["active"] and a["uid"] == b["uid"]:
                assert a["next"] == b["pos"], (t, a["slot"])
                checked += 1
    assert checked > 100


def test_entry_appears_on_next_line(run, lines):
    _, infos, _ = run
    steps = lines[1:]
    n = 0
    for t in range(len(steps) - 1):
        for k in range(10):
            if infos.entered[t, k]:
                assert not steps[t]["agents"][k]["active"]
                assert steps[t + 1]["agents"][k]["active"]
                n += 1
    assert n > 0


def test_uids_unique_and_refill_gets_new_uid(lines):
    steps = lines[1:]
    slot_of = {}
    for s in steps:
        seen = [a["uid"] for a in s["agents"] if a["active"]]
        assert len(seen) == len(set(seen)), "two active agents share a uid"
        for a in s["agents"]:
            if a["active"]:
                assert slot_of.setdefault(a["uid"], a["slot"]) == a["slot"]
    refills = 0
    for k in range(10):
        uids, exited = [], False
        for s in steps:
            a = s["agents"][k]
            if a["active"]:
                if uids and a["uid"] != uids[-1]:
                    assert exited, "a slot changed uid without its agent exiting"
                    assert a["uid"] not in uids
                    refills += 1
                    exited = False
                uids.append(a["uid"])
                exited = exited or a["exited"]
    assert refills >= 1, "the fixture episode should refill a slot"


def test_goal_fields(lines):
    """Queue tasks: goal 1 is the service cell; leg 1 goal is the specified door."""
    cells = lines[0]["cells"]
    doors = list(cells["doors"].values())
    for s in lines[1:]:
        for a in s["agents"]:
            if a["active"] and a["leg"] == 0:
                assert a["goal"] == cells["service"]
            elif a["active"] and a["leg"] == 1:
                assert a["goal"] in doors


def test_frames_written(run, tmp_path):
    states, _, params = run
    short = jax.tree.map(lambda x: x[:3], states)
    paths = write_frames(short, params, tmp_path / "frames", cell_px=8)
    assert [p.name for p in paths] == ["frame_000.png", "frame_001.png", "frame_002.png"]
    from PIL import Image

    with Image.open(paths[0]) as im:
        assert im.size == (C.W * 8, C.H * 8)


def test_test_phase_cut(tmp_path):
    """Test episodes stop being recorded after the newcomer exits (same compiled scan)."""
    states, infos, params = rollout(
        jax.random.PRNGKey(3), 0, NORM.id, "seen", random_policy, steps=STEPS, newcomer_group=1
    )
    exited = np.asarray(infos.exited[:, 0])
    n = exited.shape[0]
    assert n <= STEPS and states.t.shape[0] == n + 1
    assert int(params.max_steps) == 100 and not bool(params.replace_newcomer)
    if exited.any():
        assert exited[-1] and exited.sum() == 1
    assert int(states.agents.group[0, 0]) == 1
    recs = trajectory_records(states, infos, params, {"seed": 3, "phase": "seen"})
    assert recs[0]["phase"] == "seen" and len(recs) == n + 1


def test_protocol_episode_seeds():
    from normjax.interop.export import protocol_episode
    from normjax.protocol.seeds import base_seed, test_episodes

    for e in test_episodes([5, 30], 0):
        assert protocol_episode(e["norm_id"], e["condition"], e["episode"]) == (e["seed"], e["group"])
    assert protocol_episode(5, "interaction", 0) == (base_seed(5), None)
    with pytest.raises(ValueError):
        protocol_episode(5, "seen", 3)


def test_cli_parser_and_unknown_norm(tmp_path):
    from normjax.cli import build_parser

    ap = build_parser()
    args = ap.parse_args(
        [
            "export",
            "--norm",
            "no_such_norm",
            "--phase",
            "seen",
            "--seed",
            "2",
            "--policy",
            "blind",
            "--out",
            str(tmp_path / "x.jsonl"),
        ]
    )
    assert args.phase == "seen" and args.policy == "blind" and args.frames is None
    with pytest.raises(ValueError, match="forbidden_zone_q"):
        args.fn(args)
    assert not (tmp_path / "x.jsonl").exists()
    with pytest.raises(SystemExit):
        ap.parse_args(["export", "--norm", "forbidden_zone_q", "--phase", "nope", "--out", "x"])


@pytest.mark.slow
def test_export_matches_protocol_episodes(tmp_path):
    """An exported protocol episode (`episode=e`) is the one normjax.protocol.runner scores."""
    from normjax import protocol
    from normjax.env import blind_policy
    from normjax.interop.export import export_episode, read_jsonl
    from normjax.protocol.seeds import test_episodes

    eps = [e for e in test_episodes([0, 23, 39, 12], 0) if e["episode"] == 0]
    raw = protocol.run_episodes(blind_policy, eps)
    for i, e in enumerate(eps):
        out = tmp_path / f"{i}.jsonl"
        s = export_episode(e["norm"], e["condition"], 0, "blind", out, episode=e["episode"])
        recs = read_jsonl(out)
        assert recs[0]["layout"] == e["layout"] and recs[0]["seed"] == e["seed"]
        assert recs[0]["newcomer_group"] == e["group"]
        nc = [r["agents"][0] for r in recs[1:]]
        assert s["newcomer_goals"] == int(raw["goals"][i])
        assert s["newcomer_sanctions"] == int(raw["sanctions"][i])
        assert sum(a["collided"] for a in nc) == int(raw["collisions"][i])
        assert sum(a["active"] for a in nc) == int(raw["path_length"][i])
