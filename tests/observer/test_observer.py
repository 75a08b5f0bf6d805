"""The observer's belief and evidence (normjax.observer.belief / evidence; docs/observer.md).

Hand-built states on the cafe, stepped by the real world step, give evidence
whose likelihood is computed by hand from the norm definitions
(docs/world.md §7); random rollouts of random norms check that the true norm is
never eliminated and that everything the observer derives from positions
agrees with the world.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normjax import constants as C
from normjax.layouts.tables import world_tables
from normjax.norms import N_NORMS, context, judge
from normjax.observer import belief as B
from normjax.observer.evidence import observe_step
from normjax.observer.queues import queue_fields
from normjax.world.state import WorldConfig, make_params
from normjax.world.step import reset_world, step_world
from tests.support.world_helpers import actions, blank, params, put

CAFE = world_tables().at(0)
STEP = jax.jit(step_world)
UPDATE = jax.jit(B.update, static_argnames="source")
SOURCES = ("positions", "actions")

# Case 1 (t = 1): an agent steps from (6, 5) RIGHT into the Q cell (6, 6).  It is
# not a ring, chair, door, R or queue-path move and the agent has no history, so
# exactly forbidden_zone_q (0), even_turns_only (14: moving on odd t) and
# no_turns_1_mod_3 (17: t mod 3 = 1) forbid it.
CASE1_FORBIDDING = {0, 14, 17}
# Case 2 (t = 2): an orange agent exits from (3, 13) RIGHT through door C (3, 14).
# Exiting through C is forbidden by all_exit_left (1), all_exit_bottom (2),
# right_door_forbidden (6), group_doors_abc (42: orange A) and group_doors_bca
# (43: orange B); moving at t = 2 by odd_turns_only (15) and no_turns_2_mod_3 (18).
CASE2_FORBIDDING = {1, 2, 6, 15, 18, 42, 43}


def _case1(norm):
    s = put(blank(), 0, (6, 5), group=0)
    s = s.replace(t=jnp.int32(1))
    return s, STEP(jax.random.PRNGKey(0), s, actions((0, C.RIGHT)), params(norm=norm))


def _case2(norm):
    s = put(blank(), 0, (3, 13), group=0, leg=1)
    s = put(s, 1, (7, 1), group=1)  # a bystander that WAITs: no evidence
    s = s.replace(t=jnp.int32(2))
    return s, STEP(jax.random.PRNGKey(1), s, actions((0, C.RIGHT)), params(norm=norm))


def _expected(prior, forbidding, flag, eps):
    """Posterior by Bayes' rule: (1 - eps) for a matching prediction, eps otherwise."""
    predicts = np.array([n in forbidding for n in range(N_NORMS)])
    lik = np.where(predicts == flag, 1.0 - eps, eps)
    post = prior * lik
    return post / post.sum()


@pytest.mark.parametrize("source", SOURCES)
def test_posterior_equals_hand_computed_values(source):
    eps = 0.1
    s1, (s1b, info1) = _case1(norm=0)
    assert bool(info1.sanctioned[0])  # the world (forbidden_zone_q) sanctions it
    b = B.init_belief(CAFE, s1)
    b = UPDATE(b, s1, info1, CAFE, eps, source=source)
    want = _expected(np.full(N_NORMS, 1 / N_NORMS), CASE1_FORBIDDING, True, eps)
    np.testing.assert_allclose(np.asarray(B.probs(b)), want, rtol=1e-5)
    assert np.isclose(want[0], 0.9 / (3 * 0.9 + 47 * 0.1))

    s2, (_, info2) = _case2(norm=0)
    assert not bool(info2.sanctioned.any())
    b = B.new_episode(b, CAFE, s2)
    b = UPDATE(b, s2, info2, CAFE, eps, source=source)
    want = _expected(want, CASE2_FORBIDDING, False, eps)
    np.testing.assert_allclose(np.asarray(B.probs(b)), want, rtol=1e-5)
    assert int(b.n_judged) == 2 + (source == "actions")  # with actions the WAIT is read too
    assert int(b.n_sanctions) == 1 and int(b.n_conflicts) == 0


