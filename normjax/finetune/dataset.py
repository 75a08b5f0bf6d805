"""Building a training or held-out file of one task and one family.

    build(task, family, split, n, seed=0, policy=DEFAULT_POLICY, frames=False) -> (records, manifest)
    write(out_dir, records, manifest) -> (jsonl path, manifest path)

With `frames` the records carry their rendered frame
(`normjax.finetune.frames`): `records.pngs` maps each record's image path
to its PNG bytes and `write` puts them beside the JSON Lines file.  With
`states_from` (an `llm-eval` run directory) the newcomer states are the
model's own, read back from its interaction transcripts
(`normjax.finetune.readback`) instead of harvested from a scripted policy.

Norms: the family's norms of the split (paper Table A4, `NormSpec.held_out`;
"heldout" = the held-out norms), each episode's norm taken in turn.  Episodes:
the interaction phase harvested in batches of `batch` episodes
(`normjax.finetune.harvest`); episode j of a build has seed
``seed * 1_000_003 + j`` (key ``PRNGKey`` of it).  Records are drawn with
``numpy.random.default_rng(seed)``: the same arguments give the same file.

* compliant_action / norm_selection: states of the newcomer acting by
  `policy`, stratified evenly over the norms (with `balance_actions`, each
  norm's share over the oracle's action); Compliant Action states where no
  action scores 1 are dropped and counted (manifest ``dropped``);
* norm_judgment: transitions of episodes where every agent is scripted and the
  newcomer is norm-blind (`JUDGMENT_POLICY`), drawn in (violation, compliant)
  pairs with the same norm and cue (`normjax.finetune.balance`), spread evenly
  over the norms; more episodes are run, up to `max_episodes`, until every norm
  holds its share, and the manifest reports what each norm got;
* action_judgment: half compliant_action records, half norm_judgment ones.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from normjax.cli_names import FINETUNE_SPLITS
from normjax.constants import INTERACTION_STEPS
from normjax.finetune import records as R
from normjax.finetune.balance import balanced_by_norm, judgment_pool, pair_capacity
from normjax.finetune.frames import CHUNK, record_frames
from normjax.finetune.harvest import check_policy, harvest
from normjax.finetune.rewards import TASKS
from normjax.finetune.text import Episode, own_violation_shown
from normjax.norms import FAMILIES, NORMS

SPLITS = FINETUNE_SPLITS
FORMAT = "normjax.finetune/1"
EPISODES_PER_RECORD = 1 / 16  # newcomer tasks: about 16 records per episode at most, for variety
SEED_STRIDE = 1_000_003
# Judgment episodes: every agent scripted, the newcomer norm-blind, so that fresh agents
# (each replaced newcomer) violate before they have any red cross (`balance`).
JUDGMENT_POLICY = "blind"
# The newcomer whose states Compliant Action and Norm Selection records show: the norm-aware oracle,
# except that at each step with probability harvest.EPSILON_BLIND the norm-blind policy acts, so
# that, like the paper's states (harvested from an SFT policy), some prompts show the newcomer's own
# red crosses (manifest `newcomer_own_violation`); the oracle's newcomer never violates.
DEFAULT_POLICY = "epsilon_blind"


def split_norms(family: str, split: str) -> list[int]:
    """Norm ids of the family in the split (Table A4)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    return [n.id for n in NORMS if n.family == family and n.held_out == (split == "heldout")]


def check_args(task: str, family: str, split: str, n: int, policy: str) -> list[int]:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")
    check_policy(policy)
    if n < 1:
        raise ValueError(f"the number of examples (--examples) must be >= 1, got {n}")
    return split_norms(family, split)


class Records(list):
    """The records of a build; `pngs`: image path (relative to the file) -> PNG bytes."""

    pngs: dict


class _Episodes:
    """Harvested episodes of one policy, generated batch by batch on demand."""

    def __init__(
        self, norms: list[int], seed: int, policy: str, batch: int, steps: int, offset: int, shared: dict | None = None
    ):
        self.norms, self.seed, self.policy, self.batch, self.steps = norms, seed, policy, batch, steps
        self.next = offset
        self.episodes: list[Episode] = []
        self.seeds: list[int] = []
        # batches harvested by earlier builds of the same call (`build(shared=...)`): a batch is a
        # function of this key alone, so a build takes exactly the batches it would harvest itself
        self.shared = {} if shared is None else shared

    def at_least(self, n: int | None) -> _Episodes:
        """Harvest until at least n episodes are held (None: nothing asked)."""
        while n is not None and len(self.episodes) < n:
            self.more()
        return self

    def more(self) -> list[Episode]:
        idx = range(self.next, self.next + self.batch)
        self.next += self.batch
        seeds = [self.seed * SEED_STRIDE + j for j in idx]
        ids = [self.norms[j % len(self.norms)] for j in idx]
        key = (self.policy, self.steps, tuple(ids), tuple(seeds))
        if key not in self.shared:
            h = harvest(ids, seeds, self.policy, self.steps)
            self.shared[key] = [Episode(h, e) for e in range(self.batch)]
        new = self.shared[key]
        self.episodes += new
        self.seeds += seeds
        return new


