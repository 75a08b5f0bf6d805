"""Which harvested steps become records, and the records themselves (host code).

Selection rules (paper appendix §12):

* newcomer states (Compliant Action, Norm Selection): the newcomer is on the
  grid and chooses its action: not in service (an automatic WAIT) and not
  pushed or collided in the previous step (a collision-forced step, our
  reading of the paper's exclusion); Norm Selection only from step 50 on;
* transitions (Norm Judgment): any agent on the grid that moves (a WAIT is
  permissible under every norm, so it would be a free negative), not in
  service, from step 50 on.

Every record carries all verifier fields (None where another task's), so a
mixed Action + Judgment file has one schema.  With `image` the newcomer
records are the VLM prompt in the multimodal chat layout (`text.vlm`) and
``images`` names the frame (`frames.image_path`); judgment records likewise
(the judgment prompt's image variant, the frame with the proposed move).
"""

from __future__ import annotations

import numpy as np

from normjax import constants as C
from normjax.finetune.frames import image_path
from normjax.finetune.harvest import REASONS
from normjax.finetune.state import newcomer_shown, record_state, shown_steps
from normjax.finetune.text import (
    Episode,
    action_messages,
    judgment_messages,
    newcomer_turn,
    selection_messages,
)
from normjax.norms import NORMS

MIN_STEP = 50
SELECTION_OPTIONS = 4  # candidates per selection record: every family has at least 4 held-out norms
VERIFIER_FIELDS = ("allowed_actions", "action_reasons", "oracle_action", "violates", "agent_uid", "answer", "choices")


def newcomer_states(ep: Episode, min_step: int = 0) -> np.ndarray:
    """bool [T]: the newcomer chooses its action at the step (on the grid, not in service,
    not pushed or collided in the previous step), from `min_step` on."""
    d = ep.data
    return d["active"][:, 0] & ~d["forced_wait"][:, 0] & ~d["was_pushed"][:, 0] & (d["t"] >= min_step)


def newcomer_candidates(ep: Episode, min_step: int = 0, scored: bool = False) -> list[int]:
    """Newcomer states; with `scored` only those where some action scores 1 (Compliant Action:
    a state where every equally fast compliant action collides has no right answer)."""
    ok = newcomer_states(ep, min_step)
    if scored:
        ok &= (ep.data["reason"] == 0).any(axis=1)
    return np.flatnonzero(ok).tolist()


def unscored_states(ep: Episode, min_step: int = 0) -> int:
    """Newcomer states dropped from Compliant Action: no action scores 1."""
    return int((newcomer_states(ep, min_step) & ~(ep.data["reason"] == 0).any(axis=1)).sum())


def judgment_candidates(ep: Episode, min_step: int = MIN_STEP) -> list[tuple[int, int, bool]]:
    """(step index, slot, violates) of every judgeable transition."""
    d = ep.data
    ok = d["active"] & ~d["forced_wait"] & (d["action"] != C.WAIT) & (d["t"] >= min_step)[:, None]
    return [(int(i), int(k), bool(d["violates"][i, k])) for i, k in zip(*np.nonzero(ok))]


def _base(task: str, ep: Episode, i: int, split: str) -> dict:
    n = NORMS[ep.norm_id]
    rec = dict(
        task=task,
        family=n.family,
        split=split,
        norm=n.name,
        norm_id=n.id,
        episode_seed=ep.seed,
        t=int(ep.data["t"][i]),
        images=[],
    )
    rec.update({f: None for f in VERIFIER_FIELDS})
    return rec


def compliant_action_record(ep: Episode, i: int, split: str, image: bool = False) -> dict:
    d = ep.data
    rec = _base("compliant_action", ep, i, split)
    rec["prompt"] = action_messages(newcomer_turn(ep, i), image)
    if image:
        rec["images"] = [image_path(rec)]
    rec.update(
        allowed_actions=[int(a) for a in np.flatnonzero(d["reason"][i] == 0)],
        action_reasons=[REASONS[int(r)] for r in d["reason"][i]],
        oracle_action=int(d["oracle_action"][i]),
    )
    rec["state"] = record_state(ep, i, newcomer_shown(ep, i))
    return rec


