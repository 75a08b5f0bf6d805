"""The ideal observer replayed on an interaction transcript, restricted to what the newcomer saw.

    steps = replay(records, eps=0.0)   # per step: posterior after it, bits, judged transitions

`normjax.observer` reads every public transition of every step (docs/observer.md).  The
newcomer of an `llm-eval` run or a `play` participant saw less: its prompts show the grid
only while it is on it, a red cross only on an agent still on the grid one step later, and
its memory keeps its own action and sanction.  So the observer here is fed exactly that
(`seen_masks`, the rule of `belief_analysis.step_evidence`):

* the newcomer's own transition in step t is evidence when it was on the grid at t (it
  chose the move, and its memory records the sanction, also on the step it leaves);
* another agent's transition is evidence when the newcomer was on the grid at t and slot 0
  is on it at t+1 (the newcomer sees both ends), and the agent is on the grid at t and
  still at t+1 (so a red cross would be shown): an agent walking out through a door is
  never evidence, since whether it was sanctioned cannot be seen;
* positions the newcomer did not see are not used for the predicates' history either:
  the move bit of a transition that is not seen on both ends is unknown (the likelihood
  brackets the rhythm norms over it, `normjax.observer.belief`), and a stay in Q is
  recorded only from positions the newcomer saw (a visit while it was away is missed:
  the one norm reading it, ``visit_q_before_chair``, may then be charged wrongly; such a
  step is dropped as a conflict when it contradicts every hypothesis).

Two differences remain, both bookkeeping rather than evidence: the observer tracks agents
by slot (the transcript's identity) where the newcomer matches positions from one step to
the next, and it derives every transition, the newcomer's own included, from positions
(evidence source ``"positions"``), where the newcomer knows its own executed action.

The information of a step is KL(posterior after || posterior before) in bits: how far the
step's evidence moved the ideal belief (always >= 0, finite since the support only
shrinks; under a uniform belief over n survivors of which m remain it is log2(n / m), as
is the entropy drop, which however can be negative when eps > 0).  It is the step's whole
evidence, every transition the newcomer saw, whatever the step's event class.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from normjax import constants as C
from normjax.analysis.belief_analysis import step_evidence
from normjax.layouts.tables import layout_id, world_tables
from normjax.norms import N_NORMS, norm_id
from normjax.observer.belief import Belief, check_eps, init_belief, log_likelihood
from normjax.observer.evidence import advance, observe_step, refresh

OFF_GRID = -1  # a cell the newcomer did not see: never in Q


class _Info(NamedTuple):
    """The StepInfo fields the positions evidence reads."""

    active: jax.Array
    pos: jax.Array
    next_pos: jax.Array
    exited: jax.Array
    sanctioned: jax.Array
    action: jax.Array


def step_arrays(records: list[dict]) -> dict:
    """numpy arrays [T, ...] of an interaction transcript's steps (slot 0 the newcomer)."""
    steps = records[1:]
    n, k = len(steps), len(steps[0]["agents"])
    out = dict(
        t=np.zeros(n, np.int32),
        active=np.zeros((n, k), bool),
        pos=np.full((n, k, 2), OFF_GRID, np.int32),
        next_pos=np.full((n, k, 2), OFF_GRID, np.int32),
        exited=np.zeros((n, k), bool),
        sanctioned=np.zeros((n, k), bool),
        group=np.zeros((n, k), np.int32),
    )
    for i, rec in enumerate(steps):
        out["t"][i] = rec["t"]
        for a in rec["agents"]:
            if not a["active"]:
                continue
            s = a["slot"]
            out["active"][i, s], out["exited"][i, s] = True, bool(a["exited"])
            out["sanctioned"][i, s], out["group"][i, s] = bool(a["sanctioned"]), int(a["group"])
            out["pos"][i, s] = a["pos"]
            out["next_pos"][i, s] = a["pos"] if a["next"] is None else a["next"]
    return out


def seen_masks(arrays: dict) -> dict:
    """Per step: `judge` bool [T, K] (transitions that are evidence), `before` / `after` bool [T]
    (the newcomer saw the grid at the start / the end of the step); see the module docstring."""
    active, exited = arrays["active"], arrays["exited"]
    before = active[:, 0]
    after = np.append(active[1:, 0], False)  # the last step's outcome is never shown
    still_there = active & ~exited  # on the grid at t+1 in the same slot
    judge = (before & after)[:, None] & still_there
    judge[:, 0] = before
    return dict(judge=judge, before=before, after=after)