def _newcomer_records(
    task,
    eps,
    n,
    split,
    norms,
    rng,
    frames: bool,
    pngs: dict,
    tick,
    dropped: dict,
    balance_actions: bool = False,
    shown: dict | None = None,
) -> list[dict]:
    min_step = R.MIN_STEP if task == "norm_selection" else 0
    scored = task == "compliant_action"
    if isinstance(eps, _Episodes):
        want = max(len(norms), int(np.ceil(n * EPISODES_PER_RECORD)))
        while len(eps.episodes) < want:
            eps.more()
    pool: dict[int, list] = {}
    for ep in eps.episodes:
        pool.setdefault(ep.norm_id, []).extend((ep, i) for i in R.newcomer_candidates(ep, min_step, scored))
        if scored:  # states where no action scores 1, of all newcomer states
            dropped["no_scoring_action"] = dropped.get("no_scoring_action", 0) + R.unscored_states(ep, min_step)
            dropped["of_states"] = dropped.get("of_states", 0) + int(R.newcomer_states(ep, min_step).sum())
    by_action = (lambda item: int(item[0].data["oracle_action"][item[1]])) if balance_actions and scored else None
    picked = R.stratified(pool, n, rng, within=by_action)
    if shown is not None:  # how many of the records' prompts show a red cross of the newcomer's own
        own = sum(own_violation_shown(ep, i) for ep, i in picked)
        shown.update(records=len(picked), shown=own, share=round(own / len(picked), 4) if picked else None)
    if task == "norm_selection":
        family = NORMS[norms[0]].family
        by_split = {s: split_norms(family, s) for s in SPLITS}
        slots = iter(R.answer_positions(len(picked), rng).tolist())  # consumed in record order
        return _made(
            picked,
            lambda ep, i: R.norm_selection_record(
                ep, i, split, R.selection_choices(ep.norm_id, split, by_split, next(slots), rng), frames
            ),
            frames,
            pngs,
            tick,
        )
    return _made(picked, lambda ep, i: R.compliant_action_record(ep, i, split, frames), frames, pngs, tick)


def _made(items: list[tuple], make, frames: bool, pngs: dict, tick) -> list[dict]:
    """`make(*item)` for every item, chunk by chunk: each chunk's frames in one render call."""
    out = []
    for lo in range(0, len(items), CHUNK):
        chunk = items[lo : lo + CHUNK]
        recs = [make(*it) for it in chunk]
        if frames:
            pngs.update((r["images"][0], png) for r, png in zip(recs, record_frames(chunk)))
        out += recs
        tick(len(recs))
    return out