@pytest.mark.parametrize("source", SOURCES)
def test_eps_zero_eliminates_exactly_the_contradicted_norms(source):
    s1, (_, info1) = _case1(norm=14)
    b = UPDATE(B.init_belief(CAFE, s1), s1, info1, CAFE, 0.0, source=source)
    lp = np.asarray(b.log_probs)
    assert not np.isnan(lp).any()
    alive = set(np.flatnonzero(np.isfinite(lp)))
    assert alive == CASE1_FORBIDDING
    np.testing.assert_allclose(np.exp(lp[sorted(alive)]), 1 / 3, rtol=1e-6)
    assert np.all(np.exp(lp[[n for n in range(N_NORMS) if n not in alive]]) == 0.0)
    # An unsanctioned exit through C now eliminates nothing that is left.
    s2, (_, info2) = _case2(norm=14)
    b = UPDATE(B.new_episode(b, CAFE, s2), s2, info2, CAFE, 0.0, source=source)
    assert set(np.flatnonzero(np.isfinite(np.asarray(b.log_probs)))) == CASE1_FORBIDDING
    assert int(B.map_norm(b)) == 0  # ties go to the lowest id


def test_evidence_contradicting_every_hypothesis_is_dropped_without_nan():
    s1, (_, info1) = _case1(norm=0)
    b0 = UPDATE(B.init_belief(CAFE, s1), s1, info1, CAFE, 0.0, source="actions")
    # A sanctioned WAIT: no norm sanctions WAIT, so every hypothesis is contradicted.
    s = put(blank(), 0, (5, 5)).replace(t=jnp.int32(3))
    _, info = STEP(jax.random.PRNGKey(2), s, actions(), params(norm=0))
    info = info.replace(sanctioned=info.sanctioned.at[0].set(True))
    b1 = UPDATE(B.new_episode(b0, CAFE, s), s, info, CAFE, 0.0, source="actions")
    np.testing.assert_array_equal(np.asarray(b1.log_probs), np.asarray(b0.log_probs))
    assert int(b1.n_conflicts) == 1
    # With eps > 0 the same evidence is merely unlikely under every hypothesis.
    b2 = UPDATE(B.new_episode(b0, CAFE, s), s, info, CAFE, 0.05, source="actions")
    assert not np.isnan(np.asarray(b2.log_probs)).any() and int(b2.n_conflicts) == 0


def test_unknown_move_bits_never_charge_the_rhythm_norms():
    """A move by an agent whose last turn is unknown: move1_wait1 (19) may or may
    not forbid it, so neither flag value may count against it."""
    s, (_, info) = _case1(norm=0)
    b = B.init_belief(CAFE, s)
    hist = b.history.replace(moves_known=b.history.moves_known.at[0, 0].set(False))
    tr = jax.jit(observe_step, static_argnums=2)(CAFE, info, "actions")  # jitted: eager dispatch is slower
    lo, hi = jax.jit(B.predicted_permissible)(CAFE, s.t, info.pos, info.active, s.agents.group, hist, tr.action)
    assert not bool(lo[19, 0]) and bool(hi[19, 0])  # uncertain exactly for move1_wait1
    assert bool(jnp.all((lo == hi).at[19, 0].set(True)))
    for flag in (False, True):
        ll = jax.jit(B.log_likelihood)(
            CAFE, s.t, info.pos, info.active, s.agents.group, hist, tr, info.sanctioned.at[0].set(flag), 0.0
        )
        assert float(ll[19]) == 0.0
        assert (flag and not np.isfinite(float(ll[1]))) or (not flag and float(ll[1]) == 0.0)