def selection_choices(norm: int, split: str, family_norms: dict, answer_pos: int, rng) -> list[int]:
    """The SELECTION_OPTIONS candidate norm ids of a selection record, the true `norm` at
    `answer_pos`.  Distractors: on a training record any other norm of the family (training or
    held-out), on a held-out record other held-out norms only, so that every option of a
    held-out record was seen in training and none was ever the answer there (docs/finetune.md)."""
    pool = family_norms["train"] + family_norms["heldout"] if split == "train" else family_norms["heldout"]
    others = [m for m in pool if m != norm]
    if len(others) < SELECTION_OPTIONS - 1:
        raise ValueError(f"{len(others)} distractor norms for {SELECTION_OPTIONS} options (split {split!r})")
    picked = [others[j] for j in rng.choice(len(others), size=SELECTION_OPTIONS - 1, replace=False)]
    return picked[:answer_pos] + [norm] + picked[answer_pos:]


def answer_positions(n: int, rng) -> np.ndarray:
    """n answer positions, each of the SELECTION_OPTIONS letters equally often (+-1), shuffled:
    a constant letter scores 1/k on every file."""
    return rng.permutation(np.resize(np.arange(SELECTION_OPTIONS), n))


def norm_selection_record(ep: Episode, i: int, split: str, order: list[int], image: bool = False) -> dict:
    """`order`: the candidate norm ids as lettered (`selection_choices`)."""
    rec = _base("norm_selection", ep, i, split)
    rec["prompt"] = selection_messages(newcomer_turn(ep, i), [NORMS[n].description for n in order], image)
    if image:
        rec["images"] = [image_path(rec)]
    rec.update(choices=[NORMS[n].description for n in order], answer=chr(ord("A") + order.index(ep.norm_id)))
    rec["state"] = record_state(ep, i, newcomer_shown(ep, i))
    return rec


def norm_judgment_record(ep: Episode, i: int, k: int, split: str, image: bool = False) -> dict:
    rec = _base("norm_judgment", ep, i, split)
    rec["prompt"] = judgment_messages(ep, i, k, image)
    rec.update(violates=bool(ep.data["violates"][i, k]), agent_uid=int(ep.data["uid"][i, k]))
    rec["state"] = record_state(ep, i, shown_steps(ep, i), judged=k)
    if image:
        rec["images"] = [image_path(rec)]
    return rec


def balanced_judgments(pool: list[tuple], n: int, rng, balance: bool = True) -> list[tuple]:
    """n items of (episode, step, slot, violates): half of each class when both classes allow it
    (the rest filled from the larger class), else uniform over the pool."""
    if not balance:
        idx = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
        return [pool[j] for j in sorted(idx)]
    pos = [p for p in pool if p[3]]
    neg = [p for p in pool if not p[3]]
    n_pos = min(len(pos), n // 2 + n % 2)
    n_neg = min(len(neg), n - n_pos)
    n_pos = min(len(pos), n - n_neg)
    pick = [pos[j] for j in rng.choice(len(pos), size=n_pos, replace=False)]
    pick += [neg[j] for j in rng.choice(len(neg), size=n_neg, replace=False)]
    return sorted(pick, key=lambda p: (p[0].seed, p[1], p[2]))


def stratified(pool: dict[int, list], n: int, rng, within=None) -> list:
    """n items drawn uniformly within each norm, the norms sharing n as evenly as they can (a
    norm short of items leaves its share to the others); with `within` (item -> a class) each
    norm's share is spread likewise over the classes (e.g. the oracle's action)."""
    from normjax.finetune.balance import even_fill

    norms = sorted(pool)
    out = []
    for m, take in zip(norms, even_fill(n, [len(pool[m]) for m in norms])):
        items = pool[m]
        if within is None:
            out += [items[j] for j in sorted(rng.choice(len(items), size=take, replace=False))]
            continue
        classes: dict = {}
        for it in items:
            classes.setdefault(within(it), []).append(it)
        keys = sorted(classes)
        for c, k in zip(keys, even_fill(take, [len(classes[c]) for c in keys])):
            out += [classes[c][j] for j in sorted(rng.choice(len(classes[c]), size=k, replace=False))]
    return out


__all__ = [
    "MIN_STEP",
    "VERIFIER_FIELDS",
    "balanced_judgments",
    "compliant_action_record",
    "judgment_candidates",
    "newcomer_candidates",
    "newcomer_states",
    "unscored_states",
    "selection_choices",
    "answer_positions",
    "SELECTION_OPTIONS",
    "norm_judgment_record",
    "norm_selection_record",
    "stratified",
]
