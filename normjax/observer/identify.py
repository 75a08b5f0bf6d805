"""Identifiability: what 200 interaction steps reveal about each norm (docs/observer.md).

`identify(norms, seeds)` runs every norm's interaction phase (docs/world.md §9.1)
once per protocol seed (key `PRNGKey(base_seed(norm, seed))`), all in one
vmapped program, with the observer's newcomer learning as in the protocol, and
records the posterior after every step.  Per (norm, seed) it reports:

* the posterior mass on the true norm after t steps, t = 0..200 (t = 0 is the prior);
* the first step at which the true norm is the strict MAP (-1: never);
* the final posterior, averaged over seeds into a 50 x 50 confusion matrix
  (row = true norm, column = posterior mass);
* for every other hypothesis holding more than 1% at the end (with eps = 0:
  every survivor, i.e. every norm that predicted each readable flag), why the observations did not
  separate it from the true norm.  Diagnostics read the world's own state (this
  is analysis, not the observer): in every observed state, for every active
  agent and each of its five actions, would the two norms judge it differently?

  - ``identical``: in no observed state did any agent have a move on which the
    two norms differ (they sanction identically on everything that happened);
  - ``not attempted``: such a move was available, but nobody made one;
  - ``unreadable``: someone made one, but positions did not show which move it
    was (a collision or push; positions evidence only);
  - ``noise`` (eps > 0 only): it was contradicted, but too few times to fall
    below `CONFUSER_MASS`.

`figures(result, out_dir)` draws the posterior on the true norm against the
step per family (median and interquartile range over norms and seeds) and the
confusion matrix.  `normjax identify` is the command-line front end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from normjax.cache import compiled
from normjax.layouts.tables import world_tables
from normjax.norms import FAMILIES, FAMILY_IDS, N_NORMS, NORMS, permissible_per_action
from normjax.observer.belief import check_eps
from normjax.observer.evidence import check_source, observe_step
from normjax.observer.interaction import INTERACTION_STEPS, learn
from normjax.observer.policies import make_act
from normjax.protocol.seeds import base_seed
from normjax.world.state import WorldConfig

REASONS = ("identical", "not attempted", "unreadable", "noise")
CONFUSER_MASS = 0.01  # a hypothesis holding more than this at the end is a confuser


def _probe(source):
    """Per-step trace: the posterior, and which hypotheses the step could / did separate."""

    def probe(state, info, belief, params):
        lt = world_tables().at(params.layout_id)
        ag = state.agents
        masks = permissible_per_action(lt, state.t, ag.pos, ag.active, ag.group, ag.moves, ag.visited_q)
        truth = masks[params.norm_id]  # [K, 5]
        differs = (masks != truth[None]) & ag.active[None, :, None]  # [50, K, 5]
        taken = jnp.take_along_axis(differs, info.action[None, :, None], axis=2)[..., 0]  # [50, K]
        read = observe_step(lt, info, source)
        return dict(
            log_probs=belief.log_probs,
            available=differs.any(axis=(1, 2)),
            taken=taken.any(axis=1),
            read=(taken & read.judged[None, :]).any(axis=1),
        )

    return probe


def run(
    norm_ids=None,
    seeds=(0, 1, 2),
    eps: float = 0.0,
    source: str = "positions",
    learner: str = "bayes_map",
    capacity: int = 10,
    steps: int = INTERACTION_STEPS,
) -> dict:
    """Raw traces of every (norm, seed) interaction phase as numpy arrays [N, S, ...]."""
    norm_ids = list(range(N_NORMS)) if norm_ids is None else [int(n) for n in norm_ids]
    seeds = [int(s) for s in seeds]
    act = make_act(learner, eps)  # bad settings raise here, before the cache is asked
    check_eps(eps)
    check_source(source)
    cfg = WorldConfig(capacity=capacity)
    keys = jnp.stack([jax.random.PRNGKey(base_seed(n, s)) for n in norm_ids for s in seeds])
    nids = jnp.asarray([n for n in norm_ids for _ in seeds], jnp.int32)
    fn = jax.jit(jax.vmap(lambda k, n: learn(k, n, act, eps, source, cfg, steps, _probe(source))))
    # The program depends on these settings beyond the arguments' shapes: a repeated run
    # loads it whole from the executable cache (normjax.cache) instead of tracing it.
    key = json.dumps(dict(learner=learner, eps=repr(float(eps)), source=source, capacity=capacity, steps=steps))
    final, trace = jax.block_until_ready(compiled("identify", fn, (keys, nids), static_key=key)(keys, nids))
    shape = (len(norm_ids), len(seeds))
    out = {k: np.asarray(v).reshape(shape + v.shape[1:]) for k, v in trace.items()}
    for name in ("n_judged", "n_sanctions", "n_conflicts"):
        out[name] = np.asarray(getattr(final, name)).reshape(shape)
    out.update(norm_ids=np.asarray(norm_ids), seeds=np.asarray(seeds))
    return out


def analyse(raw: dict, eps: float = 0.0, source: str = "positions", learner: str = "bayes_map") -> dict:
    """Summaries of `run`'s traces (JSON-ready)."""
    norm_ids, seeds = list(raw["norm_ids"]), list(raw["seeds"])
    n, s = len(norm_ids), len(seeds)
    lp = raw["log_probs"]  # [N, S, T, 50]
    post = np.exp(lp)
    prior = np.full((n, s, 1, N_NORMS), 1.0 / N_NORMS)
    post = np.concatenate([prior, post], axis=2)  # t = 0..T
    rows = np.arange(n)
    true_mass = post[rows, :, :, norm_ids]  # [N, S, T+1]
    others = post.copy()
    others[rows, :, :, norm_ids] = -1.0
    strict = true_mass > others.max(axis=3)
    first_map = np.where(strict.any(axis=2), strict.argmax(axis=2), -1)
    final = post[:, :, -1, :]  # [N, S, 50]
    confusion = np.zeros((N_NORMS, N_NORMS))
    for i, nid in enumerate(norm_ids):
        confusion[nid] = final[i].mean(axis=0)
    available = raw["available"].any(axis=2)  # [N, S, 50]
    taken = raw["taken"].any(axis=2)
    read = raw["read"].any(axis=2)

    norms = []
    for i, nid in enumerate(norm_ids):
        runs = []
        for j, seed in enumerate(seeds):
            confusers = []
            for m in np.flatnonzero(final[i, j] > CONFUSER_MASS):
                if m == nid:
                    continue
                reason = (
                    "identical"
                    if not available[i, j, m]
                    else "not attempted"
                    if not taken[i, j, m]
                    else "unreadable"
                    if not read[i, j, m]
                    else "noise"
                )
                confusers.append(dict(norm=NORMS[m].name, mass=round(float(final[i, j, m]), 4), reason=reason))
            runs.append(
                dict(
                    seed=int(seed),
                    final_mass=round(float(true_mass[i, j, -1]), 4),
                    first_map_step=int(first_map[i, j]),
                    sanctions=int(raw["n_sanctions"][i, j]),
                    judged=int(raw["n_judged"][i, j]),
                    conflicts=int(raw["n_conflicts"][i, j]),
                    confusers=confusers,
                )
            )
        identified = [r["final_mass"] > 0.5 for r in runs]
        norms.append(
            dict(
                id=int(nid),
                name=NORMS[nid].name,
                family=NORMS[nid].family,
                identified_seeds=int(sum(identified)),
                runs=runs,
            )
        )
    return dict(
        what="posterior of the ideal observer on the true norm over each norm's interaction phase",
        eps=eps,
        source=source,
        learner=learner,
        seeds=[int(x) for x in seeds],
        steps=int(lp.shape[2]),
        identified_all_seeds=sum(r["identified_seeds"] == s for r in norms),
        unidentified=[
            dict(
                name=r["name"],
                family=r["family"],
                identified_seeds=r["identified_seeds"],
                confusers=sorted({c["norm"] + " (" + c["reason"] + ")" for run in r["runs"] for c in run["confusers"]}),
            )
            for r in norms
            if r["identified_seeds"] < s
        ],
        norms=norms,
        true_mass=np.round(true_mass, 5).tolist(),
        confusion=np.round(confusion, 5).tolist(),
        norm_ids=[int(x) for x in norm_ids],
    )