def test_rhythm_rows_equal_the_predicates_rows():
    """`rhythm_permissible` is rows 19-21 of `judge` for every move history and action."""
    rng = np.random.default_rng(0)
    s = blank()
    for i in range(10):
        s = put(s, i, (5 + i // 5, 2 + 2 * (i % 5)), active=i != 3)
    ag = s.agents
    ctx = context(CAFE, ag.pos, ag.active, ag.group, ag.visited_q)
    for _ in range(20):
        moves = jnp.asarray(rng.random((10, 3)) < 0.6)
        action = jnp.asarray(rng.integers(0, 5, 10), jnp.int32)
        ref = judge(CAFE, ctx, 4, ag.pos, ag.active, action, ag.group, moves)[19:22]
        np.testing.assert_array_equal(np.asarray(B.rhythm_permissible(moves, ag.active, action)), np.asarray(ref))


def test_a_pushed_bystander_is_not_read_as_a_move():
    """Slot 0 walks RIGHT into slot 1's cell; slot 1 stays and is pushed to a random
    free neighbour.  Slot 1's unit step is never read as a move (its old cell is
    taken); slot 0's move is read unless slot 1 landed on slot 0's old cell."""
    s = put(put(blank(), 0, (5, 4)), 1, (5, 5))
    outcomes = set()
    for seed in range(8):
        _, info = STEP(jax.random.PRNGKey(seed), s, actions((0, C.RIGHT)), params(norm=0))
        assert bool(info.displaced[1]) and int(info.action[1]) == C.WAIT
        tr = observe_step(CAFE, info, "positions")
        assert not bool(tr.judged[1]) and not bool(tr.moved_known[1])
        swapped = tuple(np.asarray(info.next_pos[1])) == (5, 4)
        assert bool(tr.judged[0]) == (not swapped)
        assert int(tr.action[0]) == (C.WAIT if swapped else C.RIGHT)
        outcomes.add(swapped)
    assert False in outcomes


def test_jit_vmap_update_equals_unbatched_update():
    cfg = WorldConfig(capacity=10)  # the capacity of the other tests: their compiled UPDATE is reused
    norms = jnp.asarray([0, 13, 30, 47])
    p = jax.vmap(lambda n: make_params(0, 0, n_blind=0).replace(norm_id=n))(norms)

    def prep(key, prm):
        s = reset_world(key, prm, cfg)
        a = jax.random.randint(key, (10,), 0, 5)
        s2, info = step_world(jax.random.fold_in(key, 1), s, a, prm)
        return s, info

    keys = jax.random.split(jax.random.PRNGKey(4), 4)
    states, infos = jax.jit(jax.vmap(prep))(keys, p)
    lt = world_tables().at(0)
    beliefs = jax.jit(jax.vmap(lambda s: B.init_belief(lt, s)))(states)
    for source in SOURCES:
        batched = jax.jit(jax.vmap(lambda b, s, i: B.update(b, s, i, lt, 0.05, source)))(beliefs, states, infos)
        for j in range(4):
            one = jax.tree.map(lambda x: x[j], (beliefs, states, infos))
            single = UPDATE(*one[:3], lt, 0.05, source=source)
            for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(batched)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b)[j], rtol=1e-6)


# ---------------------------------------------------------------------------
# Random rollouts (random joint actions, so contests and pushes are frequent)

ROLL_STEPS = 30
ROLL_BATCH = 6


def _queue_fields_differ(lt, pos, active):
    """Whether `queues.queue_fields` disagrees with `normjax.norms.context` anywhere."""
    ref = context(lt, pos, active, jnp.zeros_like(active, jnp.int32), active)
    fast = queue_fields(lt.layout_index, pos, active)
    return jnp.any(jnp.stack([jnp.any(a != b) for a, b in zip(fast, (ref.queue_src, ref.queue_held, ref.queue_tail))]))


