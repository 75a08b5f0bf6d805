"""Observer newcomers (normjax.observer.policies / interaction / identify; docs/observer.md).

Constructed states and beliefs on the cafe check bayes_safe and the active
learner against hand-derived answers; a point-mass belief makes bayes_map the
Norm Oracle, through the runner's StatefulPolicy path; `normjax identify` runs
one norm's interaction phase end to end.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.cli import main
from normjax.layouts.tables import world_tables
from normjax.norms import N_NORMS, norm_id
from normjax.observer import bayes_active, bayes_map, bayes_safe, expected_information_gain, observer_policy
from normjax.observer import belief as B
from normjax.observer.policies import own_action_masks
from normjax.protocol import evaluate, run_episode
from normjax.world.state import WorldConfig, empty_state
from tests.support.shared_protocol import reference
from tests.support.world_helpers import blank, params, put

CAFE = world_tables().at(0)
Q_NORM, EVEN, RIGHT_FORBIDDEN, ALL_RIGHT = 0, 14, 6, 3


def belief_of(masses: dict) -> B.Belief:
    """A belief with the given posterior masses (the rest eliminated)."""
    p = np.zeros(N_NORMS)
    for n, m in masses.items():
        p[n] = m
    with np.errstate(divide="ignore"):
        lp = jnp.asarray(np.log(p / p.sum()), jnp.float32)
    return _prior().replace(log_probs=lp)


@functools.cache
def _prior() -> B.Belief:
    return B.init_belief(CAFE, empty_state(10))


# (state, the move a norm-blind planner makes) for three constructed situations.
def _q_case():  # t = 2: the shortest route to (6, 10) runs RIGHT through Q
    return put(blank(), 0, (6, 5), goal=(6, 10)).replace(t=jnp.int32(2)), C.RIGHT


def _door_case():  # leg 1, exit door C is the next cell
    return put(blank(), 0, (3, 13), leg=1, exit_door=2), C.RIGHT


def _turn_case():  # t = 3: moving at an odd step
    return put(blank(), 0, (6, 5), goal=(6, 2)).replace(t=jnp.int32(3)), C.LEFT


SAFE = jax.jit(bayes_safe, static_argnames="threshold")
MAP = jax.jit(bayes_map)
ACTIVE = jax.jit(bayes_active)
MASKS = jax.jit(own_action_masks)  # jitted: eager op-by-op dispatch of the 50 norms is slower
GAIN = jax.jit(expected_information_gain)

CASES = [
    # (case, MAP norm, true norm): the MAP norm permits the planner's move, the true one forbids it
    (_q_case, EVEN, Q_NORM),
    (_door_case, ALL_RIGHT, RIGHT_FORBIDDEN),
    (_turn_case, Q_NORM, EVEN),
]


@pytest.mark.parametrize("case, map_id, true_id", CASES)
def test_bayes_safe_never_takes_an_action_the_plausible_true_norm_forbids(case, map_id, true_id):
    state, move = case()
    prm = params(norm=true_id)
    key = jax.random.PRNGKey(0)
    ok = np.asarray(MASKS(state, prm))  # [50, 5]
    assert ok[map_id, move] and not ok[true_id, move]  # the construction
    for p_true in (0.06, 0.3, 0.49):
        b = belief_of({map_id: 1 - p_true, true_id: p_true})
        assert int(B.map_norm(b)) == map_id
        assert int(MAP(key, state, prm, b)) == move  # bayes_map follows the MAP norm
        a = int(SAFE(key, state, prm, b))
        assert ok[true_id, a] and a == C.WAIT
    # Below the threshold the true norm is ignored: bayes_safe acts like bayes_map.
    b = belief_of({map_id: 0.97, true_id: 0.03})
    assert int(SAFE(key, state, prm, b)) == move
    # With a higher threshold the same belief is trusted.
    b = belief_of({map_id: 0.7, true_id: 0.3})
    assert int(SAFE(key, state, prm, b, threshold=0.35)) == move


def test_bayes_safe_moves_when_every_plausible_norm_permits():
    state, move = _q_case()
    b = belief_of({EVEN: 0.5, RIGHT_FORBIDDEN: 0.3, ALL_RIGHT: 0.2})  # none forbids entering Q at t = 2
    assert int(SAFE(jax.random.PRNGKey(0), state, params(norm=EVEN), b)) == move


def test_expected_information_gain_hand_computed():
    # t = 3 at (6, 5): under even_turns_only every move is forbidden; under
    # forbidden_zone_q only RIGHT (into Q).  With 1/2 on each, RIGHT is sanctioned
    # for sure (no information), UP / DOWN / LEFT with probability 1/2 (log 2 nats).
    state = put(blank(), 0, (6, 5), goal=(6, 10)).replace(t=jnp.int32(3))
    prm = params(norm=Q_NORM)
    b = belief_of({Q_NORM: 0.5, EVEN: 0.5})
    gain = np.asarray(GAIN(state, prm, b, 0.0))
    np.testing.assert_allclose(gain, [np.log(2)] * 3 + [0.0, 0.0], atol=1e-6)
    h = lambda q: -(q * np.log(q) + (1 - q) * np.log(1 - q))
    gain = np.asarray(GAIN(state, prm, b, 0.1))
    np.testing.assert_allclose(gain[:3], h(0.5) - h(0.1), atol=1e-6)
    assert int(ACTIVE(jax.random.PRNGKey(0), state, prm, b)) == C.UP  # first best
    # Nothing left to learn: the active learner acts like bayes_map.
    sure = belief_of({Q_NORM: 1.0})
    key = jax.random.PRNGKey(1)
    assert int(ACTIVE(key, state, prm, sure)) == int(MAP(key, state, prm, sure))


def _point_mass_states(episodes):
    """Each episode's prepared carry: all posterior mass on its own norm."""
    beliefs = [belief_of({e["norm_id"]: 1.0}) for e in episodes]
    return jax.tree.map(lambda *x: jnp.stack(x), *beliefs)