def dumps(result: dict) -> str:
    """JSON with one line per innermost list of numbers (the per-step arrays stay compact)."""
    text = json.dumps(result, indent=1)
    return re.sub(r"\[\s+([-+0-9.eE,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)


def figures(result: dict, out_dir) -> list[Path]:
    """posterior_vs_step.png (by family) and confusion.png under `out_dir`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    mass = np.asarray(result["true_mass"])  # [N, S, T+1]
    ids = result["norm_ids"]
    steps = np.arange(mass.shape[2])
    fig, axes = plt.subplots(1, len(FAMILIES), figsize=(14, 3.4), sharey=True)
    for ax, fam in zip(axes, FAMILIES):
        sel = [i for i, nid in enumerate(ids) if NORMS[nid].family == fam]
        if not sel:
            continue
        m = mass[sel].reshape(-1, mass.shape[2])
        q25, q50, q75 = np.percentile(m, [25, 50, 75], axis=0)
        ax.fill_between(steps, q25, q75, alpha=0.3, label="IQR")
        ax.plot(steps, q50, lw=2, label="median")
        ax.set_title(f"{fam} ({len(sel)} norms x {mass.shape[1]} seeds)")
        ax.set_xlabel("interaction step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("posterior on the true norm")
    for ax in axes:
        if ax.has_data():
            ax.legend(loc="lower right")
            break
    fig.suptitle(
        f"Ideal observer, interaction phase (eps={result['eps']}, {result['source']} evidence, "
        f"newcomer {result['learner']})"
    )
    fig.tight_layout()
    p1 = out_dir / "posterior_vs_step.png"
    fig.savefig(p1, dpi=120, bbox_inches="tight")
    plt.close(fig)

    conf = np.asarray(result["confusion"])
    fig, ax = plt.subplots(figsize=(9, 8))
    im = ax.imshow(conf, cmap="viridis", vmin=0, vmax=1)
    for b in (ids.start for ids in FAMILY_IDS[1:]):  # family boundaries
        ax.axhline(b - 0.5, color="w", lw=0.6)
        ax.axvline(b - 0.5, color="w", lw=0.6)
    names = [f"{i} {NORMS[i].name}" for i in range(N_NORMS)]
    ax.set_yticks(range(N_NORMS), names, fontsize=5)
    ax.set_xticks(range(N_NORMS), [str(i) for i in range(N_NORMS)], fontsize=5)
    ax.set_xlabel("hypothesis (posterior mass after 200 steps, mean over seeds)")
    ax.set_ylabel("true norm")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    p2 = out_dir / "confusion.png"
    fig.savefig(p2, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return [p1, p2]


def identify(
    norm_ids=None,
    seeds=(0, 1, 2),
    eps: float = 0.0,
    source: str = "positions",
    learner: str = "bayes_map",
    capacity: int = 10,
    out_dir=None,
) -> dict:
    """`run` + `analyse`; with `out_dir`, also writes identify.json and the figures."""
    result = analyse(run(norm_ids, seeds, eps, source, learner, capacity), eps, source, learner)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "identify.json").write_text(dumps(result))
        figures(result, out_dir)
    return result


def format_summary(result: dict) -> str:
    """Per-family counts and the unidentified norms with their confusers and reasons."""
    s = len(result["seeds"])
    lines = [
        f"identified (posterior on the true norm > 0.5 after {result['steps']} steps) in all {s} seeds: "
        f"{result['identified_all_seeds']} of {len(result['norms'])} norms"
    ]
    for fam in FAMILIES:
        rows = [r for r in result["norms"] if r["family"] == fam]
        if rows:
            ok = sum(r["identified_seeds"] == s for r in rows)
            med = [run["first_map_step"] for r in rows for run in r["runs"] if run["first_map_step"] >= 0]
            lines.append(
                f"  {fam:<13} {ok:>2}/{len(rows)}  median first MAP step {np.median(med) if med else float('nan'):.0f}"
            )
    for u in result["unidentified"]:
        lines.append(
            f"  not identified: {u['name']} ({u['identified_seeds']}/{s} seeds) vs " + "; ".join(u["confusers"])
        )
    return "\n".join(lines)


__all__ = ["CONFUSER_MASS", "REASONS", "analyse", "dumps", "figures", "format_summary", "identify", "run"]