@jax.jit
def _random_rollouts(key, layout_id, norm_id):
    """ROLL_BATCH episodes of random actions on one layout under one norm, observed
    with eps = 0 by both evidence sources; per-step checks against the world."""

    def one(key):
        prm = make_params(0, 0, turnover_delay=(1, 3)).replace(layout_id=layout_id, norm_id=norm_id)
        lt = world_tables().at(layout_id)
        k0, k1 = jax.random.split(key)
        s = reset_world(k0, prm, WorldConfig())
        beliefs = tuple(B.init_belief(lt, s) for _ in SOURCES)

        def body(carry, k):
            s, bs = carry
            ka, kw = jax.random.split(k)
            s2, info = step_world(kw, s, jax.random.randint(ka, (10,), 0, 5), prm)
            out = []
            new = []
            for b, source in zip(bs, SOURCES):
                b2 = B.update(b, s, info, lt, 0.0, source)
                tr = observe_step(lt, info, source)
                h = b2.history
                on = s2.agents.active & h.present
                out.append(
                    dict(
                        queue_fields_differ=_queue_fields_differ(lt, s.agents.pos, s.agents.active),
                        true_alive=jnp.isfinite(b2.log_probs[norm_id]),
                        nan=jnp.isnan(b2.log_probs).any(),
                        bad_action=(tr.judged & (tr.action != info.action)).any(),
                        bad_moves=(on[:, None] & h.moves_known & (h.moves != s2.agents.moves)).any(),
                        bad_q=(on & (h.visited_q != s2.agents.visited_q)).any(),
                        conflicts=b2.n_conflicts,
                        judged=tr.judged.sum(),
                    )
                )
                new.append(b2)
            return (s2, tuple(new)), out

        return jax.lax.scan(body, (s, beliefs), jax.random.split(k1, ROLL_STEPS))[1]

    return jax.vmap(one)(jax.random.split(key, ROLL_BATCH))


@settings(max_examples=8, deadline=None, derandomize=True)
@given(norm=st.integers(0, N_NORMS - 1), layout=st.integers(0, 9), seed=st.integers(0, 2**20))
def test_true_norm_is_never_eliminated_and_derived_inputs_match_the_world(norm, layout, seed):
    out = jax.tree.map(np.asarray, _random_rollouts(jax.random.PRNGKey(seed), layout, norm))
    for source, o in zip(SOURCES, out):
        assert o["true_alive"].all(), (source, norm, layout)
        assert not o["nan"].any() and (o["conflicts"] == 0).all()
        assert not o["bad_action"].any() and not o["bad_moves"].any() and not o["bad_q"].any()
        assert not o["queue_fields_differ"].any()
    assert out[0]["judged"].sum() > 0


def test_random_rollouts_exercise_collisions():
    """The property test above sees contests and pushes (so the positions rules are tested)."""
    out = jax.tree.map(np.asarray, _random_rollouts(jax.random.PRNGKey(7), 0, 12))
    read_positions, read_actions = out[0]["judged"].sum(), out[1]["judged"].sum()
    assert 0 < read_positions < read_actions


def test_distribution_helpers():
    distrax = pytest.importorskip("distrax")  # the optional [observer] extra
    s1, (_, info1) = _case1(norm=0)
    prior = B.init_belief(CAFE, s1)
    b = UPDATE(prior, s1, info1, CAFE, 0.0, source="positions")
    assert np.isclose(float(B.entropy(prior)), np.log(N_NORMS), rtol=1e-6)
    assert np.isclose(float(B.entropy(b)), np.log(3), rtol=1e-6)
    assert np.isclose(float(B.kl(b, prior)), np.log(N_NORMS / 3), rtol=1e-5)
    assert np.isinf(float(B.kl(prior, b)))
    draws = jax.vmap(lambda k: B.sample(k, b))(jax.random.split(jax.random.PRNGKey(0), 64))
    assert set(np.asarray(draws).tolist()) <= CASE1_FORBIDDING
    assert isinstance(B.categorical(b), distrax.Categorical)


def test_queue_fields_equal_the_predicates_context_on_a_crowded_queue():
    """Agents on and around every queue path of the cafe: the table-based queue
    fields equal `normjax.norms.context`'s, agent by agent."""
    cells = [(1, 7), (1, 6), (1, 8), (2, 7), (2, 8), (2, 6), (3, 7), (3, 5), (1, 9), (2, 9)]
    s = blank()
    for i, c in enumerate(cells):
        s = put(s, i, c, active=i != 4)  # one slot inactive: it holds nothing
    ag = s.agents
    ref = context(CAFE, ag.pos, ag.active, ag.group, ag.visited_q)
    src, held, tail = queue_fields(CAFE.layout_index, ag.pos, ag.active)
    np.testing.assert_array_equal(np.asarray(src), np.asarray(ref.queue_src))
    np.testing.assert_array_equal(np.asarray(held), np.asarray(ref.queue_held))
    np.testing.assert_array_equal(np.asarray(tail), np.asarray(ref.queue_tail))
    assert (np.asarray(src) >= 0).sum() > 20 and np.asarray(held).any()