def _observe(layout, eps, belief: Belief, x):
    """One step of the restricted observer: `update` with the transitions and positions the
    newcomer did not see taken out."""
    lt = world_tables().at(layout)
    active = x["active"]
    seen_pos = jnp.where(x["before"], x["pos"], OFF_GRID)
    seen_next = jnp.where(x["after"], x["next_pos"], OFF_GRID)
    wait = jnp.full(active.shape, C.WAIT, jnp.int32)  # not read: the positions source derives it
    info = _Info(active, x["pos"], x["next_pos"], x["exited"], x["sanctioned"], wait)
    tr = observe_step(lt, info, "positions")
    both = x["before"] & x["after"]
    tr = tr.replace(judged=tr.judged & x["judge"], moved_known=tr.moved_known & (both | ~active))
    history = refresh(belief.history, lt, seen_pos, active)
    sanctioned = x["sanctioned"] & active
    ll = log_likelihood(lt, x["t"], x["pos"], active, x["group"], history, tr, sanctioned, eps)
    post = belief.log_probs + ll
    lse = jax.nn.logsumexp(post)
    dead = ~jnp.isfinite(lse)  # every hypothesis contradicted: the step is dropped, as `update` does
    new = Belief(
        log_probs=jnp.where(dead, belief.log_probs, post - jnp.where(dead, 0.0, lse)),
        history=advance(history, lt, info._replace(pos=seen_pos, next_pos=seen_next), tr),
        n_judged=belief.n_judged + tr.judged.sum(dtype=jnp.int32),
        n_sanctions=belief.n_sanctions + (tr.judged & sanctioned).sum(dtype=jnp.int32),
        n_conflicts=belief.n_conflicts + dead.astype(jnp.int32),
    )
    return new, (new.log_probs, tr.judged.sum(dtype=jnp.int32), dead)


class _StartAgents(NamedTuple):
    pos: jax.Array
    active: jax.Array


class _Start(NamedTuple):
    """What `init_belief` reads of the first state: the agents' cells and who is on the grid."""

    agents: _StartAgents


def _replay(layout, eps, xs):
    """The restricted observer over a transcript's steps -> (log posterior after each step
    [T, 50], transitions used [T], dropped steps [T])."""
    lt = world_tables().at(layout)
    first = jax.tree.map(lambda a: a[0], xs)
    start = _Start(_StartAgents(jnp.where(first["before"], first["pos"], OFF_GRID), first["active"]))
    return jax.lax.scan(lambda b, x: _observe(layout, eps, b, x), init_belief(lt, start), xs)[1]


_replay_jit = jax.jit(_replay)


def _run(args):
    """Through the executable cache when the command line configured one (`normjax.cache`)."""
    from normjax.cache import compiled, persistent

    if not persistent():
        return _replay_jit(*args)
    return compiled("observer_replay", _replay_jit, args)(*args)


def kl_bits(after, before) -> np.ndarray:
    """KL(after || before) in bits, row by row, from log-probabilities [..., 50] (float64 on the
    host; terms with after = 0 are 0, and after > 0 implies before > 0 here)."""
    after, before = np.asarray(after, np.float64), np.asarray(before, np.float64)
    p = np.exp(after)
    diff = np.where(p > 0, after - np.where(np.isfinite(before), before, 0.0), 0.0)
    return np.maximum((p * diff).sum(-1), 0.0) / np.log(2)


def entropy_bits(log_p) -> np.ndarray:
    log_p = np.asarray(log_p, np.float64)
    p = np.exp(log_p)
    return -(p * np.where(p > 0, log_p, 0.0)).sum(-1) / np.log(2)


def replay(records: list[dict], eps: float = 0.0) -> list[dict]:
    """Per step of an interaction transcript: its event class (`step_evidence`), the transitions
    the observer used, ``bits`` (KL of the step's update), the posterior's entropy after it
    (bits), the number of surviving norms, the posterior of the episode's norm, whether the
    step was dropped as a conflict, and ``posterior`` (the 50 probabilities after the step)."""
    check_eps(eps)
    header = records[0]
    if "layout" not in header:
        raise ValueError(f"transcript {header.get('name')!r} has no layout in its header; not a normjax trajectory")
    if len(records) < 2:
        return []  # an interaction phase of no steps
    arrays = step_arrays(records)
    masks = seen_masks(arrays)
    xs = dict(arrays, **masks)
    args = (np.int32(layout_id(header["layout"])), np.float32(eps), {k: jnp.asarray(v) for k, v in xs.items()})
    log_post, used, dropped = (np.asarray(a) for a in _run(args))
    prior = np.full((1, N_NORMS), -np.log(N_NORMS))
    before = np.concatenate([prior, log_post[:-1]], axis=0)
    bits, ent = kl_bits(log_post, before), entropy_bits(log_post)
    norm = header.get("norm")
    true_id = norm_id(norm["name"]) if isinstance(norm, dict) else None
    out = []
    for i, ev in enumerate(step_evidence(records)):
        post = np.exp(log_post[i].astype(np.float64))
        out.append(
            dict(
                t=ev["t"],
                event=ev["event"],
                judged=int(used[i]),
                bits=round(float(bits[i]), 6),
                entropy_after=round(float(ent[i]), 6),
                survivors=int(np.isfinite(log_post[i]).sum()),
                p_true_after=None if true_id is None else round(float(post[true_id]), 6),
                conflict=bool(dropped[i]),
                posterior=[round(float(x), 6) for x in post],
            )
        )
    return out


__all__ = ["entropy_bits", "kl_bits", "replay", "seen_masks", "step_arrays"]