@pytest.mark.slow  # an equivalence run of whole programs; the slow tier (CI runs both)
def test_bayes_map_with_the_true_norm_known_is_the_oracle_through_the_stateful_runner():
    # The oracle's rows come from the reference run shared with other files (tests/support/shared_protocol.py).
    all_eps, all_oracle = reference("oracle", [norm_id("clockwise_circulation"), norm_id("zone_r_capacity_1")])
    first_two = np.asarray([e["episode"] < 2 for e in all_eps])
    eps = [e for e, keep in zip(all_eps, first_two) if keep]
    oracle = {k: v[first_two] for k, v in all_oracle.items()}
    keys = jnp.stack([jax.random.PRNGKey(e["seed"]) for e in eps])
    args = tuple(jnp.asarray([e[k] for e in eps], jnp.int32) for k in ("layout_id", "norm_id", "group"))
    cfg = WorldConfig()
    policy = observer_policy("bayes_map")
    bayes = jax.jit(jax.vmap(lambda k, lay, n, g, st: run_episode(policy, k, lay, n, g, cfg, st)))(
        keys, *args, _point_mass_states(eps)
    )
    assert set(bayes) == set(oracle) and len(eps) == 8
    for name in oracle:
        np.testing.assert_array_equal(np.asarray(bayes[name]), oracle[name], err_msg=name)
    assert (oracle["goals"] == 2).all() and (oracle["sanctions"] == 0).all()


def test_identify_command_on_one_norm(tmp_path, capsys):
    out = tmp_path / "identify"
    assert main(["identify", "--norms", "even_turns_only", "--seeds", "0", "--out", str(out)]) == 0
    assert "identified" in capsys.readouterr().out
    result = json.loads((out / "identify.json").read_text())
    assert (out / "posterior_vs_step.png").stat().st_size > 0 and (out / "confusion.png").stat().st_size > 0
    (run,) = result["norms"][0]["runs"]
    mass = np.asarray(result["true_mass"][0][0])  # t = 0..200
    assert mass.shape == (201,) and np.isclose(mass[0], 1 / N_NORMS)
    assert (mass > 0).all()  # the true norm is never eliminated
    assert run["final_mass"] == 1.0 and 0 < run["first_map_step"] < 50 and run["conflicts"] == 0
    assert result["unidentified"] == [] and np.isclose(result["confusion"][EVEN][EVEN], 1.0)


@pytest.mark.slow
def test_evaluate_bayes_policy_on_two_norms(tmp_path):
    """The whole path: interaction phase, then the 6 test episodes per norm; the command
    (the same norms, so the same compiled programs) writes what the function returns.
    bayes_safe only: bayes_map goes through the same runner in the equivalence test above,
    and each policy compiles its own interaction and test programs."""
    norms = ["even_turns_only", "bend_left_1"]
    res = evaluate(observer_policy("bayes_safe"), norms=norms)
    assert res["seen"]["overall"]["episodes"] == 6
    assert res["seen"]["overall"]["task"] > 0
    path = tmp_path / "b.json"
    assert main(["evaluate", "--policy", "bayes_safe", "--norms", *norms, "--out", str(path)]) == 0
    written = json.loads(path.read_text())
    assert written["meta"]["threshold"] == 0.05
    for split in ("seen", "unseen"):
        assert written[split]["overall"] == res[split]["overall"], split
