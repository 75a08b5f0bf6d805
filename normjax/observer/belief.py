"""The ideal observer's belief over the 50 norms and its Bayesian update (docs/observer.md).

Hypotheses are the 50 norms of docs/world.md §7, with a uniform prior.  For
every observed transition each hypothesis n predicts whether the mover is
sanctioned: ``1 - w_n``, the permissibility mask `[50, K]` of
`normjax.norms.permissible` evaluated on the derived effective action against
the positions before the step.  The likelihood of the observed public flag is

    p(flag | n) = 1 - eps   if the prediction matches the flag,
                  eps       otherwise,

independently over agents and steps, so ``eps = 0`` is exact elimination (the
true norm always matches: the world's sanctions are this very predicate).
Transitions the observer cannot read (`evidence`) contribute nothing.

Unknown move-history bits (positions evidence only): the rhythm norms 19-21 are
the only predicates that read `moves`, and they are monotone in it, so their
rows are evaluated twice, with every unknown bit True and with every unknown
bit False.  Where the two agree the prediction is certain; where they differ the
hypothesis predicts either outcome for some completion of the unknown bits and
is given the larger of the two likelihoods (a profile likelihood over the
unknown bits, ``1 - eps``): it is never charged for what the observer could not
see.  With eps = 0 this keeps the true norm alive; for eps > 0 it treats the
hypothesis like one whose prediction matched.

Numerics: beliefs are normalised log-probabilities; eliminated hypotheses hold
-inf, and all terms are <= 0, so no inf - inf arises.  If a step's evidence
contradicts every surviving hypothesis (impossible for the true norm with
eps = 0 and exact evidence, e.g. a model mismatch or a corrupted input), that
step's evidence is dropped -- the belief stays as it was -- and
`Belief.n_conflicts` counts it; the result is deterministic and never NaN.

Everything is jittable and vmappable (a `Belief` is a pytree carried beside the
environment state).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from normjax import constants as C
from normjax.norms import N_NORMS, judge
from normjax.norms.predicates import RHYTHM_DEPTH
from normjax.norms.registry import RHYTHM_IDS
from normjax.observer.evidence import (
    PublicHistory,
    Transitions,
    advance,
    init_history,
    observe_step,
    refresh,
)
from normjax.observer.queues import fast_context


@struct.dataclass
class Belief:
    """Posterior over the 50 norms plus the public history it needs."""

    log_probs: jax.Array  # float32 [50]: normalised log posterior (-inf = eliminated)
    history: PublicHistory  # derived per-agent predicate inputs of the current episode
    n_judged: jax.Array  # int32: transitions used as evidence so far
    n_sanctions: jax.Array  # int32: sanctions among them
    n_conflicts: jax.Array  # int32: steps whose evidence contradicted every hypothesis (dropped)


def check_eps(eps) -> None:
    """eps must lie in [0, 0.5) (host-side check of concrete values)."""
    if isinstance(eps, jax.core.Tracer):
        return  # traced: checked where the value was concrete
    if not 0.0 <= float(eps) < 0.5:
        raise ValueError(f"eps must be in [0, 0.5), got {eps!r}")


def uniform_log_prior() -> jax.Array:
    return jnp.full((N_NORMS,), -jnp.log(jnp.float32(N_NORMS)), jnp.float32)


def init_belief(lt, state, log_prior=None) -> Belief:
    """A belief at the start of an episode (uniform prior unless `log_prior` is given)."""
    ag = state.agents
    z = jnp.int32(0)
    return Belief(
        log_probs=uniform_log_prior() if log_prior is None else normalize(log_prior),
        history=init_history(lt, ag.pos, ag.active),
        n_judged=z,
        n_sanctions=z,
        n_conflicts=z,
    )


def new_episode(belief: Belief, lt, state) -> Belief:
    """Carry the posterior into a new episode: a fresh public history for its agents."""
    return belief.replace(history=init_history(lt, state.agents.pos, state.agents.active))


def normalize(log_p):
    """Normalised log-probabilities (all -inf stays all -inf, without NaN)."""
    lse = jax.nn.logsumexp(log_p)
    return jnp.where(jnp.isfinite(lse), log_p - jnp.where(jnp.isfinite(lse), lse, 0.0), log_p)


def rhythm_permissible(moves, active, action):
    """bool [3, K]: rows 19-21 (move1_wait1 .. move3_wait1) of the permissibility mask.

    The rule of docs/world.md §7 with the depths of `normjax.norms.predicates`:
    a move is forbidden after moves on each of the last d turns; WAIT and
    inactive slots are always permitted.  Equal to `judge(...)[19:22]` (tested);
    computed here because a second full `judge` for these three rows doubles
    the update's time on CPU (XLA does not prune the rows it does not use).
    """
    run = jnp.cumprod(moves.astype(jnp.int32), axis=1).astype(bool)  # [K, 3]
    moving = active.astype(bool) & (action != C.WAIT)
    return ~run.T[jnp.asarray(RHYTHM_DEPTH) - 1] | ~moving[None, :]


def predicted_permissible(lt, t, pos, active, group, history: PublicHistory, action):
    """(lo, hi) permissibility masks [50, K] of the effective `action`, bracketing
    unknown move bits.

    `lo` assumes every unknown bit is a move (strictest for the rhythm norms),
    `hi` that none is; they differ only in the rhythm rows, and only where a
    history bit is unknown.  `action` must be effective (docs/world.md §3): the
    observer's derived actions are, by construction.
    """
    ctx = fast_context(lt, pos, active, group, history.visited_q)
    unknown = ~history.moves_known
    lo = judge(lt, ctx, t, pos, active, action, group, history.moves | unknown)
    a, b = RHYTHM_IDS.start, RHYTHM_IDS.stop
    hi_rhythm = rhythm_permissible(history.moves & ~unknown, active, action)
    hi = jnp.concatenate([lo[:a], hi_rhythm, lo[b:]], axis=0)
    return lo, hi


def log_likelihood(lt, t, pos, active, group, history: PublicHistory, tr: Transitions, sanctioned, eps):
    """Log-likelihood [50] of one step's public flags under each hypothesis."""
    eps = jnp.asarray(eps, jnp.float32)
    lo, hi = predicted_permissible(lt, t, pos, active, group, history, tr.action)
    certain = lo == hi
    match = (~lo) == sanctioned.astype(bool)[None, :]
    log_hit, log_miss = jnp.log1p(-eps), jnp.log(eps)
    per = jnp.where(certain & ~match, log_miss, log_hit)  # uncertain: profile likelihood
    return jnp.sum(jnp.where(tr.judged[None, :], per, 0.0), axis=1)