def _judgment_records(
    eps: _Episodes, n, split, rng, max_episodes: int, balance: bool, frames: bool, pngs: dict, tick, report: dict
) -> list[dict]:
    """Pairs balanced per norm and cue (`balance.balanced_by_norm`); more episodes are run until
    every norm holds its even share of pairs or `max_episodes` is reached."""
    pool: list[tuple] = []
    seen = 0
    share = -(-(n // 2) // len(eps.norms))
    while True:
        pool += [p for ep in eps.episodes[seen:] for p in judgment_pool(ep)]
        seen = len(eps.episodes)
        if seen >= len(eps.norms) and (not balance or min(pair_capacity(pool, eps.norms).values()) >= max(share, 1)):
            break
        if seen >= max_episodes:
            break
        eps.more()
    if balance:
        picked, report["per_norm"] = balanced_by_norm(pool, n, eps.norms, rng)
    else:
        picked = R.balanced_judgments([p[:4] for p in pool], n, rng, balance=False)
    return _made(
        [(ep, i, k) for ep, i, k, *_ in picked],
        lambda ep, i, k: R.norm_judgment_record(ep, i, k, split, frames),
        frames,
        pngs,
        tick,
    )


def build(
    task: str,
    family: str,
    split: str,
    n: int,
    seed: int = 0,
    policy: str = DEFAULT_POLICY,
    batch: int = 16,
    steps: int = INTERACTION_STEPS,
    max_episodes: int = 512,
    balance: bool = True,
    balance_actions: bool = False,
    episodes: int | None = None,
    frames: bool = False,
    states_from=None,
    progress=None,
    shared: dict | None = None,
):
    """(records, manifest) of `n` records (fewer only when the episodes hold fewer: see the manifest).

    `progress(k)`, if given, is called as every k records are made (a progress bar's ``update``).
    `shared`: a dict kept across the builds of one call (`normjax.finetune.many`): harvested batches
    are taken from it and added to it, so builds of the same episodes harvest them once (the
    records do not change: a batch is a function of its norms, seeds, policy and steps)."""
    tick = progress or (lambda k: None)
    norms = check_args(task, family, split, n, policy)
    if episodes is not None and episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    if states_from is not None and task not in ("compliant_action", "norm_selection"):
        raise ValueError(
            f"states read back from llm-eval transcripts serve compliant_action and norm_selection, not {task!r}"
        )
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    runs = {}
    dropped: dict = {}  # why candidate states were left out, counted
    judged_by_norm: dict = {}
    shown: dict = {}  # newcomer records whose prompt shows the newcomer's own red cross
    out = Records()
    out.pngs = {}
    if states_from is not None:
        from normjax.finetune.readback import read_run

        source = read_run(states_from, norms)
        out += _newcomer_records(
            task, source, n, split, norms, rng, frames, out.pngs, tick, dropped, balance_actions, shown
        )
    elif task in ("compliant_action", "norm_selection", "action_judgment"):
        runs[policy] = _Episodes(norms, seed, policy, batch, steps, 0, shared).at_least(episodes)
        k = n if task != "action_judgment" else n - n // 2
        out += _newcomer_records(
            "compliant_action" if task == "action_judgment" else task,
            runs[policy],
            k,
            split,
            norms,
            rng,
            frames,
            out.pngs,
            tick,
            dropped,
            balance_actions,
            shown,
        )
    if task in ("norm_judgment", "action_judgment"):
        if JUDGMENT_POLICY not in runs:
            runs[JUDGMENT_POLICY] = _Episodes(norms, seed, JUDGMENT_POLICY, batch, steps, 0, shared).at_least(episodes)
        k = n if task == "norm_judgment" else n // 2
        out += _judgment_records(
            runs[JUDGMENT_POLICY], k, split, rng, max_episodes, balance, frames, out.pngs, tick, judged_by_norm
        )
    wall = time.perf_counter() - t0
    judged = [r["violates"] for r in out if r["task"] == "norm_judgment"]
    manifest = dict(
        format=FORMAT,
        task=task,
        family=family,
        split=split,
        seed=seed,
        requested=n,
        policy=policy if states_from is None else None,  # None: the run's model (states_from)
        records=len(out),
        counts={t: sum(r["task"] == t for r in out) for t in sorted({r["task"] for r in out})},
        per_norm={NORMS[m].name: sum(r["norm_id"] == m for r in out) for m in norms},
        norms=[NORMS[m].name for m in norms],
        train_norms=[NORMS[m].name for m in split_norms(family, "train")],
        violation_share=(sum(judged) / len(judged)) if judged else None,
        judgment_per_norm=judged_by_norm.get("per_norm"),  # records, violation share, cue shares per class
        judgment_policy=JUDGMENT_POLICY if judged else None,
        selection_options=R.SELECTION_OPTIONS if task == "norm_selection" else None,
        balance_actions=bool(balance_actions),
        dropped=dropped,
        # newcomer records (compliant_action, norm_selection): how many prompts list a step where the
        # newcomer itself got a red cross (the paper's states come from a policy that sometimes violates)
        newcomer_own_violation=shown or None,
        episodes={p: dict(n=len(e.seeds), seeds=e.seeds, steps=steps) for p, e in runs.items()},
        frames=bool(frames),
        images=len(out.pngs),
        states_from=None if states_from is None else dict(source.manifest()),
        wall_s=round(wall, 3),
        records_per_s=round(len(out) / wall, 2) if wall > 0 else None,
    )
    return out, manifest


def write(out_dir, records: list[dict], manifest: dict) -> tuple[Path, Path]:
    """JSON Lines (one record a line) and the manifest beside it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{manifest['task']}_{manifest['family']}_{manifest['split']}"
    data, meta = out / f"{stem}.jsonl", out / f"{stem}.manifest.json"
    for rel, png in sorted(getattr(records, "pngs", {}).items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
    with open(data, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    meta.write_text(json.dumps(dict(manifest, file=data.name), indent=2) + "\n")
    return data, meta


__all__ = ["DEFAULT_POLICY", "FORMAT", "Records", "SPLITS", "build", "check_args", "split_norms", "write"]