def update(belief: Belief, state_before, info, lt, eps=0.0, source: str = "positions") -> Belief:
    """Bayes update of `belief` by one observed step.

    `state_before`: the WorldState at the start of the step (read: `t` and
    `agents.group`); `info`: its StepInfo (read: see `normjax.observer.evidence`);
    `lt`: the layout's tables; `eps`: the flag noise rate in [0, 0.5);
    `source`: "positions" or "actions" (static).
    """
    check_eps(eps)
    tr = observe_step(lt, info, source)
    active = info.active.astype(bool)
    history = refresh(belief.history, lt, info.pos, active)
    sanctioned = info.sanctioned.astype(bool) & active
    ll = log_likelihood(lt, state_before.t, info.pos, active, state_before.agents.group, history, tr, sanctioned, eps)
    post = belief.log_probs + ll
    lse = jax.nn.logsumexp(post)
    dead = ~jnp.isfinite(lse)  # every hypothesis contradicted: drop this step's evidence
    return Belief(
        log_probs=jnp.where(dead, belief.log_probs, post - jnp.where(dead, 0.0, lse)),
        history=advance(history, lt, info, tr),
        n_judged=belief.n_judged + tr.judged.sum(dtype=jnp.int32),
        n_sanctions=belief.n_sanctions + (tr.judged & sanctioned).sum(dtype=jnp.int32),
        n_conflicts=belief.n_conflicts + dead.astype(jnp.int32),
    )


# ---------------------------------------------------------------------------
# Read-outs


def probs(belief: Belief):
    """Posterior probabilities [50]."""
    return jnp.exp(belief.log_probs)


def map_norm(belief: Belief):
    """The MAP norm id (ties go to the lowest id)."""
    return jnp.argmax(belief.log_probs).astype(jnp.int32)


def plausible(belief: Belief, threshold=0.05):
    """bool [50]: norms whose posterior exceeds `threshold` (the MAP norm always counts)."""
    p = probs(belief)
    return (p > threshold) | (jnp.arange(N_NORMS) == map_norm(belief))


def survivors(belief: Belief):
    """bool [50]: hypotheses not eliminated."""
    return jnp.isfinite(belief.log_probs)


# ---------------------------------------------------------------------------
# Distribution helpers (distrax, an optional dependency: pip install "normjax[observer]")


def categorical(belief: Belief):
    """The posterior as a `distrax.Categorical` (eliminated hypotheses have logit -inf)."""
    try:
        import distrax
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("entropy / sample / kl need distrax: pip install 'normjax[observer]'") from e
    return distrax.Categorical(logits=belief.log_probs)


def entropy(belief: Belief):
    """Posterior entropy in nats (0 for a point mass, log 50 for the prior)."""
    return categorical(belief).entropy()


def sample(key, belief: Belief):
    """A norm id drawn from the posterior."""
    return categorical(belief).sample(seed=key).astype(jnp.int32)


def kl(p: Belief, q: Belief):
    """KL(p || q) in nats (inf where q eliminated a hypothesis p keeps)."""
    return categorical(p).kl_divergence(categorical(q))


__all__ = [
    "Belief",
    "categorical",
    "check_eps",
    "entropy",
    "init_belief",
    "kl",
    "log_likelihood",
    "map_norm",
    "new_episode",
    "normalize",
    "plausible",
    "predicted_permissible",
    "probs",
    "rhythm_permissible",
    "sample",
    "survivors",
    "uniform_log_prior",
    "update",
]
